/* node_bench's idle rank (figure 4): under LD_PRELOAD=libdspreload.so, linked
 * against the libcudart test double. `node_holder plain|cuda MB`: makes a
 * thread of its own (as every CUDA process has), pins MB and frees it, into
 * the plain pool (dsp_alloc, dsp_free) or the registered CUDA pool
 * (cudaHostAlloc, cudaFreeHost), prints "pooled" and idles until killed. */
#define DSP_CUDA_PROTOTYPES
#include "cuda_types.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *idle(void *arg) {
    pause();
    return arg;
}

int main(int argc, char **argv) {
    pthread_t t;
    if (argc != 3 || pthread_create(&t, NULL, idle, NULL) != 0) return 2;
    size_t len = (size_t)atol(argv[2]) << 20;
    void *p = NULL;
    if (!strcmp(argv[1], "cuda")) {
        if (cudaHostAlloc(&p, len, 0) != cudaSuccess) return 3;
        memset(p, 1, len);
        if (cudaFreeHost(p) != cudaSuccess) return 3;
    } else {
        void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
        int (*release)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "dsp_free");
        if (!alloc || !release || !(p = alloc(len))) return 3;
        memset(p, 1, len);
        release(p);
    }
    printf("pooled\n");
    fflush(stdout);
    for (;;) pause();
}
