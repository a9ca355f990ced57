#!/usr/bin/env bash
# Configures and builds the libFuzzer targets of test/fuzz (docs/testing.md,
# "Fuzzing") in their own build folder: the whole tree compiled by clang-22
# with -fsanitize=fuzzer-no-link,address,undefined, so that the compiler's
# and the runtime's code is instrumented for coverage and checked by ASan and
# UBSan; the targets link libFuzzer. Needs clang-22 and libclang-rt-22-dev
# (scripts/bootstrap.sh installs them).
#
#   test/fuzz/build.sh [build-dir]     default: build-fuzz/ in the checkout
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${ATTN_FUZZ_BUILD_DIR:-$root/build-fuzz}}
cc=${ATTN_FUZZ_CC:-clang-22}
cxx=${ATTN_FUZZ_CXX:-clang++-22}
# nccl.h (CUDA's include folder, found by runtime/) has K&R prototypes that
# clang's -Wpedantic rejects: a warning there, not an error.
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
san="$san -fno-omit-frame-pointer -Wno-error=strict-prototypes"
# Only the targets are built (attn-fuzzers): they link attn's static
# libraries, so the sanitizers' runtimes are linked in statically.
link="-fsanitize=address,undefined"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" >/dev/null
cmake --build "$build" --target attn-fuzzers
