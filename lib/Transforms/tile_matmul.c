//===- tile_matmul.c - attn-tile: linalg.matmul becomes a GEMM tile kernel ===//
//
// Part of the attn-tile pass (attn_tile.c calls attn_tile_matmul on every
// function without attn ops). A function whose body is one linalg.matmul
// on static rank-2 tensors of one element type (bf16, f16 or f32), with
// the default (row-major, untransposed) indexing maps, becomes a tile
// kernel in destination-passing style:
//
//   func.func @f(%a: tensor<MxKxT>, %b: tensor<KxNxT>) -> tensor<MxNxT>
//     %init = linalg.fill(0.0, tensor.empty)  (or tensor.empty alone)
//     %r = linalg.matmul ins(%a, %b) outs(%init) ; return %r
//   or
//   func.func @f(%a: tensor<MxKxT>, %b: tensor<KxNxT>, %c: tensor<MxNxT>)
//     %r = linalg.matmul ins(%a, %b) outs(%c) ; return %r
//   ==>
//   func.func @f(%a: memref<MxKxT>, %b: memref<KxNxT>, %c: memref<MxNxT>)
//       attributes {tile.kernel, tile.grid = array<i64: ceil(M/BM),
//        ceil(N/BN), 1>, tile.threads = .., tile.arg_names = ["a", "b", "c"],
//        tile.matmul = {m = M, n = N, k = K, block_m = BM, block_n = BN,
//        block_k = BK, accumulate = false|true}} {
//     %pm = "tile.program_id"() {dim = 0} ; %pn = ... {dim = 1}
//     %row = %pm * BM ; %col = %pn * BN
//     %at = "tile.alloc" BMxBK ; %bt = BKxBN ; %ct = BMxBN   (f32)
//     "tile.fill"(%ct) {value = 0.0}       or  "tile.load"(%c, %ct, %row, %col)
//     scf.for %kb = 0 to ceil(K/BK) {
//       "tile.load"(%a, %at, %row, %kb*BK) ; "tile.load"(%b, %bt, %kb*BK, %col)
//       "tile.mma"(%at, %bt, %ct) {transpose_b = false, accumulate = true}
//     }
//     "tile.store"(%ct, %c, %row, %col)
//   }
//
// The kernel always takes (a, b, c). Without an init argument c is only
// written. With one (accumulate = true) c is read, then overwritten: the
// caller passes the buffer holding the function's third argument and gets
// the result in it. Products accumulate in f32 and are rounded once, when
// the tile is stored. Loads past the matrices' edges read zeros (which add
// nothing to the dot products) and stores past them are dropped, so M, N and
// K need not be multiples of the blocks.
//
// Block sizes: the options block-m, block-n, block-k; 0 picks them. For the
// plain paths, min(64, M) x min(64, N) output tiles and K steps of
// min(32, K) (rounded up to powers of two): at most 32 KiB of f32 tiles,
// within the 48 KiB of static shared memory of lower-tile-to-gpu. With
// kernel=hopper, 16-bit matmuls get 128-row tiles, K steps of 64 and 384
// threads: what lower-tile-to-hopper's GEMM takes. Their width is 256
// columns unless the output has too few such tiles to fill an H200's 132
// SMs; then 128 or 64, and where even those leave SMs idle and K is long,
// K in slices summed by a second kernel (tile.matmul's split_k;
// attn_tile_hopper_gemm_shape). Projections (attn_tile_build_gemm_kernel)
// and fused collectives keep 256, unsplit.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/comm/comm_dialect.h"
#include "lib/CostModel/cost_model.h"
#include "dialects/tile/tile_dialect.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//===-- Recognising the matmul --------------------------------------------===//

