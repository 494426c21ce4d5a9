/* What the shim does not serve reaches the real functions unchanged. */
#include "cuda_test.h"

int main(void) {
    void *wc = NULL, *z = (void *)1;
    CHECK(cudaHostAlloc(&wc, 1 << 20, cudaHostAllocWriteCombined) == cudaSuccess);
    CHECK(calls("cudaHostAlloc") == 1 && fakecuda_kind(wc) == 1,
          "write-combined goes to the driver");
    CHECK(!is_pinned(wc, 1), "and is not a manager block");
    CHECK(cudaHostAlloc(&z, 0, 0) == cudaSuccess && z == NULL && calls("cudaHostAlloc") == 2,
          "size 0 too");
    CHECK(cudaHostAlloc(NULL, 4096, 0) == cudaErrorInvalidValue && calls("cudaHostAlloc") == 3,
          "NULL too");
    CHECK(cudaHostAlloc(&z, 4096, 64) == cudaErrorInvalidValue, "unknown flags too");
    cudaGetLastError();
    CHECK(cudaFreeHost(wc) == cudaSuccess && calls("cudaFreeHost") == 1,
          "its free goes to the driver");

    void *p = NULL;
    CHECK(cudaHostAlloc(&p, 1 << 20, 0) == cudaSuccess && calls("cudaHostAlloc") == 4, "served");
    CHECK(cudaFreeHost((char *)p + 4096) == cudaErrorInvalidValue,
          "interior pointer: the driver's error");
    CHECK(calls("cudaFreeHost") == 2);
    CHECK(is_pinned(p, 1 << 20), "and the block is untouched");
    int local;
    CHECK(cudaFreeHost(&local) == cudaErrorInvalidValue, "unknown pointer: the driver's error");
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(cudaFreeHost(p) == cudaErrorInvalidValue, "double free: the error CUDA returns");
    CHECK(cudaFreeHost(NULL) == cudaSuccess);
    cudaGetLastError();
    CHECK(stat_of("cuda_host_alloc_passthrough") == 4, "%lld",
          stat_of("cuda_host_alloc_passthrough"));
    PASS();
}
