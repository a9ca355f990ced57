"""attn's kernel cache: in memory and on disk ($ATTN_CACHE_DIR), keyed by
_key(); one thread produces a key at a time. Also the cache_stats() counters,
the cubin keys and the $ATTN_NVJITLINK policy of GPU kernels, and the
per-thread timings of the last GPU kernel production. Re-exported by attn."""
import collections
import hashlib
import json
import os
import threading
import warnings

from . import _lib
from ._errors import Error

_stats_lock = threading.Lock()
_stats = collections.Counter()


def _count(what):
    with _stats_lock:
        _stats[what] += 1


#===-- The cache --------------------------------------------------------===#

_cache_lock = threading.RLock()
_memory = {}
# memory key -> the lock its one producer holds while it reads the disk or
# compiles and loads; other threads asking for that key wait on it.
_producing = {}

# The on-disk format; part of the key, so entries of older formats are never
# read (they stay until the folder is cleaned).
CACHE_FORMAT = 2
_MAGIC = b"attn-cache"


def cache_dir():
    """The on-disk cache: $ATTN_CACHE_DIR, else $XDG_CACHE_HOME/attn or ~/.cache/attn."""
    d = os.environ.get("ATTN_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "attn")


# The fast path of attn.attention: the arguments' key (see attn._fast_key)
# -> the Kernel their program loaded. Read without a lock (one dict lookup),
# written under _cache_lock; emptied with _memory, and all at once when it
# holds _FAST_MAX keys.
_fast = {}
_FAST_MAX = 4096


def clear_memory_cache():
    """Forgets the kernels loaded by this process (the disk cache stays)."""
    with _cache_lock:
        _memory.clear()
        _fast.clear()


def _key(program, target, tile_options, fmt, hopper_options=None):
    """The cache key: the program text (which spells the shapes and the dtype),
    the target chip, the tile and hopper options, the output format, the
    compiler build and the cache's format."""
    h = hashlib.sha256()
    h.update(json.dumps([program, target, tile_options, hopper_options, fmt,
                         _lib.attn_identity(), CACHE_FORMAT]).encode())
    return h.hexdigest()


def _digest(key, ext, manifest, data):
    """The checksum of an entry: SHA-256 of its key, kind, both lengths and
    both payloads, so a file that is cut short, altered or copied under
    another key's name fails the check."""
    h = hashlib.sha256()
    h.update(b"%s %d\0%s\0%s\0%d\0%d\0" % (_MAGIC, CACHE_FORMAT, key.encode(), ext.encode(),
                                           len(manifest), len(data)))
    h.update(manifest)
    h.update(data)
    return h.hexdigest()


def _encode_entry(key, ext, data, manifest):
    """One cache file: the header line `attn-cache 2 <manifest bytes> <data
    bytes> <sha256>`, then the manifest (JSON) and the data."""
    text = json.dumps(manifest).encode()
    header = b"%s %d %d %d %s\n" % (_MAGIC, CACHE_FORMAT, len(text), len(data),
                                    _digest(key, ext, text, data).encode())
    return header + text + data


def _decode_entry(key, ext, blob):
    """(data, manifest) of a cache file, or (None, why it fails the check)."""
    head, nl, rest = blob.partition(b"\n")
    fields = head.split(b" ")
    if not nl or len(fields) != 5 or fields[0] != _MAGIC:
        return None, "not an attn cache entry" if blob else "empty"
    if fields[1] != b"%d" % CACHE_FORMAT:
        return None, "format %s, not %d" % (fields[1].decode(errors="replace"), CACHE_FORMAT)
    try:
        nman, ndata = int(fields[2]), int(fields[3])
    except ValueError:
        return None, "bad header"
    if nman < 0 or ndata < 0:
        return None, "bad header"
    if len(rest) != nman + ndata:
        return None, "%s: %d bytes after the header, expected %d" % (
            "truncated" if len(rest) < nman + ndata else "trailing bytes", len(rest),
            nman + ndata)
    text, data = rest[:nman], rest[nman:]
    if fields[4].decode(errors="replace") != _digest(key, ext, text, data):
        return None, "checksum mismatch"
    try:
        manifest = json.loads(text.decode())
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict):
        return None, "the manifest is not a JSON object"
    return data, manifest


def _entry_path(key, ext):
    return os.path.join(cache_dir(), key + ext)


def _disk_read(key, ext):
    """(data, manifest) of key's entry on disk, or None. An entry that fails
    the integrity check is removed, with a warning, and counts as a miss."""
    path = _entry_path(key, ext)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except (OSError, ValueError):
        return None  # no entry, or no readable cache folder: a miss
    data, manifest = _decode_entry(key, ext, blob)
    if data is None:
        _discard(path, manifest)
        return None
    return data, manifest


