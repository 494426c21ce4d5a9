/* The demo workload (dspreload-demo), run by `dspreload demo` under the shim:
 * the same work done with and without the shim's help, and what the shim
 * did; in one process but for the libraries' sections (baseline()). Seconds on a 2-core machine
 * without a GPU. Its figures follow launcher/figures.h: work too quick for the clock is repeated
 * until it can be timed, and only work timed on both sides gets a ratio and counts in the total. */
#include "timing.h"
#include "figures.h"
#include "cufile_types.h"
#include "cuda_types.h"
#include "json_number.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
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
/* A section's work was repeated with the shim to be timed: the counts of
 * what it did include the repeats, and the summary says so. */
static int repeated;

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
    if (with_runs > 1) repeated = 1;
    if (with_runs > 1 && without_runs > 1)
        printf("  (each figure the mean of %ld runs with dspreload, %ld without: one run is too "
               "quick to time)\n",
               with_runs, without_runs);
    else if (with_runs > 1 || without_runs > 1)
        printf("  (the figure %s is the mean of %ld runs: one run is too quick to time)\n",
               with_runs > 1 ? "with dspreload" : "without",
               with_runs > 1 ? with_runs : without_runs);
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

/* Sections 2 and 3 time their "without" side in a process of its own, run
 * without the shim (baseline()): in this one, the shim answers dlsym on the
 * library's own handle too (issue 15, KvikIO's way), so the library's
 * functions cannot be reached past it and both sides were the shim's. Each
 * measure_* function does its section's work with the functions this process
 * resolves: the shim's hooks here, the library's own in that process. 0, or
 * -1 with the reason in why. */
#define MEASURE_ARGS struct fig_span *s, long *runs, const char *which, char *why, size_t cap

typedef cudaError_t (*cuda_alloc_fn)(void **, size_t, unsigned);
typedef cudaError_t (*cuda_free_fn)(void *);
struct cuda_calls {
    cuda_alloc_fn alloc;
    cuda_free_fn release;
};

static int cuda_rounds(void *arg) {
    struct cuda_calls *c = arg;
    void *p;
    for (int i = 0; i < ROUNDS; i++)
        if (c->alloc(&p, SIZE, 0) || c->release(p)) return -1;
    return 0;
}

static int measure_cuda(MEASURE_ARGS) {
    struct cuda_calls c = {(cuda_alloc_fn)dlsym(RTLD_DEFAULT, "cudaHostAlloc"),
                           (cuda_free_fn)dlsym(RTLD_DEFAULT, "cudaFreeHost")};
    if (!c.alloc || !c.release)
        return snprintf(why, cap, "%s lacks cudaHostAlloc or cudaFreeHost", which), -1;
    void *p;
    cudaError_t rc = c.alloc(&p, SIZE, 0);
    if (rc != cudaSuccess)
        return snprintf(why, cap, "cudaHostAlloc fails (error %d: no usable GPU driver)", rc), -1;
    c.release(p);
    *s = timed(cuda_rounds, &c, runs);
    if (!(s->secs >= 0))
        return snprintf(why, cap, "cudaHostAlloc or cudaFreeHost failed in the rounds"), -1;
    return 0;
}

/* cuFile reads into pinned memory: the shim reads them itself, straight into
 * the buffer; cuFile (here its test double in the build tree, compat mode)
 * stages them through its bounce buffer. */
typedef ssize_t (*read_fn)(CUfileHandle_t, void *, size_t, off_t, off_t);
struct cufile_reads {
    read_fn read;
    CUfileHandle_t fh;
    char *buf;
};

static int cufile_rounds(void *arg) {
    struct cufile_reads *c = arg;
    for (int i = 0; i < ROUNDS; i++)
        if (c->read(c->fh, c->buf, SIZE, 0, 0) != (ssize_t)SIZE) return -1;
    return 0;
}

/* The pinned buffer: the shim's, or, without it, locked by hand as a
 * program without it would have it. */
static char *pinned_alloc(void) {
    if (dsp_alloc_) return dsp_alloc_(SIZE);
    char *p = raw_alloc(SIZE);
    if (p && mlock(p, SIZE) != 0) munmap(p, SIZE), p = NULL;
    return p;
}

static void pinned_free(char *p) {
    if (dsp_free_)
        dsp_free_(p);
    else
        munlock(p, SIZE), munmap(p, SIZE);
}

