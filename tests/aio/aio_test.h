/* For the libaio tests: Criterion programs linked with the real libaio and run
 * under LD_PRELOAD=libdspreload.so, on real files (data, not holes) on the
 * ext4 disk and on tmpfs. The raw system calls (which the shim cannot see)
 * serve as the "without the shim" answer where one is needed. */
#ifndef DSP_AIO_TEST_H
#define DSP_AIO_TEST_H

#include "json_number.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FILE_SIZE (8u << 20)

static inline unsigned char pattern(uint64_t off) {
    return (unsigned char)(off * 131 + (off >> 9) * 7 + 1);
}

/* A file of FILE_SIZE pattern bytes (or size bytes) in dir; returns its path (static). */
static inline const char *make_file(const char *dir, size_t size) {
    static char path[256];
    snprintf(path, sizeof path, "%s/dsp-aio-%d-XXXXXX", dir, getpid());
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp in %s: %s", dir, strerror(errno));
    unlink(path); /* gone at exit; reopened through /proc */
    char *buf = malloc(1 << 20);
    for (size_t at = 0; at < size; at += 1 << 20) {
        size_t n = size - at < (1u << 20) ? size - at : 1u << 20;
        for (size_t i = 0; i < n; i++) buf[i] = (char)pattern(at + i);
        cr_assert_eq(pwrite(fd, buf, n, (off_t)at), (ssize_t)n);
    }
    free(buf);
    fsync(fd);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return path;
}

static inline int open_direct(const char *path, int flags) {
    int fd = open(path, flags | O_DIRECT);
    cr_assert(fd >= 0, "open O_DIRECT %s: %s", path, strerror(errno));
    return fd;
}

static inline long long stat_of(const char *key) {
    int (*json)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "dsp_stats_json");
    cr_assert(json, "dsp_stats_json not found: run under LD_PRELOAD=libdspreload.so");
    return dsp_stat_from(json, key);
}

static inline void *pinned_alloc(size_t n) {
    void *(*a)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    cr_assert(a);
    void *p = a(n);
    cr_assert(p, "dsp_alloc(%zu) failed", n);
    return p;
}

/* An unpinned, page-aligned buffer of n bytes. */
static inline char *plain_alloc(size_t n) {
    void *p = mmap(NULL, n + 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(p != MAP_FAILED);
    return p;
}

/* A buffer at page + 1 whose page-sized pieces are not multiples of 512: the
 * kernel refuses it for O_DIRECT (it checks each segment: docs/internals.md,
 * "O_DIRECT alignment and end of file"), so the shim bounces it. */
static inline char *misaligned(size_t n) {
    return plain_alloc(n + 1) + 1;
}

static inline io_context_t new_ctx(int depth) {
    io_context_t ctx = 0;
    cr_assert_eq(io_setup(depth, &ctx), 0);
    return ctx;
}

/* Submits one iocb, checked to be taken; its event is the caller's to reap. */
static inline void submit_one(io_context_t ctx, struct iocb *cb) {
    struct iocb *list[1] = {cb};
    int r = io_submit(ctx, 1, list);
    cr_assert_eq(r, 1, "io_submit: %d (%s)", r, strerror(-r));
}

/* Submits one iocb and waits for its event: the event's res, with obj and
 * data checked to be the caller's. */
static inline long run_one(io_context_t ctx, struct iocb *cb) {
    void *data = cb->data;
    submit_one(ctx, cb);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq(ev.obj, cb, "event obj is not the caller's iocb");
    cr_assert_eq(ev.data, data, "event data is not the caller's");
    return (long)ev.res;
}

static inline void check_pattern(const char *buf, uint64_t off, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] != pattern(off + i))
            cr_assert_fail("byte %zu (file offset %llu): %u, want %u", i,
                           (unsigned long long)(off + i), (unsigned char)buf[i], pattern(off + i));
}

/* Reads n bytes at off into buf with cb (run_one) and checks that all n came,
 * and are the file's. */
static inline void read_checked(io_context_t ctx, struct iocb *cb, int fd, char *buf, size_t n,
                                long long off) {
    io_prep_pread(cb, fd, buf, n, off);
    cr_assert_eq(run_one(ctx, cb), (long)n);
    check_pattern(buf, (uint64_t)off, n);
}

/* A seccomp filter on the calling process that answers EPERM to system
 * call nr, as some container profiles do. */
static inline void refuse_syscall(long nr) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof *f, f};
    cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0, "seccomp: %s",
                 strerror(errno));
}

#endif
