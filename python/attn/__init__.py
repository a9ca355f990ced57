"""attn for PyTorch users: fused attention kernels compiled in-process.

    import attn
    o = attn.attention(q, k, v, rope=dict(theta=10000.0), mask="causal")
    o = attn.attention(q, k, v, score_mod=lambda s, b, h, q_idx, kv_idx:
                       s + bias[q_idx - kv_idx + N - 1])   # as flex_attention's
    bm = attn.BlockMask.from_kv_blocks(counts, indices)    # Top-K key blocks
    o = attn.attention(q, k, v, block_mask=bm)
    c = attn.matmul(a, b)          # or attn.matmul(a, b, c): c += a @ b

q is [B, H, N, D], k [B, Hk, M, D], v [B, Hk, M, Dv] (Hk divides H: GQA), all
float32, float16 or bfloat16 on one device (or float64 on the CPU). CUDA tensors run as PTX through
libattnrt on the tensors' device and torch's current stream (on an H100 or
H200, the persistent Hopper kernel gets one CTA per SM of that GPU); CPU
tensors run a kernel JIT-compiled for the host. Compilation happens in this
process through libattn (ctypes; no subprocess) and is cached in memory and on
disk ($ATTN_CACHE_DIR, else ~/.cache/attn), keyed by the program text, the
shapes, the dtype, the target chip, the options and the compiler build.

Errors: attn.CompileError (the compiler's diagnostics, file:line:col: error:
...), attn.RuntimeError (loading or launching), ValueError/TypeError for
arguments attn cannot take (checked before compiling, naming the argument).

This module holds the public API and the kernels; the errors live in
_errors.py, the argument checks in _args.py, the memory and disk kernel cache
(with the cubin keys and the cache_stats counters) in _cache.py, the tracer
of attention()'s score_mod and mask_mod in _trace.py and their cached-call
keys in _fn_key.py, attn.BlockMask and the mask_mod of block_mask= in
_block_mask.py, the autograd Function and the torch.library custom ops of
training (docs/api.md, Training with attn) in _autograd.py; attn re-exports
their names.
"""
import collections
import ctypes
import json
import re
import threading
import time as _time
import warnings

import sys

from . import _autograd, _block_mask, _decode, _fn_key, _lib, _prefill, _program, _trace
from ._args import (FLOATS, INT32_MAX, INT32_MIN, POSITIONS, _check_gate,  # noqa: F401
                    _check_matmul, _check_positions, _check_program, _check_qkv,
                    _check_segments, _dtype, _gate_input, _is_tensor, _on, _optional_str,
                    _pair, _position_inputs, _segment_inputs, _shape, _tensor)
from ._cache import (CACHE_FORMAT, _FAST_MAX, _MAGIC, _cache_lock, _cached,  # noqa: F401
                     _cached_make, _count, _cubin_key, _decode_entry, _digest, _discard,
                     _disk_read, _disk_write, _encode_entry, _entry_path, _fast, _key,
                     _last_timings, _memory, _produce, _producing, _sass_policy,
                     _sass_wanted, _stats, _stats_lock, _timings, _warned, cache_dir,
                     clear_memory_cache)
from ._block_mask import BlockMask  # noqa: F401
from ._errors import CompileError, Diagnostic, Error, RuntimeError  # noqa: F401

__all__ = ["attention", "decode", "build_decode_program", "matmul", "build_program",
           "build_matmul_program", "compile", "load",
           "Kernel", "Compiled", "BlockMask", "CompileError",
           "RuntimeError", "Error", "Diagnostic", "cache_stats", "clear_memory_cache",
           "cache_dir", "version"]

PROGRAM_NAME = "<attn.attention>"


def cache_stats():
    """Counters since import: compiles (IR through the compiler), loads (a
    kernel JIT-compiled or a module loaded on a GPU), memory_hits, disk_hits,
    disk_writes."""
    with _stats_lock:
        return {k: _stats[k] for k in ("compiles", "loads", "memory_hits", "disk_hits",
                                       "disk_writes")}


def version():
    """The version of the libattn in use."""
    return _lib.attn().attn_version().decode()


#===-- Compiling --------------------------------------------------------===#

Compiled = collections.namedtuple("Compiled", "data manifest format")
Compiled.__doc__ = """A compiled program: data (bytes: PTX, cubin, LLVM IR or
LLVM-dialect MLIR), manifest (dict: the launch manifest) and format (str)."""


def _enc(s):
    return None if s is None else str(s).encode()


def _options(target, fmt, tile_options, features, toolkit, source_name, hopper_options=None,
             grad=False):
    if not isinstance(fmt, str):
        raise TypeError("attn: format must be a str (one of %s), got %s"
                        % (", ".join(_lib.OUTPUT_FORMATS), _program._describe(fmt)))
    if fmt not in _lib.OUTPUT_FORMATS:
        raise ValueError("attn: format must be one of %s, got %r"
                         % (", ".join(_lib.OUTPUT_FORMATS), fmt))
    return _lib.CompileOptions(target=_enc(target), features=_enc(features),
                               tile_options=_enc(tile_options),
                               format=_lib.OUTPUT_FORMATS[fmt], toolkit=_enc(toolkit),
                               source_name=_enc(source_name),
                               hopper_options=_enc(hopper_options), grad=1 if grad else 0)


def _diag_collector():
    diags = []

    def on_diag(user, severity, file, line, col, message):
        sev = _lib.SEVERITIES[severity] if 0 <= severity < 4 else str(severity)
        diags.append(Diagnostic(sev, file.decode(errors="replace") if file else None, line,
                                col, message.decode(errors="replace")))
    return diags, _lib.DIAG_FN(on_diag)


def _status_name(lib, status):
    return lib.attn_status_string(status).decode()


def compile(program, target="sm_90a", format="default", tile_options=None, features=None,
            toolkit=None, source_name="<program>", hopper_options=None, grad=False):
    """Compiles IR text (attn, tile or gpu level) with libattn. target is a
    chip ("sm_90a", "sm_80", ...) or "cpu"; format "default", "ptx", "cubin",
    "llvm-mlir" or "llvm-ir"; hopper_options are lower-tile-to-hopper's
    ("ctas=114": the persistent kernel for a GPU of 114 SMs; default one CTA
    per SM of an H200). grad: also derive and compile each attention's
    backward (the attn-grad pass): @f then returns (out, lse) and the launch
    program f__grad computes dq, dk and dv. Returns a Compiled; raises
    CompileError."""
    _check_program(program)
    if not isinstance(target, str):
        raise TypeError("attn: target must be a str (a chip such as 'sm_90a', or 'cpu'), got %s"
                        % _program._describe(target))
    for name, x in (("tile_options", tile_options), ("features", features),
                    ("toolkit", toolkit), ("source_name", source_name),
                    ("hopper_options", hopper_options)):
        _optional_str(name, x)
    lib = _lib.attn()
    if not isinstance(grad, bool):
        raise TypeError("attn: grad must be a bool, got %s" % _program._describe(grad))
    opts = _options(target, format, tile_options, features, toolkit, source_name,
                    hopper_options, grad)
    diags, cb = _diag_collector()
    text = program.encode()
    out = ctypes.c_void_p()
    status = lib.attn_compile(text, len(text), ctypes.byref(opts), cb, None, ctypes.byref(out))
    _count("compiles")
    if status:
        raise CompileError(_status_name(lib, status), diags, program, source_name)
    try:
        size = ctypes.c_size_t()
        ptr = lib.attn_result_data(out, ctypes.byref(size))
        data = ctypes.string_at(ptr, size.value)
        manifest = json.loads(lib.attn_result_manifest(out).decode())
    finally:
        lib.attn_result_destroy(out)
    fmt = format if format != "default" else ("llvm-mlir" if target == "cpu" else "ptx")
    return Compiled(data, manifest, fmt)


