/* The slice of the CUDA runtime ABI the shim needs (CUDA 12 and 13 agree on
 * it; docs/internals.md, "CUDA ABI"). The real headers are not needed to
 * build. */
#ifndef DSP_CUDA_TYPES_H
#define DSP_CUDA_TYPES_H

typedef int cudaError_t;

enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorHostMemoryAlreadyRegistered = 712,
    cudaErrorHostMemoryNotRegistered = 713,
};

enum {
    cudaHostAllocPortable = 1,
    cudaHostAllocMapped = 2,
    cudaHostAllocWriteCombined = 4,
    cudaHostRegisterPortable = 1,
    cudaHostRegisterMapped = 2,
    cudaHostRegisterIoMemory = 4,
    cudaHostRegisterReadOnly = 8,
};

/* cudaStreamCaptureMode: how a thread's calls interact with graph captures
 * (docs/internals.md, "Copies and graph capture"). */
enum {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};

/* struct cudaPointerAttributes is 24 bytes in CUDA 11/12 and 88 in 13: the
 * shim never touches one, it only passes the caller's pointer on. */
struct cudaPointerAttributes;

/* The runtime's prototypes, for programs that call it (tests, benchmarks); the
 * shim defines them itself. Attributes are passed as an opaque pointer. */
#ifdef DSP_CUDA_PROTOTYPES
#include <stddef.h>
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaHostRegister(void *, size_t, unsigned);
cudaError_t cudaHostUnregister(void *);
cudaError_t cudaHostGetFlags(unsigned *, void *);
cudaError_t cudaHostGetDevicePointer(void **, void *, unsigned);
cudaError_t cudaPointerGetAttributes(void *, const void *);
cudaError_t cudaGetLastError(void);
#endif

#endif
