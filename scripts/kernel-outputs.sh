#!/usr/bin/env bash
# Writes every kernel-writer output of one build into OUTDIR, one file per
# (program, options, stage), with stable names and deterministic content,
# so that two builds can be compared with `diff -r`
# (scripts/compare-kernel-outputs.sh does that against an older commit).
#
#   scripts/kernel-outputs.sh OUTDIR [BUILD_DIR]     (BUILD_DIR: build)
#
# The programs are always this tree's (the tree the script is in), whatever
# build runs them; every tool runs in the tree's root with relative input
# paths, so diagnostics name the same files for every build. OUTDIR is
# replaced (it must be empty, absent, or an earlier OUTDIR of this script).
#
#   matrix/<input>/     every .mlir under test/Inputs (test/Inputs/errors:
#                       only their diagnostics), examples/*.mlir and the
#                       test/Transforms and test/Target lit files, at every
#                       stage: attn-opt's tile.mlir (--fuse-rope --tile),
#                       cpu.mlir (+ --lower-tile-to-cpu), cpu-llvm.mlir
#                       (+ --attn-cpu-to-llvm), gpu.mlir
#                       (+ --lower-tile-to-gpu), hopper.mlir (comm-schedule
#                       as the drivers run it, tile kernel=hopper,
#                       lower-tile-to-hopper), mma.mlir (kernel=mma,
#                       lower-tile-to-mma); attn-translate's PTX and
#                       manifest: auto.{ptx,json} (sm_90a), plain.{ptx,json}
#                       (--kernel=plain), mma-sm_80.{ptx,json}. A file with
#                       `// -----` chunks: attn-opt with --split-input-file,
#                       attn-translate once per chunk (chunkNN, on stdin;
#                       test/Transforms' chunks: auto only, but with
#                       KOUT_FULL=1).
#   gpu_check/          every attn-run of bench/gpu_check.sh as the
#                       attn-translate call with the same options
#                       (<input>/<options>.{ptx,json}; the persistent kernel
#                       gets attn-translate's default CTAs, an H200's 132,
#                       where attn-run would use the GPU's SM count; the runs
#                       without options and with --chip=sm_80 --kernel=mma
#                       alone are the matrix's auto and mma-sm_80), and
#                       bench/comm_loopback_fuzz.py --compile-only --count 50
#                       for seeds 7 and 8 (comm_fuzz.seedN/).
#   bench/attn/         bench/attn_bench.py's programs (its program(), read
#                       from the file, B = 32K / N) at its 12 shapes (d 64
#                       and 128, N 1K to 16K, and GQA Hkv 8 at d 128, N 2K
#                       and 8K), each as the benchmark compiles it (default)
#                       and with run_attn_bench.sh's default variants
#                       (rope=fused, rope=pre, no RoPE); and the other 12
#                       ATTN_BENCH_SWEEP shapes (Hkv 8, N 32K) as default
#                       only, but with KOUT_FULL=1.
#   bench/project/      bench/project_bench.py's layers: no RoPE and
#                       --rope-strategy=producer|split|pre|fused, at its
#                       shapes with N = 1K and 8K (8 of 24; all with
#                       KOUT_FULL=1).
#   bench/gemm/         gemm_bench's default program and shapes (8192^3,
#                       4096x8192x4096, 4096^3, 8000^3).
#   bench/comm/         comm_bench's fused programs (comm_fused.c), all-reduce,
#                       all-gather and reduce-scatter at 2 ranks, at 8192^3
#                       and 4096x8192x4096.
#   lit/<file>/         every RUN line of test/Transforms and test/Target
#                       without its FileCheck: runNN.out (stdout), runNN.err
#                       (stderr and exit status), the %t files it wrote
#                       (t.json, t.ptx, ...) and commands.txt. FileCheck,
#                       od and %if (ptxas) lines are not run.
#
# Each program's stderr and a non-zero exit status go to NAME.err beside its
# output (an empty output is not kept): a program a lowering refuses leaves
# its diagnostic there. index.txt lists each job's command. KOUT_JOBS sets
# the parallel jobs (default: the CPUs). About 940 jobs, 200 s of CPU time
# (KOUT_FULL=1: 1330 jobs, 300 s).
set -euo pipefail

