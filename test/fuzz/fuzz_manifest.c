//===- fuzz_manifest.c - attnrt-fuzz-manifest: bytes through the manifest -===//
//
// libFuzzer target: the input is a launch manifest (JSON). It goes through
// attnrt_manifest_parse, which also reads the "programs" array (the launch
// programs of attnrt_program.c), and every accessor of the result is
// walked, reading each field, so that a manifest that parses but holds an
// inconsistent value (a name past its array, a shape past its rank) shows
// up under ASan. No device and no driver are needed.
//
//===----------------------------------------------------------------------===//
#include "attnrt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink; // keeps the reads below

static void touch(const char *s) {
  if (s)
    sink += strlen(s);
}

static void walk_kernel(const struct attnrt_kernel_info *k) {
  touch(k->name);
  for (int i = 0; i < 3; ++i)
    sink += k->grid[i] + k->block[i];
  sink += k->static_shared_bytes + k->dynamic_shared_bytes + k->nargs;
  for (size_t p = 0; p < k->nparams; ++p) {
    const struct attnrt_param_info *pi = &k->params[p];
    touch(pi->name);
    touch(pi->dtype);
    sink += (size_t)pi->kind + pi->align;
    for (int r = 0; r < pi->rank && r < ATTNRT_MAX_RANK; ++r)
      sink += (size_t)pi->shape[r];
    if (pi->kind == ATTNRT_ARG_TENSORMAP) {
      const struct attnrt_tensormap_info *t = &pi->tensormap;
      sink += (size_t)t->tensor + t->elem_bytes + t->swizzle;
      for (int r = 0; r < t->rank && r < ATTNRT_TENSORMAP_MAX_RANK; ++r)
        sink += t->dims[r] + t->box[r] + (r ? t->strides[r - 1] : 0);
      if (t->tensor >= 0 && (size_t)t->tensor < k->nparams)
        touch(k->params[t->tensor].name);
    }
  }
  if (k->comm) {
    touch(k->comm->pattern);
    touch(k->comm->split);
    sink += k->comm->world_size + k->comm->workspace_bytes +
            k->comm->compute_ctas + k->comm->comm_ctas;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *json = malloc(size + 1);
  if (!json)
    return 0;
  memcpy(json, data, size);
  json[size] = '\0';
  attnrt_manifest *m = NULL;
  if (attnrt_manifest_parse(json, &m) == ATTNRT_OK && m) {
    touch(attnrt_manifest_target(m));
    touch(attnrt_manifest_format(m));
    int nk = attnrt_manifest_kernel_count(m);
    for (int i = 0; i < nk; ++i) {
      const struct attnrt_kernel_info *k = attnrt_manifest_kernel_at(m, i);
      walk_kernel(k);
      if (attnrt_manifest_kernel(m, k->name) == NULL)
        abort(); // every kernel is found by its own name
    }
    int np = attnrt_manifest_program_count(m);
    for (int i = 0; i < np; ++i) {
      const struct attnrt_program_info *p = attnrt_manifest_program_at(m, i);
      touch(p->name);
      for (size_t j = 0; j < p->ninputs; ++j)
        touch(p->inputs[j]);
      sink += p->nworkspace + p->workspace_bytes + p->nsteps;
      if (attnrt_manifest_program(m, p->name) == NULL)
        abort(); // every program is found by its own name
    }
    (void)attnrt_manifest_kernel_at(m, nk);
    (void)attnrt_manifest_program_at(m, np);
  } else {
    touch(attnrt_last_error(NULL));
  }
  attnrt_manifest_destroy(m);
  free(json);
  return 0;
}
