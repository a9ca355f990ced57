//===- attn_builder.h - Builds IR through the MLIR C API ------------------===//
//
// The one way attn's passes and kernel writers make IR: an insertion point
// and a current location, ops made through mlirOperationState and returning
// MlirValue, typed helpers for the arith, math, scf, func, memref, llvm, nvvm
// and gpu ops the kernels use, and structured scf.for / scf.if / func.func
// helpers whose regions are closed by the same helper that yields, so that
// none is left open. Types are made once per builder and reused.
//
// Every op carries a location: the source op's, named by the kernel role that
// made it (`"softmax"(file:line:col)`, attn_builder_role), so that a
// diagnostic, or a line of PTX with debug info, leads back to both.
//
// Errors: a helper given a null value, or an op MLIR refuses to create,
// marks the builder failed with an error diagnostic at the current location
// and returns a null value; later helpers given that null value do nothing.
// Writers build on and check attn_builder_finish once at the end.
//
//   struct attn_builder b;
//   attn_builder_init(&b, ctx, mlirOperationGetLocation(fused));
//   attn_builder_before(&b, func);
//   attn_builder_role(&b, "softmax");
//   MlirValue x = attn_b_addf(&b, y, z);
//   struct attn_b_for loop;
//   attn_b_for_open(&b, &loop, lo, hi, step, 1, &acc);
//   MlirValue next = attn_b_mulf(&b, loop.args[0], x);
//   attn_b_for_close(&b, &loop, 1, &next);   // yields; loop.results[0]
//   if (!attn_builder_finish(&b)) return false;
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BUILDER_H
#define ATTN_BUILDER_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Loop-carried values and results of one scf.for / scf.if.
#define ATTN_B_MAX_VALUES 256

/// The types a kernel uses, made once.
struct attn_b_types {
  MlirType i1, i8, i16, i32, i64, index, f16, bf16, f32, f64;
  MlirType ptr;        ///< !llvm.ptr
  MlirType ptr_shared; ///< !llvm.ptr<3>
};

struct attn_builder {
  MlirContext ctx;
  MlirBlock block;      ///< where ops go
  MlirOperation anchor; ///< before this op of block (null: at its end)
  MlirLocation src;     ///< the source op's location
  MlirLocation loc;     ///< what new ops get: src, named by the role
  int depth;            ///< regions open (attn_b_*_open without _close)
  bool failed;          ///< an op could not be made (diagnosed)
  struct attn_b_types t;
};

//===-- Insertion point and location -------------------------------------===//

/// Starts a builder of ctx whose ops are located at src (no insertion
/// point yet: set one before building).
void attn_builder_init(struct attn_builder *b, MlirContext ctx,
                       MlirLocation src);

/// New ops go at the end of block / just before op.
void attn_builder_at_end(struct attn_builder *b, MlirBlock block);
void attn_builder_before(struct attn_builder *b, MlirOperation op);

/// New ops are located at src named role (NULL: src itself).
void attn_builder_role(struct attn_builder *b, const char *role);

/// Marks b failed with an error diagnostic saying what, at its location
/// (only the first failure is reported: it is the one to read).
void attn_builder_fail(struct attn_builder *b, const char *what);

/// True when every op was built and every region closed; otherwise false
/// after an error diagnostic (one for regions left open).
bool attn_builder_finish(struct attn_builder *b);

//===-- Attributes and types ----------------------------------------------===//

MlirNamedAttribute attn_b_named(struct attn_builder *b, const char *name,
                                MlirAttribute value);
MlirAttribute attn_b_attr_i64(struct attn_builder *b, int64_t v);
MlirAttribute attn_b_attr_i32(struct attn_builder *b, int32_t v);
MlirAttribute attn_b_attr_index(struct attn_builder *b, int64_t v);
MlirAttribute attn_b_attr_f64(struct attn_builder *b, double v);
MlirAttribute attn_b_attr_f32(struct attn_builder *b, float v);
MlirAttribute attn_b_attr_bool(struct attn_builder *b, bool v);
MlirAttribute attn_b_attr_str(struct attn_builder *b, const char *s);
MlirAttribute attn_b_attr_unit(struct attn_builder *b);
MlirAttribute attn_b_attr_type(struct attn_builder *b, MlirType t);
/// array<i64: v...> (a DenseI64ArrayAttr) and [s...] of strings.
MlirAttribute attn_b_attr_i64s(struct attn_builder *b, intptr_t n,
                               const int64_t *v);
