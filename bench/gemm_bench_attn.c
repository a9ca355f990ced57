// gemm_bench_attn.c - gemm_bench's attn side: the linalg.matmul program for a shape (the default or a --attn-ir template), compiled with attn_compile, loaded through attnrt, and the entry to launch picked from its manifest.

#include "bench/gemm_bench.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The program attn compiles; @M@, @N@ and @K@ are replaced by the shape.
static const char default_ir[] =
    "func.func @mm(%a: tensor<@M@x@K@xbf16>, %b: tensor<@K@x@N@xbf16>) "
    "-> tensor<@M@x@N@xbf16> {\n"
    "  %zero = arith.constant 0.0 : bf16\n"
    "  %empty = tensor.empty() : tensor<@M@x@N@xbf16>\n"
    "  %init = linalg.fill ins(%zero : bf16) outs(%empty : "
    "tensor<@M@x@N@xbf16>) -> tensor<@M@x@N@xbf16>\n"
    "  %c = linalg.matmul ins(%a, %b : tensor<@M@x@K@xbf16>, "
    "tensor<@K@x@N@xbf16>) outs(%init : tensor<@M@x@N@xbf16>) "
    "-> tensor<@M@x@N@xbf16>\n"
    "  return %c : tensor<@M@x@N@xbf16>\n"
    "}\n";

//===-- attn's kernel --===//


/// Reads the whole file at path; NULL with a message in err.
static char *read_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
    snprintf(err, errlen, "cannot read %s", path);
    free(text);
    fclose(f);
    return NULL;
  }
  text[len] = 0;
  fclose(f);
  return text;
}

/// tmpl with @M@, @N@, @K@ replaced; caller frees. NULL when out of memory.
static char *instantiate(const char *tmpl, int64_t m, int64_t n, int64_t k) {
  size_t cap = strlen(tmpl) * 2 + 256, len = 0;
  char *out = malloc(cap);
  for (const char *p = tmpl; out && *p;) {
    char num[32] = "";
    if (p[0] == '@' && p[1] && p[2] == '@' && strchr("MNK", p[1])) {
      snprintf(num, sizeof num, "%lld",
               (long long)(p[1] == 'M' ? m : p[1] == 'N' ? n : k));
      p += 3;
    } else {
      num[0] = *p++;
      num[1] = 0;
    }
    size_t add = strlen(num);
    if (len + add + 1 > cap) {
      char *grown = realloc(out, cap * 2 + add);
      if (!grown) {
        free(out);
        return NULL;
      }
      out = grown;
      cap = cap * 2 + add;
    }
    memcpy(out + len, num, add);
    len += add;
  }
  if (out)
    out[len] = 0;
  return out;
}

static int role_of_name(const char *name) {
  static const char *const names[3][6] = {
      {"a", "A", "lhs", "arg0", "in0", NULL},
      {"b", "B", "rhs", "arg1", "in1", NULL},
      {"c", "C", "out", "output", "result", "init"}};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 6 && names[r][i]; ++i)
      if (name && strcmp(name, names[r][i]) == 0)
        return r;
  return -1;
}

