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
//   grid (query blocks, ht, bt), 1024 threads (256 at a grain above 1).
//   Item t of a CTA is one key
//   column of one key block within the bounds of @<name>__keys; its thread
//   evaluates the functions down the query block's rows (one point per
//   grain x grain box: attn_mask_program_uniform proved the functions
//   yield one value over each) and ors into the block's shared word bit 0
//   when it saw a visible key and bit 1 when it saw a hidden one. The CTA
//   then writes the row of key_lists: the blocks with bit 0, in key order
//   (placed by warp ballots), each 2 kb + (bit 1 clear), after their count.
//
// What the bodies compute of the key alone is made once per item, of the
// batch and head once per CTA (score_fn.c's point evaluations). Keys past
// the end and rows outside [0, seq_q) are not evaluated: the attention
// kernel masks the former itself, the latter are not stored.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Threads of the key-list kernel's CTA: one CTA per query block keeps
/// the row's compaction in it; 1024 (32 warps an SM busy) where every point
/// is evaluated (a grain of 1), else 256 (a point per box: little work, many
/// rows).
static int kl_threads(const struct attn_hopper_kernel *k) {
  return k->key_lists_grain == 1 ? 1024 : 256;
}
/// The most shared memory the key-list kernel takes: what every chip from
/// sm_80 gives a CTA without asking (its words grow with the key blocks,
/// its ranges with the comparisons too; past it the ranges pass is left
/// out, and past that the lists).
#define KL_SMEM_LIMIT (48 * 1024)
/// Rows one step of an item's loop evaluates: independent loads in flight.
#define KL_UNROLL 8

/// Most comparisons of a row value with a key value the ranges pass reads,
/// and most nodes of the and/or trees above them.
#define KL_MAX_SEPS 2
#define KL_MAX_NODES 16

/// A node of the tree of a mask function's result: an and or or of two
/// nodes, a comparison of a value of the row (b, h, q) with a value of the
/// key (b, h, kv) whose ranges over a block can tell it (sep), or anything
/// else (opaque).
enum node_kind { NODE_AND, NODE_OR, NODE_SEP, NODE_OPAQUE };
struct node {
  enum node_kind kind;
  int lhs, rhs;         ///< children (and, or)
  int fn, sep;          ///< sep: its mask function and its ranges' slot
  int pred;             ///< sep: arith.cmpi's predicate, row value first
  MlirValue row, key;   ///< sep: the compared values (row's, key's)
};

/// The ranges pass of a key-list kernel: the and of every mask function's
/// tree (roots), and the seps whose ranges it reduces.
struct ranges {
  int nnodes, nseps, root;
  struct node n[KL_MAX_NODES];
  int seps[KL_MAX_SEPS]; ///< node of each slot
};

/// The block arguments (bit 0 b, 1 h, 2 q, 3 kv) body value v depends on;
/// 16 for one the analysis cannot follow (too deep).
static unsigned deps_of(MlirBlock body, MlirValue v, int depth) {
  if (mlirValueIsABlockArgument(v))
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), body)
               ? 1u << mlirBlockArgumentGetArgNumber(v)
               : 0;
  if (!mlirValueIsAOpResult(v))
    return 0;
  MlirOperation op = mlirOpResultGetOwner(v);
  if (!mlirBlockEqual(mlirOperationGetBlock(op), body))
    return 0; // a capture or a value from above the body
  if (depth > 64)
    return 16;
  unsigned d = 0;
  for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n; ++i)
    d |= deps_of(body, mlirOperationGetOperand(op, i), depth + 1);
  return d;
}

static bool op_is(MlirOperation op, const char *name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && !memcmp(n.data, name, n.length);
}

/// arith.cmpi's predicate with its operands swapped.
static int swapped(int pred) {
  static const int sw[10] = {0, 1, 4, 5, 2, 3, 8, 9, 6, 7};
  return pred >= 0 && pred < 10 ? sw[pred] : pred;
}

