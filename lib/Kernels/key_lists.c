//===- key_lists.c - Key-block lists of masks that read data, at run time -===//
//
// A mask function that reads a capture (a document's ids, a block map)
// says nothing at compile time of which key blocks it leaves: the interval
// classification of attn_hopper_key_table sees an unknown value and keeps
// every block of the affine bounds, partial. Here the compiler plans
// (attn_hopper_plan_key_lists) and builds a small kernel of the launch
// program that runs before the attention kernel and classifies every
// (query block, key block) by evaluating the functions themselves, as
// flex's create_block_mask does, but every call and in the same launch
// program:
//
//   grid (query blocks, ht, bt), 1024 threads. Item t of a CTA is one key
//   column of one key block within the bounds of @<name>__keys; its thread
//   evaluates the functions down the query block's rows (one point per
//   grain x grain box: attn_mask_program_uniform proved the functions
//   yield one value over each) and ors into the block's shared word bit 0
//   when it saw a visible key and bit 1 when it saw a hidden one. Thread 0
//   then writes the row of key_lists: the blocks with bit 0, in key order,
//   each 2 kb + (bit 1 clear), after their count.
//
// What the bodies compute of the key alone is made once per item, of the
// batch and head once per CTA (score_fn.c's point evaluations). Keys past
// the end and rows outside [0, seq_q) are not evaluated: the attention
// kernel masks the former itself, the latter are not stored.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Threads of the key-list kernel's CTA: one CTA per query block keeps
/// the row's compaction in it, and 32 warps an SM busy.
#define KL_THREADS 1024
/// Rows one step of an item's loop evaluates: independent loads in flight.
#define KL_UNROLL 8

/// Whether body reads a capture (a memref.load of a value from outside it).
static bool reads_capture(MlirBlock body) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    if (n.length == 11 && !memcmp(n.data, "memref.load", 11))
      return true;
  }
  return false;
}

/// Whether block argument i (0: b, 1: h) of any mask function is used.
static bool reads_arg(const struct attn_hopper_kernel *k, intptr_t i) {
  for (int f = 0; f < k->nmask_fns; ++f)
    if (!mlirOpOperandIsNull(
            mlirValueGetFirstUse(mlirBlockGetArgument(k->mask_fns[f], i))))
      return true;
  return false;
}

/// Most boxes the grain check evaluates for one grain.
#define MAX_GRAIN_BOXES (1 << 22)

/// Whether every mask function of p[0..n) is uniform over each g x g box
/// the key-list kernel samples (rows from each query block's first, keys
/// from each key block's first, both within the sequences).
static bool grain_holds(const struct attn_hopper_kernel *k,
                        struct attn_mask_program *const *p, int n, int g,
                        int64_t shift) {
  int64_t nq = attn_hopper_query_blocks(k), nk = attn_hopper_key_blocks(k);
  int64_t rows = k->block_m / g, cols = k->block_n / g;
  if (nq * rows * nk * cols > MAX_GRAIN_BOXES)
    return false;
  struct attn_box box = {{0, 0, 0, 0}, {k->batch - 1, k->heads - 1, 0, 0}};
  for (int64_t qb = 0; qb < nq; ++qb)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t q0 = qb * k->block_m - shift + r * g, q1 = q0 + g - 1;
      q0 = q0 < 0 ? 0 : q0;
      q1 = q1 > k->seq_q - 1 ? k->seq_q - 1 : q1;
      if (q0 > q1)
        continue;
      box.lo[2] = q0;
      box.hi[2] = q1;
      for (int64_t c = 0; c < nk * cols; ++c) {
        box.lo[3] = c * g;
        box.hi[3] = c * g + g - 1 > k->seq_k - 1 ? k->seq_k - 1 : c * g + g - 1;
        if (box.lo[3] > box.hi[3])
          continue;
        for (int i = 0; i < n; ++i)
          if (!attn_mask_program_uniform(p[i], &box))
            return false;
      }
    }
  return true;
}

/// The largest grain (a power of two dividing block_m and block_n, at least
/// 8) over whose boxes the mask functions are uniform; 1 when none is.
static int choose_grain(const struct attn_hopper_kernel *k, int64_t shift) {
  struct attn_mask_program *p[ATTN_HOPPER_MAX_FNS];
  int n = 0;
  for (; n < k->nmask_fns; ++n) {
    p[n] = attn_mask_program_compile(k->mask_fns[n]);
    if (!p[n])
      break;
  }
  int grain = 1;
  if (n == k->nmask_fns) {
    int g = k->block_m < k->block_n ? k->block_m : k->block_n;
    for (; g >= 8 && grain == 1; g /= 2)
      if (k->block_m % g == 0 && k->block_n % g == 0 &&
          grain_holds(k, p, n, g, shift))
        grain = g;
  }
  for (int i = 0; i < n; ++i)
    attn_mask_program_free(p[i]);
  return grain;
}

