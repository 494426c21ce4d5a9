/* libaio hooks: every iocb is classified once, at submit time.
 *
 * A read or write whose buffer O_DIRECT takes as it is goes to the kernel
 * untouched (zero copy; counted as pinned or not). One that O_DIRECT would
 * refuse for its memory alignment (and a read at a misaligned offset or
 * length, widened to aligned bounds) is sent through a pinned, aligned bounce
 * buffer instead: the kernel sees our own iocb, and io_getevents copies the
 * data back and gives the caller its own iocb and data again. What the policy
 * (DSP_AIO_BOUNCE) does not select, what the shim cannot bounce, and every
 * other opcode passes through unchanged. docs/io.md explains the rules.
 *
 * The shim links no libaio: the real functions are found at the first call,
 * by version (docs/internals.md, "libaio's symbols and conventions"), in a
 * libaio loaded RTLD_LOCAL too; without one, the system calls themselves stand
 * in (libaio's functions are thin wrappers).
 *
 * Here: the real functions, the hooks, and completion. The classification of
 * iocbs is io/aio_classify.c; the table of bounced requests, with its locking
 * and its fork handlers, is io/aio_state.c. */
#include "config.h"
#include "fork.h"
#include "internal.h"
#include "log.h"
#include "manager.h"
#include "stats.h"
#include "symbols.h"
#include "aio_classify.h"
#include "aio_state.h"
#include "bounce.h"
#include "dio.h"
#include "guard.h"
#include "sigmask.h"

#include <errno.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static struct {
    int (*submit)(io_context_t, long, struct iocb **);
    int (*getevents)(io_context_t, long, long, struct io_event *, struct timespec *);
    int (*pgetevents)(io_context_t, long, long, struct io_event *, struct timespec *, sigset_t *);
    int (*cancel)(io_context_t, struct iocb *, struct io_event *);
    int (*destroy)(io_context_t);
} real;

int dsp_fdcalls_bound(void); /* preload/fdcalls.c */

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static _Atomic int ready;
static int active; /* 0: pass everything through unexamined (no safe way to read iocbs) */
/* 1 once resolved, active, under a policy with a fast path (io_submit's one
 * test before it reads an iocb: stored before ready). */
static _Atomic int fast;

/* --- the real functions, or the system calls they wrap -------------------- */

/* A system call with libaio's convention: -errno on failure, errno untouched. */
#define AIO_SYSCALL(...)                                                                           \
    ({                                                                                             \
        int e_ = errno;                                                                            \
        long r_ = syscall(__VA_ARGS__);                                                            \
        if (r_ < 0) r_ = -errno;                                                                   \
        errno = e_;                                                                                \
        (int)r_;                                                                                   \
    })

static int sys_submit(io_context_t ctx, long nr, struct iocb **ios) {
    return AIO_SYSCALL(SYS_io_submit, ctx, nr, ios);
}
static int sys_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                         struct timespec *ts) {
    return AIO_SYSCALL(SYS_io_getevents, ctx, min_nr, nr, ev, ts);
}
static int sys_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                          struct timespec *ts, sigset_t *mask) {
    struct {
        sigset_t *mask;
        size_t size;
    } arg = {mask, _NSIG / 8};
    return AIO_SYSCALL(SYS_io_pgetevents, ctx, min_nr, nr, ev, ts, mask ? &arg : NULL);
}
static int sys_cancel(io_context_t ctx, struct iocb *cb, struct io_event *ev) {
    return AIO_SYSCALL(SYS_io_cancel, ctx, cb, ev);
}
static int sys_destroy(io_context_t ctx) {
    return AIO_SYSCALL(SYS_io_destroy, ctx);
}

#define RESOLVE(field, name, ver)                                                                  \
    do {                                                                                           \
        *(void **)&real.field = dsp_sym_next_v(name, ver, "libaio.so");                            \
        if (!real.field) {                                                                         \
            real.field = sys_##field;                                                              \
            missing++;                                                                             \
        }                                                                                          \
    } while (0)

