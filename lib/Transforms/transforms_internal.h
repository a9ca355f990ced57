//===- transforms_internal.h - Shared inside lib/Transforms only ----------===//
#ifndef ATTN_TRANSFORMS_INTERNAL_H
#define ATTN_TRANSFORMS_INTERNAL_H

#include "lib/Transforms/transforms.h"

#include "dialects/dialects.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_builder.h"
#include "lib/IR/attn_context.h"

//===-- The pass rows (one per pass file) ---------------------------------===//

extern const struct attn_pass_def attn_fuse_pass;
extern const struct attn_pass_def attn_grad_pass;
extern const struct attn_pass_def comm_schedule_pass;
extern const struct attn_pass_def attn_tile_pass;
extern const struct attn_pass_def lower_tile_to_cpu_pass;
extern const struct attn_pass_def lower_tile_to_gpu_pass;
extern const struct attn_pass_def lower_tile_to_hopper_pass;
extern const struct attn_pass_def lower_tile_to_mma_pass;
extern const struct attn_pass_def lower_tile_to_decode_pass;
extern const struct attn_pass_def test_attn_print_cost_pass;

/// Parses options text ("k=v k2=v2", spaces or commas between; may be NULL)
/// into opts (def's, already initialised) with def->set_option; false with
/// err on a bad option.
bool attn_pass_parse_options(const struct attn_pass_def *def, void *opts,
                             const char *text, char *err, size_t errlen);

//===-- RoPE placement (attn_fuse.c) --------------------------------------===//

struct attn_cost_problem;
struct attn_fused_config;

/// Describes for the cost model the attention of q and k (rank-4 static
/// tensors) computed as cfg says, with the Hopper kernel's 128 x 128 tiles.
/// Returns the strategies the program and the kernels allow (an
/// ATTN_COST_BIT mask): fused always; split and pre when rotary_dim is the
/// head dim. producer is the caller's to add (attn-fuse does when q and k
/// come from attn.project).
/// True when q and k (unrotated) are each the result of an attn.project
/// used only there: the projections whose GEMM epilogue can rotate (the
/// producer placement; explicit positions are the caller's to rule out).
bool attn_rope_producer_available(MlirValue q, MlirValue k);

unsigned attn_rope_cost_problem(MlirValue q, MlirValue k,
                                const struct attn_fused_config *cfg,
                                struct attn_cost_problem *p);

//===-- attn-tile (attn_tile.c and its kernels, tile_matmul.c) -----------===//

/// The GEMM tiles attn-tile picks with kernel=hopper for 16-bit matmuls (and
/// gpu_pipeline.c asks the Hopper GEMM about): 128-row output tiles, 256
/// wide at most (attn_tile_hopper_gemm_shape picks the width), K steps of
/// 64, 384 threads.
enum {
  ATTN_TILE_HOPPER_GEMM_BM = 128,
  ATTN_TILE_HOPPER_GEMM_BN = 256,
  ATTN_TILE_HOPPER_GEMM_BK = 64,
};

/// The Hopper GEMM's tile width (*block_n) and K slices (*split_k, 1 for
/// none) for the plain matmul mm on the default GPU's SMs (attn-tile, which
/// has no GPU option, and gpu_pipeline.c's check of what it will pick): 256
/// wide and unsplit (the most efficient tile) unless narrower tiles or
/// slices of K finish sooner because too few wide tiles leave SMs idle
/// (tile_matmul.c says how it is priced). width != 0 fixes the width; an
/// accumulating GEMM is not split. Projections and fused collectives keep
/// 256.
void attn_tile_hopper_gemm_shape(const struct attn_matmul_info *mm, int width,
                                 int *block_n, int *split_k);

/// attn-tile's options; a size of 0 means "pick one".
struct attn_tile_options {
  long block_m, block_n, block_k, threads;
  bool hopper; ///< kernel=hopper: the defaults of lower-tile-to-hopper
  bool mma;    ///< kernel=mma: the defaults of lower-tile-to-mma
};

/// Turns func into a GEMM tile kernel when attn_matmul_find accepts it;
/// leaves functions without a matmul alone. Returns false after a
/// diagnostic (a matmul attn-tile cannot take, or an internal failure).
bool attn_tile_matmul(MlirOperation func, const struct attn_tile_options *o);

