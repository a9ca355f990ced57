#!/usr/bin/env bash
# Runs attn's generated kernels on the GPU machine and checks each against
# the float64 reference (attn-run --target=gpu), then prints a table.
#
#   on the CPU machine:  bench/gpu_check.sh --stage build
#   on the GPU machine:  bench/gpu_check.sh        (.carry carried)
#
# GPU_CHECK_ONLY=regex runs only the attn-run checks whose input path and
# options match the extended regex (GPU_CHECK_ONLY=h256: the head dim 256
# kernels; GPU_CHECK_ONLY='--grad|_lse_': the backward and the tensor-core
# forwards with lse), and none of the Python, fused-collective and cubin
# checks after them.
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"
if [ "${1:-}" = "--stage" ]; then
  build=${2:?usage: gpu_check.sh --stage BUILD_DIR}
  cmake --build "$build" --target attn-run attn-translate attn-opt attnrt attn \
    attnrt-fused-loopback-gpu-test
  stage "$build"
  cp "$build"/bin/attnrt-fused-loopback-gpu-test "$carry/bin/"
  strip --strip-debug "$carry"/bin/attnrt-fused-loopback-gpu-test
  exit 0
fi
setup
out=${OUT:-/tmp/attn-gpu-check}
mkdir -p "$out"
log="$out/gpu_check.log"
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | sed 's/^/gpu: /'
  echo "cuda_home: $CUDA_HOME"
} | tee "$log"

