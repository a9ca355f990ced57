#!/usr/bin/env bash
# The static-versus-adaptive comparison of attn's fused GEMM + collective
# kernels (issue 6): comm_bench over 7 shapes x 3 patterns, once with every
# collective pinned to the static split and once to the adaptive one
# (COMM_FUSED_SPLIT, which bench/comm_fused.c writes as comm.schedule), each
# run with its own cuBLAS + NCCL sequential baseline; every fused result is
# checked against float64 before it is timed. Then bench/comm_sweep_table.py
# prints the RESULTS.md table and the geometric means.
#
#   on the CPU machine:  bench/run_comm_bench.sh --stage build
#   on the GPU machine:  bench/run_comm_sweep.sh     (RANKS=2 by default)
#
# Results go to $OUT: static/ and adaptive/ (comm_bench.json and a log per
# rank) and sweep.md.
set -uo pipefail
# shellcheck source=bench/gpu_env.sh # (sets root and carry)
source "$(dirname "$0")/gpu_env.sh"
setup
out=${OUT:-/tmp/attn-comm-sweep}
ranks=${RANKS:-2}
# Idle time before each variant (comm_bench --cooldown-ms): shorter than
# comm_bench's 1 s default, which would add 210 s to the 210 variants here.
cooldown=${COOLDOWN_MS:-500}
shapes=${SWEEP_SHAPES:-8192x8192x8192,4096x8192x4096,8192x8192x4096,4096x4096x8192,8192x4096x8192,16384x8192x4096,4096x16384x4096}
export NCCL_NVLS_ENABLE=0 ATTN_COMM_TIMEOUT_S=${ATTN_COMM_TIMEOUT_S:-60}
[ -n "${ATTNRT_NVJITLINK_LIBRARY:-}" ] ||
  export ATTNRT_NVJITLINK_LIBRARY=$(ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvJitLink.so.13* 2>/dev/null | head -1)
if [ -z "${ATTN_CUBLAS_LIBRARY:-}" ] && [ -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libcublas.so.13" ]; then
  export ATTN_CUBLAS_LIBRARY="${CUDA_HOME:-/usr/local/cuda}/lib64/libcublas.so.13"
  export LD_LIBRARY_PATH="${CUDA_HOME:-/usr/local/cuda}/lib64:$LD_LIBRARY_PATH"
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "$ngpu" -lt "$ranks" ]; then
  echo "run_comm_sweep: RANKS=$ranks needs that many GPUs, this machine has $ngpu" >&2
  exit 1
fi
fail=0
for split in static adaptive; do
  mkdir -p "$out/$split"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  pids=()
  for ((r = 0; r < ranks; ++r)); do
    COMM_FUSED_SPLIT=$split RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout -k 10 300 "$carry/bin/comm_bench" --json="$out/$split/comm_bench.json" \
      --no-symmetric --iters=20 --warmup=5 --cooldown-ms="$cooldown" --shapes="$shapes" > "$out/$split/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
done
python3 "$root/bench/comm_sweep_table.py" "$out/static/comm_bench.json" \
  "$out/adaptive/comm_bench.json" | tee "$out/sweep.md" || fail=1
exit $fail
