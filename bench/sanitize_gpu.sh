#!/usr/bin/env bash
# Runs every kernel family of attn under compute-sanitizer's four tools
# (memcheck, synccheck, initcheck, racecheck) on the GPU machine, on the
# small programs of test/Inputs, and prints one table: program, options,
# tool, errors/hazards, verdict (issue 27, item 5).
#
#   on the CPU machine:  bench/sanitize_gpu.sh --stage BUILD_DIR
#                        (builds what it needs, stages .carry/ as gpu_check.sh does)
#   on the GPU machine:  bench/sanitize_gpu.sh          (.carry carried)
#   anywhere:            bench/sanitize_gpu.sh --list   (the matrix, nothing run)
#
# Families: the Hopper attention kernel (rope=fused, split, pre, ahead; the
# persistent schedule with several tiles per CTA, persistent=false,
# consumers=3; with lse, the forward of a backward), the RoPE kernels of the rope=split/pre programs (launched in
# the same attn-run process, so each run covers them too), the mma.sync
# kernel (--chip=sm_80/sm_86 --kernel=mma, JIT-compiled by the driver), the
# plain kernels (f32, f16, bf16, language.mlir), the GEMM (Hopper and plain)
# and its split K, and the fused GEMM + collective kernels at 2 to 8 ranks
# on one GPU (attnrt-fused-loopback-gpu-test on test/Inputs/comm/loopback.mlir).
# attn-run runs with --iters=1 (the checked launch, three warm-ups and one
# timed launch, so a workspace reused between launches is covered), except
# under racecheck, which checks shared memory only and gets one launch.
#
# Order: first a probe (memcheck on the smallest plain kernel: if the
# sanitizer refuses the device, nothing else runs), then the positive
# controls (planted bugs each tool must report), then memcheck on every
# program, synccheck, racecheck on a program of each family, initcheck,
# and racecheck on the rest. attn-run jobs run SAN_JOBS at a time on the
# one GPU; rope=ahead and the fused kernels run alone (a CTA waits for
# another's flag and traps after 10 s). A run that would start after
# SAN_BUDGET_S is "skipped (budget)", and no run outlasts it.
#
# Settings: SAN_BUDGET_S (540), SAN_JOBS (6), SAN_TIMEOUT_S (150 per run,
# twice that under racecheck), SAN_TOOLS (all four), SAN_ONLY (an extended
# regex on the case ids, e.g. 'hopper-split|fused'), SAN_CONTROLS=0 (no
# controls), COMPUTE_SANITIZER (its path; else PATH, then
# /usr/local/cuda/bin and /usr/local/cuda-13.0/bin), SAN_BIN (the tools'
# folder, default .carry/bin).
#
# Output in $OUT (default /tmp/attn-sanitize), three files: summary.txt (the
# table and, for every run that is not clean, the first lines of its report),
# env.txt (GPU, driver, compute-sanitizer and ptxas versions, commit),
# logs.tar.gz (every run's command, sanitizer log and program output).
# Exit status 0 only when every run that ran was clean and every control
# was detected.
set -uo pipefail
# shellcheck source=bench/gpu_env.sh # (sets root and carry)
source "$(dirname "$0")/gpu_env.sh"
if [ "${1:-}" = "--stage" ]; then
  set -e
  build=${2:?usage: sanitize_gpu.sh --stage BUILD_DIR}
  cmake --build "$build" --target attn-run attn-translate attn-opt attnrt attn \
    attnrt-fused-loopback-gpu-test
  stage "$build"
  cp "$build"/bin/attnrt-fused-loopback-gpu-test "$carry/bin/"
  strip --strip-debug "$carry"/bin/attnrt-fused-loopback-gpu-test
  # The GPU machine's copy of the tree may have no .git.
  echo "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (with uncommitted changes)')" \
    > "$carry/commit"
  size=$(du -sm "$carry" | cut -f1)
  [ "$size" -le 60 ] || echo "sanitize_gpu: warning: .carry is $size MiB; the device tool carries 64 MiB in all" >&2
  exit 0
fi

