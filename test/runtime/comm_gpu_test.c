// comm_gpu_test.c - two-GPU check of the communicator: forks one process per rank (torchrun's variables set for each), all-reduces, all-gathers and reduce-scatters random data and compares with a host reference, then has a kernel linked with the NCCL device shim write into the next rank's symmetric buffer and checks the buffer's peer table against it.
//
// Needs a real libcuda, libnccl and ATTN_TEST_RANKS (default 2) GPUs; lit runs
// it only with the gpu2 feature. Prints one line per rank and check, then
// "N passed, M failed" over the ranks. The peer_put check also needs
// nvJitLink and a libattnrt with the NCCL device shim, all on one node.

#include "nccl_shim_ptx.h"
#include "attnrt.h"
#include "gpu_ranks.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT (1u << 20)

/// Value i of rank r's data: a hash spread over [-1, 1).
static float value(int r, size_t i) {
  uint64_t x = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}


/// Compares got with want; prints the result for rank and name.
static int report(int rank, const char *name, const float *got,
                  const double *want, size_t n) {
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    double e = fabs((double)got[i] - want[i]);
    if (!(e <= max_err))
      max_err = isnan(e) ? INFINITY : e;
  }
  bool ok = max_err <= 1e-5;
  printf("rank %d: %s n=%zu max_abs_err=%.3g %s\n", rank, name, n, max_err,
         ok ? "PASS" : "FAIL");
  fflush(stdout);
  return ok ? 0 : 1;
}

// Kernel-initiated traffic through NCCL's device API: each rank's kernel
// writes tag << 20 | i into element i of the next rank's symmetric buffer
// through attn_nccl_peer_ptr, between LSA barriers (a sync before, so the
// peer has cleared its buffer; arrive and wait after, so the peer's writes
// are visible here when the kernel ends). Thread 0 then records rank, size,
// LSA rank and size, this rank's own address through attn_nccl_peer_ptr, the
// answer for a rank outside the team (must be NULL) and the next rank's
// address, which the buffer's peer table (attnrt_comm_buffer_peers, what the
// fused kernels read) must hold too.
static const char peer_put_ptx[] =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    NCCL_SHIM_PTX_DECLS
    "\n"
    ".visible .entry peer_put(.param .u64 dev_comm, .param .u64 window, .param .u64 out,\n"
    "                         .param .u32 tag, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<4>;\n"
    "  .reg .b32 %r<16>;\n"
    "  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [dev_comm];\n"
    "  ld.param.u64 %rd2, [window];\n"
    "  ld.param.u64 %rd3, [out];\n"
    "  ld.param.u32 %r1, [tag];\n"
    "  ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, 0;\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r3;\n"
    "    call attn_nccl_lsa_barrier_sync, (a, b); }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call (r), attn_nccl_rank, (a); ld.param.b32 %r4, [r]; }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call (r), attn_nccl_size, (a); ld.param.b32 %r5, [r]; }\n"
    "  add.s32 %r6, %r4, 1;\n"
    "  rem.s32 %r6, %r6, %r5;\n"
    "  { .param .b64 a; .param .b64 b; .param .b64 c; .param .b32 d; .param .b64 r;\n"
    "    st.param.b64 [a], %rd1; st.param.b64 [b], %rd2; st.param.b64 [c], 0;\n"
    "    st.param.b32 [d], %r6;\n"
    "    call (r), attn_nccl_peer_ptr, (a, b, c, d); ld.param.b64 %rd4, [r]; }\n"
    "  shl.b32 %r7, %r1, 20;\n"
    "  mov.u32 %r8, %tid.x;\n"
    "  mov.u32 %r9, %ntid.x;\n"
    "  setp.eq.u64 %p1, %rd4, 0;\n"
    "  @%p1 bra DONE;\n"
    "  setp.ge.u32 %p1, %r8, %r2;\n"
    "  @%p1 bra DONE;\n"
    "LOOP:\n"
    "  or.b32 %r10, %r7, %r8;\n"
    "  mul.wide.u32 %rd5, %r8, 4;\n"
    "  add.s64 %rd6, %rd4, %rd5;\n"
    "  st.u32 [%rd6], %r10;\n"
    "  add.u32 %r8, %r8, %r9;\n"
    "  setp.lt.u32 %p2, %r8, %r2;\n"
    "  @%p2 bra LOOP;\n"
    "DONE:\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r3;\n"
    "    call attn_nccl_lsa_barrier_arrive, (a, b); }\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r3;\n"
    "    call attn_nccl_lsa_barrier_wait, (a, b); }\n"
    "  mov.u32 %r8, %tid.x;\n"
    "  setp.ne.u32 %p3, %r8, 0;\n"
    "  @%p3 bra END;\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call (r), attn_nccl_lsa_rank, (a); ld.param.b32 %r11, [r]; }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call (r), attn_nccl_lsa_size, (a); ld.param.b32 %r12, [r]; }\n"
    "  { .param .b64 a; .param .b64 b; .param .b64 c; .param .b32 d; .param .b64 r;\n"
    "    st.param.b64 [a], %rd1; st.param.b64 [b], %rd2; st.param.b64 [c], 0;\n"
    "    st.param.b32 [d], %r4;\n"
    "    call (r), attn_nccl_peer_ptr, (a, b, c, d); ld.param.b64 %rd7, [r]; }\n"
    "  { .param .b64 a; .param .b64 b; .param .b64 c; .param .b32 d; .param .b64 r;\n"
    "    st.param.b64 [a], %rd1; st.param.b64 [b], %rd2; st.param.b64 [c], 0;\n"
    "    st.param.b32 [d], %r5;\n"
    "    call (r), attn_nccl_peer_ptr, (a, b, c, d); ld.param.b64 %rd8, [r]; }\n"
    "  st.u32 [%rd3], %r4;\n"
    "  st.u32 [%rd3+4], %r5;\n"
    "  st.u32 [%rd3+8], %r11;\n"
    "  st.u32 [%rd3+12], %r12;\n"
    "  st.u64 [%rd3+16], %rd7;\n"
    "  st.u64 [%rd3+24], %rd8;\n"
    "  st.u64 [%rd3+32], %rd4;\n"
    "END:\n"
    "  ret;\n"
    "}\n";