fail=0
run() { # file [attn-run options...]
  local f=$1; shift
  [[ "$f $*" =~ ${GPU_CHECK_ONLY:-} ]] || return 0
  echo "== $f $*" | tee -a "$log"
  if ! "$carry/bin/attn-run" --target=gpu --iters=20 "$@" "$root/$f" 2>&1 | tee -a "$log"; then
    fail=1
  fi
}
run examples/rope_causal.mlir
run examples/rope_causal.mlir --tile-options="block-m=16 block-n=16 threads=256"
for f in "$root"/test/Inputs/*.mlir "$root"/test/Inputs/hopper/*.mlir; do run "${f#$root/}"; done
# The backward (issue 29, attn-run --grad; timing does not apply to it):
# the plain path's forward with lse and backward kernels against
# attn_reference_grad, at two tile shapes, the language's programs, and a
# GQA bf16 program at head dim 128 through sm_80's PTX (its forward on the
# mma.sync kernel).
run test/Inputs/grad.mlir --grad
run test/Inputs/grad.mlir --grad --tile-options="block-m=16 block-n=8"
run test/Inputs/language.mlir --grad
run test/Inputs/gqa_bf16.mlir --grad --chip=sm_80
# The Hopper backward (lib/Kernels/attention_bwd.c: __pre, __main by wgmma,
# __dq_out, __dk_out, after the RoPE kernels): the g* inputs (head dims 64
# and 128, causal or not, RoPE rotate-half or interleaved or none, f16 and
# bf16, GQA, ragged N, 200 queries on 333 keys), their forward with lse on
# the Hopper kernel; the Hopper inputs below (--grad) take it too where it
# computes their backward (h64_causal, h64_plain_f16, h64_gqa_rope_causal,
# h128_rope_causal, h128_norope_causal, h128_plain_f16,
# h128_interleaved_full), the plain backward elsewhere.
for f in "$root"/test/Inputs/hopper/g*.mlir; do run "${f#$root/}" --grad; done
# The same with dq-reduce=bulk (dQ through shared memory and
# cp.reduce.async.bulk instead of red.global.add.f32 per element).
for f in "$root"/test/Inputs/hopper/g*.mlir; do
  run "${f#$root/}" --grad --hopper-options=dq-reduce=bulk
done
# The schedule options: dP^T's wgmma issued with S^T's (dp-issue=early),
# dS^T in two tiles (ds-buffers=2), on every g* input and on modifiers with
# a derivative and captures.
for f in "$root"/test/Inputs/hopper/g*.mlir; do
  run "${f#$root/}" --grad --hopper-options="dp-issue=early ds-buffers=2"
done
for o in "dp-issue=early" "ds-buffers=2"; do
  run test/Inputs/hopper/h128_gate_softcap_f16.mlir --grad --hopper-options="$o"
  run test/Inputs/hopper/h128_softcap_causal_gqa.mlir --grad --hopper-options="$o"
  run test/Inputs/hopper/h64_document_window.mlir --grad --hopper-options="$o"
done
run test/Inputs/hopper/h64_every_body_op.mlir --grad --hopper-options="dp-issue=early dq-reduce=red"
# deterministic=true: dQ's adds in turns (windows: the first key block a
# query block sees moves).
for f in "$root"/test/Inputs/hopper/g*.mlir; do
  run "${f#$root/}" --grad --hopper-options="deterministic=true"
done
run test/Inputs/hopper/h64_document_window.mlir --grad --hopper-options="deterministic=true"
run test/Inputs/hopper/h64_window_rope.mlir --grad --hopper-options="deterministic=true"
run test/Inputs/hopper/h256_rope_causal.mlir --grad --hopper-options="deterministic=true"
# The mma.sync backward (lib/Kernels/mma_attention_bwd.c: __pre, __main by
# mma.sync, __dq_out, __dk_out, after the RoPE kernels; issue 29): every g*
# input through sm_80's PTX (JIT-compiled by the driver: two stages), sm_86's
# (one stage at head dim 128) and --kernel=mma on sm_90a (the same kernels
# compiled for the H200); its modifiers and masks (the gate and a softcap,
# ALiBi, a window with documents, a window with RoPE, a traced score_mod).
# The h64_* and h128_* inputs below take it too (--chip=sm_80 --kernel=mma).
# GPU_CHECK_ONLY='--grad --(chip=sm_8|kernel=mma)' runs these alone.
for f in "$root"/test/Inputs/hopper/g*.mlir; do
  run "${f#$root/}" --grad --chip=sm_80
  run "${f#$root/}" --grad --chip=sm_86
  run "${f#$root/}" --grad --kernel=mma
done
for f in h128_gate_softcap_f16 h128_alibi_causal h64_document_window \
         h64_window_rope h128_softcap_causal_gqa h64_every_body_op; do
  run test/Inputs/hopper/$f.mlir --grad --kernel=mma
done
# Gradients into captured tensors on the Hopper backward (the SAS gate's
# dgate, tables a score_fn body reads): summed by the index's form (the
# gate's per query column across a warp, a 64 x 64 block's per warp, a
# query block's per row) or per element, added by red.global.add.f32.
for f in h128_sas_dgate_bf16 h64_dgate_block_tables h256_dgate_rope_causal h128_dgate_table_f16; do
  run test/Inputs/hopper/$f.mlir --grad
done
run test/Inputs/hopper/h128_sas_dgate_bf16.mlir --grad --hopper-options="dq-reduce=red ds-buffers=2"
run test/Inputs/hopper/h128_sas_dgate_bf16.mlir --grad --hopper-options="deterministic=true"
run test/Inputs/hopper/h64_dgate_block_tables.mlir --grad --hopper-options="dp-issue=early"
# The forward with lse on the tensor-core kernels (issue 29): --grad
# compiles the forward to the Hopper kernel (sm_90a) or the mma.sync kernel
# (--chip=sm_80 --kernel=mma) and the backward to the Hopper backward, the
# mma.sync backward (--kernel=mma) or the plain path, and
# checks the forward's out and lse, then dq, dk and dv, against float64:
# every Hopper input (head dim 256: the Hopper backward with 64 keys a CTA,
# by dq-reduce=red and bulk, the plain one at 4 x 4 blocks for partial
# RoPE; h256_lse_rope_gqa, a forward with lse written out, runs
# with the inputs above and here: out and lse), then the kernels' variants (three
# consumers with the tensor cores' row sums, the staged epilogue, one CTA
# per tile, rope=ahead and pre, the eager softmax).
for f in "$root"/test/Inputs/hopper/h64_*.mlir "$root"/test/Inputs/hopper/h128_*.mlir; do
  run "${f#$root/}" --grad
  run "${f#$root/}" --grad --chip=sm_80 --kernel=mma
done
for f in "$root"/test/Inputs/hopper/h256_*.mlir; do
  case "$f" in *_lse_*) continue ;; esac
  run "${f#$root/}" --grad
  run "${f#$root/}" --grad --hopper-options="dq-reduce=bulk dp-issue=late"
done
run test/Inputs/hopper/h256_lse_rope_gqa.mlir --hopper-options="rope=pre persistent=false"
run test/Inputs/hopper/h256_lse_rope_gqa.mlir --hopper-options="rescale=eager row-sum=mma ctas=2"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --grad --hopper-options="consumers=3 row-sum=mma ctas=3"
run test/Inputs/hopper/h64_causal.mlir --grad --hopper-options="epilogue=staged ctas=5"
run test/Inputs/hopper/h128_rope_causal.mlir --grad --hopper-options="persistent=false"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --grad --hopper-options="rope=ahead"
run test/Inputs/hopper/h128_rope_causal.mlir --grad --hopper-options="rope=pre rescale=eager ctas=3"
# Every RoPE placement of the Hopper lowering.
for place in fused split pre; do
  run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options=rope=$place
  run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options=rope=$place
  run test/Inputs/hopper/h128_interleaved_full.mlir --hopper-options=rope=$place
done
# The persistent kernel with fewer CTAs than tiles, so that each CTA runs
# several (uneven counts), in every placement, Q rotated by either role.
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options=ctas=5
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options="ctas=5 q-rope=producer"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="ctas=3 q-rope=producer"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options=ctas=3
run test/Inputs/hopper/h128_interleaved_partial.mlir --hopper-options=ctas=2
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options="rope=fused ctas=2"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="rope=pre ctas=7"
run test/Inputs/hopper/h64_causal.mlir --hopper-options=ctas=1
run test/Inputs/hopper/h128_plain_f16.mlir --hopper-options=ctas=3
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options=persistent=false
# The GEMM with its K split (the input's default is 4 slices): 2 and 8
# slices, and none; the 128 x 256 tile split 2 ways.
run test/Inputs/matmul_split.mlir --hopper-options=split-k=2
run test/Inputs/matmul_split.mlir --hopper-options=split-k=8
run test/Inputs/matmul_split.mlir --hopper-options=split-k=1
run test/Inputs/matmul_split.mlir --tile-options="kernel=hopper block-n=256" --hopper-options=split-k=2
# Three consumer warpgroups (192-row query blocks), in every placement,
# several tiles per CTA and one per tile, tails, f16 and not causal.
for place in fused split pre; do
  run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="consumers=3 rope=$place ctas=3"
done
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="consumers=3 q-rope=producer ctas=3"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="consumers=3 persistent=false"
run test/Inputs/hopper/h64_causal.mlir --hopper-options="consumers=3 ctas=1"
run test/Inputs/hopper/h64_plain_f16.mlir --hopper-options="consumers=3 ctas=2"
run test/Inputs/hopper/h64_interleaved_partial.mlir --hopper-options="consumers=3 ctas=2"
# K rotated once per row by the attention kernel's own producer warps
# (rope=ahead): two and three consumers, GQA, a partial interleaved rotary
# dim, one CTA (whose team rotates every key block), one CTA per tile, and
# head dim 128 with 64-key blocks (128-key ones do not fit beside three stages). Each runs 20 launches, which reuse the
# workspace's ticket counter and flags.
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="rope=ahead"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="rope=ahead consumers=3 ctas=3"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="rope=ahead ctas=1"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="rope=ahead persistent=false"
run test/Inputs/hopper/h64_interleaved_partial.mlir --hopper-options="rope=ahead consumers=3 ctas=2"
run test/Inputs/hopper/h128_rope_causal.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="rope=ahead"
run test/Inputs/hopper/h128_interleaved_partial.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="rope=ahead ctas=3"
# The softmax's variants (lazy rescaling and the tensor cores' row sums are
# the defaults with three consumers; two get lazy and the ALUs' sums): the
# other of each, f16 ones, and the late P.V wait at head dim 64.
run test/Inputs/hopper/h64_causal.mlir --hopper-options="consumers=3 rescale=eager row-sum=alu ctas=2"
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options="rescale=eager ctas=3"
run test/Inputs/hopper/h128_rope_causal.mlir --hopper-options="row-sum=mma ctas=3"
run test/Inputs/hopper/h64_plain_f16.mlir --hopper-options="row-sum=mma ctas=2"
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --hopper-options="consumers=3 pv-wait=late ctas=3"
# Softcap, ALiBi and sliding windows (their inputs run above with the
# defaults, and on the mma kernel below; softcap and ALiBi are attn-tile's
# bodies, h64_light_mods_long's on the default three consumers): three consumers, the persistent
# kernel with few CTAs (its schedule prices a tile by the key blocks its
# window reaches), RoPE of K per tile (positions from the window's first
# block) and ahead (its flags by absolute block), one CTA per tile, 64-key
# blocks, the other softmax variants.
run test/Inputs/hopper/h64_window_rope.mlir --hopper-options="consumers=3 ctas=3"
run test/Inputs/hopper/h64_window_rope.mlir --hopper-options="rope=fused ctas=2"
run test/Inputs/hopper/h64_window_rope.mlir --hopper-options="rope=ahead"
run test/Inputs/hopper/h64_window_rope.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h128_softcap_causal_gqa.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="ctas=5"
run test/Inputs/hopper/h128_alibi_causal.mlir --hopper-options="rescale=eager ctas=3"
run test/Inputs/hopper/h64_mods_window_f16.mlir --hopper-options="consumers=3 row-sum=mma ctas=2"
# Score and mask functions of any form on the fragments (lib/Kernels/score_fn.c):
# the gate and the document mask as attn-tile's bodies, a bias table, ALiBi
# and a prefix LM written as bodies with captured tensors; several tiles per
# CTA, one CTA per tile, three consumers, 64-key blocks, the eager softmax
# with the tensor cores' sums, and each RoPE placement (launch programs pass
# the captures, the program's order kept).
run test/Inputs/hopper/h64_bias_document.mlir --hopper-options="ctas=3"
run test/Inputs/hopper/h64_bias_document.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h64_bias_document.mlir --hopper-options="consumers=3 ctas=2"
run test/Inputs/hopper/h64_document_window.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="ctas=3"
run test/Inputs/hopper/h128_gate_softcap_f16.mlir --hopper-options="rescale=eager row-sum=mma ctas=2"
for place in split pre fused; do
  run test/Inputs/hopper/h64_prefix_alibi_body.mlir --hopper-options=rope=$place
done
# Mask functions whose bodies are affine: the key blocks from the compile-time
# table (attn_hopper_key_table), persistent and one CTA per tile, three
# consumers, and the Hopper kernel's first query block before row 0.
run test/Inputs/hopper/h128_prefill_body.mlir --hopper-options="ctas=5"
run test/Inputs/hopper/h128_prefill_body.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h64_window_body_causal.mlir --hopper-options="consumers=3 ctas=3"
run test/Inputs/hopper/h64_window_body_causal.mlir --hopper-options="persistent=false"
# Head dim 256 (the h256 inputs ran above with the defaults: 80-key blocks,
# 64 with a score_mod body, two stages, RoPE over the whole head split): one
# CTA per tile, few CTAs (several tiles each), 64-key blocks, rope=pre, the
# other softmax variants, and over half the head (fused) one CTA per tile,
# and ahead at one stage of 64 keys (the most that fit beside its buffers).
run test/Inputs/hopper/h256_rope_causal.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h256_rope_causal.mlir --hopper-options="ctas=5"
run test/Inputs/hopper/h256_rope_causal.mlir --hopper-options="rope=pre ctas=3"
run test/Inputs/hopper/h256_rope_causal.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="ctas=3"
run test/Inputs/hopper/h256_rope_causal.mlir --hopper-options="rescale=eager row-sum=mma pv-wait=early ctas=2"
run test/Inputs/hopper/h256_norope_causal.mlir --hopper-options="ctas=1"
run test/Inputs/hopper/h256_gqa_plain_f16.mlir --hopper-options="ctas=3"
run test/Inputs/hopper/h256_gqa_plain_f16.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="persistent=false"
run test/Inputs/hopper/h256_softcap_window_partial.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h256_softcap_window_partial.mlir --hopper-options="ctas=3"
run test/Inputs/hopper/h256_softcap_window_partial.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="rope=pre ctas=2"
run test/Inputs/hopper/h256_bias_document.mlir --hopper-options="ctas=3"
run test/Inputs/hopper/h256_bias_document.mlir --hopper-options="persistent=false"
# RoPE at explicit positions (packed sequences, issue 28; the default
# placement of each input runs above): every placement (ahead at head dim
# 128 with 64-key blocks), Q by the producer's warps, three consumers (the
# stash's f32 turns), Q pair by pair (rotary dim 48), several tiles per CTA
# and one per tile, repeated launches of ahead's queue.
for place in fused split pre; do
  run test/Inputs/hopper/h128_rope_positions_causal.mlir --hopper-options="rope=$place ctas=3"
done
run test/Inputs/hopper/h128_rope_positions_causal.mlir --hopper-options="rope=split q-rope=producer ctas=3"
run test/Inputs/hopper/h128_rope_positions_causal.mlir --hopper-options="persistent=false"
run test/Inputs/hopper/h128_rope_positions_causal.mlir --tile-options="kernel=hopper block-n=64" --hopper-options="rope=ahead ctas=3"
# (rope=ahead is refused with a document mask: its key lists are made at
# run time; the same placements' rotations run on the other inputs.)
run test/Inputs/hopper/h64_rope_positions_document.mlir --hopper-options="rope=split consumers=3 ctas=2 persistent=true"
run test/Inputs/hopper/h64_rope_positions_document.mlir --hopper-options="rope=pre"
run test/Inputs/hopper/h64_rope_positions_document.mlir --hopper-options="consumers=3 persistent=false"
run test/Inputs/hopper/h64_rope_positions_document.mlir --hopper-options="rope=fused ctas=3"
run test/Inputs/hopper/h64_rope_positions_q_window.mlir --hopper-options="consumers=3 rope=split ctas=2"
run test/Inputs/hopper/h64_rope_positions_q_window.mlir --hopper-options="rope=ahead"
run test/Inputs/hopper/h64_rope_positions_q_window.mlir --hopper-options="rope=fused ctas=2"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="consumers=3 ctas=3"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="consumers=3 rope=pre ctas=5"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="consumers=3 q-rope=producer ctas=3"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="rope=ahead consumers=3 ctas=3"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="rope=ahead ctas=1"
run test/Inputs/hopper/h64_rope_positions_gqa_causal.mlir --hopper-options="rope=ahead persistent=false"
# The mma.sync kernel (lower-tile-to-mma), compiled for sm_80 (3 stages) and
# sm_86 (2 stages at d 128) and JIT-compiled by the driver: every input it
# takes (not head dim 256: it has none), then its small tiles (4 warps, 32
# and 128 keys).
for f in "$root"/test/Inputs/hopper/*.mlir "$root"/test/Inputs/gqa_bf16.mlir "$root"/test/Inputs/plain_f16.mlir; do
  case "$f" in */h256_*) continue ;; esac
  run "${f#$root/}" --chip=sm_80 --kernel=mma
