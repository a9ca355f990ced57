//===- lower_tile_to_gpu.c - lower-tile-to-gpu: tile kernels as gpu.func --===//
//
// Each tile kernel becomes a gpu.func in `gpu.module @attn_kernels`, which
// carries the NVVM target (chip and PTX features are pass options):
//
//   gpu.module @attn_kernels [#nvvm.target<chip = "sm_90a", ...>] {
//     gpu.func @k(<args>) workgroup(<one buffer per tile.alloc>) kernel
//         attributes {known_block_size = ..., known_grid_size = ...} {
//       tile.program_id -> gpu.block_id; tile ops -> loops spread over the
//       CTA's threads with a gpu.barrier after each
//     }
//   }
//
// Tiles live in shared memory (workgroup attributions). This is the plain
// arithmetic path; tensor cores come with the Hopper lowering. The
// module's launch programs (tile.programs) move into the gpu.module's
// attn.programs, as lower-tile-to-hopper moves them.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/tile/tile_dialect.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATIC_SMEM_LIMIT (48 * 1024)

struct gpu_options {
  char chip[16];
  char features[16];
};

static const struct attn_pass_option gpu_options_help[] = {
    {"chip", "target GPU, e.g. sm_90a (default), sm_90, sm_80"},
    {"features", "PTX ISA feature, e.g. +ptx80 (default: the chip's minimum)"},
    {NULL, NULL},
};

/// Chips LLVM's NVPTX backend knows, with the oldest PTX ISA that has them.
static const struct {
  const char *chip;
  int min_ptx;
} known_chips[] = {
    {"sm_70", 60}, {"sm_75", 63}, {"sm_80", 70}, {"sm_86", 71},
    {"sm_87", 74}, {"sm_89", 78}, {"sm_90", 78}, {"sm_90a", 80},
};

int attn_chip_min_ptx(const char *chip, size_t len) {
  for (size_t i = 0; i < sizeof known_chips / sizeof *known_chips; ++i)
    if (strlen(known_chips[i].chip) == len &&
        !strncmp(known_chips[i].chip, chip, len))
      return known_chips[i].min_ptx;
  return -1;
}

static int chip_min_ptx(const char *chip) {
  return attn_chip_min_ptx(chip, strlen(chip));
}

static void gpu_init(void *opts) {
  struct gpu_options *o = opts;
  snprintf(o->chip, sizeof o->chip, "sm_90a");
  o->features[0] = '\0';
}

static bool gpu_set(void *opts, const char *name, const char *value, char *err,
                    size_t errlen) {
  struct gpu_options *o = opts;
  if (!strcmp(name, "chip")) {
    if (chip_min_ptx(value) < 0) {
      snprintf(err, errlen,
               "unknown chip '%s' (expected sm_70, sm_75, sm_80, sm_86, "
               "sm_87, sm_89, sm_90 or sm_90a)",
               value);
      return false;
    }
    snprintf(o->chip, sizeof o->chip, "%s", value);
    return true;
  }
  if (!strcmp(name, "features")) {
    int v;
    char tail;
    if (sscanf(value, "+ptx%d%c", &v, &tail) != 1 || v < 60 || v > ATTN_MAX_PTX) {
      snprintf(err, errlen, "features must be +ptxNN with NN in [60, 88], "
                            "found '%s'",
               value);
      return false;
    }
    snprintf(o->features, sizeof o->features, "%s", value);
    return true;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'lower-tile-to-gpu' (expected chip "
           "or features)",
           name);
  return false;
}

/// Builds the gpu.func shell (signature, workgroup buffers, launch bounds,
/// what the kernel computes) at the end of gm, its body a lone gpu.return.
/// Returns the gpu.func; a null op after a diagnostic.
static MlirOperation build_shell(const char *name, MlirOperation kernel,
                                 MlirOperation gm,
                                 const struct attn_op_list *allocs,
                                 const struct attn_tile_launch *l) {
  MlirOperation none = {NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  intptr_t n = mlirBlockGetNumArguments(body);
  if (n + (intptr_t)allocs->n > ATTN_B_MAX_VALUES) {
    attn_emit_errorf(kernel, "'%s' has too many arguments and tiles for a "
                             "gpu.func (%ld)",
                     name, (long)n + (long)allocs->n);
    return none;
  }
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(kernel),
                    mlirOperationGetLocation(kernel));
  attn_builder_role(&b, "gpu.kernel");
  attn_builder_at_end(&b,
                      mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0)));
  MlirType types[ATTN_B_MAX_VALUES], wg[ATTN_B_MAX_VALUES];
  for (intptr_t i = 0; i < n; ++i)
    types[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  // Every tile is f32 in shared memory.
  MlirAttribute space = attn_b_attr_workgroup(&b);
  for (size_t i = 0; i < allocs->n; ++i) {
    int64_t d[8];
    int rank = attn_static_shape(
        mlirValueGetType(mlirOperationGetResult(allocs->ops[i], 0)), d);
    wg[i] = attn_b_memref_in(&b, rank, d, b.t.f32, space);
  }
  int32_t block[3] = {(int32_t)l->threads, 1, 1};
  int32_t grid[3] = {(int32_t)l->grid[0], (int32_t)l->grid[1],
                     (int32_t)l->grid[2]};
  MlirNamedAttribute attrs[5];
  intptr_t nattr = 0;
  attrs[nattr++] = attn_b_named(&b, "known_block_size",
                                mlirDenseI32ArrayGet(b.ctx, 3, block));
  attrs[nattr++] = attn_b_named(&b, "known_grid_size",
                                mlirDenseI32ArrayGet(b.ctx, 3, grid));
  // What the kernel computes travels to the launch manifest.
  static const char *carried[][2] = {
      {ATTN_TILE_ARG_NAMES_ATTR, "attn.arg_names"},
      {"tile.attention", "attn.attention"},
      {ATTN_TILE_MATMUL_ATTR, "attn.matmul"}};
  for (int i = 0; i < 3; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(
        kernel, mlirStringRefCreateFromCString(carried[i][0]));
    if (!mlirAttributeIsNull(a))
      attrs[nattr++] = attn_b_named(&b, carried[i][1], a);
  }
  struct attn_b_func f;
  attn_b_gpu_func_open(&b, &f, name, n, types, (intptr_t)allocs->n, wg,
                       nattr, attrs);
  attn_b_gpu_func_close(&b, &f);
  return attn_builder_finish(&b) ? f.op : none;
}