/// Adds the tree of i1 value v of mask function fi's body to r: its node,
/// or -1 when r is full.
static int add_tree(struct ranges *r, const struct attn_hopper_kernel *k,
                    int fi, MlirValue v, int depth) {
  if (r->nnodes == KL_MAX_NODES)
    return -1;
  MlirBlock body = k->mask_fns[fi];
  int at = r->nnodes++;
  struct node *n = &r->n[at];
  n->kind = NODE_OPAQUE;
  if (!mlirValueIsAOpResult(v) || depth > 8)
    return at;
  MlirOperation op = mlirOpResultGetOwner(v);
  if (!mlirBlockEqual(mlirOperationGetBlock(op), body))
    return at;
  if ((op_is(op, "arith.andi") || op_is(op, "arith.ori")) &&
      mlirOperationGetNumOperands(op) == 2) {
    int a = add_tree(r, k, fi, mlirOperationGetOperand(op, 0), depth + 1);
    int c = add_tree(r, k, fi, mlirOperationGetOperand(op, 1), depth + 1);
    if (a < 0 || c < 0)
      return at; // opaque
    r->n[at].kind = op_is(op, "arith.andi") ? NODE_AND : NODE_OR;
    r->n[at].lhs = a;
    r->n[at].rhs = c;
    return at;
  }
  if (!op_is(op, "arith.cmpi") || r->nseps == KL_MAX_SEPS)
    return at;
  MlirValue x = mlirOperationGetOperand(op, 0), y = mlirOperationGetOperand(op, 1);
  MlirType t = mlirValueGetType(x);
  if (!mlirTypeIsAIndex(t) &&
      !(mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) > 1 &&
        mlirIntegerTypeGetWidth(t) <= 64))
    return at;
  MlirAttribute pa = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("predicate"));
  if (mlirAttributeIsNull(pa) || !mlirAttributeIsAInteger(pa))
    return at;
  int pred = (int)mlirIntegerAttrGetValueInt(pa);
  unsigned dx = deps_of(body, x, 0), dy = deps_of(body, y, 0);
  const unsigned rows = 1 | 2 | 4, keys = 1 | 2 | 8;
  if ((dx & ~rows) == 0 && (dy & ~keys) == 0) {
    n->row = x;
    n->key = y;
    n->pred = pred;
  } else if ((dy & ~rows) == 0 && (dx & ~keys) == 0) {
    n->row = y;
    n->key = x;
    n->pred = swapped(pred);
  } else {
    return at;
  }
  // Each side a block argument or a value of the body (made at a row or
  // a key by attn_k_fn_point_value), not one from above it.
  for (int side = 0; side < 2; ++side) {
    MlirValue w = side ? n->key : n->row;
    if (mlirValueIsABlockArgument(w)
            ? !mlirBlockEqual(mlirBlockArgumentGetOwner(w), body)
            : !mlirBlockEqual(mlirOperationGetBlock(mlirOpResultGetOwner(w)),
                              body))
      return at;
  }
  n->kind = NODE_SEP;
  n->fn = fi;
  n->sep = r->nseps;
  r->seps[r->nseps++] = at;
  return at;
}

/// The ranges pass of k's mask functions; false when no comparison of a
/// row value with a key value is found (every block is then evaluated).
static bool plan_ranges(const struct attn_hopper_kernel *k, struct ranges *r) {
  memset(r, 0, sizeof *r);
  int roots[ATTN_HOPPER_MAX_FNS] = {0}, n = 0;
  if (k->nmask_fns <= 0)
    return false;
  for (int f = 0; f < k->nmask_fns; ++f) {
    MlirOperation y = mlirBlockGetTerminator(k->mask_fns[f]);
    if (mlirOperationIsNull(y) || mlirOperationGetNumOperands(y) != 1)
      return false;
    roots[n] = add_tree(r, k, f, mlirOperationGetOperand(y, 0), 0);
    if (roots[n++] < 0)
      return false;
  }
  r->root = roots[0];
  for (int i = 1; i < n; ++i) { // the functions are and-ed
    if (r->nnodes == KL_MAX_NODES)
      return false;
    r->n[r->nnodes] = (struct node){.kind = NODE_AND, .lhs = r->root,
                                    .rhs = roots[i]};
    r->root = r->nnodes++;
  }
  return r->nseps > 0;
}

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
#define MAX_GRAIN_BOXES (1 << 20)

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

