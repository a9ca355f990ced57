//===- attn_tile.c - attn-tile: attn.fused becomes a tile-level kernel ----===//
//
// A function whose body is one attn.fused op returning its result becomes a
// tile kernel in destination-passing style: tensors become memrefs, the
// output is a new last argument, and the body is a CTA program over a grid
// of (query blocks, batch * heads):
//
//   func.func @f(%q: memref<BxHxNxD>, %k, %v, %out) attributes
//       {tile.kernel, tile.grid = array<i64: ceil(N/BM), B*H, 1>,
//        tile.threads = 128 : i64} {
//     %qb = "tile.program_id"() {dim = 0 : i64} ...
//     "tile.load"(%q, %qt, %b, %h, %row)          // Q tile, once per CTA
//     "tile.rope"(%qt, %row) {...}                // when RoPE is fused
//     scf.for %j = 0 to %kblocks {                // online softmax over keys
//       "tile.load"(%k, %kt, ...) ; "tile.rope"(%kt, %col)
//       "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false}
//       "tile.mask"(%s, %row, %col) {causal = true, kv_len = N}
//       "tile.softmax_update"(%s, %m, %l, %acc) {scale = ...}
//       "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true}
//     }
//     "tile.normalize"(%acc, %l) ; "tile.store"(%acc, %out, ...)
//   }
//
// Causal programs stop the key loop at the diagonal, so fully masked key
// blocks are never visited. Options: block-m, block-n (0 picks the largest
// power of two up to 64 whose tiles fit 48 KiB, the static shared memory of
// the plain GPU path) and threads.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tile_options {
  long block_m, block_n, threads;
};

static const struct attn_pass_option tile_options_help[] = {
    {"block-m", "query rows per CTA (0: pick from the head dim)"},
    {"block-n", "key rows per loop step (0: pick from the head dim)"},
    {"threads", "threads per CTA (default 128)"},
    {NULL, NULL},
};

static void tile_init(void *opts) {
  struct tile_options *o = opts;
  o->block_m = 0;
  o->block_n = 0;
  o->threads = 128;
}

static bool tile_set(void *opts, const char *name, const char *value,
                     char *err, size_t errlen) {
  struct tile_options *o = opts;
  if (!strcmp(name, "block-m") || !strcmp(name, "block-n")) {
    long *dst = name[6] == 'm' ? &o->block_m : &o->block_n;
    if (!attn_parse_int_option(name, value, 0, 256, dst, err, errlen))
      return false;
    if (*dst & (*dst - 1)) {
      snprintf(err, errlen, "option '%s' must be 0 or a power of two, found %ld",
               name, *dst);
      return false;
    }
    return true;
  }
  if (!strcmp(name, "threads"))
    return attn_parse_int_option(name, value, 32, 1024, &o->threads, err,
                                 errlen);
  snprintf(err, errlen,
           "unknown option '%s' of pass 'attn-tile' (expected block-m, "
           "block-n or threads)",
           name);
  return false;
}

/// Bytes of f32 tiles one CTA holds: q, acc [bm, d]; k, v [bn, d]; s [bm, bn];
/// m, l [bm].
static long tile_bytes(long bm, long bn, long d, long dv) {
  return 4 * (bm * d + bm * dv + bn * d + bn * dv + bm * bn + 2 * bm);
}

static long pick_block(long d, long dv) {
  long b = 64;
  while (b > 8 && tile_bytes(b, b, d, dv) > 48 * 1024)
    b /= 2;
  return b;
}

static const char *elem_name(MlirType t) {
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF16(e) ? "f16" : mlirTypeIsABF16(e) ? "bf16" : "f32";
}

struct kernel_shape {
  int64_t q[4], k[4], v[4];
  const char *elem;
  struct attn_fused_config cfg;
  long bm, bn, threads;
};

static void print_memref(struct attn_strbuf *b, const int64_t d[4],
                         const char *elem) {
  attn_strbuf_printf(b, "memref<%lldx%lldx%lldx%lldx%s>", (long long)d[0],
                     (long long)d[1], (long long)d[2], (long long)d[3], elem);
}

static void print_rope(struct attn_strbuf *b, const char *tile,
                       const char *tile_ty, const char *pos,
                       const struct attn_rope_config *r) {
  attn_strbuf_printf(b,
                     "  \"tile.rope\"(%s, %s) {theta = %.17e : f64, "
                     "rotary_dim = %lld : i64, layout = \"%s\"} : (%s, index) "
                     "-> ()\n",
                     tile, pos, r->theta, (long long)r->rotary_dim,
                     attn_rope_layout_name(r->layout), tile_ty);
}