done
run test/Inputs/hopper/h128_rope_causal.mlir --chip=sm_86 --kernel=mma
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --chip=sm_86 --kernel=mma
run test/Inputs/hopper/h64_gqa_rope_causal.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=32"
run test/Inputs/hopper/h64_causal.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=128"
run test/Inputs/hopper/h64_window_rope.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=32"
run test/Inputs/hopper/h64_mods_window_f16.mlir --chip=sm_86 --kernel=mma
run test/Inputs/hopper/h64_bias_document.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=32"
run test/Inputs/hopper/h128_gate_softcap_f16.mlir --chip=sm_86 --kernel=mma
run test/Inputs/hopper/h128_prefill_body.mlir --chip=sm_80 --kernel=mma
run test/Inputs/hopper/h64_window_body_causal.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=32"
# The decode kernel (issue 30, lower-tile-to-decode): attn.fused_decode over
# contiguous and paged caches against attn_reference_decode, fresh lengths
# (one full, one minimal) and shuffled block tables (-1 past each
# sequence's pages) per run: the small programs (also in the loop above)
# at two more seeds and through sm_80's PTX, and the larger ones (32K keys
# at batch 1, batch 8 in pages of 16, speculative rows, windows, d 256).
# GPU_CHECK_ONLY=decode runs these alone.
run test/Inputs/decode_programs.mlir --seed=11
run test/Inputs/decode_programs.mlir --seed=12
run test/Inputs/decode_programs.mlir --chip=sm_80
run test/Inputs/decode/large.mlir
run test/Inputs/decode/large.mlir --chip=sm_80
# The split kernel's two bodies on every program: the lanes body (FMAs
# and shuffles per key and row; the default with one row a CTA) and the
# tensor-core body (mma.sync; the default with several, forced here also
# on one row and with two rows a CTA, so that GQA groups take several
# CTAs; head dim 256 then falls back to the plain path).
run test/Inputs/decode_programs.mlir --seed=13 --hopper-options=body=lanes
run test/Inputs/decode/large.mlir --hopper-options=body=lanes
run test/Inputs/decode_programs.mlir --seed=14 --hopper-options=body=mma
run test/Inputs/decode_programs.mlir --seed=15 "--hopper-options=body=mma rows=2"
run test/Inputs/decode/large.mlir --chip=sm_80 "--hopper-options=body=mma rows=3"
# The tensor-core body's loads: the next step's K in registers
# (kv-prefetch), a cp.async ring of 2 and 3 steps in shared memory
# (kv-stages), and the register bound of 4 CTAs an SM (occupancy).
run test/Inputs/decode_programs.mlir --seed=16 "--hopper-options=body=mma kv-prefetch=true"
run test/Inputs/decode/large.mlir "--hopper-options=kv-prefetch=true"
run test/Inputs/decode_programs.mlir --seed=17 "--hopper-options=body=mma kv-stages=3"
run test/Inputs/decode_programs.mlir --seed=18 --chip=sm_80 "--hopper-options=body=mma kv-stages=2 rows=2"
run test/Inputs/decode/large.mlir "--hopper-options=kv-stages=3"
run test/Inputs/decode/large.mlir "--hopper-options=occupancy=4"
# The decode programs with an append (attn.cache_append feeding the decode:
# the append kernel writing the new K and V, then the split kernel reading
# them; attn-run reads the caches back and checks every row): the default,
# one split (no workspace), the lanes body, and sm_80's PTX.
run test/Inputs/decode_append.mlir --seed=21
run test/Inputs/decode_append.mlir --seed=22 --hopper-options=splits=1
run test/Inputs/decode_append.mlir --seed=23 --hopper-options=body=lanes
run test/Inputs/decode_append.mlir --seed=24 --chip=sm_80
run test/tools/attn-run/Inputs/decode_append_f32.mlir
# Random decode programs (attn-fuzz --decode-cases, tools/attn-fuzz/
# gen_decode.c: GQA groups, 1 to 16 rows, head dims 32 to 256, pages of 16
# to 256, softcap and ALiBi in random order, windows, RoPE) through the
# drivers' GPU pipeline, each against the float64 reference of its case.
if [[ "attn-fuzz --gpu decode" =~ ${GPU_CHECK_ONLY:-} ]]; then
  echo "== attn-fuzz --gpu --decode-cases=200" | tee -a "$log"
  if ! "$carry/bin/attn-fuzz" --gpu --cases=0 --invalid=0 --decode-cases=200 \
      --seed="${GPU_FUZZ_SEED:-26}" 2>&1 | tee -a "$log"; then
    echo "attn-fuzz --gpu: FAIL" | tee -a "$log"
    fail=1
  fi