bool attn_hopper_masks_read_data(const struct attn_hopper_kernel *k) {
  for (int f = 0; f < k->nmask_fns; ++f)
    if (reads_capture(k->mask_fns[f]))
      return true;
  return false;
}

bool attn_hopper_plan_key_lists(struct attn_hopper_kernel *k, int64_t shift) {
  k->key_lists = false;
  if (!attn_hopper_masks_read_data(k) || !k->key_blocks)
    return false;
  k->key_lists = true;
  k->key_lists_batch = reads_arg(k, 0) ? k->batch : 1;
  k->key_lists_heads = reads_arg(k, 1) ? k->heads : 1;
  k->key_lists_shift = shift;
  k->key_lists_grain = choose_grain(k, shift);
  return true;
}

int64_t attn_hopper_key_lists_words(const struct attn_hopper_kernel *k) {
  return k->key_lists_batch * k->key_lists_heads *
         attn_hopper_query_blocks(k) * (attn_hopper_key_blocks(k) + 1);
}

struct attn_key_blocks *attn_hopper_key_bounds(const struct attn_hopper_kernel *k,
                                               int64_t shift) {
  int64_t nq = attn_hopper_query_blocks(k);
  struct attn_key_blocks *t = calloc((size_t)nq, sizeof *t);
  if (!t)
    return NULL;
  struct attn_hopper_kernel affine = *k;
  affine.key_blocks = NULL; // attn_hopper_key_range: the affine bounds
  for (int64_t qb = 0; qb < nq; ++qb) {
    int64_t first, last;
    attn_hopper_key_range(&affine, qb * k->block_m - shift, &first, &last);
    t[qb] = (struct attn_key_blocks){first, last, first, first};
  }
  return t;
}

//===-- The kernel --------------------------------------------------------===//

/// What the kernel's parts read.
struct kl {
  struct attn_builder *b;
  const struct attn_hopper_kernel *k;
  MlirValue tid, qb, row0; ///< row0: the query block's first row (signed)
  MlirValue first, nblocks; ///< the bounds of @<name>__keys
  MlirValue words;          ///< @attn_smem: one i32 per key block
  MlirValue out;            ///< this CTA's row of key_lists
};

/// x clamped into [0, n - 1] (signed), i32.
static MlirValue clamp(struct attn_builder *b, MlirValue x, int64_t n) {
  x = attn_b_binary(b, "arith.maxsi", x, attn_b_i32(b, 0));
  return attn_b_binary(b, "arith.minsi", x, attn_b_i32(b, n - 1));
}

/// The shared word of key block i of the bounds (i32).
static MlirValue word_at(const struct kl *e, MlirValue i) {
  return attn_k_smem_ptr(e->b, e->words, attn_k_mulc(e->b, i, 4));
}

/// Zeroes the words, every thread a stride of them, then meets.
static void zero_words(const struct kl *e) {
  struct attn_builder *b = e->b;
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->tid),
                  attn_k_to_index(b, e->nblocks), attn_b_index(b, KL_THREADS),
                  0, NULL);
  attn_k_store(b, attn_b_i32(b, 0),
               word_at(e, attn_k_from_index(b, loop.iv)));
  attn_b_for_close(b, &loop, 0, NULL);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
}

