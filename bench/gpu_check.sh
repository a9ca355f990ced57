#!/usr/bin/env bash
# Runs attn's generated kernels on the GPU machine and checks each against
# the float64 reference (attn-run --target=gpu), then prints a table.
#
# The GPU machine has no MLIR: build here, then stage what the run needs in
# .carry/ (ignored by git) with `bench/gpu_check.sh --stage BUILD_DIR`, and
# on the GPU machine run `bench/gpu_check.sh` with .carry carried.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry="$root/.carry"

if [ "${1:-}" = "--stage" ]; then
  build=${2:?usage: gpu_check.sh --stage BUILD_DIR}
  rm -rf "$carry" && mkdir -p "$carry/bin" "$carry/lib" "$carry/debs"
  cp "$build"/bin/attn-run "$build"/bin/attn-translate "$build"/bin/attn-opt "$carry/bin/"
  cp "$build"/lib/libattnrt.so "$carry/lib/"
  (cd "$carry/debs" && apt-get download libmlir-22 libllvm22 libz3-4 libcjson1 >/dev/null 2>&1)
  du -sh "$carry"
  exit 0
fi

libs=/tmp/attn-libs
mkdir -p "$libs"
for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$libs"; done
export LD_LIBRARY_PATH="$carry/lib:$libs/usr/lib/llvm-22/lib:$libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
if [ -z "${CUDA_HOME:-}" ]; then
  for d in /usr/local/cuda /usr/local/cuda-13.0; do
    [ -d "$d/nvvm/libdevice" ] && export CUDA_HOME=$d && break
  done
fi
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
  echo "== $f $*" | tee -a "$log"
  if ! "$carry/bin/attn-run" --target=gpu --iters=20 "$@" "$root/$f" 2>&1 | tee -a "$log"; then
    fail=1
  fi
}
run examples/rope_causal.mlir
run examples/rope_causal.mlir --tile-options="block-m=16 block-n=16 threads=256"
for f in "$root"/test/Inputs/*.mlir; do run "${f#$root/}"; done
# The same program through a cubin from ptxas, to prove that path loads too.
"$carry/bin/attn-translate" --to-cubin "$root/examples/rope_causal.mlir" -o "$out/rope_causal.cubin" \
  --manifest="$out/rope_causal.json" && echo "cubin: $(stat -c %s "$out/rope_causal.cubin") bytes" | tee -a "$log"
echo "summary: $(grep -c ' PASS' "$log") PASS, $(grep -c ' FAIL' "$log") FAIL" | tee -a "$log"
exit $fail
