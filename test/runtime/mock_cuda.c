// mock_cuda.c - a mock libcuda over host memory, steered by MOCK_CUDA_* environment variables (see mock_cuda.h).

#include "mock_cuda.h"
#include "mock_env.h"

#include <cuda.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// cuda.h maps cuEventElapsedTime to its _v2; attnrt asks for the original ABI.
#undef cuEventElapsedTime

#define MAX_DEVICES 8
#define MAX_CTX_DEPTH 16
#define DEFAULT_SHARED_LIMIT (48 * 1024)
#define MAX_SHARED_OPTIN (227 * 1024)
#define MEM_ALIGN 256

struct CUctx_st {
  int device;
};

struct CUfunc_st {
  char name[64];
  int nparams;
  int param_bytes[MOCK_CUDA_MAX_PARAMS]; // 1 to MOCK_CUDA_MAX_PARAM_BYTES
  int max_dynamic_shared;
  struct CUfunc_st *next;
};

struct CUmod_st {
  char *image;
  size_t image_len; // bytes of an ELF image; 0 for PTX text
  struct CUfunc_st *functions;
};

struct CUstream_st {
  int unused;
};

struct CUevent_st {
  long stamp; // 0 until recorded
};

struct allocation {
  unsigned char *base;
  size_t bytes;
  struct allocation *next;
};

static struct mock_cuda_state state;
static struct CUctx_st contexts[MAX_DEVICES];
static CUcontext ctx_stack[MAX_CTX_DEPTH];
static struct allocation *allocations;
static long clock_ticks;

const struct mock_cuda_state *mock_cuda_state(void) { return &state; }

int mock_cuda_cubin_loads(void) { return state.cubin_loads; }

/// Host functions of kernels (mock_cuda_set_kernel).
static struct {
  char name[64];
  mock_cuda_kernel_fn fn;
} kernels[4];

void mock_cuda_set_kernel(const char *name, mock_cuda_kernel_fn fn) {
  size_t n = sizeof kernels / sizeof kernels[0], slot = n;
  for (size_t i = 0; i < n; ++i) {
    if (kernels[i].fn && strcmp(kernels[i].name, name) == 0) {
      slot = i; // replace this kernel's function
      break;
    }
    if (!kernels[i].fn && slot == n)
      slot = i; // the first free slot
  }
  if (slot == n)
    return;
  snprintf(kernels[slot].name, sizeof kernels[slot].name, "%s", fn ? name : "");
  kernels[slot].fn = fn;
}

void mock_cuda_reset(void) {
  memset(&state, 0, sizeof state);
  clock_ticks = 0;
}

//===-- Behaviour switches --===//

/// True when MOCK_CUDA_FAIL lists name (and, with MOCK_CUDA_FAIL_AT=N, this
/// is the Nth call of the listed entry points since the last reset); *code
/// is then the value to return.
static bool should_fail(const char *name, CUresult *code) {
  if (!mock_env_lists("MOCK_CUDA_FAIL", name))
    return false;
  int at = mock_env_int("MOCK_CUDA_FAIL_AT", 0);
  if (at > 0 && ++state.listed_calls != at)
    return false;
  ++state.injected_failures;
  *code = (CUresult)mock_env_int("MOCK_CUDA_FAIL_CODE", CUDA_ERROR_UNKNOWN);
  return true;
}

#define MOCK_ENTER(name)                                                       \
  do {                                                                         \
    CUresult injected_;                                                        \
    if (should_fail(name, &injected_))                                         \
      return injected_;                                                        \
  } while (0)

#define MOCK_NEED_CONTEXT()                                                    \
  do {                                                                         \
    if (state.ctx_depth == 0)                                                  \
      return CUDA_ERROR_INVALID_CONTEXT;                                       \
  } while (0)

//===-- Initialization, errors, devices --===//

