/* Regression: when cudaFreeHost or cudaHostUnregister was the first hooked call
 * of a process, the real functions were not resolved yet and the shim answered
 * cudaErrorInsufficientDriver (35) instead of the real result. */
#include "cuda_test.h"

int main(void) {
    char *heap = malloc(8192);
    CHECK(cudaHostUnregister(heap) == cudaErrorHostMemoryNotRegistered,
          "the driver's answer, not 35");
    CHECK(calls("cudaHostUnregister") == 1);
    cudaGetLastError();
    CHECK(cudaFreeHost(NULL) == cudaSuccess && calls("cudaFreeHost") == 1);
    free(heap);
    PASS();
}
