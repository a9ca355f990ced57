#!/usr/bin/env bash
# Sets up and builds attn if needed, then runs every test (lit + FileCheck
# suites, C unit tests) through the check-attn target, then the suites that
# run CPU kernels again with the JIT's native bf16/f16 conversions off
# (ATTN_CPU_PORTABLE=1, lib/Target/attn_jit.h: what a CPU without them
# runs, so that a machine with them cannot hide a failure there), then the
# libFuzzer targets for a fixed number of seeded runs (test/fuzz), then the
# same suites once more under ASan, LSan and UBSan (scripts/sanitize.sh), builds it
# once more as Release (-O3 finds warnings, fatal here, that -O2 does not),
# and ends with one summary line. GPU tests run only where a GPU is present. CI runs
# exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
cmake --build "${ATTN_BUILD_DIR:-$root/build}" --target check-attn 2>&1 | tee "$log" || rc=$?
count() { grep -Eo "^ *$1 *: *[0-9]+" "$log" | grep -Eo '[0-9]+$' | tail -1 || true; }
passed=$(count Passed); failed=$(count Failed); unsupported=$(count Unsupported)
port=passed
lit=$(command -v lit || echo /usr/lib/llvm-22/bin/lit)
ATTN_CPU_PORTABLE=1 "$lit" -s "${ATTN_BUILD_DIR:-$root/build}/test" \
  --filter '^attn :: (tools/attn-run/|tools/attn-fuzz/|python/|CAPI/attn\.test|Target/jit)' ||
  { port=FAILED; [ "$rc" -ne 0 ] || rc=1; }
# The libFuzzer targets (test/fuzz, built by clang-22 in build-fuzz/), each
# for a fixed, seeded number of runs over its seed corpus, then its
# regression inputs: bounded and the same on every run.
fuzz=passed
fuzz_build=${ATTN_FUZZ_BUILD_DIR:-$root/build-fuzz}
{ "$root/test/fuzz/build.sh" "$fuzz_build" 2>&1 | tail -n 3 &&
  "$lit" -s "$fuzz_build/test" --filter '^attn :: fuzz/'; } ||
  { fuzz=FAILED; [ "$rc" -ne 0 ] || rc=1; }
san=passed
"$root/scripts/sanitize.sh" || { san=FAILED; [ "$rc" -ne 0 ] || rc=1; }
rel=passed
release=${ATTN_RELEASE_BUILD_DIR:-$root/build-release}
{ cmake -S "$root" -B "$release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$release" 2>&1 | tail -n 3; } || { rel=FAILED; [ "$rc" -ne 0 ] || rc=1; }
echo "tests: ${passed:-0} passed, ${failed:-0} failed, ${unsupported:-0} skipped; portable CPU: $port; fuzzing: $fuzz; sanitizers: $san; release build: $rel"
exit $rc
