#!/usr/bin/env bash
# Sets up and builds attn if needed, then runs every test (lit + FileCheck
# suites, C unit tests) through the check-attn target, then the same suites
# once more under ASan, LSan and UBSan (scripts/sanitize.sh), builds it
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
san=passed
"$root/scripts/sanitize.sh" || { san=FAILED; [ "$rc" -ne 0 ] || rc=1; }
rel=passed
release=${ATTN_RELEASE_BUILD_DIR:-$root/build-release}
{ cmake -S "$root" -B "$release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$release" 2>&1 | tail -n 3; } || { rel=FAILED; [ "$rc" -ne 0 ] || rc=1; }
echo "tests: ${passed:-0} passed, ${failed:-0} failed, ${unsupported:-0} skipped; sanitizers: $san; release build: $rel"
exit $rc
