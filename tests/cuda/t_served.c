/* cudaHostAlloc/cudaMallocHost/cudaFreeHost served by the manager. */
#include "cuda_test.h"

#include <stdint.h>

int main(void) {
    void *p = NULL;
    size_t n = (3 << 20) + 100; /* not a power of two: served exactly */
    CHECK(cudaHostAlloc(&p, n, cudaHostAllocPortable) == cudaSuccess);
    CHECK(((uintptr_t)p & 4095) == 0, "page-aligned");
    CHECK(calls("cudaHostAlloc") == 0, "served, not passed through");
    CHECK(calls("cudaHostRegister") == 1, "registered with the driver once");
    CHECK(fakecuda_kind(p) == 2 && fakecuda_kind((char *)p + n - 1) == 2,
          "the driver sees it pinned");
    CHECK(is_pinned(p, n) && is_pinned((char *)p + 4096, 8192),
          "the manager sees it pinned, slices too");
    CHECK(!is_pinned(p, (3 << 20) + 8192 + 1), "the block is the size rounded to the page");
    memset(p, 0x5a, n);

    unsigned flags = 99;
    CHECK(cudaHostGetFlags(&flags, p) == cudaSuccess && flags == cudaHostAllocPortable,
          "flags as asked: %u", flags);
    CHECK(cudaHostGetFlags(&flags, (char *)p + 12345) == cudaSuccess, "interior pointers too");
    CHECK(host_type(p) == 1 && host_type((char *)p + 1000000) == 1, "is_pinned(): type Host");
    void *dev = NULL;
    CHECK(cudaHostGetDevicePointer(&dev, p, 0) == cudaSuccess && dev == p);
    CHECK(stat_of("cuda_host_alloc_served") == 1);

    /* Free: waits for the device as the real one does, then back to the pool,
     * still registered: no unpinning, no driver free. */
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(calls("cudaDeviceSynchronize") == 1, "waited for the device, where the real call waits");
    CHECK(calls("cudaFreeHost") == 0 && calls("cudaHostUnregister") == 0);
    CHECK(fakecuda_kind(p) == 2, "still registered while pooled");
    CHECK(!is_pinned(p, 1), "no longer a live block");
    CHECK(stat_of("cuda_free_pooled") == 1);

    /* Reuse: no driver call at all. */
    void *q = NULL;
    CHECK(cudaMallocHost(&q, n) == cudaSuccess);
    CHECK(q == p, "the pooled block comes back: %p %p", q, p);
    CHECK(calls("cudaDeviceSynchronize") == 1, "no wait at reuse (it would break a graph capture)");
    CHECK(calls("cudaHostRegister") == 1, "not registered again");
    CHECK(calls("cudaMallocHost") == 0);
    CHECK(cudaHostGetFlags(&flags, q) == cudaSuccess && flags == 0, "the new owner's flags: %u",
          flags);

    /* Every free waits, as the real one does. */
    void *r = NULL;
    CHECK(cudaHostAlloc(&r, 1 << 20, cudaHostAllocMapped) == cudaSuccess);
    CHECK(cudaFreeHost(q) == cudaSuccess && cudaFreeHost(r) == cudaSuccess);
    void *a = NULL, *b = NULL;
    CHECK(cudaHostAlloc(&a, 1 << 20, 0) == cudaSuccess && cudaHostAlloc(&b, n, 0) == cudaSuccess);
    CHECK(calls("cudaDeviceSynchronize") == 3, "one per free: %d", calls("cudaDeviceSynchronize"));
    CHECK(a == r && b == p);
    CHECK(cudaGetLastError() == cudaSuccess, "no error left behind");
    PASS();
}