/// Bytes of shared memory before the row ranges (the words, 8-aligned), and
/// in all with nseps comparisons: the words, then per comparison the row
/// values' [min, max] (two i64), then per comparison and key block the key
/// values' [min, max].
static int64_t rows_at(const struct attn_hopper_kernel *k) {
  return (4 * attn_hopper_key_blocks(k) + 7) / 8 * 8;
}
static int64_t keys_at(const struct attn_hopper_kernel *k, int nseps) {
  return rows_at(k) + 16 * nseps;
}
/// Then one i32 per warp for the lists' compaction.
static int64_t scan_at(const struct attn_hopper_kernel *k, int nseps) {
  return keys_at(k, nseps) + 16 * nseps * attn_hopper_key_blocks(k);
}
static int64_t smem_bytes(const struct attn_hopper_kernel *k, int nseps) {
  return scan_at(k, nseps) + 4 * (kl_threads(k) / 32);
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
  // (Past the limit the mask functions run on every block, as without.)
  k->key_lists = smem_bytes(k, 0) <= KL_SMEM_LIMIT;
  return k->key_lists;
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
  struct ranges r;
  bool ranged; ///< the ranges pass runs (r holds a comparison)
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

/// Whether arith.cmpi predicate pred compares unsigned.
static bool unsigned_pred(int pred) { return pred >= ATTN_B_ULT; }

/// The shared i64 at byte offset off + 8 i (i i32, or null for 0).
static MlirValue range_at(const struct kl *e, int64_t off, MlirValue i) {
  struct attn_builder *b = e->b;
  MlirValue o = attn_b_i32(b, (int32_t)off);
  if (!mlirValueIsNull(i))
    o = attn_b_addi(b, o, attn_k_mulc(b, i, 8));
  return attn_k_smem_ptr(b, e->words, o);
}

/// The [min, max] slots of comparison c's row values, and of its key values
/// in key block i of the bounds.
static MlirValue row_range(const struct kl *e, int c, int hi) {
  return range_at(e, rows_at(e->k) + 16 * c + 8 * hi, (MlirValue){NULL});
}
static MlirValue key_range(const struct kl *e, int c, MlirValue i, int hi) {
  struct attn_builder *b = e->b;
  int64_t base = keys_at(e->k, e->r.nseps) +
                 16 * (int64_t)c * attn_hopper_key_blocks(e->k) + 8 * hi;
  return range_at(e, base, attn_k_mulc(b, i, 2));
}

/// The empty range's ends of comparison c: [max, min] of its order.
static void empty_range(const struct kl *e, int c, MlirValue *lo,
                        MlirValue *hi) {
  bool u = unsigned_pred(e->r.n[e->r.seps[c]].pred);
  *lo = attn_b_i64(e->b, u ? -1 : INT64_MAX);
  *hi = attn_b_i64(e->b, u ? 0 : INT64_MIN);
}

/// The words (4: to be evaluated, or 0 when the ranges pass will set them)
/// and, with it, the ranges emptied; every thread a stride of them, then
/// the CTA meets.
static void init_words(const struct kl *e) {
  struct attn_builder *b = e->b;
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->tid),
                  attn_k_to_index(b, e->nblocks), attn_b_index(b, kl_threads(e->k)),
                  0, NULL);
  MlirValue i = attn_k_from_index(b, loop.iv);
  attn_k_store(b, attn_b_i32(b, e->ranged ? 0 : 4), word_at(e, i));
  for (int c = 0; e->ranged && c < e->r.nseps; ++c) {
    MlirValue lo, hi;
    empty_range(e, c, &lo, &hi);
    attn_k_store(b, lo, key_range(e, c, i, 0));
    attn_k_store(b, hi, key_range(e, c, i, 1));
  }
  attn_b_for_close(b, &loop, 0, NULL);
  if (e->ranged) {
    struct attn_b_if first;
    attn_b_if_open(b, &first, attn_k_cmpc(b, ATTN_B_EQ, e->tid, 0), 0, NULL,
                   false);
    for (int c = 0; c < e->r.nseps; ++c) {
      MlirValue lo, hi;
      empty_range(e, c, &lo, &hi);
      attn_k_store(b, lo, row_range(e, c, 0));
      attn_k_store(b, hi, row_range(e, c, 1));
    }
    attn_b_if_close(b, &first, 0, NULL);
  }
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
}

