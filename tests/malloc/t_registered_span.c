/* Regression (issue 13): a hinted malloc took spans from the CUDA layer's
 * registered pool first, so a program that never pinned anything got memory
 * the driver copies from asynchronously: a buffer it reused as soon as
 * cudaMemcpyAsync returned (legal for pageable memory) was read late, and
 * the device got the new data. Hinted memory must stay pageable to the
 * driver until the program pins it (is_pinned, pin_memory, cudaHostRegister);
 * registered spans pooled for reuse are cudaHostAlloc's own. */
#include "cuda_test.h"

int main(void) {
    char *p = malloc(4 << 20); /* hinted (DSP_MALLOC_MIN=1M) */
    CHECK(p);
    memset(p, 1, 4 << 20);
    CHECK(host_type(p) == 1 && fakecuda_kind(p) == 2, "registered at the first question");
    free(p); /* into the registered pool */
    int regs = calls("cudaHostRegister");
    char *q = malloc(4 << 20);
    CHECK(q && q != p, "a hinted malloc got the registered span back");
    CHECK(fakecuda_kind(q) == 0, "the new hinted block is not registered with the driver");
    CHECK(calls("cudaHostRegister") == regs, "no driver call from malloc");
    char *served = NULL;
    /* Nor is it served memory: that is shared, as the driver's (a fork would
     * copy this private span); it waits in the pool for eviction. */
    CHECK(cudaHostAlloc((void **)&served, 4 << 20, 0) == cudaSuccess && served != p,
          "cudaHostAlloc took the program's private registered span");
    CHECK(cudaFreeHost(served) == cudaSuccess);
    free(q);
    PASS();
}
