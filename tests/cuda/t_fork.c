/* A forked child never calls CUDA for memory inherited from the parent. */
#include "cuda_test.h"

#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    char *p = NULL, *pooled = NULL;
    CHECK(cudaHostAlloc((void **)&p, 2 << 20, 0) == cudaSuccess);
    CHECK(cudaHostAlloc((void **)&pooled, 1 << 20, 0) == cudaSuccess);
    CHECK(cudaFreeHost(pooled) == cudaSuccess);
    p[100] = 42;
    pid_t pid = fork();
    if (pid == 0) {
        int before = calls("cudaHostRegister") + calls("cudaHostUnregister") +
                     calls("cudaFreeHost") + calls("cudaDeviceSynchronize");
        if (is_pinned(p, 1)) _exit(2); /* not locked here */
        if (cudaHostRegister(p + 4096, 4096, 0) != cudaErrorHostMemoryAlreadyRegistered)
            _exit(3); /* driver's view */
        cudaGetLastError();
        if (cudaFreeHost(p) != cudaSuccess) _exit(4); /* freed without a driver call */
        int after = calls("cudaHostRegister") + calls("cudaHostUnregister") +
                    calls("cudaFreeHost") + calls("cudaDeviceSynchronize");
        if (after - before != 1) _exit(5); /* only the register passed through */
        /* CUDA does not survive fork: the child passes new allocations
         * through instead of pinning blocks the driver would refuse. */
        char *q = NULL;
        int passed = calls("cudaHostAlloc");
        if (cudaHostAlloc((void **)&q, 1 << 20, 0) != cudaSuccess || !q) _exit(6);
        if (calls("cudaHostAlloc") != passed + 1 || is_pinned(q, 1)) _exit(8);
        memset(q, 1, 1 << 20);
        if (stat_of("pool_hits") != 0) _exit(7); /* the inherited pool was not reused */
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed at step %d", WEXITSTATUS(st));
    CHECK(is_pinned(p, 2 << 20) && p[100] == 42, "the parent is unaffected");
    CHECK(cudaFreeHost(p) == cudaSuccess);
    PASS();
}