/// v (an integer or index of comparison c) as an i64 in c's order.
static MlirValue to_i64(const struct kl *e, int c, MlirValue v) {
  struct attn_builder *b = e->b;
  bool u = unsigned_pred(e->r.n[e->r.seps[c]].pred);
  MlirType t = mlirValueGetType(v);
  if (mlirTypeIsAIndex(t))
    return attn_b_cast(b, u ? "arith.index_castui" : "arith.index_cast", v,
                       b->t.i64);
  if (mlirIntegerTypeGetWidth(t) == 64)
    return v;
  return attn_b_cast(b, u ? "arith.extui" : "arith.extsi", v, b->t.i64);
}

/// Folds v (i64) into the shared range [lo, hi] of comparison c.
static void reduce_range(const struct kl *e, int c, MlirValue lo,
                         MlirValue hi, MlirValue v) {
  struct attn_builder *b = e->b;
  bool u = unsigned_pred(e->r.n[e->r.seps[c]].pred);
  MlirValue a[2] = {attn_k_ptrtoint(b, lo, b->t.i32), v};
  attn_k_asm(b, (MlirType){NULL}, "r,l",
             u ? "red.shared.min.u64 [$0], $1;" : "red.shared.min.s64 [$0], $1;",
             2, a);
  a[0] = attn_k_ptrtoint(b, hi, b->t.i32);
  attn_k_asm(b, (MlirType){NULL}, "r,l",
             u ? "red.shared.max.u64 [$0], $1;" : "red.shared.max.s64 [$0], $1;",
             2, a);
}