/// Emits an error at op when emit is set; returns -1 either way.
static int reject(bool emit, MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int reject(bool emit, MlirOperation op, const char *fmt, ...) {
  if (!emit)
    return -1;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  attn_emit_errorf(op, "%s", msg);
  return -1;
}

/// True for linalg ops that multiply matrices (matmul and its batched,
/// transposed and quantized relatives): attn-tile claims their functions.
static bool is_matmul_like(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (attn_str_eq(n, ATTN_OP_COMM_FUSED_MATMUL))
    return true;
  if (n.length < 7 || strncmp(n.data, "linalg.", 7))
    return false;
  for (size_t i = 7; i + 6 <= n.length; ++i)
    if (!strncmp(n.data + i, "matmul", 6))
      return true;
  return false;
}

/// True when mm has no indexing_maps or the default row-major ones:
/// (d0, d1, d2) -> (d0, d2), (d2, d1), (d0, d1).
static bool default_maps(MlirOperation mm) {
  MlirAttribute maps = attn_attr_get(mm, "indexing_maps");
  if (mlirAttributeIsNull(maps))
    return true;
  MlirContext ctx = mlirOperationGetContext(mm);
  static const int dims[3][2] = {{0, 2}, {2, 1}, {0, 1}};
  MlirAttribute want[3];
  for (int i = 0; i < 3; ++i) {
    MlirAffineExpr e[2] = {mlirAffineDimExprGet(ctx, dims[i][0]),
                           mlirAffineDimExprGet(ctx, dims[i][1])};
    want[i] = mlirAffineMapAttrGet(mlirAffineMapGet(ctx, 3, 0, 2, e));
  }
  return mlirAttributeEqual(maps, mlirArrayAttrGet(ctx, 3, want));
}

static bool is_arg(MlirValue v, MlirBlock body, intptr_t i) {
  return mlirValueIsABlockArgument(v) &&
         mlirBlockEqual(mlirBlockArgumentGetOwner(v), body) &&
         mlirBlockArgumentGetArgNumber(v) == i;
}

static MlirOperation producer(MlirValue v) {
  return mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v)
                                 : (MlirOperation){NULL};
}

/// Checks the matmul's init: a tensor.empty, or a linalg.fill of a 0.0
/// constant into one. Records the ops that belong to it in init_ops.
static int check_init(MlirOperation mm, MlirValue init, bool emit,
                      MlirOperation init_ops[3]) {
  MlirOperation def = producer(init);
  if (!mlirOperationIsNull(def) && attn_op_is(def, "tensor.empty")) {
    init_ops[0] = def;
    return 1;
  }
  if (mlirOperationIsNull(def) || !attn_op_is(def, "linalg.fill") ||
      mlirOperationGetNumOperands(def) != 2)
    return reject(emit, mm,
                  "the matmul's init must be the function's third argument, "
                  "a tensor.empty or a linalg.fill of 0.0 into one");
  MlirOperation empty = producer(mlirOperationGetOperand(def, 1));
  MlirOperation cst = producer(mlirOperationGetOperand(def, 0));
  if (mlirOperationIsNull(empty) || !attn_op_is(empty, "tensor.empty"))
    return reject(emit, def,
                  "the linalg.fill that initialises the matmul "
                  "must fill a tensor.empty");
  MlirAttribute v =
      mlirOperationIsNull(cst) || !attn_op_is(cst, "arith.constant")
          ? (MlirAttribute){NULL}
          : attn_attr_get(cst, "value");
  if (mlirAttributeIsNull(v) || !mlirAttributeIsAFloat(v))
    return reject(emit, def,
                  "the linalg.fill that initialises the matmul "
                  "must fill a float constant");
  double x = mlirFloatAttrGetValueDouble(v);
  if (x != 0.0)
    return reject(emit, def,
                  "a matmul initialised to %g is not supported (expected a "
                  "fill of 0.0, or the init as the function's third argument)",
                  x);
  init_ops[0] = def;
  init_ops[1] = empty;
  init_ops[2] = cst;
  return 1;
}

