// comm_bench_report.c - rank 0's output of comm_bench: the markdown table on stdout and the JSON that bench/comm_results.py turns into the bench/RESULTS.md section.

#include "bench/comm_bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- Output (rank 0) --===//

static double tflops_of(const struct pattern_result *pr, double ms) {
  return ms > 0 ? 2.0 * (double)pr->m * (double)pr->n * (double)pr->k / ms / 1e9
                : 0.0;
}

static void cell_ms(char *buf, size_t len, const struct variant_result *v) {
  if (v->timed)
    snprintf(buf, len, "%.3f", v->ms);
  else
    snprintf(buf, len, "%s", v->status);
}

void print_table(struct bench *b) {
  printf("\n## GEMM + collective, bf16, %d x %s (%s; NCCL %d)\n\n", b->world,
         b->gpu, b->date, b->nccl);
  printf("| shape MxNxK | pattern | gemm ms (TFLOP/s) | comm ms (MiB) | "
         "sequential ms | 2-stream ms | ideal ms | seq / ideal | NCCL "
         "symmetric seq ms | attn fused ms | fused vs seq | fused vs 2-stream "
         "| max rel.err |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < b->nresults; ++i) {
    const struct pattern_result *pr = &b->results[i];
    const struct variant_result *g = &pr->v[V_GEMM], *c = &pr->v[V_COMM],
                                *sq = &pr->v[V_SEQ], *two = &pr->v[V_TWO],
                                *sym = &pr->v[V_SYM], *fu = &pr->v[V_FUSED];
    char gc[64], cc[64], sc[32], tc[32], ic[32] = "-", ratio[32] = "-",
                                          yc[32], fc[32], fs[32] = "-",
                                          ft[32] = "-", err[32];
    if (g->timed)
      snprintf(gc, sizeof gc, "%.3f (%.0f)", g->ms, tflops_of(pr, g->ms));
    else
      snprintf(gc, sizeof gc, "%s", g->status);
    if (c->timed)
      snprintf(cc, sizeof cc, "%.3f (%.0f)", c->ms, pr->comm_bytes / 1048576.0);
    else
      snprintf(cc, sizeof cc, "%s", c->status);
    cell_ms(sc, sizeof sc, sq);
    cell_ms(tc, sizeof tc, two);
    cell_ms(yc, sizeof yc, sym);
    cell_ms(fc, sizeof fc, fu);
    if (g->timed && c->timed) {
      double ideal = fmax(g->ms, c->ms);
      snprintf(ic, sizeof ic, "%.3f", ideal);
      if (sq->timed)
        snprintf(ratio, sizeof ratio, "%.2f", sq->ms / ideal);
    }
    if (fu->timed && sq->timed)
      snprintf(fs, sizeof fs, "%.2fx", sq->ms / fu->ms);
    if (fu->timed && two->timed)
      snprintf(ft, sizeof ft, "%.2fx", two->ms / fu->ms);
    double worst = 0;
    for (int v = V_SEQ; v < NVARIANTS; ++v)
      if (pr->v[v].checked)
        worst = fmax(worst, pr->v[v].rel_l2);
    snprintf(err, sizeof err, "%.1e", worst);
    printf("| %lldx%lldx%lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
           "%s | %s | %s |\n",
           (long long)pr->m, (long long)pr->n, (long long)pr->k,
           pattern_names[pr->pattern], gc, cc, sc, tc, ic, ratio, yc, fc, fs,
           ft, err);
  }
  printf("\nms: median per rank, max over ranks; 'fused vs X' = X ms / fused "
         "ms (above 1: fused is faster).\n");
  for (int i = 0; i < b->nresults; ++i)
    for (int v = 0; v < NVARIANTS; ++v) {
      const struct variant_result *r = &b->results[i].v[v];
      if (r->error[0])
        printf("- %lldx%lldx%lld %s %s: %s: %s\n", (long long)b->results[i].m,
               (long long)b->results[i].n, (long long)b->results[i].k,
               pattern_names[b->results[i].pattern], variant_names[v],
               r->status, r->error);
    }
}

static cJSON *variant_json(const struct pattern_result *pr,
                           const struct variant_result *r, int world) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "status", r->status);
  if (r->error[0])
    cJSON_AddStringToObject(j, "error", r->error);
  if (r->checked) {
    cJSON_AddNumberToObject(j, "rel_l2", r->rel_l2);
    cJSON_AddNumberToObject(j, "max_abs_over_rms", r->max_rel);
  }
  if (r->timed) {
    cJSON_AddNumberToObject(j, "ms", r->ms);
    cJSON_AddNumberToObject(j, "ms_min", r->ms_min);
    cJSON_AddNumberToObject(j, "ms_aligned_median", r->ms_aligned);
    cJSON *per = cJSON_AddArrayToObject(j, "ms_per_rank");
    for (int q = 0; q < world; ++q)
      cJSON_AddItemToArray(per, cJSON_CreateNumber(r->ms_rank[q]));
    if (r->nrounds) {
      cJSON *rounds = cJSON_AddArrayToObject(j, "ms_rounds");
      for (int i = 0; i < r->nrounds; ++i)
        cJSON_AddItemToArray(rounds, cJSON_CreateNumber(r->round_ms[i]));
    }
    cJSON *it = cJSON_AddArrayToObject(j, "ms_iterations");
    for (int i = 0; i < r->nsamples; ++i)
      cJSON_AddItemToArray(it, cJSON_CreateNumber(r->samples[i]));
    if (r != &pr->v[V_COMM]) // the GEMM's flops over the variant's time
      cJSON_AddNumberToObject(j, "tflops", tflops_of(pr, r->ms));
  }
  return j;
}

