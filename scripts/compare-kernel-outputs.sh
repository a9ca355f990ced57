#!/usr/bin/env bash
# Checks that this tree's compiler writes the same kernels as BASE_REV's:
# builds BASE_REV (attn-opt, attn-translate) in a git worktree under /tmp,
# brings BUILD_DIR (this tree's build, default build) up to date, runs
# scripts/kernel-outputs.sh with each build, and compares the two folders.
#
#   scripts/compare-kernel-outputs.sh BASE_REV [BUILD_DIR]
#
# Both runs use this tree's kernel-outputs.sh and this tree's programs (test
# inputs, lit files, benchmark generators): only the compilers differ. A
# program that uses what BASE_REV cannot compile shows up as a difference.
#
# The worktree is /tmp/attn-kout-<commit>, its build /tmp/attn-kout-<commit>/build,
# both reused when present (KOUT_BASE_DIR chooses another folder); the
# outputs stay in /tmp/attn-kout-compare-<commit>/{base,new} for a closer
# look (KOUT_COMPARE_DIR chooses another). Prints how many files are
# identical and lists the others; exits 0 only when every file is identical.
# KOUT_FULL and KOUT_JOBS pass on to kernel-outputs.sh.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: scripts/compare-kernel-outputs.sh BASE_REV [BUILD_DIR]" >&2
  exit 2
fi
rev=$1
build=${2:-build}
[ -d "$build" ] || build=$root/$build
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "compare-kernel-outputs: $build is not a configured build folder" \
       "(ATTN_BUILD_DIR=$build scripts/bootstrap.sh makes one)" >&2
  exit 1
fi
build=$(cd "$build" && pwd)
sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || {
  echo "compare-kernel-outputs: no commit '$rev'" >&2
  exit 1
}
short=${sha:0:12}
base=${KOUT_BASE_DIR:-/tmp/attn-kout-$short}
cmp=${KOUT_COMPARE_DIR:-/tmp/attn-kout-compare-$short}

# The base's worktree, at exactly that commit.
if [ ! -e "$base/.git" ]; then
  rm -rf "$base"
  git -C "$root" worktree add --quiet --detach "$base" "$sha"
elif [ "$(git -C "$base" rev-parse HEAD)" != "$sha" ] || [ -n "$(git -C "$base" status --porcelain --untracked-files=no)" ]; then
  git -C "$base" checkout --quiet --force --detach "$sha"
fi
echo "compare-kernel-outputs: base $(git -C "$root" log -1 --format='%h %s' "$sha")"
echo "compare-kernel-outputs: building the base in $base/build"
[ -f "$base/build/CMakeCache.txt" ] ||
  cmake -S "$base" -B "$base/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$base/build" --target attn-opt attn-translate > "$cmp.base-build.log" 2>&1 || {
  tail -30 "$cmp.base-build.log" >&2
  echo "compare-kernel-outputs: the base does not build (log: $cmp.base-build.log)" >&2
  exit 1
}
echo "compare-kernel-outputs: building this tree in $build"
cmake --build "$build" --target attn-opt attn-translate > "$cmp.new-build.log" 2>&1 || {
  tail -30 "$cmp.new-build.log" >&2
  echo "compare-kernel-outputs: this tree does not build (log: $cmp.new-build.log)" >&2
  exit 1
}

mkdir -p "$cmp"
"$root/scripts/kernel-outputs.sh" "$cmp/base" "$base/build"
"$root/scripts/kernel-outputs.sh" "$cmp/new" "$build"

# Every file of either side, and which of them differ.
cd "$cmp"
list=$( (cd base && find . -type f) ; (cd new && find . -type f) )
all=$(printf '%s\n' "$list" | sed 's|^\./||' | LC_ALL=C sort -u)
total=$(printf '%s\n' "$all" | grep -c .)
differ=()
while IFS= read -r f; do
  if [ ! -f "base/$f" ]; then
    differ+=("$f (only new)")
  elif [ ! -f "new/$f" ]; then
    differ+=("$f (only base)")
  elif ! cmp -s "base/$f" "new/$f"; then
    differ+=("$f")
  fi
done <<< "$all"
echo "compare-kernel-outputs: $((total - ${#differ[@]})) files identical, ${#differ[@]} differ" \
     "(base: $cmp/base, new: $cmp/new)"
if [ ${#differ[@]} -gt 0 ]; then
  printf '  %s\n' "${differ[@]}"
  # The same, counted by kind of file (the name without chunk number).
  echo "compare-kernel-outputs: by kind:"
  printf '%s\n' "${differ[@]}" | sed -E 's| \(only .*\)$||; s|^([^/]*)/.*/([^/]*)$|\1 \2|; s/\.chunk[0-9]+//; s/run[0-9]+/runNN/' |
    LC_ALL=C sort | uniq -c | sort -rn | sed 's/^/  /'
  exit 1
fi