fi
# What the decode kernel does not take (f32, value dim 40) on the plain
# path's scalar program (lower-tile-to-decode's fallback).
run test/tools/attn-run/Inputs/decode_f32.mlir
# attn.decode on CUDA tensors (test/python/decode_cuda.test): the float64
# torch reference, the errors, a CUDA graph replayed with new lengths.
if [[ "test/python/decode_cuda.test" =~ ${GPU_CHECK_ONLY:-} ]]; then
  echo "== python: attn.decode on CUDA tensors" | tee -a "$log"
  if ! PYTHONPATH="$root/python" ATTN_LIBRARY_DIR="$carry/lib" ATTN_CACHE_DIR="/tmp/attn-gpu-check-cache" \
      python3 "$root/test/python/decode_cuda.test" 2>&1 | tee -a "$log"; then
    fail=1
  fi
fi
if [ -n "${GPU_CHECK_ONLY:-}" ]; then
  echo "summary: $(grep -c ' PASS' "$log") PASS, $(grep -c ' FAIL' "$log") FAIL" | tee -a "$log"
  exit $fail
fi
run test/Inputs/hopper/h128_rope_positions_causal.mlir --chip=sm_86 --kernel=mma
run test/Inputs/hopper/h64_rope_positions_q_window.mlir --chip=sm_80 --kernel=mma --tile-options="block-m=64 block-n=32"
# The Python binding on CUDA torch tensors (test/python/torch_cuda.test).
echo "== python: attn.attention on CUDA tensors" | tee -a "$log"
if ! PYTHONPATH="$root/python" ATTN_LIBRARY_DIR="$carry/lib" ATTN_CACHE_DIR="/tmp/attn-gpu-check-cache" \
    python3 "$root/test/python/torch_cuda.test" 2>&1 | tee -a "$log"; then
  fail=1