/// The ranges pass: each comparison's row values over the query block's
/// rows and its key values over each key block, then each block's word
/// from what the ranges tell: 1 (every key visible), 2 (none), or 4 (to be
/// evaluated point by point).
static void ranges_pass(const struct kl *e, struct attn_k_fn *fn) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  // Rows: thread t the block's row t, within [0, seq_q).
  MlirValue q = attn_b_addi(b, e->row0, e->tid);
  MlirValue live = attn_b_andi(
      b, attn_k_cmpc(b, ATTN_B_ULT, e->tid, k->block_m),
      attn_b_andi(b, attn_b_cmpi(b, ATTN_B_SGE, q, attn_b_i32(b, 0)),
                  attn_b_cmpi(b, ATTN_B_SLT, q, attn_b_i32(b, k->seq_q))));
  struct attn_b_if row;
  attn_b_if_open(b, &row, live, 0, NULL, false);
  for (int c = 0; c < e->r.nseps; ++c) {
    const struct node *n = &e->r.n[e->r.seps[c]];
    MlirValue v =
        attn_k_fn_point_value(b, fn, n->fn, n->row, q, (MlirValue){NULL});
    if (mlirValueIsNull(v))
      break;
    reduce_range(e, c, row_range(e, c, 0), row_range(e, c, 1), to_i64(e, c, v));
  }
  attn_b_if_close(b, &row, 0, NULL);
  // Keys: item t the key t % block_n of block t / block_n, within seq_k.
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->tid),
                  attn_k_to_index(b, attn_k_mulc(b, e->nblocks, k->block_n)),
                  attn_b_index(b, kl_threads(e->k)), 0, NULL);
  {
    MlirValue t = attn_k_from_index(b, loop.iv);
    MlirValue i = attn_k_divc(b, t, k->block_n);
    MlirValue kv = attn_b_addi(
        b, attn_k_mulc(b, attn_b_addi(b, e->first, i), k->block_n),
        attn_k_remc(b, t, k->block_n));
    struct attn_b_if key;
    attn_b_if_open(b, &key, attn_k_cmpc(b, ATTN_B_ULT, kv, k->seq_k), 0, NULL,
                   false);
    for (int c = 0; c < e->r.nseps; ++c) {
      const struct node *n = &e->r.n[e->r.seps[c]];
      MlirValue v =
          attn_k_fn_point_value(b, fn, n->fn, n->key, (MlirValue){NULL}, kv);
      if (mlirValueIsNull(v))
        break;
      reduce_range(e, c, key_range(e, c, i, 0), key_range(e, c, i, 1),
                   to_i64(e, c, v));
    }
    attn_b_if_close(b, &key, 0, NULL);
  }
  attn_b_for_close(b, &loop, 0, NULL);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
  // Blocks: thread t block t of the bounds.
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->tid),
                  attn_k_to_index(b, e->nblocks), attn_b_index(b, kl_threads(e->k)),
                  0, NULL);
  {
    MlirValue i = attn_k_from_index(b, loop.iv);
    MlirValue sure[KL_MAX_NODES][2]; // [node]: surely true, surely false
    MlirValue no = attn_b_constant(b, attn_b_attr_bool(b, false));
    for (int at = e->r.nnodes - 1; at >= 0; --at) { // children after parents
      const struct node *n = &e->r.n[at];
      sure[at][0] = sure[at][1] = no;
      if (n->kind == NODE_SEP) {
        int c = n->sep;
        MlirValue alo = attn_k_load(b, row_range(e, c, 0), b->t.i64),
                  ahi = attn_k_load(b, row_range(e, c, 1), b->t.i64),
                  blo = attn_k_load(b, key_range(e, c, i, 0), b->t.i64),
                  bhi = attn_k_load(b, key_range(e, c, i, 1), b->t.i64);
        bool u = unsigned_pred(n->pred);
        enum attn_b_cmpi lt = u ? ATTN_B_ULT : ATTN_B_SLT,
                         le = u ? ATTN_B_ULE : ATTN_B_SLE;
        // The order's predicate as its signed twin (the order is u).
        switch (u ? n->pred - (ATTN_B_ULT - ATTN_B_SLT) : n->pred) {
        case ATTN_B_EQ:
        case ATTN_B_NE: { // one value on both sides; disjoint ranges
          MlirValue one = attn_b_andi(
              b, attn_b_andi(b, attn_b_cmpi(b, ATTN_B_EQ, alo, ahi),
                             attn_b_cmpi(b, ATTN_B_EQ, blo, bhi)),
              attn_b_cmpi(b, ATTN_B_EQ, alo, blo));
          MlirValue apart = attn_b_ori(b, attn_b_cmpi(b, lt, ahi, blo),
                                       attn_b_cmpi(b, lt, bhi, alo));
          bool eq = n->pred == ATTN_B_EQ;
          sure[at][0] = eq ? one : apart;
          sure[at][1] = eq ? apart : one;
          break;
        }
        case ATTN_B_SLT: // row < key
          sure[at][0] = attn_b_cmpi(b, lt, ahi, blo);
          sure[at][1] = attn_b_cmpi(b, le, bhi, alo);
          break;
        case ATTN_B_SLE:
          sure[at][0] = attn_b_cmpi(b, le, ahi, blo);
          sure[at][1] = attn_b_cmpi(b, lt, bhi, alo);
          break;
        case ATTN_B_SGT:
          sure[at][0] = attn_b_cmpi(b, lt, bhi, alo);
          sure[at][1] = attn_b_cmpi(b, le, ahi, blo);
          break;
        default: // SGE
          sure[at][0] = attn_b_cmpi(b, le, bhi, alo);
          sure[at][1] = attn_b_cmpi(b, lt, ahi, blo);
          break;
        }
      } else if (n->kind == NODE_AND) {
        sure[at][0] = attn_b_andi(b, sure[n->lhs][0], sure[n->rhs][0]);
        sure[at][1] = attn_b_ori(b, sure[n->lhs][1], sure[n->rhs][1]);
      } else if (n->kind == NODE_OR) {
        sure[at][0] = attn_b_ori(b, sure[n->lhs][0], sure[n->rhs][0]);
        sure[at][1] = attn_b_andi(b, sure[n->lhs][1], sure[n->rhs][1]);
      }
    }
    MlirValue w = attn_b_select(
        b, sure[e->r.root][0], attn_b_i32(b, 1),
        attn_b_select(b, sure[e->r.root][1], attn_b_i32(b, 2),
                      attn_b_i32(b, 4)));
    attn_k_store(b, w, word_at(e, i));
  }
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
                  attn_k_to_index(b, items), attn_b_index(b, kl_threads(e->k)), 0,
                  NULL);
  MlirValue t = attn_k_from_index(b, loop.iv);
  MlirValue i = attn_k_divc(b, t, cols);
  MlirValue kv = attn_b_addi(
      b, attn_k_mulc(b, attn_b_addi(b, e->first, i), k->block_n),
      attn_k_mulc(b, attn_k_remc(b, t, cols), g));
  // Keys within seq_k, of blocks the ranges pass left to be evaluated.
  MlirValue todo = attn_k_cmpc(
      b, ATTN_B_NE, attn_k_andc(b, attn_k_load(b, word_at(e, i), b->t.i32), 4),
      0);
  struct attn_b_if inside;
  attn_b_if_open(b, &inside,
                 attn_b_andi(b, attn_k_cmpc(b, ATTN_B_ULT, kv, k->seq_k), todo),
                 0, NULL, false);
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

