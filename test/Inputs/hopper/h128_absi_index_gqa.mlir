// A score_mod reading captured lengths with |position - key| of index type
// (math.absi on index: what attn.decode's chunked prefill writes for ALiBi),
// GQA 4/1, bf16, d 128: the kernels lower math.absi on index as maxsi(x, -x).
func.func @absi_index_gqa(%q: tensor<2x4x24x128xbf16>, %k: tensor<2x1x112x128xbf16>, %v: tensor<2x1x112x128xbf16>, %cap0: tensor<4xf32>, %cap1: tensor<2xi32>) -> tensor<2x4x24x128xbf16> {
  %s0 = "attn.qk"(%q, %k) : (tensor<2x4x24x128xbf16>, tensor<2x1x112x128xbf16>) -> tensor<2x4x24x112xbf16>
  %s1 = "attn.scale"(%s0) {scale = 0.08838834764831843 : f64} : (tensor<2x4x24x112xbf16>) -> tensor<2x4x24x112xbf16>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%sm_score: f32, %sm_b: index, %sm_h: index, %sm_q: index, %sm_kv: index):
    %sm0 = tensor.extract %cap0[%sm_h] : tensor<4xf32>
    %sm1 = tensor.extract %cap1[%sm_b] : tensor<2xi32>
    %sm2 = arith.index_cast %sm1 : i32 to index
    %sm3 = arith.constant 24 : index
    %sm4 = arith.subi %sm2, %sm3 : index
    %sm5 = arith.addi %sm4, %sm_q : index
    %sm6 = arith.subi %sm5, %sm_kv : index
    %sm7 = math.absi %sm6 : index
    %sm8 = arith.index_cast %sm7 : index to i64
    %sm9 = arith.sitofp %sm8 : i64 to f32
    %sm10 = arith.mulf %sm0, %sm9 : f32
    %sm11 = arith.subf %sm_score, %sm10 : f32
    gpu.yield %sm11 : f32
  }) : (tensor<2x4x24x112xbf16>) -> tensor<2x4x24x112xbf16>
  %p = "attn.softmax"(%s2) : (tensor<2x4x24x112xbf16>) -> tensor<2x4x24x112xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x24x112xbf16>, tensor<2x1x112x128xbf16>) -> tensor<2x4x24x128xbf16>
  return %o : tensor<2x4x24x128xbf16>
}