/// Fills g->name and g->role from the manifest: program 0 if there is one,
/// else kernel 0; roles by parameter name, else by shape, else in order.
static bool pick_entry(const attnrt_manifest *mf, int64_t m, int64_t n,
                       int64_t k, struct attn_gemm *g, char *err,
                       size_t errlen) {
  const char *names[3] = {NULL, NULL, NULL};
  const struct attnrt_param_info *params[3] = {NULL, NULL, NULL};
  size_t count = 0;
  const struct attnrt_program_info *prog = attnrt_manifest_program_at(mf, 0);
  if (prog) {
    snprintf(g->name, sizeof g->name, "%s", prog->name);
    count = prog->ninputs;
    for (size_t i = 0; i < count && i < 3; ++i)
      names[i] = prog->inputs[i];
  } else {
    const struct attnrt_kernel_info *kern = attnrt_manifest_kernel_at(mf, 0);
    if (!kern) {
      snprintf(err, errlen, "the manifest has no kernel");
      return false;
    }
    snprintf(g->name, sizeof g->name, "%s", kern->name);
    for (size_t i = 0; i < kern->nparams; ++i) {
      const struct attnrt_param_info *p = &kern->params[i];
      if (p->kind == ATTNRT_ARG_TENSORMAP)
        continue;
      if (p->kind != ATTNRT_ARG_PTR) {
        snprintf(err, errlen,
                 "kernel %s parameter %s is not a pointer: gemm_bench passes "
                 "a, b, c only",
                 kern->name, p->name);
        return false;
      }
      if (count < 3) {
        names[count] = p->name;
        params[count] = p;
      }
      ++count;
    }
  }
  if (count != 3) {
    snprintf(err, errlen, "%s takes %zu arguments, expected 3 (a, b, c)",
             g->name, count);
    return false;
  }
  bool used[3] = {false, false, false}, by_name = true;
  for (int i = 0; i < 3 && by_name; ++i) {
    int r = role_of_name(names[i]);
    by_name = r >= 0 && !used[r];
    if (by_name) {
      g->role[i] = r;
      used[r] = true;
    }
  }
  if (by_name)
    return true;
  // By shape: [M,K] is A, [K,N] is B, [M,N] is C (ambiguous ones keep order).
  const int64_t want[3][2] = {{m, k}, {k, n}, {m, n}};
  bool by_shape = params[0] != NULL;
  memset(used, 0, sizeof used);
  for (int i = 0; i < 3 && by_shape; ++i) {
    int r = -1;
    for (int c = 0; c < 3 && r < 0; ++c)
      if (!used[c] && params[i]->rank == 2 &&
          params[i]->shape[0] == want[c][0] && params[i]->shape[1] == want[c][1])
        r = c;
    by_shape = r >= 0;
    if (by_shape) {
      g->role[i] = r;
      used[r] = true;
    }
  }
  if (!by_shape)
    for (int i = 0; i < 3; ++i)
      g->role[i] = i;
  return true;
}

/// The first kernel's lowering and tiles as the manifest records them
/// ("hopper-gemm 128x256x64, grid 126, 384 threads, 197696 B smem", and
/// ", K split 4 ways" where a second kernel sums K slices), or "".
static void describe_kernel(const char *manifest, char *buf, size_t len) {
  buf[0] = 0;
  cJSON *root = cJSON_Parse(manifest);
  const cJSON *k0 = cJSON_GetArrayItem(
      cJSON_GetObjectItemCaseSensitive(root, "kernels"), 0);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(k0, "kernel");
  const cJSON *mm = cJSON_GetObjectItemCaseSensitive(k0, "matmul");
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(k0, "grid");
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(k0, "block");
  const cJSON *smem =
      cJSON_GetObjectItemCaseSensitive(k0, "dynamic_shared_bytes");
  size_t used = 0;
  if (cJSON_IsString(kind))
    used += (size_t)snprintf(buf + used, len - used, "%s", kind->valuestring);
  const char *tile[3] = {"block_m", "block_n", "block_k"};
  for (int i = 0; i < 3 && mm && used < len; ++i) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(mm, tile[i]);
    if (cJSON_IsNumber(t))
      used += (size_t)snprintf(buf + used, len - used, "%s%d",
                               i ? "x" : used ? " " : "", t->valueint);
  }
  if (used < len && cJSON_IsNumber(cJSON_GetArrayItem(grid, 0)))
    used += (size_t)snprintf(buf + used, len - used, "%sgrid %d",
                             used ? ", " : "",
                             cJSON_GetArrayItem(grid, 0)->valueint);
  if (used < len && cJSON_IsNumber(cJSON_GetArrayItem(block, 0)))
    used += (size_t)snprintf(buf + used, len - used, ", %d threads",
                             cJSON_GetArrayItem(block, 0)->valueint);
  if (used < len && cJSON_IsNumber(smem))
    used += (size_t)snprintf(buf + used, len - used, ", %d B smem",
                             smem->valueint);
  const cJSON *split = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(k0, "gemm"), "split_k");
  if (used < len && cJSON_IsNumber(split))
    snprintf(buf + used, len - used, ", K split %d ways", split->valueint);
  cJSON_Delete(root);
}

void attn_gemm_release(struct attn_gemm *g) {
  attnrt_module_destroy(g->module);
  attn_result_destroy(g->result);
  memset(g, 0, sizeof *g);
}

