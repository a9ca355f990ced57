// sm_peer_bandwidth.cu - NVLink bandwidth of SM-driven peer writes versus the
// number of CTAs (one CTA per SM): the per-SM communication cap of the
// topology model (lib/CostModel/topology.c, sm_comm_bytes_per_s).
// Every GPU writes its own buffer into the next GPU's memory at the same
// time (a ring step, both directions busy on 2 GPUs); prints GB/s per GPU.
// Build and run on a machine with 2 or more GPUs:
//   nvcc -O3 -arch=sm_90 -o sm_peer_bandwidth bench/sm_peer_bandwidth.cu
//   ./sm_peer_bandwidth [MiB]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 256;
  size_t bytes = mib << 20, n = bytes / sizeof(int4);
  int gpus = 0;
  CK(cudaGetDeviceCount(&gpus));
  if (gpus < 2) {
    fprintf(stderr, "needs 2 GPUs, found %d\n", gpus);
    return 1;
  }
  std::vector<int4 *> src(gpus), dst(gpus);
  std::vector<cudaStream_t> st(gpus);
  std::vector<cudaEvent_t> e0(gpus), e1(gpus);
  for (int g = 0; g < gpus; ++g) {
    CK(cudaSetDevice(g));
    // g writes into g + 1 (a ring; both directions on 2 GPUs).
    CK(cudaDeviceEnablePeerAccess((g + 1) % gpus, 0));
    CK(cudaMalloc(&src[g], bytes));
    CK(cudaMalloc(&dst[g], bytes));
    CK(cudaMemset(src[g], 1, bytes));
    CK(cudaStreamCreate(&st[g]));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int ctas[] = {1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64, 96, 132};
  const int threads[] = {256, 1024};
  printf("gpus %d, %zu MiB per gpu, ring of peer writes\n", gpus, mib);
  printf("threads ctas GB/s_per_gpu GB/s_per_cta\n");
  for (int t : threads)
    for (int c : ctas) {
      if (c > sms)
        continue;
      std::vector<float> best;
      for (int rep = 0; rep < 7; ++rep) {
        for (int g = 0; g < gpus; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaDeviceSynchronize());
        }
        for (int g = 0; g < gpus; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaEventRecord(e0[g], st[g]));
          push<<<c, t, 0, st[g]>>>(src[g], dst[(g + 1) % gpus], n);
          CK(cudaEventRecord(e1[g], st[g]));
        }
        float worst = 0;
        for (int g = 0; g < gpus; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaEventSynchronize(e1[g]));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
          worst = std::max(worst, ms);
        }
        if (rep > 1)
          best.push_back(worst);
      }
      std::sort(best.begin(), best.end());
      float ms = best[best.size() / 2];
      double gbs = bytes / (ms * 1e-3) / 1e9;
      printf("%d %d %.1f %.2f\n", t, c, gbs, gbs / c);
    }
  return 0;
}
