#!/usr/bin/env bash
# The GPU check: everything that needs a GPU, in one go, on a machine that has one.
#
#   scripts/gpu-check.sh OUTDIR [--skip-build]
#
# GPU_CHECK_STEPS (default "ctest chapters sections"), GPU_CHECK_CHAPTERS (a glob over the chapter
# executables' names for the chapters step, default "*", e.g. "ch0[1-5]_*" or "ch@(08|10)_*") and
# GPU_CHECK_SECTIONS (a glob over scripts/gpu-check.d/*.sh, default "*") select parts, to split a
# long check over several calls; GPU_CHECK_CTEST_ARGS adds arguments to ctest (e.g. -E to leave out
# tests already run elsewhere). GPU_CHECK_ARCHIVE (below) packs OUTDIR into one file at the end.
# GPU_CHECK_COMMIT names the commit checked where the tree is not a git clone (OUTDIR/check.tsv).
#
# A complete check takes more device time than one call, so it is split into parts,
# GPU_CHECK_PART=N, each meant to fit a ten-minute call (the first builds, the others take
# --skip-build on the same machine; a fresh machine builds again), joined afterwards by
# scripts/results_manifest.py. The seconds are each part's as measured on an H100 (2026-12-07), where
# known; parts 1-4 took about 25 minutes together, build included:
#   1 build + ctest                                               430 s
#   2 every chapter (default, odd shapes, sanitizers) and the
#     sections of chapters 02-07 and 10 (20, 30, 40, 45, 49b)     about 420 s
#   3 sections 15 (the book: the tour at the headline shapes), 49 about 365 s
#   4 sections 48, 50 (profiling)                                 about 290 s
#   5 section 49c (chapter 11)       6 section 60 (fp64 reference, chapters 05-07 at 2^31)
#   7 section 61 (08, 09, 11 at 2^31)   8 section 62 (10 at 2^31)   9 section 70 (the pages' commands)
# A part that must wait for a later session is kept in the repository (results_manifest.py --keep
# results/check-in-progress); the last assembly writes results/gpu-check, and the files there that no
# page reads are deleted (python3 tests/scripts/test_results_read.py --list names them).
# The GPU_CHECK_STEPS, _CHAPTERS and _SECTIONS given beside it win over the part's.
#
# Configures for the GPU in this machine, builds with every core, runs all tests (GPU tests must run:
# CONV1D_REQUIRE_GPU=1 turns "no GPU, skipped" into a failure), runs every chapter at its default
# shape (with phase CSVs) and at odd shapes for each dtype it supports, runs compute-sanitizer
# (memcheck, racecheck, initcheck, synccheck) on every chapter at a small shape, and prints a summary
# table. Logs, result files and summary.md go to OUTDIR. Exit 0 only when every step passed.
set -uo pipefail
shopt -s extglob  # (the parts' globs below: @(a|b))

out=${1:?usage: scripts/gpu-check.sh OUTDIR [--skip-build]}
skip_build=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build/gpu-check}
mkdir -p "$out/logs" "$out/results"
out=$(cd "$out" && pwd)
# GPU_CHECK_ARCHIVE=FILE.tgz (outside OUTDIR) packs OUTDIR into one archive when the check ends,
# however it ends: for a machine that sends back only a few of the files a run writes.
if [[ -n ${GPU_CHECK_ARCHIVE:-} ]]; then
  archive=$(realpath -m "$GPU_CHECK_ARCHIVE")
  trap 'tar czf "$archive" -C "$out" .' EXIT
  trap 'exit 143' TERM  # (a time limit's signal: the archive all the same)
fi
summary=$out/summary.md
: > "$summary"
failures=0
export CONV1D_REQUIRE_GPU=1

row() {  # row STEP WHAT RESULT [NOTE]
  printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "${4:-}" >> "$summary"
  [[ $3 == pass ]] || failures=$((failures + 1))
}
step() { printf '\n=== %s ===\n' "$*"; }

printf '| step | what | result | note |\n|---|---|---|---|\n' > "$summary"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/logs/gpu.txt" 2>&1 || true
gpu=$(head -n1 "$out/logs/gpu.txt")