CUresult CUDAAPI cuInit(unsigned int flags) {
  MOCK_ENTER("cuInit");
  ++state.init_calls;
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  MOCK_ENTER("cuDriverGetVersion");
  *version = 13000;
  return CUDA_SUCCESS;
}

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult describe(CUresult code, const char **out, bool name) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i) {
    if (errors[i].code == code) {
      *out = name ? errors[i].name : errors[i].text;
      return CUDA_SUCCESS;
    }
  }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **out) {
  return describe(error, out, true);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **out) {
  return describe(error, out, false);
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  MOCK_ENTER("cuDeviceGetCount");
  if (!state.init_calls)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = mock_env_int("MOCK_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  MOCK_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= mock_env_int("MOCK_CUDA_DEVICES", 1) ||
      ordinal >= MAX_DEVICES)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice device) {
  MOCK_ENTER("cuDeviceGetName");
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "Mock GPU %d", device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice device) {
  MOCK_ENTER("cuDeviceGetAttribute");
  (void)device;
  const char *cc = getenv("MOCK_CUDA_CC");
  int major = 9, minor = 0;
  if (cc && sscanf(cc, "%d.%d", &major, &minor) != 2)
    return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = major;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = minor;
  else if (attribute == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) {
    int sms = mock_env_int("MOCK_CUDA_SMS", 132);
    if (sms <= 0)
      return CUDA_ERROR_INVALID_VALUE;
    *value = sms;
  } else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

//===-- Contexts --===//

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
  MOCK_ENTER("cuDevicePrimaryCtxRetain");
  if (device < 0 || device >= MAX_DEVICES)
    return CUDA_ERROR_INVALID_DEVICE;
  contexts[device].device = device;
  *ctx = &contexts[device];
  ++state.primary_ctx_refs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  MOCK_ENTER("cuDevicePrimaryCtxRelease");
  if (device < 0 || device >= MAX_DEVICES || state.primary_ctx_refs == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --state.primary_ctx_refs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  MOCK_ENTER("cuCtxPushCurrent");
  if (!ctx || state.ctx_depth == MAX_CTX_DEPTH)
    return CUDA_ERROR_INVALID_CONTEXT;
  ctx_stack[state.ctx_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *ctx) {
  MOCK_ENTER("cuCtxPopCurrent");
  if (state.ctx_depth == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = ctx_stack[--state.ctx_depth];
  if (ctx)
    *ctx = top;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  MOCK_ENTER("cuCtxSynchronize");
  MOCK_NEED_CONTEXT();
  return CUDA_SUCCESS;
}

//===-- Modules and launches --===//

/// Returns the bytes of the parameter declared at decl (".param .u32 n" or
/// ".param .align 64 .b8 m[128]"), or 0 when it cannot be read.
static int param_size(const char *decl) {
  const char *type = decl + strlen(".param");
  while (*type == ' ')
    ++type;
  if (strncmp(type, ".align", strlen(".align")) == 0) {
    type = strchr(type + strlen(".align"), '.');
    if (!type)
      return 0;
  }
  int bits = atoi(type + 2); // ".u64" -> 64
  const char *end = type + strcspn(type, ",)");
  const char *bracket = strchr(type, '[');
  int count = bracket && bracket < end ? atoi(bracket + 1) : 1;
  int bytes = bits / 8 * count;
  return bits <= 0 || count <= 0 || bytes > MOCK_CUDA_MAX_PARAM_BYTES ? 0 : bytes;
}

/// Reads the .param list of ".entry name(" in image into f; false if absent.
static bool parse_entry(const char *image, const char *name,
                        struct CUfunc_st *f) {
  size_t n = strlen(name);
  for (const char *p = strstr(image, ".entry "); p; p = strstr(p + 1, ".entry ")) {
    const char *q = p + strlen(".entry ");
    if (strncmp(q, name, n) != 0 || (q[n] != '(' && q[n] != ' '))
      continue;
    const char *close = strchr(q, ')');
    for (const char *r = strstr(q, ".param"); r && close && r < close;
         r = strstr(r + 1, ".param")) {
      int bytes = param_size(r);
      if (f->nparams == MOCK_CUDA_MAX_PARAMS || bytes == 0)
        return false;
      f->param_bytes[f->nparams++] = bytes;
    }
    return true;
  }
  return false;
}

//===-- Cubins: ELF images as nvJitLink writes them --===//

static uint64_t read_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/// Size of the 64-bit little-endian ELF file at image (the end of its
/// section and program header tables and of its sections), or 0 when image
/// is not one.
static size_t elf_size(const void *image) {
  const unsigned char *e = image;
  if (memcmp(e, "\x7f" "ELF", 4) != 0 || e[4] != 2 || e[5] != 1)
    return 0;
  uint64_t phoff = read_le(e + 0x20, 8), shoff = read_le(e + 0x28, 8);
  uint64_t phentsize = read_le(e + 0x36, 2), phnum = read_le(e + 0x38, 2);
  uint64_t shentsize = read_le(e + 0x3A, 2), shnum = read_le(e + 0x3C, 2);
  uint64_t end = shoff + shentsize * shnum;
  if (phoff + phentsize * phnum > end)
    end = phoff + phentsize * phnum;
  for (uint64_t i = 0; i < shnum; ++i) {
    const unsigned char *sh = e + shoff + i * shentsize;
    uint64_t type = read_le(sh + 4, 4), off = read_le(sh + 0x18, 8), size = read_le(sh + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end)
      end = off + size;
  }
  return (size_t)end;
}

/// Reads the parameters of kernel name from the cubin's .nv.info.<name>
/// section (EIATTR_KPARAM_INFO, attribute 0x17, an EIFMT_SVAL entry: index,
/// ordinal, offset and size in bits 18-31 of its last word) into f; false when there is no such section.
static bool parse_elf_entry(const struct CUmod_st *m, const char *name,
                            struct CUfunc_st *f) {
  const unsigned char *e = (const unsigned char *)m->image;
  uint64_t shoff = read_le(e + 0x28, 8), shentsize = read_le(e + 0x3A, 2);
  uint64_t shnum = read_le(e + 0x3C, 2), shstrndx = read_le(e + 0x3E, 2);
  if (shstrndx >= shnum)
    return false;
  uint64_t names = read_le(e + shoff + shstrndx * shentsize + 0x18, 8);
  char want[128];
  snprintf(want, sizeof want, ".nv.info.%s", name);
  for (uint64_t i = 0; i < shnum; ++i) {
    const unsigned char *sh = e + shoff + i * shentsize;
    const char *sname = (const char *)e + names + read_le(sh, 4);
    if (strcmp(sname, want) != 0)
      continue;
    const unsigned char *p = e + read_le(sh + 0x18, 8);
    const unsigned char *end = p + read_le(sh + 0x20, 8);
    while (p + 2 <= end) {
      unsigned format = p[0], attr = p[1];
      // EIFMT_SVAL (4) has a 16-bit size; the others take 4 bytes in all.
      size_t bytes = format == 4 ? 4 + read_le(p + 2, 2) : 4;
      if (format == 4 && attr == 0x17 && bytes >= 16) {
        unsigned ordinal = (unsigned)read_le(p + 8, 2);
        int size = (int)((read_le(p + 12, 4) >> 18) & 0x3fff);
        if (ordinal >= MOCK_CUDA_MAX_PARAMS || size <= 0 || size > MOCK_CUDA_MAX_PARAM_BYTES)
          return false;
        f->param_bytes[ordinal] = size;
        if ((int)ordinal + 1 > f->nparams)
          f->nparams = (int)ordinal + 1;
      }
      p += bytes;
    }
    for (int j = 0; j < f->nparams; ++j)
      if (f->param_bytes[j] == 0)
        return false;
    return true;
  }
  return false;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int noptions, CUjit_option *options,
                                    void **values) {
  char *log = NULL;
  size_t log_bytes = 0;
  for (unsigned i = 0; i < noptions; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      log = values[i];
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      log_bytes = (size_t)values[i];
  }
  state.jit_log_bytes = (unsigned)log_bytes;
  CUresult injected;
  if (should_fail("cuModuleLoadDataEx", &injected)) {
    const char *text = getenv("MOCK_CUDA_JIT_LOG");
    if (log && log_bytes > 0)
      snprintf(log, log_bytes, "%s", text ? text : "");
    return injected;
  }
  MOCK_NEED_CONTEXT();
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUmod_st *m = calloc(1, sizeof *m);
  size_t elf = elf_size(image);
  size_t len = elf ? elf : strlen(image);
  m->image = malloc(len + 1);
  memcpy(m->image, image, len);
  m->image[len] = '\0';
  m->image_len = elf;
  state.cubin_loads += elf != 0;
  *module = m;
  ++state.live_modules;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  MOCK_ENTER("cuModuleUnload");
  if (!module)
    return CUDA_ERROR_INVALID_HANDLE;
  while (module->functions) {
    struct CUfunc_st *next = module->functions->next;
    free(module->functions);
    module->functions = next;
  }
  free(module->image);
  free(module);
  --state.live_modules;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  MOCK_ENTER("cuModuleGetFunction");
  if (!function || !module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st *f = calloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  if (module->image_len ? !parse_elf_entry(module, name, f)
                        : !parse_entry(module->image, name, f)) {
    free(f);
    return CUDA_ERROR_NOT_FOUND;
  }
  f->max_dynamic_shared = DEFAULT_SHARED_LIMIT;
  f->next = module->functions;
  module->functions = f;
  *function = f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  MOCK_ENTER("cuFuncSetAttribute");
  if (!function || attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value < 0 || value > MAX_SHARED_OPTIN)
    return CUDA_ERROR_INVALID_VALUE;
  function->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream,
                                void **params, void **extra) {
  MOCK_ENTER("cuLaunchKernel");
  MOCK_NEED_CONTEXT();
  if (!f || extra || (f->nparams > 0 && !params))
    return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long long)bx * by * bz > 1024 || gx == 0 || gy == 0 || gz == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > DEFAULT_SHARED_LIMIT && (int)shared > f->max_dynamic_shared)
    return CUDA_ERROR_INVALID_VALUE;
  struct mock_cuda_launch *l = &state.last_launch;
  memset(l, 0, sizeof *l);
  snprintf(l->kernel, sizeof l->kernel, "%s", f->name);
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared_bytes = shared;
  l->max_dynamic_shared = f->max_dynamic_shared;
  l->stream = stream;
  l->nparams = f->nparams;
  for (int i = 0; i < f->nparams; ++i) {
    size_t bytes = (size_t)f->param_bytes[i];
    l->param_size[i] = f->param_bytes[i];
    memcpy(l->param_data[i], params[i], bytes);
    if (bytes <= sizeof l->params[i])
      memcpy(&l->params[i], params[i], bytes);
  }
  if (state.launches < MOCK_CUDA_MAX_LAUNCH_LOG)
    state.launch_log[state.launches] = *l;
  ++state.launches;
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; ++i)
    if (kernels[i].fn && strcmp(kernels[i].name, f->name) == 0)
      kernels[i].fn(l);
  return CUDA_SUCCESS;
}

//===-- Tensor maps --===//

static unsigned tensor_map_element_bytes(CUtensorMapDataType type) {
  switch (type) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0; // the packed sub-byte types are not modelled
  }
}