def build_program(q, k, v, rope=None, mask=None, window=None, softcap=None, alibi=None,
                  gate=None, segment_ids=None, scale=None, score_mod=None, mask_mod=None,
                  block_mask=None):
    """The attn IR text attention() compiles for these tensors and options
    (score_mod and mask_mod traced, block_mask as the mask_mod reading its
    block map; their captured tensors are the function's last arguments)."""
    _check_qkv(q, k, v)
    if block_mask is not None:
        mask_mod = _block_mask.mask_mod_for(block_mask, q, k, mask_mod)
    gate = None if gate is None else _check_gate(gate, q, k)
    segment_ids = None if segment_ids is None else _check_segments(segment_ids, q, k)
    positions = _check_positions(rope, q, k)
    traced = _trace.trace(score_mod, mask_mod, _score_type(q))
    return _build(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale, traced,
                  positions)


def _score_type(q):
    """The type a traced body computes in: f64 for float64 q, else f32."""
    return _program.compute_elem(_program.dtype_name(q.dtype))


def _build(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
           traced=(None, None, ()), positions=(None, None), grads=()):
    """build_program on checked arguments; traced is _trace.trace's,
    positions _check_positions'; grads names the tensors whose gradients
    the backward computes ("gate", or Captures of traced[2]).
    """
    return _program.build(_shape(q), _shape(k), _shape(v), q.dtype, rope=rope, mask=mask,
                          positions=tuple(None if t is None else _shape(t)
                                          for t in positions),
                          window=window, softcap=softcap, alibi=alibi,
                          gate_shape=None if gate is None else _shape(gate[0]),
                          gate_block=None if gate is None else gate[1],
                          segments=None if segment_ids is None else
                          tuple(_shape(t) for t in segment_ids),
                          scale=scale, score_fn=traced[0], mask_fn=traced[1],
                          captures=traced[2], grads=grads)


#===-- GPU kernels: PTX, and SASS made in-process -----------------------===#

_sass_info = {}




def _sass(index, chip):
    """(arch, toolchain) when the PTX for chip may be made into SASS in this
    process on GPU index: nvJitLink's architecture for the device and a text
    naming the policy and the nvJitLink and driver versions (part of the
    cubin's key). None when $ATTN_NVJITLINK is never (the default) or no
    nvJitLink can be loaded: the driver's JIT compiles the PTX at load time
    instead."""
    policy = _sass_policy()
    if policy == "never":
        return None
    with _cache_lock:
        if (index, chip) not in _sass_info:
            lib = _lib.attnrt()
            rt = _runtimes[index][0]
            info = None
            major, minor, driver = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            arch = ctypes.create_string_buffer(16)
            with _runtime_locks[index]:
                if (lib.attnrt_nvjitlink_version(ctypes.byref(major), ctypes.byref(minor)) == 0
                        and lib.attnrt_runtime_driver_version(rt, ctypes.byref(driver)) == 0
                        and lib.attnrt_runtime_sass_arch(rt, chip.encode(), arch,
                                                         len(arch)) == 0):
                    info = (arch.value.decode(), "nvJitLink %d.%d, driver %d" % (
                        major.value, minor.value, driver.value))
            _sass_info[(index, chip)] = info
        info = _sass_info[(index, chip)]
        # Cubins made under "always" (setmaxnreg ignored) are never taken under "auto".
        return info and (info[0], "%s, %s" % (policy, info[1]), policy)


def _ptx_to_cubin(rt, lock, ptx, arch):
    """The cubin nvJitLink makes of ptx for arch, or None, with a warning,
    when it fails (the driver's JIT then gets the PTX, and its error)."""
    lib = _lib.attnrt()
    out, size = ctypes.c_void_p(), ctypes.c_size_t()
    with lock:
        status = lib.attnrt_runtime_ptx_to_cubin(rt, ptx, len(ptx), arch.encode(),
                                                 ctypes.byref(out), ctypes.byref(size))
        if status:
            err = _rt_error(rt, status, "nvJitLink did not compile the kernel for %s" % arch)
    if status:
        warnings.warn("%s; loading its PTX through the driver's JIT" % err, RuntimeWarning,
                      stacklevel=3)
        return None
    try:
        return ctypes.string_at(out, size.value)
    finally:
        lib.attnrt_cubin_free(out)


def _produce_gpu(key, rt, lock, sass, produce):
    """The loaded module of key on a GPU: the cubin entry on disk (no compile,
    no JIT), else the PTX (the disk's, or produce()'s, written), made into a
    cubin by nvJitLink (written beside the PTX) and loaded; without sass, or
    when nvJitLink fails, the PTX through the driver's JIT."""
    times = {"disk": 0.0, "compile": 0.0, "sass": 0.0, "load": 0.0}
    _timings.last = times

    def timed(what, fn, *args):
        t = _time.perf_counter()
        try:
            return fn(*args)
        finally:
            times[what] += _time.perf_counter() - t

    ckey = _cubin_key(key, sass[0], sass[1]) if sass else None
    if ckey:
        found = timed("disk", _disk_read, ckey, ".cubin")
        if found is not None:
            _count("disk_hits")
            try:
                obj = timed("load", _GpuModule, rt, lock, found[0], found[1], "cubin")
                times["path"] = "cubin hit"
                _count("loads")
                return obj
            except Error:
                pass  # a cubin this driver cannot load: made again below
    found = timed("disk", _disk_read, key, ".ptx")
    from_disk = found is not None
    if from_disk:
        _count("disk_hits")
    else:
        compiled = timed("compile", produce)
        found = (compiled.data, compiled.manifest)
        _disk_write(key, ".ptx", *found)
    ptx, manifest = found
    if ckey and _sass_wanted(sass[2], ptx):
        cubin = timed("sass", _ptx_to_cubin, rt, lock, ptx, sass[0])
        if cubin is not None:
            try:
                obj = timed("load", _GpuModule, rt, lock, cubin, manifest, "cubin")
            except Error as e:
                warnings.warn("attn: %s; loading its PTX through the driver's JIT" % e,
                              RuntimeWarning, stacklevel=2)
            else:
                _disk_write(ckey, ".cubin", cubin, manifest)
                times["path"] = "cubin"
                _count("loads")
                return obj
    try:
        obj = timed("load", _GpuModule, rt, lock, ptx, manifest, "ptx")
    except Error:
        if not from_disk:
            raise
        # A PTX entry this build cannot load: compile again and replace it.
        compiled = timed("compile", produce)
        _disk_write(key, ".ptx", compiled.data, compiled.manifest)
        obj = timed("load", _GpuModule, rt, lock, compiled.data, compiled.manifest, "ptx")
    times["path"] = "ptx"
    _count("loads")
    return obj


#===-- Launch buffers ---------------------------------------------------===#

def _thread_buffer(local, ctype, n):
    """The calling thread's ctypes array of n ctype in local (made on its
    first use): filled in place by each launch, never shared between threads."""
    buf = getattr(local, "buf", None)
    if buf is None or len(buf) != n:
        buf = local.buf = (ctype * n)()
    return buf


_names = {}


def _name_bytes(name):
    """name encoded, once per name."""
    b = _names.get(name)
    if b is None:
        b = _names[name] = name.encode()
    return b


#===-- CPU kernels ------------------------------------------------------===#

