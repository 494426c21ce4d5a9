/* Against the real libcudart (CUDA toolkit, no driver here): prints the result
 * of every interposed call; tests/cuda/real_cudart.sh runs it with and without
 * the shim and requires identical output. */
#define DSP_CUDA_PROTOTYPES
#include "cuda_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    void *p = (void *)0x1, *q = (void *)0x1, *dev = NULL;
    char *heap = malloc(1 << 20);
    unsigned flags = 77;
    char attr[128];
    memset(attr, 0, sizeof attr);
    for (int round = 0; round < 2; round++) { /* the second round after any state change */
        printf("cudaHostAlloc %d\n", cudaHostAlloc(&p, 64 << 20, 0));
        printf("cudaHostAlloc(wc) %d\n", cudaHostAlloc(&q, 1 << 20, cudaHostAllocWriteCombined));
        printf("cudaHostAlloc(0) %d\n", cudaHostAlloc(&q, 0, 0));
        printf("cudaMallocHost %d\n", cudaMallocHost(&q, 1 << 20));
        printf("cudaHostRegister %d\n", cudaHostRegister(heap, 1 << 20, 0));
        printf("cudaHostUnregister %d\n", cudaHostUnregister(heap));
        printf("cudaHostGetFlags %d\n", cudaHostGetFlags(&flags, heap));
        printf("cudaHostGetDevicePointer %d\n", cudaHostGetDevicePointer(&dev, heap, 0));
        printf("cudaPointerGetAttributes %d\n", cudaPointerGetAttributes(attr, heap));
        printf("cudaFreeHost(heap) %d\n", cudaFreeHost(heap));
        printf("cudaFreeHost(NULL) %d\n", cudaFreeHost(NULL));
        printf("cudaGetLastError %d\n", cudaGetLastError());
    }
    free(heap);
    return 0;
}
