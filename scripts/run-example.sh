#!/usr/bin/env bash
# The main job, end to end: set up and build attn, then compile the example
# RoPE + causal attention program and show each stage: the fused op, the
# tile kernel, the PTX (checked by ptxas), the CPU path's numerics against
# the float64 reference, and the Python binding on CPU torch tensors
# (examples/rope_causal.py, the README's Python example) with the Python that
# bootstrap.sh names. Everything it writes goes to a fresh temporary folder,
# which it names; nothing goes into the repository.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
build=${ATTN_BUILD_DIR:-$root/build}
bin=$build/bin
example=${1:-$root/examples/rope_causal.mlir}
cuda=${CUDA_HOME:-/usr/local/cuda}
python=$("$root/scripts/bootstrap.sh" --python)
out=$(mktemp -d "${TMPDIR:-/tmp}/attn-example.XXXXXX")
echo "run-example: writing to $out"

echo "== 1. attn-opt --fuse-rope: the chain becomes one attn.fused op"
"$bin/attn-opt" --fuse-rope "$example"
echo
echo "== 2. attn-opt --fuse-rope --tile: a tile kernel (first 40 lines)"
"$bin/attn-opt" --fuse-rope --tile "$example" | head -40
echo "   ..."
echo
echo "== 3. attn-translate --to-ptx: PTX for sm_90a (first 40 lines), and its manifest"
"$bin/attn-translate" --to-ptx "$example" -o "$out/kernel.ptx" --manifest="$out/kernel.json"
head -40 "$out/kernel.ptx"
echo "   ... ($(wc -l < "$out/kernel.ptx") lines in $out/kernel.ptx)"
cat "$out/kernel.json"
echo
echo "== 4. ptxas -arch=sm_90a -v"
"$cuda/bin/ptxas" -arch=sm_90a -v "$out/kernel.ptx" -o "$out/kernel.cubin" 2>&1 | sed 's/^/   /'
echo
echo "== 5. attn-run: the CPU path against the float64 reference"
"$bin/attn-run" "$example"
echo
echo "== 6. $python examples/rope_causal.py: attn.attention on CPU torch tensors"
PYTHONPATH="$root/python" ATTN_LIBRARY_DIR="$build/lib" ATTN_CACHE_DIR="$out/cache" \
  "$python" "$root/examples/rope_causal.py"
