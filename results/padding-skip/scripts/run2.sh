#!/usr/bin/env bash
# Second call (the device time's last minutes): chapter 10's tests on the tree with the padding
# skip taken back and its test rows kept (commit 3cc6c21), the GPU required. As run, one line.
mkdir -p $OUT && cmake -S . -B build/t -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null 2>&1 && SECONDS=0 && cmake --build build/t -j 16 --target conv1d_tests_ch10 > $OUT/build.txt 2>&1; echo "build rc $? in $SECONDS s"; CONV1D_REQUIRE_GPU=1 timeout 60 build/t/tests/conv1d_tests_ch10 > $OUT/tests_ch10.txt 2>&1; echo "tests rc $?"; grep -E "^\[  PASSED|^\[  FAILED|OK \] Ch10RowsBackward.RowsWithSeqIdx" $OUT/tests_ch10.txt