# ---- the matrix --------------------------------------------------------
# add ID TOOLS PROGRAM [attn-run options...]
#   TOOLS: m (memcheck), s (synccheck), i (initcheck), r (racecheck, early)
#   and R (racecheck, last); a trailing ! runs the program alone on the GPU
#   (rope=ahead and the fused kernels: a CTA waits for another's flag and
#   traps after 10 s, which a GPU shared with other sanitized processes
#   could reach).
#   PROGRAM "fused" runs attnrt-fused-loopback-gpu-test on loopback.mlir; its
#   options are the test's ([--symmetric-out | --alternate-out] [KERNEL...]).
ids=() tools=() alone=() progs=() opts=()
add() {
  local id=$1 t=$2 prog=$3
  shift 3
  ids+=("$id") tools+=("${t%!}") progs+=("$prog")
  [[ $t == *! ]] && alone+=(1) || alone+=(0)
  local o="" a
  for a in "$@"; do o+="${o:+ }$(printf '%q' "$a")"; done
  opts+=("$o")
}
H=test/Inputs/hopper
# The Hopper attention kernel, and the RoPE kernels of rope=split and pre.
add hopper-split       msri  $H/h128_rope_causal.mlir --hopper-options=rope=split
add hopper-fused       msRi  $H/h128_rope_causal.mlir --hopper-options=rope=fused
add hopper-pre         msri  $H/h128_rope_causal.mlir --hopper-options=rope=pre
add hopper-default     msRi  $H/h128_rope_causal.mlir
add hopper-pre-il      msRi  $H/h128_interleaved_partial.mlir "--hopper-options=rope=pre ctas=2"
add hopper-split-gqa   msRi  $H/h64_gqa_rope_causal.mlir "--hopper-options=consumers=3 rope=split ctas=3"
add hopper-ahead-c3    msri! $H/h64_interleaved_partial.mlir "--hopper-options=rope=ahead consumers=3 ctas=2"
add hopper-ahead       msRi! $H/h128_rope_causal.mlir "--tile-options=kernel=hopper block-n=64" --hopper-options=rope=ahead
add hopper-ahead-gqa   msRi! $H/h64_gqa_rope_causal.mlir --hopper-options=rope=ahead
add hopper-ahead-np    msRi! $H/h64_interleaved_partial.mlir "--hopper-options=rope=ahead persistent=false"
add hopper-ctas5       msri  $H/h128_rope_causal.mlir --hopper-options=ctas=5
add hopper-qprod       msRi  $H/h128_rope_causal.mlir "--hopper-options=ctas=5 q-rope=producer"
add hopper-nonpers     msRi  $H/h128_rope_causal.mlir --hopper-options=persistent=false
add hopper-ctas1       msRi  $H/h128_norope_causal.mlir --hopper-options=ctas=1
add hopper-c3          msRi  $H/h64_plain_f16.mlir "--hopper-options=consumers=3 ctas=2"
add hopper-c3-np       msRi  $H/h64_interleaved_partial.mlir "--hopper-options=consumers=3 persistent=false"
add hopper-eager       msRi  $H/h128_rope_causal.mlir "--hopper-options=rescale=eager ctas=3"
add hopper-rowsum-mma  msRi  $H/h64_plain_f16.mlir "--hopper-options=row-sum=mma ctas=2"
add hopper-pv-late     msRi  $H/h64_interleaved_partial.mlir "--hopper-options=consumers=3 pv-wait=late ctas=2"
add hopper-f16-d128    msRi  $H/h128_plain_f16.mlir --hopper-options=ctas=3
# Score and mask functions on the fragments (lib/Kernels/score_fn.c), the
# compile-time key table, and the run-time key lists of masks that read
# data (lib/Kernels/key_lists.c: point by point, by ranges, a block map).
add hopper-fns         msRi  $H/h128_gate_softcap_f16.mlir
add hopper-fn-table    msRi  $H/h64_window_body_causal.mlir
add hopper-fn-prefill  msRi  $H/h128_prefill_body.mlir
add hopper-keylists    msRi  $H/h64_bias_document.mlir
add hopper-keylists-c3 msRi  $H/h64_bias_document.mlir "--hopper-options=consumers=3 ctas=2 persistent=true"
add hopper-keylists-rg msRi  $H/h128_document_causal_body.mlir
add hopper-keylists-bm msRi  $H/h64_block_map.mlir
add mma-fns            msRi  $H/h64_bias_document.mlir --chip=sm_80 --kernel=mma "--tile-options=block-m=64 block-n=32"
add mma-fn-table       msRi  $H/h64_prefix_alibi_body.mlir --chip=sm_80 --kernel=mma
# Head dim 256 (two 128-column halves of the wgmma accumulator), with a
# score function and a data mask, and explicit RoPE positions (packed
# sequences: the rotation kernel's positions, per-row positions in place).
add hopper-d256        msRi  $H/h256_rope_causal.mlir
add hopper-d256-split  msRi  $H/h256_rope_causal.mlir --hopper-options=rope=split
add hopper-d256-fns    msRi  $H/h256_softcap_window_partial.mlir
add hopper-d256-doc    msRi  $H/h256_bias_document.mlir
add hopper-pos-doc     msRi  $H/h64_rope_positions_document.mlir
add hopper-pos-split   msRi  $H/h128_rope_positions_causal.mlir --hopper-options=rope=split
add hopper-pos-pre     msRi  $H/h64_rope_positions_gqa_causal.mlir --hopper-options=rope=pre
add hopper-pos-window  msRi  $H/h64_rope_positions_q_window.mlir
add mma-pos            msRi  $H/h64_rope_positions_gqa_causal.mlir --chip=sm_80 --kernel=mma
# The mma.sync kernel, JIT-compiled by the driver.
add mma-sm80           msri  $H/h128_rope_causal.mlir --chip=sm_80 --kernel=mma
add mma-il             msRi  $H/h64_interleaved_partial.mlir --chip=sm_80 --kernel=mma
add mma-gqa            msRi  test/Inputs/gqa_bf16.mlir --chip=sm_80 --kernel=mma
add mma-f16            msRi  test/Inputs/plain_f16.mlir --chip=sm_80 --kernel=mma
add mma-sm86           msRi  $H/h128_rope_causal.mlir --chip=sm_86 --kernel=mma
add mma-small-tiles    msRi  $H/h64_interleaved_partial.mlir --chip=sm_80 --kernel=mma "--tile-options=block-m=64 block-n=32"
# The plain kernels.
add plain-f32          msri  test/Inputs/cross_f32.mlir
add plain-bf16         msri  test/Inputs/gqa_bf16.mlir --kernel=plain
add plain-f16          msRi  test/Inputs/plain_f16.mlir --kernel=plain
add plain-language     msRi  test/Inputs/language.mlir --kernel=plain
add plain-example      msRi  examples/rope_causal.mlir
# The backward on the plain path (issue 29): the forward with lse, then
# the kernels __dkdv and __dq (attn-run --grad; gqa_bf16's forward at sm_80
# is the mma.sync kernel's).
add plain-grad         msri  test/Inputs/grad.mlir --grad
add plain-grad-small   msRi  test/Inputs/grad.mlir --grad "--tile-options=block-m=16 block-n=8"
add plain-grad-lang    msRi  test/Inputs/language.mlir --grad
add plain-grad-sm80    msRi  test/Inputs/gqa_bf16.mlir --grad --chip=sm_80
# The Hopper backward (lib/Kernels/attention_bwd.c): the preprocess, the
# main kernel (TMA and bulk copies into its ring, wgmma, dS^T in shared
# memory between the consumers' barriers, red.global.add into dq_acc), the
# finishing kernels; RoPE rotated before and back after.
add hopper-grad-d64    msri  $H/g64_causal_ragged.mlir --grad
add hopper-grad-d64-rp msRi  $H/g64_rope_full_f16.mlir --grad
add hopper-grad-d128   msri  $H/g128_rope_causal_ragged.mlir --grad
add hopper-grad-cross  msRi  $H/g128_cross_plain.mlir --grad
add hopper-grad-gqa    msRi  $H/g128_gqa_interleaved_causal.mlir --grad
# dq-reduce=bulk: dQ through a shared-memory tile per consumer warpgroup
# and cp.reduce.async.bulk (racecheck: the tile's reuse across steps).
add hopper-grad-bulk64  msri  $H/g64_causal_ragged.mlir --grad --hopper-options=dq-reduce=bulk
add hopper-grad-bulk128 msri  $H/g128_rope_causal_ragged.mlir --grad --hopper-options=dq-reduce=bulk
# Its modifiers and masks: the chain, its derivative and the mask bodies
# on the S^T fragment, reading captures (the gate, segment ids) by global
# loads; the window's query range and edges.
add hopper-grad-gate    msri  $H/h128_gate_softcap_f16.mlir --grad
add hopper-grad-alibi   msRi  $H/h128_alibi_causal.mlir --grad
add hopper-grad-doc     msri  $H/h64_document_window.mlir --grad
add hopper-grad-body    msRi  $H/h64_window_body_causal.mlir --grad
# The schedule options: dP^T issued with S^T, dS^T in two tiles by step
# parity without the barrier before its store (racecheck: the tiles' reuse).
add hopper-grad-dp128   msri  $H/g128_rope_causal_ragged.mlir --grad "--hopper-options=dp-issue=early ds-buffers=2"
add hopper-grad-dp64    msRi  $H/g64_causal_ragged.mlir --grad "--hopper-options=dp-issue=early ds-buffers=2"
add hopper-grad-dpgate  msRi  $H/h128_gate_softcap_f16.mlir --grad --hopper-options=dp-issue=early
# deterministic=true: the turns (a poll, barriers, a release store) around
# each warpgroup's dQ adds.
add hopper-grad-det128  msri  $H/g128_rope_causal_ragged.mlir --grad --hopper-options=deterministic=true
add hopper-grad-det64   msRi  $H/h64_document_window.mlir --grad --hopper-options=deterministic=true
# Head dim 256: the Hopper backward (64 keys a CTA, the consumers on
# halves of the columns, dS^T stored half by each), by red and bulk
# reduces; the plain backward (4 x 4 blocks) for partial RoPE.
add hopper-grad-d256    msri  $H/h256_rope_causal.mlir --grad --hopper-options=dq-reduce=red
add hopper-grad-d256b   msri  $H/h256_gqa_plain_f16.mlir --grad --hopper-options=dq-reduce=bulk
add plain-grad-d256     msRi  $H/h256_softcap_window_partial.mlir --grad
# The mma.sync backward (lib/Kernels/mma_attention_bwd.c): cp.async of K,
# V and each step's Q, dO, lse2 and D into its ring, dS^T in shared memory
# between barriers (racecheck: the stage's and the dS^T tile's reuse),
# red.global.add into dq_acc; two stages (sm_80), one (sm_86, head dim 128),
# on sm_90a by --kernel=mma; the chain, its derivative and mask bodies.
add mma-grad-d64       msri  $H/g64_causal_ragged.mlir --grad --chip=sm_80
add mma-grad-d128      msri  $H/g128_rope_causal_ragged.mlir --grad --chip=sm_80
add mma-grad-1stage    msri  $H/g128_rope_causal_ragged.mlir --grad --chip=sm_86
add mma-grad-gqa       msRi  $H/g128_gqa_interleaved_causal.mlir --grad --kernel=mma
add mma-grad-cross     msRi  $H/g128_cross_plain.mlir --grad --chip=sm_80
add mma-grad-gate      msri  $H/h128_gate_softcap_f16.mlir --grad --kernel=mma
add mma-grad-doc       msRi  $H/h64_document_window.mlir --grad --chip=sm_80
# The decode kernel (issue 30): split-KV partial rows into the workspace,
# the combine kernel, contiguous and paged caches; the tensor-core body
# (the default with several rows a CTA; forced, two rows a CTA) and the
# lanes body.
add decode             msri  test/Inputs/decode_programs.mlir --seed=11
add decode-mma         msri  test/Inputs/decode_programs.mlir --seed=12 "--hopper-options=body=mma rows=2"
add decode-lanes       msri  test/Inputs/decode_programs.mlir --seed=13 --hopper-options=body=lanes
add decode-large       msri  test/Inputs/decode/large.mlir --seed=14
add decode-prefetch    msri  test/Inputs/decode_programs.mlir --seed=15 "--hopper-options=body=mma kv-prefetch=true"
add decode-stages      msri  test/Inputs/decode_programs.mlir --seed=16 "--hopper-options=body=mma kv-stages=3"
# The append kernel before the split kernel (its writes, the split kernel's
# reads of them), with splits and with one.
add decode-append      msri  test/Inputs/decode_append.mlir --seed=17
add decode-append-one  msri  test/Inputs/decode_append.mlir --seed=18 --hopper-options=splits=1
# Gradients into captured tensors: __pre zeroing the buffers, the main
# kernel's sums across lanes (shuffles) and red.global.add.f32 into them.
add hopper-grad-dgate   msri  $H/h128_sas_dgate_bf16.mlir --grad
add hopper-grad-dtab    msRi  $H/h64_dgate_block_tables.mlir --grad
add hopper-grad-dcap    msRi  $H/h128_dgate_table_f16.mlir --grad
# The forwards with lse on the tensor-core kernels (issue 29): the Hopper
# and mma.sync kernels' lse stores (attn-run --grad: their forward, then the
# backward), with a key-list program, three consumers with the tensor
# cores' row sums, rope=ahead, and head dim 256's forward with lse alone
# (its program: the K rotation, then attention).
add hopper-lse         msri  $H/h128_rope_causal.mlir --grad
add hopper-lse-c3      msRi  $H/h64_gqa_rope_causal.mlir --grad "--hopper-options=consumers=3 row-sum=mma ctas=3"
add hopper-lse-keys    msRi  $H/h64_bias_document.mlir --grad
add hopper-lse-ahead   msRi! $H/h64_gqa_rope_causal.mlir --grad --hopper-options=rope=ahead
add hopper-lse-d256    msri  $H/h256_lse_rope_gqa.mlir
add mma-lse            msri  $H/h128_rope_causal.mlir --grad --chip=sm_80 --kernel=mma
add mma-lse-keys       msRi  $H/h64_bias_document.mlir --grad --chip=sm_80 --kernel=mma
add plain-example-16   msRi  examples/rope_causal.mlir "--tile-options=block-m=16 block-n=16 threads=256"
add plain-causal       msRi  test/Inputs/causal_f32.mlir
add plain-tiny         msRi  test/Inputs/tiny_f32.mlir
# The GEMM (Hopper, and plain where the shapes allow no TMA) and its split K.
add gemm-hopper        msri  test/Inputs/matmul_bf16.mlir --tile-options=kernel=hopper
add gemm-long-k        msRi  test/Inputs/matmul_long_k.mlir --tile-options=kernel=hopper
add gemm-plain-tails   msRi  test/Inputs/matmul_tails.mlir
add gemm-splitk2       msri  test/Inputs/matmul_split.mlir --tile-options=kernel=hopper --hopper-options=split-k=2
add gemm-splitk4       msRi  test/Inputs/matmul_split.mlir --tile-options=kernel=hopper
add gemm-splitk8       msRi  test/Inputs/matmul_split.mlir --tile-options=kernel=hopper --hopper-options=split-k=8
add gemm-splitk1       msRi  test/Inputs/matmul_split.mlir --tile-options=kernel=hopper --hopper-options=split-k=1
add gemm-n256-splitk2  msRi  test/Inputs/matmul_split.mlir "--tile-options=kernel=hopper block-n=256" --hopper-options=split-k=2
# Positive controls, run first and alone: each has a planted bug that its
# tool must report ("detected"; "MISSED" fails the run). "planted" is a
# small CUDA program built here with nvcc (an out-of-bounds write, a shared
# memory race, a read of uninitialised memory, a __syncwarp whose mask
# leaves out the calling lanes);
# "fused-planted" is the fused kernels' PTX with a store past the end of
# ar2's workspace (mem) or an unsynchronised shared-memory write and read
# by all of ar2's warps (race) put at its entry: proof that the tools see
# into attn's kernels, loaded as PTX and JIT-compiled by the driver, with
# TMA, mbarriers and wgmma in them.
add control-oob        m!    planted oob
add control-race       r!    planted race
add control-uninit     i!    planted uninit
add control-sync       s!    planted sync
add control-ptx-oob    m!    fused-planted mem ar2
add control-ptx-race   r!    fused-planted race ar2
# The fused GEMM + collective kernels, every rank on this GPU.
add fused-2-3-4-8      msi!  fused ar2 ag3 rs4 ar8
add fused-race         r!    fused ar2 ag3
add fused-all          m!    fused
add fused-symmetric    ms!   fused --symmetric-out ar2 rs2 rs4 ar8 rs8 ag8
add fused-alternate    m!    fused --alternate-out ar2 rs4 ar8_static rs8_static