/// The row: the blocks with a visible key, in key order, after their count
/// (the bounds' first block when there is none). Each chunk of the CTA's
/// threads, a block each, places its blocks by a warp ballot and the counts
/// of the warps before it.
static void write_row(const struct kl *e) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  int threads = kl_threads(k), warps = threads / 32;
  MlirValue lane = attn_k_remc(b, e->tid, 32), warp = attn_k_divc(b, e->tid, 32);
  MlirValue mine = attn_b_subi(
      b, attn_b_binary(b, "arith.shli", attn_b_i32(b, 1), lane),
      attn_b_i32(b, 1)); // the lanes below this one
  MlirValue scan = attn_k_smem_ptr(
      b, e->words, attn_b_i32(b, (int32_t)scan_at(k, e->r.nseps)));
  MlirValue zero = attn_b_i32(b, 0);
  struct attn_b_for chunk;
  attn_b_for_open(b, &chunk, attn_b_index(b, 0), attn_k_to_index(b, e->nblocks),
                  attn_b_index(b, threads), 1, &zero);
  {
    MlirValue n = chunk.args[0];
    MlirValue i = attn_b_addi(b, attn_k_from_index(b, chunk.iv), e->tid);
    MlirValue in = attn_b_cmpi(b, ATTN_B_ULT, i, e->nblocks);
    MlirValue w = attn_k_load(
        b, word_at(e, attn_b_minui(b, i, attn_k_addc(b, e->nblocks, -1))),
        b->t.i32);
    MlirValue seen = attn_b_andi(
        b, in, attn_k_cmpc(b, ATTN_B_NE, attn_k_andc(b, w, 1), 0));
    MlirValue bal = attn_k_ballot(b, seen);
    MlirValue pos = attn_k_popc(b, attn_b_andi(b, bal, mine));
    struct attn_b_if lead;
    attn_b_if_open(b, &lead, attn_k_cmpc(b, ATTN_B_EQ, lane, 0), 0, NULL,
                   false);
    attn_k_store(b, attn_k_popc(b, bal),
                 attn_k_gep_elem(b, scan, warp, b->t.i32));
    attn_b_if_close(b, &lead, 0, NULL);
    attn_k_bar_sync(b, (MlirValue){NULL}, 0);
    MlirValue init[2] = {zero, zero}; // before this warp, in all
    struct attn_b_for sum;
    attn_b_for_open(b, &sum, attn_b_index(b, 0), attn_b_index(b, warps),
                    attn_b_index(b, 1), 2, init);
    {
      MlirValue x = attn_k_from_index(b, sum.iv);
      MlirValue c = attn_k_load(b, attn_k_gep_elem(b, scan, x, b->t.i32),
                                b->t.i32);
      MlirValue next[2] = {
          attn_b_addi(b, sum.args[0],
                      attn_b_select(b, attn_b_cmpi(b, ATTN_B_ULT, x, warp), c,
                                    zero)),
          attn_b_addi(b, sum.args[1], c)};
      attn_b_for_close(b, &sum, 2, next);
    }
    MlirValue at = attn_b_addi(
        b, n, attn_b_addi(b, attn_b_result(sum.op, 0), pos));
    struct attn_b_if keep;
    attn_b_if_open(b, &keep, seen, 0, NULL, false);
    MlirValue full = attn_k_cmpc(b, ATTN_B_EQ, attn_k_andc(b, w, 3), 1);
    MlirValue entry = attn_b_addi(
        b, attn_k_mulc(b, attn_b_addi(b, e->first, i), 2),
        attn_b_cast(b, "arith.extui", full, b->t.i32));
    attn_k_store(b, entry,
                 attn_k_gep_elem(b, e->out, attn_k_addc(b, at, 1), b->t.i32));
    attn_b_if_close(b, &keep, 0, NULL);
    attn_k_bar_sync(b, (MlirValue){NULL}, 0); // before the counts are reused
    MlirValue next = attn_b_addi(b, n, attn_b_result(sum.op, 1));
    attn_b_for_close(b, &chunk, 1, &next);
  }
  MlirValue n = attn_b_result(chunk.op, 0);
  struct attn_b_if one;
  attn_b_if_open(b, &one, attn_k_cmpc(b, ATTN_B_EQ, e->tid, 0), 0, NULL,
                 false);
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
  init_words(e);
  if (e->ranged)
    ranges_pass(e, &fn);
  classify(e, &fn);
  write_row(e);
  attn_k_fn_free(&fn);
}