/// A function whose body is one attn.fused_decode (attn_tile_decode.c)
/// becomes its decode tile kernel (tile.decode). Returns 1 when it did, 0
/// when func holds no attn.fused_decode, -1 after a diagnostic.
int attn_tile_decode(MlirOperation func);

/// Reads a decode tile kernel's tile.decode into *c (base: scale, causal,
/// window, softcap, alibi, rope, mods; the shapes; the layout), the block
/// table's width into *max_pages and the append (attn.cache_append feeding
/// the decode; seq_new 0 without one) into *ap. False when kernel has none
/// or it is malformed (no diagnostic).
struct attn_decode_config;
struct attn_append_config;
bool attn_tile_get_decode(MlirOperation kernel, struct attn_decode_config *c,
                          int64_t *max_pages, struct attn_append_config *ap);

struct attn_builder;

/// Builds the GEMM tile kernel @name(a: m x k, b: k x n, c: m x n) of elem
/// with o's blocks (tile_matmul.c's kernel, accumulate = false) at b's
/// insertion point; extra[0..nextra) are added to its tile.matmul
/// dictionary. Returns its func.func; check attn_builder_finish(b), and
/// destroy the (partial) kernel when that fails.
MlirOperation attn_tile_build_gemm_kernel(struct attn_builder *b,
                                          const char *name, MlirType elem,
                                          int64_t m, int64_t n, int64_t k,
                                          const struct attn_tile_options *o,
                                          intptr_t nextra,
                                          const MlirNamedAttribute *extra);

/// A function holding attn.project ops (tile_program.c): each projection
/// becomes a GEMM tile kernel @<f>__proj_<q|k|v> writing its heads
/// [B, H, N, D] (tile.matmul's "project", and "rope" for the producer
/// placement), the function itself the attention kernel @<f>__attn over
/// the projected tensors, and the module's tile.programs records the
/// launch program @<f> that runs them in order. A function without
/// attn.project is left unchanged. Returns false after a diagnostic.
bool attn_tile_program(MlirOperation func, const struct attn_tile_options *o);

/// Appends program (a launch program's dictionary {name, inputs, workspace,
/// steps}) to module's tile.programs (tile_program.c; attn-tile's backward
/// program too). Out of memory leaves the attribute as it was.
void attn_tile_programs_append(MlirOperation module, MlirAttribute program);

/// Appends one launch program (the text of its dictionary, which this
/// frees) to the array attribute attr of op (launch_programs.c): a
/// gpu.module's attn.programs, or the module's tile.programs. False when
/// the text does not parse.
bool attn_programs_append(MlirOperation op, const char *attr,
                          struct attn_strbuf *program);
/// Moves attn-tile's launch programs (tile.programs on module) into the
/// gpu.module's attn.programs. A step whose kernel is itself a program
/// there (an attention whose RoPE placement added rotation kernels before
/// it) is replaced by that program's steps, with its inputs bound to the
/// step's arguments and its workspaces renamed "<program>.<name>"; the
/// inner program is then dropped, since only the outer one is meant to
/// run. False after a diagnostic.
bool attn_programs_move(MlirOperation module);

//===-- attn-grad's derivative rules (attn_grad_body.c) -------------------===//

/// Checks that every op of body (a score_fn body; null: none) has a
/// derivative rule; false after "attn-grad: no derivative for '<op>'" at
/// the first that has none.
bool attn_grad_body_check(MlirBlock body);

/// Forward-mode differentiation of body with respect to its first argument
/// (the score): clones body's ops at b as attn_b_clone_body does (arguments
/// args, values through m, hook for the ops the caller builds itself) and,
/// after each, the ops of its tangent, seeded by dx, the tangent of the
/// score (null: zero). Returns the image of the yielded value and sets *dy
/// to its tangent (null when it is zero). On an op without a rule, b fails
/// with "attn-grad: no derivative for '<op>'" at that op and null is
/// returned.
MlirValue attn_grad_clone_tangent(struct attn_builder *b, MlirBlock body,
                                  const MlirValue *args, MlirValue dx,
                                  struct attn_b_map *m, attn_b_clone_hook hook,
                                  void *user, MlirValue *dy);

