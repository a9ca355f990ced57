// mock_vendor.c - a mock libcublas, with the CUDA runtime calls the benchmarks use, over the host memory of the mock libcuda: cublasGemmEx really multiplies (on the CPU), so gemm_bench and comm_bench run end to end without a GPU.
//
// Steered by environment variables read at every call:
//   MOCK_CUBLAS_CORRUPT=1   cublasGemmEx adds 1 to the last row of C (the
//                           benchmarks' checks must catch it)
//   MOCK_CUBLAS_FAIL=1      cublasCreate_v2 fails (status 1)
// Streams and events are plain host objects: the mock libcuda runs every
// operation at once, so there is nothing to order.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };
enum { OP_N = 0, R_16BF = 14, COMPUTE_32F = 68 };

static float bf16_to_float(uint16_t b) {
  uint32_t w = (uint32_t)b << 16;
  float f;
  memcpy(&f, &w, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t w;
  memcpy(&w, &f, sizeof w);
  if ((w & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0; // NaN
  w += 0x7fffu + ((w >> 16) & 1u);
  return (uint16_t)(w >> 16);
}

//===-- The CUDA runtime --===//

int cudaSetDevice(int device) { return device < 0 ? INVALID_VALUE : OK; }

int cudaStreamCreateWithFlags(void **stream, unsigned flags) {
  (void)flags;
  *stream = calloc(1, 64);
  return *stream ? OK : 2;
}

int cudaStreamDestroy(void *stream) {
  free(stream);
  return OK;
}

int cudaEventCreateWithFlags(void **event, unsigned flags) {
  (void)flags;
  *event = calloc(1, 64);
  return *event ? OK : 2;
}

int cudaEventDestroy(void *event) {
  free(event);
  return OK;
}

int cudaEventRecord(void *event, void *stream) {
  (void)stream;
  return event ? OK : INVALID_VALUE;
}

int cudaStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)stream;
  (void)flags;
  return event ? OK : INVALID_VALUE;
}

const char *cudaGetErrorString(int code) {
  return code ? "mock CUDA runtime error" : "no error";
}

int cudaRuntimeGetVersion(int *version) {
  *version = 13000;
  return OK;
}

//===-- cuBLAS --===//

struct handle {
  void *stream;
};

int cublasCreate_v2(void **handle) {
  const char *fail = getenv("MOCK_CUBLAS_FAIL");
  if (fail && *fail == '1')
    return NOT_INITIALIZED;
  *handle = calloc(1, sizeof(struct handle));
  return *handle ? OK : 3;
}

int cublasDestroy_v2(void *handle) {
  free(handle);
  return OK;
}

int cublasSetStream_v2(void *handle, void *stream) {
  if (!handle)
    return NOT_INITIALIZED;
  ((struct handle *)handle)->stream = stream;
  return OK;
}

int cublasSetWorkspace_v2(void *handle, void *workspace, size_t bytes) {
  (void)workspace;
  (void)bytes;
  return handle ? OK : NOT_INITIALIZED;
}

int cublasGetVersion_v2(void *handle, int *version) {
  (void)handle;
  *version = 130100;
  return OK;
}

const char *cublasGetStatusString(int status) {
  return status ? "mock cuBLAS failure" : "CUBLAS_STATUS_SUCCESS";
}

/// Column-major C[m,n] = A[m,k] B[k,n] in bf16 with f32 accumulation; only
/// what the benchmarks ask for (no transposes, alpha 1, beta 0).
int cublasGemmEx(void *handle, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *a, int atype, int lda,
                 const void *b, int btype, int ldb, const void *beta, void *c,
                 int ctype, int ldc, int compute, int algo) {
  (void)algo;
  if (!handle)
    return NOT_INITIALIZED;
  if (transa != OP_N || transb != OP_N || atype != R_16BF ||
      btype != R_16BF || ctype != R_16BF || compute != COMPUTE_32F ||
      *(const float *)alpha != 1.0f || *(const float *)beta != 0.0f)
    return NOT_SUPPORTED;
  if (m < 0 || n < 0 || k < 0 || lda < m || ldb < k || ldc < m)
    return INVALID_VALUE;
  const uint16_t *A = a, *B = b;
  uint16_t *C = c;
  float *col = malloc((size_t)m * sizeof *col);
  if (!col)
    return 3;
  for (int j = 0; j < n; ++j) {
    memset(col, 0, (size_t)m * sizeof *col);
    for (int l = 0; l < k; ++l) {
      float bl = bf16_to_float(B[(size_t)j * (size_t)ldb + (size_t)l]);
      const uint16_t *al = A + (size_t)l * (size_t)lda;
      for (int i = 0; i < m; ++i)
        col[i] += bf16_to_float(al[i]) * bl;
    }
    for (int i = 0; i < m; ++i)
      C[(size_t)j * (size_t)ldc + (size_t)i] = float_to_bf16(col[i]);
  }
  free(col);
  const char *corrupt = getenv("MOCK_CUBLAS_CORRUPT");
  if (corrupt && *corrupt == '1' && n > 0) // the last row of row-major C
    for (int i = 0; i < m; ++i) {
      uint16_t *e = &C[(size_t)(n - 1) * (size_t)ldc + (size_t)i];
      *e = float_to_bf16(bf16_to_float(*e) + 1.0f);
    }
  return OK;
}