tool_name() { case $1 in m) echo memcheck ;; s) echo synccheck ;; i) echo initcheck ;; r | R) echo racecheck ;; esac; }
selected() { # index tool-letter
  [[ ${tools[$1]} == *"$2"* ]] || return 1
  [[ " ${SAN_TOOLS:-memcheck synccheck initcheck racecheck} " == *" $(tool_name "$2") "* ]] || return 1
  [ -z "${SAN_ONLY:-}" ] || [[ ${ids[$1]} =~ ${SAN_ONLY} ]]
}
# The jobs in order, a step per tool letter: "index letter" pairs, then
# "wait", then the step's programs that run alone. memcheck and synccheck
# first, then racecheck on a program of each family, initcheck, and the
# rest of racecheck.
order=()
if [ "${SAN_CONTROLS:-1}" != 0 ]; then
  for t in m s r i; do
    for i in "${!ids[@]}"; do
      [[ ${ids[$i]} == control-* ]] && selected "$i" "$t" && order+=("$i $t")
    done
  done
fi
for t in m s r i R; do
  later=()
  for i in "${!ids[@]}"; do
    { [[ ${ids[$i]} != control-* ]] && selected "$i" "$t"; } || continue
    if [ "${alone[$i]}" = 1 ]; then later+=("$i $t"); else order+=("$i $t"); fi
  done
  order+=(wait "${later[@]}")
