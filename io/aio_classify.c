/* Classification of libaio iocbs at submit (io/aio_classify.h): the fast
 * path, reading the iocbs and their segments under the guard, the queries of
 * an fd's O_DIRECT alignment, whether a request wants a bounce, and the
 * preparation of its bounced state and buffer. */
#include "aio_classify.h"

#include "config.h"
#include "internal.h"
#include "log.h"
#include "registry.h"
#include "stats.h"
#include "bounce.h"
#include "dio.h"
#include "guard.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#define FD_CACHE 8 /* distinct fds queried per io_submit */

int dsp_aio_policy;
uint64_t dsp_aio_fast_mask;

struct fdinfo {
    int fd, direct;
    struct dsp_dio_align a;
};

/* O_DIRECT and alignment of fd: 1 when O_DIRECT is on. From the fd cache
 * kept across calls (dsp_dio_cached); this per-call list also spares
 * repeated queries where that cache cannot keep an answer. */
static int fd_query(int fd, struct fdinfo *cache, int *n, struct dsp_dio_align *a) {
    for (int i = 0; i < *n; i++)
        if (cache[i].fd == fd) {
            *a = cache[i].a;
            return cache[i].direct;
        }
    struct fdinfo fi = {fd, 0, {0, 0}};
    fi.direct = dsp_dio_cached(fd, &fi.a) == 1;
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

static int scan_segs(const struct dsp_aio_plan *p, struct segs *g) {
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
static int bounce_prepare(struct dsp_aio_bstate *s, const struct dsp_aio_plan *p,
                          const struct iovec *seg, int nseg, size_t total,
                          const struct dsp_dio_align *a) {
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
static int wants_bounce(const struct dsp_aio_plan *p, const struct segs *g, struct fdinfo *cache,
                        int *ncache, struct dsp_dio_align *a) {
    int rd = is_read(p->op);
    int candidate;
    switch (dsp_aio_policy) {
    case DSP_AIO_BOUNCE_NEVER:
        return 0;
    case DSP_AIO_BOUNCE_ALL:
        candidate = 1;
        break;
    default:
        /* Aligned to every known rule: no system call needed to know it passes. */
        candidate = (g->bits & (DSP_DIO_MAX_ALIGN - 1)) ||
                    (rd && (((uint64_t)p->off | g->total) & (DSP_DIO_MAX_ALIGN - 1))) ||
                    (dsp_aio_policy == DSP_AIO_BOUNCE_UNPINNED && !g->pinned);
    }
    if (!candidate || p->off < 0 || !fd_query((int)p->fd, cache, ncache, a)) return 0;
    int mem_ok = (g->bits & (a->mem - 1)) == 0;
    int off_ok = (((uint64_t)p->off | g->total) & (a->off - 1)) == 0;
    if (!rd && !off_ok) return 0; /* a misaligned write stays the caller's: the kernel's -EINVAL */
    return !mem_ok || !off_ok || dsp_aio_policy == DSP_AIO_BOUNCE_ALL ||
           (dsp_aio_policy == DSP_AIO_BOUNCE_UNPINNED && !g->pinned);
}

/* Decides p's class, preparing a bounce where one is needed: -EFAULT when
 * the iocb's iovec array cannot be read. */
static int classify_data(io_context_t ctx, struct dsp_aio_plan *p, struct fdinfo *cache,
                         int *ncache) {
    if (is_vec(p->op) && p->nbytes > UIO_MAXIOV) return 0; /* the kernel's -EINVAL */
    struct segs g;
    if (scan_segs(p, &g) != 0) return -EFAULT;
    p->cls = g.pinned ? DSP_AIO_DIRECT_PINNED : DSP_AIO_DIRECT_UNPINNED;
    struct dsp_dio_align a;
    if (g.huge || !wants_bounce(p, &g, cache, ncache, &a)) return 0;
    p->cls = DSP_AIO_PASS; /* unless the bounce works out */
    struct dsp_aio_bstate *s = NULL;
    if (g.n > DSP_AIO_MAX_SEGS) {
        dsp_once(DSP_LOG_WARN,
                 "libaio: a vectored request of %d segments needs a bounce but has more "
                 "than %d: passed through unchanged",
                 g.n, DSP_AIO_MAX_SEGS);
    } else if ((s = dsp_aio_state_get()) != NULL) {
        s->ctx = ctx;
        if (bounce_prepare(s, p, g.seg, g.n, g.total, &a) == 0) {
            p->cls = DSP_AIO_BOUNCED;
            p->st = s;
            p->bounce_bytes = g.total;
            return 0;
        }
        dsp_aio_state_put(s);
    }
    dsp_stat_add(DSP_ST_fallbacks, 1);
    return 0;
}

static void plan_fill(struct dsp_aio_plan *p, struct iocb *user, const struct iocb *cb) {
    p->user = user;
    p->op = cb->aio_lio_opcode;
    p->fd = cb->aio_fildes;
    p->buf = cb->aio_buf;
    p->nbytes = cb->aio_nbytes;
    p->off = cb->aio_offset;
}

/* The iocbs as dsp_aio_classify reads them, with checked copies (a thread that
 * blocks SIGSEGV or SIGBUS): how many of ios[0..n) could be read, in order. */
static long read_checked(struct iocb **ios, long n, struct dsp_aio_plan *p) {
    const void *at[DSP_AIO_CHUNK];
    struct iocb *cbs[DSP_AIO_CHUNK];
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
static long read_guarded(struct iocb **volatile ios, volatile long n,
                         struct dsp_aio_plan *volatile p) {
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
long dsp_aio_classify(io_context_t ctx, struct iocb **ios, long n, struct dsp_aio_plan *p,
                      int *bounced) {
    long readable = dsp_guard_faults_ok ? read_guarded(ios, n, p) : read_checked(ios, n, p);
    struct fdinfo cache[FD_CACHE];
    int ncache = 0;
    *bounced = 0;
    for (long i = 0; i < readable; i++) {
        p[i].st = NULL;
        p[i].cls = DSP_AIO_PASS;
        p[i].bounce_bytes = 0;
        if (!is_data(p[i].op)) continue;
        if (classify_data(ctx, &p[i], cache, &ncache) != 0) return i;
        *bounced += p[i].cls == DSP_AIO_BOUNCED;
    }
    return readable;
}