/// The attn.launch entry: the grid (query blocks, ht, bt), kl_threads
/// threads, a shared word per key block, the caller's tensors and
/// key_lists, and the grain (docs/runtime.md).
static MlirAttribute launch_attr(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k,
                                 int nseps) {
  struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE];
  attn_k_qkvo_params(k, base);
  struct attn_k_param p[ATTN_K_MAX_PARAMS];
  int n = attn_k_args_params(k, base, p);
  p[n++] = (struct attn_k_param){.name = "key_lists", .dtype = "i32",
                                 .rank = 1,
                                 .shape = {attn_hopper_key_lists_words(k)}};
  int64_t grid[3] = {attn_hopper_query_blocks(k), k->key_lists_heads,
                     k->key_lists_batch};
  MlirNamedAttribute grain =
      attn_b_named(b, "grain", attn_b_attr_i64(b, k->key_lists_grain));
  return attn_k_launch_attr(b, "key-lists", grid, kl_threads(k),
                            smem_bytes(k, nseps), n, p, 1, &grain);
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
  MlirAttribute args[5 + ATTN_HOPPER_MAX_CAPTURES + 1];
  for (int i = 0; i < nargs; ++i)
    args[i] = attn_hopper_arg_at(k, i) < ATTN_HOPPER_ARG_CAPTURE
                  ? mlirDictionaryAttrGet(ctx, 0, NULL)
                  : attn_k_fn_capture_attrs(&b);
  MlirNamedAttribute wo =
      attn_b_named(&b, "llvm.writeonly", attn_b_attr_unit(&b));
  args[nargs] = mlirDictionaryAttrGet(ctx, 1, &wo);
  struct kl e = {.b = &b, .k = k};
  // Ranges only where every point is otherwise evaluated (a grain of 1).
  e.ranged = k->key_lists_grain == 1 && plan_ranges(k, &e.r) &&
             smem_bytes(k, e.r.nseps) <= KL_SMEM_LIMIT;
  if (!e.ranged)
    e.r.nseps = 0;
  MlirNamedAttribute attrs[5];
  attrs[0] = attn_b_named(&b, "arg_attrs", mlirArrayAttrGet(ctx, nargs + 1, args));
  intptr_t nattrs = 1 + attn_k_kernel_attrs(
                            &b, kl_threads(k), launch_attr(&b, k, e.r.nseps),
                            attrs + 1);
  struct attn_b_func f;
  attn_builder_role(&b, "key-lists");
  attn_k_llvm_func_open(&b, &f, name, nargs + 1, nattrs, attrs);
  if (!mlirOperationIsNull(f.op))
    build_body(&e, &f);
  return attn_k_llvm_func_finish(&b, &f);
}
