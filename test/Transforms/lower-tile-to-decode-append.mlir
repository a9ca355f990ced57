// RUN: attn-opt %S/../Inputs/decode_append.mlir --attn-tile --lower-tile-to-decode=splits=3 | FileCheck %s
// RUN: attn-opt %S/../Inputs/decode_append.mlir --attn-tile --lower-tile-to-decode=splits=1 | FileCheck %s --check-prefix=ONE
// RUN: attn-opt %S/attn-tile-decode-append.mlir --attn-tile --lower-tile-to-decode=fallback=true | FileCheck %s --check-prefix=FALLBACK

// lower-tile-to-decode of a decode with an append (issue 30): the launch
// program runs @<name>__append (one thread per 16 bytes of the new rows:
// B x Hk x N x D / 8 of them, 128 a CTA) writing k_new and v_new into the
// caches, then the split kernel that reads them, then with splits > 1 the
// combine; with one split the split kernel writes out and the program has
// no workspace. An f32 program is left to lower-tile-to-gpu with fallback,
// its scalar program appending as on the CPU.

// CHECK: attn.programs = [{inputs = ["q", "k_cache", "v_cache", "cache_seqlens", "k_new", "v_new", "out"], name = "gqa_rope", steps = [{args = ["k_new", "v_new", "cache_seqlens", "k_cache", "v_cache"], kernel = "gqa_rope__append"}, {args = ["q", "k_cache", "v_cache", "cache_seqlens", "partials"], kernel = "gqa_rope__split"}, {args = ["partials", "out"], kernel = "gqa_rope__combine"}], workspace = [{bytes = {{[0-9]+}} : i64, name = "partials"}]}, {inputs = ["q", "k_cache", "v_cache", "cache_seqlens", "block_table", "k_new", "v_new", "out"], name = "paged_spec", steps = [{args = ["k_new", "v_new", "cache_seqlens", "block_table", "k_cache", "v_cache"], kernel = "paged_spec__append"}
// 2 x 8 x 1 x 16 chunks = 256: two CTAs.
// CHECK: llvm.func @gqa_rope__append(
// CHECK-SAME: llvm.writeonly
// CHECK-SAME: llvm.writeonly
// CHECK-SAME: attn.launch = {{{.*}}append_rows = 1 : i64
// CHECK-SAME: grid = array<i32: 2, 1, 1>
// CHECK-SAME: kernel = "decode-append"
// CHECK-SAME: params = [{{{.*}}name = "k_new"{{.*}}name = "v_new"{{.*}}name = "cache_seqlens"{{.*}}name = "k_cache"{{.*}}name = "v_cache"
// RoPE on the new key: its 16 bytes, the frequencies, the partner half's.
// CHECK: llvm.load {{.*}}vector<4xi32>
// CHECK: __nv_exp2
// CHECK: llvm.load {{.*}}vector<4xi32>
// CHECK: llvm.store {{.*}}vector<4xi32>
// CHECK: llvm.store {{.*}}vector<4xi32>
// CHECK: llvm.func @gqa_rope__split(
// CHECK: llvm.func @gqa_rope__combine(
// 3 x 2 x 4 x 8 chunks = 192: two CTAs.
// CHECK: llvm.func @paged_spec__append(
// CHECK-SAME: grid = array<i32: 2, 1, 1>
// The page's range guards the write: the table entry against P = 58.
// CHECK: llvm.getelementptr %arg3
// CHECK: %[[PAGE:.*]] = llvm.load {{.*}} -> i32
// CHECK: arith.cmpi slt, %[[PAGE]], %c58_i32
// CHECK: scf.if
// CHECK: llvm.func @mha_d256__append(
// CHECK-NOT: __nv_exp2
// CHECK: llvm.func @mha_d256__split(

// ONE: {inputs = ["q", "k_cache", "v_cache", "cache_seqlens", "k_new", "v_new", "out"], name = "gqa_rope", steps = [{args = ["k_new", "v_new", "cache_seqlens", "k_cache", "v_cache"], kernel = "gqa_rope__append"}, {args = ["q", "k_cache", "v_cache", "cache_seqlens", "out"], kernel = "gqa_rope__split"}], workspace = []}
// ONE: llvm.func @gqa_rope__append(
// ONE: llvm.func @gqa_rope__split(
// ONE-NOT: __combine

// FALLBACK: func.func @plain(
// FALLBACK-SAME: tile.arg_names = ["q", "k_cache", "v_cache", "cache_seqlens", "k_new", "v_new", "out"]
// FALLBACK: llvm.func @paged_spec__append(