done
if [ "${1:-}" = "--list" ]; then
  n=0
  for j in "${order[@]}"; do
    [ "$j" = wait ] && continue
    read -r i t <<<"$j"
    n=$((n + 1))
    printf '%3d  %-18s %-9s %-5s %s %s\n' "$n" "${ids[$i]}" "$(tool_name "$t")" \
      "$([ "${alone[$i]}" = 1 ] && echo alone)" "${progs[$i]}" "${opts[$i]}"
  done
  exit 0
fi

# ---- set-up ------------------------------------------------------------
bin=${SAN_BIN:-$carry/bin}
if [ ! -x "$bin/attn-run" ] || [ ! -x "$bin/attnrt-fused-loopback-gpu-test" ]; then
  echo "sanitize_gpu: $bin has no attn-run/attnrt-fused-loopback-gpu-test: run 'bench/sanitize_gpu.sh --stage BUILD_DIR' on the CPU machine and carry .carry" >&2
  exit 1
fi
[ -n "${SAN_BIN:-}" ] || setup
out=${OUT:-/tmp/attn-sanitize}
# Every run's files stay out of $OUT (the device tool brings back 8 files),
# which gets them as one archive.
work=${SAN_WORK:-/tmp/attn-sanitize-work}
logs=$work/logs
rm -rf "$work" && mkdir -p "$logs" "$out"
cs=${COMPUTE_SANITIZER:-}
if [ -z "$cs" ]; then
  for c in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer \
      /usr/local/cuda-13.0/bin/compute-sanitizer /usr/local/cuda-13.0/compute-sanitizer/compute-sanitizer; do
    [ -n "$c" ] && [ -x "$c" ] && cs=$c && break
  done
