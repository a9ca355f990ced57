// gemm_bench_report.c - gemm_bench's output: the markdown table on stdout and the JSON that bench/comm_results.py turns into the bench/RESULTS.md section.

#include "bench/gemm_bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- Output --===//

static double tflops(const struct row *r) {
  return r->timed && r->stats.median > 0
             ? 2.0 * (double)r->m * (double)r->n * (double)r->k /
                   r->stats.median / 1e9
             : 0.0;
}

/// "1.234" or "-" for a row that was not timed.
static const char *fmt_ms(char *buf, size_t len, const struct row *r) {
  if (r->timed)
    snprintf(buf, len, "%.3f", r->stats.median);
  else
    snprintf(buf, len, "-");
  return buf;
}

/// "712" or "-" for a row that was not timed.
static const char *fmt_tflops(char *buf, size_t len, const struct row *r) {
  if (r->timed)
    snprintf(buf, len, "%.0f", tflops(r));
  else
    snprintf(buf, len, "-");
  return buf;
}

void print_table(const struct row *rows, int nshapes,
                 const char *gpu, const char *date) {
  printf("\n## bf16 GEMM on one GPU: attn vs cuBLAS (%s, %s)\n\n", gpu, date);
  printf("| M x N x K | cuBLAS ms | cuBLAS TFLOP/s | cuBLAS rel.err | attn ms | "
         "attn TFLOP/s | attn rel.err | attn vs cuBLAS | attn compile s | "
         "note |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int s = 0; s < nshapes; ++s) {
    const struct row *c = &rows[2 * s], *a = &rows[2 * s + 1];
    char b1[32], b2[32], t1[32], t2[32], ratio[32] = "-", cs[32] = "-",
                                         e1[32] = "-", e2[32] = "-",
                                         note[700] = "";
    if (c->timed && a->timed)
      snprintf(ratio, sizeof ratio, "%.2fx", c->stats.median / a->stats.median);
    if (a->compile_s >= 0)
      snprintf(cs, sizeof cs, "%.2f", a->compile_s);
    if (c->checked)
      snprintf(e1, sizeof e1, "%.1e", bench_check_rel_l2(&c->check));
    if (a->checked)
      snprintf(e2, sizeof e2, "%.1e", bench_check_rel_l2(&a->check));
    size_t used = 0;
    for (int i = 0; i < 2; ++i) {
      const struct row *r = i ? a : c;
      if (strcmp(r->status, "ok") != 0 && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "%s%s %s%s%s",
                                 used ? "; " : "", r->impl, r->status,
                                 r->error[0] ? ": " : "", r->error);
    }
    // Keep the table one line per row.
    for (char *p = note; *p; ++p)
      if (*p == '\n' || *p == '|')
        *p = ' ';
    printf("| %lldx%lldx%lld | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
           (long long)c->m, (long long)c->n, (long long)c->k,
           fmt_ms(b1, sizeof b1, c), fmt_tflops(t1, sizeof t1, c), e1,
           fmt_ms(b2, sizeof b2, a), fmt_tflops(t2, sizeof t2, a), e2, ratio,
           cs, note);
  }
  printf("\nattn vs cuBLAS = cuBLAS ms / attn ms (above 1: attn is faster). "
         "rel.err = ||C - ref||/||ref|| over the sampled rows.\n");
}