void write_results(struct bench *b) {
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "meta");
  cJSON_AddStringToObject(meta, "benchmark", "comm_bench");
  cJSON_AddStringToObject(meta, "date", b->date);
  cJSON_AddStringToObject(meta, "gpu", b->gpu);
  cJSON_AddNumberToObject(meta, "world", b->world);
  cJSON_AddNumberToObject(meta, "driver_cuda_version", b->driver);
  cJSON_AddNumberToObject(meta, "nccl_version", b->nccl);
  cJSON_AddNumberToObject(meta, "cudart_version", b->vendor.cudart_version);
  cJSON_AddNumberToObject(meta, "cublas_version", b->vendor.cublas_version);
  cJSON_AddStringToObject(meta, "cublas_library", b->vendor.cublas_path);
  cJSON_AddNumberToObject(meta, "iters", (double)b->o->iters);
  cJSON_AddNumberToObject(meta, "warmup", (double)b->o->warmup);
  cJSON_AddNumberToObject(meta, "cooldown_ms", (double)b->o->cooldown_ms);
  cJSON_AddNumberToObject(meta, "rounds", (double)b->o->rounds);
  cJSON_AddNumberToObject(meta, "check_rows", (double)b->o->check_rows);
  cJSON_AddNumberToObject(meta, "seed", (double)b->o->seed);
  cJSON_AddNumberToObject(meta, "tol_rel_l2", BENCH_TOL_REL_L2);
  cJSON_AddNumberToObject(meta, "tol_max_abs_over_rms", BENCH_TOL_MAX_REL);
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  cJSON_AddStringToObject(meta, "NCCL_NVLS_ENABLE", nvls ? nvls : "");
  // How comm_fused.c launches the fused kernel (its output is symmetric).
  const char *out_mode = getenv("COMM_FUSED_OUT");
  cJSON_AddStringToObject(meta, "fused_out",
                          out_mode && !strcmp(out_mode, "workspace")
                              ? "workspace (attnrt_comm_launch)"
                              : "symmetric (attnrt_comm_launch_out)");
  cJSON_AddStringToObject(
      meta, "timing",
      "a one-element all_reduce barrier before each iteration; CUDA events "
      "around the iteration on the main stream; median per rank, max over "
      "ranks (ms); ms_aligned_median: median over iterations of the max over "
      "ranks; with rounds > 0 the fused and sequential variants are timed "
      "again in turn that many rounds (fused first in even rounds) and their "
      "ms, ms_aligned_median and ms_per_rank are means over the rounds "
      "(ms_rounds: each round's ms); ms_iterations: that max for each timed "
      "iteration, in order, all rounds (the "
      "first 256)");
  cJSON *rows = cJSON_AddArrayToObject(root, "rows");
  for (int i = 0; i < b->nresults; ++i) {
    const struct pattern_result *pr = &b->results[i];
    cJSON *j = cJSON_CreateObject();
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)pr->m,
             (long long)pr->n, (long long)pr->k);
    cJSON_AddStringToObject(j, "shape", shape);
    cJSON_AddNumberToObject(j, "m", (double)pr->m);
    cJSON_AddNumberToObject(j, "n", (double)pr->n);
    cJSON_AddNumberToObject(j, "k", (double)pr->k);
    cJSON_AddStringToObject(j, "pattern", pattern_names[pr->pattern]);
    cJSON_AddNumberToObject(j, "comm_MiB", pr->comm_bytes / 1048576.0);
    const struct variant_result *g = &pr->v[V_GEMM], *c = &pr->v[V_COMM];
    if (g->timed && c->timed)
      cJSON_AddNumberToObject(j, "ideal_ms", fmax(g->ms, c->ms));
    for (int v = 0; v < NVARIANTS; ++v)
      cJSON_AddItemToObject(j, variant_names[v],
                            variant_json(pr, &pr->v[v], b->world));
    cJSON_AddItemToArray(rows, j);
  }
  char path[1024];
  const char *out_dir = getenv("OUT");
  if (b->o->json_path)
    snprintf(path, sizeof path, "%s", b->o->json_path);
  else if (out_dir && *out_dir)
    snprintf(path, sizeof path, "%s/comm_bench.json", out_dir);
  else
    snprintf(path, sizeof path, "comm_bench.json");
  char *text = cJSON_Print(root);
  FILE *f = text ? fopen(path, "w") : NULL;
  if (!f || fputs(text, f) < 0)
    fprintf(stderr, "comm_bench: cannot write %s\n", path);
  if (f)
    fclose(f);
  free(text);
  cJSON_Delete(root);
}
