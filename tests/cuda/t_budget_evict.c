/* DSP_MAX_PINNED=3M: pooled registered blocks make room for a new block that
 * does not fit beside them, instead of sending the call to the real function. */
#include "cuda_test.h"

int main(void) {
    void *a = NULL, *b = NULL;
    CHECK(cudaHostAlloc(&a, 2 << 20, 0) == cudaSuccess && calls("cudaHostAlloc") == 0);
    CHECK(cudaFreeHost(a) == cudaSuccess);
    CHECK(stat_of("pinned_bytes") == 2 << 20, "pooled, still pinned");
    CHECK(cudaHostAlloc(&b, (5 << 20) / 2, 0) == cudaSuccess);
    CHECK(calls("cudaHostAlloc") == 0, "served, not passed through");
    CHECK(calls("cudaHostUnregister") == 1, "the pooled block was given back first");
    CHECK(calls("cudaDeviceSynchronize") == 1, "the free had waited for the device");
    CHECK(stat_of("pinned_bytes") == (5 << 20) / 2, "%lld", stat_of("pinned_bytes"));
    CHECK(stat_of("fallbacks") == 0);
    CHECK(cudaFreeHost(b) == cudaSuccess);
    /* A request that cannot fit even with the pool empty keeps the pool. */
    void *c = NULL;
    CHECK(cudaHostAlloc(&c, 4 << 20, 0) == cudaSuccess && calls("cudaHostAlloc") == 1,
          "passed through");
    CHECK(calls("cudaHostUnregister") == 1, "nothing given back for it");
    CHECK(stat_of("pool_cached_bytes") == (5 << 20) / 2, "the pool kept its block");
    CHECK(cudaFreeHost(c) == cudaSuccess);
    PASS();
}