static int measure_cufile(MEASURE_ARGS) {
    CUfileError_t (*open_drv)(void) =
        (CUfileError_t(*)(void))dlsym(RTLD_DEFAULT, "cuFileDriverOpen");
    CUfileError_t (*reg)(CUfileHandle_t *, CUfileDescr_t *) =
        (CUfileError_t(*)(CUfileHandle_t *, CUfileDescr_t *))dlsym(RTLD_DEFAULT,
                                                                   "cuFileHandleRegister");
    void (*dereg)(CUfileHandle_t) =
        (void (*)(CUfileHandle_t))dlsym(RTLD_DEFAULT, "cuFileHandleDeregister");
    struct cufile_reads c = {(read_fn)dlsym(RTLD_DEFAULT, "cuFileRead"), NULL, NULL};
    if (!open_drv || !reg || !dereg || !c.read)
        return snprintf(why, cap, "%s lacks the cuFile calls the demo makes", which), -1;
    char tmpl[] = "/tmp/dspreload-demo-XXXXXX";
    int wfd = mkstemp(tmpl);
    if (wfd < 0) return snprintf(why, cap, "no file in /tmp: %s", strerror(errno)), -1;
    unlink(tmpl);
    c.buf = pinned_alloc();
    if (!c.buf) {
        close(wfd);
        return snprintf(why, cap, "no pinned buffer of 64 MiB: %s", strerror(errno)), -1;
    }
    memset(c.buf, 7, SIZE);
    int ok = pwrite(wfd, c.buf, SIZE, 0) == (ssize_t)SIZE && fsync(wfd) == 0;
    /* GPUDirect Storage users open their files with O_DIRECT. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", wfd);
    int fd = open(self, O_RDONLY | O_DIRECT);
    if (fd < 0) fd = open(self, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileError_t e = open_drv();
    if (ok && fd >= 0 && e.err == CU_FILE_SUCCESS) e = reg(&c.fh, &d);
    ok = ok && fd >= 0 && e.err == CU_FILE_SUCCESS && cufile_rounds(&c) == 0; /* warm */
    if (ok) *s = timed(cufile_rounds, &c, runs);
    if (!ok)
        snprintf(why, cap, "cuFileRead fails (error %d)", e.err);
    else if (!(s->secs >= 0))
        snprintf(why, cap, "a cuFileRead failed in the rounds"), ok = 0;
    if (c.fh) dereg(c.fh);
    if (fd >= 0) close(fd);
    close(wfd);
    pinned_free(c.buf);
    return ok ? 0 : -1;
}

static const struct section {
    const char *name, *env, *lib_a, *lib_b, *label, *skipped;
    const char *double_label; /* the label's tail when the build tree's test double serves */
    int (*measure)(MEASURE_ARGS);
} sections[] = {
    {"cuda", "DSPRELOAD_DEMO_CUDART", "libcudart.so.13", "libcudart.so.12", "alloc + free",
     "skipped: no libcudart found (install CUDA; in the build tree the demo uses its test double)",
     " (libcudart test double)", measure_cuda},
    {"cufile", "DSPRELOAD_DEMO_CUFILE", "libcufile.so.0", NULL, "cuFileRead",
     "skipped: no libcufile found (install GPUDirect Storage; in the build tree the demo uses its "
     "test double)",
     " (libcufile test double)", measure_cufile},
};

/* The section's library, as the section finds it; NULL if none. */
static void *section_library(const struct section *sec, const char **which, int *double_) {
    const char *path;
    void *h = open_library(sec->env, sec->lib_a, sec->lib_b, &path, which);
    *double_ = h && path && !strcmp(*which, path);
    return h;
}

/* LD_PRELOAD less the shim (the library dsp_alloc is in), for the process
 * without it; the caller's other preloads stay. */
static void preload_without_shim(char *out, size_t cap) {
    Dl_info info;
    const char *pre = getenv("LD_PRELOAD");
    size_t n = 0;
    out[0] = 0;
    if (!pre || !dladdr((void *)dsp_alloc_, &info) || !info.dli_fname) return;
    char shim[PATH_MAX];
    if (!realpath(info.dli_fname, shim)) snprintf(shim, sizeof shim, "%s", info.dli_fname);
    for (const char *p = pre; *p;) {
        size_t len = strcspn(p, " :");
        char entry[PATH_MAX], real[PATH_MAX];
        snprintf(entry, sizeof entry, "%.*s", (int)len, p);
        int ours = !strcmp(entry, info.dli_fname) || (realpath(entry, real) && !strcmp(real, shim));
        if (len && !ours && n + len + 2 < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ":" : "", entry);
        p += len;
        if (*p) p++;
    }
}

/* Runs this program as `dspreload-demo --without NAME` without the shim and
 * reads the span it timed: 0, or -1 with its reason in why. */
static int baseline(const struct section *sec, struct fig_span *s, long *runs, char *why,
                    size_t cap) {
    extern char **environ;
    char exe[PATH_MAX], preload[8192], preload_var[8200];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return snprintf(why, cap, "/proc/self/exe unreadable"), -1;
    exe[len] = 0;
    preload_without_shim(preload, sizeof preload);
    snprintf(preload_var, sizeof preload_var, "LD_PRELOAD=%s", preload);
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return snprintf(why, cap, "out of memory"), -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    if (preload[0]) env[k++] = preload_var;
    char *argv[] = {exe, "--without", (char *)sec->name, NULL};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return free(env), snprintf(why, cap, "pipe: %s", strerror(errno)), -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return snprintf(why, cap, "cannot run it again: %s", strerror(rc)), -1;
    }
    char out[512];
    size_t got = 0;
    for (ssize_t r; got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got));)
        if (r > 0)
            got += (size_t)r;
        else if (errno != EINTR)
            break;
    out[got] = 0;
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
    out[strcspn(out, "\n")] = 0;
    if (!strncmp(out, "ok ", 3)) {
        char *end;
        s->secs = strtod(out + 3, &end);
        s->res = strtod(end, &end);
        *runs = strtol(end, &end, 10);
        s->timed = (int)strtol(end, &end, 10);
        if (*runs > 0) return 0;
    }
    snprintf(why, cap, "%.200s",
             !strncmp(out, "fail ", 5) ? out + 5 : "its process gave no figure");
    return -1;
}