class _CpuKernel:
    """A program JIT-compiled for the host (attn_cpu_kernel)."""

    def __init__(self, text, manifest):
        self._lib = _lib.attn()
        diags, cb = _diag_collector()
        opts = _options("cpu", "default", None, None, None, "<cached program>")
        handle = ctypes.c_void_p()
        status = self._lib.attn_cpu_kernel_create(text, len(text), ctypes.byref(opts), cb, None,
                                                  ctypes.byref(handle))
        if status:
            raise CompileError(_status_name(self._lib, status), diags, text.decode(errors="replace"),
                               "<cached program>")
        self._handle = handle
        self.manifest = manifest
        self._buffers = threading.local()
        self._programs = {p["name"]: p for p in manifest.get("programs", [])}
        self._workspace = {}
        self._workspace_lock = threading.Lock()

    def run(self, name, pointers):
        """Runs kernel name, or the launch program name (its steps in order,
        as attnrt_program_launch does on a GPU), on host pointers."""
        prog = self._programs.get(name)
        if prog is not None:
            return self._run_program(prog, pointers)
        bufs = _thread_buffer(self._buffers, ctypes.c_void_p, len(pointers))
        bufs[:] = pointers
        status = self._lib.attn_cpu_kernel_run(self._handle, _name_bytes(name), bufs,
                                               len(pointers))
        if status:
            raise RuntimeError("attn: %s" % self._lib.attn_last_error().decode())

    def _run_program(self, prog, pointers):
        """A launch program: its inputs bound to pointers, its workspace
        buffers zero-filled once and kept (as attnrt keeps a module's)."""
        if len(pointers) != len(prog["inputs"]):
            raise RuntimeError("attn: program %s takes %d buffers, got %d"
                               % (prog["name"], len(prog["inputs"]), len(pointers)))
        bound = dict(zip(prog["inputs"], pointers))
        with self._workspace_lock:
            ws = self._workspace.get(prog["name"])
            if ws is None:
                ws = self._workspace[prog["name"]] = {
                    w["name"]: ctypes.create_string_buffer(int(w["bytes"]))
                    for w in prog.get("workspace", [])}
        for name, buf in ws.items():
            bound[name] = ctypes.addressof(buf)
        for step in prog["steps"]:
            self.run(step["kernel"], [bound[a] for a in step["args"]])

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.attn_cpu_kernel_destroy(handle)


#===-- GPU modules ------------------------------------------------------===#

_runtimes = {}
# GPU index -> the lock every attnrt call on its runtime (and the modules and
# streams made from it) holds: attnrt objects are used by one thread at a time.
_runtime_locks = {}


def _rt_error(rt, status, what):
    lib = _lib.attnrt()
    return RuntimeError("attn: %s: %s (%s)" % (what, lib.attnrt_last_error(rt).decode(),
                                               lib.attnrt_status_string(status).decode()))


def _runtime(index):
    """(runtime handle, chip, SM count) of GPU index, created once per process."""
    with _cache_lock:
        if index not in _runtimes:
            lib = _lib.attnrt()
            rt = ctypes.c_void_p()
            status = lib.attnrt_runtime_create(index, ctypes.byref(rt))
            if status:
                raise _rt_error(None, status, "no usable GPU %d" % index)
            major, minor = ctypes.c_int(), ctypes.c_int()
            status = lib.attnrt_runtime_compute_capability(rt, ctypes.byref(major),
                                                           ctypes.byref(minor))
            if status:
                raise _rt_error(rt, status, "cannot query GPU %d" % index)
            sms = ctypes.c_int()
            status = lib.attnrt_runtime_sm_count(rt, ctypes.byref(sms))
            if status:
                raise _rt_error(rt, status, "cannot query GPU %d" % index)
            cc = major.value * 10 + minor.value
            # Hopper gets its architecture-specific target (wgmma, setmaxnreg);
            # newer chips run sm_90 PTX through the driver's JIT (as attn-run).
            _runtimes[index] = (rt, "sm_90a" if cc == 90 else "sm_%d" % min(cc, 90),
                                sms.value)
            _runtime_locks[index] = threading.RLock()
        return _runtimes[index]


assert (ctypes.sizeof(_lib.RtArg) == 16 and _lib.RtArg.v.offset == 8
        and _lib.ARG_PTR == 0), "struct attnrt_arg: a 4-byte kind, then an 8-byte value"

# runtime -> {CUstream: the attnrt_stream wrapping it}: a wrapper owns
# nothing (it holds the handle and its runtime), so each is made once instead
# of per launch. A runtime's dict is used under that runtime's lock only, and
# dropped all at once past _MAX_STREAMS distinct streams.
_streams = {}
_MAX_STREAMS = 256


def _wrapped_stream(rt, cu_stream):
    """The attnrt_stream of cu_stream (an int; 0, the legacy default stream)
    on rt; the caller holds rt's lock."""
    mine = _streams.setdefault(rt.value, {})
    stream = mine.get(cu_stream)
    if stream is None:
        lib = _lib.attnrt()
        if len(mine) >= _MAX_STREAMS:
            for old in mine.values():
                lib.attnrt_stream_destroy(old)
            mine.clear()
        stream = ctypes.c_void_p()
        status = lib.attnrt_stream_wrap(rt, ctypes.c_void_p(cu_stream or None),
                                        ctypes.byref(stream))
        if status:
            raise _rt_error(rt, status, "cannot use the current stream")
        mine[cu_stream] = stream
    return stream


class _GpuModule:
    """PTX or a cubin loaded on one GPU (attnrt_module). Every attnrt call
    holds lock, the runtime's (several Python threads may launch it)."""

    def __init__(self, rt, lock, data, manifest, fmt):
        self._lib = _lib.attnrt()
        handle = ctypes.c_void_p()
        # The compiler's manifest says "ptx"; attnrt checks it against the loader.
        text = json.dumps(dict(manifest, format=fmt) if "format" in manifest else
                          manifest).encode()
        load = (self._lib.attnrt_module_load_cubin if fmt == "cubin"
                else self._lib.attnrt_module_load_ptx)
        with lock:
            status = load(rt, data, len(data), text, ctypes.byref(handle))
            if status:
                raise _rt_error(rt, status, "cannot load the kernel")
        self._rt = rt
        self._lock = lock
        self._handle = handle
        self.manifest = manifest
        self._buffers = threading.local()

    def launch(self, name, pointers, cu_stream):
        lib = self._lib
        n = len(pointers)
        local = self._buffers
        args = getattr(local, "args", None)
        if args is None or len(args) != n:
            # The calling thread's arguments, all pointers (ARG_PTR is 0);
            # words views them as uint64s: the pointer of argument i is word 2i+1.
            args = local.args = (_lib.RtArg * n)()
            local.words = (ctypes.c_uint64 * (2 * n)).from_buffer(args)
        words = local.words
        for i, p in enumerate(pointers):
            words[2 * i + 1] = p
        # One lock around the whole launch: the workspace a program allocates
        # on its first launch, and the error message read on failure, are the
        # runtime's, shared by all threads.
        with self._lock:
            stream = _wrapped_stream(self._rt, cu_stream or 0)
            # A launch program where the compiler made one, else the kernel.
            status = lib.attnrt_program_launch(self._handle, _name_bytes(name), args, n,
                                               stream)
            if status:
                raise _rt_error(self._rt, status, "launch of %s failed" % name)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            with self._lock:
                self._lib.attnrt_module_destroy(handle)


#===-- attention --------------------------------------------------------===#

def _device(named):
    """(device type, index) of the tensors of named [(name, tensor)], all on one
    device (the CPU or a CUDA GPU)."""
    first_name, first = named[0]
    for name, t in named[1:]:
        if _on(t) != _on(first):
            raise ValueError("attn: all tensors must be on one device, got %s on %s and %s on %s"
                             % (first_name, _on(first), name, _on(t)))
    device, index = first.device.type, getattr(first.device, "index", None)
    if device not in ("cpu", "cuda"):
        raise ValueError("attn: tensors must be on the CPU or a CUDA GPU, not %s" % device)
    return device, index


def _parse_device(device):
    """('cpu', None) or ('cuda', index) from 'cpu', 'cuda', 'cuda:1' or a torch.device."""
    if hasattr(device, "type"):
        return device.type, getattr(device, "index", None)
    kind, _, idx = str(device).partition(":")
    if kind not in ("cpu", "cuda") or (idx and not idx.isdigit()):
        raise ValueError("attn: device must be 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))
    return kind, int(idx) if idx else None


_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
                 "i32": "int32", "i64": "int64"}


def _grad_entries(manifest):
    """(the forward's entry, the backward's program) of a module compiled
    with grad: the program named <f>__grad and <f>, a program or a kernel."""
    progs = [p["name"] for p in manifest.get("programs", []) if p["name"].endswith("__grad")]
    if len(progs) != 1:
        raise ValueError("attn: a program compiled with grad must hold exactly one attention, "
                         "found %d backward programs" % len(progs))
    return progs[0][:-len("__grad")], progs[0]


