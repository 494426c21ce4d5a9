/* The demo workload (dspreload-demo), run by `dspreload demo` under the shim:
 * the same work done with and without the shim's help, in one process, and
 * what the shim did. Seconds on a 2-core machine without a GPU. Its figures
 * follow launcher/figures.h: work too quick for the clock is repeated until
 * it can be timed, and only work timed on both sides gets a ratio and counts
 * in the total. */
#include "timing.h"
#include "figures.h"
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

/* The resolution of CLOCK_MONOTONIC, which now() reads (bench/timing.h). */
static double clock_res;

/* What the sections timed on both sides saved, and to what resolution. */
static double saved_total, saved_res;
static int saved_sections;

/* A section's stated work done once (its ROUNDS rounds): 0, or -1 when it
 * failed (having said why). */
typedef int (*work_fn)(void *arg);

/* A span of work timed once: a timing if it lasted fig_min_timed. */
static struct fig_span span_of(double secs) {
    return (struct fig_span){secs, clock_res, secs >= fig_min_timed(clock_res)};
}

/* Does work until the runs together have taken long enough to be timed: 10
 * ms, and fig_min_timed of the clock, unless a second has passed. The span is
 * the mean of *runs runs, to the clock's resolution over their number; not
 * measured (secs < 0) when a run failed. The alloc + free of the libcudart
 * double takes microseconds: once, it reads 0.0 ms against 0.0 ms. */
#define TIMED_ENOUGH  10e-3
#define TIMED_AT_MOST 1.0
static struct fig_span timed(work_fn work, void *arg, long *runs) {
    double enough =
        fig_min_timed(clock_res) > TIMED_ENOUGH ? fig_min_timed(clock_res) : TIMED_ENOUGH;
    double t = now(), took;
    long n = 0, batch = 1;
    for (;;) {
        for (long i = 0; i < batch; i++)
            if (work(arg)) return *runs = n, (struct fig_span){-1, 0, 0};
        n += batch;
        took = now() - t;
        if (took >= enough || took >= TIMED_AT_MOST || n >= (1L << 24)) break;
        batch = n; /* doubles the runs so far */
    }
    *runs = n;
    return (struct fig_span){took / (double)n, clock_res / (double)n,
                             took >= fig_min_timed(clock_res)};
}

/* The baselines allocate with mmap, which is what glibc's malloc and
 * posix_memalign do for 64 MiB: in this process malloc hints are on, and
 * would pin the baseline's buffers too. */
static void *raw_alloc(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* One line: both spans, and their ratio (how many times faster with the
 * shim) only where both were timed; then how many runs each figure is the
 * mean of, where more than one. */
static void report(const char *what, struct fig_span with, long with_runs, struct fig_span without,
                   long without_runs) {
    char a[48], b[48], r[24];
    printf("  %-36s %9s with dspreload, %9s without", what, fig_span_text(a, sizeof a, with),
           fig_span_text(b, sizeof b, without));
    if (fig_both_timed(with, without)) {
        printf(" (%s)", fig_ratio(r, sizeof r, without.secs / with.secs));
        saved_total += without.secs - with.secs;
        saved_res += without.res + with.res;
        saved_sections++;
    }
    printf("\n");
    if (with_runs > 1 || without_runs > 1)
        printf("  (each figure the mean of %ld runs with dspreload, %ld without: one run is too "
               "quick to time)\n",
               with_runs, without_runs);
}

/* Both sides of a section: without the shim's help first, as before. */
static void compare(const char *what, work_fn with, work_fn without, void *arg) {
    long with_runs = 0, without_runs = 0;
    struct fig_span b = timed(without, arg, &without_runs);
    if (!(b.secs >= 0)) return;
    struct fig_span a = timed(with, arg, &with_runs);
    if (!(a.secs >= 0)) return;
    report(what, a, with_runs, b, without_runs);
}

static int pin_without(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        void *p = raw_alloc(SIZE);
        if (!p || mlock(p, SIZE)) {
            perror("  baseline");
            if (p) munmap(p, SIZE);
            return -1;
        }
        munlock(p, SIZE);
        munmap(p, SIZE);
    }
    return 0;
}

static int pin_with(void *arg) {
    int *unpinned = arg;
    for (int i = 0; i < ROUNDS; i++) {
        char *p = dsp_alloc_(SIZE);
        if (!p) {
            perror("  dsp_alloc");
            return -1;
        }
        *unpinned += !dsp_is_pinned_(p + 4096, 1 << 20);
        dsp_free_(p);
    }
    return 0;
}

static void pinned_buffers(void) {
    printf("1. Pinned staging buffers, %d rounds of 64 MiB (DeepSpeed pins with posix_memalign + "
           "mlock):\n",
           ROUNDS);
    int unpinned = 0;
    compare("pin + unpin, 64 MiB:", pin_with, pin_without, &unpinned);
    if (unpinned) printf("  (%d slices were not reported pinned!)\n", unpinned);
}