static void resolve(void) {
    int missing = 0;
    RESOLVE(submit, "io_submit", "LIBAIO_0.1");
    RESOLVE(getevents, "io_getevents", "LIBAIO_0.4");
    RESOLVE(pgetevents, "io_pgetevents", "LIBAIO_0.5");
    RESOLVE(cancel, "io_cancel", "LIBAIO_0.4");
    RESOLVE(destroy, "io_destroy", "LIBAIO_0.4");
    if (missing)
        dsp_info("libaio: %d of 5 functions not found in a loaded libaio: their system calls "
                 "stand in",
                 missing);
    if (!dsp_ensure_init()) {
        dsp_warn("libaio: the manager is not ready: I/O passes through unexamined");
    } else if (dsp_guard_install() == 0) {
        dsp_aio_policy = (int)dsp_opt(DSP_OPT_AIO_BOUNCE);
        /* The fd cache only where its hooks see every change (io/dio.h). */
        if (dsp_fdcalls_bound())
            __atomic_store_n(&dsp_dio_cache_on, 1, __ATOMIC_RELAXED);
        else
            dsp_info("libaio: the program's fd calls do not reach the shim's hooks (another "
                     "definition first, or a sanitizer build): O_DIRECT and alignment are asked "
                     "at each io_submit that needs them");
        active = 1;
        if (dsp_aio_policy == DSP_AIO_BOUNCE_NEVER || dsp_aio_policy == DSP_AIO_BOUNCE_MISALIGNED) {
            dsp_aio_fast_mask = dsp_aio_policy == DSP_AIO_BOUNCE_NEVER ? 0 : DSP_DIO_MAX_ALIGN - 1;
            atomic_store_explicit(&fast, 1, memory_order_release);
        }
        /* Before ready: until then no thread takes tab_mu or bounce's mu. */
        dsp_fork_register(DSP_FORK_AIO, dsp_aio_state_fork_child);
        dsp_fork_register(DSP_FORK_BOUNCE, dsp_bounce_fork_child);
        dsp_add_trimmer(dsp_bounce_trim);
        dsp_info("libaio: DSP_AIO_BOUNCE=%s, DSP_BOUNCE_POOL=%lld bytes",
                 dsp_opt_desc[DSP_OPT_AIO_BOUNCE].choices[dsp_aio_policy],
                 dsp_opt(DSP_OPT_BOUNCE_POOL));
    }
    atomic_store_explicit(&ready, 1, memory_order_release);
}

static inline void ensure_ready(void) {
    if (DSP_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire)))
        pthread_once(&resolve_once, resolve);
}

/* --- submission ----------------------------------------------------------- */

/* Counted per thread (stats.h): no atomic add on a shared line per call. */
static inline void count_classes(const uint64_t c[4], uint64_t n, uint64_t bytes) {
    dsp_stat_add_mine(DSP_ST_aio_iocbs, (uint64_t)n);
    if (c[DSP_AIO_PASS]) dsp_stat_add_mine(DSP_ST_aio_passthrough, c[DSP_AIO_PASS]);
    if (c[DSP_AIO_DIRECT_PINNED])
        dsp_stat_add_mine(DSP_ST_aio_direct_pinned, c[DSP_AIO_DIRECT_PINNED]);
    if (c[DSP_AIO_DIRECT_UNPINNED])
        dsp_stat_add_mine(DSP_ST_aio_direct_unpinned, c[DSP_AIO_DIRECT_UNPINNED]);
    if (c[DSP_AIO_BOUNCED]) {
        dsp_stat_add_mine(DSP_ST_aio_bounced, c[DSP_AIO_BOUNCED]);
        dsp_stat_add_mine(DSP_ST_aio_bounce_bytes, bytes);
    }
}