static const char peer_put_manifest[] =
    "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [{\"name\": \"peer_put\", "
    "\"grid\": [1], \"block\": [256], \"params\": ["
    "{\"name\": \"dev_comm\", \"kind\": \"ptr\"}, {\"name\": \"window\", \"kind\": \"ptr\"}, "
    "{\"name\": \"out\", \"kind\": \"ptr\"}, {\"name\": \"tag\", \"kind\": \"i32\"}, "
    "{\"name\": \"n\", \"kind\": \"i32\"}]}]}";

#define PEER_PUT_COUNT (1u << 16)
#define PEER_PUT_ROUNDS 2

/// Runs peer_put PEER_PUT_ROUNDS times (the barrier state carries over
/// between launches) and checks what arrived from the previous rank.
static int check_peer_put(attnrt_comm *c, int rank, int size) {
  if (!attnrt_nccl_shim_available()) {
    printf("rank %d: peer_put: this libattnrt has no NCCL device shim FAIL\n", rank);
    return 1;
  }
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  size_t bytes = PEER_PUT_COUNT * sizeof(uint32_t);
  attnrt_comm_buffer *win = NULL;
  attnrt_devptr dev = 0, out = 0;
  attnrt_module *m = NULL;
  TRY(attnrt_comm_buffer_alloc(c, bytes, &win));
  TRY(attnrt_comm_dev_create(c, 1, &dev));
  TRY(attnrt_mem_alloc(rt, 40, &out));
  TRY(attnrt_module_load_ptx(rt, peer_put_ptx, 0, peer_put_manifest, &m));
  uint32_t *host = malloc(bytes);
  int prev = (rank + size - 1) % size;
  size_t errors = 0;
  uint32_t info[10];
  for (int round = 0; round < PEER_PUT_ROUNDS; ++round) {
    TRY(attnrt_memset_d8(rt, attnrt_comm_buffer_ptr(win), 0, bytes, NULL));
    // Every rank's buffer is clear before any rank writes into its peer's:
    // a collective after the clear, on the same stream, is the barrier.
    TRY(attnrt_comm_all_reduce(c, out, out, 1, ATTNRT_COMM_F32, ATTNRT_COMM_SUM,
                               NULL));
    TRY(attnrt_comm_wait(c, NULL));
    TRY(attnrt_memset_d8(rt, out, 0xff, 40, NULL));
    struct attnrt_arg args[5] = {
        {.kind = ATTNRT_ARG_PTR, .v.ptr = dev},
        {.kind = ATTNRT_ARG_PTR, .v.ptr = (attnrt_devptr)(uintptr_t)attnrt_comm_buffer_window(win)},
        {.kind = ATTNRT_ARG_PTR, .v.ptr = out},
        {.kind = ATTNRT_ARG_I32, .v.i32 = (round + 1) * 16 + rank},
        {.kind = ATTNRT_ARG_I32, .v.i32 = (int32_t)PEER_PUT_COUNT}};
    TRY(attnrt_launch(m, "peer_put", args, 5, NULL));
    TRY(attnrt_comm_wait(c, NULL));
    TRY(attnrt_memcpy_dtoh(rt, host, attnrt_comm_buffer_ptr(win), bytes, NULL));
    TRY(attnrt_memcpy_dtoh(rt, info, out, sizeof info, NULL));
    uint32_t tag = (uint32_t)((round + 1) * 16 + prev);
    for (uint32_t i = 0; i < PEER_PUT_COUNT; ++i)
      errors += host[i] != (tag << 20 | i);
  }
  uint64_t self, outside, next_ptr;
  memcpy(&self, &info[4], sizeof self);
  memcpy(&outside, &info[6], sizeof outside);
  memcpy(&next_ptr, &info[8], sizeof next_ptr);
  // The peer table of the buffer: this rank's own address, and for every
  // other rank what attn_nccl_peer_ptr answers (checked for the next rank).
  attnrt_devptr peers = 0;
  uint64_t *table = calloc((size_t)size, sizeof *table);
  TRY(attnrt_comm_buffer_peers(win, dev, &peers));
  TRY(attnrt_memcpy_dtoh(rt, table, peers, (size_t)size * sizeof *table, NULL));
  int next = (rank + 1) % size;
  bool table_ok = table[rank] == attnrt_comm_buffer_ptr(win) &&
                  (next == rank || table[next] == next_ptr);
  for (int p = 0; p < size; ++p)
    table_ok &= table[p] != 0;
  free(table);
  bool ok = errors == 0 && (int)info[0] == rank && (int)info[1] == size &&
            (int)info[2] == rank && (int)info[3] == size &&
            self != 0 && outside == 0 && table_ok;
  printf("rank %d: peer_put n=%u rounds=%d from rank %d: rank=%d size=%d lsa=%d/%d "
         "self_ptr=%s outside_ptr=%s peer_table=%s wrong=%zu %s\n",
         rank, PEER_PUT_COUNT, PEER_PUT_ROUNDS, prev, (int)info[0], (int)info[1],
         (int)info[2], (int)info[3],
         self != 0 ? "ok" : "WRONG", outside == 0 ? "null" : "WRONG",
         table_ok ? "ok" : "WRONG", errors, ok ? "PASS" : "FAIL");
  fflush(stdout);
  free(host);
  attnrt_module_destroy(m);
  TRY(attnrt_mem_free(rt, out));
  TRY(attnrt_comm_dev_destroy(c, dev));
  TRY(attnrt_comm_buffer_free(win));
  return ok ? 0 : 1;
}

