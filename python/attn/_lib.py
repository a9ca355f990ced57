"""ctypes declarations of libattn (include/attn/attn.h) and libattnrt (runtime/attnrt.h).

The libraries are found, in order, in $ATTN_LIBRARY_DIR, next to an installed
package (<libdir>/python/attn -> <libdir>), in the source tree's build/lib,
then wherever the dynamic loader finds them. Nothing is loaded at import time.
"""
import ctypes
import ctypes.util
import os
import threading

c_char_p, c_int, c_size_t, c_void_p = ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p

# attn.h
OUTPUT_FORMATS = {"default": 0, "ptx": 1, "cubin": 2, "llvm-mlir": 3, "llvm-ir": 4}
SEVERITIES = ("error", "warning", "note", "remark")
DIAG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_int, c_int, c_char_p)


class CompileOptions(ctypes.Structure):
    """struct attn_compile_options."""
    _fields_ = [("target", c_char_p), ("features", c_char_p), ("tile_options", c_char_p),
                ("format", c_int), ("toolkit", c_char_p), ("source_name", c_char_p),
                ("hopper_options", c_char_p), ("grad", c_int)]


# attnrt.h
ARG_PTR, ARG_I32, ARG_I64, ARG_F32 = range(4)


class _ArgValue(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("i64", ctypes.c_int64),
                ("f32", ctypes.c_float)]


class RtArg(ctypes.Structure):
    """struct attnrt_arg."""
    _fields_ = [("kind", c_int), ("v", _ArgValue)]


_lock = threading.Lock()
_libs = {}


class LibraryNotFound(OSError):
    pass


def search_dirs():
    """The folders searched for the libraries, in order."""
    dirs = []
    env = os.environ.get("ATTN_LIBRARY_DIR")
    if env:
        dirs.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.append(os.path.normpath(os.path.join(here, "..", "..")))
    dirs.append(os.path.normpath(os.path.join(here, "..", "..", "build", "lib")))
    return dirs


def _find(stem):
    for d in search_dirs():
        for name in ("lib%s.so" % stem, "lib%s.so.0" % stem):
            path = os.path.join(d, name)
            if os.path.exists(path):
                return path
    return ctypes.util.find_library(stem)


def _declare(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


def _load_attn(path):
    lib = ctypes.CDLL(path)
    P = ctypes.POINTER
    _declare(lib, "attn_version", c_char_p)
    _declare(lib, "attn_status_string", c_char_p, c_int)
    _declare(lib, "attn_last_error", c_char_p)
    _declare(lib, "attn_compile", c_int, c_char_p, c_size_t, P(CompileOptions), DIAG_FN,
             c_void_p, P(c_void_p))
    _declare(lib, "attn_result_data", c_void_p, c_void_p, P(c_size_t))
    _declare(lib, "attn_result_manifest", c_char_p, c_void_p)
    _declare(lib, "attn_result_destroy", None, c_void_p)
    _declare(lib, "attn_cpu_kernel_create", c_int, c_char_p, c_size_t, P(CompileOptions),
             DIAG_FN, c_void_p, P(c_void_p))
    _declare(lib, "attn_cpu_kernel_run", c_int, c_void_p, c_char_p, P(c_void_p), c_size_t)
    _declare(lib, "attn_cpu_kernel_manifest", c_char_p, c_void_p)
    _declare(lib, "attn_cpu_kernel_destroy", None, c_void_p)
    return lib


def _load_attnrt(path):
    lib = ctypes.CDLL(path)
    P = ctypes.POINTER
    _declare(lib, "attnrt_status_string", c_char_p, c_int)
    _declare(lib, "attnrt_last_error", c_char_p, c_void_p)
    _declare(lib, "attnrt_runtime_create", c_int, c_int, P(c_void_p))
    _declare(lib, "attnrt_runtime_destroy", None, c_void_p)
    _declare(lib, "attnrt_runtime_compute_capability", c_int, c_void_p, P(c_int), P(c_int))
    _declare(lib, "attnrt_runtime_sm_count", c_int, c_void_p, P(c_int))
    _declare(lib, "attnrt_module_load_ptx", c_int, c_void_p, c_char_p, c_size_t, c_char_p,
             P(c_void_p))
    _declare(lib, "attnrt_module_load_cubin", c_int, c_void_p, c_char_p, c_size_t, c_char_p,
             P(c_void_p))
    _declare(lib, "attnrt_module_destroy", None, c_void_p)
    _declare(lib, "attnrt_runtime_driver_version", c_int, c_void_p, P(c_int))
    _declare(lib, "attnrt_nvjitlink_version", c_int, P(c_int), P(c_int))
    _declare(lib, "attnrt_runtime_sass_arch", c_int, c_void_p, c_char_p, c_char_p, c_size_t)
    _declare(lib, "attnrt_runtime_ptx_to_cubin", c_int, c_void_p, c_char_p, c_size_t, c_char_p,
             P(c_void_p), P(c_size_t))
    _declare(lib, "attnrt_cubin_free", None, c_void_p)
    _declare(lib, "attnrt_stream_wrap", c_int, c_void_p, c_void_p, P(c_void_p))
    _declare(lib, "attnrt_stream_destroy", None, c_void_p)
    _declare(lib, "attnrt_launch", c_int, c_void_p, c_char_p, P(RtArg), c_size_t, c_void_p)
    _declare(lib, "attnrt_program_launch", c_int, c_void_p, c_char_p, P(RtArg), c_size_t,
             c_void_p)
    return lib


def _get(stem, loader):
    with _lock:
        if stem not in _libs:
            path = _find(stem)
            if not path:
                raise LibraryNotFound(
                    "lib%s.so not found; set ATTN_LIBRARY_DIR to the folder holding it "
                    "(searched %s)" % (stem, ", ".join(search_dirs())))
            _libs[stem] = (loader(path), path)
        return _libs[stem]


def attn():
    """libattn, loaded on first use."""
    return _get("attn", _load_attn)[0]


def attnrt():
    """libattnrt, loaded on first use."""
    return _get("attnrt", _load_attnrt)[0]


def attn_identity():
    """What identifies the compiler build: version, path, size and mtime of
    the libattn this process loaded (it cannot change while loaded)."""
    lib, path = _get("attn", _load_attn)
    with _lock:
        if "identity" not in _libs:
            st = os.stat(path)
            _libs["identity"] = "%s:%s:%d:%d" % (lib.attn_version().decode(),
                                                 os.path.realpath(path), st.st_size,
                                                 st.st_mtime_ns)
        return _libs["identity"]
