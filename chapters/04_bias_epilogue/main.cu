// Chapter 04 - bias and SiLU: a separate pass over C, or fused into the GEMM. See
// docs/04_bias_epilogue.md.
#include "chapters/04_bias_epilogue/pipeline.cuh"

int main(int argc, char** argv) {
  return conv1d::run_forward_chapter(argc, argv, conv1d::ch04::chapter());
}
