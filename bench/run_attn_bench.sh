#!/usr/bin/env bash
# The RoPE + causal attention benchmark (bench/attn_bench.py): attn's kernel
# against compiled RoPE + flex_attention / SDPA cuDNN / SDPA flash, checked
# against a float64 reference before timing. Results go to $OUT
# (attn_bench.md, .json, .png).
#
#   on the CPU machine:  bench/run_attn_bench.sh --stage build
#   on the GPU machine:  bench/run_attn_bench.sh        (.carry carried)
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"
if [ "${1:-}" = "--stage" ]; then
  stage "${2:?usage: run_attn_bench.sh --stage BUILD_DIR}"
  exit 0
fi
setup
export ATTN_BIN="$carry/bin" ATTN_LIBATTNRT="$carry/lib/libattnrt.so" PYTHONUNBUFFERED=1
export ATTN_BENCH_VARIANTS=${ATTN_BENCH_VARIANTS-"fused:rope:--hopper-options=rope=fused;pre:rope:--hopper-options=rope=pre;norope:norope"}
if [ -n "${ATTN_BENCH_PROJECT:-}" ]; then
  # The placements of a layer computed from its input (bench/project_bench.py).
  python3 "$root/bench/project_bench.py"
elif [ -n "${ATTN_BENCH_NCU:-}" ]; then
  # Nsight Compute on one program per entry "d:N[:norope]" (bench/attn_ncu.py):
  # the attention kernel's second launch, every section, clocks left alone.
  # Writes $OUT/ncu/<d>_<N>[_norope].{ncu-rep,details.txt,sass.csv} and
  # prints where the warps wait (bench/ncu_stalls.py).
  mkdir -p "${OUT:-/tmp/attn_bench}/ncu"
  IFS=, read -ra entries <<< "$ATTN_BENCH_NCU"
  for entry in "${entries[@]}"; do
    IFS=: read -r d n rope <<< "$entry"
    name="${d}_${n}${rope:+_$rope}"
    rep="${OUT:-/tmp/attn_bench}/ncu/$name"
    ATTN_NCU_D=$d ATTN_NCU_N=$n ATTN_NCU_ROPE=$([ "$rope" = norope ] && echo 0 || echo 1) \
      ncu --clock-control none --set full -k 'regex:^attn(__attn)?$' \
      --launch-skip 1 --launch-count 1 -f -o "$rep" python3 "$root/bench/attn_ncu.py"
    ncu --import "$rep.ncu-rep" --page details > "$rep.details.txt"
    ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.sass.csv"
    echo "== $name"
    grep -E "Duration|SM Frequency|highest-utilized" "$rep.details.txt" || true
    python3 "$root/bench/ncu_stalls.py" "$rep.sass.csv" 20
  done
elif [ -n "${ATTN_BENCH_PROFILE:-}" ]; then
  # Each kernel of the program timed apart (bench/attn_profile.py).
  python3 "$root/bench/attn_profile.py"
else
  python3 "$root/bench/attn_bench.py"
fi
