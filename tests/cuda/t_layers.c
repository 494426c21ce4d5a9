/* Blocks of another layer (dsp_alloc here) once registered on demand. */
#include "cuda_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

static char *shared_block;
static atomic_int bad, go;

static void *register_slice(void *arg) {
    size_t off = (size_t)(uintptr_t)arg;
    while (!atomic_load(&go)) {
    }
    if (cudaHostRegister(shared_block + off, 4096, 0) != cudaSuccess) atomic_fetch_add(&bad, 1);
    return NULL;
}

int main(void) {
    void *(*dsp_alloc)(size_t) = shim("dsp_alloc");
    int (*dsp_free)(void *) = shim("dsp_free");
    size_t (*dsp_trim)(void) = shim("dsp_trim");

    /* Regression: dsp_free of a registered block kept its sub-registrations,
     * so its next owner got 712 for a slice it never registered. */
    char *b = dsp_alloc(2 << 20);
    CHECK(cudaHostRegister(b + 4096, 4096, 0) == cudaSuccess);
    CHECK(dsp_free(b) == 0);
    /* Served memory is shared memory, as the driver's: a registered private
     * block is never handed to cudaHostAlloc (issue 13: forks would copy it). */
    char *q = NULL;
    CHECK(cudaHostAlloc((void **)&q, 2 << 20, 0) == cudaSuccess && q != b,
          "a served block is not the program's registered private block");
    CHECK(cudaFreeHost(q) == cudaSuccess);
    CHECK(dsp_trim() > 0, "the registered private block evicted");
    char *c = dsp_alloc(2 << 20);
    CHECK(c == b, "its address reused");
    CHECK(cudaHostRegister(c + 4096, 4096, 0) == cudaSuccess, "no stale sub-registration");
    CHECK(cudaHostUnregister(c + 4096) == cudaSuccess && dsp_free(c) == 0);

    /* Regression: ReadOnly inside a block not registered yet goes to the
     * driver, and its unregister must too (it answered 713 for good). */
    char *r = dsp_alloc(1 << 20);
    CHECK(cudaHostRegister(r + 8192, 4096, cudaHostRegisterReadOnly) == cudaSuccess);
    CHECK(cudaHostUnregister(r + 8192) == cudaSuccess, "the driver's registration, undone by it");
    CHECK(fakecuda_kind(r + 8192) == 0);

    /* Regression: two threads registering slices of one new block at once;
     * the second got the driver's 712 for a slice that should succeed. */
    for (int round = 0; round < 200; round++) {
        shared_block = dsp_alloc(1 << 20);
        atomic_store(&go, 0);
        pthread_t t[2];
        for (uintptr_t i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, register_slice, (void *)(4096 * (i + 1)));
        atomic_store(&go, 1);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        CHECK(atomic_load(&bad) == 0, "round %d: a slice registration failed", round);
        CHECK(cudaHostUnregister(shared_block + 4096) == cudaSuccess);
        CHECK(cudaHostUnregister(shared_block + 8192) == cudaSuccess);
        CHECK(dsp_free(shared_block) == 0);
    }

    /* Regression: registered dsp_alloc blocks freed with dsp_free piled up in
     * the registered pool until dsp_alloc failed for good (DSP_MAX_PINNED=12M,
     * DSP_POOL_MAX=4M here). */
    for (int i = 0; i < 8; i++) {
        char *x = dsp_alloc((4 << 20) + 4096 * i); /* sizes the pool cannot reuse */
        CHECK(x != NULL, "dsp_alloc %d", i);
        CHECK(host_type(x) == 1);
        CHECK(dsp_free(x) == 0);
        CHECK(stat_of("pool_cached_bytes") <= 4 << 20, "%lld", stat_of("pool_cached_bytes"));
    }
    PASS();
}