static void count(const struct dsp_aio_plan *p, long n) {
    uint64_t c[4] = {0, 0, 0, 0}, bytes = 0;
    for (long i = 0; i < n; i++) {
        c[p[i].cls]++;
        bytes += p[i].bounce_bytes;
    }
    count_classes(c, (uint64_t)n, bytes);
}

static void unprepare(struct dsp_aio_plan *p, long from, long to) {
    for (long i = from; i < to; i++)
        if (p[i].st) {
            dsp_aio_state_withdraw(p[i].st);
            dsp_aio_state_put(p[i].st);
            p[i].st = NULL;
        }
}

/* The general path: every iocb read into a plan, bounces prepared. */
static __attribute__((noinline)) int submit_planned(io_context_t ctx, long nr, struct iocb **ios) {
    struct dsp_aio_plan p[DSP_AIO_CHUNK];
    struct iocb *local[DSP_AIO_CHUNK];
    long done = 0;
    while (done < nr) {
        long n = nr - done < DSP_AIO_CHUNK ? nr - done : DSP_AIO_CHUNK;
        int bounced;
        long ok = dsp_aio_classify(ctx, ios + done, n, p, &bounced);
        if (ok == 0 && done) return (int)done;
        if (ok == 0) {
            /* The first iocb cannot be read: the kernel's answer, not ours.
             * It looks at the context first (-EINVAL for one it does not
             * know), then reads the array and the iocb (-EFAULT). */
            int r = real.submit(ctx, 1, ios);
            if (r > 0) count_classes((uint64_t[4]){[DSP_AIO_PASS] = 1}, 1, 0);
            return r;
        }
        struct iocb **arr = ios + done;
        if (bounced) {
            for (long i = 0; i < ok; i++) {
                local[i] = p[i].st ? &p[i].st->kiocb : p[i].user;
                if (p[i].st) dsp_aio_state_publish(p[i].st);
            }
            arr = local;
        }
        int r = real.submit(ctx, ok, arr);
        if (r < 0) {
            unprepare(p, 0, ok);
            return done ? (int)done : r;
        }
        /* Accepted iocbs may already be complete and reaped by another
         * thread: their states are not ours to touch any more. */
        count(p, r);
        if (bounced) unprepare(p, r, ok);
        done += r;
        if (r < ok || ok < n) break;
    }
    return (int)done;
}

/* The counts of the r iocbs a fast classification let through. */
static __attribute__((noinline)) void count_odd(const uint8_t *cls, int r) {
    uint64_t c[4] = {0, 0, 0, 0};
    for (int i = 0; i < r; i++) c[cls[i]]++;
    count_classes(c, (uint64_t)r, 0);
}
static inline void count_fast(const uint8_t *cls, unsigned odd, int r) {
    if (r <= 0) return;
    if (odd) {
        count_odd(cls, r);
        return;
    }
    /* All unpinned reads and writes: two adds to the thread's block. */
    dsp_stat_add_mine2(DSP_ST_aio_iocbs, DSP_ST_aio_direct_unpinned, (uint64_t)r);
}

/* Every call io_submit's fast path does not take: the first ones
 * (resolving), nr outside 1..DSP_AIO_FAST_MAX, a thread whose mask is not
 * known open or is asked at every call (asked here), an iocb that needs the
 * general path (tried: io_submit's classification already said so). Up to
 * DSP_AIO_CHUNK iocbs are still classified the fast way, a part at a time. */