def _program_params(prog, kernels):
    """A launch program's parameters: for each of its inputs, the first
    pointer parameter of that name among the kernels ({name} if none)."""
    by_name = {}
    for k in kernels:
        for p in k["params"]:
            if p.get("kind") == "ptr":
                by_name.setdefault(p["name"], p)
    return [by_name.get(n, {"name": n}) for n in prog["inputs"]]


class Kernel:
    """One attention or GEMM program compiled and loaded for a device
    (attn.load). Calling it with q, k, v (and the program's extra inputs)
    returns o; a GEMM kernel takes a, b (and c, see __call__). Loaded with
    grad=True, it returns (o, lse) and its backward is .backward."""

    def __init__(self, loaded, device, index, entry=None, outputs=1):
        self._loaded = loaded
        self.device = device
        self.index = index
        self._out_shape = None
        self._out_specs = None
        self.outputs = outputs
        self.backward = None
        self.manifest = loaded.manifest
        kernels = self.manifest.get("kernels", [])
        programs = self.manifest.get("programs", [])
        if entry is not None:
            # One entry of several (a forward and its backward): a launch
            # program of that name, else the kernel.
            self.name = entry
            self.reads_output = False
            prog = next((p for p in programs if p["name"] == entry), None)
            if prog is not None:
                self.params = _program_params(prog, kernels)
            else:
                kern = next((k for k in kernels if k["name"] == entry), None)
                if kern is None:
                    raise ValueError("attn: the program has no kernel or launch program %r"
                                     % entry)
                self.params = [p for p in kern["params"] if p.get("kind") != "tensormap"]
        elif programs:
            # Several kernels make one attention (e.g. RoPE of K before the
            # Hopper kernel): the caller passes the program's inputs.
            if len(programs) != 1:
                raise ValueError("attn: the program must hold exactly one attention or GEMM, "
                                 "found %d launch programs" % len(programs))
            prog = programs[0]
            self.name = prog["name"]
            self.params = _program_params(prog, kernels)
            self.reads_output = False
        else:
            if len(kernels) != 1:
                raise ValueError("attn: the program must hold exactly one attention or GEMM, "
                                 "found %d kernels" % len(kernels))
            self.name = kernels[0]["name"]
            # Tensor maps are derived by attnrt from the pointers.
            self.params = [p for p in kernels[0]["params"] if p.get("kind") != "tensormap"]
            # A GEMM kernel with accumulate = true adds to its output c.
            self.reads_output = bool(kernels[0].get("matmul", {}).get("accumulate", False))

    def _check(self, tensors):
        """Checks each tensor against its parameter: shape, dtype, device."""
        for p, t in zip(self.params, tensors):
            want = tuple(p.get("shape", ()))
            if want and want != tuple(t.shape):
                raise ValueError("attn: parameter %s of %s has shape %s, the tensor %s"
                                 % (p["name"], self.name, want, tuple(t.shape)))
            elem = _program.PARAM_DTYPES.get(str(t.dtype).replace("torch.", ""))
            if p.get("dtype") and p["dtype"] != elem:
                raise TypeError("attn: parameter %s of %s is %s, the tensor %s"
                                % (p["name"], self.name, p["dtype"], t.dtype))
            if t.device.type != self.device or (self.device == "cuda" and
                                                 t.device.index != self.index):
                raise ValueError("attn: kernel %s was loaded for %s, a tensor is on %s"
                                 % (self.name, self._where(), t.device))

    def _where(self):
        return self.device if self.device == "cpu" else "cuda:%d" % self.index

    def __repr__(self):
        return "<attn.Kernel %s on %s>" % (self.name, self._where())

    def __call__(self, *inputs):
        """Runs the kernel on its inputs and returns the output, a new tensor.
        Given one tensor per parameter, the last is the output, written in
        place and returned; a kernel that reads its output (a GEMM adding to
        c: c += a @ b) needs it. A kernel of several outputs (outputs > 1:
        a forward with its lse, a backward) takes its inputs only and returns
        a tuple of new tensors."""
        if self.outputs != 1:
            return self._call_many(inputs)
        inputs = list(inputs)
        nparams = len(self.params)
        out = inputs.pop() if len(inputs) == nparams else None
        if len(inputs) != nparams - 1:
            raise ValueError("attn: kernel %s takes %d tensors and an output, got %d tensors"
                             % (self.name, nparams - 1, len(inputs)))
        if out is None and self.reads_output:
            raise ValueError("attn: kernel %s adds to its output %s: pass it as the last tensor"
                             % (self.name, self.params[-1]["name"]))
        for i, t in enumerate(inputs + ([] if out is None else [out])):
            _tensor("argument %d (%s) of kernel %s" % (i + 1, self.params[i]["name"], self.name),
                    t)
        inputs = [t.contiguous() for t in inputs]
        self._check(inputs + ([] if out is None else [out]))
        return self._run(inputs, out)

    def _call_many(self, inputs):
        nin = len(self.params) - self.outputs
        if len(inputs) != nin:
            raise ValueError("attn: kernel %s takes %d tensors, got %d"
                             % (self.name, nin, len(inputs)))
        for i, t in enumerate(inputs):
            _tensor("argument %d (%s) of kernel %s" % (i + 1, self.params[i]["name"], self.name),
                    t)
        inputs = [t.contiguous() for t in inputs]
        self._check(inputs)
        return self._run_many(inputs)

    def _run_many(self, inputs):
        """_run for a kernel of several outputs: each a new tensor of its
        parameter's shape and dtype; returns them as a tuple."""
        specs = self._out_specs
        if specs is None:
            import torch  # the outputs are torch tensors, as the inputs
            specs = self._out_specs = [
                (tuple(p["shape"]), getattr(torch, _TORCH_DTYPES[p["dtype"]]))
                for p in self.params[len(self.params) - self.outputs:]]
        outs = [inputs[0].new_empty(shape, dtype=dtype) for shape, dtype in specs]
        ptrs = [t.data_ptr() for t in inputs] + [t.data_ptr() for t in outs]
        if self.device == "cpu":
            self._loaded.run(self.name, ptrs)
        else:
            self._loaded.launch(self.name, ptrs, _current_stream(self.index))
        return tuple(outs)

    def _run(self, inputs, out=None):
        """Runs the kernel on contiguous inputs already checked against its
        parameters (a new output when out is None); nothing here synchronises,
        allocates device memory outside torch's allocator or queries a stream's state,
        so the launch can be captured in a CUDA graph."""
        if out is None:
            shape = self._out_shape
            if shape is None:
                shape = self._out_shape = tuple(self.params[-1]["shape"])
            out = inputs[0].new_empty(shape)
        work = out.contiguous()
        ptrs = [t.data_ptr() for t in inputs]
        ptrs.append(work.data_ptr())
        if self.device == "cpu":
            self._loaded.run(self.name, ptrs)
        else:
            self._loaded.launch(self.name, ptrs, _current_stream(self.index))
        if work is not out:
            out.copy_(work)
        return out


def _current_stream(index):
    """The CUstream (an int) of torch's current stream on CUDA device index:
    the capturing stream inside torch.cuda.graph. torch's raw-stream query
    where it has one (no Stream object made per launch), else
    torch.cuda.current_stream."""
    import torch  # CUDA tensors are torch's
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


def _device_hopper_options(chip, sms, hopper_options):
    """hopper_options for a GPU of chip with sms SMs: on sm_90a, ctas=sms
    first unless they set ctas (the persistent kernel's default is one CTA per
    SM of an H200, which takes two waves on a GPU with fewer SMs)."""
    if chip != "sm_90a" or re.search(r"(?:^|\s)ctas=", hopper_options or ""):
        return hopper_options
    return ("ctas=%d %s" % (sms, hopper_options or "")).strip()


def _current_cuda_device():
    """torch's current CUDA device, for device='cuda'; RuntimeError where
    torch is missing or has no CUDA device (torch itself asserts)."""
    try:
        import torch
    except ImportError:
        raise RuntimeError("attn: device 'cuda' needs torch (to name the current CUDA "
                           "device); give 'cuda:N' or install torch") from None
    if not torch.cuda.is_available():
        raise RuntimeError("attn: device 'cuda': torch sees no CUDA device (torch %s%s)"
                           % (torch.__version__, "" if torch.version.cuda else
                              ", built without CUDA"))
    return torch.cuda.current_device()


