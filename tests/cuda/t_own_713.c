/* Regression (issue 30): the 713 the shim gives itself for a
 * cudaHostUnregister in the arena (an interior pointer, an address no block
 * holds, a block after cudaFreeHost) left the runtime's last error at 0, where
 * libcudart sets it: cudaGetLastError() returns 713 once (then 0) and
 * cudaPeekAtLastError() returns it without resetting it. The shim's own
 * registration of the block stays. Runs without the shim too
 * (cuda_own_713_without_shim): the same answers from the double alone. */
#include "cuda_test.h"

#include <stdint.h>

int cudaPeekAtLastError(void);

#define N (4u << 20)

static void not_registered(const void *p, const char *what) {
    CHECK(cudaHostUnregister((void *)p) == cudaErrorHostMemoryNotRegistered, "%s: 713", what);
    CHECK(cudaPeekAtLastError() == cudaErrorHostMemoryNotRegistered, "%s: peek", what);
    CHECK(cudaPeekAtLastError() == cudaErrorHostMemoryNotRegistered, "%s: peek again", what);
    CHECK(cudaGetLastError() == cudaErrorHostMemoryNotRegistered, "%s: the last error", what);
    CHECK(cudaGetLastError() == cudaSuccess, "%s: reset once read", what);
}

int main(void) {
    int with_shim = dlsym(RTLD_DEFAULT, "dsp_alloc") != NULL;
    char *p = NULL, *q = NULL;
    CHECK(cudaHostAlloc((void **)&p, N, 0) == cudaSuccess);
    CHECK(cudaHostAlloc((void **)&q, N, 0) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    not_registered(p + 8192, "an interior pointer");
    not_registered(q + N + (64u << 20), "an address no block holds");
    CHECK(cudaFreeHost(q) == cudaSuccess);
    not_registered(q, "a block after cudaFreeHost");
    not_registered(p, "the block's own base");
    CHECK(host_type(p) == 1 && host_type(p + N - 1) == 1, "the block is still pinned host memory");
    CHECK(fakecuda_kind(p) == (with_shim ? 2 : 1), "and the driver still holds it");
    CHECK(cudaFreeHost(p) == cudaSuccess && cudaGetLastError() == cudaSuccess);
    PASS();
}
