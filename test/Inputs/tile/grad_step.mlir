// Hand-written tile kernels of one attention forward (with the row
// log-sum-exp) and one backward step, for the lowering of the backward's
// tile ops (issue 29): test/Transforms/lower-tile-to-cpu-grad.mlir checks
// their loops, test/Target/tile-grad.test (attn-tile-grad-test)
// runs them on the CPU against lib/Reference's float64 gradient. One head
// of N = M = 12 rows, head dim 8, in one 16-row block (rows 12..15 are
// padding: they load as zero, their stores are dropped).
//
// a: RoPE at offset 3 (rotate_half), scale 0.35 by tile.score_mod, softcap
//    2 as a tile.score_fn body, causal, a tile.mask_fn hiding every key
//    from query 0 (its lse is +inf, its gradient 0). The backward takes dS
//    through softcap by tile.score_fn_grad and through the scale by
//    tile.score_mod on dS.
// b: RoPE at explicit positions (interleaved), the scale folded into
//    softmax_update, tile.exp_lse and tile.ds, the window (3, 2).
module {
  func.func @fwd_a(%q: memref<1x1x12x8xf32>, %k: memref<1x1x12x8xf32>, %v: memref<1x1x12x8xf32>, %out: memref<1x1x12x8xf32>, %lse: memref<1x1x12xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
    %c0 = arith.constant 0 : index
    %qt = "tile.alloc"() : () -> memref<16x8xf32>
    %kt = "tile.alloc"() : () -> memref<16x8xf32>
    %vt = "tile.alloc"() : () -> memref<16x8xf32>
    %s = "tile.alloc"() : () -> memref<16x16xf32>
    %acc = "tile.alloc"() : () -> memref<16x8xf32>
    %m = "tile.alloc"() : () -> memref<16xf32>
    %l = "tile.alloc"() : () -> memref<16xf32>
    %lt = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%q, %qt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope"(%qt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64} : (memref<16x8xf32>, index) -> ()
    "tile.fill"(%acc) {value = 0.0 : f32} : (memref<16x8xf32>) -> ()
    "tile.fill"(%m) {value = 0xFF800000 : f32} : (memref<16xf32>) -> ()
    "tile.fill"(%l) {value = 0.0 : f32} : (memref<16xf32>) -> ()
    "tile.load"(%k, %kt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope"(%kt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64} : (memref<16x8xf32>, index) -> ()
    "tile.load"(%v, %vt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.score_mod"(%s, %c0, %c0, %c0, %c0) {mods = ["scale"], scale = 0.35 : f64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.score_fn"(%s, %c0, %c0, %c0, %c0) ({
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %cap = arith.constant 2.0 : f32
      %u = arith.divf %x, %cap : f32
      %t = math.tanh %u : f32
      %y = arith.mulf %t, %cap : f32
      gpu.yield %y : f32
    }) {seq_q = 12 : i64, seq_k = 12 : i64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.mask"(%s, %c0, %c0) {causal = true, kv_len = 12 : i64} : (memref<16x16xf32>, index, index) -> ()
    "tile.mask_fn"(%s, %c0, %c0, %c0, %c0) ({
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %z = arith.constant 0 : index
      %vis = arith.cmpi ne, %i, %z : index
      gpu.yield %vis : i1
    }) {seq_q = 12 : i64, seq_k = 12 : i64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.softmax_update"(%s, %m, %l, %acc) {scale = 1.0 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.normalize"(%acc, %l) : (memref<16x8xf32>, memref<16xf32>) -> ()
    "tile.store"(%acc, %out, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.row_lse"(%m, %l, %lt) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
    "tile.store"(%lt, %lse, %c0, %c0, %c0) : (memref<16xf32>, memref<1x1x12xf32>, index, index, index) -> ()
    return
  }

  func.func @bwd_a(%q: memref<1x1x12x8xf32>, %k: memref<1x1x12x8xf32>, %v: memref<1x1x12x8xf32>, %out: memref<1x1x12x8xf32>, %lse: memref<1x1x12xf32>, %dout: memref<1x1x12x8xf32>, %dq: memref<1x1x12x8xf32>, %dk: memref<1x1x12x8xf32>, %dv: memref<1x1x12x8xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
    %c0 = arith.constant 0 : index
    %qt = "tile.alloc"() : () -> memref<16x8xf32>
    %kt = "tile.alloc"() : () -> memref<16x8xf32>
    %vt = "tile.alloc"() : () -> memref<16x8xf32>
    %ot = "tile.alloc"() : () -> memref<16x8xf32>
    %dot = "tile.alloc"() : () -> memref<16x8xf32>
    %s = "tile.alloc"() : () -> memref<16x16xf32>
    %sin = "tile.alloc"() : () -> memref<16x16xf32>
    %dp = "tile.alloc"() : () -> memref<16x16xf32>
    %dqt = "tile.alloc"() : () -> memref<16x8xf32>
    %dkt = "tile.alloc"() : () -> memref<16x8xf32>
    %dvt = "tile.alloc"() : () -> memref<16x8xf32>
    %lt = "tile.alloc"() : () -> memref<16xf32>
    %dd = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%q, %qt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope"(%qt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64} : (memref<16x8xf32>, index) -> ()
    "tile.load"(%k, %kt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope"(%kt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64} : (memref<16x8xf32>, index) -> ()
    "tile.load"(%v, %vt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%out, %ot, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%dout, %dot, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%lse, %lt, %c0, %c0, %c0) : (memref<1x1x12xf32>, memref<16xf32>, index, index, index) -> ()
    "tile.row_dot"(%dot, %ot, %dd) : (memref<16x8xf32>, memref<16x8xf32>, memref<16xf32>) -> ()
    "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.score_mod"(%s, %c0, %c0, %c0, %c0) {mods = ["scale"], scale = 0.35 : f64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.mma"(%qt, %kt, %sin) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.score_mod"(%sin, %c0, %c0, %c0, %c0) {mods = ["scale"], scale = 0.35 : f64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.score_fn"(%s, %c0, %c0, %c0, %c0) ({
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %cap = arith.constant 2.0 : f32
      %u = arith.divf %x, %cap : f32
      %t = math.tanh %u : f32
      %y = arith.mulf %t, %cap : f32
      gpu.yield %y : f32
    }) {seq_q = 12 : i64, seq_k = 12 : i64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.mask"(%s, %c0, %c0) {causal = true, kv_len = 12 : i64} : (memref<16x16xf32>, index, index) -> ()
    "tile.mask_fn"(%s, %c0, %c0, %c0, %c0) ({
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %z = arith.constant 0 : index
      %vis = arith.cmpi ne, %i, %z : index
      gpu.yield %vis : i1
    }) {seq_q = 12 : i64, seq_k = 12 : i64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.exp_lse"(%s, %lt) {scale = 1.0 : f64} : (memref<16x16xf32>, memref<16xf32>) -> ()
    "tile.mma"(%s, %dot, %dvt) {transpose_a = true, transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%dot, %vt, %dp) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.ds"(%s, %dp, %dd) {scale = 1.0 : f64} : (memref<16x16xf32>, memref<16x16xf32>, memref<16xf32>) -> ()
    "tile.score_fn_grad"(%dp, %sin, %c0, %c0, %c0, %c0) ({
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %cap = arith.constant 2.0 : f32
      %one = arith.constant 1.0 : f32
      %u = arith.divf %x, %cap : f32
      %t = math.tanh %u : f32
      %t2 = arith.mulf %t, %t : f32
      %y = arith.subf %one, %t2 : f32
      gpu.yield %y : f32
    }) {seq_q = 12 : i64, seq_k = 12 : i64} : (memref<16x16xf32>, memref<16x16xf32>, index, index, index, index) -> ()
    "tile.score_mod"(%dp, %c0, %c0, %c0, %c0) {mods = ["scale"], scale = 0.35 : f64} : (memref<16x16xf32>, index, index, index, index) -> ()
    "tile.mma"(%dp, %kt, %dqt) {transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%dp, %qt, %dkt) {transpose_a = true, transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.rope"(%dqt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64, inverse = true} : (memref<16x8xf32>, index) -> ()
    "tile.rope"(%dkt, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", offset = 3 : i64, inverse = true} : (memref<16x8xf32>, index) -> ()
    "tile.store"(%dqt, %dq, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.store"(%dkt, %dk, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.store"(%dvt, %dv, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    return
  }

  func.func @fwd_b(%q: memref<1x1x12x8xf32>, %k: memref<1x1x12x8xf32>, %v: memref<1x1x12x8xf32>, %out: memref<1x1x12x8xf32>, %lse: memref<1x1x12xf32>, %qpos: memref<1x12xi32>, %kpos: memref<1x12xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse", "q_positions", "k_positions"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
    %c0 = arith.constant 0 : index
    %qt = "tile.alloc"() : () -> memref<16x8xf32>
    %kt = "tile.alloc"() : () -> memref<16x8xf32>
    %vt = "tile.alloc"() : () -> memref<16x8xf32>
    %s = "tile.alloc"() : () -> memref<16x16xf32>
    %acc = "tile.alloc"() : () -> memref<16x8xf32>
    %m = "tile.alloc"() : () -> memref<16xf32>
    %l = "tile.alloc"() : () -> memref<16xf32>
    %lt = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%q, %qt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope_positions"(%qt, %c0, %c0, %qpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved"} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.fill"(%acc) {value = 0.0 : f32} : (memref<16x8xf32>) -> ()
    "tile.fill"(%m) {value = 0xFF800000 : f32} : (memref<16xf32>) -> ()
    "tile.fill"(%l) {value = 0.0 : f32} : (memref<16xf32>) -> ()
    "tile.load"(%k, %kt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope_positions"(%kt, %c0, %c0, %kpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved"} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.load"(%v, %vt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.mask"(%s, %c0, %c0) {causal = false, kv_len = 12 : i64, window = array<i64: 3, 2>} : (memref<16x16xf32>, index, index) -> ()
    "tile.softmax_update"(%s, %m, %l, %acc) {scale = 0.35 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.normalize"(%acc, %l) : (memref<16x8xf32>, memref<16xf32>) -> ()
    "tile.store"(%acc, %out, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.row_lse"(%m, %l, %lt) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
    "tile.store"(%lt, %lse, %c0, %c0, %c0) : (memref<16xf32>, memref<1x1x12xf32>, index, index, index) -> ()
    return
  }

  func.func @bwd_b(%q: memref<1x1x12x8xf32>, %k: memref<1x1x12x8xf32>, %v: memref<1x1x12x8xf32>, %out: memref<1x1x12x8xf32>, %lse: memref<1x1x12xf32>, %dout: memref<1x1x12x8xf32>, %qpos: memref<1x12xi32>, %kpos: memref<1x12xi32>, %dq: memref<1x1x12x8xf32>, %dk: memref<1x1x12x8xf32>, %dv: memref<1x1x12x8xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse", "dout", "q_positions", "k_positions", "dq", "dk", "dv"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
    %c0 = arith.constant 0 : index
    %qt = "tile.alloc"() : () -> memref<16x8xf32>
    %kt = "tile.alloc"() : () -> memref<16x8xf32>
    %vt = "tile.alloc"() : () -> memref<16x8xf32>
    %ot = "tile.alloc"() : () -> memref<16x8xf32>
    %dot = "tile.alloc"() : () -> memref<16x8xf32>
    %s = "tile.alloc"() : () -> memref<16x16xf32>
    %dp = "tile.alloc"() : () -> memref<16x16xf32>
    %dqt = "tile.alloc"() : () -> memref<16x8xf32>
    %dkt = "tile.alloc"() : () -> memref<16x8xf32>
    %dvt = "tile.alloc"() : () -> memref<16x8xf32>
    %lt = "tile.alloc"() : () -> memref<16xf32>
    %dd = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%q, %qt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope_positions"(%qt, %c0, %c0, %qpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved"} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.load"(%k, %kt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.rope_positions"(%kt, %c0, %c0, %kpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved"} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.load"(%v, %vt, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%out, %ot, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%dout, %dot, %c0, %c0, %c0) : (memref<1x1x12x8xf32>, memref<16x8xf32>, index, index, index) -> ()
    "tile.load"(%lse, %lt, %c0, %c0, %c0) : (memref<1x1x12xf32>, memref<16xf32>, index, index, index) -> ()
    "tile.row_dot"(%dot, %ot, %dd) : (memref<16x8xf32>, memref<16x8xf32>, memref<16xf32>) -> ()
    "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.mask"(%s, %c0, %c0) {causal = false, kv_len = 12 : i64, window = array<i64: 3, 2>} : (memref<16x16xf32>, index, index) -> ()
    "tile.exp_lse"(%s, %lt) {scale = 0.35 : f64} : (memref<16x16xf32>, memref<16xf32>) -> ()
    "tile.mma"(%s, %dot, %dvt) {transpose_a = true, transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%dot, %vt, %dp) {transpose_b = true, accumulate = false} : (memref<16x8xf32>, memref<16x8xf32>, memref<16x16xf32>) -> ()
    "tile.ds"(%s, %dp, %dd) {scale = 0.35 : f64} : (memref<16x16xf32>, memref<16x16xf32>, memref<16xf32>) -> ()
    "tile.mma"(%dp, %kt, %dqt) {transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.mma"(%dp, %qt, %dkt) {transpose_a = true, transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x8xf32>, memref<16x8xf32>) -> ()
    "tile.rope_positions"(%dqt, %c0, %c0, %qpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved", inverse = true} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.rope_positions"(%dkt, %c0, %c0, %kpos) {theta = 100.0 : f64, rotary_dim = 6 : i64, layout = "interleaved", inverse = true} : (memref<16x8xf32>, index, index, memref<1x12xi32>) -> ()
    "tile.store"(%dqt, %dq, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.store"(%dkt, %dk, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    "tile.store"(%dvt, %dv, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x12x8xf32>, index, index, index) -> ()
    return
  }
}
