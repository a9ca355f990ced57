#!/usr/bin/env bash
# Installs what attn needs on Debian 12 (MLIR/LLVM 22, cJSON, CMake, Ninja)
# and builds it in build/. Safe to run again: it installs only what is
# missing and rebuilds only what changed. The CUDA 13 toolkit (cuda.h,
# libdevice, ptxas) is expected at $CUDA_HOME or /usr/local/cuda.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

packages=(cmake ninja-build gcc g++ python3 libcjson-dev pkg-config python3-torch
          libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools)
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