def load(program, device="cpu", tile_options=None, hopper_options=None, grad=False):
    """Compiles IR text (one attention, at the attn or tile level) for device
    ('cpu', 'cuda', 'cuda:N' or a torch.device) and loads it, through the
    memory and disk caches. hopper_options are lower-tile-to-hopper's, used
    on sm_90a GPUs only; there ctas defaults to the GPU's SM count. The key is
    the program text (which spells the shapes and dtype), the target chip,
    the tile and hopper options, grad and the compiler build. Returns a
    Kernel; with grad=True (an attention compiled with its backward) the
    Kernel returns (o, lse) and its .backward, called with the forward's
    inputs, o, lse and dO, returns (dq, dk, dv). Raises CompileError or
    RuntimeError."""
    _check_program(program)
    _optional_str("tile_options", tile_options)
    _optional_str("hopper_options", hopper_options)
    if not isinstance(grad, bool):
        raise TypeError("attn: grad must be a bool, got %s" % _program._describe(grad))
    kind, index = _parse_device(device)
    fmt = "ptx+grad" if grad else "ptx"
    if kind == "cpu":
        key = _key(program, "cpu", tile_options, "llvm-mlir+grad" if grad else "llvm-mlir")
        loaded = _cached(key, ".mlir",
                         lambda: compile(program, "cpu", "llvm-mlir", tile_options,
                                         source_name=PROGRAM_NAME, grad=grad),
                         lambda data, manifest: _CpuKernel(data, manifest))
        return _kernels(loaded, "cpu", None, grad)
    if index is None:
        index = _current_cuda_device()
    rt, chip, sms = _runtime(index)
    hopper = _device_hopper_options(chip, sms, hopper_options)
    key = _key(program, chip, tile_options, fmt, hopper)
    sass = _sass(index, chip)
    loaded = _cached_make(
        (key, index),
        lambda: _produce_gpu(key, rt, _runtime_locks[index], sass,
                             lambda: compile(program, chip, "ptx", tile_options,
                                             source_name=PROGRAM_NAME, hopper_options=hopper,
                                             grad=grad)))
    return _kernels(loaded, "cuda", index, grad)


def _kernels(loaded, device, index, grad):
    """The Kernel of a loaded module: with grad, the forward (o, lse) with
    its backward (dq, dk, dv) as .backward."""
    if not grad:
        return Kernel(loaded, device, index)
    forward, backward = _grad_entries(loaded.manifest)
    kernel = Kernel(loaded, device, index, entry=forward, outputs=2)
    # dq, dk, dv, then the gradients into captured tensors the program asks
    # for ({attn.grad}: dgate, dcapture<i>), the program's last inputs.
    prog = next(p for p in loaded.manifest["programs"] if p["name"] == backward)
    outputs = len(prog["inputs"]) - prog["inputs"].index("dq")
    kernel.backward = Kernel(loaded, device, index, entry=backward, outputs=outputs)
    return kernel


class _Unusual(Exception):
    """An argument the fast path does not key: attention takes the full path."""


_PLAIN = (int, float, str)


def _plain(x):
    """x with its type (True and 1, 1 and 1.0 stay apart): the key of an int,
    float, str, bool or None argument."""
    t = type(x)
    if t in _PLAIN or x is None or t is bool:
        return t, x
    raise _Unusual


def _tensor_key(t):
    """What a kernel depends on of tensor t: its type, shape, dtype, device."""
    d = t.device
    return type(t), tuple(t.shape), t.dtype, d.type, d.index


def _fast_key(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
              program, tile_options, score_mod=None, mask_mod=None):
    """The key of attention's arguments in _fast: everything their program
    and its launch depend on. Two calls share a key only when the full path
    builds the same program text for them and checks them the same way.
    Raises _Unusual (or AttributeError, TypeError, _fn_key.Unkeyable) where
    it cannot tell. A score_mod or mask_mod is keyed by _fn_key.fn_key: its
    code and what it reads of its closure, defaults and globals (the
    captured tensors by shape, dtype and device)."""
    if rope is None or rope is True or rope is False:
        rope_key = rope
    elif type(rope) is dict:
        if not all(type(n) is str for n in rope):
            raise _Unusual
        # Explicit positions by what the kernel depends on (as a tensor
        # argument is), the other options by value.
        rope_key = tuple(sorted((n, _tensor_key(x) if n in POSITIONS and x is not None
                                 else _plain(x)) for n, x in rope.items()))
    else:
        raise _Unusual
    if window is not None:
        if type(window) not in (tuple, list) or len(window) != 2:
            raise _Unusual
        window = (_plain(window[0]), _plain(window[1]))
    if gate is not None:
        if type(gate) not in (tuple, list) or len(gate) != 2:
            raise _Unusual
        gate = (_tensor_key(gate[0]), _plain(gate[1]))
    if segment_ids is not None:
        if type(segment_ids) not in (tuple, list) or len(segment_ids) != 2:
            raise _Unusual
        segment_ids = (_tensor_key(segment_ids[0]), _tensor_key(segment_ids[1]))
    key = (_tensor_key(q), _tensor_key(k), _tensor_key(v), rope_key, _plain(mask), window,
           _plain(softcap), _plain(alibi), gate, segment_ids, _plain(scale), _plain(program),
           _plain(tile_options))
    if score_mod is not None or mask_mod is not None:
        key += (None if score_mod is None else _fn_key.fn_key(score_mod),
                None if mask_mod is None else _fn_key.fn_key(mask_mod))
    return key


