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
elif [ -n "${ATTN_BENCH_PROFILE:-}" ]; then
  # Each kernel of the program timed apart (bench/attn_profile.py).
  python3 "$root/bench/attn_profile.py"
else
  python3 "$root/bench/attn_bench.py"
fi
