//===- hopper_attention.c - The warp-specialised Hopper attention kernel --===//
//
// Builds one fused attention kernel for sm_90a as IR in the LLVM and NVVM
// dialects (scf/arith for control flow and scalar math; TMA, mbarrier
// init/arrive, wgmma fence/commit/wait and setmaxnreg as NVVM ops), with
// inline PTX for what the dialects do not spell: wgmma itself (A in
// registers for P.V), the mbarrier wait loop, named barriers. The top floor
// of the Hopper attention family. Structure (FlashAttention-3 style):
//
//   warpgroup 0 (producer)  thread 0: TMA loads of Q once, then K and V
//                           tiles into a `stages`-deep ring of shared-memory
//                           buffers; warps 1-3: RoPE of K tiles or of Q, or
//                           the ahead team (attention_producer.c)
//   warpgroups 1 .. W       64 query rows each (W = 2 at head dim 64, 128
//                           or 256, or 3 at 64):
//   (consumers)             RoPE of their Q rows once, then per key block
//                           S = Q.K^T and O += P.V by wgmma around the
//                           online softmax (attention_consumer.c)
//
// By default the kernel is persistent: one CTA per SM runs a list of tiles
// (query block, head, batch) fixed at compile time (attention_schedule.c),
// the roles carrying the ring's stage count and the Q barrier's phase from
// tile to tile (attention_pipeline.c), so that one tile's last P.V and
// epilogue overlap the next tile's loads.
//
// This file declares what the kernel refers to, builds its schedule, its
// manifest entry and the function: the CTA's setup (shared-memory base,
// mbarriers, the ones tile of row_sum_mma) and the split into producer and
// consumers with their register budgets. Ops are named "setup" here.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

// Registers per thread after setmaxnreg, [consumers - 2]: the CTA's 64K
// registers split between the producer warpgroup (more when its warps rotate
// K or Q) and the consumers (FlashAttention-3 gives 3 consumers 160). Head
// dim 256 takes the two consumers' counts: its O (128 registers) and S of
// 80 keys fit 232 (lower_tile_to_hopper.c); FlashAttention-3's 24 / 240
// spilled the TMA thread here (the pool of 168 x 384 leaves no 32 / 240).
static const int PRODUCER_REGS[2] = {56, 56};
static const int PRODUCER_REGS_NO_ROPE[2] = {40, 32};
static const int CONSUMER_REGS[2] = {224, 152};
static const int CONSUMER_REGS_NO_ROPE[2] = {232, 160};

/// Parameters of the function: the caller's tensors (q, k, v, out, with lse
/// lse, and the captures of the score and mask functions, in k's order:
/// attn_hopper_arg_at), with rope_k_ahead k_rot and rope_sync, with
/// key_lists the workspace of that name (key_lists.c), then the tensor maps
/// of q, k (k_rot's with rope_k_ahead) and v, with rope_k_ahead the raw k's.
static int first_map(const struct attn_hopper_kernel *k) {
  return attn_hopper_nargs(k) + (k->rope_k_ahead ? 2 : 0) +
         (k->key_lists ? 1 : 0);
}
static int nparams(const struct attn_hopper_kernel *k) {
  return first_map(k) + (k->rope_k_ahead ? 4 : 3);
}

/// The attn.launch entry: params in the function's order.
static MlirAttribute launch_attr(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k,
                                 MlirAttribute attention) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE];
  attn_k_qkvo_params(k, base);
  struct attn_k_param p[ATTN_K_MAX_PARAMS];
  int n = attn_k_args_params(k, base, p);
  if (k->rope_k_ahead) {
    p[n++] = (struct attn_k_param){
        .name = "k_rot", .dtype = ty, .align = 16,
        .shape = {k->batch, k->kv_heads, k->seq_k, k->head_dim}};
    p[n++] = (struct attn_k_param){
        .name = "rope_sync", .dtype = "u32", .align = 8, .rank = 1,
        .shape = {attn_hopper_ahead_sync_bytes(k) / 4}};
  }
  if (k->key_lists)
    p[n++] = (struct attn_k_param){.name = "key_lists", .dtype = "i32",
                                   .rank = 1,
                                   .shape = {attn_hopper_key_lists_words(k)}};
  // Tensor map dims run innermost first: d, N, heads, batch.
  struct attn_k_param q = {.name = "q_map", .tensor = "q", .dtype = ty,
                           .dims = {k->head_dim, k->seq_q, k->heads, k->batch},
                           .box_rows = k->block_m};
  struct attn_k_param kv = {.dtype = ty,
                            .dims = {k->head_dim, k->seq_k, k->kv_heads,
                                     k->batch},
                            .box_rows = k->block_n};
  p[n++] = q;
  p[n] = kv;
  p[n].name = "k_map";
  p[n++].tensor = k->rope_k_ahead ? "k_rot" : "k";
  p[n] = kv;
  p[n].name = "v_map";
  p[n++].tensor = "v";
  if (k->rope_k_ahead) {
    p[n] = kv;
    p[n].name = "k_raw_map";
    p[n++].tensor = "k";
  }
  int64_t grid[3];
  attn_hopper_grid(k, grid);
  MlirNamedAttribute extra = attn_b_named(b, "attention", attention);
  return attn_k_launch_attr(b, "hopper-wgmma", grid, attn_hopper_threads(k),
                            attn_hopper_smem_bytes(k), n, p,
                            mlirAttributeIsNull(attention) ? 0 : 1, &extra);
}

