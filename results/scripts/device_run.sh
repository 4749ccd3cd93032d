# shellcheck shell=bash
# Sourced by the one-call experiment scripts under results/ (run on the GPU machine from the
# repository root, OUT set): what they all start with, and the two steps they share.
#   res       the folder the results go to ($OUT/run), packed into $OUT/run.tgz when the script
#             ends however it ends (a time limit's TERM too), the repository's and OUT's paths
#             taken out of the logs
#   stamp     a line with the seconds since the start
#   tree_copy DIR PATCH [-R]   a copy of the tree (no build/, no results/) with PATCH applied; run
#                              ctest in a build of the working tree, not of a copy (the tests of
#                              scripts that read committed results fail without results/)
#   build_tree TAG SRC DIR JOBS [TARGET...]   configure SRC into DIR (native arch, Release) and
#                              build it (the targets, or all), logs $res/configure_TAG.txt and
#                              $res/build_TAG.txt; run two with & and `wait` to build side by side
#   build_pair PATCH TARGET...  the A/B pair: the working tree (old: the targets only, in
#                              build/n_old) and a copy with PATCH applied (new: whole, in
#                              build/n_new), built side by side; a stamped line of their error and
#                              warning lines
#   ch10_time TAG EXE ARGS...  one run of chapter 10 with --summary $res/bench_TAG.tsv, its
#                              summary's times in one stamped line
#   ncu_launch TAG REGEX EXE ARGS...  one launch of the kernel REGEX matches (demangled names)
#                              under Nsight Compute (warp states, source counters, instruction
#                              stats, launch, speed of light): $res/details_TAG.csv and
#                              $res/source_TAG.csv.gz (SASS), the report itself deleted
# Start a script under `timeout -s TERM` a little short of the device call's own limit (e.g. 570 s
# of 600): killed by the call's limit, it leaves no archive (cl-column-blocks/README.md).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }
res=$out/run; mkdir -p "$res"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#$out/#<out>/#g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt "$res"/*.log "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" . && rm -rf "$res"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"

tree_copy() {
  mkdir -p "$1" && tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$1" &&
    (cd "$1" && git apply ${3:-} "$root/$2")
}

build_tree() {
  local tag=$1 src=$2 dir=$3 jobs=$4; shift 4
  local targets=(); (($#)) && targets=(--target "$@")
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$tag.txt" 2>&1 &&
    timeout 400 cmake --build "$dir" -j "$jobs" "${targets[@]}" > "$res/build_$tag.txt" 2>&1
}

ch10_time() {
  local tag=$1 exe=$2; shift 2
  timeout 60 "$exe" "$@" --summary "$res/bench_$tag.tsv" > "$res/ch10_$tag.txt" 2>&1
  stamp "$tag rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$tag.txt")"
}

build_pair() {
  local patch=$1 new; shift
  new=$(mktemp -d)
  tree_copy "$new" "$patch" || { stamp "the patch did not apply"; return 1; }
  build_tree old . build/n_old 6 "$@" &
  build_tree new "$new" build/n_new 10 &
  wait
  stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(grep -c warning "$res/build_new.txt") warning lines (new)"
}

ncu_launch() {
  local tag=$1 regex=$2 exe=$3; shift 3
  timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
    --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"$regex" \
    --launch-count 1 -o "$res/$tag" -f "$exe" "$@" > "$res/ncu_$tag.txt" 2>&1
  stamp "ncu $tag rc $?"
  ncu --import "$res/$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2>&1
  ncu --import "$res/$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2>&1
  gzip -9 "$res/source_$tag.csv"; rm -f "$res/$tag.ncu-rep"
}
