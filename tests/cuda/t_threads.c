/* Many threads allocating, registering slices (refused: 712) and freeing at once. */
#include "cuda_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define THREADS 6
#define ROUNDS  400
static atomic_int bad, refused; /* refused: registrations the runtime answered 712 */

static void *run(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg, x = id * 2654435761u + 1;
    for (int r = 0; r < ROUNDS; r++) {
        x = x * 1103515245u + 12345u;
        size_t n = 4096 * (1 + (x >> 16) % 300);
        char *p = NULL;
        if (cudaHostAlloc((void **)&p, n, (x >> 8) & 1) != cudaSuccess || !p) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        memset(p, (int)id, n);
        if (!is_pinned(p, n) || host_type(p + n / 2) != 1) atomic_fetch_add(&bad, 1);
        /* Served memory is pinned already: the runtime's 712 and 713. */
        if (n > 8192 && (atomic_fetch_add(&refused, 1),
                         cudaHostRegister(p + 4096, 4096, 0) != 712 ||
                             cudaHostUnregister(p + 4096) != 713 || cudaGetLastError() != 713))
            atomic_fetch_add(&bad, 1);
        for (size_t off = 0; off < n; off += 4096)
            if (p[off] != (char)id) atomic_fetch_add(&bad, 1);
        if (cudaFreeHost(p) != cudaSuccess) atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&bad) == 0, "%d failures", atomic_load(&bad));
    CHECK(calls("cudaHostAlloc") == 0 && calls("cudaFreeHost") == 0, "all served");
    CHECK(stat_of("cuda_host_alloc_served") == THREADS * ROUNDS);
    CHECK(stat_of("blocks_live") == 0);
    int regs = calls("cudaHostRegister") - atomic_load(&refused);
    CHECK(regs < THREADS * ROUNDS / 2, "the pool spared most registrations: %d", regs);
    PASS();
}