fi
budget=${SAN_BUDGET_S:-540}
njobs=${SAN_JOBS:-6}
per_run=${SAN_TIMEOUT_S:-150}
start=$(date +%s)
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  echo "commit: $(cat "$carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "compute-sanitizer: ${cs:-not found}"
  [ -n "$cs" ] && "$cs" --version 2>&1 | sed 's/^/  /'
  ptxas=$(command -v ptxas || echo "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas")
  "$ptxas" --version 2>&1 | tail -1 | sed 's/^/ptxas: /'
  echo "kernel: $(uname -r)"
  echo "budget: ${budget} s, ${njobs} jobs at a time, ${per_run} s per run"
} > "$out/env.txt"
cat "$out/env.txt"
if [ -z "$cs" ]; then
  echo "sanitize_gpu: no compute-sanitizer (PATH, /usr/local/cuda/bin, /usr/local/cuda-13.0/bin); set COMPUTE_SANITIZER" >&2
  exit 1
fi
lb_ptx=$work/loopback.ptx lb_json=$work/loopback.json
if ! "$bin/attn-translate" --to-ptx "$root/test/Inputs/comm/loopback.mlir" -o "$lb_ptx" \
    --manifest="$lb_json" > "$logs/loopback-compile.out" 2>&1; then
  echo "sanitize_gpu: cannot compile test/Inputs/comm/loopback.mlir:" >&2
  cat "$logs/loopback-compile.out" >&2