part_steps="ctest chapters sections" part_chapters="*" part_sections="*"
case ${GPU_CHECK_PART:-} in
  "") ;;
  1) part_steps="ctest" ;;
  2) part_steps="chapters sections" part_sections="@(20|30|40|45|49b)-*" ;;
  3) part_steps="sections" part_sections="@(15|49)-*" ;;
  4) part_steps="sections" part_sections="@(48|50)-*" ;;
  5) part_steps="sections" part_sections="49c-*" ;;
  6) part_steps="sections" part_sections="60-*" ;;
  7) part_steps="sections" part_sections="61-*" ;;
  8) part_steps="sections" part_sections="62-*" ;;
  9) part_steps="sections" part_sections="70-*" ;;
  *) echo "gpu-check.sh: GPU_CHECK_PART must be 1..9, not '$GPU_CHECK_PART'" >&2; exit 2 ;;
esac
steps=${GPU_CHECK_STEPS:-$part_steps}
sections_glob=${GPU_CHECK_SECTIONS:-$part_sections}
GPU_CHECK_CHAPTERS=${GPU_CHECK_CHAPTERS:-$part_chapters}
wants() { [[ " $steps " == *" $1 "* ]]; }

if [[ $skip_build != --skip-build || ! -f $build/build.ninja ]]; then
  step "configure + build ($gpu)"
  if cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
       > "$out/logs/configure.log" 2>&1 &&
     cmake --build "$build" -j "$(nproc)" > "$out/logs/build.log" 2>&1; then
    row build "configure + build, native arch" pass "$(grep -c warning "$out/logs/build.log") warning lines"
  else
    row build "configure + build, native arch" FAIL "see logs/build.log"
    tail -n 40 "$out/logs/build.log" "$out/logs/configure.log"
    cat "$summary"
    exit 1
  fi
fi

if wants ctest; then
step "ctest"
# shellcheck disable=SC2086  # GPU_CHECK_CTEST_ARGS: more ctest arguments (e.g. -R or -E), a list
ctest --test-dir "$build" --output-on-failure -j 4 ${GPU_CHECK_CTEST_ARGS:-} > "$out/logs/ctest.log" 2>&1
rc=$?
tests_line=$(grep -E "tests passed" "$out/logs/ctest.log" | tail -n1)
skipped=$(grep -c -E "\*\*\*Skipped|Not Run" "$out/logs/ctest.log")
if [[ $rc -eq 0 && $skipped -eq 0 ]]; then row ctest "all tests" pass "$tests_line"; else
  row ctest "all tests" FAIL "$tests_line; $skipped skipped"; tail -n 30 "$out/logs/ctest.log"; fi

fi

chapters=$(find "$build/chapters" -maxdepth 2 -type f -name 'ch[0-9][0-9]_*' -perm -u+x | sort)
chapters_glob=${GPU_CHECK_CHAPTERS:-*}
wants chapters && for exe in $chapters; do
  name=$(basename "$exe")
  # shellcheck disable=SC2053  # the right side is a glob on purpose
  [[ $name == $chapters_glob ]] || continue
  dtypes=$("$exe" --help | sed -n 's/.*storage type: \([a-z0-9, ]*\) (default.*/\1/p' | tr -d ',')
  step "$name default"
  # A kernel record that waited for the stream gate's time limit (common/timing.h) times its launch
  # too: the run is then not what the docs say it measures.
  if "$exe" --profile-csv "$out/results/${name}_default" --summary "$out/results/tour_summary.tsv" \
       > "$out/results/${name}_default.log" 2>&1 &&
     ! grep -q "stream gate's time limit" "$out/results/${name}_default.log"; then
    row "$name" "default shape" pass "$(awk -F'\t' -v n="$name" 'n ~ "^ch"$1"_" {printf "%s: e2e %.3f ms, kernels %.3f ms; ", $3, $4, $5}' "$out/results/tour_summary.tsv")"
  else
    row "$name" "default shape" FAIL "see results/${name}_default.log"
  fi
  shapes=("--batch 3 --dim 37 --seqlen 101 --width 3" "--batch 1 --dim 1000 --seqlen 3 --width 4"
          "--batch 2 --dim 257 --seqlen 1031 --width 2")
  sanitizer_shape="--batch 2 --dim 40 --seqlen 67 --width 4"
  # Chapter 11's --seqlen is the new tokens of one decoding step, at most 8 (CMake's ODD_SEQLEN
  # does the same for its CTest runs).
  if [[ $name == ch11_decode_update ]]; then
    shapes=("--batch 3 --dim 37 --seqlen 7 --width 3" "--batch 1 --dim 1000 --seqlen 3 --width 4"
            "--batch 2 --dim 257 --seqlen 8 --width 2")
    sanitizer_shape="--batch 2 --dim 40 --seqlen 5 --width 4"
  fi
  for dt in $dtypes; do
    for shape in "${shapes[@]}"; do
      tag="$dt ${shape//--/}"
      if "$exe" $shape --dtype "$dt" --iters 2 --warmup 1 >> "$out/logs/${name}_shapes.log" 2>&1; then
        row "$name" "$tag" pass
      else
        row "$name" "$tag" FAIL "see logs/${name}_shapes.log"
      fi
    done
  done
  if "$exe" --batch 2 --dim 5 --seqlen 7 --iters 1 --warmup 0 --save-npy "$out/logs/npy_$name" \
       > "$out/logs/${name}_npy.log" 2>&1 && [[ -s $out/logs/npy_$name/x.npy ]]; then
    row "$name" "--save-npy at a small shape" pass
  else
    row "$name" "--save-npy at a small shape" FAIL "see logs/${name}_npy.log"
  fi
  for tool in memcheck racecheck initcheck synccheck; do
    step "$name compute-sanitizer $tool"
    log="$out/logs/sanitizer_${name}_${tool}.log"
    # After the cublas GEMM, initcheck reports every byte of C as never written, although the
    # output verifies on NaN-poisoned buffers: presumably stores it cannot track (cuBLAS's Hopper
    # kernels write through the tensor memory accelerator). So initcheck runs our three kernels one
    # by one; memcheck, racecheck and synccheck cover all four variants.
    variant_runs=("")
    [[ $name == ch05_wmma_gemm && $tool == initcheck ]] && variant_runs=("sparse" "block" "warp")
    ok=1
    : > "$log"
    for v in "${variant_runs[@]}"; do
      # shellcheck disable=SC2086  # $sanitizer_shape is a list of flags
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$exe" $sanitizer_shape \
        --iters 1 --warmup 0 ${v:+--variant "$v"} >> "$log" 2>&1 || ok=0
    done
    if ((ok)); then
      row "$name" "compute-sanitizer $tool" pass "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)"
    else
      row "$name" "compute-sanitizer $tool" FAIL "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)"
    fi
  done