def attention(q, k, v, rope=None, mask=None, window=None, softcap=None, alibi=None,
              gate=None, segment_ids=None, scale=None, program=None, tile_options=None,
              score_mod=None, mask_mod=None, block_mask=None, cache_seqlens=None,
              block_table=None, k_new=None, v_new=None):
    """Fused attention softmax(modifiers(q kᵀ)) v as one kernel.

    With cache_seqlens (and block_table, k_new, v_new), k and v are a KV
    cache and the call is attn.decode(q, k, v, cache_seqlens, block_table,
    causal=mask == "causal", ...) (docs/api.md): q's rows end each
    sequence's keys; rope, window, softcap, alibi and scale as decode's;
    the other options are a ValueError there.

    rope: None (or False), True or dict(theta=10000.0, rotary_dim=D,
      layout="rotate_half" | "interleaved", offset=0), applied to q and k
      before the product; theta > 0, rotary_dim even in [2, D]; q_offset
      and k_offset in offset's place; q_positions [B, N] and k_positions
      [B, M], int32 or int64 tensors on q's device, each row's own position
      (packed sequences), in place of q's (k's) offset. The masks stay by
      row index.
    mask: "causal" or None. window: a pair (left, right) of keys visible
      around each query, ints >= 0 (None or -1: unbounded). softcap: a float
      cap > 0, scores become cap*tanh(s/cap).
    alibi: the ALiBi max_bias, a float > 0 (alibi=8.0; True is refused).
    gate: a pair (g, block_size), g [B, H, N, ceil(M / block_size)] float32 or
      q's dtype (run as float32), a log-bias per key block (SAS); block_size
      an int > 0.
    segment_ids: a pair (qseg [B, N], kseg [B, M]), int32 or int64 (converted
      to the kernel's int32 after checking the ids fit), document mask.
    scale: a float > 0, default 1/sqrt(D). program: IR text to run instead of
      building one from the options (its function takes q, k, v, then gate,
      qseg, kseg, q_positions, k_positions). tile_options: options of the attn-tile pass
      ("block-m=32 block-n=64").
    score_mod: fn(score, b, h, q_idx, kv_idx) -> new score, mask_mod:
      fn(b, h, q_idx, kv_idx) -> bool (the key is visible), plain Python
      functions of torch operations as flex_attention's, traced once into
      attn.score_mod / attn.mask_mod (score_mod sees the score after scale,
      softcap, alibi and gate); tensors they index are captured as inputs
      (docs/api.md, score_mod and mask_mod).
    block_mask: an attn.BlockMask (BlockMask.from_kv_blocks, flex's form:
      per query block, the key blocks it sees, partial or full) or torch's
      flex BlockMask; keys outside its blocks are hidden, bm.mask_mod
      decides in partial blocks; ANDed with mask_mod (docs/api.md,
      block_mask).
    Every argument is checked before anything is compiled: a wrong type
    raises TypeError, a wrong value or shape ValueError, naming the argument.
    On an H100 or H200 the persistent Hopper kernel is compiled for the GPU's
    SM count (attn.load's hopper_options can set ctas instead).
    Returns o [B, H, N, Dv], allocated like q (torch.empty on q's device).

    A call whose tensors' shapes, dtypes and devices and whose other
    arguments equal an earlier successful call's takes the fast path: the
    Kernel that call loaded, without building or hashing the program again
    (docs/api.md, The fast path)."""
    if cache_seqlens is not None or block_table is not None or k_new is not None or \
            v_new is not None:
        return _attention_over_cache(q, k, v, rope, mask, window, softcap, alibi, scale,
                                     tile_options, cache_seqlens, block_table, k_new, v_new,
                                     dict(gate=gate, segment_ids=segment_ids, program=program,
                                          score_mod=score_mod, mask_mod=mask_mod,
                                          block_mask=block_mask))
    # Only where the custom ops exist (torch >= 2.4, registered), so that
    # other calls pay one global read here.
    if _autograd._ops is not None and _autograd._ops[0] is not None and _autograd.compiling():
        if (program is None and score_mod is None and mask_mod is None and block_mask is None
                ):
            return _compiled_attention(q, k, v, rope, mask, window, softcap, alibi, gate,
                                       segment_ids, scale, tile_options)
    if block_mask is not None:
        if program is not None:
            raise ValueError("attn: program= replaces block_mask (write its mask in the "
                             "program)")
        if not (_is_tensor(q) and _is_tensor(k) and len(q.shape) == 4 and len(k.shape) == 4):
            _check_qkv(q, k, v)  # their errors first (12 us: not on every call)
        mask_mod = _block_mask.mask_mod_for(block_mask, q, k, mask_mod)
    mods = score_mod is not None or mask_mod is not None
    # Training: the program compiled with its backward, a key of its own.
    trained = _needs_grad(q, k, v, gate)
    try:
        key = _fast_key(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
                        program, tile_options, score_mod, mask_mod)
        if trained:
            # Whether the backward is deterministic changes its kernels, and
            # whether the gate trains the program (its {attn.grad}).
            key += ("grad", _autograd.deterministic_options(),
                    gate is not None and bool(gate[0].requires_grad))
        kernel = _fast.get(key)
    except (_Unusual, _fn_key.Unkeyable, AttributeError, TypeError):
        key = kernel = None
    if kernel is not None:
        _count("memory_hits")  # (before knowing whether a capture trains)
        inputs = [q.contiguous(), k.contiguous(), v.contiguous()]
        if gate is not None:
            inputs.append(_gate_input(gate).contiguous())
        if segment_ids is not None:
            inputs.extend(t.contiguous() for t in _segment_inputs(segment_ids))
        if type(rope) is dict:
            inputs.extend(t.contiguous() for t in _position_inputs(
                tuple(rope.get(n) for n in POSITIONS)))
        captured = []
        if mods:
            kernel, sources = kernel
            captured = _fn_key.fetch((score_mod, mask_mod), sources)
            inputs.extend(captured)
        if any(getattr(t, "requires_grad", False) for t in captured) and \
                _autograd.grad_enabled():
            pass  # a captured tensor trains: the full path builds its program
        elif trained:
            return _autograd.apply(kernel, inputs, [3] if key[-1] else [])
        else:
            return kernel._run(inputs)
    out = (_attention_trained if trained else _attention)(
        q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale, program,
        tile_options, score_mod, mask_mod)
    if key is not None and out[2] is not None:
        kernel = (out[1], out[2]) if mods else out[1]
        with _cache_lock:
            if len(_fast) >= _FAST_MAX:
                _fast.clear()
            _fast[key] = kernel
    return out[0]


def _attention_over_cache(q, k, v, rope, mask, window, softcap, alibi, scale, tile_options,
                          cache_seqlens, block_table, k_new, v_new, others):
    """attention() over a KV cache: decode() with attention's spelling of
    the mask and window; what decode does not take is a ValueError."""
    if cache_seqlens is None:
        raise ValueError("attn: attention over a KV cache needs cache_seqlens (block_table, "
                         "k_new and v_new go with it)")
    given = sorted(n for n, x in others.items() if x is not None)
    if given:
        raise ValueError("attn: attention over a KV cache (cache_seqlens) takes rope, mask, "
                         "window, softcap, alibi and scale, not %s" % ", ".join(given))
    if mask not in (None, "causal"):
        raise ValueError("attn: mask must be 'causal' or None, got %s" % _program._describe(mask))
    if _needs_grad(q, k, v, None):
        raise ValueError("attn: attention over a KV cache has no backward (decoding is "
                         "inference); call it under torch.no_grad() or on tensors that do "
                         "not require grad")
    if window is not None and isinstance(window, (tuple, list)):
        window = tuple(-1 if w is None else w for w in window)
    return decode(q, k, v, cache_seqlens, block_table, causal=mask == "causal", scale=scale,
                  softcap=softcap, alibi=alibi, window=window, rope=rope,
                  tile_options=tile_options, k_new=k_new, v_new=v_new)


def _attention(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale, program,
               tile_options, score_mod=None, mask_mod=None):
    """attention's full path: checks every argument, traces score_mod and
    mask_mod, builds the program text, loads it through the caches and runs
    it; returns (o, the Kernel, where a cached call finds the captured
    tensors again: _fn_key.capture_sources's, None when it cannot)."""
    text, inputs, where, traced, _, _ = _prepare(q, k, v, rope, mask, window, softcap, alibi,
                                                 gate, segment_ids, scale, program,
                                                 tile_options, score_mod, mask_mod)
    if _capture_grads_wanted(traced[2]):
        # Only a captured tensor requires grad: the program with its backward.
        return _attention_trained(q, k, v, rope, mask, window, softcap, alibi, gate,
                                  segment_ids, scale, program, tile_options, score_mod,
                                  mask_mod)
    kernel = load(text, where, tile_options)
    sources = (_fn_key.capture_sources((score_mod, mask_mod), traced[2]) if traced[2] else [])
    return kernel(*inputs), kernel, sources


def _prepare(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale, program,
             tile_options, score_mod=None, mask_mod=None, trained=False, gate_grad=False):
    """What _attention runs: checks every argument, traces score_mod and
    mask_mod and builds the program text; returns (text, its inputs, the
    device to load it on, the trace, [(name, tensor)] of the inputs beyond
    q, k and v as the caller gave them and whose gradients the program does
    not compute, the positions in inputs of those it computes). trained:
    the gate's g and captured tensors that require grad get theirs (marked
    {attn.grad}; a tensor only mask_mod reads is refused: masks have none);
    gate_grad: the gate's gradient is computed whatever g's requires_grad."""
    _check_qkv(q, k, v)
    _optional_str("program", program)
    _optional_str("tile_options", tile_options)
    named = [("q", q), ("k", k), ("v", v)]
    if gate is not None:
        gate = _check_gate(gate, q, k)
        named.append(("gate's g", gate[0]))
    if segment_ids is not None:
        segment_ids = _check_segments(segment_ids, q, k)
        named.extend(zip(("segment_ids' qseg", "segment_ids' kseg"), segment_ids))
    positions = (None, None)
    if program is None and rope is not None and rope is not False:
        positions = _check_positions(rope, q, k)
        named.extend(("rope " + n, t) for n, t in zip(POSITIONS, positions) if t is not None)
    traced = (None, None, [])
    if score_mod is not None or mask_mod is not None:
        if program is not None:
            raise ValueError("attn: program= replaces score_mod and mask_mod (write their "
                             "bodies in the program)")
        traced = _trace.trace(score_mod, mask_mod, _score_type(q))
        named.extend(("the tensor %s captures (shape %s)" % (c.kind, _shape(c.tensor)),
                      c.tensor) for c in traced[2])
    device, index = _device(named)
    grads = _wanted_grads(gate, traced[2]) if trained and program is None else []
    if gate_grad and gate is not None and "gate" not in grads:
        grads.insert(0, "gate")  # the custom op's backward asks (no requires_grad there)
    if program is None:
        text = _build(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
                      traced, positions, grads)
    elif any(x is not None for x in (rope, mask, window, softcap, alibi, scale)):
        raise ValueError("attn: program= replaces rope, mask, window, softcap, alibi and scale")
    else:
        text = program
    inputs = [q, k, v]
    if gate is not None:
        inputs.append(_gate_input(gate))
    if segment_ids is not None:
        inputs.extend(_segment_inputs(segment_ids))
    inputs.extend(_position_inputs(positions))
    first_capture = len(inputs)
    inputs.extend(_trace.convert_capture(c.tensor, c.copy, c.scalar) for c in traced[2])
    granted = [gate[0] if g == "gate" else g.tensor for g in grads]
    grad_at = [3 if g == "gate" else first_capture + traced[2].index(g) for g in grads]
    held = [(n, t) for n, t in named[3:] if not any(t is x for x in granted)]
    return (text, inputs, device if index is None else "%s:%d" % (device, index), traced,
            held, grad_at)


