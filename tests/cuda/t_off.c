/* DSP_CUDA=off: every call reaches the real library untouched. */
#include "cuda_test.h"

int main(void) {
    void *p = NULL;
    CHECK(cudaHostAlloc(&p, 1 << 20, 0) == cudaSuccess && calls("cudaHostAlloc") == 1);
    CHECK(fakecuda_kind(p) == 1 && !is_pinned(p, 1));
    CHECK(cudaHostRegister((char *)p + 4096, 4096, 0) == cudaErrorHostMemoryAlreadyRegistered);
    cudaGetLastError();
    CHECK(cudaFreeHost(p) == cudaSuccess && calls("cudaFreeHost") == 1);
    CHECK(stat_of("cuda_host_alloc_served") == 0);
    PASS();
}