self=$(readlink -f "$0")
root=$(cd "$(dirname "$self")/.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# --- one job -----------------------------------------------------------------
# Runs "$@" in the tree's root with stdout to $out/$name.$ext (-: not kept)
# and stdin from $in (-: none); stderr and a non-zero status to $name.err.
capture() { # name ext in cmd...
  local name=$1 ext=$2 in=$3 rc=0
  shift 3
  mkdir -p "$(dirname "$out/$name")"
  local o="$out/$name.$ext" e="$out/$name.err"
  [ "$ext" = - ] && o=/dev/null
  if [ "$in" = - ]; then
    "$@" > "$o" 2> "$e" < /dev/null || rc=$?
  else
    "$@" > "$o" 2> "$e" < "$in" || rc=$?
  fi
  [ "$rc" -ne 0 ] && echo "exit status $rc" >> "$e"
  [ -s "$e" ] || rm -f "$e"
  [ "$o" = /dev/null ] || [ -s "$o" ] || rm -f "$o"
  return 0
}

# Strips the name of the lit %t directory from a file's text.
untemp() { # dir files...
  local d=$1
  shift
  for f in "$@"; do
    [ -f "$f" ] && sed -i "s|$d/t|%t|g" "$f"
  done
  return 0
}

# Every RUN line of a lit file, in order, without its FileCheck.
lit_job() { # name file
  local name=$1 file=$2 dir n=0 line cmd tmp
  dir=$(dirname "$file")
  tmp=$(mktemp -d "$out/.tmp/lit.XXXXXX")
  mkdir -p "$out/$name"
  : > "$out/$name/commands.txt"
  # Continuation lines (a trailing backslash) are joined first.
  sed -n 's|^.*// *RUN: *||p' "$file" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
  while IFS= read -r line; do
    n=$((n + 1))
    local id
    id=$(printf 'run%02d' "$n")
    case $line in
      FileCheck*|od\ *|%if*)
        printf '%s: not run: %s\n' "$id" "$line" >> "$out/$name/commands.txt"
        continue ;;
    esac
    cmd=$(printf '%s\n' "$line" | sed -e 's/[[:space:]]*|[[:space:]]*FileCheck.*$//' \
      -e "s|%s|$file|g" -e "s|%S|$dir|g" -e "s|%t|$tmp/t|g")
    if printf '%s' "$cmd" | grep -q '%[A-Za-z_]'; then
      printf '%s: not run (substitution): %s\n' "$id" "$line" >> "$out/$name/commands.txt"
      continue
    fi
    printf '%s: %s\n' "$id" "$line" >> "$out/$name/commands.txt"
    # `not` only inverts the status, which runNN.err records as it is.
    capture "$name/$id" out - env PATH="$bin:$PATH" bash -o pipefail -c \
      "not() { \"\$@\"; }; $cmd"
    untemp "$tmp" "$out/$name/$id.out" "$out/$name/$id.err"
  done
  local f
  for f in "$tmp"/t*; do
    [ -e "$f" ] || continue
    mv "$f" "$out/$name/$(basename "$f")"
    untemp "$tmp" "$out/$name/$(basename "$f")"
  done
  rm -rf "$tmp"
}

# bench/comm_loopback_fuzz.py's compile-only run; from $out, so that the
# paths it prints are relative.
fuzz_job() { # name seed
  local name=$1 seed=$2
  mkdir -p "$out/$name"
  (cd "$out" && capture "$name/stdout" txt - "$py" -B "$root/bench/comm_loopback_fuzz.py" \
    --count 50 --seed "$seed" --bin "$bin" --out "$name" --compile-only)
}