/// Checks a, b and the result are static rank-2 tensors of one supported
/// element type with agreeing shapes; fills m, n, k and elem.
static int check_types(MlirOperation mm, bool emit,
                       struct attn_matmul_info *out) {
  MlirType t[3] = {mlirValueGetType(mlirOperationGetOperand(mm, 0)),
                   mlirValueGetType(mlirOperationGetOperand(mm, 1)),
                   mlirValueGetType(mlirOperationGetResult(mm, 0))};
  static const char *const what[3] = {"a", "b", "the result"};
  int64_t d[3][8];
  char ty[128], ty2[64], ty3[64];
  for (int i = 0; i < 3; ++i)
    if (!mlirTypeIsARankedTensor(t[i]) || attn_static_shape(t[i], d[i]) != 2)
      return reject(emit, mm,
                    "attn-tile takes a linalg.matmul on static rank-2 "
                    "tensors; %s is %s",
                    what[i], attn_type_str(t[i], ty, sizeof ty));
  MlirType e[3];
  for (int i = 0; i < 3; ++i)
    e[i] = mlirShapedTypeGetElementType(t[i]);
  if (!mlirTypeEqual(e[0], e[1]) || !mlirTypeEqual(e[0], e[2]))
    return reject(emit, mm,
                  "attn-tile takes a linalg.matmul with one element type, "
                  "found %s x %s -> %s",
                  attn_type_str(e[0], ty, sizeof ty),
                  attn_type_str(e[1], ty2, sizeof ty2),
                  attn_type_str(e[2], ty3, sizeof ty3));
  if (!mlirTypeIsABF16(e[0]) && !mlirTypeIsAF16(e[0]) && !mlirTypeIsAF32(e[0]))
    return reject(emit, mm,
                  "attn-tile takes a linalg.matmul on bf16, f16 or f32, "
                  "found %s",
                  attn_type_str(e[0], ty, sizeof ty));
  int64_t m = d[0][0], k = d[0][1], n = d[1][1];
  if (d[1][0] != k || d[2][0] != m || d[2][1] != n)
    return reject(emit, mm,
                  "matmul shapes do not agree: %lldx%lld times %lldx%lld "
                  "gives %lldx%lld",
                  (long long)m, (long long)k, (long long)d[1][0], (long long)n,
                  (long long)d[2][0], (long long)d[2][1]);
  if (m < 1 || n < 1 || k < 1)
    return reject(emit, mm,
                  "the matmul has an empty dimension (%lldx%lldx%lld)",
                  (long long)m, (long long)n, (long long)k);
  out->m = m;
  out->n = n;
  out->k = k;
  out->elem = e[0];
  return 1;
}

/// comm.fused_matmul (its verifier checked the shapes): a, b and the result
/// are static rank-2 tensors of bf16 or f16; one rank's GEMM is m x n x k.
static int check_fused(MlirOperation mm, bool emit,
                       struct attn_matmul_info *out) {
  int64_t a[8], b[8], c[8];
  MlirType at = mlirValueGetType(mlirOperationGetOperand(mm, 0));
  if (mlirOperationGetNumOperands(mm) != 3 ||
      attn_static_shape(at, a) != 2 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(mm, 1)), b) !=
          2 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetResult(mm, 0)), c) !=
          2)
    return reject(emit, mm, "malformed comm.fused_matmul");
  MlirType e = mlirShapedTypeGetElementType(at);
  char ty[64];
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e))
    return reject(emit, mm,
                  "a matmul fused with a collective runs on bf16 or f16 "
                  "(the Hopper kernel), found %s",
                  attn_type_str(e, ty, sizeof ty));
  int64_t world = 0;
  attn_attr_i64(mm, "world_size", &world);
  MlirStringRef pat = {"", 0};
  attn_attr_str(mm, "pattern", &pat);
  out->fused = true;
  out->world = world;
  out->elem = e;
  out->k = a[1];
  out->n = b[1];
  out->a_rows = a[0];
  out->c_rows = c[0];
  out->m = attn_str_eq(pat, "all_gather_matmul") ? c[0] : a[0];
  return 1;
}

/// The program-level collectives of the comm dialect (not its tile-level
/// ops, nor comm.fused_matmul).
static bool is_collective(MlirOperation op) {
  static const char *const names[] = {"comm.all_reduce", "comm.all_gather",
                                      "comm.reduce_scatter", "comm.all_to_all"};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (attn_op_is(op, names[i]))
      return true;
  return false;
}

