/* The demo workload (dspreload-demo), run by `dspreload demo` under the shim:
 * the same work done with and without the shim's help, in one process, and
 * what the shim did. Seconds on a 2-core machine without a GPU. */
#include "../bench/timing.h"
#include "../preload/cuda_types.h"
#include "json_number.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ROUNDS      20
#define SIZE        ((size_t)64 << 20)
#define HINT_ROUNDS 8 /* each baseline round touches 64 MiB of fresh memory: slow on a VM */

static void *(*dsp_alloc_)(size_t);
static int (*dsp_free_)(void *);
static int (*dsp_is_pinned_)(const void *, size_t);
static int (*dsp_stats_json_)(char *, size_t);

static long long stat_of(const char *key) {
    char buf[8192];
    dsp_stats_json_(buf, sizeof buf);
    long long v = dsp_json_number(buf, key);
    return v < 0 ? 0 : v;
}

static double saved_total;

/* The baselines allocate with mmap, which is what glibc's malloc and
 * posix_memalign do for 64 MiB: in this process malloc hints are on, and
 * would pin the baseline's buffers too. */
static void *raw_alloc(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void report(const char *what, double with, double without) {
    printf("  %-44s %9.1f ms with dspreload, %9.1f ms without (%.0fx)\n", what, with * 1e3,
           without * 1e3, without / with);
    saved_total += without - with;
}

static void pinned_buffers(void) {
    printf("1. Pinned staging buffers, %d rounds of 64 MiB (DeepSpeed pins with posix_memalign + "
           "mlock):\n",
           ROUNDS);
    double t = now();
    for (int i = 0; i < ROUNDS; i++) {
        void *p = raw_alloc(SIZE);
        if (!p || mlock(p, SIZE)) {
            perror("  baseline");
            return;
        }
        munlock(p, SIZE);
        munmap(p, SIZE);
    }
    double without = now() - t;
    t = now();
    for (int i = 0; i < ROUNDS; i++) {
        char *p = dsp_alloc_(SIZE);
        if (!p) {
            perror("  dsp_alloc");
            return;
        }
        if (!dsp_is_pinned_(p + 4096, 1 << 20)) printf("  (a slice was not reported pinned!)\n");
        dsp_free_(p);
    }
    report("pin + unpin, 64 MiB:", now() - t, without);
}

/* Malloc hints: `dspreload demo` sets DSP_MALLOC_MIN=16M, so the malloc
 * below is born pinned and pin_memory() would hand it back as it is. Without
 * them, pinning a malloc'd buffer means a second, pinned buffer and a copy
 * (what torch's pin_memory() does). */
static void malloc_hints(void) {
    printf("3. Malloc hints (DSP_MALLOC_MIN=16M), %d rounds: a 64 MiB buffer from malloc, filled, "
           "then pinned\n   (without them, pin_memory() copies it into a pinned buffer torch keeps "
           "cached):\n",
           HINT_ROUNDS);
    if (!getenv("DSP_MALLOC_MIN")) {
        printf("  malloc hints are off in this run (DSP_MALLOC_MIN unset)\n");
        return;
    }
    /* torch keeps its pinned buffer cached: one, reused, counted once. */
    double t = now();
    char *pinned = raw_alloc(SIZE);
    if (!pinned || mlock(pinned, SIZE)) {
        perror("  baseline");
        return;
    }
    for (int i = 0; i < HINT_ROUNDS; i++) {
        char *buf = raw_alloc(SIZE);
        if (!buf) return;
        memset(buf, i, SIZE);
        memcpy(pinned, buf, SIZE);
        munmap(buf, SIZE);
    }
    munlock(pinned, SIZE);
    munmap(pinned, SIZE);
    double without = now() - t;
    long long before = stat_of("malloc_hinted");
    int not_pinned = 0;
    t = now();
    for (int i = 0; i < HINT_ROUNDS; i++) {
        char *buf = malloc(SIZE);
        if (!buf) return;
        memset(buf, i, SIZE);
        not_pinned += !dsp_is_pinned_(buf, SIZE); /* what is_pinned() finds */
        free(buf);
    }
    report("malloc + fill + pin, 64 MiB:", now() - t, without);
    if (not_pinned) printf("  (%d buffers were not born pinned: see DSP_LOG=info)\n", not_pinned);
    printf("  %lld of %d buffers were born pinned; the pinned copy was never needed\n",
           stat_of("malloc_hinted") - before, HINT_ROUNDS);
}

static void cuda(void) {
    const char *path = getenv("DSPRELOAD_DEMO_CUDART");
    const char *names[] = {path, "libcudart.so.13", "libcudart.so.12"};
    void *h = NULL;
    const char *which = NULL;
    for (size_t i = 0; i < 3 && !h; i++)
        if (names[i]) h = dlopen(which = names[i], RTLD_NOW | RTLD_GLOBAL);
    printf("2. CUDA pinned memory, %d rounds of cudaHostAlloc + cudaFreeHost of 64 MiB:\n", ROUNDS);
    if (!h) {
        printf("  no libcudart on this machine: the CUDA layer has nothing to serve here\n");
        return;
    }
    typedef cudaError_t (*alloc_fn)(void **, size_t, unsigned);
    typedef cudaError_t (*free_fn)(void *);
    /* The global symbol is the shim's hook; the handle's is the library's own. */
    alloc_fn hooked_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cudaHostAlloc");
    free_fn hooked_free = (free_fn)dlsym(RTLD_DEFAULT, "cudaFreeHost");
    alloc_fn real_alloc = (alloc_fn)dlsym(h, "cudaHostAlloc");
    free_fn real_free = (free_fn)dlsym(h, "cudaFreeHost");
    void *p;
    cudaError_t rc = real_alloc(&p, SIZE, 0);
    if (rc != cudaSuccess) {
        printf("  %s: cudaHostAlloc fails here (error %d: no usable GPU driver);\n", which, rc);
        printf("  with dspreload it fails the same way: calls pass through unchanged\n");
        return;
    }
    real_free(p);
    double t = now();
    for (int i = 0; i < ROUNDS; i++) {
        if (real_alloc(&p, SIZE, 0) || real_free(p)) return;
    }
    double without = now() - t;
    t = now();
    for (int i = 0; i < ROUNDS; i++) {
        if (hooked_alloc(&p, SIZE, 0) || hooked_free(p)) return;
    }
    report(path && !strcmp(which, path) ? "alloc + free (libcudart test double):" : "alloc + free:",
           now() - t, without);
}

int main(void) {
    dsp_alloc_ = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    dsp_free_ = (int (*)(void *))dlsym(RTLD_DEFAULT, "dsp_free");
    dsp_is_pinned_ = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "dsp_is_pinned");
    dsp_stats_json_ = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "dsp_stats_json");
    if (!dsp_alloc_ || !dsp_free_ || !dsp_is_pinned_ || !dsp_stats_json_) {
        fprintf(stderr, "dspreload-demo: run me with `dspreload demo` (the shim is not loaded)\n");
        return 2;
    }
    /* Warm memory first: the first touch of fresh memory on a VM costs more
     * than anything measured here. */
    char *warm = mmap(NULL, 1u << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (warm != MAP_FAILED) madvise(warm, 1u << 30, MADV_POPULATE_WRITE), munmap(warm, 1u << 30);

    printf("dspreload demo: the same work with and without the shim, in one process\n\n");
    pinned_buffers();
    cuda();
    malloc_hints();
    printf("4. libaio and cuFile I/O: not in this version of dspreload yet.\n");
    printf("\nWhat dspreload did: %lld pinned blocks served from its pool (%lld pinned anew), "
           "%lld cudaHostAlloc calls served,\n%lld passed through, %lld malloc'd buffers born "
           "pinned; %.0f ms saved in all.\n",
           stat_of("pool_hits"), stat_of("pool_misses"), stat_of("cuda_host_alloc_served"),
           stat_of("cuda_host_alloc_passthrough"), stat_of("malloc_hinted"), saved_total * 1e3);
    printf("Its own account follows (DSP_STATS=1):\n");
    fflush(stdout);
    return 0;
}