/* `dspreload-demo --without NAME`: the section's work timed in this
 * process, which the shim is not in; one line on stdout. */
static int without_main(const char *name) {
    clock_res = fig_clock_res(CLOCK_MONOTONIC);
    const struct section *sec = NULL;
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        if (!strcmp(sections[i].name, name)) sec = &sections[i];
    char why[256];
    struct fig_span s;
    long runs = 0;
    const char *which;
    int double_;
    if (!sec)
        snprintf(why, sizeof why, "no section %s", name);
    else if (dsp_alloc_)
        snprintf(why, sizeof why, "the shim is loaded here too");
    else if (!section_library(sec, &which, &double_))
        snprintf(why, sizeof why, "%s", sec->skipped);
    else if (sec->measure(&s, &runs, which, why, sizeof why) == 0) {
        printf("ok %a %a %ld %d\n", s.secs, s.res, runs, s.timed);
        return 0;
    }
    printf("fail %s\n", why);
    return 1;
}

/* Sections 2 and 3: the library's work without the shim (in a process of
 * its own), then with it, here. */
static void library_section(const struct section *sec) {
    const char *which;
    int double_;
    if (!section_library(sec, &which, &double_)) {
        printf("  %s\n", sec->skipped);
        return;
    }
    char why[256], label[64];
    struct fig_span with, without;
    long with_runs = 0, without_runs = 0;
    if (baseline(sec, &without, &without_runs, why, sizeof why) != 0) {
        char why_with[256];
        if (sec->measure(&with, &with_runs, which, why_with, sizeof why_with) == 0)
            printf("  %s: %s without dspreload; it works with it: nothing to compare\n", which,
                   why);
        else if (!strcmp(why, why_with))
            printf("  %s: %s, with dspreload and without: nothing to time\n", which, why);
        else
            printf("  %s: %s without dspreload, %s with it: nothing to time\n", which, why,
                   why_with);
        return;
    }
    if (sec->measure(&with, &with_runs, which, why, sizeof why) != 0) {
        printf("  %s with dspreload: %s: nothing to compare\n", which, why);
        return;
    }
    snprintf(label, sizeof label, "%s%s:", sec->label, double_ ? sec->double_label : "");
    report(label, with, with_runs, without, without_runs);
}

static void cuda(void) {
    printf("2. CUDA pinned memory, %d rounds of cudaHostAlloc + cudaFreeHost of 64 MiB\n   "
           "(without dspreload: in a process of its own, which the shim is not in):\n",
           ROUNDS);
    library_section(&sections[0]);
}

static void cufile(void) {
    printf("3. cuFile, %d cuFileRead calls of 64 MiB from a file into pinned memory\n   "
           "(without dspreload: in a process of its own, which the shim is not in):\n",
           ROUNDS);
    library_section(&sections[1]);
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

int main(int argc, char **argv) {
    dsp_alloc_ = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    dsp_free_ = (int (*)(void *))dlsym(RTLD_DEFAULT, "dsp_free");
    dsp_is_pinned_ = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "dsp_is_pinned");
    dsp_stats_json_ = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "dsp_stats_json");
    if (argc == 3 && !strcmp(argv[1], "--without")) return without_main(argv[2]);
    if (!dsp_alloc_ || !dsp_free_ || !dsp_is_pinned_ || !dsp_stats_json_) {
        fprintf(stderr, "dspreload-demo: run me with `dspreload demo` (the shim is not loaded)\n");
        return 2;
    }
    clock_res = fig_clock_res(CLOCK_MONOTONIC);
    /* Warm memory first: the first touch of fresh memory on a VM costs more
     * than anything measured here. */
    char *warm = mmap(NULL, 1u << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (warm != MAP_FAILED) madvise(warm, 1u << 30, MADV_POPULATE_WRITE), munmap(warm, 1u << 30);

    printf("dspreload demo: the same work with and without the shim\n\n");
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
           "pinned, %lld libaio reads bounced%s;\n%s.\n",
           stat_of("pool_hits"), stat_of("pool_misses"), stat_of("cuda_host_alloc_served"),
           stat_of("cuda_host_alloc_passthrough"), stat_of("malloc_hinted"), stat_of("aio_bounced"),
           repeated ? " (the runs repeated to be timed included)" : "", total);
    printf("Its own account follows (DSP_STATS=1):\n");
    fflush(stdout);
    return 0;
}
