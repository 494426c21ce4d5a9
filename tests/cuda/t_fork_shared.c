/* Served memory behaves as the driver's across fork (issue 13; docs/cuda.md,
 * "Keeping the promises the real calls make"): cudaHostAlloc memory is
 * MAP_SHARED and out of core dumps, so a forked child gets no copy of it,
 * reads the parent's data, and
 * the parent sees the child's writes. Under the shim, a child that frees
 * what it inherited, and trims the pool it inherited, leaves the parent's
 * pages alone. The same checks pass against the double alone
 * (cuda_fork_shared_without_shim). */
#include "gpu_check.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL %s:%d: %s ", __FILE__, __LINE__, #c);                                     \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define LEN   (32u << 20)
#define SMALL 64

static int intact(const unsigned char *p, size_t from, size_t len, unsigned char v) {
    for (size_t i = from; i < len; i += 512)
        if (p[i] != v) return 0;
    return 1;
}

int main(void) {
    int shimmed = dlsym(RTLD_DEFAULT, "dsp_trim") != NULL;
    unsigned char *p = NULL, *small[SMALL], *pooled = NULL;
    CHECK(cudaHostAlloc((void **)&p, LEN, 0) == 0, "cudaHostAlloc");
    memset(p, 0x5a, LEN);
    CHECK(gpu_vm_flag(p, "sh") == 1, "cudaHostAlloc memory is MAP_SHARED");
    CHECK(gpu_vm_flag(p, "dd") == 1, "cudaHostAlloc memory is left out of core dumps");
    for (int i = 0; i < SMALL; i++) { /* small ones are no private chunk's slices */
        CHECK(cudaHostAlloc((void **)&small[i], 8192, 0) == 0, "small cudaHostAlloc");
        small[i][0] = (unsigned char)i;
        CHECK(gpu_vm_flag(small[i], "sh") == 1 && gpu_vm_flag(small[i], "dd") == 1,
              "small block %d shared and out of core dumps", i);
    }
    /* Shared memory's madvise answers (regression: the shim zeroed a served
     * block on MADV_DONTNEED, which a forked child sharing it would see, and
     * accepted MADV_FREE, which the kernel refuses on shared memory). */
    CHECK(madvise(p + 8192, 4096, MADV_DONTNEED) == 0 && p[8192] == 0x5a,
          "MADV_DONTNEED keeps shared memory's contents");
    CHECK(madvise(p + 8192, 4096, MADV_FREE) == -1 && errno == EINVAL,
          "MADV_FREE is refused on shared memory");
    CHECK(cudaHostAlloc((void **)&pooled, 1 << 20, 1 /* Portable */) == 0, "cudaHostAlloc");
    CHECK(cudaFreeHost(pooled) == 0, "cudaFreeHost"); /* pooled under the shim, inherited so */

    pid_t pid = fork();
    if (pid == 0) {
        if (!intact(p, 0, LEN, 0x5a)) _exit(2); /* the child reads the parent's data */
        for (int i = 0; i < SMALL; i++)
            if (small[i][0] != (unsigned char)i) _exit(3);
        /* Nothing was copied at fork: the pages are the parent's, shared. */
        long priv = gpu_smaps_kb(p, "Private_Dirty");
        if (priv < 0 || priv > 1024) _exit(4);
        p[0] = 0xa5;
        small[5][1] = 77;
        if (shimmed) {
            /* Freeing inherited served memory in the child only unmaps it
             * here (the child must not call CUDA for it), and the inherited
             * pool is dropped: neither may give back the parent's pages. */
            if (cudaFreeHost(p) != 0 || cudaFreeHost(small[7]) != 0) _exit(5);
            size_t (*trim)(void) = (size_t(*)(void))dlsym(RTLD_DEFAULT, "dsp_trim");
            trim();
        }
        _exit(0);
    }
    int st;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed at step %d", WEXITSTATUS(st));
    CHECK(p[0] == 0xa5 && small[5][1] == 77, "the parent sees the child's writes");
    CHECK(intact(p, 512, LEN, 0x5a), "the parent's data outlives the child's free");
    for (int i = 0; i < SMALL; i++)
        CHECK(small[i][0] == (unsigned char)i, "small block %d outlives the child's free", i);
    CHECK(cudaFreeHost(p) == 0, "cudaFreeHost");
    for (int i = 0; i < SMALL; i++) CHECK(cudaFreeHost(small[i]) == 0, "cudaFreeHost");
    printf("PASS\n");
    return 0;
}
