#!/usr/bin/env python3
"""The code as kept against the code as measured, kernel by kernel, without a GPU (run from the
repository root; needs nvcc and cuobjdump). Compiles every channel-first staged backward that
chapter 10 launches (fp32, fp16, bf16; W = 2, 3, 4; pieces of rows and whole rows; chapter 09's
NoRowStates, RowStatesBwd, RowTapsBwd with SiLU compiled out and at run time: 72 kernels) from
three versions of chapter 09's cf_staged.cuh: before the forty-fourth version (fcab8e4), that
commit with loads.patch (as measured and GPU-checked) and the working tree. Prints, for kernels with
tap words, how many are the same instructions as the patch's, and for the others, how many are the
same as before it.
"""
import pathlib
import re
import subprocess
import sys
import tempfile

FILE = "chapters/09_direct_backward/cf_staged.cuh"


def instantiations():
    lines = ['#include "chapters/10_packed_sequences/backward.cuh"', "namespace conv1d::ch09 {"]
    for t in ("float", "__half", "__nv_bfloat16"):
        for w in (2, 3, 4):
            for whole in ("true", "false"):
                for policy, silus in (("NoRowStates", ("runtime",)),
                                      (f"conv1d::ch10::RowStatesBwd<{t}>", ("runtime",)),
                                      (f"conv1d::ch10::RowTapsBwd<{t}>", ("off", "runtime"))):
                    for s in silus:
                        lines.append(f"template __global__ void conv_bwd_cf_staged<{t}, {w}, {whole}, {policy}, "
                                     f"ch08::Silu::{s}>(BwdArgs<{t}>, BwdStagedTiles, int64_t, {policy});")
    return "\n".join(lines + ["}"]) + "\n"


def sass(obj):
    out = subprocess.run(["cuobjdump", "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
    kernels, name = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            name = m.group(1)
            kernels[name] = []
        elif name and (m := re.match(r"\s+/\*[0-9a-f]{4,6}\*/\s+([^;]*)", line)):
            kernels[name].append(m.group(1).strip())
    return kernels


def main():
    root = pathlib.Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "all.cu").write_text(instantiations())
        versions = {}
        for tag in ("before", "measured", "kept"):
            tree = tmp / tag
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), "HEAD"], check=True)
            try:
                if tag != "kept":
                    old = subprocess.run(["git", "show", f"fcab8e4:{FILE}"], capture_output=True, text=True,
                                         check=True).stdout
                    (tree / FILE).write_text(old)
                    if tag == "measured":
                        subprocess.run(["git", "apply", str(root / "results/cf-bwd-loads/loads.patch")],
                                       cwd=tree, check=True)
                else:
                    (tree / FILE).write_text((root / FILE).read_text())
                obj = tmp / f"{tag}.o"
                subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-std=c++17", "--expt-relaxed-constexpr", "-I.",
                                "-c", str(tmp / "all.cu"), "-o", str(obj)], cwd=tree, check=True)
                versions[tag] = sass(obj)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], check=True)
    kept = versions["kept"]
    words = [k for k in kept if "RowTapsBwd" in k]
    others = [k for k in kept if "RowTapsBwd" not in k]
    same_words = sum(kept[k] == versions["measured"].get(k) for k in words)
    same_others = sum(kept[k] == versions["before"].get(k) for k in others)
    print(f"{len(kept)} kernels; with tap words: {same_words} of {len(words)} the patch's instructions; "
          f"without: {same_others} of {len(others)} the instructions from before it")
    return 0 if (same_words, same_others) == (len(words), len(others)) else 1


if __name__ == "__main__":
    sys.exit(main())