/// The same, with the result of op seed of body (a capture's read; null:
/// none) seeded too, by tangent 1: *dy is then the derivative with respect
/// to the score (times dx) plus the derivative with respect to that read
/// value, which the gradient into a captured tensor needs (dx null).
MlirValue attn_grad_clone_tangent_at(struct attn_builder *b, MlirBlock body,
                                     const MlirValue *args, MlirValue dx,
                                     MlirOperation seed, struct attn_b_map *m,
                                     attn_b_clone_hook hook, void *user,
                                     MlirValue *dy);

//===-- Small helpers -----------------------------------------------------===//

/// A growable list of borrowed operations; `failed` is set on allocation
/// failure. Free `ops` when done.
struct attn_op_list {
  MlirOperation *ops;
  size_t n, cap;
  bool failed;
};

void attn_op_list_push(struct attn_op_list *l, MlirOperation op);

/// Collects every op named name nested in root (post-order).
void attn_op_list_collect(struct attn_op_list *l, MlirOperation root,
                          const char *name);

/// Finds or creates `gpu.module @attn_kernels` (NVVM target chip, PTX ISA
/// ptx/10) at the end of module and marks module as a GPU container.
/// Returns a null op on failure.
MlirOperation attn_gpu_kernels_module(MlirOperation module, const char *chip,
                                      int ptx, MlirLocation loc);

/// attn_gpu_kernels_module for a tile kernel: in the module holding kernel,
/// with its location; a null op after an error at kernel.
MlirOperation attn_kernel_gpu_module(MlirOperation kernel, const char *chip,
                                     int ptx);

/// The last op of the gpu.module gm's body (null when it is empty): where a
/// lowering's new kernels start, for attn_hopper_dump_built.
MlirOperation attn_hopper_last_op(MlirOperation gm);

/// With ATTN_DUMP_HOPPER=<file>: prints the ops a lowering built into gm
/// (those after `before`, all when before is null) into the file, for a
/// human to read (the kernels are built, never parsed back).
void attn_hopper_dump_built(MlirOperation gm, MlirOperation before);

/// Entry key of the dictionary attribute dict, or a null attribute
/// (attention_kernel.c, like attn_dict_int).
MlirAttribute attn_dict_get(MlirAttribute dict, const char *key);

/// Integer entry key of dict, or dflt when it is absent or not an integer.
int64_t attn_dict_int(MlirAttribute dict, const char *key, int64_t dflt);

/// Reads a bool option value ("true"/"false"/"1"/"0").
bool attn_parse_bool_option(const char *value, bool *out);

/// Reads a positive integer option value in [lo, hi].
bool attn_parse_int_option(const char *name, const char *value, long lo,
                           long hi, long *out, char *err, size_t errlen);

//===-- Tile op lowering shared by the CPU and GPU paths ------------------===//

/// Where tile loops run: one thread (CPU) or spread over a CTA's threads,
/// with a barrier after each tile op (GPU).
enum attn_tile_target { ATTN_TILE_CPU, ATTN_TILE_GPU };

/// Replaces each tile.program_id in root by ids[dim] and erases it.
void attn_tile_replace_program_ids(MlirOperation root, const MlirValue ids[3]);

/// Collects the tile.alloc ops of a kernel in program order.
void attn_tile_collect_allocs(MlirOperation kernel, struct attn_op_list *out);

/// Collects every tile op nested in kernel in program order (pre-order walk;
/// attention_kernel.c).
void attn_tile_collect_ops(MlirOperation kernel, struct attn_op_list *out);

struct attn_builder;
struct attn_b_for;

/// The loops of one tile op being built (tile_lowering.c,
/// tile_lowering_scores.c and tile_lowering_grad.c, with tile_gen.c's
/// vocabulary below), in place of the op, through b.
struct attn_tile_gen {
  struct attn_builder *b;
  enum attn_tile_target target;
  MlirOperation op;
  int64_t dims[6][8]; // static shapes of memref operands 0..5
  MlirValue c0, c1;   // index 0 and 1, made by attn_gen_open_loop
  MlirType ct;        // the compute type: f64 when an operand is an f64
                      // memref (an f64 program's), else f32
};

