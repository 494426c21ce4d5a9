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
 * The table of bounced requests, with its locking and its fork handlers, is
 * io/aio_state.c. */
#include "config.h"
#include "fork.h"
#include "internal.h"
#include "log.h"
#include "manager.h"
#include "registry.h"
#include "stats.h"
#include "symbols.h"
#include "aio_state.h"
#include "bounce.h"
#include "dio.h"
#include "guard.h"

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

#define CHUNK    128 /* iocbs classified and submitted per real call */
#define FD_CACHE 8   /* distinct fds queried per io_submit */

enum cls { C_PASS = 0, C_DIRECT_PINNED, C_DIRECT_UNPINNED, C_BOUNCED };

static struct {
    int (*submit)(io_context_t, long, struct iocb **);
    int (*getevents)(io_context_t, long, long, struct io_event *, struct timespec *);
    int (*pgetevents)(io_context_t, long, long, struct io_event *, struct timespec *, sigset_t *);
    int (*cancel)(io_context_t, struct iocb *, struct io_event *);
    int (*destroy)(io_context_t);
} real;

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static _Atomic int ready;
static int active; /* 0: pass everything through unexamined (no safe way to read iocbs) */
static int policy;

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
        policy = (int)dsp_opt(DSP_OPT_AIO_BOUNCE);
        active = 1;
        /* Before ready: until then no thread takes tab_mu or bounce's mu. */
        static const struct dsp_fork_ops aio_fork = {dsp_aio_state_fork_prepare,
                                                     dsp_aio_state_fork_parent,
                                                     dsp_aio_state_fork_child},
                                         bounce_fork = {dsp_bounce_fork_prepare,
                                                        dsp_bounce_fork_parent,
                                                        dsp_bounce_fork_child};
        dsp_fork_register(DSP_FORK_AIO, &aio_fork);
        dsp_fork_register(DSP_FORK_BOUNCE, &bounce_fork);
        dsp_add_trimmer(dsp_bounce_trim);
        dsp_info("libaio: DSP_AIO_BOUNCE=%s, DSP_BOUNCE_POOL=%lld bytes",
                 dsp_opt_desc[DSP_OPT_AIO_BOUNCE].choices[policy], dsp_opt(DSP_OPT_BOUNCE_POOL));
    }
    atomic_store_explicit(&ready, 1, memory_order_release);
}

static inline void ensure_ready(void) {
    if (DSP_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire)))
        pthread_once(&resolve_once, resolve);
}

/* --- classification ------------------------------------------------------- */

struct plan {
    struct iocb *user;
    uint64_t buf, nbytes;
    int64_t off;
    uint32_t fd;
    uint16_t op;
    uint8_t cls;
    struct dsp_aio_bstate *st;
    uint64_t bounce_bytes; /* counted after submission, when st may be another's */
};

struct fdinfo {
    int fd, direct;
    struct dsp_dio_align a;
};

/* O_DIRECT and alignment of fd, once per io_submit: 1 when O_DIRECT is on. */
static int fd_query(int fd, struct fdinfo *cache, int *n, struct dsp_dio_align *a) {
    for (int i = 0; i < *n; i++)
        if (cache[i].fd == fd) {
            *a = cache[i].a;
            return cache[i].direct;
        }
    int e = errno;
    struct fdinfo fi = {fd, dsp_dio_is_direct(fd) == 1, {0, 0}};
    if (fi.direct && dsp_dio_align(fd, &fi.a) != 0) fi.direct = 0;
    errno = e;
    if (*n < FD_CACHE) cache[(*n)++] = fi;
    *a = fi.a;
    return fi.direct;
}

static int is_data(uint16_t op) {
    return op == IOCB_CMD_PREAD || op == IOCB_CMD_PWRITE || op == IOCB_CMD_PREADV ||
           op == IOCB_CMD_PWRITEV;
}
static int is_read(uint16_t op) {
    return op == IOCB_CMD_PREAD || op == IOCB_CMD_PREADV;
}
static int is_vec(uint16_t op) {
    return op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
}

/* The segments of a data iocb, read under the guard: up to DSP_AIO_MAX_SEGS
 * copied into seg, all of them summed up. 0, or -EFAULT when the iovec array
 * cannot be read (the kernel refuses the iocb then too). */