#===-- attention in training ----------------------------------------------===#

def _needs_grad(q, k, v, gate):
    """Whether attention's output must carry a gradient: autograd on and q,
    k, v (or the gate's g) requiring grad. False for arguments that are not
    tensors (their errors come from the checks)."""
    try:
        held = (q.requires_grad or k.requires_grad or v.requires_grad or
                (gate is not None and gate[0].requires_grad))
    except (AttributeError, TypeError, IndexError):
        return False
    return bool(held) and _autograd.grad_enabled()


def _refuse_held_grads(held):
    """A ValueError for an input beyond q, k and v that requires grad and
    gets no gradient (a program= input, a gate or capture on a path that
    computes none): a missing gradient would be a lie."""
    for name, t in held:
        if getattr(t, "requires_grad", False):
            raise ValueError("attn: %s requires grad, and attn computes gradients into q, k, "
                             "v, the gate's g and tensors score_mod captures only, and not "
                             "through program= (mark its arguments {attn.grad} and use "
                             "attn.load): pass it detached (.detach())" % name)


def _capture_grads_wanted(captures):
    """Whether autograd is on and a captured tensor requires grad."""
    return bool(captures) and any(getattr(c.tensor, "requires_grad", False)
                                  for c in captures) and _autograd.grad_enabled()


def _wanted_grads(gate, captures):
    """The tensors whose gradients the backward computes: "gate" when the
    gate's g requires grad, then each Capture whose tensor does. A tensor
    only mask_mod reads is a ValueError (masks have no gradient)."""
    grads = ["gate"] if gate is not None and getattr(gate[0], "requires_grad", False) else []
    for c in captures:
        if not getattr(c.tensor, "requires_grad", False):
            continue
        if not c.in_score:
            raise ValueError("attn: the tensor mask_mod captures (shape %s) requires grad, and "
                             "a mask has no gradient (it hides keys, it does not weigh them): "
                             "pass it detached (.detach())" % (_shape(c.tensor),))
        grads.append(c)
    return grads


def _attention_trained(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
                       program, tile_options, score_mod, mask_mod):
    """_attention when a gradient is wanted: the program compiled with its
    backward, run through the autograd Function; returns what _attention
    does."""
    text, inputs, where, traced, held, grad_at = _prepare(
        q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale, program,
        tile_options, score_mod, mask_mod, trained=True)
    _refuse_held_grads(held)
    _register_ops()
    kernel = load(text, where, tile_options, _autograd.deterministic_options(), grad=True)
    sources = (_fn_key.capture_sources((score_mod, mask_mod), traced[2]) if traced[2] else [])
    if _capture_grads_wanted(traced[2]):
        sources = None  # the fast path's key does not say which captures train
    return _autograd.apply(kernel, inputs, grad_at), kernel, sources


def _op_inputs(q, k, v, extras, options, gate_grad=False):
    """The kernel compiled with grad and its inputs, for the custom ops'
    arguments (extras: gate, qseg, kseg, q_positions, k_positions);
    gate_grad: its backward computes dgate too."""
    gate = None if extras[0] is None else (extras[0], options["gate_block"])
    segment_ids = None if extras[1] is None else (extras[1], extras[2])
    rope = options["rope"]
    if extras[3] is not None or extras[4] is not None:
        rope = dict({} if rope is True or rope is None else rope, q_positions=extras[3],
                    k_positions=extras[4])
    text, inputs, where, _, _, _ = _prepare(q, k, v, rope, options["mask"], options["window"],
                                         options["softcap"], options["alibi"], gate,
                                         segment_ids, options["scale"], None,
                                         options["tile_options"], gate_grad=gate_grad)
    return (load(text, where, options["tile_options"], _autograd.deterministic_options(),
                 grad=True), inputs)


def _op_forward(q, k, v, extras, options):
    kernel, inputs = _op_inputs(q, k, v, extras, options)
    return kernel(*inputs)


def _op_backward(q, k, v, extras, options, o, lse, dout, gate_grad=False):
    kernel, inputs = _op_inputs(q, k, v, extras, options, gate_grad)
    grads = kernel.backward(*inputs, o, lse, dout)
    if gate_grad:
        return tuple(grads[:4])
    return tuple(grads[:3]) + (q.new_empty((0,)),)


def _register_ops():
    """attn::attention and attn::attention_backward on a torch that has
    torch.library.custom_op (once); (the op, None) or (None, why not)."""
    return _autograd.register(_op_forward, _op_backward)


def _compiled_attention(q, k, v, rope, mask, window, softcap, alibi, gate, segment_ids, scale,
                        tile_options):
    """attention under torch.compile: the custom op attn::attention, its
    options as plain scalars (dynamo traces this into the graph)."""
    import torch
    positions = (None, None)
    plain_rope = rope
    if isinstance(rope, dict):
        positions = (rope.get("q_positions"), rope.get("k_positions"))
        plain_rope = {n: x for n, x in rope.items() if n not in POSITIONS}
    seg = (None, None) if segment_ids is None else (segment_ids[0], segment_ids[1])
    opts = _autograd.options_of(plain_rope, mask, window, softcap, alibi, scale,
                                None if gate is None else gate[1], tile_options)
    o, _ = torch.ops.attn.attention(q, k, v, None if gate is None else gate[0], seg[0], seg[1],
                                    positions[0], positions[1], *opts)
    return o


#===-- matmul -----------------------------------------------------------===#

def build_matmul_program(a, b, c=None):
    """The IR text matmul() compiles for these tensors: one linalg.matmul,
    initialised to zero, or to c (the function's third argument) when c is
    given."""
    _check_matmul(a, b, c)
    return _program.build_matmul(_shape(a), _shape(b), a.dtype,
                                 accumulate=c is not None)


def matmul(a, b, c=None, tile_options=None):
    """a @ b as one tile-level GEMM kernel (linalg.matmul through attn-tile).

    a [M, K] and b [K, N] (and c [M, N]) share a dtype, float32, float16 or
    bfloat16, and a device. Products accumulate in float32 and are rounded
    once. Without c returns a new [M, N] tensor; with c adds a @ b to it in
    place (c += a @ b) and returns c. On an H200, bf16 and f16 GEMMs whose K
    and N are multiples of 8 run the wgmma/TMA kernel. tile_options are the
    attn-tile pass's ("block-m=32 block-n=32 block-k=16")."""
    named = _check_matmul(a, b, c)
    _optional_str("tile_options", tile_options)
    device, index = _device(named)
    text = build_matmul_program(a, b, c)
    tensors = [t for _, t in named]
    kernel = load(text, device if index is None else "%s:%d" % (device, index), tile_options)
    return kernel(*tensors)


