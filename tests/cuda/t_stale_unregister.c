/* Regression (issue 14): a stale cudaHostUnregister of a freed served block
 * (an address in the arena the program never registered) reached the driver,
 * which dropped the shim's own registration of the pooled span; the next
 * cudaHostAlloc(cudaHostAllocMapped) reusing the span then reported no device
 * pointer and an unregistered type. The driver's answer, 713, is the shim's.
 * Runs without the shim too (cuda_stale_unregister_without_shim): the same
 * answers from the double alone. */
#include "cuda_test.h"

#include <stdint.h>

#define N (4u << 20)

int main(void) {
    int with_shim = dlsym(RTLD_DEFAULT, "dsp_alloc") != NULL;
    char *p = NULL, *q = NULL;
    CHECK(cudaHostAlloc((void **)&p, N, 0) == cudaSuccess);
    memset(p, 1, N);
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(cudaHostUnregister(p) == cudaErrorHostMemoryNotRegistered, "stale: 713");
    CHECK(cudaHostUnregister(p + 8192) == cudaErrorHostMemoryNotRegistered, "interior: 713");
    cudaGetLastError();
    CHECK(cudaHostAlloc((void **)&q, N, cudaHostAllocMapped) == cudaSuccess);
    if (with_shim) CHECK(q == p, "the pooled span is reused");
    void *dev = NULL;
    CHECK(cudaHostGetDevicePointer(&dev, q, 0) == cudaSuccess && dev == q, "device pointer %p",
          dev);
    CHECK(host_type(q) == 1 && host_type(q + N - 1) == 1, "pinned host memory");
    unsigned f = 0;
    CHECK(cudaHostGetFlags(&f, q) == cudaSuccess && f == cudaHostAllocMapped);
    /* The live block's own base: 713 too, and its registration stays. */
    CHECK(cudaHostUnregister(q) == cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();
    CHECK(host_type(q) == 1);
    CHECK(cudaFreeHost(q) == cudaSuccess);
    /* The 713s came from the runtime itself, asked about an address it never
     * registered (issue 30): the pooled span's registration survived them. */
    if (with_shim) CHECK(fakecuda_kind(q) == 2, "the pooled span is still registered");
    PASS();
}