/// Writes the tile kernel for one attn.fused op as MLIR text.
static void emit_kernel(struct attn_strbuf *b, const char *name,
                        const int arg_role[3], const struct kernel_shape *s) {
  const int64_t *q = s->q, *k = s->k, *v = s->v;
  int64_t o[4] = {q[0], q[1], q[2], v[3]};
  long bm = s->bm, bn = s->bn;
  long grid_x = (long)((q[2] + bm - 1) / bm);
  long nkb = (long)((k[2] + bn - 1) / bn);
  char qt[64], kt[64], vt[64], st[64], at[64], rt[64];
  snprintf(qt, sizeof qt, "memref<%ldx%lldxf32>", bm, (long long)q[3]);
  snprintf(kt, sizeof kt, "memref<%ldx%lldxf32>", bn, (long long)k[3]);
  snprintf(vt, sizeof vt, "memref<%ldx%lldxf32>", bn, (long long)v[3]);
  snprintf(st, sizeof st, "memref<%ldx%ldxf32>", bm, bn);
  snprintf(at, sizeof at, "memref<%ldx%lldxf32>", bm, (long long)v[3]);
  snprintf(rt, sizeof rt, "memref<%ldxf32>", bm);
  const int64_t *shapes[3] = {q, k, v};
  static const char *roles[3] = {"q", "k", "v"};

  attn_strbuf_printf(b, "func.func @%s(", name);
  for (int i = 0; i < 3; ++i) {
    attn_strbuf_printf(b, "%%%s: ", roles[arg_role[i]]);
    print_memref(b, shapes[arg_role[i]], s->elem);
    attn_strbuf_printf(b, ", ");
  }
  attn_strbuf_printf(b, "%%out: ");
  print_memref(b, o, s->elem);
  attn_strbuf_printf(
      b,
      ") attributes {tile.kernel, tile.grid = array<i64: %ld, %lld, 1>, "
      "tile.threads = %ld : i64, tile.arg_names = [\"%s\", \"%s\", \"%s\", "
      "\"out\"], tile.attention = {causal = %s, scale = %.17e : f64",
      grid_x, (long long)(q[0] * q[1]), s->threads, roles[arg_role[0]],
      roles[arg_role[1]], roles[arg_role[2]], s->cfg.causal ? "true" : "false",
      s->cfg.scale);
  if (s->cfg.has_rope)
    attn_strbuf_printf(b,
                       ", rope = {layout = \"%s\", rotary_dim = %lld : i64, "
                       "theta = %.17e : f64}",
                       attn_rope_layout_name(s->cfg.rope.layout),
                       (long long)s->cfg.rope.rotary_dim, s->cfg.rope.theta);
  attn_strbuf_printf(b, "}} {\n");
  attn_strbuf_printf(
      b,
      "  %%qb = \"tile.program_id\"() {dim = 0 : i64} : () -> index\n"
      "  %%bh = \"tile.program_id\"() {dim = 1 : i64} : () -> index\n"
      "  %%c0 = arith.constant 0 : index\n"
      "  %%c1 = arith.constant 1 : index\n"
      "  %%heads = arith.constant %lld : index\n"
      "  %%group = arith.constant %lld : index\n"
      "  %%bm = arith.constant %ld : index\n"
      "  %%bn = arith.constant %ld : index\n"
      "  %%b = arith.divui %%bh, %%heads : index\n"
      "  %%h = arith.remui %%bh, %%heads : index\n"
      "  %%kh = arith.divui %%h, %%group : index\n"
      "  %%row = arith.muli %%qb, %%bm : index\n",
      (long long)q[1], (long long)(q[1] / k[1]), bm, bn);
  attn_strbuf_printf(b,
                     "  %%qt = \"tile.alloc\"() : () -> %s\n"
                     "  %%kt = \"tile.alloc\"() : () -> %s\n"
                     "  %%vt = \"tile.alloc\"() : () -> %s\n"
                     "  %%st = \"tile.alloc\"() : () -> %s\n"
                     "  %%acc = \"tile.alloc\"() : () -> %s\n"
                     "  %%m = \"tile.alloc\"() : () -> %s\n"
                     "  %%l = \"tile.alloc\"() : () -> %s\n",
                     qt, kt, vt, st, at, rt, rt);
  attn_strbuf_printf(b, "  \"tile.load\"(%%q, %%qt, %%b, %%h, %%row) : (");
  print_memref(b, q, s->elem);
  attn_strbuf_printf(b, ", %s, index, index, index) -> ()\n", qt);
  if (s->cfg.has_rope)
    print_rope(b, "%qt", qt, "%row", &s->cfg.rope);
  attn_strbuf_printf(
      b,
      "  \"tile.fill\"(%%acc) {value = 0.0 : f32} : (%s) -> ()\n"
      "  \"tile.fill\"(%%m) {value = 0xFF800000 : f32} : (%s) -> ()\n"
      "  \"tile.fill\"(%%l) {value = 0.0 : f32} : (%s) -> ()\n"
      "  %%nkb = arith.constant %ld : index\n",
      at, rt, rt, nkb);
  const char *bound = "%nkb";
  if (s->cfg.causal) {
    // Key blocks past the diagonal of this query block are fully masked.
    attn_strbuf_printf(b,
                       "  %%last = arith.addi %%row, %%bm : index\n"
                       "  %%diag = arith.ceildivui %%last, %%bn : index\n"
                       "  %%kend = arith.minui %%diag, %%nkb : index\n");
    bound = "%kend";
  }
  attn_strbuf_printf(b,
                     "  scf.for %%j = %%c0 to %s step %%c1 {\n"
                     "  %%col = arith.muli %%j, %%bn : index\n"
                     "  \"tile.load\"(%%k, %%kt, %%b, %%kh, %%col) : (",
                     bound);
  print_memref(b, k, s->elem);
  attn_strbuf_printf(b, ", %s, index, index, index) -> ()\n", kt);
  if (s->cfg.has_rope)
    print_rope(b, "%kt", kt, "%col", &s->cfg.rope);
  attn_strbuf_printf(b, "  \"tile.load\"(%%v, %%vt, %%b, %%kh, %%col) : (");
  print_memref(b, v, s->elem);
  attn_strbuf_printf(b, ", %s, index, index, index) -> ()\n", vt);
  attn_strbuf_printf(
      b,
      "  \"tile.mma\"(%%qt, %%kt, %%st) {transpose_b = true, accumulate = "
      "false} : (%s, %s, %s) -> ()\n"
      "  \"tile.mask\"(%%st, %%row, %%col) {causal = %s, kv_len = %lld : i64} "
      ": (%s, index, index) -> ()\n"
      "  \"tile.softmax_update\"(%%st, %%m, %%l, %%acc) {scale = %.17e : f64} "
      ": (%s, %s, %s, %s) -> ()\n"
      "  \"tile.mma\"(%%st, %%vt, %%acc) {transpose_b = false, accumulate = "
      "true} : (%s, %s, %s) -> ()\n"
      "  }\n",
      qt, kt, st, s->cfg.causal ? "true" : "false", (long long)k[2], st,
      s->cfg.scale, st, rt, rt, at, st, vt, at);
  attn_strbuf_printf(b,
                     "  \"tile.normalize\"(%%acc, %%l) : (%s, %s) -> ()\n"
                     "  \"tile.store\"(%%acc, %%out, %%b, %%h, %%row) : (%s, ",
                     at, rt, at);
  print_memref(b, o, s->elem);
  attn_strbuf_printf(b, ", index, index, index) -> ()\n  return\n}\n");
}

