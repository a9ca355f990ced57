"""A stand-in for torch tensors on the CPU: what attn.attention reads of a
tensor (shape, dtype, device, data_ptr, contiguous, new_empty, and for the
conversions it makes float, int, min, max), over a ctypes buffer. Lets the
binding be tested where torch is not installed."""
import ctypes
import math
import struct

_CTYPES = {"float32": ctypes.c_float, "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16,
           "int32": ctypes.c_int32, "int64": ctypes.c_int64, "float64": ctypes.c_double}


class Device:
    type = "cpu"
    index = None


class CudaDevice:
    """A device the tensor only claims to be on (its data is on the host)."""
    type = "cuda"
    index = 0


def _to_bits(x, dtype):
    if dtype == "float16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF  # bfloat16, nearest even


def _from_bits(h, dtype):
    if dtype == "float16":
        return struct.unpack("<e", struct.pack("<H", h))[0]
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


class FakeTensor:
    device = Device()

    def __init__(self, shape, dtype="float32", values=None, device=None):
        if device is not None:
            self.device = device
        self.shape = tuple(shape)
        self.dtype = dtype
        self.numel = math.prod(self.shape)
        self._buf = (_CTYPES[dtype] * self.numel)()
        if values is not None:
            for i, x in enumerate(values):
                self._buf[i] = _to_bits(x, dtype) if dtype in ("float16", "bfloat16") else x

    def data_ptr(self):
        return ctypes.addressof(self._buf)

    def contiguous(self):
        return self

    def new_empty(self, shape):
        return FakeTensor(shape, self.dtype)

    def float(self):
        """A float32 copy (torch.Tensor.float; self when already float32)."""
        return self if self.dtype == "float32" else FakeTensor(self.shape, "float32",
                                                                self.values(), self.device)

    def int(self):
        """An int32 copy (torch.Tensor.int; self when already int32)."""
        return self if self.dtype == "int32" else FakeTensor(self.shape, "int32",
                                                              [int(x) for x in self.values()],
                                                              self.device)

    def min(self):
        return min(self.values())

    def max(self):
        return max(self.values())

    def values(self):
        """The elements as Python numbers, row-major."""
        if self.dtype in ("float16", "bfloat16"):
            return [_from_bits(h, self.dtype) for h in self._buf]
        return list(self._buf)


def randn(shape, dtype, rng):
    t = FakeTensor(shape, dtype, [rng.gauss(0.0, 1.0) for _ in range(math.prod(shape))])
    return t
