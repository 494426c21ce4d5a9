/* The demo workload (dspreload-demo), run by `dspreload demo` under the shim:
 * the same work done with and without the shim's help, in one process, and
 * what the shim did. Seconds on a 2-core machine without a GPU. */
#include "timing.h"
#include "cufile_types.h"
#include "cuda_types.h"
#include "json_number.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS      20
#define SIZE        ((size_t)64 << 20)
#define HINT_ROUNDS 8 /* each baseline round touches 64 MiB of fresh memory: slow on a VM */

static void *(*dsp_alloc_)(size_t);
static int (*dsp_free_)(void *);
static int (*dsp_is_pinned_)(const void *, size_t);
static int (*dsp_stats_json_)(char *, size_t);

static long long stat_of(const char *key) {
    long long v = dsp_stat_from(dsp_stats_json_, key);
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
    printf("4. Malloc hints (DSP_MALLOC_MIN=16M), %d rounds: a 64 MiB buffer from malloc, filled, "
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

/* libaio: O_DIRECT reads into a buffer at page + 1, which the kernel refuses
 * for its memory alignment. Through the shim's io_submit they are bounced
 * through pinned memory; libaio's own io_submit, reached through a dlopen
 * handle (which the shim does not see), gives the kernel's answer. What a
 * program has today instead is a buffered read, through the page cache. */
typedef int (*submit_fn)(void *, long, struct iocb **);
typedef int (*getevents_fn)(void *, long, long, struct io_event *, struct timespec *);

static long aio_read_one(submit_fn submit, getevents_fn getevents, void *ctx, int fd, char *buf,
                         size_t len, long long off) {
    struct iocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_fildes = (unsigned)fd;
    cb.aio_buf = (uintptr_t)buf;
    cb.aio_nbytes = len;
    cb.aio_offset = off;
    struct iocb *l[1] = {&cb};
    int r = submit(ctx, 1, l);
    if (r != 1) return r < 0 ? r : -EIO;
    struct io_event ev;
    if (getevents(ctx, 1, 1, &ev, NULL) != 1 || ev.obj != (uintptr_t)&cb) return -EIO;
    return (long)ev.res;
}

static void libaio(void) {
    enum { CHUNK = 4 << 20, N = 16 };
    printf("5. libaio, %d O_DIRECT reads of 4 MiB into a buffer at page + 1 (the kernel refuses "
           "such a buffer;\n   without dspreload a program reads through the page cache "
           "instead):\n",
           N);
    void *h = dlopen("libaio.so.1", RTLD_NOW | RTLD_LOCAL);
    submit_fn shim_submit = (submit_fn)dlsym(RTLD_DEFAULT, "io_submit");
    getevents_fn shim_getevents = (getevents_fn)dlvsym(RTLD_DEFAULT, "io_getevents", "LIBAIO_0.4");
    if (!h || !shim_submit || !shim_getevents) {
        printf("  no libaio on this machine: the libaio layer has nothing to serve here\n");
        return;
    }
    int (*setup)(int, void **) = (int (*)(int, void **))dlsym(h, "io_setup");
    int (*destroy)(void *) = (int (*)(void *))dlsym(h, "io_destroy");
    submit_fn real_submit = (submit_fn)dlsym(h, "io_submit");
    getevents_fn real_getevents = (getevents_fn)dlvsym(h, "io_getevents", "LIBAIO_0.4");
    char path[] = "/var/tmp/dspreload-demo-aio.XXXXXX";
    int wfd = mkstemp(path);
    char *buf = raw_alloc(CHUNK + 4096);
    void *ctx = NULL;
    if (wfd < 0 || !buf || !setup || !destroy || !real_submit || !real_getevents ||
        setup(4, &ctx) != 0) {
        printf("  not usable here\n");
        if (wfd >= 0) close(wfd), unlink(path);
        return;
    }
    unlink(path);
    char *mis = buf + 1;
    for (int i = 0; i < N; i++) {
        memset(buf, 'a' + i, CHUNK);
        if (write(wfd, buf, CHUNK) != CHUNK) return;
    }
    fsync(wfd);
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", wfd);
    int dfd = open(self, O_RDONLY | O_DIRECT), bfd = open(self, O_RDONLY);
    if (dfd < 0 || bfd < 0) {
        printf("  this filesystem (/var/tmp) does not take O_DIRECT: nothing to show\n");
        return;
    }
    long r = aio_read_one(real_submit, real_getevents, ctx, dfd, mis, CHUNK, 0);
    printf("  without dspreload: the read completes with %ld (%s)\n", r,
           r == -EINVAL ? "EINVAL: refused" : "accepted here");
    posix_fadvise(bfd, 0, 0, POSIX_FADV_DONTNEED);
    double t = now();
    for (int i = 0; i < N; i++)
        if (pread(bfd, mis, CHUNK, (off_t)i * CHUNK) != CHUNK) return;
    double buffered = now() - t;
    int bad = 0;
    t = now();
    for (int i = 0; i < N; i++) {
        if (aio_read_one(shim_submit, shim_getevents, ctx, dfd, mis, CHUNK, (long long)i * CHUNK) !=
            CHUNK)
            bad++;
        else
            bad += mis[0] != 'a' + i || mis[CHUNK - 1] != 'a' + i;
    }
    double direct = now() - t;
    printf("  %-44s %9.1f ms with dspreload (O_DIRECT, bounced), %.1f ms buffered without\n",
           "64 MiB read from disk:", direct * 1e3, buffered * 1e3);
    printf("  %lld reads bounced through pinned memory, %s\n", stat_of("aio_bounced"),
           bad ? "SOME DATA WRONG" : "every byte as written");
    destroy(ctx);
    close(dfd), close(bfd), close(wfd);
    munmap(buf, CHUNK + 4096);
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
    malloc_hints();
    libaio();
    printf("\nWhat dspreload did: %lld pinned blocks served from its pool (%lld pinned anew), "
           "%lld cudaHostAlloc calls served,\n%lld passed through, %lld malloc'd buffers born "
           "pinned, %lld libaio reads bounced; %.0f ms saved in all.\n",
           stat_of("pool_hits"), stat_of("pool_misses"), stat_of("cuda_host_alloc_served"),
           stat_of("cuda_host_alloc_passthrough"), stat_of("malloc_hinted"), stat_of("aio_bounced"),
           saved_total * 1e3);
    printf("Its own account follows (DSP_STATS=1):\n");
    fflush(stdout);
    return 0;
}