/// Finds the single attn.fused op of func and checks the body is only that
/// op and the return of its result. Returns a null op when func holds no
/// attn op; emits an error and sets *bad when the body is not supported.
static MlirOperation find_fused(MlirOperation func, bool *bad) {
  MlirOperation fused = {NULL}, other = {NULL}, stray = {NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return fused;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    bool is_attn = n.length > 5 && !strncmp(n.data, "attn.", 5);
    if (attn_op_is(op, ATTN_OP_FUSED) && mlirOperationIsNull(fused))
      fused = op;
    else if (is_attn && mlirOperationIsNull(other))
      other = op;
    else if (!is_attn && !attn_op_is(op, "func.return") &&
             mlirOperationIsNull(stray))
      stray = op;
  }
  if (!mlirOperationIsNull(other)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(other));
    *bad = true;
    if (attn_op_is(other, ATTN_OP_FUSED))
      attn_emit_errorf(other, "attn-tile supports one attn.fused op per "
                              "function");
    else
      attn_emit_errorf(other,
                       "cannot tile '%.*s': it is not part of an attn.fused "
                       "op (run attn-fuse first; a chain rope -> qk -> "
                       "scale/causal -> softmax -> pv fuses)",
                       (int)n.length, n.data);
  } else if (!mlirOperationIsNull(fused) && !mlirOperationIsNull(stray)) {
    *bad = true;
    attn_emit_errorf(stray, "attn-tile supports functions whose body is one "
                            "attn.fused op and the return of its result");
  }
  return fused;
}

