/* The demo workload (dspreload-demo), run by `dspreload demo` under the shim:
 * the same work done with and without the shim's help, in one process, and
 * what the shim did. Seconds on a 2-core machine without a GPU. */
#include "../bench/timing.h"
#include "../io/cufile_types.h"
#include "../preload/cuda_types.h"
#include "json_number.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20
#define SIZE   ((size_t)64 << 20)

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
        void *p;
        if (posix_memalign(&p, 4096, SIZE) || mlock(p, SIZE)) {
            perror("  baseline");
            return;
        }
        munlock(p, SIZE);
        free(p);
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

/* The first of the test double named by env_name (build tree) and the given
 * libraries that loads, globally (so the shim's hooks reach it); NULL if none. */
static void *open_library(const char *env_name, const char *a, const char *b, const char **path,
                          const char **which) {
    const char *names[] = { *path = getenv(env_name), a, b};
    void *h = NULL;
    for (size_t i = 0; i < 3 && !h; i++)
        if (names[i]) h = dlopen(*which = names[i], RTLD_NOW | RTLD_GLOBAL);
    return h;
}

static void cuda(void) {
    const char *path, *which;
    void *h =
        open_library("DSPRELOAD_DEMO_CUDART", "libcudart.so.13", "libcudart.so.12", &path, &which);
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

/* cuFile reads into pinned memory: the shim reads them itself, straight into
 * the buffer; cuFile (here its test double in the build tree, compat mode)
 * stages them through its bounce buffer. */
static void cufile(void) {
    const char *path, *which;
    void *h = open_library("DSPRELOAD_DEMO_CUFILE", "libcufile.so.0", NULL, &path, &which);
    printf("3. cuFile, %d cuFileRead calls of 64 MiB from a file into pinned memory:\n", ROUNDS);
    if (!h) {
        printf("  no libcufile on this machine: the cuFile layer has nothing to serve here\n");
        return;
    }
    typedef ssize_t (*read_fn)(CUfileHandle_t, void *, size_t, off_t, off_t);
    /* The global symbols are the shim's hooks; the handle's are the library's own. */
    CUfileError_t (*open_drv)(void) =
        (CUfileError_t(*)(void))dlsym(RTLD_DEFAULT, "cuFileDriverOpen");
    CUfileError_t (*reg)(CUfileHandle_t *, CUfileDescr_t *) =
        (CUfileError_t(*)(CUfileHandle_t *, CUfileDescr_t *))dlsym(RTLD_DEFAULT,
                                                                   "cuFileHandleRegister");
    void (*dereg)(CUfileHandle_t) =
        (void (*)(CUfileHandle_t))dlsym(RTLD_DEFAULT, "cuFileHandleDeregister");
    read_fn hooked = (read_fn)dlsym(RTLD_DEFAULT, "cuFileRead");
    read_fn real = (read_fn)dlsym(h, "cuFileRead");
    char tmpl[] = "/tmp/dspreload-demo-XXXXXX";
    int wfd = mkstemp(tmpl);
    char *buf = dsp_alloc_(SIZE);
    if (!open_drv || !reg || !dereg || !hooked || !real || wfd < 0 || !buf) {
        printf("  %s: not usable here\n", which);
        if (wfd >= 0) close(wfd), unlink(tmpl);
        if (buf) dsp_free_(buf);
        return;
    }
    unlink(tmpl);
    memset(buf, 7, SIZE);
    int ok = pwrite(wfd, buf, SIZE, 0) == (ssize_t)SIZE && fsync(wfd) == 0;
    /* GPUDirect Storage users open their files with O_DIRECT. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", wfd);
    int fd = open(self, O_RDONLY | O_DIRECT);
    if (fd < 0) fd = open(self, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    CUfileError_t e = open_drv();
    if (ok && fd >= 0 && e.err == CU_FILE_SUCCESS) e = reg(&fh, &d);
    ok = ok && fd >= 0 && e.err == CU_FILE_SUCCESS && real(fh, buf, SIZE, 0, 0) == (ssize_t)SIZE &&
         hooked(fh, buf, SIZE, 0, 0) == (ssize_t)SIZE; /* warm both paths */
    double t = now(), without = 0;
    for (int i = 0; ok && i < ROUNDS; i++) ok = real(fh, buf, SIZE, 0, 0) == (ssize_t)SIZE;
    without = now() - t;
    t = now();
    for (int i = 0; ok && i < ROUNDS; i++) ok = hooked(fh, buf, SIZE, 0, 0) == (ssize_t)SIZE;
    if (ok)
        report(path && !strcmp(which, path) ? "cuFileRead (libcufile test double):" : "cuFileRead:",
               now() - t, without);
    else
        printf("  %s: cuFileRead fails here (error %d); with dspreload it fails the same way\n",
               which, e.err);
    if (fh) dereg(fh);
    if (fd >= 0) close(fd);
    close(wfd);
    dsp_free_(buf);
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
    cufile();
    printf("4. Malloc hints and libaio I/O: not in this version of dspreload yet.\n");
    printf("\nWhat dspreload did: %lld pinned blocks served from its pool (%lld pinned anew), "
           "%lld cudaHostAlloc calls served,\n%lld passed through; %.0f ms saved in all.\n",
           stat_of("pool_hits"), stat_of("pool_misses"), stat_of("cuda_host_alloc_served"),
           stat_of("cuda_host_alloc_passthrough"), saved_total * 1e3);
    printf("Its own account follows (DSP_STATS=1):\n");
    fflush(stdout);
    return 0;
}