/// Walk callback: stores the first collective in *(MlirOperation *)user.
static MlirWalkResult find_collective(MlirOperation op, void *user) {
  if (!is_collective(op))
    return MlirWalkResultAdvance;
  *(MlirOperation *)user = op;
  return MlirWalkResultInterrupt;
}

int attn_matmul_find(MlirOperation func, struct attn_matmul_info *out,
                     bool emit) {
  memset(out, 0, sizeof *out);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return 0;
  MlirOperation mm = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!is_matmul_like(op))
      continue;
    if (!mlirOperationIsNull(mm))
      return reject(emit, op,
                    "attn-tile supports one linalg.matmul per "
                    "function");
    mm = op;
  }
  char name[64];
  if (mlirOperationIsNull(mm)) {
    // A collective with no matmul to fuse with has no kernel of its own.
    MlirOperation lone = {NULL};
    mlirOperationWalk(func, find_collective, &lone, MlirWalkPreOrder);
    if (mlirOperationIsNull(lone))
      return 0;
    attn_op_name(lone, name, sizeof name);
    return reject(emit, lone,
                  "'%s' has no linalg.matmul to fuse with: attn compiles a "
                  "collective only into the kernel of the GEMM that produces "
                  "or consumes it (comm-schedule); for one on its own, call "
                  "NCCL%s",
                  name,
                  attn_op_is(lone, "comm.all_to_all")
                      ? " (attnrt has no all_to_all)"
                      : " through attnrt (attnrt_comm_all_reduce, "
                        "attnrt_comm_all_gather, attnrt_comm_reduce_scatter)");
  }
  bool fused = attn_op_is(mm, ATTN_OP_COMM_FUSED_MATMUL);
  if (!fused && !attn_op_is(mm, "linalg.matmul"))
    return reject(emit, mm,
                  "cannot tile '%s': attn-tile takes linalg.matmul only (no "
                  "batched, transposed or quantized variants)",
                  attn_op_name(mm, name, sizeof name));
  if (!fused && !default_maps(mm))
    return reject(emit, mm,
                  "cannot tile a linalg.matmul with non-default indexing_maps "
                  "(transposed or broadcast operands)");
  if (mlirOperationGetNumOperands(mm) != 3 ||
      mlirOperationGetNumResults(mm) != 1)
    return reject(emit, mm,
                  "attn-tile takes a linalg.matmul on tensors "
                  "(two inputs, one init, one result)");
  if (fused ? check_fused(mm, emit, out) < 0 : check_types(mm, emit, out) < 0)
    return -1;
  intptr_t nargs = mlirBlockGetNumArguments(body);
  if (!is_arg(mlirOperationGetOperand(mm, 0), body, 0) ||
      !is_arg(mlirOperationGetOperand(mm, 1), body, 1))
    return reject(emit, mm,
                  "the matmul's a and b must be the function's "
                  "first and second arguments");
  MlirOperation init_ops[3] = {{NULL}, {NULL}, {NULL}};
  MlirValue init = mlirOperationGetOperand(mm, 2);
  out->accumulate = is_arg(init, body, 2);
  if (fused && out->accumulate)
    return reject(emit, mm,
                  "a matmul fused with a collective does not add to its "
                  "init: initialise it with a linalg.fill of 0.0 or a "
                  "tensor.empty");
  if (!out->accumulate && check_init(mm, init, emit, init_ops) < 0)
    return -1;
  if (nargs != (out->accumulate ? 3 : 2))
    return reject(emit, func,
                  out->accumulate
                      ? "a matmul function takes exactly (a, b, c)"
                      : "a matmul function takes exactly (a, b), or (a, b, "
                        "c) with c the matmul's init");
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char opname[64];
    if (!strncmp(attn_op_name(op, opname, sizeof opname), "comm.", 5) &&
        !mlirOperationEqual(op, mm))
      return reject(emit, op,
                    "'%s' must first be fused with the matmul by "
                    "comm-schedule (attn-translate and attn_compile do so "
                    "for sm_90a); a collective has no CPU or plain-GPU "
                    "lowering",
                    opname);
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  if (mlirOperationIsNull(ret) || !attn_op_is(ret, "func.return") ||
      mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0),
                      mlirOperationGetResult(mm, 0)))
    return reject(emit, mlirOperationIsNull(ret) ? func : ret,
                  "the function must return the result of linalg.matmul and "
                  "nothing else");
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    bool known = mlirOperationEqual(op, mm) || mlirOperationEqual(op, ret);
    for (int i = 0; i < 3; ++i)
      known |= !mlirOperationIsNull(init_ops[i]) &&
               mlirOperationEqual(op, init_ops[i]);
    if (!known)
      return reject(emit, op,
                    "attn-tile supports functions whose body is "
                    "one linalg.matmul (with its init) and the "
                    "return of its result");
  }
  out->matmul = mm;
  return 1;
}

