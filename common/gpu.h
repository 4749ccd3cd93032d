// The one header that chooses the GPU runtime. CUDA is the default; a HIP build defines
// CONV1D_BACKEND_HIP and gets the CUDA names the project uses mapped onto HIP (hip_compat.h), so
// the rest of the code is written once, against the CUDA spelling.
#pragma once

#if defined(CONV1D_BACKEND_HIP)
#include "common/hip_compat.h"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif
