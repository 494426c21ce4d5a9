/* A library loaded RTLD_LOCAL after start-up (every Python extension) calls
 * cudaHostAlloc: the hook interposes, and must then find the real functions in
 * a libcudart that dlsym(RTLD_NEXT) cannot see. This program does not link
 * libcudart itself. */
#include "cuda_types.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    if (!dlsym(RTLD_DEFAULT, "dsp_version")) {
        fprintf(stderr, "FAIL: run under LD_PRELOAD\n");
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, "fakecuda_count")) {
        fprintf(stderr, "FAIL: libcudart is in the global scope; the test needs it local\n");
        return 1;
    }
    /* Regression: a hook reached before any libcudart was loaded (a probe
     * through dlsym) settled the layer as pass-through for good. */
    cudaError_t (*probe)(void **, size_t, unsigned) =
        (cudaError_t(*)(void **, size_t, unsigned))dlsym(RTLD_DEFAULT, "cudaHostAlloc");
    void *x = NULL;
    if (!probe || probe(&x, 4096, 0) != cudaErrorInsufficientDriver) {
        fprintf(stderr, "FAIL: the probe before libcudart\n");
        return 1;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "user_run");
    int rc = run ? run() : 99;
    if (rc) {
        fprintf(stderr, "FAIL: user_run step %d\n", rc);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