MlirAttribute attn_b_attr_strs(struct attn_builder *b, intptr_t n,
                               const char *const *s);

/// memref<shape x elem> with the identity layout in the default memory
/// space.
MlirType attn_b_memref(struct attn_builder *b, intptr_t rank,
                       const int64_t *shape, MlirType elem);

//===-- Ops ---------------------------------------------------------------===//

/// Makes op `name` at the insertion point: nres results of types res, the
/// operands, the attributes and nregions empty regions (no block: append
/// the blocks they need, as attn_b_for_open does; attn_b_region_block then
/// returns a region's first). Null after a diagnostic when an operand is
/// null or MLIR refuses the op.
MlirOperation attn_b_op(struct attn_builder *b, const char *name,
                        intptr_t nres, const MlirType *res, intptr_t nopd,
                        const MlirValue *opd, intptr_t nattr,
                        const MlirNamedAttribute *attrs, intptr_t nregions);
/// The same, one result of type res: that result.
MlirValue attn_b_op1(struct attn_builder *b, const char *name, MlirType res,
                     intptr_t nopd, const MlirValue *opd, intptr_t nattr,
                     const MlirNamedAttribute *attrs);
/// Result i of op (null for a null op).
MlirValue attn_b_result(MlirOperation op, intptr_t i);
/// The entry block of region i of op.
MlirBlock attn_b_region_block(MlirOperation op, intptr_t i);

//===-- Constants and arithmetic ------------------------------------------===//

/// arith.constant of an index, i32, i64, f32 or f64.
MlirValue attn_b_index(struct attn_builder *b, int64_t v);
MlirValue attn_b_i32(struct attn_builder *b, int64_t v);
MlirValue attn_b_i64(struct attn_builder *b, int64_t v);
MlirValue attn_b_f32(struct attn_builder *b, float v);
MlirValue attn_b_f64(struct attn_builder *b, double v);
/// arith.constant of v in the compute type t: f64 as is, otherwise f32 of
/// (float)v (exactly attn_b_f32's).
MlirValue attn_b_float(struct attn_builder *b, MlirType t, double v);
/// arith.constant holding value (of its own type).
MlirValue attn_b_constant(struct attn_builder *b, MlirAttribute value);

/// A two-operand op whose result has x's type (arith.addi, math.powf ...).
MlirValue attn_b_binary(struct attn_builder *b, const char *name, MlirValue x,
                        MlirValue y);
/// A one-operand op whose result has x's type (math.exp2, arith.negf ...).
MlirValue attn_b_unary(struct attn_builder *b, const char *name, MlirValue x);