/// The per-argument attributes: the tensor maps are 64-byte aligned, 128
/// bytes passed by value, grid constants; the captures are read only and
/// alias nothing written (their loads may go through the read-only cache).
static MlirAttribute arg_attrs(struct attn_builder *b,
                               const struct attn_hopper_kernel *k) {
  MlirNamedAttribute m[] = {
      attn_b_named(b, "llvm.align", attn_b_attr_i64(b, 64)),
      attn_b_named(b, "llvm.byval",
                   attn_b_attr_type(b, mlirLLVMArrayTypeGet(b->t.i8, 128))),
      attn_b_named(b, "nvvm.grid_constant", attn_b_attr_unit(b)),
  };
  MlirAttribute none = mlirDictionaryAttrGet(b->ctx, 0, NULL);
  MlirAttribute map = mlirDictionaryAttrGet(b->ctx, 3, m);
  MlirAttribute all[11 + ATTN_HOPPER_MAX_CAPTURES];
  int n = nparams(k);
  for (int i = 0; i < n; ++i)
    all[i] = i >= first_map(k) ? map
             : (i < attn_hopper_nargs(k) &&
                attn_hopper_arg_at(k, i) >= ATTN_HOPPER_ARG_CAPTURE) ||
                     (k->key_lists && i == first_map(k) - 1)
                 ? attn_k_fn_capture_attrs(b)
                 : none;
  return mlirArrayAttrGet(b->ctx, n, all);
}

static void build_body(const struct attn_k_att *a,
                       const struct attn_b_func *f) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  int m0 = first_map(k);
  struct attn_k_att_vals x;
  memset(&x, 0, sizeof x);
  attn_builder_role(b, "setup");
  x.tid = attn_k_sreg(b, "tid.x");
  x.bx = attn_k_sreg(b, "ctaid.x");
  x.gx = attn_k_sreg(b, "nctaid.x");
  // Dynamic shared memory, its base rounded up to 1024 bytes for swizzling.
  MlirValue raw = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue raw_i = attn_k_ptrtoint(b, raw, b->t.i32);
  MlirValue pad =
      attn_b_subi(b,
                  attn_b_andi(b, attn_k_addc(b, raw_i, 1023),
                              attn_b_i32(b, ~1023)),
                  raw_i);
  x.smem = attn_k_smem_ptr(b, raw, pad);
  x.sbase = attn_b_addi(b, raw_i, pad);
  x.qmap = attn_k_ptrtoint(b, attn_b_func_arg(f, m0), b->t.i64);
  x.kmap = attn_k_ptrtoint(b, attn_b_func_arg(f, m0 + 1), b->t.i64);
  x.vmap = attn_k_ptrtoint(b, attn_b_func_arg(f, m0 + 2), b->t.i64);
  if (k->rope_k_ahead) {
    x.kraw_map = attn_k_ptrtoint(b, attn_b_func_arg(f, m0 + 3), b->t.i64);
    x.sync = attn_k_ptrtoint(
        b, attn_b_func_arg(f, attn_hopper_nargs(k) + 1), b->t.i64);
    x.ahead_ctx = attn_k_addc(b, x.sbase, a->ahead_ctx_off);
  }
  x.out = attn_k_gep_const(b, attn_k_arg(k, f, ATTN_HOPPER_ARG_OUT), 0);
  if (k->lse)
    x.lse = attn_k_gep_const(b, attn_k_arg(k, f, ATTN_HOPPER_ARG_LSE), 0);
  if (k->key_lists)
    x.key_lists = attn_b_func_arg(f, m0 - 1);
  attn_k_capture_args(k, f, x.caps);
  MlirValue bars = attn_k_addc(b, x.sbase, a->bar_off);
  x.bar_q = bars;
  x.bar_qempty = attn_k_addc(b, bars, 8);
  x.bar_qready = attn_k_addc(b, bars, 16);
  x.bar_full = attn_k_addc(b, bars, 24);
  x.bar_kready = attn_k_addc(b, bars, 24 + 8 * k->stages);
  x.bar_empty = attn_k_addc(b, bars, 24 + 16 * k->stages);
  if (k->kv_split) {
    x.bar_vfull = attn_k_addc(b, bars, 24 + 24 * k->stages);
    x.bar_vempty = attn_k_addc(b, bars, 24 + 32 * k->stages);
  }

  MlirValue first = attn_k_cmpc(b, ATTN_B_EQ, x.tid, 0);
  struct attn_b_if init;
  attn_b_if_open(b, &init, first, 0, NULL, false);
  attn_k_mbar_init(b, x.bar_q, 1);
  attn_k_mbar_init(b, x.bar_qempty, 128 * k->consumers);
  attn_k_mbar_init(b, x.bar_qready, 96);
  for (int s = 0; s < k->stages; ++s) {
    attn_k_mbar_init(b, attn_k_addc(b, x.bar_full, 8 * s), 1);
    attn_k_mbar_init(b, attn_k_addc(b, x.bar_kready, 8 * s), 96);
    attn_k_mbar_init(b, attn_k_addc(b, x.bar_empty, 8 * s),
                     128 * k->consumers);
    if (k->kv_split) {
      attn_k_mbar_init(b, attn_k_addc(b, x.bar_vfull, 8 * s), 1);
      attn_k_mbar_init(b, attn_k_addc(b, x.bar_vempty, 8 * s),
                       128 * k->consumers);
    }
  }
  if (k->rope_k_ahead) {
    attn_builder_role(b, "rope");
    attn_k_ahead_init(b, x.ahead_ctx);
    attn_builder_role(b, "setup");
  }
  attn_k_fence_mbar_init(b);
  attn_b_if_close(b, &init, 0, NULL);
  if (k->row_sum_mma) {
    // The ones tile: a word of two 16-bit 1.0s from each of 256 threads,
    // then visible to wgmma (the async proxy) after the barrier.
    MlirValue writer = attn_k_cmpc(b, ATTN_B_ULT, x.tid, 256);
    struct attn_b_if ones;
    attn_b_if_open(b, &ones, writer, 0, NULL, false);
    MlirValue ptr = attn_k_smem_ptr(
        b, x.smem, attn_k_addc(b, attn_k_mulc(b, x.tid, 4), a->ones_off));
    attn_k_store(b, attn_b_i32(b, k->bf16 ? 0x3F803F80 : 0x3C003C00), ptr);
    attn_k_fence_proxy_async(b, false);
    attn_b_if_close(b, &ones, 0, NULL);
  }
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);

  MlirValue wg = attn_k_divc(b, x.tid, 128), wt = attn_k_remc(b, x.tid, 128);
  MlirValue is_producer = attn_k_cmpc(b, ATTN_B_EQ, wg, 0);
  struct attn_b_if roles;
  attn_b_if_open(b, &roles, is_producer, 0, NULL, true);
  bool rotators = attn_hopper_producer_rotates(k);
  int w = k->consumers - 2;
  if (k->rope_k_ahead) {
    attn_builder_role(b, "rope");
    attn_k_ahead_setup(b, k, wt, x.ahead_ctx);
    attn_builder_role(b, "setup");
  }
  attn_k_setmaxnreg(b, false,
                    rotators ? PRODUCER_REGS[w] : PRODUCER_REGS_NO_ROPE[w]);
  attn_k_att_producer(a, &x, wt);
  attn_builder_role(b, "setup");
  attn_b_if_else(b, &roles, 0, NULL);
  attn_k_setmaxnreg(b, true,
                    rotators ? CONSUMER_REGS[w] : CONSUMER_REGS_NO_ROPE[w]);
  attn_k_att_consumer(a, &x, wg, wt);
  attn_builder_role(b, "setup");
  attn_b_if_close(b, &roles, 0, NULL);
}