DECODE_NAME = "<attn.decode>"


def build_decode_program(q, k_cache, v_cache, cache_seqlens, block_table=None, causal=True,
                         scale=None, softcap=None, alibi=None, window=None, rope=None,
                         k_new=None, v_new=None):
    """The IR text decode() compiles for these tensors and options: one
    attn.fused_decode, after the attn.cache_append of k_new and v_new when
    given."""
    _, page_size, max_keys = _decode.check(q, k_cache, v_cache, cache_seqlens, block_table)
    _decode.check_new(q, k_cache, v_cache, k_new, v_new, max_keys)
    return _decode.build(q, k_cache, v_cache, cache_seqlens, block_table, page_size, causal,
                         scale, softcap, alibi, window, rope, k_new=k_new, v_new=v_new)


def _capturing(t):
    """True while torch's current CUDA stream on t's device is capturing a
    graph (reading tensors would break the capture)."""
    if t.device.type != "cuda":
        return False
    import torch
    return bool(torch.cuda.is_current_stream_capturing())


def decode(q, k_cache, v_cache, cache_seqlens, block_table=None, causal=True, scale=None,
           softcap=None, alibi=None, window=None, rope=None, check_values=True,
           tile_options=None, kernel_options=None, k_new=None, v_new=None):
    """Attention of a few new query rows per sequence over a KV cache (issue 30).

    q [B, H, Nq, D]: the last Nq tokens of each sequence (1 for plain
    decoding, up to 16 on the GPU kernel for speculative decoding).
    k_cache, v_cache: [B, Hk, M, D] (contiguous), or with block_table
    [P, Hk, page_size, D] pages (page_size a power of two from 16 to 256);
    they hold every key and value of the sequences, the new tokens'
    included, and with rope the keys already rotated. cache_seqlens: int32
    [B], the keys of each sequence. block_table: int32 [B, max_pages], page
    j of sequence b is k_cache[block_table[b, j]]. Query row i of sequence b
    sits at position cache_seqlens[b] - Nq + i and, when causal, sees the
    keys up to it. H a multiple of Hk (GQA). scale defaults to 1/sqrt(D);
    softcap and alibi (max_bias) apply after it, in that order; window =
    (left, right) bounds the keys around each row's position; rope = True
    or dict(theta, rotary_dim, layout) rotates q at its positions.
    k_new, v_new [B, Hk, N, D]: the new tokens' keys and values, written
    into the caches in place (rows cache_seqlens[b] - N + i, k_new rotated
    there with rope) in the same launch, before the attention reads them;
    the lengths count them, and the caches must be contiguous.
    check_values reads the lengths and the table first and raises
    ValueError for a length outside [max(Nq, N), the cache's keys] or a page outside
    [0, P) that a sequence reaches (skipped while a CUDA graph is being
    captured, where reading would break it). kernel_options are
    lower-tile-to-decode's on CUDA ("body=lanes", "rows=2", "splits=8";
    docs/passes.md). Returns out [B, H, Nq, D], a
    new tensor, computed on the tensors' device (CPU: the float64-checked
    CPU path; CUDA: the decode kernel, on torch's current stream)."""
    if not isinstance(check_values, bool):
        raise TypeError("attn: check_values must be a bool, got %s"
                        % _program._describe(check_values))
    if getattr(q, "shape", None) is not None and len(q.shape) == 4 and \
            q.shape[2] > _prefill.ROWS:
        return _chunked_prefill(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale,
                                softcap, alibi, window, rope, check_values, tile_options,
                                kernel_options, k_new, v_new)
    inputs = [q, k_cache, v_cache, cache_seqlens] + ([block_table]
                                                     if block_table is not None else [])
    if k_new is not None or v_new is not None:
        inputs += [k_new, v_new]
    # The fast path: arguments seen before (the same shapes, dtypes, device
    # and options) find their Kernel in one lookup; only the values are
    # checked again.
    try:
        key = _decode_key(inputs, causal, scale, softcap, alibi, window, rope, tile_options,
                          kernel_options)
    except (_Unusual, AttributeError):
        key = None
    hit = _fast.get(key) if key is not None else None
    if hit is None:
        paged, page_size, max_keys = _decode.check(q, k_cache, v_cache, cache_seqlens,
                                                   block_table)
        _decode.check_new(q, k_cache, v_cache, k_new, v_new, max_keys)
        _optional_str("tile_options", tile_options)
        _optional_str("kernel_options", kernel_options)
        text = _decode.build(q, k_cache, v_cache, cache_seqlens, block_table, page_size, causal,
                             scale, softcap, alibi, window, rope, k_new=k_new, v_new=v_new)
        device, index = q.device.type, q.device.index
        kernel = load(text, device if index is None else "%s:%d" % (device, index),
                      tile_options, hopper_options=kernel_options if device != "cpu" else None)
        hit = (kernel, max_keys)
        if key is not None:
            with _cache_lock:
                if len(_fast) >= _FAST_MAX:
                    _fast.clear()
                _fast[key] = hit
    kernel, max_keys = hit
    if k_new is not None and not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        # The fast path keys shapes, not strides: the append writes in place.
        _decode.check_new(q, k_cache, v_cache, k_new, v_new, max_keys)
    if check_values and not _capturing(q):
        _decode.check_values(q, k_cache, cache_seqlens, block_table, max_keys,
                             _shape(k_new)[2] if k_new is not None else 0)
    return kernel._run([t.contiguous() for t in inputs])


def _chunked_prefill(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
                     alibi, window, rope, check_values, tile_options, kernel_options, k_new,
                     v_new):
    """decode() with more query rows than the decode kernel takes: the same
    checks, then attention()'s prefill kernels over the cache
    (_prefill.py)."""
    _, page_size, max_keys = _decode.check(q, k_cache, v_cache, cache_seqlens, block_table)
    _decode.check_new(q, k_cache, v_cache, k_new, v_new, max_keys)
    _optional_str("tile_options", tile_options)
    if kernel_options is not None:
        raise ValueError("attn: kernel_options are lower-tile-to-decode's, but q's %d rows "
                         "per sequence (more than %d) run attn.attention's prefill kernel; "
                         "give tile_options instead" % (q.shape[2], _prefill.ROWS))
    # The options' own checks (the program text itself is not used).
    _decode.build(q, k_cache, v_cache, cache_seqlens, block_table, page_size, causal, scale,
                  softcap, alibi, window, rope, k_new=k_new, v_new=v_new)
    if check_values and not _capturing(q):
        _decode.check_values(q, k_cache, cache_seqlens, block_table, max_keys,
                             _shape(k_new)[2] if k_new is not None else 0)
    if _needs_grad(q, k_cache, v_cache, None):
        raise ValueError("attn: decode has no backward (decoding is inference); call it "
                         "under torch.no_grad() or on tensors that do not require grad")
    return _prefill.run(attention, q, k_cache, v_cache, cache_seqlens, block_table, causal,
                        scale, softcap, alibi, window, rope, tile_options, k_new, v_new)


def _decode_key(inputs, causal, scale, softcap, alibi, window, rope, tile_options,
                kernel_options):
    """decode's key in _fast: the tensors' shapes, dtypes and devices and the
    options with their types (1 and 1.0 apart); _Unusual for an argument it
    does not key (the full path then checks it)."""
    tensors = tuple((tuple(t.shape), str(t.dtype), str(t.device)) for t in inputs)
    if type(rope) is dict:
        rope_key = tuple(sorted((n, _plain(x)) for n, x in rope.items()))
    else:
        rope_key = _plain(rope)
    if window is None:
        window_key = None
    elif type(window) in (tuple, list):
        window_key = tuple(_plain(w) for w in window)
    else:
        raise _Unusual
    return ("decode", tensors, _plain(causal), _plain(scale), _plain(softcap), _plain(alibi),
            window_key, rope_key, _plain(tile_options), _plain(kernel_options))


# torch.compile needs the custom ops before it traces a model: registered
# here when torch is already imported, else on the first training call.
if "torch" in sys.modules:
    _register_ops()