fi
# RoPE at explicit positions (packed sequences) on the tensor-core kernels
# (test/python/rope_positions_cuda.test).
echo "== python: attn.attention with rope positions on CUDA tensors" | tee -a "$log"
if ! PYTHONPATH="$root/python" ATTN_LIBRARY_DIR="$carry/lib" ATTN_CACHE_DIR="/tmp/attn-gpu-check-cache" \
    python3 "$root/test/python/rope_positions_cuda.test" 2>&1 | tee -a "$log"; then
  fail=1
fi
# A layer's attention from its input: projections with RoPE in their GEMM
# epilogue, then attention (test/python/torch_cuda_project.test).
echo "== python: attn.project program on CUDA tensors" | tee -a "$log"
if ! PYTHONPATH="$root/python" ATTN_LIBRARY_DIR="$carry/lib" ATTN_CACHE_DIR="/tmp/attn-gpu-check-cache" \
    python3 "$root/test/python/torch_cuda_project.test" 2>&1 | tee -a "$log"; then
  fail=1
fi
# The fused GEMM + collective kernels at 2, 3, 4 and 8 ranks, every rank on
# this GPU (test/runtime/fused-loopback-gpu.test): plain C, C's peer table,
# and the two in turn.
"$carry/bin/attn-translate" --to-ptx "$root/test/Inputs/comm/loopback.mlir" -o "$out/loopback.ptx" \
  --manifest="$out/loopback.json" || fail=1