/// CUDA's largest grid: 2^31 - 1 CTAs along x, 65535 along y and z.
#define GRID_X_MAX 2147483647LL
#define GRID_YZ_MAX 65535LL

/// Fits the tile kernel's grid l->grid into CUDA's limits: a grid whose y
/// or z exceeds 65535 (more than 65535 batch-heads, say) is launched as one
/// row of CTAs, l->grid becoming (product, 1, 1), and *folded is set, for
/// fold_ids. False after an error at kernel when even the product exceeds
/// 2^31 - 1 CTAs.
static bool fit_grid(MlirOperation kernel, const char *name,
                     struct attn_tile_launch *l, int64_t dims[3],
                     bool *folded) {
  *folded = false;
  for (int i = 0; i < 3; ++i)
    dims[i] = l->grid[i];
  if (dims[0] <= GRID_X_MAX && dims[1] <= GRID_YZ_MAX &&
      dims[2] <= GRID_YZ_MAX)
    return true;
  int64_t total = dims[0];
  if (dims[1] > GRID_X_MAX / total || dims[1] * total > GRID_X_MAX ||
      dims[2] > GRID_X_MAX / (dims[1] * total))
    return attn_emit_errorf(kernel,
                            "'%s' needs a grid of %lld x %lld x %lld CTAs, "
                            "more than the 2^31 - 1 a launch can have; "
                            "choose a larger block-m",
                            name, (long long)dims[0], (long long)dims[1],
                            (long long)dims[2]);
  total *= dims[1] * dims[2];
  l->grid[0] = total, l->grid[1] = 1, l->grid[2] = 1;
  *folded = true;
  return true;
}

/// The CTA's three grid indices from a folded grid's one (bid, an index):
/// x = bid % dims[0], y = bid / dims[0] % dims[1], z = bid / (dims[0]
/// dims[1]).
static void fold_ids(struct attn_builder *b, const int64_t dims[3],
                     MlirValue ids[3]) {
  MlirValue bid = ids[0];
  MlirValue d0 = attn_b_index(b, dims[0]), d1 = attn_b_index(b, dims[1]);
  ids[0] = attn_b_remui(b, bid, d0);
  MlirValue rest = attn_b_divui(b, bid, d0);
  ids[1] = attn_b_remui(b, rest, d1);
  ids[2] = attn_b_divui(b, rest, d1);
}

static long shared_bytes(const struct attn_op_list *allocs) {
  long total = 0;
  for (size_t i = 0; i < allocs->n; ++i) {
    int64_t d[8];
    int rank = attn_static_shape(
        mlirValueGetType(mlirOperationGetResult(allocs->ops[i], 0)), d);
    long n = 4;
    for (int r = 0; r < rank; ++r)
      n *= (long)d[r];
    total += n;
  }
  return total;
}

