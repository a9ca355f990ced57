#!/usr/bin/env bash
# The GEMM and GEMM + collective benchmarks: bench/gemm_bench.c (attn's
# kernel vs cuBLAS on GPU 0) and bench/comm_bench.c (cuBLAS + NCCL
# sequential, two-stream, on symmetric buffers, and attn's fused kernel, on
# two GPUs), every kernel checked against float64 before it is timed.
# Results go to $OUT (7 files): env.txt, bench.log, gemm_bench.json,
# comm_bench.json, comm_rank<r>.log per rank and results_section.md (the
# bench/RESULTS.md section).
#
#   on the CPU machine:  bench/run_comm_bench.sh --stage BUILD_DIR
#                        (builds what it needs in BUILD_DIR, stages .carry/)
#   on the GPU machine:  bench/run_comm_bench.sh      (.carry carried; 2 GPUs,
#                        or RANKS=4 / RANKS=8 on machines with that many)
#   back here:           python3 bench/comm_results.py --update bench/RESULTS.md \
#                            --raw-dir bench/raw FOLDER_WITH_THE_OUT_FILES
#
# Extra options: GEMM_BENCH_ARGS and COMM_BENCH_ARGS (e.g.
# COMM_BENCH_ARGS="--shapes=4096x8192x4096 --patterns=allreduce").
#
# Nothing hangs: each program runs under `timeout`, the ranks give up on a
# dead peer after ATTN_COMM_TIMEOUT_S (60 s here), and the first rank to
# fail stops the other. Fails with a message when the machine has fewer than
# two GPUs or NCCL cannot start. Exit status 0 only when both programs ran
# and every check passed.
set -euo pipefail
# shellcheck source=bench/gpu_env.sh # (sets root and carry)
source "$(dirname "$0")/gpu_env.sh"
if [ "${1:-}" = "--stage" ]; then
  build=${2:?usage: run_comm_bench.sh --stage BUILD_DIR}
  cmake --build "$build" --target gemm_bench comm_bench attn-run attn-translate \
    attn-opt attnrt attn
  stage "$build"
  cp "$build"/bin/gemm_bench "$build"/bin/comm_bench "$carry/bin/"
  strip --strip-debug "$carry"/bin/gemm_bench "$carry"/bin/comm_bench
  # The GPU machine's copy of the tree may have no .git.
  echo "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (with uncommitted changes)')" \
    > "$carry/commit"
  size=$(du -sm "$carry" | cut -f1)
  if [ "$size" -gt 60 ]; then
    echo "run_comm_bench: warning: .carry is $size MiB; the device tool carries 64 MiB in all" >&2
  fi
  exit 0
fi

if [ ! -x "$carry/bin/gemm_bench" ] || [ ! -x "$carry/bin/comm_bench" ]; then
  echo "run_comm_bench: $carry/bin has no gemm_bench/comm_bench: run 'bench/run_comm_bench.sh --stage BUILD_DIR' on the CPU machine and carry .carry" >&2
  exit 1
fi
setup
out=${OUT:-/tmp/attn-comm-bench}
mkdir -p "$out"
log="$out/bench.log"
: > "$log"
# NVLink multicast stays off on these machines (comm_bench forces it too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export ATTN_COMM_TIMEOUT_S=${ATTN_COMM_TIMEOUT_S:-60}

# A library the loader does not find by name: the toolkit's, else the copy
# PyTorch's wheels bring. Prints its path, or nothing.
find_lib() { # soname
  local name=$1 d
  if ldconfig -p 2>/dev/null | grep -q "$name "; then return 0; fi
  for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" "${CUDA_HOME:-/usr/local/cuda}/lib" \
           /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64 /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/$name" ] && echo "$d/$name" && return 0
  done
  python3 - "$name" 2>/dev/null <<'EOF' || true
import glob, os, site, sys
for p in site.getsitepackages():
    for f in sorted(glob.glob(os.path.join(p, "nvidia", "**", sys.argv[1]), recursive=True)):
        print(f)
        raise SystemExit
EOF
}
cublas=$(find_lib libcublas.so.13)
if [ -n "$cublas" ] && [ -z "${ATTN_CUBLAS_LIBRARY:-}" ]; then
  export ATTN_CUBLAS_LIBRARY=$cublas
  LD_LIBRARY_PATH="$(dirname "$cublas"):$LD_LIBRARY_PATH" # its libcublasLt, libcudart
  export LD_LIBRARY_PATH