fi

# The positive controls' programs.
cat > "$work/planted.cu" <<'CU'
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
__global__ void oob(int *p, int n) { // writes p[n], one past the end
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) p[i] = i;
}
__global__ void race(int *out) { // every warp writes and reads s[0], no barrier
  __shared__ volatile int s[1];
  s[0] = threadIdx.x;
  out[threadIdx.x] = s[0];
}
__global__ void uninit(const int *in, int *out) { out[threadIdx.x] = in[threadIdx.x]; }
__global__ void sync(int *out) { // a warp barrier whose mask leaves out lanes 1-31
  __syncwarp(1u);
  out[threadIdx.x] = 1;
}
int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "";
  int *a, *b;
  cudaMalloc(&a, 100 * sizeof(int));
  cudaMalloc(&b, 128 * sizeof(int));
  cudaMemset(b, 0, 128 * sizeof(int));
  if (!strcmp(m, "oob")) oob<<<1, 128>>>(a, 100);
  else if (!strcmp(m, "race")) race<<<1, 128>>>(b);
  else if (!strcmp(m, "uninit")) uninit<<<1, 100>>>(a, b);
  else if (!strcmp(m, "sync")) sync<<<1, 128>>>(b);
  else return 2;
  cudaError_t e = cudaDeviceSynchronize();
  printf("planted %s: %s\n", m, cudaGetErrorString(e));
  cudaFree(a);
  cudaFree(b);
  return 0;
}
CU
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] || nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] || ! "$nvcc" -arch=sm_90a -o "$work/planted" "$work/planted.cu" > "$logs/planted-build.out" 2>&1; then
  echo "sanitize_gpu: cannot build the planted controls (nvcc: ${nvcc:-none}); they fail" | tee -a "$out/env.txt"
fi
# ar2's entry gets the planted lines (before its first ld.param).
plant() { # variant text
  awk -v text="$2" '/^\.visible \.entry ar2\(/ { in_ar2 = 1 }
    in_ar2 && !done && /^[ \t]*ld\.param/ { print "\t" text; done = 1 }
    { print }' "$lb_ptx" > "$work/planted-$1.ptx"
}
plant mem '{ .reg .b32 t; .reg .b64 w; .reg .pred q; mov.u32 t, %tid.x; ld.param.u64 w, [ar2_param_3]; setp.eq.u32 q, t, 0; @q st.global.u32 [w+268435456], t; }'
plant race '{ .reg .b32 t, u; mov.u32 t, %tid.x; st.shared.u32 [attn_smem+16384], t; ld.volatile.shared.u32 u, [attn_smem+16384]; }'