MlirValue attn_b_addi(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_subi(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_muli(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_divui(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_remui(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_minui(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_maxui(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_addf(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_subf(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_mulf(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_divf(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_maxnumf(struct attn_builder *b, MlirValue x, MlirValue y);
/// Bitwise ops, the left shift and the unsigned ceiling division, of two
/// integers of one type.
MlirValue attn_b_andi(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_ori(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_xori(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_shli(struct attn_builder *b, MlirValue x, MlirValue y);
MlirValue attn_b_ceildivui(struct attn_builder *b, MlirValue x, MlirValue y);
/// |x| of an integer or index x as maxsi(x, 0 - x): what math.absi
/// computes (the most negative value is itself), for the lowerings with no
/// pattern for math.absi (convert-gpu-to-nvvm, the kernels' LLVM).
MlirValue attn_b_absi(struct attn_builder *b, MlirValue x);
/// arith.negf.
MlirValue attn_b_negf(struct attn_builder *b, MlirValue x);
/// math.fma: x * y + z.
MlirValue attn_b_fma(struct attn_builder *b, MlirValue x, MlirValue y,
                     MlirValue z);

/// arith.cmpi's and arith.cmpf's predicates, as MLIR numbers them.
enum attn_b_cmpi {
  ATTN_B_EQ,
  ATTN_B_NE,
  ATTN_B_SLT,
  ATTN_B_SLE,
  ATTN_B_SGT,
  ATTN_B_SGE,
  ATTN_B_ULT,
  ATTN_B_ULE,
  ATTN_B_UGT,
  ATTN_B_UGE
};
enum attn_b_cmpf {
  ATTN_B_F_FALSE,
  ATTN_B_F_OEQ,
  ATTN_B_F_OGT,
  ATTN_B_F_OGE,
  ATTN_B_F_OLT,
  ATTN_B_F_OLE,
  ATTN_B_F_ONE,
  ATTN_B_F_ORD,
  ATTN_B_F_UEQ,
  ATTN_B_F_UGT,
  ATTN_B_F_UGE,
  ATTN_B_F_ULT,
  ATTN_B_F_ULE,
  ATTN_B_F_UNE,
  ATTN_B_F_UNO,
  ATTN_B_F_TRUE
};
MlirValue attn_b_cmpi(struct attn_builder *b, enum attn_b_cmpi pred,
                      MlirValue x, MlirValue y);
MlirValue attn_b_cmpf(struct attn_builder *b, enum attn_b_cmpf pred,
                      MlirValue x, MlirValue y);
/// arith.select: c ? x : y.
MlirValue attn_b_select(struct attn_builder *b, MlirValue c, MlirValue x,
                        MlirValue y);
/// A conversion op `name` (arith.index_cast, arith.extf, arith.bitcast ...)
/// of x to type to.
MlirValue attn_b_cast(struct attn_builder *b, const char *name, MlirValue x,
                      MlirType to);

//===-- Structured control flow -------------------------------------------===//

/// One scf.for being written. Between _open and _close new ops go into its
/// body; iv is the induction variable and args the loop-carried values.
struct attn_b_for {
  MlirOperation op;
  MlirValue iv;
  intptr_t n;
  MlirValue args[ATTN_B_MAX_VALUES];
  MlirValue results[ATTN_B_MAX_VALUES]; ///< after _close
  MlirBlock outer_block;                ///< the insertion point to go back to
  MlirOperation outer_anchor;
};

/// Opens `scf.for %iv = lo to hi step step iter_args(init[0..n))`.
void attn_b_for_open(struct attn_builder *b, struct attn_b_for *f,
                     MlirValue lo, MlirValue hi, MlirValue step, intptr_t n,
                     const MlirValue *init);
/// Yields yields[0..n) (n must be the loop's), closes the body and goes
/// back to after the loop; fills f->results.
void attn_b_for_close(struct attn_builder *b, struct attn_b_for *f,
                      intptr_t n, const MlirValue *yields);

/// One scf.if being written: the then region first, then (with an else) the
/// else region.
struct attn_b_if {
  MlirOperation op;
  intptr_t n;
  bool has_else, in_else;
  MlirValue results[ATTN_B_MAX_VALUES]; ///< after _close
  MlirBlock outer_block;
  MlirOperation outer_anchor;
};

/// Opens `scf.if cond -> (types[0..n))` with an else region when has_else
/// (required when n > 0); new ops go into the then region.
void attn_b_if_open(struct attn_builder *b, struct attn_b_if *s, MlirValue cond,
                    intptr_t n, const MlirType *types, bool has_else);
/// Yields yields[0..n) from the then region; new ops go into the else one.
void attn_b_if_else(struct attn_builder *b, struct attn_b_if *s, intptr_t n,
                    const MlirValue *yields);
/// Yields yields[0..n) from the region being written, closes the op and
/// goes back to after it; fills s->results.
void attn_b_if_close(struct attn_builder *b, struct attn_b_if *s, intptr_t n,
                     const MlirValue *yields);

/// One func.func being written.
struct attn_b_func {
  MlirOperation op;
  MlirBlock entry;
  MlirBlock outer_block;
  MlirOperation outer_anchor;
};

/// Opens `func.func @name(types[0..nargs)) -> (res[0..nres))` with the
/// attributes attrs (sym_name and function_type are added); new ops go into
/// its entry block, whose arguments are its parameters.
void attn_b_func_open(struct attn_builder *b, struct attn_b_func *f,
                      const char *name, intptr_t nargs, const MlirType *types,
                      intptr_t nres, const MlirType *res, intptr_t nattr,
                      const MlirNamedAttribute *attrs);
/// Argument i of the function.
MlirValue attn_b_func_arg(const struct attn_b_func *f, intptr_t i);
/// Returns vals[0..n) (func.return), closes the body, goes back to after it.
void attn_b_func_close(struct attn_builder *b, struct attn_b_func *f,
                       intptr_t n, const MlirValue *vals);

//===-- Memory and GPU ops ------------------------------------------------===//

/// memref.load of memref[indices[0..n)]: a value of its element type.
MlirValue attn_b_load(struct attn_builder *b, MlirValue memref, intptr_t n,
                      const MlirValue *indices);
/// memref.store of value to memref[indices[0..n)].
void attn_b_store(struct attn_builder *b, MlirValue value, MlirValue memref,
                  intptr_t n, const MlirValue *indices);
/// memref.alloca of the statically shaped memref type t (no dynamic sizes,
/// no symbols): the buffer.
MlirValue attn_b_alloca(struct attn_builder *b, MlirType t);

/// func.call @callee(args[0..n)) -> (res[0..nres)): the call op (null after
/// a diagnostic).
MlirOperation attn_b_call(struct attn_builder *b, const char *callee,
                          intptr_t n, const MlirValue *args, intptr_t nres,
                          const MlirType *res);

/// A dimension of gpu.thread_id, gpu.block_dim, gpu.block_id.
enum attn_b_dim { ATTN_B_X, ATTN_B_Y, ATTN_B_Z };
/// gpu.thread_id / gpu.block_dim / gpu.block_id of dimension dim: an index.
MlirValue attn_b_thread_id(struct attn_builder *b, enum attn_b_dim dim);
MlirValue attn_b_block_dim(struct attn_builder *b, enum attn_b_dim dim);
MlirValue attn_b_block_id(struct attn_builder *b, enum attn_b_dim dim);
/// gpu.barrier: every thread of the CTA waits for the others.
void attn_b_barrier(struct attn_builder *b);

/// The memory space a gpu.func's workgroup attributions live in
/// (#gpu.address_space<workgroup>), for attn_b_memref_in.
MlirAttribute attn_b_attr_workgroup(struct attn_builder *b);
/// memref<shape x elem> with the identity layout in memory space space.
MlirType attn_b_memref_in(struct attn_builder *b, intptr_t rank,
                          const int64_t *shape, MlirType elem,
                          MlirAttribute space);

/// Opens `gpu.func @name(types[0..nargs)) workgroup(wg[0..nwg)) kernel`
/// with the attributes attrs (sym_name, function_type, gpu.kernel and
/// workgroup_attributions are added); new ops go into its entry block,
/// whose arguments are its parameters and then its workgroup buffers
/// (attn_b_func_arg(f, nargs + i) is buffer i). Belongs in a gpu.module.
void attn_b_gpu_func_open(struct attn_builder *b, struct attn_b_func *f,
                          const char *name, intptr_t nargs,
                          const MlirType *types, intptr_t nwg,
                          const MlirType *wg, intptr_t nattr,
                          const MlirNamedAttribute *attrs);
/// Ends the body with gpu.return, closes it and goes back to after it.
void attn_b_gpu_func_close(struct attn_builder *b, struct attn_b_func *f);

//===-- Cloning a modifier body (attn_builder_body.c) ---------------------===//

/// Values of a body being cloned and the values that replace them.
/// Zero-initialise; free with attn_b_map_free. `failed` is set when memory
/// runs out (attn_b_clone_body then fails the builder).
struct attn_b_map {
  MlirValue *from, *to;
  size_t n, cap;
  bool failed;
};

/// Maps from to to (a later entry for the same value wins).
void attn_b_map_add(struct attn_b_map *m, MlirValue from, MlirValue to);

/// The value v maps to, or v itself when it is not mapped (a value defined
/// above the body, kept as is).
MlirValue attn_b_map_get(const struct attn_b_map *m, MlirValue v);

/// Frees m's entries (m may be reused afterwards).
void attn_b_map_free(struct attn_b_map *m);

/// Called on each op of a body before it is cloned: returns true when it
/// built the op's replacement at b itself and mapped the op's results in m
/// (false: the op is cloned as is).
typedef bool (*attn_b_clone_hook)(struct attn_builder *b, MlirOperation op,
                                  struct attn_b_map *m, void *user);

/// Clones the ops of body but its terminator at b's insertion point, block
/// argument i replaced by args[i] and every operand through m (the clones
/// keep their locations), and returns the image of the terminator's first
/// operand: the value a gpu.yield yields (the images of the others, a
/// tile.capture_grad body's indices, are in m). Null after a diagnostic
/// (b failed): a null body, a terminator without operands.
MlirValue attn_b_clone_body(struct attn_builder *b, MlirBlock body,
                            const MlirValue *args, struct attn_b_map *m,
                            attn_b_clone_hook hook, void *user);

//===-- Tile dialect ops (attn_builder_tile.c) ---------------------------===//
//
// IRDL gives the tile ops no generated builders; these make one op each at
// the insertion point and location of b, with the
// attributes the C verifier above reads. A null operand, or an op MLIR
// refuses, marks b failed with a diagnostic (see attn_builder_finish); the
// value builders then return a null value.

struct attn_tile_score_mods; // dialects/tile/tile_dialect.h

/// tile.program_id {dim}: this CTA's index along grid dimension dim.
MlirValue attn_tile_build_program_id(struct attn_builder *b, int64_t dim);

/// tile.alloc: a CTA-local tile of type tile (a static f32 memref).
MlirValue attn_tile_build_alloc(struct attn_builder *b, MlirType tile);

/// tile.fill {value : f32}: sets every element of tile to value.
void attn_tile_build_fill(struct attn_builder *b, MlirValue tile, double value);

/// tile.load(source, tile, idx[0..n)): copies part of source into tile.
void attn_tile_build_load(struct attn_builder *b, MlirValue source,
                          MlirValue tile, intptr_t n, const MlirValue *idx);

/// tile.load {pad}: elements past source's edges read as pad (+inf for the
/// backward's lse: a padding row sees no key), not zero.
void attn_tile_build_load_padded(struct attn_builder *b, MlirValue source,
                                 MlirValue tile, intptr_t n,
                                 const MlirValue *idx, double pad);

/// tile.store(tile, dest, idx[0..n)): copies tile into part of dest.
void attn_tile_build_store(struct attn_builder *b, MlirValue tile,
                           MlirValue dest, intptr_t n, const MlirValue *idx);

/// tile.rope(tile, pos) {theta, rotary_dim, layout, offset}: rotates tile,
/// whose row 0 is position offset + pos ("offset" is left out when 0).
void attn_tile_build_rope(struct attn_builder *b, MlirValue tile,
                          MlirValue pos, double theta, int64_t rotary_dim,
                          const char *layout, int64_t offset);

/// tile.rope_positions(tile, batch, row, positions) {theta, rotary_dim,
/// layout}: rotates tile at the positions positions[batch, row + r].
void attn_tile_build_rope_positions(struct attn_builder *b, MlirValue tile,
                                    MlirValue batch, MlirValue row,
                                    MlirValue positions, double theta,
                                    int64_t rotary_dim, const char *layout);

/// tile.mma(a, b, c) {transpose_b, accumulate}: c (+)= a * b or a * b^T.
void attn_tile_build_mma(struct attn_builder *b, MlirValue a, MlirValue bt,
                         MlirValue c, bool transpose_b, bool accumulate);

/// tile.mask(scores, row, col) {causal, kv_len, window}: window (left,
/// right) is left out when NULL.
void attn_tile_build_mask(struct attn_builder *b, MlirValue scores,
                          MlirValue row, MlirValue col, bool causal,
                          int64_t kv_len, const int64_t *window);

/// tile.score_mod(scores, batch, head, row, col) applying mods in order,
/// with the attributes of each modifier named (scale; softcap; alibi and
/// heads).
void attn_tile_build_score_mod(struct attn_builder *b, MlirValue scores,
                               MlirValue batch, MlirValue head, MlirValue row,
                               MlirValue col,
                               const struct attn_tile_score_mods *mods);

/// tile.score_fn(scores, batch, head, row, col) {seq_q, seq_k}: returns its
/// body's block, of arguments (f32 score, index b, h, q, kv), empty: the
/// caller builds the body there and ends it with gpu.yield of an f32. Null
/// after a diagnostic.
MlirBlock attn_tile_build_score_fn(struct attn_builder *b, MlirValue scores,
                                   MlirValue batch, MlirValue head,
                                   MlirValue row, MlirValue col, int64_t seq_q,
                                   int64_t seq_k);

/// tile.mask_fn(scores, batch, head, row, col) {seq_q, seq_k}: the same,
/// with a block of arguments (index b, h, q, kv) to end with gpu.yield of
/// an i1 (true: the key is visible).
MlirBlock attn_tile_build_mask_fn(struct attn_builder *b, MlirValue scores,
                                  MlirValue batch, MlirValue head,
                                  MlirValue row, MlirValue col, int64_t seq_q,
                                  int64_t seq_k);

/// tile.softmax_update(scores, row_max, row_sum, acc) {scale : f64}.
void attn_tile_build_softmax_update(struct attn_builder *b, MlirValue scores,
                                    MlirValue row_max, MlirValue row_sum,
                                    MlirValue acc, double scale);

/// tile.normalize(acc, row_sum): acc[i, :] /= row_sum[i].
void attn_tile_build_normalize(struct attn_builder *b, MlirValue acc,
                               MlirValue row_sum);

// The backward's ops (docs/dialects.md, "tile"; the session-20 contract).

/// tile.row_lse(row_max, row_sum, lse): lse[i] = (m[i] + log2 l[i]) ln 2,
/// +inf where l[i] == 0 (softmax_update's log2-domain m and l).
void attn_tile_build_row_lse(struct attn_builder *b, MlirValue row_max,
                             MlirValue row_sum, MlirValue lse);

/// tile.row_dot(x, y, d): d[i] = sum_j x[i, j] y[i, j].
void attn_tile_build_row_dot(struct attn_builder *b, MlirValue x, MlirValue y,
                             MlirValue d);

/// tile.exp_lse(scores, lse) {scale}: s = exp(scale s - lse[i]), 0 where s
/// is -inf or lse[i] is +inf.
void attn_tile_build_exp_lse(struct attn_builder *b, MlirValue scores,
                             MlirValue lse, double scale);

/// tile.ds(p, dp, d) {scale}: dp = scale p (dp - d[i]), in place in dp.
void attn_tile_build_ds(struct attn_builder *b, MlirValue p, MlirValue dp,
                        MlirValue d, double scale);

/// tile.score_fn_grad(ds, scores_in, batch, head, row, col) {seq_q, seq_k}:
/// ds *= body(scores_in, b, h, q, kv). Returns the body's block, of
/// tile.score_fn's arguments, empty: the caller builds the derivative
/// there and ends it with gpu.yield of an f32. Null after a diagnostic.
MlirBlock attn_tile_build_score_fn_grad(struct attn_builder *b, MlirValue ds,
                                        MlirValue scores_in, MlirValue batch,
                                        MlirValue head, MlirValue row,
                                        MlirValue col, int64_t seq_q,
                                        int64_t seq_k);

/// tile.clear(dst): zeroes the gradient buffer dst.
void attn_tile_build_clear(struct attn_builder *b, MlirValue dst);

/// tile.capture_grad(ds, scores_in, grad, batch, head, row, col) {seq_q,
/// seq_k, scale}: grad[idx] += scale ds t where the body yields (t, idx...)
/// at scores_in. Returns the body's block, of tile.score_fn's arguments,
/// empty: the caller builds it and ends it with gpu.yield of the
/// derivative and grad's indices. Null after a diagnostic.
MlirBlock attn_tile_build_capture_grad(struct attn_builder *b, MlirValue ds,
                                       MlirValue scores_in, MlirValue grad,
                                       MlirValue batch, MlirValue head,
                                       MlirValue row, MlirValue col,
                                       int64_t seq_q, int64_t seq_k,
                                       double scale);

/// tile.mma with transpose_a: c (+)= op(a) op(b), op(a) = a^T when
/// transpose_a (a is K x M), op(b) = b^T when transpose_b. transpose_a is
/// left out when false (the op attn_tile_build_mma makes).
void attn_tile_build_mma_t(struct attn_builder *b, MlirValue a, MlirValue bt,
                           MlirValue c, bool transpose_a, bool transpose_b,
                           bool accumulate);

/// tile.rope {inverse = true}: attn_tile_build_rope's rotation by minus
/// the angle (R^T, for dq and dk).
void attn_tile_build_rope_inverse(struct attn_builder *b, MlirValue tile,
                                  MlirValue pos, double theta,
                                  int64_t rotary_dim, const char *layout,
                                  int64_t offset);

/// tile.rope_positions {inverse = true}: attn_tile_build_rope_positions'
/// rotation by minus the angle.
void attn_tile_build_rope_positions_inverse(struct attn_builder *b,
                                            MlirValue tile, MlirValue batch,
                                            MlirValue row, MlirValue positions,
                                            double theta, int64_t rotary_dim,
                                            const char *layout);

#ifdef __cplusplus
}
#endif

#endif // ATTN_BUILDER_H
