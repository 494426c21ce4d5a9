/* Regression (issue 30): cudaHostRegister of a range inside a cudaHostAlloc
 * block answered 0 under the shim, where the runtime answers 712
 * (cudaErrorHostMemoryAlreadyRegistered: the block is pinned memory already)
 * and sets its last error; cuMemHostRegister inside a cuMemHostAlloc block
 * answered 0 where the driver answers 712. Inside a block of ordinary memory
 * (a malloc hint's, DSP_MALLOC_MIN=1M here) the registration still succeeds:
 * without the shim that memory is pageable. Runs without the shim too
 * (cuda_register_712_without_shim): the same answers from the doubles alone. */
#include "cuda_test.h"
#include "fake_cuda.h"

#include <stdint.h>

#define N (4u << 20)

int main(void) {
    char *a = NULL, *d = NULL;
    CHECK(cudaHostAlloc((void **)&a, N, 0) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaHostRegister(a + 4096, 4096, 0) == cudaErrorHostMemoryAlreadyRegistered, "a slice");
    CHECK(cudaGetLastError() == cudaErrorHostMemoryAlreadyRegistered, "the last error is set");
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaHostRegister(a, 4096, cudaHostRegisterPortable) ==
              cudaErrorHostMemoryAlreadyRegistered,
          "the base page");
    CHECK(cudaHostRegister(a, N, 0) == cudaErrorHostMemoryAlreadyRegistered, "the whole block");
    CHECK(cudaGetLastError() == cudaErrorHostMemoryAlreadyRegistered);
    CHECK(cudaHostUnregister(a + 4096) == cudaErrorHostMemoryNotRegistered, "nothing to undo");
    CHECK(cudaGetLastError() == cudaErrorHostMemoryNotRegistered);
    CHECK(host_type(a + 4096) == 1, "still pinned host memory");

    /* The driver API (the runtime made the primary context current). */
    CHECK(cuMemHostAlloc((void **)&d, N, 0) == CUDA_SUCCESS);
    CHECK(cuMemHostRegister_v2(d + 4096, 4096, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK(cuMemHostRegister(d + 8192, 4096, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
          "v1 too");
    CHECK(cuMemHostUnregister(d + 4096) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(cuMemFreeHost(d) == CUDA_SUCCESS && cudaFreeHost(a) == cudaSuccess);

    /* Ordinary memory: pageable without the shim, so registering succeeds. */
    char *m = malloc(N);
    CHECK(m);
    char *page = (char *)(((uintptr_t)m + 4095) & ~(uintptr_t)4095) + 4096;
    CHECK(cudaHostRegister(page, 4096, 0) == cudaSuccess, "inside a malloc block");
    CHECK(host_type(page) == 1);
    CHECK(cudaHostUnregister(page) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    free(m);
    PASS();
}