static int run_rank(int rank, int size) {
  attnrt_comm *c = NULL;
  TRY(attnrt_comm_init_from_env(&c));
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  char name[128] = "";
  attnrt_runtime_device_name(rt, name, sizeof name);
  printf("rank %d of %d: %s, NCCL %d\n", rank, attnrt_comm_size(c), name,
         attnrt_comm_nccl_version(c));
  size_t bytes = COUNT * sizeof(float);
  float *host = malloc(bytes * (size_t)size);
  double *want = malloc(sizeof(double) * COUNT * (size_t)size);
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  int bad = 0;

  // All-reduce of plain cuMemAlloc buffers on a stream.
  attnrt_devptr send = 0, recv = 0;
  TRY(attnrt_mem_alloc(rt, bytes, &send));
  TRY(attnrt_mem_alloc(rt, bytes * (size_t)size, &recv));
  attnrt_stream *s = NULL;
  TRY(attnrt_stream_create(rt, &s));
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_all_reduce(c, send, recv, COUNT, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, bytes, NULL));
  for (size_t i = 0; i < COUNT; ++i) {
    want[i] = 0;
    for (int r = 0; r < size; ++r)
      want[i] += (double)value(r, i);
  }
  bad |= report(rank, "all_reduce", host, want, COUNT);

  // All-gather: rank r's data at offset r * COUNT.
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_all_gather(c, send, recv, COUNT, ATTNRT_COMM_F32, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, bytes * (size_t)size, NULL));
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < COUNT; ++i)
      want[(size_t)r * COUNT + i] = value(r, i);
  bad |= report(rank, "all_gather", host, want, COUNT * (size_t)size);

  // Reduce-scatter of COUNT elements: rank r gets block r of the sum.
  size_t block = COUNT / (size_t)size;
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_reduce_scatter(c, send, recv, block, ATTNRT_COMM_F32,
                                 ATTNRT_COMM_SUM, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, block * sizeof(float), NULL));
  for (size_t i = 0; i < block; ++i) {
    want[i] = 0;
    for (int r = 0; r < size; ++r)
      want[i] += (double)value(r, (size_t)rank * block + i);
  }
  bad |= report(rank, "reduce_scatter", host, want, block);

  // In-place all-reduce on a symmetric window buffer (NCCL 2.27+).
  attnrt_comm_buffer *win = NULL;
  enum attnrt_status st = attnrt_comm_buffer_alloc(c, bytes, &win);
  if (st == ATTNRT_OK) {
    attnrt_devptr p = attnrt_comm_buffer_ptr(win);
    for (size_t i = 0; i < COUNT; ++i)
      host[i] = value(rank, i);
    TRY(attnrt_memcpy_htod(rt, p, host, bytes, NULL));
    TRY(attnrt_comm_all_reduce(c, p, p, COUNT, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s));
    TRY(attnrt_comm_wait(c, s));
    TRY(attnrt_memcpy_dtoh(rt, host, p, bytes, NULL));
    for (size_t i = 0; i < COUNT; ++i) {
      want[i] = 0;
      for (int r = 0; r < size; ++r)
        want[i] += (double)value(r, i);
    }
    bad |= report(rank, "all_reduce_window", host, want, COUNT);
    TRY(attnrt_comm_buffer_free(win));
  } else {
    printf("rank %d: symmetric window: %s\n", rank,
           attnrt_last_error(attnrt_comm_runtime(c)));
    bad = 1;
  }

  bad |= check_peer_put(c, rank, size);

  attnrt_stream_destroy(s);
  TRY(attnrt_mem_free(rt, send));
  TRY(attnrt_mem_free(rt, recv));
  attnrt_comm_destroy(c);
  free(host);
  free(want);
  return bad;
}

