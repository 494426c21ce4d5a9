/* Without a GPU, the libcudart test double: a hinted block is registered with
 * the driver at the application's first CUDA question about it, so
 * torch's is_pinned() (cudaPointerGetAttributes) says pinned; never from the
 * malloc path, and never in a forked child. */
#include "cuda_test.h"

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int before = calls("cudaHostRegister");
    char *p = malloc(4 << 20), *small = malloc(1000);
    CHECK(p && small);
    CHECK(is_pinned(p, 4 << 20), "hinted");
    CHECK(calls("cudaHostRegister") == before, "no driver call from malloc");
    CHECK(fakecuda_kind(p) == 0);

    /* A forked child asks about an inherited block: pass-through, no driver
     * call, and the answer is the driver's (unregistered). */
    pid_t pid = fork();
    if (pid == 0) {
        int regs = calls("cudaHostRegister");
        if (host_type(p) == 1) _exit(2);
        if (calls("cudaHostRegister") != regs) _exit(3);
        free(p);
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child status %d", status);

    CHECK(host_type(p + 12345) == 1, "is_pinned(): cudaMemoryTypeHost");
    CHECK(fakecuda_kind(p) == 2, "registered with the driver");
    CHECK(calls("cudaHostRegister") == before + 1);
    CHECK(host_type(p) == 1 && calls("cudaHostRegister") == before + 1, "once");
    CHECK(host_type(small) == 0 || host_type(small) == -1, "glibc memory: the driver's answer");
    CHECK(cudaHostRegister(p + 4096, 8192, 0) == cudaSuccess, "inside a registered block");
    CHECK(cudaHostUnregister(p + 4096) == cudaSuccess);

    /* Freed, it stays registered in the CUDA pool (which hinted mallocs never
     * take from: hinted_malloc_never_gets_a_registered_span). */
    errno = 55;
    free(p);
    CHECK(errno == 55);
    char *q = malloc(4 << 20);
    CHECK(q && host_type(q) == 1);
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, q) != cudaSuccess, "malloc memory is not cudaHostAlloc memory");
    cudaGetLastError();
    free(q);
    free(small);
    CHECK(stat_of("malloc_hinted_bytes") == 0);
    PASS();
}