static MlirWalkResult find_matmul_like(MlirOperation op, void *user) {
  if (!is_matmul_like(op) && !is_collective(op))
    return MlirWalkResultAdvance;
  *(bool *)user = true;
  return MlirWalkResultInterrupt;
}

bool attn_has_matmul(MlirOperation module) {
  bool found = false;
  mlirOperationWalk(module, find_matmul_like, &found, MlirWalkPreOrder);
  return found;
}

//===-- The kernel --------------------------------------------------------===//

struct gemm {
  struct attn_matmul_info mm;
  long bm, bn, bk, threads;
  int split_k; ///< kernel=hopper: K slices (recorded in tile.matmul when > 1)
};

/// The smallest power of two >= x, at most cap.
static long pow2_at_most(int64_t x, long cap) {
  long p = 1;
  while (p < cap && p < x)
    p *= 2;
  return p;
}

void attn_tile_hopper_gemm_shape(const struct attn_matmul_info *mm, int width,
                                 int *block_n, int *split_k) {
  int64_t m = mm->m, n = mm->n, k = mm->k;
  int sms = attn_cost_gpu_lookup(ATTN_COST_DEFAULT_GPU, NULL, 0)->sms;
  bool split = !mm->accumulate;
  // Time ~ waves x K steps per unit x the time of one K step of a tile.
  // Per K step a 128 x bn tile reads 16 KiB of A and bn x 128 bytes of B
  // from L2 and multiplies 128 x bn x 64: assuming about 110 GB/s of L2
  // reads per SM and 7.5 TFLOP/s of tensor cores per SM (989 / 132), 0.56
  // us at 256 (the tensor cores), 0.30 at 128 and 0.22 at 64 (the loads);
  // per 256: 1, 0.54, 0.39. (Measured: 0.21 us per step at 64, 512 x 512 x
  // 8192 unsplit, one wave.)
  // Splitting K into s slices runs s units per tile of nk / s steps each,
  // and costs a second kernel (its launch and latency, about 3.4 us: 6
  // wide K steps) and the f32 partials' traffic (s m n x 8 bytes written
  // and read, assuming about 2.5 TB/s). The two split costs were fitted to
  // an H200's times of every width and slice count on 8 shapes
  // (bench/RESULTS.md), where the rule picks
  // the fastest within 0.001 ms at all but one (4096 x 128 x 4096: 0.018
  // ms against 0.017). Only outputs whose tiles do not fill the SMs are
  // split, each slice keeping at least 16 K steps; any count that divides
  // the K steps (768 x 768 x 12288: 36 tiles x 3 slices fill 108 SMs, and
  // ran 1.25-1.3x faster than 2 slices).
  static const struct {
    int bn;
    double step;
  } widths[] = {{256, 1.0}, {128, 0.54}, {64, 0.39}};
  // In wide K steps (0.56 us): the launch, and bytes moved per step.
  const double launch_cost = 6, bytes_per_step = 2.5e12 * 0.56e-6;
  int64_t rows = (m + ATTN_TILE_HOPPER_GEMM_BM - 1) / ATTN_TILE_HOPPER_GEMM_BM;
  int64_t nk = (k + ATTN_TILE_HOPPER_GEMM_BK - 1) / ATTN_TILE_HOPPER_GEMM_BK;
  double best_cost = -1;
  *block_n = width ? width : ATTN_TILE_HOPPER_GEMM_BN;
  *split_k = 1;
  for (size_t i = 0; i < sizeof widths / sizeof *widths; ++i) {
    if (width && widths[i].bn != width)
      continue;
    int64_t tiles = rows * ((n + widths[i].bn - 1) / widths[i].bn);
    for (int s = 1; s <= 64; ++s) {
      if (s > 1 && (!split || tiles >= sms || nk / s < 16))
        break;
      if (nk % s)
        continue;
      double waves = (double)((tiles * s + sms - 1) / sms);
      double cost = waves * (double)(nk / s) * widths[i].step;
      if (s > 1)
        cost += launch_cost + (double)s * m * n * 8 / bytes_per_step;
      if (best_cost < 0 || cost < best_cost) {
        *block_n = widths[i].bn;
        *split_k = s;
        best_cost = cost;
      }
    }
  }
}