/// Writes r's image and manifest to dir/gemm_MxNxK.{ptx,json}; a failure
/// is reported and ignored.
static void dump_kernel(const char *dir, int64_t m, int64_t n, int64_t k,
                        const attn_result *r) {
  size_t size = 0;
  const void *data = attn_result_data(r, &size);
  const char *manifest = attn_result_manifest(r);
  const char *ext[2] = {"ptx", "json"};
  for (int i = 0; i < 2; ++i) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gemm_%lldx%lldx%lld.%s", dir,
             (long long)m, (long long)n, (long long)k, ext[i]);
    FILE *f = fopen(path, "wb");
    bool ok = f && (i == 0 ? fwrite(data, 1, size, f) == size
                           : fputs(manifest, f) >= 0);
    if (f)
      ok = fclose(f) == 0 && ok;
    if (!ok)
      fprintf(stderr, "gemm_bench: cannot write %s\n", path);
  }
}

/// Compiles the matmul for m x n x k (and loads it when rt is not NULL).
/// On failure fills r->status and r->error and returns false.
bool attn_gemm_build(const struct options *o, attnrt_runtime *rt,
                     int64_t m, int64_t n, int64_t k,
                     struct attn_gemm *g, struct row *r) {
  memset(g, 0, sizeof *g);
  char err[600] = "";
  char *tmpl = o->ir_path ? read_file(o->ir_path, err, sizeof err) : NULL;
  if (o->ir_path && !tmpl) {
    r->status = "compile failed";
    snprintf(r->error, sizeof r->error, "%s", err);
    return false;
  }
  char *ir = instantiate(tmpl ? tmpl : default_ir, m, n, k);
  free(tmpl);
  if (!ir) {
    r->status = "error";
    snprintf(r->error, sizeof r->error, "out of host memory");
    return false;
  }
  struct attn_compile_options opts;
  attn_compile_options_init(&opts);
  opts.target = "sm_90a";
  opts.format = ATTN_OUTPUT_PTX;
  opts.tile_options = o->tile_options;
  opts.hopper_options = o->hopper_options;
  opts.source_name = o->ir_path ? o->ir_path : "gemm_bench.mlir";
  char first[BENCH_DIAG_LEN] = "";
  double t0 = bench_now_s();
  enum attn_status st = attn_compile(ir, 0, &opts, bench_first_error, first, &g->result);
  r->compile_s = bench_now_s() - t0;
  free(ir);
  if (st != ATTN_OK) {
    const char *last = attn_last_error();
    r->status = "compile failed";
    snprintf(r->error, sizeof r->error, "attn_compile: %s: %.500s",
             attn_status_string(st), first[0] ? first : last ? last : "");
    attn_gemm_release(g);
    return false;
  }
  const char *manifest = attn_result_manifest(g->result);
  if (o->dump_dir)
    dump_kernel(o->dump_dir, m, n, k, g->result);
  describe_kernel(manifest, r->config, sizeof r->config);
  attnrt_manifest *mf = NULL;
  enum attnrt_status rs = attnrt_manifest_parse(manifest, &mf);
  if (rs != ATTNRT_OK) {
    r->status = "error";
    bench_attnrt_error(r->error, sizeof r->error, "attnrt_manifest_parse", rs,
                       NULL);
    attn_gemm_release(g);
    return false;
  }
  bool picked = pick_entry(mf, m, n, k, g, err, sizeof err);
  attnrt_manifest_destroy(mf);
  if (!picked) {
    r->status = "error";
    snprintf(r->error, sizeof r->error, "%s", err);
    attn_gemm_release(g);
    return false;
  }
  static const char role_name[3] = {'a', 'b', 'c'};
  snprintf(r->entry, sizeof r->entry, "%s(%c, %c, %c)", g->name,
           role_name[g->role[0]], role_name[g->role[1]], role_name[g->role[2]]);
  if (!rt)
    return true;
  size_t size = 0;
  const void *ptx = attn_result_data(g->result, &size);
  rs = attnrt_module_load_ptx(rt, ptx, size, manifest, &g->module);
  if (rs != ATTNRT_OK) {
    r->status = "error";
    bench_attnrt_error(r->error, sizeof r->error, "attnrt_module_load_ptx", rs,
                       rt);
    attn_gemm_release(g);
    return false;
  }
  return true;
}