static __attribute__((noinline)) int submit_general(io_context_t ctx, long nr, struct iocb **ios,
                                                    int tried) {
    ensure_ready();
    /* nr < 0 and nr == 0 are the kernel's to answer (-EINVAL, or 0 after
     * the context is checked). */
    if (nr <= 0 || !active) return real.submit(ctx, nr, ios);
    int prev = dsp_guard_enter();
    uint8_t cls[DSP_AIO_CHUNK];
    unsigned odd = 0, o;
    long at = 0;
    if (!tried && dsp_guard_faults_ok && atomic_load_explicit(&fast, memory_order_relaxed) &&
        nr <= DSP_AIO_CHUNK)
        for (; at < nr; at += DSP_AIO_FAST_MAX, odd |= o)
            if (!dsp_aio_fast_classify(ios + at,
                                       nr - at < DSP_AIO_FAST_MAX ? nr - at : DSP_AIO_FAST_MAX,
                                       cls + at, &o))
                break;
    int r;
    if (at >= nr) {
        r = real.submit(ctx, nr, ios);
        count_fast(cls, odd, r);
    } else {
        /* Planned: errno kept (libaio leaves it alone; a refused bounce
         * buffer or fd query must too), and a thread that blocks SIGSEGV or
         * SIGBUS reads the iocbs with checked copies; where those are
         * refused too, nothing is read. */
        int e = errno;
        r = dsp_guard_faults_ok || dsp_guard_checked_ok() ? submit_planned(ctx, nr, ios)
                                                          : real.submit(ctx, nr, ios);
        errno = e;
    }
    dsp_guard_leave(prev);
    return r;
}

DSP_API int io_submit(io_context_t ctx, long nr, struct iocb **ios) {
    /* The common case in a small frame, one test before the iocbs are read,
     * errno untouched: neither the classification nor libaio's io_submit
     * sets it (issue 29: every instruction here is paid once per I/O at a
     * million IOPS; tests/aio: aio_hook_steps counts them). */
    uint8_t cls[DSP_AIO_FAST_MAX];
    unsigned odd;
    if (DSP_UNLIKELY(!atomic_load_explicit(&fast, memory_order_acquire)) ||
        (unsigned long)nr - 1 >= DSP_AIO_FAST_MAX || !dsp_aio_fast_thread())
        return submit_general(ctx, nr, ios, 0);
    if (!dsp_aio_fast_classify(ios, nr, cls, &odd)) return submit_general(ctx, nr, ios, 1);
    int r = real.submit(ctx, nr, ios);
    count_fast(cls, odd, r);
    return r;
}

/* --- completion ----------------------------------------------------------- */

/* A bounced read's bytes into the caller's buffer. In a thread that blocks
 * SIGSEGV or SIGBUS where checked copies are refused, a plain copy: the
 * buffer was probed at submit (docs/io.md). */
static int copy_out(void *dst, const void *src, size_t n) {
    if (dsp_guard_faults_ok || dsp_guard_checked_ok()) return dsp_guard_copy(dst, src, n);
    memcpy(dst, src, n);
    return 0;
}

/* The caller's view of a bounced completion: its iocb, its data, its bytes.
 * Inside dsp_guard_enter/leave. */
static void complete(struct dsp_aio_bstate *s, struct io_event *ev) {
    int64_t res = ev->res;
    if (s->is_read && res > 0) {
        uint64_t got = (uint64_t)res > s->head ? (uint64_t)res - s->head : 0;
        if (got > s->total) got = s->total;
        const char *from = s->buf + s->head;
        uint64_t left = got;
        for (int i = 0; i < s->nseg && left; i++) {
            size_t n = s->seg[i].iov_len < left ? s->seg[i].iov_len : left;
            if (!dsp_guard_plausible((uintptr_t)s->seg[i].iov_base, n) ||
                copy_out(s->seg[i].iov_base, from, n) != 0) {
                got = (uint64_t)-EFAULT;
                break;
            }
            from += n;
            left -= n;
        }
        res = (int64_t)got;
    } else if (!s->is_read && res > (int64_t)s->total) {
        res = (int64_t)s->total;
    }
    ev->res = res;
    ev->obj = (uintptr_t)s->user;
    ev->data = s->kiocb.aio_data;
}