/// Operand i of the tile op.
MlirValue attn_gen_arg(struct attn_tile_gen *g, int i);

/// arith.constant of v in the compute type g->ct (f32: v rounded to float)
/// or of an index.
MlirValue attn_gen_float(struct attn_tile_gen *g, double v);
MlirValue attn_gen_index(struct attn_tile_gen *g, long long v);

/// Opens the distributed loop `for e in [0, total)` (making g->c0 and
/// g->c1 first) and closes it; on the GPU the CTA's threads share it and
/// meet at a barrier. Returns e.
MlirValue attn_gen_open_loop(struct attn_tile_gen *g, struct attn_b_for *loop,
                             long long total);
void attn_gen_close_loop(struct attn_tile_gen *g, struct attn_b_for *loop);

/// Splits e into row *i and column *j of a tile with cols columns.
void attn_gen_split_index(struct attn_tile_gen *g, MlirValue e,
                          long long cols, MlirValue *i, MlirValue *j);

/// Writes the loops of tile.mask, tile.score_mod, tile.score_fn and
/// tile.mask_fn (tile_lowering_scores.c). Returns false for other ops.
bool attn_gen_score_ops(struct attn_tile_gen *g);

/// Writes the loops of the backward's row ops, tile.row_lse, tile.row_dot,
/// tile.exp_lse and tile.ds (tile_lowering_grad.c). Returns false for
/// other ops.
bool attn_gen_grad_ops(struct attn_tile_gen *g);

/// Replaces every tile compute op (fill, load, store, rope, rope_positions,
/// mma, mask, score_mod, score_fn, mask_fn, softmax_update, normalize; the
/// backward's row_lse, row_dot, exp_lse, ds, score_fn_grad) nested in root
/// by scf/arith/memref/math loops for target. tile.program_id and
/// tile.alloc must already be gone. Returns false after a diagnostic.
bool attn_tile_lower_compute_ops(MlirOperation root,
                                 enum attn_tile_target target);

//===-- Attention tile kernels (attention_kernel.c) -----------------------===//

struct attn_hopper_kernel;

/// What one tensor-core attention kernel family (lower-tile-to-hopper,
/// lower-tile-to-mma) computes, for attn_attention_describe.
struct attn_attention_family {
  /// The kernel as the diagnostics name it: "the Hopper kernel".
  const char *kernel;
  /// Why, when the arguments are not named q, k, v and out in that order.
  const char *args_why;
  /// The head dims the kernel has (a mask of powers of two: 64 | 128) and
  /// why, otherwise ("the Hopper kernel has head dims 64 and 128").
  unsigned head_dims;
  const char *head_dims_why;
  /// The block-m and block-n sizes the kernel has (masks of powers of two:
  /// 64 | 128), block_n_extra a block-n besides them (0: none; the Hopper
  /// kernel's 80, for head dim 256: its family checks the pairing), and
  /// why, otherwise.
  unsigned block_m, block_n;
  int block_n_extra;
  const char *blocks_why;
  /// Also bound K and V (not only Q and out) by 32-bit indexing.
  bool kv_index32;
  /// Rejects a scale that is not positive.
  bool positive_scale;
  /// Checks the RoPE parameters read into k (rope: the tile.attention rope
  /// dictionary; user: attn_attention_describe's); false with why (and
  /// detail) when the kernel cannot apply them.
  bool (*check_rope)(MlirAttribute rope, struct attn_hopper_kernel *k,
                     void *user, char *why, size_t wlen, char *detail,
                     size_t dlen);
};

/// Reads the attention tile kernel's problem and tiles (the arguments q, k,
/// v and out, their shapes and element type, the captures after them, the
/// tile.alloc block sizes, tile.attention, the bodies of its tile.score_fn
/// and tile.mask_fn ops) into k (all of it cleared first; stages is the
/// caller's), checking each against f. Returns false with why (and detail,
/// untouched when there is none) when f's kernel cannot compute it.
bool attn_attention_describe(MlirOperation kernel,
                             const struct attn_attention_family *f,
                             struct attn_hopper_kernel *k, void *user,
                             char *why, size_t wlen, char *detail,
                             size_t dlen);

