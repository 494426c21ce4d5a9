/* A library loaded RTLD_LOCAL after start-up (every Python extension) calls
 * cudaHostAlloc: the hook interposes, and must then find the real functions in
 * a libcudart that dlsym(RTLD_NEXT) cannot see. This program does not link
 * libcudart itself. */
#include "cuda_types.h"
#include "rtld_local.h"

int main(int argc, char **argv) {
    if (rtld_local_ready(argc, "fakecuda_count", "libcudart")) return 1;
    /* Regression: a hook reached before any libcudart was loaded (a probe
     * through dlsym) settled the layer as pass-through for good. */
    cudaError_t (*probe)(void **, size_t, unsigned) =
        (cudaError_t(*)(void **, size_t, unsigned))dlsym(RTLD_DEFAULT, "cudaHostAlloc");
    void *x = NULL;
    if (!probe || probe(&x, 4096, 0) != cudaErrorInsufficientDriver) {
        fprintf(stderr, "FAIL: the probe before libcudart\n");
        return 1;
    }
    return rtld_local_run(argv[1]);
}