/* Malloc hints: `dspreload demo` sets DSP_MALLOC_MIN=16M, so the malloc
 * below is born pinned and pin_memory() would hand it back as it is. Without
 * them, pinning a malloc'd buffer means a second, pinned buffer and a copy
 * (what torch's pin_memory() does). */
/* torch keeps its pinned buffer cached: one, reused, counted once. */
static int hints_without(void *arg) {
    (void)arg;
    char *pinned = raw_alloc(SIZE);
    if (!pinned || mlock(pinned, SIZE)) {
        perror("  baseline");
        if (pinned) munmap(pinned, SIZE);
        return -1;
    }
    for (int i = 0; i < HINT_ROUNDS; i++) {
        char *buf = raw_alloc(SIZE);
        if (!buf) {
            perror("  baseline");
            munmap(pinned, SIZE);
            return -1;
        }
        memset(buf, i, SIZE);
        memcpy(pinned, buf, SIZE);
        munmap(buf, SIZE);
    }
    munlock(pinned, SIZE);
    munmap(pinned, SIZE);
    return 0;
}

struct hinted {
    int buffers, not_pinned;
};

static int hints_with(void *arg) {
    struct hinted *h = arg;
    for (int i = 0; i < HINT_ROUNDS; i++) {
        char *buf = malloc(SIZE);
        if (!buf) {
            perror("  malloc");
            return -1;
        }
        memset(buf, i, SIZE);
        h->buffers++;
        h->not_pinned += !dsp_is_pinned_(buf, SIZE); /* what is_pinned() finds */
        free(buf);
    }
    return 0;
}

static void malloc_hints(void) {
    printf("4. Malloc hints (DSP_MALLOC_MIN=16M), %d rounds: a 64 MiB buffer from malloc, filled, "
           "then pinned\n   (without them, pin_memory() copies it into a pinned buffer torch keeps "
           "cached):\n",
           HINT_ROUNDS);
    if (!getenv("DSP_MALLOC_MIN")) {
        printf("  skipped: malloc hints are off in this run (DSP_MALLOC_MIN unset)\n");
        return;
    }
    long long before = stat_of("malloc_hinted");
    struct hinted h = {0, 0};
    compare("malloc + fill + pin, 64 MiB:", hints_with, hints_without, &h);
    if (!h.buffers) return;
    if (h.not_pinned)
        printf("  (%d buffers were not born pinned: see DSP_LOG=info)\n", h.not_pinned);
    printf("  %lld of %d buffers were born pinned; the pinned copy was never needed\n",
           stat_of("malloc_hinted") - before, h.buffers);
}

/* The first of the test double named by env_name (build tree) and the given
 * libraries that loads, globally (so the shim's hooks reach it); NULL if none.
 * env_name set but empty: none, as on a machine without the library (the
 * test of an installed demo, tests/launcher/demo.sh). */
static void *open_library(const char *env_name, const char *a, const char *b, const char **path,
                          const char **which) {
    const char *names[] = { *path = getenv(env_name), a, b};
    void *h = NULL;
    if (*path && !**path) return NULL;
    for (size_t i = 0; i < 3 && !h; i++)
        if (names[i]) h = dlopen(*which = names[i], RTLD_NOW | RTLD_GLOBAL);
    return h;
}

typedef cudaError_t (*cuda_alloc_fn)(void **, size_t, unsigned);
typedef cudaError_t (*cuda_free_fn)(void *);
struct cuda_calls {
    cuda_alloc_fn hooked_alloc, real_alloc;
    cuda_free_fn hooked_free, real_free;
};

static int cuda_rounds(cuda_alloc_fn alloc, cuda_free_fn release) {
    void *p;
    for (int i = 0; i < ROUNDS; i++)
        if (alloc(&p, SIZE, 0) || release(p)) {
            printf("  cudaHostAlloc or cudaFreeHost failed in the middle of the rounds\n");
            return -1;
        }
    return 0;
}

static int cuda_without(void *arg) {
    struct cuda_calls *c = arg;
    return cuda_rounds(c->real_alloc, c->real_free);
}

static int cuda_with(void *arg) {
    struct cuda_calls *c = arg;
    return cuda_rounds(c->hooked_alloc, c->hooked_free);
}