/// The pieces of attn_attention_describe the Hopper backward's description
/// (lower_tile_to_hopper_grad.c) shares:
/// - the score modifiers of a tile.attention dictionary att (mods: the
///   scale, and softcap, alibi, gate and fn as tile.score_fn bodies; the
///   window, normalised against k's sequences and causal, which must be
///   set);
/// - the body of a tile.score_fn (nargs 5, tile.score_fn_grad's alike) or
///   tile.mask_fn (4) op the kernels can clone (lib/Kernels/score_fn.c),
///   or a null block with why;
/// - value, the tile kernel's argument of tile.arg_names entry name, as
///   k's next capture (its dtype and static shape checked, RoPE positions
///   marked); kernel names the caller's kernel in why.
bool attn_attention_describe_mods(MlirAttribute att,
                                  const struct attn_attention_family *f,
                                  struct attn_hopper_kernel *k, char *why,
                                  size_t wlen, char *detail, size_t dlen);
MlirBlock attn_attention_fn_body(MlirOperation op,
                                 const struct attn_hopper_kernel *k,
                                 intptr_t nargs, char *why, size_t wlen);
/// The same for any op with such a body (what: its name for why) whose
/// gpu.yield gives nyield values (tile.capture_grad's: the derivative and
/// the indices).
MlirBlock attn_attention_body_of(MlirOperation op,
                                 const struct attn_hopper_kernel *k,
                                 intptr_t nargs, intptr_t nyield,
                                 const char *what, char *why, size_t wlen);
bool attn_attention_add_capture(MlirValue value, MlirStringRef name,
                                const char *kernel,
                                struct attn_hopper_kernel *k, char *why,
                                size_t wlen, char *detail, size_t dlen);
/// The backward's pieces (lower_tile_to_hopper_grad.c) the mma.sync
/// backward's lowering (lower_tile_to_mma_grad.c) shares: the step of the
/// dkdv tile kernel (the chain, the masks, tile.exp_lse's and tile.ds's
/// scales, tile.score_fn_grad's body) into g, false with why; the inputs of
/// attn-tile's program name into g, false when it is missing or malformed;
/// that program removed from the module's tile.programs; and the launch
/// program of g (rope, __pre, __main, __dq_out, __dk_out: the two
/// backwards' kernels take the same arguments) appended to gm's
/// attn.programs.
struct attn_hopper_bwd;
bool attn_grad_describe_step(MlirOperation kernel, struct attn_hopper_bwd *g,
                             char *why, size_t wlen);
bool attn_grad_program_inputs(MlirOperation module, const char *name,
                              struct attn_hopper_bwd *g);
void attn_grad_drop_program(MlirOperation module, const char *name);
bool attn_grad_add_program(MlirOperation gm, const struct attn_hopper_bwd *g);
/// Lowers a backward tile kernel (its tile.attention_grad dictionary att)
/// to the mma.sync backward for chip, whose CTA takes smem_limit bytes of
/// dynamic shared memory (lower_tile_to_mma_grad.c), with block_n keys a
/// CTA (64 or 128; 0: 128 where two stages fit, else 64): the dkdv part
/// builds every kernel and the launch program, the dq part is then erased.
/// False after a diagnostic on kernel; with fallback a backward it cannot
/// compute is left alone and the result is true.
bool attn_mma_lower_grad(MlirOperation kernel, MlirAttribute att,
                         const char *chip, int64_t smem_limit, int block_n,
                         bool fallback);
/// Whether every RoPE position of k (its row plus rope_offset for q,
/// rope_offset_k for k) lies in [0, 2^24), where an f32 holds it exactly:
/// what the GPU kernels, which compute angles from f32 positions, need.
bool attn_attention_rope_positions_ok(const struct attn_hopper_kernel *k);
/// Appends to b the names of the caller's tensors of k in its order
/// (attn_hopper_arg_at), q and k replaced by q_as and k_as: ", "-separated
/// quoted strings, a launch program's inputs or a step's args.
void attn_attention_arg_names(struct attn_strbuf *b,
                              const struct attn_hopper_kernel *k,
                              const char *q_as, const char *k_as);

#endif // ATTN_TRANSFORMS_INTERNAL_H