if [ "${1:-}" = --job ]; then
  # scripts/kernel-outputs.sh --job OUT BIN 'KIND NAME ...' (from xargs)
  out=$2 bin=$3
  eval "set -- $4"
  kind=$1 name=$2
  shift 2
  cd "$root"
  t0=$EPOCHREALTIME
  trap 'awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$name" "BEGIN { printf \"%.2f %s\\n\", b - a, n }" >> "$out/.tmp/times"' EXIT
  case $kind in
    opt) # name in args...
      in=$1
      shift
      capture "$name" mlir "$in" "$bin/attn-opt" "$@" ;;
    ptx) # name in args... (in: a file of the tree, or @FILE of OUTDIR, on stdin)
      in=$1
      shift
      mkdir -p "$(dirname "$out/$name")"
      if [ "${in#@}" = "$in" ]; then
        capture "$name" - - "$bin/attn-translate" --to-ptx "$in" -o "$out/$name.ptx" \
          "--manifest=$out/$name.json" "$@"
      else
        capture "$name" - "$out/${in#@}" "$bin/attn-translate" --to-ptx - -o "$out/$name.ptx" \
          "--manifest=$out/$name.json" "$@"
      fi
      for f in "$out/$name.ptx" "$out/$name.json"; do
        [ -s "$f" ] || rm -f "$f"
      done ;;
    lit) lit_job "$name" "$1" ;;
    fuzz) fuzz_job "$name" "$1" ;;
    *) echo "kernel-outputs: unknown job kind $kind" >&2; exit 1 ;;
  esac
  exit 0
fi

# --- the job list --------------------------------------------------------------
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: scripts/kernel-outputs.sh OUTDIR [BUILD_DIR]" >&2
  exit 2
fi
out=$1
build=${2:-build}
[ -d "$build" ] || build=$root/$build
bin=$(cd "$build" 2>/dev/null && pwd)/bin
for t in attn-opt attn-translate; do
  if [ ! -x "$bin/$t" ]; then
    echo "kernel-outputs: no $t in ${build}/bin: build it first" >&2
    exit 1
  fi