static bool lower_kernel(MlirOperation kernel, MlirOperation gm) {
  if (attn_tile_matmul_is_fused(kernel))
    return attn_tile_reject_fused(kernel, "lower-tile-to-gpu");
  struct attn_tile_launch launch;
  MlirStringRef sym;
  if (!attn_tile_get_launch(kernel, &launch) ||
      !attn_attr_str(kernel, "sym_name", &sym))
    return false;
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  struct attn_op_list allocs = {0};
  attn_tile_collect_allocs(kernel, &allocs);
  long smem = shared_bytes(&allocs);
  if (allocs.failed) {
    free(allocs.ops);
    return attn_emit_errorf(kernel, "lower-tile-to-gpu: out of memory");
  }
  // f64 programs compute in f64 (attn_compute_type); this path's tiles
  // and loops are f32, so it refuses them rather than round them.
  for (size_t i = 0; i < allocs.n; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(allocs.ops[i], 0));
    if (mlirTypeIsAF64(mlirShapedTypeGetElementType(t))) {
      MlirOperation at = allocs.ops[i];
      free(allocs.ops);
      return attn_emit_errorf(at, "attn: f64 attention runs on the CPU path "
                                  "only (the GPU kernels compute in f32); "
                                  "compile '%s' for target cpu",
                              name);
    }
  }
  if (smem > STATIC_SMEM_LIMIT) {
    free(allocs.ops);
    return attn_emit_errorf(kernel,
                            "tiles of '%s' need %ld bytes of shared memory, "
                            "more than the %d a CTA can address statically; "
                            "choose a smaller block-m or block-n",
                            name, smem, STATIC_SMEM_LIMIT);
  }
  int64_t dims[3];
  bool folded;
  if (!fit_grid(kernel, name, &launch, dims, &folded)) {
    free(allocs.ops);
    return false;
  }
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirOperation func = build_shell(name, kernel, gm, &allocs, &launch);
  if (mlirOperationIsNull(func)) {
    free(allocs.ops);
    return false;
  }

  // Move the kernel body into the gpu.func, argument for argument.
  MlirBlock src = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirBlock dst = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nargs = mlirBlockGetNumArguments(src);
  for (intptr_t i = 0; i < nargs; ++i)
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(src, i),
                                  mlirBlockGetArgument(dst, i));
  for (size_t i = 0; i < allocs.n; ++i) {
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(allocs.ops[i], 0),
                                  mlirBlockGetArgument(dst, nargs + (intptr_t)i));
    mlirOperationDestroy(allocs.ops[i]);
  }
  free(allocs.ops);
  MlirOperation ret = mlirBlockGetTerminator(dst);
  MlirOperation src_ret = mlirBlockGetTerminator(src);
  for (MlirOperation it = mlirBlockGetFirstOperation(src);
       !mlirOperationEqual(it, src_ret);) {
    MlirOperation next = mlirOperationGetNextInBlock(it);
    mlirOperationMoveBefore(it, ret);
    it = next;
  }
  mlirOperationDestroy(kernel);

  // The CTA's position, first in the body.
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(func), loc);
  attn_builder_role(&b, "gpu.blocks");
  attn_builder_before(&b, mlirBlockGetFirstOperation(dst));
  MlirValue ids[3];
  if (folded) {
    ids[0] = attn_b_block_id(&b, ATTN_B_X);
    fold_ids(&b, dims, ids);
  } else {
    for (int i = 0; i < 3; ++i)
      ids[i] = attn_b_block_id(&b, (enum attn_b_dim)i);
  }
  if (!attn_builder_finish(&b))
    return false;
  attn_tile_replace_program_ids(func, ids);
  return attn_tile_lower_compute_ops(func, ATTN_TILE_GPU);
}

static bool lower_tile_to_gpu_run(MlirOperation module, const void *opts) {
  const struct gpu_options *o = opts;
  int min_ptx = chip_min_ptx(o->chip), ptx = min_ptx;
  if (o->features[0]) {
    sscanf(o->features, "+ptx%d", &ptx);
    if (ptx < min_ptx)
      return attn_emit_errorf(module, "%s needs PTX ISA %d.%d or newer, found "
                                      "features=%s",
                              o->chip, min_ptx / 10, min_ptx % 10,
                              o->features);
  }
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i) {
    if (!attn_tile_is_kernel(funcs.ops[i]))
      continue;
    MlirOperation gm = attn_gpu_kernels_module(
        module, o->chip, ptx, mlirOperationGetLocation(funcs.ops[i]));
    if (mlirOperationIsNull(gm)) {
      ok = attn_emit_errorf(module, "cannot create gpu.module");
      break;
    }
    ok = lower_kernel(funcs.ops[i], gm);
  }
  free(funcs.ops);
  // attn-tile's launch programs (tile.programs: the backward's f__grad)
  // go into the gpu.module's attn.programs, as lower-tile-to-hopper moves
  // them, so that the manifest names them; a module without any is left
  // as it was. The gpu.module is made for this chip when no kernel made
  // it.
  if (ok && !mlirAttributeIsNull(attn_attr_get(module, ATTN_TILE_PROGRAMS_ATTR))) {
    if (mlirOperationIsNull(attn_gpu_kernels_module(
            module, o->chip, ptx, mlirOperationGetLocation(module))))
      return attn_emit_errorf(module, "cannot create gpu.module");
    ok = attn_programs_move(module);
  }
  return ok;
}

const struct attn_pass_def lower_tile_to_gpu_pass = {
    .argument = "lower-tile-to-gpu",
    .description = "Lower tile kernels to gpu.func kernels in a gpu.module "
                   "with an NVVM target; tiles in shared memory",
    .options = gpu_options_help,
    .options_size = sizeof(struct gpu_options),
    .init_options = gpu_init,
    .set_option = gpu_set,
    .run = lower_tile_to_gpu_run,
};