fi
nccl=$(find_lib libnccl.so.2)
if [ -n "$nccl" ] && [ -z "${ATTNRT_NCCL_LIBRARY:-}" ]; then
  export ATTNRT_NCCL_LIBRARY=$nccl
fi

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
{
  echo "date: $(date -u +'%Y-%m-%d %H:%M UTC')"
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo "gpus: $ngpu"
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "clocks: $(nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,temperature.gpu,power.limit --format=csv,noheader 2>/dev/null | tr '\n' ';' | sed 's/;$//')"
  echo "topo: $(nvidia-smi topo -m 2>/dev/null | awk '$1=="GPU0" && $2=="X" {print "GPU0-GPU1 " $3; exit}')"
  echo "commit: $(cat "$carry/commit" 2>/dev/null || echo unknown)"
  echo "cublas: ${ATTN_CUBLAS_LIBRARY:-default search}"
  echo "nccl: ${ATTNRT_NCCL_LIBRARY:-default search}"
} > "$out/env.txt"
tee -a "$log" < "$out/env.txt"

fail=0
echo "== gemm_bench on GPU 0" | tee -a "$log"
# shellcheck disable=SC2086 # GEMM_BENCH_ARGS holds several options
if ! timeout -k 10 100 "$carry/bin/gemm_bench" --device=0 --json="$out/gemm_bench.json" \
    ${GEMM_BENCH_ARGS:-} 2>&1 | tee -a "$log"; then
  echo "run_comm_bench: gemm_bench failed (status above)" | tee -a "$log"
  fail=1
fi

# One rank per GPU: RANKS (default 2; 4 or 8 on the larger machines), at
# most the GPUs this machine has.
ranks=${RANKS:-2}
echo "== comm_bench, $ranks ranks" | tee -a "$log"
if ! [[ "$ranks" =~ ^[0-9]+$ ]] || [ "$ranks" -lt 2 ] || [ "$ngpu" -lt "$ranks" ]; then
  echo "run_comm_bench: comm_bench needs RANKS=$ranks GPUs (2 or more), this machine has $ngpu (ask for the nvidia-h200-x2, -x4 or -x8 kind)" | tee -a "$log"
  fail=1
else
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo 29517)
  pids=()
  for ((r = 0; r < ranks; ++r)); do
    # shellcheck disable=SC2086 # COMM_BENCH_ARGS holds several options
    RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout -k 10 150 "$carry/bin/comm_bench" --json="$out/comm_bench.json" \
      ${COMM_BENCH_ARGS:-} > "$out/comm_rank$r.log" 2>&1 &
    pids+=($!)
  done
  # The first rank to fail stops the other, which would otherwise wait for
  # its dead peer until ATTN_COMM_TIMEOUT_S.
  running=("${pids[@]}")
  while [ "${#running[@]}" -gt 0 ]; do
    st=0
    who=
    wait -n -p who "${running[@]}" || st=$?
    [ -n "$who" ] || break # nothing left to wait for
    rest=()
    for p in "${running[@]}"; do [ "$p" != "$who" ] && rest+=("$p"); done
    running=("${rest[@]}")
    if [ "$st" -ne 0 ]; then
      fail=1
      echo "run_comm_bench: rank process $who exited with status $st$([ "$st" -eq 124 ] && echo ' (timeout)')" | tee -a "$log"
      for p in "${running[@]}"; do
        echo "run_comm_bench: stopping another rank (pid $p)" | tee -a "$log"
        kill "$p" 2>/dev/null || true
      done
    fi
  done
  for ((r = 0; r < ranks; ++r)); do
    echo "-- rank $r (tail of $out/comm_rank$r.log)" | tee -a "$log"
    tail -n 40 "$out/comm_rank$r.log" | tee -a "$log"
  done
fi

echo "== results" | tee -a "$log"
if ! python3 "$root/bench/comm_results.py" --section "$out/results_section.md" "$out" 2>&1 | tee -a "$log"; then
  fail=1
fi
echo "run_comm_bench: $([ $fail -eq 0 ] && echo OK || echo FAILED); files in $out:" \
  "$(cd "$out" && echo *)" | tee -a "$log"
exit $fail