/// The items: each thread's key columns, every row of the query block down
/// each, or'd into its key block's word.
static void classify(const struct kl *e, struct attn_k_fn *fn) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  int g = k->key_lists_grain;
  int64_t cols = k->block_n / g, rows = k->block_m / g;
  MlirValue items = attn_k_mulc(b, e->nblocks, cols);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->tid),
                  attn_k_to_index(b, items), attn_b_index(b, KL_THREADS), 0,
                  NULL);
  MlirValue t = attn_k_from_index(b, loop.iv);
  MlirValue i = attn_k_divc(b, t, cols);
  MlirValue kv = attn_b_addi(
      b, attn_k_mulc(b, attn_b_addi(b, e->first, i), k->block_n),
      attn_k_mulc(b, attn_k_remc(b, t, cols), g));
  struct attn_b_if inside;
  attn_b_if_open(b, &inside, attn_k_cmpc(b, ATTN_B_ULT, kv, k->seq_k), 0,
                 NULL, false);
  attn_k_fn_point_key(b, fn, kv);
  MlirValue f = attn_b_constant(b, attn_b_attr_bool(b, false));
  MlirValue init[2] = {f, f}; // a visible key seen, a hidden one seen
  int unroll = rows % KL_UNROLL == 0 ? KL_UNROLL : 1;
  struct attn_b_for down;
  attn_b_for_open(b, &down, attn_b_index(b, 0), attn_b_index(b, rows),
                  attn_b_index(b, unroll), 2, init);
  {
    MlirValue t1 = attn_b_constant(b, attn_b_attr_bool(b, true));
    MlirValue seen[2] = {down.args[0], down.args[1]};
    MlirValue r0 = attn_k_from_index(b, down.iv);
    for (int u = 0; u < unroll; ++u) {
      MlirValue q0 = attn_b_addi(b, e->row0,
                                 attn_k_mulc(b, attn_k_addc(b, r0, u), g));
      // The box's rows within [0, seq_q): from q0 (or row 0) to q0 + g - 1.
      MlirValue live = attn_b_andi(
          b,
          attn_b_cmpi(b, ATTN_B_SGE, attn_k_addc(b, q0, g - 1),
                      attn_b_i32(b, 0)),
          attn_b_cmpi(b, ATTN_B_SLT, q0, attn_b_i32(b, k->seq_q)));
      MlirValue vis = attn_k_fn_point_visible(b, fn, clamp(b, q0, k->seq_q));
      seen[0] = attn_b_ori(b, seen[0], attn_b_andi(b, live, vis));
      seen[1] = attn_b_ori(b, seen[1],
                           attn_b_andi(b, live, attn_b_xori(b, vis, t1)));
    }
    attn_b_for_close(b, &down, 2, seen);
  }
  MlirValue bits = attn_b_ori(
      b, attn_b_cast(b, "arith.extui", attn_b_result(down.op, 0), b->t.i32),
      attn_k_mulc(b, attn_b_cast(b, "arith.extui", attn_b_result(down.op, 1),
                                 b->t.i32),
                  2));
  MlirValue opd[2] = {attn_k_ptrtoint(b, word_at(e, i), b->t.i32), bits};
  attn_k_asm(b, (MlirType){NULL}, "r,r", "red.shared.or.b32 [$0], $1;", 2,
             opd);
  attn_b_if_close(b, &inside, 0, NULL);
  attn_b_for_close(b, &loop, 0, NULL);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
}

/// Thread 0 writes the row: the blocks with a visible key, in key order,
/// after their count; the bounds' first block when there is none.
static void write_row(const struct kl *e) {
  struct attn_builder *b = e->b;
  struct attn_b_if one;
  attn_b_if_open(b, &one, attn_k_cmpc(b, ATTN_B_EQ, e->tid, 0), 0, NULL,
                 false);
  MlirValue zero = attn_b_i32(b, 0);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_b_index(b, 0), attn_k_to_index(b, e->nblocks),
                  attn_b_index(b, 1), 1, &zero);
  {
    MlirValue i = attn_k_from_index(b, loop.iv), n = loop.args[0];
    MlirValue w = attn_k_load(b, word_at(e, i), b->t.i32);
    MlirValue seen = attn_k_cmpc(b, ATTN_B_NE, attn_k_andc(b, w, 1), 0);
    struct attn_b_if keep;
    attn_b_if_open(b, &keep, seen, 0, NULL, false);
    MlirValue full = attn_k_cmpc(b, ATTN_B_EQ, w, 1);
    MlirValue entry = attn_b_addi(
        b, attn_k_mulc(b, attn_b_addi(b, e->first, i), 2),
        attn_b_cast(b, "arith.extui", full, b->t.i32));
    attn_k_store(b, entry,
                 attn_k_gep_elem(b, e->out, attn_k_addc(b, n, 1), b->t.i32));
    attn_b_if_close(b, &keep, 0, NULL);
    MlirValue next =
        attn_b_addi(b, n, attn_b_cast(b, "arith.extui", seen, b->t.i32));
    attn_b_for_close(b, &loop, 1, &next);
  }
  MlirValue n = attn_b_result(loop.op, 0);
  MlirValue none = attn_k_cmpc(b, ATTN_B_EQ, n, 0);
  struct attn_b_if empty;
  attn_b_if_open(b, &empty, none, 0, NULL, false);
  attn_k_store(b, attn_k_mulc(b, e->first, 2),
               attn_k_gep_elem(b, e->out, attn_b_i32(b, 1), b->t.i32));
  attn_b_if_close(b, &empty, 0, NULL);
  attn_k_store(b, attn_b_select(b, none, attn_b_i32(b, 1), n), e->out);
  attn_b_if_close(b, &one, 0, NULL);
}

