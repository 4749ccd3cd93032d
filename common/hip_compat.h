// CUDA runtime names used by this project, mapped onto HIP. Only what the project calls is listed:
// if a new call does not compile on AMD, add its line here rather than an #ifdef at the call site.
#pragma once

#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#if __has_include(<hip/hip_bf16.h>)  // ROCm 6 and later: CUDA-like __hip_bfloat16
#include <hip/hip_bf16.h>
using __nv_bfloat16 = __hip_bfloat16;
#else  // ROCm 5 (e.g. Debian's hipcc): the older class, with the two conversions we use
#include <hip/hip_bfloat16.h>
using __nv_bfloat16 = hip_bfloat16;
__host__ __device__ inline float __bfloat162float(hip_bfloat16 v) { return static_cast<float>(v); }
__host__ __device__ inline hip_bfloat16 __float2bfloat16_rn(float v) {
  return hip_bfloat16(v);
}  // RNE
#endif

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaPeekAtLastError hipPeekAtLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaSetDevice hipSetDevice
#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrL2CacheSize hipDeviceAttributeL2CacheSize
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMemGetInfo hipMemGetInfo
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamQuery hipStreamQuery
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaFuncSetAttribute(f, attr, v) \
  hipFuncSetAttribute(reinterpret_cast<const void*>(f), attr, v)
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
// Registers and occupancy of a kernel (chapter 08 reports them).
#define cudaFuncAttributes hipFuncAttributes
#define cudaFuncGetAttributes(attr, f) hipFuncGetAttributes(attr, reinterpret_cast<const void*>(f))
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, smem) \
  hipOccupancyMaxActiveBlocksPerMultiprocessor(n, reinterpret_cast<const void*>(f), threads, smem)
// Streams, 2-D copies and graphs (chapter 07).
#define cudaMemcpy2DAsync hipMemcpy2DAsync
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
// A kernel parameter whose address device code may take without a copy (the sequence policies,
// chapter 08's direct_common.cuh). HIP has no such qualifier: there the parameter is an ordinary
// one, and taking its address may copy it to the stack as CUDA did before the qualifier.
#ifndef __grid_constant__
#define __grid_constant__
#endif