done

# Helpers for the sections.
# summary_note LOG: each variant's kernel ms and GB/s from a chapter's summary table in LOG.
summary_note() {
  awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms %s GB/s; ", $1, $4, $7}' "$1"
}

# bench_run STEP TAG EXE TSV ARGS...: one benchmark run of EXE, its result lines appended to TSV (the
# chapters' --summary), the log in logs/bench_TAG.log; a row "bench TAG-without-its-first-word"
# whose note is the summary_note of the log.
bench_run() {
  local step=$1 tag=$2 exe=$3 tsv=$4
  shift 4
  local log=$out/logs/bench_$tag.log
  step "bench $tag"
  if "$exe" "$@" --summary "$tsv" > "$log" 2>&1; then
    row "$step" "bench ${tag#*_}" pass "$(summary_note "$log")"
  else
    row "$step" "bench ${tag#*_}" FAIL "see logs/$(basename "$log")"
    tail -n 20 "$log"
  fi
}

# resources_table STEP EXE REGEX OUT_TXT [CALLS_REGEX]: registers, stack and local memory of EXE's
# kernels whose names match REGEX (cuobjdump, demangled) in OUT_TXT, the table beside it as .tsv; a
# row that fails if a kernel has a stack frame or local memory, but for kernels matching
# CALLS_REGEX, whose rare paths are calls out of line (their frames: chapter 10's packed kernels).
resources_table() {
  local step=$1 exe=$2 regex=$3 txt=$4 calls=${5:-^$}
  {
    echo "# cuobjdump --dump-resource-usage, $(basename "$exe")'s kernels (demangled)"
    cuobjdump --dump-resource-usage "$exe" | grep -A1 -E "Function .*($regex)" | grep -v '^--' | paste - - |
      sed -E 's/Function ([^ :]*):?.*REG:([0-9]+) STACK:([0-9]+) SHARED:([0-9]+) LOCAL:([0-9]+).*/\2 \3 \5 \1/' |
      while read -r reg stack local name; do
        printf 'REG %s STACK %s LOCAL %s %s\n' "$reg" "$stack" "$local" "$(echo "$name" | c++filt)"
      done
  } > "$txt" 2>&1
  python3 "$root/scripts/result_tables.py" resources "$txt" "${txt%.txt}.tsv" || true
  if grep -q '^REG' "$txt" && ! grep '^REG' "$txt" | grep -vE "$calls" |
       awk '($4 > 0 || $6 > 0) {bad = 1} END {exit !bad}'; then
    row "$step" "registers and local memory (cuobjdump)" pass "$(grep -c '^REG' "$txt") kernels, no stack, no local memory$([[ $calls != '^$' ]] && echo " (but the calls of $(grep '^REG' "$txt" | grep -cE "$calls") packed ones)")"
  else
    row "$step" "registers and local memory (cuobjdump)" FAIL "see results/$(basename "$txt")"
  fi
}

