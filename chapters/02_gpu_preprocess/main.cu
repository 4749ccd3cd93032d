// Chapter 02 - GPU pad + img2col and weight expansion, per-batch launches. See
// docs/02_gpu_preprocess.md.
#include "chapters/02_gpu_preprocess/pipeline.cuh"

int main(int argc, char** argv) {
  return conv1d::run_forward_chapter(argc, argv, conv1d::ch02::chapter());
}