/// Rank 1 of --dead-peer: takes the NCCL id from rank 0 the way attnrt does
/// (hello: magic, protocol 1, rank, world size, big-endian), then exits
/// without joining NCCL, as a rank that crashes would.
static int dead_peer(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      uint32_t hello[4] = {htonl(0x4154434eu), htonl(1), htonl(1), htonl(2)};
      unsigned char reply[8 + 128];
      size_t got = 0;
      if (write(fd, hello, sizeof hello) == (ssize_t)sizeof hello)
        for (ssize_t k; got < sizeof reply &&
                        (k = read(fd, reply + got, sizeof reply - got)) > 0;)
          got += (size_t)k;
      close(fd);
      printf("dead peer: took the id (%zu bytes) and exits\n", got);
      fflush(stdout);
      return got == sizeof reply ? 0 : 1;
    }
    close(fd);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
  return 1;
}

/// --dead-peer: rank 0 must give up on ncclCommInitRankConfig within
/// ATTN_COMM_TIMEOUT_S with ATTNRT_ERR_TIMEOUT, not hang.
static int run_dead_peer(int port) {
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  setenv("LOCAL_RANK", "0", 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0)
    _exit(dead_peer(port));
  attnrt_comm *c = NULL;
  enum attnrt_status st = attnrt_comm_init_from_env(&c);
  printf("dead peer: rank 0 got %s: %s\n", attnrt_status_string(st),
         attnrt_last_error(NULL));
  int status = 0;
  waitpid(pid, &status, 0);
  attnrt_comm_destroy(c);
  bool ok = st == ATTNRT_ERR_TIMEOUT || st == ATTNRT_ERR_NCCL;
  printf("dead_peer %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

static int rank_main(int rank, void *user) {
  return run_rank(rank, *(int *)user);
}

int main(int argc, char **argv) {
  const char *n = getenv("ATTN_TEST_RANKS");
  int size = n && *n ? atoi(n) : 2;
  if (size < 1 || size > 64) {
    printf("bad ATTN_TEST_RANKS\n");
    return 1;
  }
  int port;
  gpu_ranks_env(size, 29511, "120", &port);
  if (argc > 1 && strcmp(argv[1], "--dead-peer") == 0)
    return run_dead_peer(port);
  return gpu_ranks_run(size, rank_main, &size);
}