done
if [ -e "$out" ] && [ ! -e "$out/.kernel-outputs" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "kernel-outputs: $out is not empty and is not an earlier OUTDIR; not replacing it" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/.tmp"
out=$(cd "$out" && pwd)
: > "$out/.kernel-outputs"
cd "$root"
start=$SECONDS
jobs=$out/.tmp/jobs
: > "$jobs"

job() { # kind name args...
  local q
  q=$(printf '%q ' "$@")
  printf '%s\n' "${q% }" >> "$jobs"
  printf '%s\n' "$*" >> "$out/.tmp/index"
}

# The slowest jobs first, so that the last ones do not run alone.
job fuzz gpu_check/comm_fuzz.seed7 7
job fuzz gpu_check/comm_fuzz.seed8 8

# Every stage of one program (a file of the tree).
matrix() { # file
  local f=$1 d split=() n
  d=matrix/${f%.mlir}
  if [[ $f == test/Inputs/errors/* ]]; then
    job opt "$d/parse" - "$f"
    job ptx "$d/auto" "$f"
    return
  fi
  grep -q '^// -----' "$f" && split=(--split-input-file)
  job opt "$d/tile" - "${split[@]}" --fuse-rope --tile "$f"
  job opt "$d/cpu" - "${split[@]}" --fuse-rope --tile --lower-tile-to-cpu "$f"
  job opt "$d/cpu-llvm" - "${split[@]}" --fuse-rope --tile --lower-tile-to-cpu --attn-cpu-to-llvm "$f"
  job opt "$d/gpu" - "${split[@]}" --fuse-rope --tile --lower-tile-to-gpu "$f"
  job opt "$d/hopper" - "${split[@]}" --fuse-rope --comm-schedule=comm-schedule-split=adaptive \
    --tile=kernel=hopper --lower-tile-to-hopper "$f"
  job opt "$d/mma" - "${split[@]}" --fuse-rope --tile=kernel=mma --lower-tile-to-mma "$f"
  if [ ${#split[@]} -eq 0 ]; then
    job ptx "$d/auto" "$f"
    job ptx "$d/plain" "$f" --kernel=plain
    job ptx "$d/mma-sm_80" "$f" --chip=sm_80 --kernel=mma
    return
  fi
  # attn-translate has no --split-input-file: one chunk at a time, on stdin.
  mkdir -p "$out/.tmp/$d"
  awk -v p="$out/.tmp/$d/chunk" 'BEGIN { n = 1; f = sprintf("%s%02d.mlir", p, n) }
    /^\/\/ -----/ { close(f); n++; f = sprintf("%s%02d.mlir", p, n); next }
    { print > f }' "$f"
  # The plain and mma PTX of test/Transforms' chunks (their gpu.mlir and
  # mma.mlir are in any case) only with KOUT_FULL.
  for c in "$out/.tmp/$d"/chunk*.mlir; do
    n=$(basename "$c" .mlir)
    c=@.tmp/$d/$n.mlir
    job ptx "$d/auto.$n" "$c"
    [[ $f == test/Transforms/* ]] && [ -z "${KOUT_FULL:-}" ] && continue
    job ptx "$d/plain.$n" "$c" --kernel=plain
    job ptx "$d/mma-sm_80.$n" "$c" --chip=sm_80 --kernel=mma
  done
}

# bench/gpu_check.sh's attn-run calls, read from the script: the lines from
# its first `run` to the Python binding's section, run with `run` making the
# attn-translate job.
declare -A seen
gpu_check_run() { # file [attn-run options...]
  local f=$1 a slug=() key
  shift
  for a in "$@"; do
    a=${a#--}
    a=${a/-options=/:}
    slug+=("${a// /,}")
  done
  key=$(IFS=.; echo "${slug[*]:-default}")
  # The matrix has these two: auto and mma-sm_80.
  [ "$key" = default ] || [ "$key" = chip=sm_80.kernel=mma ] && return
  [ -n "${seen[$f/$key]:-}" ] && return
  seen[$f/$key]=1
  job ptx "gpu_check/${f%.mlir}/$key" "$f" "$@"
}
gpu_check=$(awk '/^run /{on=1} /^# The Python binding/{on=0} on' bench/gpu_check.sh)
bad=$(printf '%s\n' "$gpu_check" | grep -Ev '^(run |for |done|[[:space:]]*(run |#)|#|$)' || true)
if [ -n "$bad" ] || [ "$(printf '%s\n' "$gpu_check" | grep -c 'run ')" -lt 20 ]; then
  echo "kernel-outputs: bench/gpu_check.sh's attn-run section changed shape; update this script:" >&2
  printf '%s\n' "$bad" >&2
  exit 1
fi
(
  run() { gpu_check_run "$@"; }
  root=$PWD
  eval "$gpu_check"
  # The fused kernels of its loopback test (test/Inputs/comm/loopback.mlir)
  # are matrix/test/Inputs/comm/loopback/auto.{ptx,json}.
)
# (The subshell above only appended to $jobs.)

for f in $(find test/Inputs -name '*.mlir' | LC_ALL=C sort) examples/*.mlir \
         test/Transforms/*.mlir test/Target/*.mlir; do
  matrix "$f"
done

# The benchmarks' programs, generated as the benchmarks generate them.
"$py" -B - "$out" "${KOUT_FULL:-}" <<'EOF'
import ast, math, os, re, sys, types
out, full = sys.argv[1], bool(sys.argv[2])

def functions(path, names, ns):
    """Defines the top-level functions `names` of path in ns (no imports run)."""
    tree = ast.parse(open(path).read(), path)
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in body} == set(names), (path, names)
    exec(compile(ast.Module(body, []), path, "exec"), ns)

def theta(path):
    tree = ast.parse(open(path).read(), path)
    for n in tree.body:
        if isinstance(n, ast.Assign) and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["THETA"]:
            return ast.literal_eval(n.value)
    raise SystemExit(f"no THETA in {path}")

jobs = open(os.path.join(out, ".tmp/bench-jobs"), "w")
def write(name, text):
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return "@" + name  # OUTDIR's, on the job's stdin

ab = types.SimpleNamespace(THETA=theta("bench/attn_bench.py"), H=32, TOKENS=32768)
ns = {"math": math, "THETA": ab.THETA, "ab": ab}
functions("bench/attn_bench.py", ["program", "parse_variants"], ns)
attn_program, parse_variants = ns["program"], ns["parse_variants"]
m = re.search(r'ATTN_BENCH_VARIANTS-"([^"]*)"', open("bench/run_attn_bench.sh").read())
variants = list(parse_variants(m.group(1)))
assert variants, "run_attn_bench.sh's default variants"
# attn_bench.py's shapes, then the rest of its ATTN_BENCH_SWEEP ones (which
# are project_bench.py's): those with the variants only with KOUT_FULL.
default = [(d, N, 32) for d in (128, 64) for N in (1024, 2048, 4096, 8192, 16384)]
default += [(128, 2048, 8), (128, 8192, 8)]
shapes = [(d, N, hkv) for d in (128, 64) for hkv in (32, 8)
          for N in (1024, 2048, 4096, 8192, 16384, 32768)]
for d, N, hkv in default + [s for s in shapes if s not in default]:
    B = ab.TOKENS // N
    base = f"bench/attn/d{d}_N{N}_Hkv{hkv}"
    src = {True: write(f"{base}/program.mlir", attn_program(B, ab.H, hkv, N, d))}
    print("ptx", f"{base}/default", src[True], file=jobs)
    if (d, N, hkv) not in default and not full:
        continue
    for label, rope_on, extra in variants:
        if rope_on not in src:
            src[rope_on] = write(f"{base}/program.{label}.mlir",
                                 attn_program(B, ab.H, hkv, N, d, rope_on=rope_on))
        print("ptx", f"{base}/{label}", src[rope_on], *extra, file=jobs)

ns = {"math": math, "ab": ab}
functions("bench/project_bench.py", ["program"], ns)
# project_bench.py's shapes; without KOUT_FULL those at N = 1K and 8K.
for d, N, hkv in shapes if full else [s for s in shapes if s[1] in (1024, 8192)]:
    B, C = ab.TOKENS // N, ab.H * d
    base = f"bench/project/d{d}_N{N}_Hkv{hkv}"
    rope = write(f"{base}/program.mlir", ns["program"](B, ab.H, hkv, N, d, C))
    norope = write(f"{base}/program.norope.mlir", ns["program"](B, ab.H, hkv, N, d, C, False))
    print("ptx", f"{base}/norope", norope, file=jobs)
    for s in ("producer", "split", "pre", "fused"):
        print("ptx", f"{base}/{s}", rope, f"--rope-strategy={s}", file=jobs)

# gemm_bench.c's default_ir (gemm_bench_attn.c) at its DEFAULT_SHAPES.
def t(r, c):
    return f"tensor<{r}x{c}xbf16>"
for M, N, K in ((8192, 8192, 8192), (4096, 8192, 4096), (4096, 4096, 4096), (8000, 8000, 8000)):
    base = f"bench/gemm/{M}x{N}x{K}"
    src = write(f"{base}/program.mlir",
        f"func.func @mm(%a: {t(M, K)}, %b: {t(K, N)}) -> {t(M, N)} {{\n"
        f"  %zero = arith.constant 0.0 : bf16\n"
        f"  %empty = tensor.empty() : {t(M, N)}\n"
        f"  %init = linalg.fill ins(%zero : bf16) outs(%empty : {t(M, N)}) -> {t(M, N)}\n"
        f"  %c = linalg.matmul ins(%a, %b : {t(M, K)}, {t(K, N)}) outs(%init : {t(M, N)}) -> {t(M, N)}\n"
        f"  return %c : {t(M, N)}\n}}\n")
    print("ptx", f"{base}/default", src, file=jobs)

# comm_fused.c's program() at comm_bench's DEFAULT_SHAPES, 2 ranks, no pins.
w = 2
for M, N, K in ((8192, 8192, 8192), (4096, 8192, 4096)):
    init = (f"  %z = arith.constant 0.0 : bf16\n  %e = tensor.empty() : {t(M, N)}\n"
            f"  %i = linalg.fill ins(%z : bf16) outs(%e : {t(M, N)}) -> {t(M, N)}\n")
    mm = lambda a, m: (f"  %c = linalg.matmul ins({a}, %b : {t(m, K)}, {t(K, N)}) outs(%i : {t(M, N)}) -> "
                       f"{t(M, N)}\n")
    progs = {
        "ar": f"func.func @fused_ar(%a: {t(M, K)}, %b: {t(K, N)}) -> {t(M, N)} {{\n{init}{mm('%a', M)}"
              f"  %r = \"comm.all_reduce\"(%c) {{reduction = \"sum\", world_size = {w} : i64}} : "
              f"({t(M, N)}) -> {t(M, N)}\n  return %r : {t(M, N)}\n}}\n",
        "ag": f"func.func @fused_ag(%a: {t(M // w, K)}, %b: {t(K, N)}) -> {t(M, N)} {{\n{init}"
              f"  %g = \"comm.all_gather\"(%a) {{dim = 0 : i64, world_size = {w} : i64}} : "
              f"({t(M // w, K)}) -> {t(M, K)}\n{mm('%g', M)}  return %c : {t(M, N)}\n}}\n",
        "rs": f"func.func @fused_rs(%a: {t(M, K)}, %b: {t(K, N)}) -> {t(M // w, N)} {{\n{init}{mm('%a', M)}"
              f"  %r = \"comm.reduce_scatter\"(%c) {{reduction = \"sum\", dim = 0 : i64, world_size = {w} : i64}} : "
              f"({t(M, N)}) -> {t(M // w, N)}\n  return %r : {t(M // w, N)}\n}}\n",
    }
    for p, text in progs.items():
        base = f"bench/comm/{p}{w}_{M}x{N}x{K}"
        print("ptx", f"{base}/default", write(f"{base}/program.mlir", text), file=jobs)
EOF
while read -r -a words; do job "${words[@]}"; done < "$out/.tmp/bench-jobs"

for f in test/Transforms/*.mlir test/Target/*.mlir; do
  job lit "lit/${f%.mlir}" "$f"
done

LC_ALL=C sort "$out/.tmp/index" > "$out/index.txt"
njobs=$(wc -l < "$jobs")
echo "kernel-outputs: $njobs jobs, ${KOUT_JOBS:-$(nproc)} at a time ($bin)"
status=0
xargs -d '\n' -n1 -P "${KOUT_JOBS:-$(nproc)}" "$self" --job "$out" "$bin" < "$jobs" || status=$?
echo "kernel-outputs: slowest: $(sort -rn "$out/.tmp/times" | head -3 | awk '{ printf "%s%s (%s s)", (NR > 1 ? ", " : ""), $2, $1 }')"
[ -n "${KOUT_KEEP_TMP:-}" ] || rm -rf "$out/.tmp"
echo "kernel-outputs: $(find "$out" -type f ! -name .kernel-outputs | wc -l) files in $out ($((SECONDS - start)) s)"
exit $status
