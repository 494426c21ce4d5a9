/* Regression (issue 30): arena memory outside live blocks was answered as
 * registered host memory: one byte past a served block (inside the pooled
 * registered span it was cut from) and a block after cudaFreeHost
 * (cudaPointerGetAttributes type 1, cudaHostGetDevicePointer 0), because the
 * shim registers whole spans with the driver. The runtime says unregistered
 * (type 0) and invalid value (1, with its last error); the driver API's
 * queries answer as the driver does for memory it does not know. Runs
 * without the shim too (cuda_past_block_without_shim): the same answers from
 * the doubles alone. */
#include "cuda_test.h"
#include "fake_cuda.h"

#include <stdint.h>

#define BIG   (5u << 20) /* reused for SMALL: at most a quarter larger (pool.c) */
#define SMALL (4u << 20)

static void unregistered(const char *p, const char *what) {
    struct attrs24 a;
    memset(&a, 0x7f, sizeof a);
    CHECK(cudaPointerGetAttributes(&a, p) == cudaSuccess, "%s", what);
    CHECK(a.type == 0 && a.device == -2 && !a.devicePointer, "%s: type %d device %d", what, a.type,
          a.device);
    void *dev = (void *)1;
    CHECK(cudaHostGetDevicePointer(&dev, (void *)p, 0) == cudaErrorInvalidValue, "%s", what);
    CHECK(dev == (void *)1, "%s: nothing written", what);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "%s: the last error", what);
    unsigned type = 99;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (uintptr_t)p) ==
                  CUDA_ERROR_INVALID_VALUE &&
              type == 99,
          "%s: cuPointerGetAttribute", what);
    int at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *host = (void *)1;
    void *data[2] = {&type, &host};
    CHECK(cuPointerGetAttributes(2, at, data, (uintptr_t)p) == CUDA_SUCCESS && type == 0 && !host,
          "%s: cuPointerGetAttributes type %u host %p", what, type, host);
    CUdeviceptr dp = 1;
    CHECK(cuMemHostGetDevicePointer_v2(&dp, (void *)p, 0) == CUDA_ERROR_INVALID_VALUE && dp == 1,
          "%s: cuMemHostGetDevicePointer", what);
}

int main(void) {
    int with_shim = dlsym(RTLD_DEFAULT, "dsp_alloc") != NULL;
    char *big = NULL, *p = NULL;
    CHECK(cudaHostAlloc((void **)&big, BIG, cudaHostAllocMapped) == cudaSuccess);
    CHECK(cudaFreeHost(big) == cudaSuccess);
    unregistered(big, "a block after cudaFreeHost");
    CHECK(cudaHostAlloc((void **)&p, SMALL, cudaHostAllocMapped) == cudaSuccess);
    if (with_shim) CHECK(p == big, "cut from the pooled span");
    CHECK(host_type(p + SMALL - 1) == 1, "the block's last byte is pinned host memory");
    void *dev = NULL;
    CHECK(cudaHostGetDevicePointer(&dev, p + SMALL - 1, 0) == cudaSuccess && dev == p + SMALL - 1);
    unregistered(p + SMALL, "one past the end");
    unregistered(p + SMALL + 12345, "further on");
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    PASS();
}
