// Chapter 03 - one launch per kernel for all batches. See docs/03_batch_fusion.md.
#include "chapters/03_batch_fusion/pipeline.cuh"

int main(int argc, char** argv) {
  return conv1d::run_forward_chapter(argc, argv, conv1d::ch03::chapter());
}