for mode in "" --symmetric-out --alternate-out; do
  echo "== fused kernels, ranks on one GPU ${mode:-(plain)}" | tee -a "$log"
  # shellcheck disable=SC2086 # mode is one word or none
  if ! timeout 600 "$carry/bin/attnrt-fused-loopback-gpu-test" $mode "$out/loopback.ptx" \
      "$out/loopback.json" 2>&1 | tee -a "$log"; then
    fail=1
  fi
done
# Random fused kernels, every rank on this GPU (bench/comm_loopback_fuzz.py):
# 2 to 8 ranks, every pattern, split and tile width, K tails.
for seed in 7 8; do
  echo "== random fused kernels, ranks on one GPU, seed $seed" | tee -a "$log"
  if ! python3 "$root/bench/comm_loopback_fuzz.py" --count 50 --seed $seed --bin "$carry/bin" \
      --out "$out/comm_fuzz$seed" 2>&1 | tee -a "$log"; then
    fail=1
  fi
done
# The same program through a cubin from ptxas, to prove that path loads too.
"$carry/bin/attn-translate" --to-cubin "$root/examples/rope_causal.mlir" -o "$out/rope_causal.cubin" \
  --manifest="$out/rope_causal.json" && echo "cubin: $(stat -c %s "$out/rope_causal.cubin") bytes" | tee -a "$log"
echo "summary: $(grep -c ' PASS' "$log") PASS, $(grep -c ' FAIL' "$log") FAIL" | tee -a "$log"
exit $fail
