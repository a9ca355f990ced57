//===- transforms.c - The pass table and helpers shared by the passes -----===//
#include "lib/Transforms/transforms_internal.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct attn_pass_def *const attn_passes[] = {
    &attn_fuse_pass,
    &attn_grad_pass,
    &attn_tile_pass,
    &lower_tile_to_cpu_pass,
    &lower_tile_to_gpu_pass,
    &lower_tile_to_hopper_pass,
    &lower_tile_to_mma_pass,
    &lower_tile_to_decode_pass,
    &comm_schedule_pass,
    &test_attn_print_cost_pass,
};
const size_t attn_num_passes = sizeof attn_passes / sizeof attn_passes[0];

void attn_op_list_push(struct attn_op_list *l, MlirOperation op) {
  if (l->failed)
    return;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    MlirOperation *grown = realloc(l->ops, cap * sizeof *grown);
    if (!grown) {
      l->failed = true;
      return;
    }
    l->ops = grown;
    l->cap = cap;
  }
  l->ops[l->n++] = op;
}

struct collect_state {
  struct attn_op_list *list;
  const char *name;
};

static MlirWalkResult collect_named(MlirOperation op, void *user) {
  struct collect_state *s = user;
  if (attn_op_is(op, s->name))
    attn_op_list_push(s->list, op);
  return MlirWalkResultAdvance;
}

void attn_op_list_collect(struct attn_op_list *l, MlirOperation root,
                          const char *name) {
  struct collect_state s = {l, name};
  mlirOperationWalk(root, collect_named, &s, MlirWalkPostOrder);
}

bool attn_parse_bool_option(const char *value, bool *out) {
  if (!strcmp(value, "true") || !strcmp(value, "1"))
    *out = true;
  else if (!strcmp(value, "false") || !strcmp(value, "0"))
    *out = false;
  else
    return false;
  return true;
}

bool attn_parse_int_option(const char *name, const char *value, long lo,
                           long hi, long *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (errno || *value == '\0' || *end != '\0' || v < lo || v > hi) {
    snprintf(err, errlen, "option '%s' expects an integer in [%ld, %ld], "
                          "found '%s'",
             name, lo, hi, value);
    return false;
  }
  *out = v;
  return true;
}

MlirOperation attn_gpu_kernels_module(MlirOperation module, const char *chip,
                                      int ptx, MlirLocation loc) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef sym;
    if (attn_op_is(op, "gpu.module") && attn_attr_str(op, "sym_name", &sym) &&
        attn_str_eq(sym, "attn_kernels"))
      return op;
  }
  // The target is an attribute literal; the module itself is built.
  char target[160];
  snprintf(target, sizeof target,
           "#nvvm.target<chip = \"%s\", features = \"+ptx%d\", O = 3>", chip,
           ptx);
  MlirAttribute t =
      mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(target));
  if (mlirAttributeIsNull(t))
    return (MlirOperation){NULL};
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, body);
  MlirNamedAttribute a[] = {
      attn_b_named(&b, "sym_name", attn_b_attr_str(&b, "attn_kernels")),
      attn_b_named(&b, "targets", mlirArrayAttrGet(ctx, 1, &t)),
  };
  MlirOperation gm = attn_b_op(&b, "gpu.module", 0, NULL, 0, NULL, 2, a, 1);
  if (mlirOperationIsNull(gm))
    return gm;
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(gm, 0),
                             mlirBlockCreate(0, NULL, NULL));
  mlirOperationSetAttributeByName(
      module, mlirStringRefCreateFromCString("gpu.container_module"),
      mlirUnitAttrGet(ctx));
  return gm;
}

MlirOperation attn_kernel_gpu_module(MlirOperation kernel, const char *chip,
                                     int ptx) {
  MlirOperation gm = attn_gpu_kernels_module(
      mlirOperationGetParentOperation(kernel), chip, ptx,
      mlirOperationGetLocation(kernel));
  if (mlirOperationIsNull(gm))
    attn_emit_errorf(kernel, "cannot create gpu.module");
  return gm;
}

MlirOperation attn_hopper_last_op(MlirOperation gm) {
  MlirOperation last = {NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    last = op;
  return last;
}

static void print_to_file(MlirStringRef s, void *f) {
  fwrite(s.data, 1, s.length, f);
}

void attn_hopper_dump_built(MlirOperation gm, MlirOperation before) {
  const char *path = getenv("ATTN_DUMP_HOPPER");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f)
    return;
  MlirOperation op =
      mlirOperationIsNull(before)
          ? mlirBlockGetFirstOperation(
                mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0)))
          : mlirOperationGetNextInBlock(before);
  for (; !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    mlirOperationPrint(op, print_to_file, f);
    fputc('\n', f);
  }
  fclose(f);
}