static void build_body(struct kl *e, const struct attn_b_func *f) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  e->tid = attn_k_sreg(b, "tid.x");
  e->qb = attn_k_sreg(b, "ctaid.x");
  MlirValue ht = attn_k_sreg(b, "ctaid.y"), bt = attn_k_sreg(b, "ctaid.z");
  e->row0 = attn_k_addc(b, attn_k_mulc(b, e->qb, k->block_m),
                        -k->key_lists_shift);
  e->first = attn_k_key_table_load(b, k, e->qb, 0);
  e->nblocks =
      attn_b_subi(b, attn_k_key_table_load(b, k, e->qb, 1), e->first);
  e->words = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  int64_t nq = attn_hopper_query_blocks(k);
  MlirValue row = attn_b_addi(
      b,
      attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bt, k->key_lists_heads), ht),
                  nq),
      e->qb);
  e->out = attn_k_gep_elem(
      b, attn_b_func_arg(f, attn_hopper_nargs(k)),
      attn_k_mulc(b, row, attn_hopper_key_blocks(k) + 1), b->t.i32);
  MlirValue caps[ATTN_K_FN_PTRS];
  attn_k_capture_args(k, f, caps);
  struct attn_k_fn fn;
  attn_k_fn_init(&fn, k, caps);
  attn_k_fn_point_tile(b, &fn, bt, ht);
  zero_words(e);
  classify(e, &fn);
  write_row(e);
  attn_k_fn_free(&fn);
}

/// The attn.launch entry: the grid (query blocks, ht, bt), KL_THREADS
/// threads, a shared word per key block, the caller's tensors and
/// key_lists, and the grain (docs/runtime.md).
static MlirAttribute launch_attr(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  const struct attn_k_param base[4] = {
      {.name = "q", .dtype = ty, .shape = {k->batch, k->heads, k->seq_q,
                                           k->head_dim}},
      {.name = "k", .dtype = ty, .shape = {k->batch, k->kv_heads, k->seq_k,
                                           k->head_dim}},
      {.name = "v", .dtype = ty, .shape = {k->batch, k->kv_heads, k->seq_k,
                                           k->head_dim}},
      {.name = "out", .dtype = ty,
       .shape = {k->batch, k->heads, k->seq_q, k->head_dim}},
  };
  struct attn_k_param p[ATTN_K_MAX_PARAMS];
  int n = attn_k_args_params(k, base, p);
  p[n++] = (struct attn_k_param){.name = "key_lists", .dtype = "i32",
                                 .rank = 1,
                                 .shape = {attn_hopper_key_lists_words(k)}};
  int64_t grid[3] = {attn_hopper_query_blocks(k), k->key_lists_heads,
                     k->key_lists_batch};
  MlirNamedAttribute grain =
      attn_b_named(b, "grain", attn_b_attr_i64(b, k->key_lists_grain));
  return attn_k_launch_attr(b, "key-lists", grid, KL_THREADS,
                            4 * attn_hopper_key_blocks(k), n, p, 1, &grain);
}

bool attn_kernels_build_key_lists(MlirOperation gpu_module, MlirLocation loc,
                                  const struct attn_hopper_kernel *k) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_k_declare_libdevice(&b, gpu_module, 16);
  char name[320];
  snprintf(name, sizeof name, "%s__key_lists", k->name);
  int nargs = attn_hopper_nargs(k);
  MlirAttribute args[4 + ATTN_HOPPER_MAX_CAPTURES + 1];
  for (int i = 0; i < nargs; ++i)
    args[i] = attn_hopper_arg_at(k, i) < ATTN_HOPPER_ARG_CAPTURE
                  ? mlirDictionaryAttrGet(ctx, 0, NULL)
                  : attn_k_fn_capture_attrs(&b);
  MlirNamedAttribute wo =
      attn_b_named(&b, "llvm.writeonly", attn_b_attr_unit(&b));
  args[nargs] = mlirDictionaryAttrGet(ctx, 1, &wo);
  MlirNamedAttribute attrs[5];
  attrs[0] = attn_b_named(&b, "arg_attrs", mlirArrayAttrGet(ctx, nargs + 1, args));
  intptr_t nattrs =
      1 + attn_k_kernel_attrs(&b, KL_THREADS, launch_attr(&b, k), attrs + 1);
  struct attn_b_func f;
  attn_builder_role(&b, "key-lists");
  attn_k_llvm_func_open(&b, &f, name, nargs + 1, nattrs, attrs);
  struct kl e = {.b = &b, .k = k};
  if (!mlirOperationIsNull(f.op))
    build_body(&e, &f);
  return attn_k_llvm_func_finish(&b, &f);
}
