/* Past DSP_MAX_PINNED (1M here) cudaHostAlloc falls back to the real one. */
#include "cuda_test.h"

int main(void) {
    void *small = NULL, *big = NULL;
    CHECK(cudaHostAlloc(&small, 512 << 10, 0) == cudaSuccess && calls("cudaHostAlloc") == 0);
    CHECK(cudaHostAlloc(&big, 4 << 20, 0) == cudaSuccess, "the caller still gets memory");
    CHECK(calls("cudaHostAlloc") == 1 && fakecuda_kind(big) == 1, "from the real cudaHostAlloc");
    CHECK(stat_of("fallbacks") == 1 && stat_of("budget_refusals") >= 1);
    CHECK(cudaFreeHost(big) == cudaSuccess && calls("cudaFreeHost") == 1);
    CHECK(cudaFreeHost(small) == cudaSuccess && calls("cudaFreeHost") == 1);
    PASS();
}
