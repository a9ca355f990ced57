// fused_gpu_test.c - two-GPU check of attn's fused GEMM + collective kernels: forks one process per rank, loads the PTX attn-translate made from test/Inputs/comm/*_small.mlir or rs_waves.mlir (no link step: the kernel reads its peers' addresses from the workspace's peer table, attnrt_comm_buffer_peers), runs it three times with attnrt_comm_launch (with --symmetric-out, with C in a symmetric buffer through attnrt_comm_launch_out; with --alternate-out, C symmetric and the launches plain, then _out, then plain) and compares C with a float64 host reference; with --dead-peer, rank 1 leaves before launching and rank 0's launch must fail, not hang.
//
// Usage: attnrt-fused-gpu-test [--dead-peer | --symmetric-out |
// --alternate-out] PATTERN PTX MANIFEST, PATTERN
// being ar, rs, rs-waves or ag (the programs' shapes are fixed below). Needs two GPUs,
// libnccl 2.28 and a libattnrt with the NCCL device shim (its
// attn_nccl_peer_table makes the table; nvJitLink is not used); lit runs it only
// with the gpu2 feature. Prints one line per rank, then "N passed, M failed".

#include "attnrt.h"
#include "fused_check.h"
#include "gpu_ranks.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RANKS 2
#define LAUNCHES 3

/// Shapes of test/Inputs/comm/*_small.mlir and rs_waves.mlir: the
/// pattern, one rank's GEMM m x n x k (m gathered for ag), a's and c's rows.
struct shape {
  const char *name, *pattern;
  int64_t m, n, k, a_rows, c_rows;
};
static const struct shape shapes[] = {
    {"ar", "ar", 256, 512, 256, 256, 256},
    {"rs", "rs", 512, 512, 256, 512, 256},
    {"rs-waves", "rs", 2048, 512, 256, 2048, 1024},
    {"ag", "ag", 512, 512, 256, 256, 512},
};

/// How C is allocated and the kernel launched: plain memory and
/// attnrt_comm_launch; a symmetric buffer and attnrt_comm_launch_out; a
/// symmetric buffer and the two launches in turn (plain first).
enum out_mode { OUT_PLAIN, OUT_SYMMETRIC, OUT_ALTERNATE };