# sanitize_shapes STEP EXE ARGS...: compute-sanitizer's four tools on EXE at each shape (one quoted
# string of flags per shape), one row per tool.
sanitize_shapes() {
  local step=$1 exe=$2 tool log ok args
  shift 2
  for tool in memcheck racecheck initcheck synccheck; do
    step "$step compute-sanitizer $tool, awkward shapes"
    log=$out/logs/sanitizer_${step}_${tool}_awkward.log
    ok=1
    : > "$log"
    for args in "$@"; do
      # shellcheck disable=SC2086  # the arguments are a list of flags
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$exe" $args --iters 1 --warmup 0 >> "$log" 2>&1 || ok=0
    done
    local note
    note=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)
    if ((ok)); then row "$step" "compute-sanitizer $tool, awkward shapes" pass "$note"; else
      row "$step" "compute-sanitizer $tool, awkward shapes" FAIL "$note"; fi
  done
}

# large_run FOLDER [--shape "FLAGS"] EXTRA_FLAGS...: one chapter at 2^31 + 4096 elements (B=1 D=4096
# L=524289, one run: what is checked is the answer, not the time), or at FLAGS; passes when it
# verifies every output. Its row says how long it took (sections 60-62-large).
large_run() {
  local folder=$1
  shift
  local shape=(--batch 1 --dim 4096 --seqlen 524289 --width 4 --iters 1 --warmup 0)
  if [[ ${1:-} == --shape ]]; then
    read -r -a shape <<< "$2"
    shift 2
  fi
  local name=ch$folder exe=$build/chapters/$folder/ch$folder
  local tag="2^31 elements${*:+ $*}"
  local log
  log=$out/logs/large_${name}$(printf '_%s' "$@" | tr -c 'A-Za-z0-9_.\n-' '_').log
  local start=$SECONDS
  step "$name at $tag"
  if [[ ! -x $exe ]]; then
    row "$name" "$tag" FAIL "$exe not built"
    return
  fi
  if "$exe" "${shape[@]}" "$@" --summary "$out/results/large_2e31.tsv" > "$log" 2>&1 && grep -q '^VERIFIED' "$log"; then
    row "$name" "$tag" pass "$((SECONDS - start)) s; $(grep -E '^  (PASS|FAIL)' "$log" | head -n 1 | cut -c1-100)"
  else
    row "$name" "$tag" FAIL "$((SECONDS - start)) s; see logs/$(basename "$log")"
    tail -n 15 "$log"
  fi
}


# Further sections (benchmarks, profiler checks), one file each, sourced in name order, byte by
# byte (49 before 49b and 49c whatever the locale; a UTF-8 collation ignores the '-'). They may use
# row, step, $out, $build, $root and $chapters, and write result files under $out/results.
wants sections && mapfile -t sections < <(LC_COLLATE=C; printf '%s\n' "$root"/scripts/gpu-check.d/$sections_glob.sh)
wants sections && for section in "${sections[@]}"; do
  [[ -e $section ]] || continue
  step "section $(basename "$section")"
  section_start=$SECONDS
  # shellcheck source=/dev/null
  source "$section"
  # How long each section took (device time is rationed: this plans the calls of a split check).
  printf '%s\t%s\n' "$(basename "$section")" "$((SECONDS - section_start))" >> "$out/logs/section_seconds.tsv"
done

# Where the check ran, for results/gpu-check/MANIFEST.md: the commit of the tree, the GPU and its
# driver, the date, and which steps and sections this call ran.
{
  printf 'commit\t%s\n' "${GPU_CHECK_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  printf 'tree_clean\t%s\n' "$([[ -z $(git -C "$root" status --porcelain 2>/dev/null) ]] && echo yes || echo no)"
  printf 'gpu\t%s\n' "$gpu"
  printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
  printf 'part\t%s\n' "${GPU_CHECK_PART:-all}"
  printf 'steps\t%s\n' "$steps"
  printf 'chapters\t%s\n' "${GPU_CHECK_CHAPTERS:-*}"
  printf 'sections\t%s\n' "$sections_glob"
  printf 'seconds\t%s\n' "$SECONDS"
} > "$out/check.tsv"

step "summary ($gpu)"
cat "$summary"
echo
if [[ $failures -eq 0 ]]; then echo "GPU CHECK PASSED"; else echo "GPU CHECK FAILED: $failures step(s)"; fi
[[ $failures -eq 0 ]]