static void cuda(void) {
    const char *path, *which;
    void *h =
        open_library("DSPRELOAD_DEMO_CUDART", "libcudart.so.13", "libcudart.so.12", &path, &which);
    printf("2. CUDA pinned memory, %d rounds of cudaHostAlloc + cudaFreeHost of 64 MiB:\n", ROUNDS);
    if (!h) {
        printf("  skipped: no libcudart found (install CUDA; in the build tree the demo uses its "
               "test double)\n");
        return;
    }
    /* The global symbol is the shim's hook; the handle's is the library's own. */
    struct cuda_calls c = {
        .hooked_alloc = (cuda_alloc_fn)dlsym(RTLD_DEFAULT, "cudaHostAlloc"),
        .real_alloc = (cuda_alloc_fn)dlsym(h, "cudaHostAlloc"),
        .hooked_free = (cuda_free_fn)dlsym(RTLD_DEFAULT, "cudaFreeHost"),
        .real_free = (cuda_free_fn)dlsym(h, "cudaFreeHost"),
    };
    if (!c.hooked_alloc || !c.real_alloc || !c.hooked_free || !c.real_free) {
        printf("  skipped: %s lacks cudaHostAlloc or cudaFreeHost\n", which);
        return;
    }
    void *p;
    cudaError_t rc = c.real_alloc(&p, SIZE, 0);
    if (rc != cudaSuccess) {
        printf("  %s: cudaHostAlloc fails here (error %d: no usable GPU driver);\n", which, rc);
        printf("  with dspreload it fails the same way (calls pass through unchanged): nothing "
               "to time\n");
        return;
    }
    c.real_free(p);
    compare(path && !strcmp(which, path) ? "alloc + free (libcudart test double):"
                                         : "alloc + free:",
            cuda_with, cuda_without, &c);
}

/* cuFile reads into pinned memory: the shim reads them itself, straight into
 * the buffer; cuFile (here its test double in the build tree, compat mode)
 * stages them through its bounce buffer. */
typedef ssize_t (*read_fn)(CUfileHandle_t, void *, size_t, off_t, off_t);
struct cufile_reads {
    read_fn fn;
    CUfileHandle_t fh;
    char *buf;
};

static int cufile_rounds(read_fn fn, struct cufile_reads *c) {
    for (int i = 0; i < ROUNDS; i++)
        if (fn(c->fh, c->buf, SIZE, 0, 0) != (ssize_t)SIZE) {
            printf("  a cuFileRead failed in the middle of the rounds\n");
            return -1;
        }
    return 0;
}

static int cufile_without(void *arg) {
    struct cufile_reads *c = arg;
    return cufile_rounds(c[1].fn, c);
}

static int cufile_with(void *arg) {
    struct cufile_reads *c = arg;
    return cufile_rounds(c[0].fn, c);
}

static void cufile(void) {
    const char *path, *which;
    void *h = open_library("DSPRELOAD_DEMO_CUFILE", "libcufile.so.0", NULL, &path, &which);
    printf("3. cuFile, %d cuFileRead calls of 64 MiB from a file into pinned memory:\n", ROUNDS);
    if (!h) {
        printf("  skipped: no libcufile found (install GPUDirect Storage; in the build tree the "
               "demo uses its test double)\n");
        return;
    }
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
    /* [0] the shim's, [1] the library's own, on the same handle and buffer. */
    struct cufile_reads c[2] = {{hooked, fh, buf}, {real, fh, buf}};
    if (ok)
        compare(path && !strcmp(which, path) ? "cuFileRead (libcufile test double):"
                                             : "cuFileRead:",
                cufile_with, cufile_without, c);
    else
        printf("  %s: cuFileRead fails here (error %d); with dspreload it fails the same way: "
               "nothing to time\n",
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
        printf("  skipped: no libaio found (install libaio1)\n");
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
        printf("  skipped: libaio is not usable here\n");
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
        printf("  skipped: this filesystem (/var/tmp) does not take O_DIRECT\n");
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
    /* Not the same work on both sides (the read without the shim is refused):
     * both times, no ratio, and not in the total. Once each: a second
     * buffered read would come from the page cache. */
    char a[48], b[48];
    printf("  64 MiB read from disk: %s with dspreload (O_DIRECT, bounced);\n"
           "  without, through the page cache: %s (not the same work: no ratio, not in the "
           "total)\n",
           fig_span_text(a, sizeof a, span_of(direct)),
           fig_span_text(b, sizeof b, span_of(buffered)));
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
    clock_res = fig_clock_res(CLOCK_MONOTONIC);
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
    /* The total is of the sections timed on both sides, to the sum of their
     * resolutions; a negative one is time lost. */
    char total[96], t[48];
    if (!saved_sections)
        snprintf(total, sizeof total, "no section was timed on both sides");
    else
        snprintf(total, sizeof total, "%s %s in all (%d section%s timed on both sides)",
                 fig_time(t, sizeof t, saved_total < 0 ? -saved_total : saved_total, saved_res),
                 saved_total < 0 ? "lost" : "saved", saved_sections, saved_sections > 1 ? "s" : "");
    printf("\nWhat dspreload did: %lld pinned blocks served from its pool (%lld pinned anew), "
           "%lld cudaHostAlloc calls served,\n%lld passed through, %lld malloc'd buffers born "
           "pinned, %lld libaio reads bounced;\n%s.\n",
           stat_of("pool_hits"), stat_of("pool_misses"), stat_of("cuda_host_alloc_served"),
           stat_of("cuda_host_alloc_passthrough"), stat_of("malloc_hinted"), stat_of("aio_bounced"),
           total);
    printf("Its own account follows (DSP_STATS=1):\n");
    fflush(stdout);
    return 0;
}
