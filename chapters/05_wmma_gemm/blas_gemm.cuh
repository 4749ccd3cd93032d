// Variant `cublas`: the vendor library on the same dense GEMM, as the speed reference
// (hipBLAS on AMD when it is found; without it the variant is absent there).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "chapters/05_wmma_gemm/wmma_common.cuh"

#if defined(CONV1D_HAVE_BLAS)
#if defined(CONV1D_BACKEND_HIP)
#include <hipblas/hipblas.h>
#define cublasHandle_t hipblasHandle_t
#define cublasStatus_t hipblasStatus_t
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define cublasCreate hipblasCreate
#define cublasDestroy hipblasDestroy
#define cublasSetStream hipblasSetStream
#define cublasGemmEx hipblasGemmEx_v2
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUDA_R_16F HIP_R_16F
#define CUBLAS_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define CUBLAS_GEMM_DEFAULT HIPBLAS_GEMM_DEFAULT
#else
#include <cublas_v2.h>
#endif

namespace conv1d::ch05 {

#define BLAS_CHECK(call)                                                                \
  do {                                                                                  \
    const cublasStatus_t st_ = (call);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                   \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                               ": " #call " failed with status " +                      \
                               std::to_string(static_cast<int>(st_)));                  \
  } while (0)

class BlasHandle {
 public:
  BlasHandle() { BLAS_CHECK(cublasCreate(&h_)); }
  ~BlasHandle() { cublasDestroy(h_); }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_{};
};

// C = A x Bw in fp16 with fp32 accumulation. cuBLAS is column-major: a row-major C[M,N] is a
// column-major C^T[N,M] = Bw^T x A^T, so the operands are passed in swapped order, untransposed.
// No epilogue: bias and SiLU, when asked for, run as chapter 04's separate pass afterwards.
inline void blas_gemm(const BlasHandle& h, const GemmArgs& g, cudaStream_t s = 0) {
  const float one = 1.0f, zero = 0.0f;
  if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX)
    throw std::invalid_argument(
        "the BLAS GEMM takes 32-bit sizes: M = B*L = " + std::to_string(g.m) + " is too large");
  BLAS_CHECK(cublasSetStream(h.get(), s));
  BLAS_CHECK(cublasGemmEx(h.get(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.n),
                          static_cast<int>(g.m), static_cast<int>(g.k), &one, g.bw, CUDA_R_16F,
                          static_cast<int>(g.n), g.a, CUDA_R_16F, static_cast<int>(g.k), &zero, g.c,
                          CUDA_R_16F, static_cast<int>(g.n), CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
}

}  // namespace conv1d::ch05
#endif  // CONV1D_HAVE_BLAS