static void finish(struct io_event *ev, long n) {
    if (n <= 0 || dsp_aio_state_idle()) return;
    int e = errno, prev = -1;
    for (long i = 0; i < n; i++) {
        struct dsp_aio_bstate *s = dsp_aio_state_of(ev[i].obj);
        if (!s || !dsp_aio_state_claim(s)) continue;
        if (prev < 0) prev = dsp_guard_enter();
        complete(s, &ev[i]);
        dsp_aio_state_put(s);
    }
    if (prev >= 0) dsp_guard_leave(prev);
    errno = e;
}

static __attribute__((noinline)) int getevents_first(io_context_t ctx, long min_nr, long nr,
                                                     struct io_event *ev, struct timespec *ts) {
    ensure_ready();
    int r = real.getevents(ctx, min_nr, nr, ev, ts);
    finish(ev, r);
    return r;
}

DSP_API int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                         struct timespec *ts) {
    /* Resolving out of line: nothing but ev kept across the real call
     * (issue 29: paid once per I/O). */
    if (DSP_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire)))
        return getevents_first(ctx, min_nr, nr, ev, ts);
    int r = real.getevents(ctx, min_nr, nr, ev, ts);
    finish(ev, r);
    return r;
}

DSP_API int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                          struct timespec *ts, sigset_t *mask) {
    ensure_ready();
    /* A handler that runs meanwhile has mask: io/sigmask.h. */
    int r = DSP_SIGMASK_AROUND(dsp_sigmask_temp(mask), int,
                               real.pgetevents(ctx, min_nr, nr, ev, ts, mask), DSP_SIGMASK_NEVER);
    finish(ev, r);
    return r;
}

DSP_API int io_cancel(io_context_t ctx, struct iocb *cb, struct io_event *ev) {
    ensure_ready();
    if (dsp_aio_state_idle()) return real.cancel(ctx, cb, ev);
    /* The state is pinned across the real call, with tab_mu dropped (no lock
     * of ours is held across a call into libaio): a pinned state is not put
     * back on the free list, so it is not reused for another request whose
     * kiocb the kernel could cancel by its address while it looks for ours.
     * Completed and reaped meanwhile, it is freed at the unpin below. */
    int e = errno;
    uint64_t v;
    struct dsp_aio_bstate *s = dsp_aio_state_pin(ctx, cb, &v);
    int r = real.cancel(ctx, s ? &s->kiocb : cb, ev);
    if (!s) {
        errno = e;
        return r;
    }
    /* Kernels before 4.19 reported the cancelled request in *ev; later ones
     * answer -EINPROGRESS and deliver it through io_getevents. */
    int mine = r == 0 && dsp_aio_state_claim_exact(s, v);
    dsp_aio_state_unpin(s);
    if (mine) {
        int prev = dsp_guard_enter();
        complete(s, ev);
        dsp_guard_leave(prev);
        dsp_aio_state_put(s);
    }
    errno = e;
    return r;
}

DSP_API int io_destroy(io_context_t ctx) {
    ensure_ready();
    if (dsp_aio_state_idle()) return real.destroy(ctx);
    /* Collected before the real call: the context's address is free for
     * another io_setup the moment it returns. */
    uint32_t seen;
    uint64_t token = dsp_aio_state_mark(ctx, &seen);
    int r = real.destroy(ctx); /* waits for the I/O in flight */
    if (r != 0) return r;
    int e = errno;
    dsp_aio_state_release_marked(token, seen);
    errno = e;
    return r;
}

/* The libaio 0.1 forms: io_getevents without min_nr, io_cancel without the event. */
DSP_API int dsp_aio_getevents_0_1(io_context_t ctx, long nr, struct io_event *ev,
                                  struct timespec *ts) {
    return io_getevents(ctx, 1, nr, ev, ts);
}
DSP_API int dsp_aio_cancel_0_1(io_context_t ctx, struct iocb *cb) {
    struct io_event ev;
    return io_cancel(ctx, cb, &ev);
}
__asm__(".symver dsp_aio_getevents_0_1, io_getevents@LIBAIO_0.1, remove");
__asm__(".symver dsp_aio_cancel_0_1, io_cancel@LIBAIO_0.1, remove");