/// Block sizes and threads: the options, else the defaults of the file
/// comment (`plain`: a matmul of its own, whose Hopper tile width and K
/// slices follow its shape).
static void pick_blocks(struct gemm *g, const struct attn_tile_options *o,
                        bool plain) {
  bool hopper = o->hopper && !mlirTypeIsAF32(g->mm.elem);
  g->split_k = 1;
  g->bm = o->block_m ? o->block_m
          : hopper   ? ATTN_TILE_HOPPER_GEMM_BM
                     : pow2_at_most(g->mm.m, 64);
  if (hopper && plain && (!o->block_m || o->block_m == 128)) {
    int bn;
    attn_tile_hopper_gemm_shape(&g->mm, (int)o->block_n, &bn, &g->split_k);
    g->bn = bn; // o->block_n when given
  } else {
    g->bn = o->block_n ? o->block_n
            : hopper   ? ATTN_TILE_HOPPER_GEMM_BN
                       : pow2_at_most(g->mm.n, 64);
  }
  g->bk = o->block_k ? o->block_k
          : hopper   ? ATTN_TILE_HOPPER_GEMM_BK
                     : pow2_at_most(g->mm.k, 32);
  g->threads = o->threads ? o->threads : hopper ? 384 : 128;
}

/// A memref<rows x cols x elem>.
static MlirType matrix(struct attn_builder *b, int64_t rows, int64_t cols,
                       MlirType elem) {
  return attn_b_memref(b, 2, (int64_t[]){rows, cols}, elem);
}

/// tile.matmul's sizes; extra[0..nextra) follow them.
static MlirAttribute matmul_dict(struct attn_builder *b, const struct gemm *g,
                                 int64_t block_m, int64_t block_n,
                                 int64_t block_k, intptr_t nextra,
                                 const MlirNamedAttribute *extra) {
  MlirNamedAttribute d[7 + 4];
  const char *keys[6] = {"m", "n", "k", "block_m", "block_n", "block_k"};
  int64_t vals[6] = {g->mm.m, g->mm.n, g->mm.k, block_m, block_n, block_k};
  int n = 0;
  for (int i = 0; i < 6; ++i)
    d[n++] = attn_b_named(b, keys[i], attn_b_attr_i64(b, vals[i]));
  d[n++] =
      attn_b_named(b, "accumulate", attn_b_attr_bool(b, g->mm.accumulate));
  for (intptr_t i = 0; i < nextra && n < 7 + 4; ++i)
    d[n++] = extra[i];
  return mlirDictionaryAttrGet(b->ctx, n, d);
}