def _discard(path, why):
    """Removes the damaged entry at path (compiled again by the caller)."""
    try:
        os.remove(path)
    except OSError:
        pass
    warnings.warn("attn: ignoring the damaged kernel cache entry %s (%s); compiling again"
                  % (path, why), RuntimeWarning, stacklevel=2)


_warned = set()


def _disk_write(key, ext, data, manifest):
    """Writes key's entry: to a temporary file in the cache folder, renamed
    over the entry, so a reader sees a whole entry or none. A folder that
    cannot be written is a warning (once per folder), never an error."""
    d = cache_dir()
    tmp = None
    try:
        os.makedirs(d, exist_ok=True)
        blob = _encode_entry(key, ext, data, manifest)
        tmp = os.path.join(d, ".%s%s.%d.%d.tmp" % (key, ext, os.getpid(), threading.get_ident()))
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, os.path.join(d, key + ext))
        tmp = None
        _count("disk_writes")
    except (OSError, ValueError) as e:
        with _cache_lock:
            first = d not in _warned
            _warned.add(d)
        if first:
            warnings.warn("attn: cannot write the kernel cache in %s: %s; kernels are compiled "
                          "again in each process" % (d, e), RuntimeWarning, stacklevel=2)
    finally:
        if tmp is not None:
            try:
                os.remove(tmp)
            except OSError:
                pass


def _cached(key, ext, produce, load, memory_key=None):
    """Returns load(data, manifest) for key: from memory (under memory_key,
    default key), the disk, or produce(). One thread produces a key at a
    time: threads asking for a key being produced wait for it and then take
    it from memory (or, when producing failed, try themselves)."""
    memory_key = key if memory_key is None else memory_key
    return _cached_make(memory_key, lambda: _produce(key, ext, produce, load))


def _cached_make(memory_key, make):
    """The object under memory_key in memory, else make()'s, kept there; one
    thread makes a key at a time (see _cached)."""
    while True:
        with _cache_lock:
            hit = _memory.get(memory_key)
            if hit is not None:
                _count("memory_hits")
                return hit
            busy = _producing.get(memory_key)
            if busy is None:
                mine = _producing[memory_key] = threading.Lock()
                mine.acquire()
                break
        with busy:  # wait for its producer, then look again
            pass
    try:
        obj = make()
        with _cache_lock:
            _memory[memory_key] = obj
        return obj
    finally:
        with _cache_lock:
            del _producing[memory_key]
        mine.release()


def _produce(key, ext, produce, load):
    """load() of key's entry on disk, else of produce()'s, written to disk."""
    found = _disk_read(key, ext)
    obj = None
    if found is not None:
        _count("disk_hits")
        try:
            obj = load(*found)
        except Error:
            obj = None  # an entry this build cannot load: compile again and replace it
    if obj is None:
        compiled = produce()
        found = (compiled.data, compiled.manifest)
        _disk_write(key, ext, *found)
        obj = load(*found)
    _count("loads")
    return obj


#===-- GPU kernels: cubin keys and the SASS policy ----------------------===#

# Where the time of this thread's last kernel production went (seconds):
# read by bench/compile_latency.py through _last_timings().
_timings = threading.local()


def _last_timings():
    """{"disk", "compile", "sass", "load"}: seconds the calling thread's last
    GPU kernel production spent reading the disk cache, compiling IR to PTX,
    turning PTX into SASS with nvJitLink, and loading the module (with the
    driver's JIT when no cubin was made); "path" says which ("cubin hit",
    "cubin", "ptx")."""
    return dict(getattr(_timings, "last", {}))


def _cubin_key(key, arch, toolchain):
    """The key of the cubin made from key's PTX for arch ("sm_90a") by the
    toolchain toolchain (nvJitLink's and the driver's versions)."""
    h = hashlib.sha256()
    h.update(json.dumps([key, "cubin", arch, toolchain, CACHE_FORMAT]).encode())
    return h.hexdigest()


def _sass_policy():
    """$ATTN_NVJITLINK: "never" (the default; unset, empty, 0, off, no): PTX
    goes to the driver's JIT at load time; "auto": nvJitLink makes every PTX
    into a cubin but one that uses setmaxnreg; "always" (1, on, yes): every
    PTX. nvJitLink compiles PTX as relocatable code, where ptxas ignores
    setmaxnreg and serializes wgmma: the Hopper attention kernel it makes ran
    2.1 to 2.5 times slower on an H200, and took longer to make than the
    driver's JIT (docs/api.md, Caching; bench/compile_latency.md)."""
    v = os.environ.get("ATTN_NVJITLINK", "").strip().lower()
    if v == "auto":
        return "auto"
    if v in ("1", "always", "on", "yes"):
        return "always"
    return "never"


def _sass_wanted(policy, ptx):
    """Whether nvJitLink makes ptx's SASS under policy (see _sass_policy)."""
    return policy == "always" or b"setmaxnreg" not in ptx
