// sm_peer_bandwidth.cu - NVLink bandwidth of SM-driven peer writes versus the
// number of CTAs (one CTA per SM): the per-SM communication cap of the
// topology model (lib/CostModel/topology.c, sm_comm_bytes_per_s).
// Every GPU writes its own buffer into the next GPU's memory at the same
// time (a ring step, both directions busy on 2 GPUs); prints GB/s per GPU.
// With a second argument `reduce`, it compares the ways a fused kernel can
// add bf16 data into memory (a peer's or its own) instead: plain 16-byte
// stores, 16-byte reductions (red.global.add.noftz.v4.bf16x2) and rows of
// 512 bytes staged in shared memory and handed to the bulk-copy engine
// (cp.async.bulk, and its reducing form cp.reduce.async.bulk .add.bf16),
// as hopper_gemm_epilogue.c's staged epilogue writes its rows.
// Build and run on a machine with 2 or more GPUs:
//   nvcc -O3 -arch=sm_90a -o sm_peer_bandwidth bench/sm_peer_bandwidth.cu
//   ./sm_peer_bandwidth [MiB] [reduce]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,               \
              cudaGetErrorString(e_));                                          \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__global__ void push(const int4 *__restrict__ src, int4 *__restrict__ dst,
                     size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

// 16-byte reductions of bf16 pairs from registers.
__global__ void push_red(const int4 *__restrict__ src, int4 *__restrict__ dst,
                         size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int4 v = src[i];
    asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(
                     dst + i),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
}

// Rows of 512 bytes through shared memory and the bulk-copy engine: the
// CTA's 1024 threads stage 64 rows (32 KiB) into one of two buffers, and
// threads 0-63 each copy (or reduce) one row; a buffer is written again
// once its copies have been read.
#define ROW 512
#define ROWS 64
__global__ void push_bulk(const int4 *__restrict__ src, int4 *__restrict__ dst,
                          size_t n, int reduce) {
  extern __shared__ __align__(1024) int4 sm[];
  const size_t per = ROWS * ROW / 16; // int4 per buffer
  size_t blocks = n / per;
  int buf = 0;
  for (size_t b = blockIdx.x; b < blocks; b += gridDim.x, buf ^= 1) {
    if (threadIdx.x < ROWS)
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    __syncthreads();
    int4 *s = sm + buf * per;
    for (size_t i = threadIdx.x; i < per; i += blockDim.x)
      s[i] = src[b * per + i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x < ROWS) {
      unsigned from = (unsigned)__cvta_generic_to_shared(s) + threadIdx.x * ROW;
      const int4 *to = dst + b * per + threadIdx.x * (ROW / 16);
      if (reduce)
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add."
                     "noftz.bf16 [%0], [%1], %2;" ::"l"(to),
                     "r"(from), "n"(ROW)
                     : "memory");
      else
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], "
                     "%2;" ::"l"(to),
                     "r"(from), "n"(ROW)
                     : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
  }
  if (threadIdx.x < ROWS)
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Every GPU's source and destination buffers, stream and events.
struct Ring {
  int gpus = 0;
  size_t bytes = 0;
  std::vector<int4 *> src, dst;
  std::vector<cudaStream_t> st;
  std::vector<cudaEvent_t> e0, e1;
};

// Allocates mib MiB per buffer on every GPU (source bytes = fill), lets g
// write into g + 1 (a ring; both directions on 2 GPUs). False with a
// message on fewer than 2 GPUs.
static bool ring_init(Ring &r, size_t mib, int fill) {
  CK(cudaGetDeviceCount(&r.gpus));
  if (r.gpus < 2) {
    fprintf(stderr, "needs 2 GPUs, found %d\n", r.gpus);
    return false;
  }
  r.bytes = mib << 20;
  r.src.resize(r.gpus);
  r.dst.resize(r.gpus);
  r.st.resize(r.gpus);
  r.e0.resize(r.gpus);
  r.e1.resize(r.gpus);
  for (int g = 0; g < r.gpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess((g + 1) % r.gpus, 0));
    CK(cudaMalloc(&r.src[g], r.bytes));
    CK(cudaMalloc(&r.dst[g], r.bytes));
    CK(cudaMemset(r.src[g], fill, r.bytes));
    CK(cudaMemset(r.dst[g], 0, r.bytes));
    CK(cudaStreamCreate(&r.st[g]));
    CK(cudaEventCreate(&r.e0[g]));
    CK(cudaEventCreate(&r.e1[g]));
  }
  return true;
}