static int run_rank(int rank, const struct shape *sh, const char *ptx,
                    const char *manifest, bool dead_peer, enum out_mode mode) {
  bool symmetric_out = mode != OUT_PLAIN;
  attnrt_comm *c = NULL;
  TRY(attnrt_comm_init_from_env(&c));
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  size_t a_elems = (size_t)(sh->a_rows * sh->k), b_elems = (size_t)(sh->k * sh->n),
         c_elems = (size_t)(sh->c_rows * sh->n);
  uint16_t *h = malloc(2 * (a_elems > b_elems ? (a_elems > c_elems ? a_elems : c_elems)
                                              : (b_elems > c_elems ? b_elems : c_elems)));
  attnrt_devptr a = 0, b = 0, out = 0, dev = 0;
  TRY(attnrt_mem_alloc(rt, a_elems * 2, &a));
  TRY(attnrt_mem_alloc(rt, b_elems * 2, &b));
  // With --symmetric-out, C is every rank's copy of one collective
  // allocation, which a fused all-reduce writes into across the GPUs.
  attnrt_comm_buffer *out_sym = NULL;
  if (symmetric_out) {
    TRY(attnrt_comm_buffer_alloc(c, c_elems * 2, &out_sym));
    out = attnrt_comm_buffer_ptr(out_sym);
  } else {
    TRY(attnrt_mem_alloc(rt, c_elems * 2, &out));
  }
  struct fused_problem p = {sh->pattern, RANKS, sh->a_rows, sh->k, sh->n,
                            sh->c_rows};
  fused_fill(&p, rank, 0, h);
  TRY(attnrt_memcpy_htod(rt, a, h, a_elems * 2, NULL));
  // All-gather multiplies one B; the reduce patterns a B per rank.
  fused_fill(&p, rank, 1, h);
  TRY(attnrt_memcpy_htod(rt, b, h, b_elems * 2, NULL));
  attnrt_module *m = NULL;
  TRY(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m));
  const struct attnrt_kernel_info *ki =
      attnrt_manifest_kernel_at(attnrt_module_manifest(m), 0);
  if (!ki->comm) {
    printf("rank %d: kernel %s has no comm entry FAIL\n", rank, ki->name);
    _exit(1);
  }
  attnrt_comm_buffer *ws = NULL;
  TRY(attnrt_comm_buffer_alloc(c, ki->comm->workspace_bytes, &ws));
  // The kernel reads its peers' workspace addresses from the workspace's
  // peer table (it calls no NCCL device shim function), which the first
  // attnrt_comm_launch makes with the device communicator (made by every
  // rank together, so before rank 1 may leave).
  TRY(attnrt_comm_dev_create(c, 0, &dev));
  if (dead_peer && rank == 1) {
    printf("rank 1: leaves before launching\n");
    fflush(stdout);
    _exit(0); // as a crashed rank would: no finalize, no launch
  }
  double *full = fused_reference(&p);
  if (!full) {
    printf("rank %d: out of host memory FAIL\n", rank);
    _exit(1);
  }
  const double *want = fused_want(&p, full, rank);
  int bad = 0;
  for (int32_t epoch = 1; epoch <= LAUNCHES; ++epoch) {
    TRY(attnrt_memset_d8(rt, out, 0xff, c_elems * 2, NULL)); // NaN
    // attnrt adds the workspace, its peer table, the rank and the launch
    // number (epoch) to a, b and c.
    struct attnrt_arg args[3] = {{.kind = ATTNRT_ARG_PTR, .v.ptr = a},
                                 {.kind = ATTNRT_ARG_PTR, .v.ptr = b},
                                 {.kind = ATTNRT_ARG_PTR, .v.ptr = out}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    // The peers write into this rank's C only once it runs the launch,
    // after the poisoning above.
    bool direct = mode == OUT_SYMMETRIC || (mode == OUT_ALTERNATE && epoch % 2 == 0);
    enum attnrt_status st =
        direct ? attnrt_comm_launch_out(m, ki->name, ws, out_sym, dev, args, 3, NULL)
               : attnrt_comm_launch(m, ki->name, ws, dev, args, 3, NULL);
    if (st == ATTNRT_OK)
      st = attnrt_comm_wait(c, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (dead_peer) {
      // The kernel waits for the peer's tiles, traps after 10 s, and the
      // wait reports it: an error within the communicator's timeout.
      bool ok = st != ATTNRT_OK && s < 60;
      printf("rank 0: %s launch without its peer: %s after %.1f s: %s %s\n",
             sh->name, attnrt_status_string(st), s,
             attnrt_last_error(attnrt_comm_runtime(c)), ok ? "PASS" : "FAIL");
      fflush(stdout);
      _exit(ok ? 0 : 1); // the context is dead: no clean-up through it
    }
    if (st != ATTNRT_OK) {
      printf("rank %d: %s launch %d failed: %s: %s FAIL\n", rank, sh->name, epoch,
             attnrt_status_string(st), attnrt_last_error(attnrt_comm_runtime(c)));
      fflush(stdout);
      _exit(1);
    }
    TRY(attnrt_memcpy_dtoh(rt, h, out, c_elems * 2, NULL));
    double rel, worst;
    bool ok = fused_compare(&p, h, want, &rel, &worst);
    bad |= !ok;
    printf("rank %d: %s launch %d%s: %s rel_l2=%.2e max_abs=%.2e %s\n", rank,
           sh->name, epoch, direct ? " (symmetric out)" : "", ki->name, rel,
           worst, ok ? "PASS" : "FAIL");
    fflush(stdout);
  }
  free(full);
  free(h);
  attnrt_module_destroy(m);
  TRY(attnrt_comm_dev_destroy(c, dev));
  TRY(attnrt_comm_buffer_free(ws));
  TRY(attnrt_mem_free(rt, a));
  TRY(attnrt_mem_free(rt, b));
  if (out_sym)
    TRY(attnrt_comm_buffer_free(out_sym));
  else
    TRY(attnrt_mem_free(rt, out));
  attnrt_comm_destroy(c);
  return bad;
}

struct job {
  const struct shape *sh;
  const char *ptx, *manifest;
  bool dead_peer;
  enum out_mode mode;
};

static int rank_main(int rank, void *user) {
  const struct job *j = user;
  return run_rank(rank, j->sh, j->ptx, j->manifest, j->dead_peer, j->mode);
}

int main(int argc, char **argv) {
  int arg = 1;
  bool dead_peer = argc > 1 && !strcmp(argv[1], "--dead-peer");
  enum out_mode mode =
      argc > 1 && !strcmp(argv[1], "--symmetric-out")   ? OUT_SYMMETRIC
      : argc > 1 && !strcmp(argv[1], "--alternate-out") ? OUT_ALTERNATE
                                                         : OUT_PLAIN;
  arg += dead_peer || mode != OUT_PLAIN;
  if (argc - arg != 3) {
    printf("usage: attnrt-fused-gpu-test [--dead-peer | --symmetric-out | "
           "--alternate-out] ar|rs|rs-waves|ag PTX MANIFEST\n");
    return 2;
  }
  const struct shape *sh = NULL;
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i)
    if (!strcmp(argv[arg], shapes[i].name))
      sh = &shapes[i];
  char *ptx = fused_read_file(argv[arg + 1]),
       *manifest = fused_read_file(argv[arg + 2]);
  if (!sh || !ptx || !manifest) {
    printf("cannot read the pattern, %s or %s\n", argv[arg + 1], argv[arg + 2]);
    return 2;
  }
  int port;
  gpu_ranks_env(RANKS, 29611, "60", &port);
  struct job j = {sh, ptx, manifest, dead_peer, mode};
  int rc = gpu_ranks_run(RANKS, rank_main, &j);
  free(ptx);
  free(manifest);
  return rc;
}