bool attn_kernels_build_hopper_attention(MlirOperation gpu_module,
                                         MlirLocation loc,
                                         const struct attn_hopper_kernel *k,
                                         MlirAttribute attention) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  struct attn_k_att a;
  attn_k_att_layout(&a, &b, k);
  attn_builder_role(&b, "setup");
  // What the text shell declared first, then the schedule, then the kernel.
  attn_k_declare_libdevice(&b, gpu_module, 1024);
  MlirOperation tiles = {NULL};
  if (k->persistent_ctas) {
    tiles = attn_k_att_schedule(&b, k);
    if (mlirOperationIsNull(tiles)) {
      attn_builder_finish(&b);
      return false;
    }
  }
  MlirOperation keys = {NULL};
  if (k->key_blocks) {
    keys = attn_k_att_key_table(&b, k);
    if (mlirOperationIsNull(keys)) {
      if (!mlirOperationIsNull(tiles))
        mlirOperationDestroy(tiles);
      attn_builder_finish(&b);
      return false;
    }
  }
  MlirNamedAttribute attrs[5];
  attrs[0] = attn_b_named(&b, "arg_attrs", arg_attrs(&b, k));
  intptr_t nattrs = 1 + attn_k_kernel_attrs(&b, attn_hopper_threads(k),
                                            launch_attr(&b, k, attention),
                                            attrs + 1);
  struct attn_b_func f;
  attn_k_llvm_func_open(&b, &f, k->name, nparams(k), nattrs, attrs);
  if (!mlirOperationIsNull(f.op))
    build_body(&a, &f);
  attn_builder_role(&b, "setup");
  if (attn_k_llvm_func_finish(&b, &f))
    return true;
  if (!mlirOperationIsNull(tiles))
    mlirOperationDestroy(tiles);
  if (!mlirOperationIsNull(keys))
    mlirOperationDestroy(keys);
  return false;
}