// GB/s per GPU of launch(g, stream) run on every GPU at once: the median
// over 5 repetitions (after 2 warm-ups) of the slowest GPU's time.
template <class Launch> static double ring_gbs(Ring &r, Launch launch) {
  std::vector<float> best;
  for (int rep = 0; rep < 7; ++rep) {
    for (int g = 0; g < r.gpus; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaDeviceSynchronize());
    }
    for (int g = 0; g < r.gpus; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaEventRecord(r.e0[g], r.st[g]));
      launch(g, r.st[g]);
      CK(cudaGetLastError());
      CK(cudaEventRecord(r.e1[g], r.st[g]));
    }
    float worst = 0;
    for (int g = 0; g < r.gpus; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaEventSynchronize(r.e1[g]));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, r.e0[g], r.e1[g]));
      worst = std::max(worst, ms);
    }
    if (rep > 1)
      best.push_back(worst);
  }
  std::sort(best.begin(), best.end());
  return r.bytes / (best[best.size() / 2] * 1e-3) / 1e9;
}

static int run_reduce(size_t mib) {
  Ring r;
  if (!ring_init(r, mib, 0)) // bf16 zeros: the sums stay finite
    return 1;
  size_t n = r.bytes / sizeof(int4);
  for (int g = 0; g < r.gpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaFuncSetAttribute(push_bulk,
                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                            2 * ROWS * ROW));
  }
  const char *modes[] = {"store", "red.v4.bf16x2", "bulk-store", "bulk-red"};
  const int ctas[] = {4, 16, 32, 64, 132};
  printf("gpus %d, %zu MiB per gpu, 1024 threads per CTA\n", r.gpus, mib);
  printf("mode target ctas GB/s_per_gpu\n");
  for (int peer = 1; peer >= 0; --peer)
    for (int m = 0; m < 4; ++m)
      for (int c : ctas) {
        double gbs = ring_gbs(r, [&](int g, cudaStream_t s) {
          int4 *d = r.dst[peer ? (g + 1) % r.gpus : g];
          if (m == 0)
            push<<<c, 1024, 0, s>>>(r.src[g], d, n);
          else if (m == 1)
            push_red<<<c, 1024, 0, s>>>(r.src[g], d, n);
          else
            push_bulk<<<c, 1024, 2 * ROWS * ROW, s>>>(r.src[g], d, n, m == 3);
        });
        printf("%s %s %d %.1f\n", modes[m], peer ? "peer" : "local", c, gbs);
      }
  return 0;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 256;
  if (argc > 2 && !strcmp(argv[2], "reduce"))
    return run_reduce(mib);
  Ring r;
  if (!ring_init(r, mib, 1))
    return 1;
  size_t n = r.bytes / sizeof(int4);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int ctas[] = {1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64, 96, 132};
  const int threads[] = {256, 1024};
  printf("gpus %d, %zu MiB per gpu, ring of peer writes\n", r.gpus, mib);
  printf("threads ctas GB/s_per_gpu GB/s_per_cta\n");
  for (int t : threads)
    for (int c : ctas) {
      if (c > sms)
        continue;
      double gbs = ring_gbs(r, [&](int g, cudaStream_t s) {
        push<<<c, t, 0, s>>>(r.src[g], r.dst[(g + 1) % r.gpus], n);
      });
      printf("%d %d %.1f %.2f\n", t, c, gbs, gbs / c);
    }
  return 0;
}