# ---- one run -----------------------------------------------------------
# run_one INDEX LETTER: writes $logs/ID.TOOL.{san,out,res}; .res is one
# tab-separated line: id program options tool errors verdict seconds first.
run_one() {
  local i=$1 t=$2 tool id=${ids[$1]} prog=${progs[$1]} limit left
  tool=$(tool_name "$t")
  local base=$logs/$id.$tool
  left=$((start + budget - $(date +%s)))
  limit=$per_run
  [ "$tool" = racecheck ] && limit=$((per_run * 2))
  [ "$left" -lt "$limit" ] && limit=$left
  local -a args cmd
  eval "args=(${opts[$i]})"
  if [ "$prog" = fused ]; then
    local mode=() names=()
    for a in "${args[@]}"; do [[ $a == --* ]] && mode+=("$a") || names+=("$a"); done
    cmd=("$bin/attnrt-fused-loopback-gpu-test" "${mode[@]}" "$lb_ptx" "$lb_json" "${names[@]}")
  elif [ "$prog" = fused-planted ]; then
    cmd=("$bin/attnrt-fused-loopback-gpu-test" "$work/planted-${args[0]}.ptx" "$lb_json" "${args[@]:1}")
  elif [ "$prog" = planted ]; then
    cmd=("$work/planted" "${args[@]}")
  else
    local iters=1
    [ "$tool" = racecheck ] && iters=0
    cmd=("$bin/attn-run" --target=gpu --iters="$iters" --timeout=$((limit > 20 ? limit - 10 : limit)) "${args[@]}" "$root/$prog")
  fi
  local -a topts=(--tool "$tool" --error-exitcode 99 --print-limit 20 --show-backtrace device --log-file "$base.san")
  [ "$tool" = memcheck ] && topts+=(--leak-check full)
  local t0 t1 rc
  t0=$(date +%s)
  printf '%q ' "$cs" "${topts[@]}" "${cmd[@]}" > "$base.cmd"
  timeout -k 10 "$limit" "$cs" "${topts[@]}" "${cmd[@]}" > "$base.out" 2>&1
  rc=$?
  t1=$(date +%s)
  local san=$base.san errors="" verdict="" first="" summary=""
  [ -f "$san" ] || : > "$san"
  # The report's first lines: the sanitizer's own lines less its banner
  # and summaries.
  first=$(grep '^=========' "$san" | grep -v -e 'COMPUTE-SANITIZER' -e 'SUMMARY:' -e '^=========[[:space:]]*$' \
    | head -3 | sed 's/^========= *//' | tr '\t' ' ' | paste -sd'|' | cut -c1-300)
  if [ "$tool" = racecheck ]; then
    summary=$(grep -o 'RACECHECK SUMMARY: [0-9]* hazards\? displayed ([0-9]* errors\?, [0-9]* warnings\?)' "$san" | tail -1)
    if [ -n "$summary" ]; then
      errors=$(sed -E 's/.*: ([0-9]+) hazards? displayed \(([0-9]+) errors?, ([0-9]+) warnings?\)/\1 (\2 err, \3 warn)/' <<<"$summary")
    fi
  else
    summary=$(grep -o 'ERROR SUMMARY: [0-9]* errors\?' "$san" | tail -1)
    [ -n "$summary" ] && errors=$(grep -o '[0-9]*' <<<"$summary")
  fi
  local nerr=${errors%% *} prog_ok=1 race_err=0 race_warn=0
  if [ "$tool" = racecheck ] && [ -n "$summary" ]; then
    race_err=$(sed -E 's/.*\(([0-9]+) errors?.*/\1/' <<<"$summary")
    race_warn=$(sed -E 's/.*, ([0-9]+) warnings?\)/\1/' <<<"$summary")
  fi
  if [ "$prog" = fused ]; then
    grep -q ' 0 failed$' "$base.out" || prog_ok=0
  else
    grep -q '^[0-9]* passed, 0 failed' "$base.out" || prog_ok=0
  fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    verdict="timeout (${limit} s)"
    [ "$limit" -lt "$per_run" ] && [ "$tool" != racecheck ] && verdict="timeout (budget, ${limit} s)"
    [ "$limit" -lt $((per_run * 2)) ] && [ "$tool" = racecheck ] && verdict="timeout (budget, ${limit} s)"
  elif [ -z "$summary" ]; then
    verdict="tool error"
  elif [ "$tool" = racecheck ] && [ "$race_err" != 0 ]; then
    verdict="HAZARDS"
  elif [ "$tool" = racecheck ] && [ "$race_warn" != 0 ]; then
    verdict="WARNINGS"
  elif [ "$nerr" != 0 ]; then
    if [ "$tool" = memcheck ] && [ "$(grep -c 'Leaked [0-9]* bytes' "$san")" = "$nerr" ]; then
      verdict="LEAKS"
    else
      verdict="ERRORS"
    fi
  elif [ "$rc" != 0 ] || [ "$prog_ok" = 0 ]; then
    verdict="program failed (rc $rc)"
  else
    verdict=clean
  fi
  if [[ $id == control-* ]]; then
    case $verdict in
      ERRORS | HAZARDS | WARNINGS | LEAKS) verdict="detected ($verdict)" ;;
      clean | "program failed"*) verdict="MISSED ($verdict)" ;;
    esac
  fi
  [ -n "$first" ] || [ "$verdict" = clean ] || first=$(grep -v '^$' "$base.out" | tail -2 | paste -sd'|' | cut -c1-300)
  # (read splits at runs of tabs: no field may be empty)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$prog" "$(shown "${opts[$i]}")" "$tool" "${errors:--}" \
    "$verdict" "$((t1 - t0))" "${first:--}" > "$base.res"
}
skip_one() {
  local tool
  tool=$(tool_name "$2")
  printf '%s\t%s\t%s\t%s\t-\tskipped (budget)\t0\t-\n' "${ids[$1]}" "${progs[$1]}" "$(shown "${opts[$1]}")" "$tool" \
    > "$logs/${ids[$1]}.$tool.res"
}
shown() { # options as the table shows them
  local -a a
  eval "a=($1)"
  [ ${#a[@]} = 0 ] && { echo -; return; }
  local o="" x
  for x in "${a[@]}"; do [[ $x == *" "* ]] && o+="${o:+ }\"$x\"" || o+="${o:+ }$x"; done
  echo "$o"
}
time_left() { echo $((start + budget - $(date +%s))); }

# ---- the probe ---------------------------------------------------------
probe=$logs/probe
timeout -k 10 120 "$cs" --tool memcheck --error-exitcode 99 --log-file "$probe.san" \
  "$bin/attn-run" --target=gpu "$root/test/Inputs/tiny_f32.mlir" > "$probe.out" 2>&1 </dev/null
probe_rc=$?
echo "probe: memcheck on tiny_f32 (plain kernel): rc $probe_rc, $(grep -o 'ERROR SUMMARY: .*' "$probe.san" 2>/dev/null | tail -1)" \
  | tee -a "$out/env.txt"
if ! grep -q 'ERROR SUMMARY' "$probe.san" 2>/dev/null; then
  echo "sanitize_gpu: compute-sanitizer did not run a kernel; nothing else runs. Its log and the program's output:" | tee -a "$out/env.txt"
  head -20 "$probe.san" "$probe.out" 2>/dev/null | tee -a "$out/env.txt"
  tar -czf "$out/logs.tar.gz" -C "$work" logs
  exit 1
fi

# ---- the matrix --------------------------------------------------------
cd "$root" || exit 1
for j in "${order[@]}"; do
  if [ "$j" = wait ]; then wait; continue; fi
  read -r i t <<<"$j"
  if [ "${alone[$i]}" = 1 ]; then
    wait
    if [ "$(time_left)" -lt 20 ]; then skip_one "$i" "$t"; continue; fi
    echo "[$(($(date +%s) - start)) s] ${ids[$i]} $(tool_name "$t") (alone)"
    run_one "$i" "$t" </dev/null
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do wait -n; done
  if [ "$(time_left)" -lt 20 ]; then skip_one "$i" "$t"; continue; fi
  echo "[$(($(date +%s) - start)) s] ${ids[$i]} $(tool_name "$t")"
  run_one "$i" "$t" </dev/null &
done
wait

# ---- the table ---------------------------------------------------------
summary=$out/summary.txt
{
  cat "$out/env.txt"
  echo
  printf '| %-17s | %-40s | %-57s | %-9s | %-18s | %-22s | %5s |\n' id program options tool errors verdict s
  printf '|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..19})" "$(printf -- '-%.0s' {1..42})" \
    "$(printf -- '-%.0s' {1..59})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..20})" \
    "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..7})"
  for j in "${order[@]}"; do
    [ "$j" = wait ] && continue
    read -r i t <<<"$j"
    f=$logs/${ids[$i]}.$(tool_name "$t").res
    [ -f "$f" ] || continue
    IFS=$'\t' read -r id prog o tool e v s _ < "$f"
    printf '| %-17s | %-40s | %-57s | %-9s | %-18s | %-22s | %5s |\n' "$id" "${prog#test/Inputs/}" "$o" "$tool" "$e" "$v" "$s"
  done
  echo
  cat "$logs"/*.res | awk -F'\t' '{n[$6]++} END {for (v in n) printf "%s: %d\n", v, n[v]}' | sort
  echo "wall: $(($(date +%s) - start)) s"
  echo
  echo "== runs that are not clean: the first lines of each report"
  for j in "${order[@]}"; do
    [ "$j" = wait ] && continue
    read -r i t <<<"$j"
    base=$logs/${ids[$i]}.$(tool_name "$t")
    [ -f "$base.res" ] || continue
    IFS=$'\t' read -r id prog o tool e v s first < "$base.res"
    case $v in clean | "skipped (budget)") continue ;; esac
    echo "-- $id $tool: $v ($e)"
    echo "   command: $(cat "$base.cmd" 2>/dev/null)"
    grep -v -e '^=========[[:space:]]*$' "$base.san" 2>/dev/null | head -24 | sed 's/^/   /'
    echo "   program output (last lines):"
    grep -v '^$' "$base.out" 2>/dev/null | tail -4 | sed 's/^/   /'
  done
} > "$summary"
tar -czf "$out/logs.tar.gz" -C "$work" logs
sed -n '/^| id/,/^wall:/p' "$summary"
! cut -f6 "$logs"/*.res | grep -v -q -e '^clean$' -e '^skipped (budget)$' -e '^detected'
