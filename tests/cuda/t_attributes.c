/* Blocks pinned by another layer (dsp_alloc here, malloc hints later) are
 * registered with the driver on the application's first CUDA question about
 * them, and then look exactly like cudaHostAlloc memory. */
#include "cuda_test.h"

int main(void) {
    void *(*dsp_alloc)(size_t) = shim("dsp_alloc");
    char *b = dsp_alloc(6 << 20);
    CHECK(b != NULL);
    CHECK(calls("cudaHostRegister") == 0, "never registered from the allocation path");
    CHECK(fakecuda_kind(b) == 0);
    CHECK(host_type(b + 12345) == 1, "is_pinned() true on first question (a slice)");
    CHECK(calls("cudaHostRegister") == 1 && fakecuda_kind(b) == 2, "registered whole, once");
    CHECK(host_type(b) == 1 && calls("cudaHostRegister") == 1);
    unsigned flags;
    CHECK(cudaHostGetFlags(&flags, b) == cudaErrorInvalidValue, "not cudaHostAlloc memory");
    cudaGetLastError();
    CHECK(cudaHostRegister(b + 4096, 4096, 0) == cudaSuccess, "sub-range registration inside it");
    CHECK(cudaFreeHost(b) == cudaErrorInvalidValue, "cudaFreeHost is not its free");
    cudaGetLastError();
    CHECK(is_pinned(b, 6 << 20));

    char *c = dsp_alloc(1 << 20);
    void *dev;
    CHECK(cudaHostGetDevicePointer(&dev, c, 0) == cudaSuccess && dev == c,
          "device pointer: registered first");
    CHECK(calls("cudaHostRegister") == 2);

    char *heap = malloc(1 << 16);
    CHECK(host_type(heap) == 0, "ordinary memory stays unregistered");
    CHECK(calls("cudaHostRegister") == 2);
    free(heap);
    PASS();
}
