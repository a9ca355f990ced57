#!/usr/bin/env bash
# Installs what attn needs on Debian 12 (MLIR/LLVM 22, cJSON, CMake, Ninja,
# torch for /usr/bin/python3) and builds it in build/, then names the Python
# that has torch. Safe to run again: it installs only what is missing and
# rebuilds only what changed. The CUDA 13 toolkit (cuda.h, libdevice, ptxas)
# is expected at $CUDA_HOME or /usr/local/cuda.
#
#   scripts/bootstrap.sh            install, build, print the Python to use
#   scripts/bootstrap.sh --python   only print that Python's path
#
# The Python is $ATTN_PYTHON when set, else the first of `python3` on PATH
# and /usr/bin/python3 that can import torch (Debian's python3-torch is for
# /usr/bin/python3; PATH's python3 may be a pyenv shim or a venv without
# it), else /usr/bin/python3. test/lit.cfg.py chooses %attn_python the same
# way.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

# Prints the Python described above (the interpreter itself, not a shim).
find_python() {
  if [ -n "${ATTN_PYTHON:-}" ]; then
    echo "$ATTN_PYTHON"
    return
  fi
  local p exe
  for p in "$(command -v python3 || true)" /usr/bin/python3; do
    [ -n "$p" ] && [ -x "$p" ] || continue
    if exe=$("$p" -c 'import sys, torch; print(sys.executable)' 2>/dev/null) && [ -n "$exe" ]; then
      echo "$exe"
      return
    fi
  done
  if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3 || echo python3; fi
}

if [ "${1:-}" = "--python" ]; then
  find_python
  exit 0
fi

# clang-22 and libclang-rt-22-dev: the libFuzzer targets (test/fuzz/build.sh).
packages=(cmake ninja-build gcc g++ python3 libcjson-dev pkg-config python3-torch
          libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
          clang-22 libclang-rt-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
  echo "bootstrap: error: no CUDA toolkit at $cuda (cuda.h, nvvm/libdevice, bin/ptxas);" \
       "install CUDA 13 or set CUDA_HOME" >&2
  exit 1
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"

python=$(find_python)
if torch=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  echo "bootstrap: python with torch: $python (torch $torch)"
else
  echo "bootstrap: warning: no Python with torch found; $python cannot import torch" \
       "(set ATTN_PYTHON to one that can)" >&2
fi
