#!/usr/bin/env bash
# Builds attn with AddressSanitizer, LeakSanitizer and UndefinedBehavior-
# Sanitizer in build-asan/ (Debug, any UB report is fatal) and runs the lit
# suites there. Left out: the tests that load libattn into a process that
# was not built with ASan (the Python binding through ctypes, and so
# bench/mods_bench_selftest.py, grad_bench.py's, grad_variants.py's and
# herald_check.py's (its small decoder runs attn.attention) tests and
# examples/train_llama.py's; the installed package consumed by a plain
# CMake project), since the ASan runtime must
# come first in such a process. ./scripts/test.sh (the README's test
# command, which CI runs) calls it last; run alone, it expects the
# dependencies test.sh installs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_ASAN_BUILD_DIR:-$root/build-asan}
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" --target attn-test-depends
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
lit=$(command -v lit || echo /usr/lib/llvm-22/bin/lit)
"$lit" -s "$build/test" --filter-out '^attn :: (python/|examples/|bench/(mods-bench|grad-bench|grad-variants|herald-check)\.test|CAPI/install\.test)'