/// Checks fused's operands are distinct arguments of func and that func
/// returns exactly its result; fills arg_role[i] with the role of arg i.
static bool check_signature(MlirOperation func, MlirOperation fused,
                            int arg_role[3]) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockGetNumArguments(body) != 3)
    return attn_emit_errorf(func, "attn-tile expects the function to take "
                                  "exactly q, k and v");
  for (int role = 0; role < 3; ++role) {
    MlirValue v = mlirOperationGetOperand(fused, role);
    if (!mlirValueIsABlockArgument(v) ||
        !mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      return attn_emit_errorf(fused, "operand %d of attn.fused must be a "
                                     "function argument",
                              role);
    int arg = (int)mlirBlockArgumentGetArgNumber(v);
    for (int r = 0; r < role; ++r)
      if (mlirValueEqual(mlirOperationGetOperand(fused, r), v))
        return attn_emit_errorf(fused, "q, k and v must be distinct "
                                       "arguments");
    arg_role[arg] = role;
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  if (mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0),
                      mlirOperationGetResult(fused, 0)))
    return attn_emit_errorf(func, "the function must return the result of "
                                  "attn.fused and nothing else");
  return true;
}

static bool tile_function(MlirOperation func, const struct tile_options *o) {
  bool bad = false;
  MlirOperation fused = find_fused(func, &bad);
  if (bad)
    return false;
  if (mlirOperationIsNull(fused))
    return true;
  int arg_role[3];
  if (!check_signature(func, fused, arg_role))
    return false;
  struct kernel_shape s;
  for (int i = 0; i < 3; ++i) {
    int64_t *dst = i == 0 ? s.q : i == 1 ? s.k : s.v;
    int64_t dims[8];
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, i)),
                      dims);
    memcpy(dst, dims, 4 * sizeof *dst);
  }
  s.elem = elem_name(mlirValueGetType(mlirOperationGetOperand(fused, 0)));
  if (!attn_fused_get_config(fused, &s.cfg))
    return attn_emit_errorf(fused, "malformed attn.fused attributes");
  long d = (long)s.q[3], dv = (long)s.v[3];
  s.bm = o->block_m ? o->block_m : pick_block(d, dv);
  s.bn = o->block_n ? o->block_n : pick_block(d, dv);
  s.threads = o->threads;
  MlirStringRef name;
  if (!attn_attr_str(func, "sym_name", &name))
    return attn_emit_errorf(func, "function has no name");
  char fname[256];
  snprintf(fname, sizeof fname, "%.*s", (int)name.length, name.data);
  struct attn_strbuf text = {0};
  emit_kernel(&text, fname, arg_role, &s);
  if (text.failed) {
    attn_strbuf_free(&text);
    return attn_emit_errorf(func, "attn-tile: out of memory");
  }
  MlirOperation kernel = attn_insert_parsed_before(
      func, text.buf, mlirOperationGetLocation(fused));
  attn_strbuf_free(&text);
  if (mlirOperationIsNull(kernel))
    return attn_emit_errorf(fused, "attn-tile produced a kernel MLIR cannot "
                                   "parse (a bug in attn)");
  mlirOperationDestroy(func);
  return true;
}

static bool attn_tile_run(MlirOperation module, const void *opts) {
  const struct tile_options *o = opts;
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    ok = tile_function(funcs.ops[i], o);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def attn_tile_pass = {
    .argument = "attn-tile",
    .alias = "tile",
    .description = "Turn each attn.fused op into a tile kernel: a grid of "
                   "query blocks with an online-softmax loop over key blocks",
    .options = tile_options_help,
    .options_size = sizeof(struct tile_options),
    .init_options = tile_init,
    .set_option = tile_set,
    .run = attn_tile_run,
};
