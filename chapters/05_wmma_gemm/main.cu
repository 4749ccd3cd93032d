// Chapter 05 - tensor-core GEMMs through WMMA, and skipping the zero tiles. See
// docs/05_wmma_gemm.md.
#include "chapters/05_wmma_gemm/pipeline.cuh"

int main(int argc, char** argv) {
  return conv1d::run_forward_chapter(argc, argv, conv1d::ch05::chapter());
}
