# Sourced by the GPU-machine scripts of bench/: stages (on the CPU machine)
# or sets up (on the GPU machine) what attn needs there. The GPU machine has
# no MLIR: `stage BUILD_DIR` copies attn's tools and runtime and downloads
# the MLIR/LLVM 22 libraries as Debian packages into .carry/ (ignored by
# git), which the device tool carries; `setup` unpacks them and exports
# LD_LIBRARY_PATH, CUDA_HOME and ATTN_CARRY.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry="$root/.carry"

stage() {
  local build=${1:?usage: stage BUILD_DIR}
  rm -rf "$carry/bin" "$carry/lib" && mkdir -p "$carry/bin" "$carry/lib" "$carry/debs"
  cp "$build"/bin/attn-run "$build"/bin/attn-translate "$build"/bin/attn-opt \
    "$build"/bin/attn-fuzz "$carry/bin/"
  cp "$build"/lib/libattnrt.so "$build"/lib/libattn.so* "$carry/lib/"
  # Debug info is most of a RelWithDebInfo build, and the device tool
  # carries 64 MiB in all.
  strip --strip-debug "$carry"/bin/* "$carry"/lib/*
  # What the results name as the build (the GPU machine's copy of the tree
  # may have a stale .git, or none).
  echo "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (with uncommitted changes)')" \
    > "$carry/commit"
  if ! ls "$carry"/debs/libmlir-22_*.deb >/dev/null 2>&1; then
    (cd "$carry/debs" && apt-get download libmlir-22 libllvm22 libz3-4 libcjson1 >/dev/null 2>&1)
  fi
  du -sh "$carry"
}

setup() {
  local libs=/tmp/attn-libs
  mkdir -p "$libs"
  for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$libs"; done
  export LD_LIBRARY_PATH="$carry/lib:$libs/usr/lib/llvm-22/lib:$libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  if [ -z "${CUDA_HOME:-}" ]; then
    for d in /usr/local/cuda /usr/local/cuda-13.0; do
      [ -d "$d/nvvm/libdevice" ] && export CUDA_HOME=$d && break
    done
  fi
  export ATTN_CARRY="$carry"
  # A kernel that never ends fails the wait for it after 2 minutes instead
  # of hanging the session (docs/runtime.md; attn-run has --timeout).
  export ATTNRT_SYNC_TIMEOUT_S=${ATTNRT_SYNC_TIMEOUT_S:-120}
}