/// The driver's documented requirements on a tiled, non-interleaved map.
static CUresult check_tensor_map(const struct mock_cuda_tensor_map *r) {
  unsigned elem = tensor_map_element_bytes((CUtensorMapDataType)r->data_type);
  if (r->map_alignment < 64 || elem == 0 || r->rank < 1 || r->rank > 5 ||
      r->address == 0 || r->address % 16 != 0 ||
      r->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ||
      r->swizzle > CU_TENSOR_MAP_SWIZZLE_128B ||
      r->l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
      r->oob_fill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < r->rank; ++i) {
    if (r->dims[i] == 0 || r->dims[i] > (UINT64_C(1) << 32) ||
        r->box[i] == 0 || r->box[i] > 256 || r->element_strides[i] == 0 ||
        r->element_strides[i] > 8)
      return CUDA_ERROR_INVALID_VALUE;
    if (i + 1 < r->rank &&
        (r->strides[i] % 16 != 0 || r->strides[i] >= (UINT64_C(1) << 40)))
      return CUDA_ERROR_INVALID_VALUE;
  }
  unsigned inner = r->box[0] * elem;
  static const unsigned span[] = {0, 32, 64, 128};
  if (inner % 16 != 0 || (r->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
                          inner > span[r->swizzle]))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static uint64_t pack12(const uint32_t *v, unsigned n) {
  uint64_t packed = 0;
  for (unsigned i = 0; i < n; ++i)
    packed |= (uint64_t)(v[i] & 0xfff) << (12 * i);
  return packed;
}

// Not exported (see mock_cuda.h): only cuGetProcAddress_v2 hands it out.
static CUresult CUDAAPI tensor_map_encode_tiled(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2_promotion,
    CUtensorMapFloatOOBfill oob_fill) {
  int call = ++state.tensor_map_encodes;
  struct mock_cuda_tensor_map scratch;
  struct mock_cuda_tensor_map *r = call <= MOCK_CUDA_MAX_TENSOR_MAPS
                                       ? &state.tensor_maps[call - 1]
                                       : &scratch;
  memset(r, 0, sizeof *r);
  CUresult injected;
  if (should_fail("cuTensorMapEncodeTiled", &injected)) {
    r->result = (int)injected;
    return injected;
  }
  r->result = CUDA_ERROR_INVALID_VALUE;
  if (!map || !dims || !box || !element_strides || (rank > 1 && !strides))
    return CUDA_ERROR_INVALID_VALUE;
  r->data_type = (int)type;
  r->rank = rank;
  r->address = (uint64_t)(uintptr_t)address;
  r->interleave = (int)interleave;
  r->swizzle = (int)swizzle;
  r->l2_promotion = (int)l2_promotion;
  r->oob_fill = (int)oob_fill;
  r->map_alignment = 128;
  while (r->map_alignment > 1 && (uintptr_t)map % r->map_alignment != 0)
    r->map_alignment /= 2;
  for (unsigned i = 0; i < rank && i < 5; ++i) {
    r->dims[i] = dims[i];
    r->box[i] = box[i];
    r->element_strides[i] = element_strides[i];
    if (i + 1 < rank)
      r->strides[i] = strides[i];
  }
  CUresult res = check_tensor_map(r);
  r->result = (int)res;
  if (res != CUDA_SUCCESS)
    return res;
  uint64_t words[CU_TENSOR_MAP_NUM_QWORDS] = {0};
  words[0] = MOCK_CUDA_TENSOR_MAP_MAGIC;
  words[1] = r->address;
  words[2] = (uint64_t)type | (uint64_t)rank << 8 | (uint64_t)swizzle << 16 |
             (uint64_t)l2_promotion << 24 | (uint64_t)interleave << 32 |
             (uint64_t)oob_fill << 40;
  memcpy(&words[3], r->dims, sizeof r->dims);
  memcpy(&words[8], r->strides, sizeof r->strides);
  words[12] = pack12(r->box, rank);
  words[13] = pack12(r->element_strides, rank);
  words[14] = (uint64_t)call;
  words[15] = ~MOCK_CUDA_TENSOR_MAP_MAGIC;
  memcpy(map->opaque, words, sizeof words);
  memcpy(r->bytes, words, sizeof words);
  return CUDA_SUCCESS;
}

//===-- Memory --===//

/// Returns the allocation holding [p, p + bytes), or NULL.
static struct allocation *find_allocation(CUdeviceptr p, size_t bytes) {
  for (struct allocation *a = allocations; a; a = a->next) {
    CUdeviceptr base = (CUdeviceptr)(uintptr_t)a->base;
    if (p >= base && p - base <= a->bytes && bytes <= a->bytes - (p - base))
      return a;
  }
  return NULL;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  MOCK_ENTER("cuMemAlloc");
  MOCK_NEED_CONTEXT();
  state.last_alloc_bytes = bytes;
  if (!p || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct allocation *a = malloc(sizeof *a);
  // The driver aligns allocations to 256 bytes; aligned_alloc needs a size
  // that is a multiple of the alignment.
  a->base = aligned_alloc(MEM_ALIGN, (bytes + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN);
  // The driver's memory starts with whatever was there: never zeros here, so
  // that a test can tell memory someone zeroed.
  memset(a->base, 0xA5, bytes);
  a->bytes = bytes;
  a->next = allocations;
  allocations = a;
  *p = (CUdeviceptr)(uintptr_t)a->base;
  ++state.live_allocations;
  ++state.allocs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  MOCK_ENTER("cuMemFree");
  MOCK_NEED_CONTEXT();
  for (struct allocation **a = &allocations; *a; a = &(*a)->next) {
    if ((CUdeviceptr)(uintptr_t)(*a)->base == p) {
      struct allocation *dead = *a;
      *a = dead->next;
      free(dead->base);
      free(dead);
      --state.live_allocations;
      ++state.frees;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_in(CUdeviceptr dst, const void *src, size_t bytes) {
  MOCK_NEED_CONTEXT();
  if (!find_allocation(dst, bytes) || !src)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

static CUresult copy_out(void *dst, CUdeviceptr src, size_t bytes) {
  MOCK_NEED_CONTEXT();
  if (!find_allocation(src, bytes) || !dst)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

static CUresult set_bytes(CUdeviceptr dst, unsigned char value, size_t bytes) {
  MOCK_NEED_CONTEXT();
  if (!find_allocation(dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, value, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  MOCK_ENTER("cuMemcpyHtoD");
  return copy_in(dst, src, bytes);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  MOCK_ENTER("cuMemcpyDtoH");
  return copy_out(dst, src, bytes);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                   size_t bytes, CUstream stream) {
  MOCK_ENTER("cuMemcpyHtoDAsync");
  (void)stream;
  return copy_in(dst, src, bytes);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream) {
  MOCK_ENTER("cuMemcpyDtoHAsync");
  (void)stream;
  return copy_out(dst, src, bytes);
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t bytes) {
  MOCK_ENTER("cuMemsetD8");
  return set_bytes(dst, value, bytes);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                 size_t bytes, CUstream stream) {
  MOCK_ENTER("cuMemsetD8Async");
  (void)stream;
  return set_bytes(dst, value, bytes);
}

//===-- Streams and events --===//

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  MOCK_ENTER("cuStreamCreate");
  MOCK_NEED_CONTEXT();
  (void)flags;
  *stream = calloc(1, sizeof **stream);
  state.last_stream = *stream;
  ++state.live_streams;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  MOCK_ENTER("cuStreamDestroy");
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE;
  free(stream);
  --state.live_streams;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  MOCK_ENTER("cuStreamSynchronize");
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream stream) {
  MOCK_ENTER("cuStreamQuery");
  (void)stream;
  return getenv("MOCK_CUDA_STREAM_BUSY") ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  MOCK_ENTER("cuEventCreate");
  MOCK_NEED_CONTEXT();
  (void)flags;
  *event = calloc(1, sizeof **event);
  ++state.live_events;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent event) {
  MOCK_ENTER("cuEventQuery");
  (void)event;
  return getenv("MOCK_CUDA_STREAM_BUSY") ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  MOCK_ENTER("cuEventDestroy");
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  free(event);
  --state.live_events;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  MOCK_ENTER("cuEventRecord");
  MOCK_NEED_CONTEXT();
  (void)stream;
  event->stamp = ++clock_ticks;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  MOCK_ENTER("cuEventElapsedTime");
  if (!start->stamp || !end->stamp)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = 0.5f * (float)(end->stamp - start->stamp);
  return CUDA_SUCCESS;
}

//===-- Entry point lookup --===//

typedef void (*mock_fn)(void);
#define ENTRY(name, fn) {name, (mock_fn)fn}

static const struct {
  const char *name;
  mock_fn fn;
} entry_points[] = {
    ENTRY("cuInit", cuInit),
    ENTRY("cuDriverGetVersion", cuDriverGetVersion),
    ENTRY("cuGetErrorName", cuGetErrorName),
    ENTRY("cuGetErrorString", cuGetErrorString),
    ENTRY("cuDeviceGetCount", cuDeviceGetCount),
    ENTRY("cuDeviceGet", cuDeviceGet),
    ENTRY("cuDeviceGetName", cuDeviceGetName),
    ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute),
    ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease),
    ENTRY("cuCtxPushCurrent", cuCtxPushCurrent),
    ENTRY("cuCtxPopCurrent", cuCtxPopCurrent),
    ENTRY("cuCtxSynchronize", cuCtxSynchronize),
    ENTRY("cuModuleLoadDataEx", cuModuleLoadDataEx),
    ENTRY("cuModuleUnload", cuModuleUnload),
    ENTRY("cuModuleGetFunction", cuModuleGetFunction),
    ENTRY("cuFuncSetAttribute", cuFuncSetAttribute),
    ENTRY("cuLaunchKernel", cuLaunchKernel),
    ENTRY("cuMemAlloc", cuMemAlloc),
    ENTRY("cuMemFree", cuMemFree),
    ENTRY("cuMemcpyHtoD", cuMemcpyHtoD),
    ENTRY("cuMemcpyDtoH", cuMemcpyDtoH),
    ENTRY("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync),
    ENTRY("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync),
    ENTRY("cuMemsetD8", cuMemsetD8),
    ENTRY("cuMemsetD8Async", cuMemsetD8Async),
    ENTRY("cuStreamCreate", cuStreamCreate),
    ENTRY("cuStreamDestroy", cuStreamDestroy),
    ENTRY("cuStreamSynchronize", cuStreamSynchronize),
    ENTRY("cuStreamQuery", cuStreamQuery),
    ENTRY("cuEventCreate", cuEventCreate),
    ENTRY("cuEventDestroy", cuEventDestroy),
    ENTRY("cuEventQuery", cuEventQuery),
    ENTRY("cuEventRecord", cuEventRecord),
    ENTRY("cuEventElapsedTime", cuEventElapsedTime),
    ENTRY("cuTensorMapEncodeTiled", tensor_map_encode_tiled),
};

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                     cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *status) {
  (void)version;
  (void)flags;
  *pfn = NULL;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (getenv("MOCK_CUDA_NO_PROC_ADDRESS"))
    return CUDA_ERROR_NOT_FOUND;
  for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; ++i) {
    if (strcmp(entry_points[i].name, symbol) == 0) {
      memcpy(pfn, &entry_points[i].fn, sizeof entry_points[i].fn);
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      ++state.proc_address_hits;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