static cJSON *row_json(const struct row *r, const struct row *anchor) {
  cJSON *j = cJSON_CreateObject();
  char shape[64];
  snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)r->m,
           (long long)r->n, (long long)r->k);
  cJSON_AddStringToObject(j, "shape", shape);
  cJSON_AddNumberToObject(j, "m", (double)r->m);
  cJSON_AddNumberToObject(j, "n", (double)r->n);
  cJSON_AddNumberToObject(j, "k", (double)r->k);
  cJSON_AddStringToObject(j, "impl", r->impl);
  cJSON_AddStringToObject(j, "status", r->status);
  if (r->error[0])
    cJSON_AddStringToObject(j, "error", r->error);
  if (r->entry[0])
    cJSON_AddStringToObject(j, "entry", r->entry);
  if (r->config[0])
    cJSON_AddStringToObject(j, "kernel_config", r->config);
  if (r->compile_s >= 0)
    cJSON_AddNumberToObject(j, "compile_s", r->compile_s);
  if (r->checked) {
    // JSON has no infinity: a non-finite error is written as 1e30.
    double rel = bench_check_rel_l2(&r->check);
    double mx = bench_check_max_rel(&r->check);
    cJSON_AddNumberToObject(j, "rel_l2", isfinite(rel) ? rel : 1e30);
    cJSON_AddNumberToObject(j, "max_abs_over_rms", isfinite(mx) ? mx : 1e30);
    cJSON_AddNumberToObject(j, "nonfinite", (double)r->check.nonfinite);
    cJSON_AddNumberToObject(j, "checked_values", (double)r->check.count);
    cJSON_AddBoolToObject(j, "check_pass", bench_check_pass(&r->check));
  }
  if (r->timed) {
    cJSON_AddNumberToObject(j, "ms", r->stats.median);
    cJSON_AddNumberToObject(j, "ms_min", r->stats.min);
    cJSON_AddNumberToObject(j, "ms_max", r->stats.max);
    cJSON_AddNumberToObject(j, "ms_mean", r->stats.mean);
    cJSON_AddNumberToObject(j, "tflops", tflops(r));
    cJSON *rounds = cJSON_AddArrayToObject(j, "ms_rounds");
    for (int i = 0; i < r->nrounds; ++i)
      cJSON_AddItemToArray(rounds, cJSON_CreateNumber(r->round_ms[i]));
    if (anchor && anchor != r && anchor->timed)
      cJSON_AddNumberToObject(j, "vs_cublas",
                              anchor->stats.median / r->stats.median);
  }
  return j;
}


/// Writes the results so far to path; false when the file cannot be written.
bool write_results(const char *path, const struct results *res) {
  const struct options *o = res->o;
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "meta");
  cJSON_AddStringToObject(meta, "benchmark", "gemm_bench");
  cJSON_AddStringToObject(meta, "date", res->date);
  cJSON_AddStringToObject(meta, "gpu", res->gpu);
  cJSON_AddNumberToObject(meta, "device", (double)o->device);
  cJSON_AddNumberToObject(meta, "driver_cuda_version", res->driver);
  if (res->vendor) {
    cJSON_AddNumberToObject(meta, "cudart_version", res->vendor->cudart_version);
    cJSON_AddNumberToObject(meta, "cublas_version", res->vendor->cublas_version);
    cJSON_AddStringToObject(meta, "cublas_library", res->vendor->cublas_path);
  }
  cJSON_AddStringToObject(meta, "attn_version", attn_version());
  // How attn's kernel was compiled, when not with the defaults.
  if (o->tile_options)
    cJSON_AddStringToObject(meta, "tile_options", o->tile_options);
  if (o->hopper_options)
    cJSON_AddStringToObject(meta, "hopper_options", o->hopper_options);
  cJSON_AddNumberToObject(meta, "iters", (double)o->iters);
  cJSON_AddNumberToObject(meta, "rounds", (double)o->rounds);
  cJSON_AddNumberToObject(meta, "warmup", (double)o->warmup);
  cJSON_AddNumberToObject(meta, "cooldown_ms", (double)o->cooldown_ms);
  cJSON_AddNumberToObject(meta, "check_rows", (double)o->check_rows);
  cJSON_AddNumberToObject(meta, "seed", (double)o->seed);
  cJSON_AddNumberToObject(meta, "tol_rel_l2", BENCH_TOL_REL_L2);
  cJSON_AddNumberToObject(meta, "tol_max_abs_over_rms", BENCH_TOL_MAX_REL);
  cJSON_AddStringToObject(
      meta, "timing",
      "CUDA events around each launch on one stream, after warm-up; median; "
      "no L2 flush");
  cJSON *jrows = cJSON_AddArrayToObject(root, "rows");
  for (int s = 0; s < o->nshapes; ++s)
    for (int i = 0; i < 2; ++i)
      cJSON_AddItemToArray(jrows,
                           row_json(&res->rows[2 * s + i], &res->rows[2 * s]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  FILE *f = text ? fopen(path, "w") : NULL;
  bool ok = f && fputs(text, f) >= 0;
  if (f)
    ok = fclose(f) == 0 && ok;
  free(text);
  return ok;
}