struct segs {
    struct iovec seg[DSP_AIO_MAX_SEGS];
    int n;
    int pinned;
    uint64_t bits; /* every base and length ORed: their common alignment */
    uint64_t total;
    int huge; /* a length over DSP_MAX_RW, or a sum that is: never bounced */
};
static inline void seg_add(struct segs *g, int i, struct iovec one) {
    if (i < DSP_AIO_MAX_SEGS) g->seg[i] = one;
    g->bits |= (uintptr_t)one.iov_base | one.iov_len;
    /* Each length is at most DSP_MAX_RW here, so the sum cannot wrap. */
    if (one.iov_len > DSP_MAX_RW || (g->total += one.iov_len) > DSP_MAX_RW) g->huge = 1;
    if (g->pinned && !g->huge) g->pinned = dsp_reg_contains((uintptr_t)one.iov_base, one.iov_len);
}

static int scan_segs(const struct plan *p, struct segs *g) {
    g->pinned = 1;
    g->bits = g->total = 0;
    g->huge = 0;
    if (!is_vec(p->op)) {
        g->seg[0] = (struct iovec){(void *)(uintptr_t)p->buf, p->nbytes};
        g->n = 1;
        g->bits = p->buf | p->nbytes;
        g->total = p->nbytes;
        g->huge = p->nbytes > DSP_MAX_RW;
        g->pinned = !g->huge && dsp_reg_contains(p->buf, p->nbytes);
        return 0;
    }
    g->n = (int)p->nbytes;
    const struct iovec *v = (const struct iovec *)(uintptr_t)p->buf;
    if (!dsp_guard_plausible((uintptr_t)v, sizeof *v * (size_t)g->n)) return -EFAULT;
    if (!dsp_guard_faults_ok) {
        /* Checked copies, a piece at a time (the kernel too refuses the
         * whole array when any of it cannot be read). */
        struct iovec part[64];
        for (int at = 0; at < g->n; at += 64) {
            int k = g->n - at < 64 ? g->n - at : 64;
            if (dsp_guard_copy(part, v + at, sizeof *v * (size_t)k) != 0) return -EFAULT;
            for (int i = 0; i < k; i++) seg_add(g, at + i, part[i]);
        }
        return 0;
    }
    int failed;
    DSP_GUARD_BEGIN(failed)
    for (int i = 0; i < g->n; i++) {
        seg_add(g, i, v[i]);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    DSP_GUARD_END();
    return failed ? -EFAULT : 0;
}

/* Fills s (a fresh state) for plan p with segments seg: 0, or -1 to pass the
 * iocb through unchanged. */
static int bounce_prepare(struct dsp_aio_bstate *s, const struct plan *p, const struct iovec *seg,
                          int nseg, size_t total, const struct dsp_dio_align *a) {
    if (dsp_guard_copy(&s->kiocb, p->user, sizeof s->kiocb) != 0) return -1;
    s->user = p->user;
    s->is_read = is_read(p->op);
    s->total = total;
    uint64_t start = (uint64_t)p->off, len = total;
    if (s->is_read) {
        /* Widened to aligned bounds: the bytes before and after are read and dropped. */
        size_t unit = a->off > a->mem ? a->off : a->mem;
        start = (uint64_t)p->off & ~(uint64_t)(a->off - 1);
        s->head = (size_t)((uint64_t)p->off - start);
        len = dsp_align_up(s->head + total, unit);
        /* A buffer that is not there at all passes through, so the kernel
         * gives its own error (a read of misaligned memory: -EINVAL); one
         * that goes bad later gets -EFAULT at completion. */
        for (int i = 0; i < nseg; i++)
            if (!dsp_guard_plausible((uintptr_t)seg[i].iov_base, seg[i].iov_len) ||
                dsp_guard_probe_ends(seg[i].iov_base, seg[i].iov_len) != 0)
                return -1;
        memcpy(s->seg, seg, sizeof *seg * nseg);
        s->nseg = nseg;
    } else {
        s->head = 0;
        s->nseg = 0;
    }
    s->buf = dsp_bounce_get(len ? len : 1, &s->cap);
    if (!s->buf) return -1;
    if (!s->is_read) {
        size_t at = 0;
        for (int i = 0; i < nseg; i++) {
            if (seg[i].iov_len > s->cap - at ||
                !dsp_guard_plausible((uintptr_t)seg[i].iov_base, seg[i].iov_len) ||
                dsp_guard_copy(s->buf + at, seg[i].iov_base, seg[i].iov_len) != 0)
                return -1;
            at += seg[i].iov_len;
        }
    }
    s->kiocb.aio_lio_opcode = s->is_read ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
    s->kiocb.aio_buf = (uintptr_t)s->buf;
    s->kiocb.aio_nbytes = len;
    s->kiocb.aio_offset = (int64_t)start;
    return 0;
}

/* Whether O_DIRECT would refuse p (or the policy asks for a bounce anyway). */
static int wants_bounce(const struct plan *p, const struct segs *g, struct fdinfo *cache,
                        int *ncache, struct dsp_dio_align *a) {
    int rd = is_read(p->op);
    int candidate;
    switch (policy) {
    case DSP_AIO_BOUNCE_NEVER:
        return 0;
    case DSP_AIO_BOUNCE_ALL:
        candidate = 1;
        break;
    default:
        /* Aligned to every known rule: no system call needed to know it passes. */
        candidate = (g->bits & (DSP_DIO_MAX_ALIGN - 1)) ||
                    (rd && (((uint64_t)p->off | g->total) & (DSP_DIO_MAX_ALIGN - 1))) ||
                    (policy == DSP_AIO_BOUNCE_UNPINNED && !g->pinned);
    }
    if (!candidate || p->off < 0 || !fd_query((int)p->fd, cache, ncache, a)) return 0;
    int mem_ok = (g->bits & (a->mem - 1)) == 0;
    int off_ok = (((uint64_t)p->off | g->total) & (a->off - 1)) == 0;
    if (!rd && !off_ok) return 0; /* a misaligned write stays the caller's: the kernel's -EINVAL */
    return !mem_ok || !off_ok || policy == DSP_AIO_BOUNCE_ALL ||
           (policy == DSP_AIO_BOUNCE_UNPINNED && !g->pinned);
}

/* Decides p's class, preparing a bounce where one is needed: -EFAULT when
 * the iocb's iovec array cannot be read. */
static int classify_data(io_context_t ctx, struct plan *p, struct fdinfo *cache, int *ncache) {
    if (is_vec(p->op) && p->nbytes > UIO_MAXIOV) return 0; /* the kernel's -EINVAL */
    struct segs g;
    if (scan_segs(p, &g) != 0) return -EFAULT;
    p->cls = g.pinned ? C_DIRECT_PINNED : C_DIRECT_UNPINNED;
    struct dsp_dio_align a;
    if (g.huge || !wants_bounce(p, &g, cache, ncache, &a)) return 0;
    p->cls = C_PASS; /* unless the bounce works out */
    struct dsp_aio_bstate *s = NULL;
    if (g.n > DSP_AIO_MAX_SEGS) {
        dsp_once(DSP_LOG_WARN,
                 "libaio: a vectored request of %d segments needs a bounce but has more "
                 "than %d: passed through unchanged",
                 g.n, DSP_AIO_MAX_SEGS);
    } else if ((s = dsp_aio_state_get()) != NULL) {
        s->ctx = ctx;
        if (bounce_prepare(s, p, g.seg, g.n, g.total, &a) == 0) {
            p->cls = C_BOUNCED;
            p->st = s;
            p->bounce_bytes = g.total;
            return 0;
        }
        dsp_aio_state_put(s);
    }
    dsp_stat_add(DSP_ST_fallbacks, 1);
    return 0;
}

static void plan_fill(struct plan *p, struct iocb *user, const struct iocb *cb) {
    p->user = user;
    p->op = cb->aio_lio_opcode;
    p->fd = cb->aio_fildes;
    p->buf = cb->aio_buf;
    p->nbytes = cb->aio_nbytes;
    p->off = cb->aio_offset;
}

/* The iocbs as classify reads them, with checked copies (a thread that
 * blocks SIGSEGV or SIGBUS): how many of ios[0..n) could be read, in order. */
static long read_checked(struct iocb **ios, long n, struct plan *p) {
    const void *at[CHUNK];
    struct iocb *cbs[CHUNK];
    long m = 0;
    while (m < n && dsp_guard_plausible((uintptr_t)(ios + m), sizeof *ios)) {
        at[m] = ios + m;
        m++;
    }
    m = dsp_guard_gather(cbs, at, sizeof *cbs, m);
    long k = 0;
    while (k < m && dsp_guard_plausible((uintptr_t)cbs[k], sizeof *cbs[k])) {
        at[k] = cbs[k];
        k++;
    }
    long readable = 0;
    while (readable < k) {
        struct iocb copy[16];
        long want = k - readable < 16 ? k - readable : 16;
        long got = dsp_guard_gather(copy, at + readable, sizeof *copy, want);
        for (long i = 0; i < got; i++) plan_fill(&p[readable + i], cbs[readable + i], &copy[i]);
        readable += got;
        if (got < want) break;
    }
    return readable;
}

/* The same with plain loads under the guard (its arguments are read after
 * the jump back: kept in memory). */
static long read_guarded(struct iocb **volatile ios, volatile long n, struct plan *volatile p) {
    volatile long readable = 0;
    int failed;
    DSP_GUARD_BEGIN(failed)
    for (long i = 0; i < n; i++) {
        if (!dsp_guard_plausible((uintptr_t)(ios + i), sizeof *ios)) break;
        struct iocb *cb = ios[i];
        if (!dsp_guard_plausible((uintptr_t)cb, sizeof *cb)) break;
        plan_fill(&p[i], cb, cb);
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* p[i] is complete before it counts */
        readable = i + 1;
    }
    DSP_GUARD_END();
    (void)failed;
    return readable;
}

/* Classifies p[0..n): returns how many can be submitted (fewer when iocb i
 * cannot be read: the kernel would stop there too). */
static long classify(io_context_t ctx, struct iocb **ios, long n, struct plan *p, int *bounced) {
    long readable = dsp_guard_faults_ok ? read_guarded(ios, n, p) : read_checked(ios, n, p);
    struct fdinfo cache[FD_CACHE];
    int ncache = 0;
    *bounced = 0;
    for (long i = 0; i < readable; i++) {
        p[i].st = NULL;
        p[i].cls = C_PASS;
        p[i].bounce_bytes = 0;
        if (!is_data(p[i].op)) continue;
        if (classify_data(ctx, &p[i], cache, &ncache) != 0) return i;
        *bounced += p[i].cls == C_BOUNCED;
    }
    return readable;
}

static void count_classes(const uint64_t c[4], uint64_t n, uint64_t bytes) {
    dsp_stat_add(DSP_ST_aio_iocbs, (uint64_t)n);
    if (c[C_PASS]) dsp_stat_add(DSP_ST_aio_passthrough, c[C_PASS]);
    if (c[C_DIRECT_PINNED]) dsp_stat_add(DSP_ST_aio_direct_pinned, c[C_DIRECT_PINNED]);
    if (c[C_DIRECT_UNPINNED]) dsp_stat_add(DSP_ST_aio_direct_unpinned, c[C_DIRECT_UNPINNED]);
    if (c[C_BOUNCED]) {
        dsp_stat_add(DSP_ST_aio_bounced, c[C_BOUNCED]);
        dsp_stat_add(DSP_ST_aio_bounce_bytes, bytes);
    }
}

static void count(const struct plan *p, long n) {
    uint64_t c[4] = {0, 0, 0, 0}, bytes = 0;
    for (long i = 0; i < n; i++) {
        c[p[i].cls]++;
        bytes += p[i].bounce_bytes;
    }
    count_classes(c, (uint64_t)n, bytes);
}

/* The common case, in one pass and without a copy of the iocbs: every one a
 * plain read or write that the policy sends as it is (4 KiB-aligned under
 * misaligned, anything under never) or an opcode the shim never touches.
 * Returns 1 with cls[] filled when that covers all n; 0 sends the call down
 * the general path (which also answers any bad pointer exactly). The hook's
 * cost here is a few loads and one registry lookup per iocb (bench/run:
 * libaio_hook). */
static int fast_classify(struct iocb **ios, long n, uint8_t *cls) {
    if (!dsp_guard_faults_ok) return 0; /* no plain loads in this thread */
    volatile int all = 0;
    int failed;
    DSP_GUARD_BEGIN(failed)
    if (dsp_guard_plausible((uintptr_t)ios, sizeof *ios * (size_t)n)) {
        long i = 0;
        for (; i < n; i++) {
            const struct iocb *cb = ios[i];
            if (!dsp_guard_plausible((uintptr_t)cb, sizeof *cb)) break;
            uint16_t op = cb->aio_lio_opcode;
            if (op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV) break;
            if (op != IOCB_CMD_PREAD && op != IOCB_CMD_PWRITE) {
                cls[i] = C_PASS;
                continue;
            }
            uint64_t buf = cb->aio_buf, len = cb->aio_nbytes;
            uint64_t bits = buf | len | (op == IOCB_CMD_PREAD ? (uint64_t)cb->aio_offset : 0);
            if (policy != DSP_AIO_BOUNCE_NEVER &&
                (policy != DSP_AIO_BOUNCE_MISALIGNED || (bits & (DSP_DIO_MAX_ALIGN - 1))))
                break;
            cls[i] = len <= DSP_MAX_RW && dsp_reg_contains(buf, len) ? C_DIRECT_PINNED
                                                                     : C_DIRECT_UNPINNED;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        all = i == n;
    }
    DSP_GUARD_END();
    return !failed && all;
}

static void unprepare(struct plan *p, long from, long to) {
    for (long i = from; i < to; i++)
        if (p[i].st) {
            dsp_aio_state_withdraw(p[i].st);
            dsp_aio_state_put(p[i].st);
            p[i].st = NULL;
        }
}

static int submit(io_context_t ctx, long nr, struct iocb **ios) {
    uint8_t cls[CHUNK];
    if (nr <= CHUNK && fast_classify(ios, nr, cls)) {
        int r = real.submit(ctx, nr, ios);
        if (r > 0) {
            uint64_t c[4] = {0, 0, 0, 0};
            for (int i = 0; i < r; i++) c[cls[i]]++;
            count_classes(c, (uint64_t)r, 0);
        }
        return r;
    }
    struct plan p[CHUNK];
    struct iocb *local[CHUNK];
    long done = 0;
    while (done < nr) {
        long n = nr - done < CHUNK ? nr - done : CHUNK;
        int bounced;
        long ok = classify(ctx, ios + done, n, p, &bounced);
        if (ok == 0 && done) return (int)done;
        if (ok == 0) {
            /* The first iocb cannot be read: the kernel's answer, not ours.
             * It looks at the context first (-EINVAL for one it does not
             * know), then reads the array and the iocb (-EFAULT). */
            int r = real.submit(ctx, 1, ios);
            if (r > 0) count_classes((uint64_t[4]){1, 0, 0, 0}, 1, 0);
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

DSP_API int io_submit(io_context_t ctx, long nr, struct iocb **ios) {
    ensure_ready();
    /* nr < 0 and nr == 0 are the kernel's to answer (-EINVAL, or 0 after
     * the context is checked). */
    if (nr <= 0 || !active) return real.submit(ctx, nr, ios);
    /* libaio leaves errno alone; a refused bounce buffer or fd query must too. */
    int e = errno;
    int prev = dsp_guard_enter();
    /* A thread that blocks SIGSEGV or SIGBUS reads the iocbs with checked
     * copies; where those are refused too, nothing is read. */
    int r = dsp_guard_faults_ok || dsp_guard_checked_ok() ? submit(ctx, nr, ios)
                                                          : real.submit(ctx, nr, ios);
    dsp_guard_leave(prev);
    errno = e;
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

DSP_API int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                         struct timespec *ts) {
    ensure_ready();
    int r = real.getevents(ctx, min_nr, nr, ev, ts);
    finish(ev, r);
    return r;
}

DSP_API int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
                          struct timespec *ts, sigset_t *mask) {
    ensure_ready();
    int r = real.pgetevents(ctx, min_nr, nr, ev, ts, mask);
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