/// Opens @name(a, b, c) of types t with the launch attributes and matmul.
static void open_kernel(struct attn_builder *b, struct attn_b_func *f,
                        const char *name, const MlirType t[3],
                        const int64_t grid[3], int64_t threads,
                        MlirAttribute matmul) {
  static const char *const names[3] = {"a", "b", "c"};
  MlirNamedAttribute attrs[] = {
      attn_b_named(b, ATTN_TILE_KERNEL_ATTR, attn_b_attr_unit(b)),
      attn_b_named(b, ATTN_TILE_GRID_ATTR, attn_b_attr_i64s(b, 3, grid)),
      attn_b_named(b, ATTN_TILE_THREADS_ATTR, attn_b_attr_i64(b, threads)),
      attn_b_named(b, ATTN_TILE_ARG_NAMES_ATTR, attn_b_attr_strs(b, 3, names)),
      attn_b_named(b, ATTN_TILE_MATMUL_ATTR, matmul),
  };
  attn_builder_role(b, "tile.kernel");
  attn_b_func_open(b, f, name, 3, t, 0, NULL, sizeof attrs / sizeof *attrs,
                   attrs);
}

/// Builds the kernel of the file comment at b's insertion point;
/// extra[0..nextra) are added to the tile.matmul dictionary. Returns its
/// func.func (null when that could not be made; check b).
static MlirOperation build_gemm(struct attn_builder *b, const char *name,
                       const struct gemm *g, intptr_t nextra,
                       const MlirNamedAttribute *extra) {
  int64_t m = g->mm.m, n = g->mm.n, k = g->mm.k;
  MlirType t[3] = {matrix(b, m, k, g->mm.elem), matrix(b, k, n, g->mm.elem),
                   matrix(b, m, n, g->mm.elem)};
  MlirType at = matrix(b, g->bm, g->bk, b->t.f32);
  MlirType bt = matrix(b, g->bk, g->bn, b->t.f32);
  MlirType ct = matrix(b, g->bm, g->bn, b->t.f32);
  int64_t grid[3] = {(m + g->bm - 1) / g->bm, (n + g->bn - 1) / g->bn, 1};
  struct attn_b_func f;
  open_kernel(b, &f, name, t, grid, g->threads,
              matmul_dict(b, g, g->bm, g->bn, g->bk, nextra, extra));
  MlirValue a = attn_b_func_arg(&f, 0), bm = attn_b_func_arg(&f, 1),
            c = attn_b_func_arg(&f, 2);
  attn_builder_role(b, "tile.prologue");
  MlirValue pm = attn_tile_build_program_id(b, 0);
  MlirValue pn = attn_tile_build_program_id(b, 1);
  MlirValue c0 = attn_b_index(b, 0);
  MlirValue c1 = attn_b_index(b, 1);
  MlirValue bm_c = attn_b_index(b, g->bm);
  MlirValue bn_c = attn_b_index(b, g->bn);
  MlirValue bk_c = attn_b_index(b, g->bk);
  MlirValue nk = attn_b_index(b, (k + g->bk - 1) / g->bk);
  MlirValue row = attn_b_muli(b, pm, bm_c);
  MlirValue col = attn_b_muli(b, pn, bn_c);
  MlirValue a_tile = attn_tile_build_alloc(b, at);
  MlirValue b_tile = attn_tile_build_alloc(b, bt);
  MlirValue c_tile = attn_tile_build_alloc(b, ct);
  MlirValue rc[] = {row, col};
  if (g->mm.accumulate)
    attn_tile_build_load(b, c, c_tile, 2, rc);
  else
    attn_tile_build_fill(b, c_tile, 0.0);
  attn_builder_role(b, "tile.k_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, c0, nk, c1, 0, NULL);
  MlirValue kk = attn_b_muli(b, loop.iv, bk_c);
  attn_tile_build_load(b, a, a_tile, 2, (MlirValue[]){row, kk});
  attn_tile_build_load(b, bm, b_tile, 2, (MlirValue[]){kk, col});
  attn_tile_build_mma(b, a_tile, b_tile, c_tile, false, true);
  attn_b_for_close(b, &loop, 0, NULL);
  attn_builder_role(b, "tile.epilogue");
  attn_tile_build_store(b, c_tile, c, 2, rc);
  attn_b_func_close(b, &f, 0, NULL);
  return f.op;
}

/// A matmul fused with a collective: the kernel's body is empty (no tile
/// op spells the communication) and tile.matmul's `comm` says what it
/// computes; only lower-tile-to-hopper lowers it. Blocks are the op's
/// tile_m x tile_n with K steps of 64. Returns the func.func, as build_gemm.
static MlirOperation build_fused(struct attn_builder *b, const char *name,
                        const struct gemm *g) {
  MlirOperation op = g->mm.matmul;
  int64_t tile_m = 128, tile_n = 256, comm = 0, compute = 0;
  attn_attr_i64(op, "tile_m", &tile_m);
  attn_attr_i64(op, "tile_n", &tile_n);
  attn_attr_i64(op, "comm_sms", &comm);
  attn_attr_i64(op, "compute_sms", &compute);
  MlirStringRef pat = {"", 0}, split = {"static", 6};
  attn_attr_str(op, "pattern", &pat);
  attn_attr_str(op, "split", &split);
  int64_t n = g->mm.n, k = g->mm.k;
  MlirType t[3] = {matrix(b, g->mm.a_rows, k, g->mm.elem),
                   matrix(b, k, n, g->mm.elem),
                   matrix(b, g->mm.c_rows, n, g->mm.elem)};
  MlirNamedAttribute c[] = {
      attn_b_named(b, "pattern", mlirStringAttrGet(b->ctx, pat)),
      attn_b_named(b, "world_size", attn_b_attr_i64(b, g->mm.world)),
      attn_b_named(b, "comm_sms", attn_b_attr_i64(b, comm)),
      attn_b_named(b, "compute_sms", attn_b_attr_i64(b, compute)),
      attn_b_named(b, "split", mlirStringAttrGet(b->ctx, split)),
  };
  MlirNamedAttribute extra = attn_b_named(
      b, "comm", mlirDictionaryAttrGet(b->ctx, sizeof c / sizeof *c, c));
  int64_t grid[3] = {comm + compute, 1, 1};
  struct attn_b_func f;
  open_kernel(b, &f, name, t, grid, 384,
              matmul_dict(b, g, tile_m, tile_n, 64, 1, &extra));
  attn_b_func_close(b, &f, 0, NULL);
  return f.op;
}

bool attn_tile_matmul(MlirOperation func, const struct attn_tile_options *o) {
  struct gemm g;
  memset(&g, 0, sizeof g);
  int found = attn_matmul_find(func, &g.mm, true);
  if (found <= 0)
    return found == 0;
  pick_blocks(&g, o, !g.mm.fused);
  MlirStringRef sym;
  if (!attn_attr_str(func, "sym_name", &sym))
    return attn_emit_errorf(func, "function has no name");
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(g.mm.matmul));
  attn_builder_before(&b, func);
  MlirOperation kernel;
  if (g.mm.fused) {
    kernel = build_fused(&b, name, &g);
  } else {
    MlirNamedAttribute split =
        attn_b_named(&b, "split_k", attn_b_attr_i64(&b, g.split_k));
    kernel = build_gemm(&b, name, &g, g.split_k > 1 ? 1 : 0, &split);
  }
  if (!attn_builder_finish(&b)) {
    if (!mlirOperationIsNull(kernel))
      mlirOperationDestroy(kernel);
    return false;
  }
  mlirOperationDestroy(func);
  return true;
}

MlirOperation attn_tile_build_gemm_kernel(struct attn_builder *b,
                                          const char *name, MlirType elem,
                                          int64_t m, int64_t n, int64_t k,
                                          const struct attn_tile_options *o,
                                          intptr_t nextra,
                                          const MlirNamedAttribute *extra) {
  struct gemm g;
  memset(&g, 0, sizeof g);
  g.mm.m = m;
  g.mm.n = n;
  g.mm.k = k;
  g.mm.elem = elem;
  pick_blocks(&g, o, false);
  return build_gemm(b, name, &g, nextra, extra);
}
