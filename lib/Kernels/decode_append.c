//===- decode_append.c - The decode program's append kernel ---------------===//
//
// attn.cache_append feeding attn.fused_decode on the GPU (issue 30): the
// first kernel of the decode's launch program writes the new tokens' keys
// and values into the caches, so that the split kernel after it on the
// stream reads them as any other key. One thread per 16 bytes of a new
// key row and the same 16 bytes of its value row: thread t of the grid
// takes column chunk t % (D / 8) of row i of K/V head g of sequence b
// (t / (D / 8) = (b * Hk + g) * N + i), the row's position len - N + i
// (len clamped to [0, the cache's keys]) and its place in the cache
// (decode_common.c's dk_key_row: a contiguous row, or through the block
// table). The key is rotated at that position with the append's RoPE
// (dk_load_rot8, the partner columns loaded too) and rounded to the
// cache's type; the value is copied as it is. A negative position, or a
// page outside [0, P), is not written (the split kernel reads page 0
// there; writing it would corrupt another sequence).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/decode_common.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <string.h>

/// Threads of the append kernel's grid: one per 16-byte chunk of a new row.
static int64_t append_tasks(const struct attn_decode_kernel *k) {
  return k->batch * k->kv_heads * k->append_rows * (k->head_dim / 8);
}

bool dk_build_append(MlirOperation gm, MlirLocation loc,
                     const struct attn_decode_kernel *k, const char *name) {
  struct attn_builder bb;
  struct attn_builder *b = &bb;
  attn_builder_init(b, mlirLocationGetContext(loc), loc);
  attn_builder_role(b, "decode.append");
  attn_builder_at_end(b, attn_b_region_block(gm, 0));
  attn_k_declare_libdevice(b, gm, 16);
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t d = k->head_dim, chunks = d / 8, tasks = append_tasks(k);
  int64_t grid[3] = {(tasks + ATTN_DECODE_THREADS - 1) / ATTN_DECODE_THREADS, 1, 1};
  struct attn_k_param params[6];
  int np = 0;
  params[np++] = (struct attn_k_param){
      .name = "k_new", .dtype = ty, .align = 16,
      .shape = {k->batch, k->kv_heads, k->append_rows, d}};
  params[np++] = (struct attn_k_param){
      .name = "v_new", .dtype = ty, .align = 16,
      .shape = {k->batch, k->kv_heads, k->append_rows, d}};
  params[np++] = dk_cache_param(k, "cache_seqlens");
  if (k->paged)
    params[np++] = dk_cache_param(k, "block_table");
  params[np++] = dk_cache_param(k, "k_cache");
  params[np++] = dk_cache_param(k, "v_cache");
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "decode", dk_decode_info(b, k)),
  };
  MlirAttribute launch = attn_k_launch_attr(b, "decode-append", grid,
                                            ATTN_DECODE_THREADS, 0, np, params,
                                            1, extra);
  MlirNamedAttribute attrs[4];
  intptr_t na = attn_k_kernel_attrs(b, ATTN_DECODE_THREADS, launch, attrs);
  MlirType types[6];
  MlirAttribute args[6];
  for (int i = 0; i < np; ++i) {
    types[i] = b->t.ptr;
    args[i] = dk_param_attrs(b, i >= np - 2 ? "llvm.writeonly" : "llvm.readonly");
  }
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(b, &f, name, np, types, args, na, attrs);
  struct dec e;
  memset(&e, 0, sizeof e);
  e.b = b;
  e.k = k;
  int a = 0;
  MlirValue kn = attn_b_func_arg(&f, a++), vn = attn_b_func_arg(&f, a++);
  e.lens = attn_b_func_arg(&f, a++);
  if (k->paged)
    e.table = attn_b_func_arg(&f, a++);
  e.kc = attn_b_func_arg(&f, a++);
  e.vc = attn_b_func_arg(&f, a++);
  MlirValue t = attn_b_addi(
      b, attn_k_mulc(b, attn_k_sreg(b, "ctaid.x"), ATTN_DECODE_THREADS),
      attn_k_sreg(b, "tid.x"));
  struct attn_b_if act;
  attn_b_if_open(b, &act, attn_k_cmpc(b, ATTN_B_ULT, t, tasks), 0, NULL, false);
  MlirValue c = attn_k_remc(b, t, chunks), row = attn_k_divc(b, t, chunks);
  MlirValue i = attn_k_remc(b, row, k->append_rows);
  MlirValue bg = attn_k_divc(b, row, k->append_rows);
  e.g = attn_k_remc(b, bg, k->kv_heads);
  e.bi = attn_k_divc(b, bg, k->kv_heads);
  MlirValue len = attn_k_load(
      b, attn_k_gep_elem(b, e.lens, i64v(&e, e.bi), b->t.i32), b->t.i32);
  len = smin(&e, smax(&e, len, c32(&e, 0)), c32(&e, k->max_seq));
  MlirValue pos = attn_b_addi(b, attn_k_addc(b, len, -k->append_rows), i);
  MlirValue valid;
  MlirValue dst = dk_key_row(&e, smax(&e, pos, c32(&e, 0)), &valid);
  MlirValue write = attn_b_cmpi(b, ATTN_B_SGE, pos, c32(&e, 0));
  if (!mlirValueIsNull(valid))
    write = attn_b_andi(b, write, valid);
  struct attn_b_if w;
  attn_b_if_open(b, &w, write, 0, NULL, false);
  MlirValue col = attn_k_mulc(b, c, 8);
  MlirValue src = attn_b_muli(b, i64v(&e, row), attn_b_i64(b, d));
  MlirValue at = attn_b_addi(b, dst, i64v(&e, col));
  MlirValue kw[4];
  if (k->append_rope) {
    struct dk_rope r = {.on = true, .interleaved = k->append_interleaved,
                        .theta = k->append_theta,
                        .rotary_dim = k->append_rotary_dim};
    MlirValue y[8];
    dk_load_rot8(&e, kn, src, col, pos, &r, y);
    for (int x = 0; x < 4; ++x)
      kw[x] = attn_k_pack2(b, k->bf16, y[2 * x], y[2 * x + 1]);
  } else {
    dk_load4w(&e, kn, attn_b_addi(b, src, i64v(&e, col)), kw);
  }
  MlirValue vw[4];
  dk_load4w(&e, vn, attn_b_addi(b, src, i64v(&e, col)), vw);
  attn_k_store_vec(b, kw, 4, attn_k_gep_elem(b, e.kc, at, elem16(&e)));
  attn_k_store_vec(b, vw, 4, attn_k_gep_elem(b, e.vc, at, elem16(&e)));
  attn_b_if_close(b, &w, 0, NULL);
  attn_b_if_close(b, &act, 0, NULL);
  return attn_k_llvm_func_finish(b, &f);
}
