# shellcheck shell=bash disable=SC2154  # out, build, root, row and step come from scripts/gpu-check.sh
# The pages work as written: every command README.md and docs/ show, run for real by
# scripts/docs_commands.py --run, in page order, in a scratch folder (so that what they write touches
# no committed file): the chapters at the pages' shapes, the profiling/ commands (the builtin run of
# every chapter at B=4 D=256 L=2048 and the charts), the CUPTI tracer's and Nsight Compute's commands,
# ctest's selections, cuobjdump on the built chapters. Commands that cannot run as written are listed
# in the log with why, not failed: placeholders (RUN_DIR, `...`), AMD builds and profilers, tools this
# machine lacks (nsys), cmake commands (this check builds its own tree), and the exceptions in
# docs_commands.py's EXCLUDE (an exercise's flag that exists only after its code change).
#
# One row: pass when no command failed; the note gives the counts. Each command's output is in
# logs/docs_commands/, the whole report in logs/docs_commands.log. Estimated at about 5 minutes on an
# H100 (not yet measured; the row's note gives the seconds): most of it chapters 06, 08, 09 and 10 at
# B=8 D=4096 L=4096 (inputs, fp64 references and checks of 134M elements on the host), chapters 03 and
# 05 at B=8 D=1024 L=4096, the profiling run of every chapter and the charts, and one Nsight Compute
# pass over chapter 01. No command is left out for its length; each may take 600 s.
docs_py=$build/venv/bin/python  # numpy and matplotlib for the charts (cmake/PythonEnv.cmake)
[[ -x $docs_py ]] || docs_py=python3
docs_log=$out/logs/docs_commands.log
docs_work=$(mktemp -d)
rm -rf "$out/logs/docs_commands"
step "docs: every command the pages show, as written"
if python3 "$root/scripts/docs_commands.py" --run --build "$build" --python "$docs_py" --timeout 600 \
     --work "$docs_work" --logs "$out/logs/docs_commands" > "$docs_log" 2>&1; then
  row docs "every command of README.md and docs/, run as written" pass \
    "$(grep '^docs commands (run)' "$docs_log" | sed 's/^.*): //')"
else
  row docs "every command of README.md and docs/, run as written" FAIL \
    "$(grep '^docs commands (run)' "$docs_log" | sed 's/^.*): //'); see logs/docs_commands.log"
  grep -A1 '^FAIL ' "$docs_log" | tail -n 30
fi
rm -rf "$docs_work"
