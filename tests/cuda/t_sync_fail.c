/* Regression: when waiting for the device failed, freed blocks were pooled and
 * handed to a new owner anyway, with a copy possibly still in flight. The free
 * now fails as the wait did, and the block stays its owner's. */
#include "cuda_test.h"

int main(void) {
    void *p = NULL, *q = NULL;
    CHECK(cudaHostAlloc(&p, 1 << 20, 0) == cudaSuccess);
    CHECK(cudaFreeHost(p) == 999, "the device's error");
    CHECK(cudaGetLastError() == 999, "as its last error");
    CHECK(is_pinned(p, 1 << 20), "not freed: still its owner's");
    CHECK(cudaHostAlloc(&q, 1 << 20, 0) == cudaSuccess && q != p, "never handed out again");
    PASS();
}
