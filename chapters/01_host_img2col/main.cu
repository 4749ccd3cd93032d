// Chapter 01 - the GEMM formulation with all preprocessing on the host. See
// docs/01_host_img2col.md.
#include "chapters/01_host_img2col/pipeline.cuh"

int main(int argc, char** argv) {
  return conv1d::run_forward_chapter(argc, argv, conv1d::ch01::chapter());
}
