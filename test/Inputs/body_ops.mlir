// One score_mod body using every op a body may hold (dialects/body.h's
// allowlist: the arith and math ops of issue 28's contract), on values kept
// in their domains (logs and roots of |s| + 0.5, divisions by constants;
// the f16 truncation only compared, as the evaluator does not round it),
// for the CPU path against the float64 evaluation (test/tools/attn-run/
// bodies.test) and the plain GPU path through ptxas
// (test/Target/manifest-mods.mlir): each must lower everywhere.
func.func @every_op_f32(%q: tensor<1x2x20x16xf32>, %k: tensor<1x2x20x16xf32>, %v: tensor<1x2x20x16xf32>) -> tensor<1x2x20x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x20x16xf32>, tensor<1x2x20x16xf32>) -> tensor<1x2x20x20xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h0: index, %i: index, %j: index):
    %a0 = arith.constant 0.5 : f32
    %p0 = math.absf %x : f32
    %q0 = arith.addf %p0, %a0 : f32
    %r0 = math.absf %q0 : f32
    %acc0 = arith.addf %x, %r0 : f32
    %p1 = math.absf %x : f32
    %q1 = arith.addf %p1, %a0 : f32
    %r1 = math.exp %q1 : f32
    %acc1 = arith.addf %acc0, %r1 : f32
    %p2 = math.absf %x : f32
    %q2 = arith.addf %p2, %a0 : f32
    %r2 = math.exp2 %q2 : f32
    %acc2 = arith.addf %acc1, %r2 : f32
    %p3 = math.absf %x : f32
    %q3 = arith.addf %p3, %a0 : f32
    %r3 = math.log %q3 : f32
    %acc3 = arith.addf %acc2, %r3 : f32
    %p4 = math.absf %x : f32
    %q4 = arith.addf %p4, %a0 : f32
    %r4 = math.log2 %q4 : f32
    %acc4 = arith.addf %acc3, %r4 : f32
    %p5 = math.absf %x : f32
    %q5 = arith.addf %p5, %a0 : f32
    %r5 = math.log1p %q5 : f32
    %acc5 = arith.addf %acc4, %r5 : f32
    %p6 = math.absf %x : f32
    %q6 = arith.addf %p6, %a0 : f32
    %r6 = math.tanh %q6 : f32
    %acc6 = arith.addf %acc5, %r6 : f32
    %p7 = math.absf %x : f32
    %q7 = arith.addf %p7, %a0 : f32
    %r7 = math.sqrt %q7 : f32
    %acc7 = arith.addf %acc6, %r7 : f32
    %p8 = math.absf %x : f32
    %q8 = arith.addf %p8, %a0 : f32
    %r8 = math.rsqrt %q8 : f32
    %acc8 = arith.addf %acc7, %r8 : f32
    %p9 = math.absf %x : f32
    %q9 = arith.addf %p9, %a0 : f32
    %r9 = math.sin %q9 : f32
    %acc9 = arith.addf %acc8, %r9 : f32
    %p10 = math.absf %x : f32
    %q10 = arith.addf %p10, %a0 : f32
    %r10 = math.cos %q10 : f32
    %acc10 = arith.addf %acc9, %r10 : f32
    %p11 = math.absf %x : f32
    %q11 = arith.addf %p11, %a0 : f32
    %r11 = math.floor %q11 : f32
    %acc11 = arith.addf %acc10, %r11 : f32
    %p12 = math.absf %x : f32
    %q12 = arith.addf %p12, %a0 : f32
    %r12 = math.ceil %q12 : f32
    %acc12 = arith.addf %acc11, %r12 : f32
    %p13 = math.absf %x : f32
    %q13 = arith.addf %p13, %a0 : f32
    %r13 = math.erf %q13 : f32
    %acc13 = arith.addf %acc12, %r13 : f32
    %cs = math.copysign %acc13, %x : f32
    %pw = math.powf %q0, %a0 : f32
    %fm = math.fma %cs, %a0, %pw : f32
    %mx = arith.maximumf %fm, %x : f32
    %mn = arith.minimumf %mx, %fm : f32
    %mxn = arith.maxnumf %mn, %x : f32
    %mnn = arith.minnumf %mxn, %fm : f32
    %ng = arith.negf %mnn : f32
    %dv = arith.divf %ng, %q0 : f32
    %qi = arith.index_cast %i : index to i64
    %ki = arith.index_castui %j : index to i64
    %c3 = arith.constant 3 : i64
    %n0 = arith.addi %qi, %ki : i64
    %n1 = arith.subi %n0, %ki : i64
    %n2 = arith.muli %n1, %ki : i64
    %n3 = arith.divsi %n2, %c3 : i64
    %n4 = arith.divui %n3, %c3 : i64
    %n5 = arith.remsi %n4, %c3 : i64
    %n6 = arith.remui %n5, %c3 : i64
    %n7 = arith.andi %n6, %ki : i64
    %n8 = arith.ori %n7, %ki : i64
    %n9 = arith.xori %n8, %ki : i64
    %n10 = arith.shli %n9, %c3 : i64
    %n11 = arith.shrsi %n10, %c3 : i64
    %n12 = arith.shrui %n11, %c3 : i64
    %n13 = arith.maxsi %n12, %ki : i64
    %n14 = arith.minsi %n13, %ki : i64
    %n15 = arith.maxui %n14, %ki : i64
    %n16 = arith.minui %n15, %ki : i64
    %ab = math.absi %n16 : i64
    %t32 = arith.trunci %ab : i64 to i32
    %e64 = arith.extsi %t32 : i32 to i64
    %t8 = arith.trunci %e64 : i64 to i8
    %u32 = arith.extui %t8 : i8 to i32
    %sf = arith.sitofp %u32 : i32 to f32
    %uf = arith.uitofp %u32 : i32 to f32
    %ff = arith.addf %sf, %uf : f32
    %c100 = arith.constant 100.0 : f32
    %fs = arith.fptosi %dv : f32 to i32
    %fu = arith.fptoui %q0 : f32 to i32
    %fsu = arith.addi %fs, %fu : i32
    %back = arith.sitofp %fsu : i32 to f32
    %h = arith.truncf %dv : f32 to f16
    %hf = arith.extf %h : f16 to f32
    %cmpf = arith.cmpf olt, %hf, %back : f32
    %cmpi = arith.cmpi slt, %qi, %ki : i64
    %both = arith.andi %cmpf, %cmpi : i1
    %sel = arith.select %both, %dv, %back : f32
    %fscale = arith.constant 0.1 : f32
    %iscale = arith.constant 0.01 : f32
    %res0 = arith.mulf %sel, %fscale : f32
    %res1 = arith.mulf %ff, %iscale : f32
    %res = arith.addf %res0, %res1 : f32
    %y = arith.addf %x, %res : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x20x20xf32>, tensor<1x2x20x16xf32>) -> tensor<1x2x20x16xf32>
  return %o : tensor<1x2x20x16xf32>
}
