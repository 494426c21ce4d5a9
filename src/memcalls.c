/* The program's own memory calls on memory the manager handed out (issue 12):
 * munlock, munlockall, mprotect, madvise and mlock reach blocks that a malloc
 * hint or cudaHostAlloc served, where the program believes it holds glibc's or
 * the driver's memory. Each is answered so that the registry never calls
 * memory pinned that the kernel does not hold locked, and the next owner of a
 * pooled block gets it locked and read-write:
 * - munlock of a block does nothing to it: the manager's pin is the program's
 *   too, and it ends with the block (DeepSpeed's posix_memalign + mlock ...
 *   munlock + free left 49 of 50 pooled blocks unlocked but "pinned");
 * - munlockall unlocks everything, then the manager locks its spans again;
 * - mprotect and madvise that change a mapping's flags go to the kernel and
 *   taint the block: freed, it is given back (or, registered with CUDA, its
 *   protection and advice restored) instead of pooled as it is
 *   (mprotect(PROT_READ) + free + malloc handed a read-only block out);
 * - madvise(MADV_DONTNEED/MADV_FREE) on a block zeroes it and returns 0, where
 *   the kernel would refuse locked memory with EINVAL: glibc's memory would
 *   read zeros afterwards, and the pages stay resident, locked and registered.
 * Each returns 0, or -1 and errno, as the system call it stands for: these
 * calls (with memlock.c's) are the exception to the core's -errno (internal.h).
 * The checks are one compare for calls outside the arena, and a walk of the
 * spans the call covers, under the manager's mutex, for calls inside. A call
 * from a signal handler that interrupted this thread inside the manager
 * cannot take the mutex: it is the plain system call (reentry.h). */
#include "internal.h"
#include "log.h"
#include "manager.h"
#include "pin.h"
#include "memcalls.h"
#include "registry.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* The part of [a, a+len) inside the arena: 1 and [*lo, *hi), or 0. */
static int arena_part(uintptr_t a, size_t len, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t alo = atomic_load_explicit(&dsp_mgr.lo, memory_order_acquire);
    uintptr_t ahi = atomic_load_explicit(&dsp_mgr.hi, memory_order_relaxed);
    uintptr_t e = a + len < a ? UINTPTR_MAX : a + len;
    if (!alo || e <= alo || a >= ahi || !len) return 0;
    *lo = a > alo ? a : alo;
    *hi = e < ahi ? e : ahi;
    return 1;
}

int dsp_mem_in_arena(const void *a, size_t len) {
    uintptr_t lo, hi;
    return arena_part((uintptr_t)a, len, &lo, &hi);
}

/* Under mu: calls fn on every span that overlaps [lo, hi), last first, with
 * the overlap. The walk starts at the last registered block at or below
 * hi - 1: if that one ends at or before lo, no block overlaps at all. Spans
 * past it are pooled or vacant, not the program's. */
static void each_span(uintptr_t lo, uintptr_t hi,
                      void (*fn)(struct dsp_span *, uintptr_t, uintptr_t, void *), void *arg) {
    struct dsp_range r;
    if (!dsp_reg_floor(hi - 1, &r) || r.kind != DSP_RANGE_BLOCK || r.end <= lo) return;
    for (struct dsp_span *s = r.owner; s && s->base + s->len > lo; s = s->aprev) {
        uintptr_t a = s->base > lo ? s->base : lo;
        uintptr_t e = s->base + s->len < hi ? s->base + s->len : hi;
        fn(s, a, e, arg);
    }
}

/* The pieces of [a, a+len) outside the arena go to the kernel. */
static long outside(long nr, uintptr_t a, size_t len, uintptr_t lo, uintptr_t hi, long x) {
    long rc = 0;
    uintptr_t e = a + len < a ? UINTPTR_MAX : a + len;
    if (a < lo && syscall(nr, a, lo - a, x) != 0) rc = -1;
    if (e > hi && syscall(nr, hi, e - hi, x) != 0) rc = -1;
    return rc;
}

int dsp_mem_munlock(const void *addr, size_t len) {
    uintptr_t lo, hi;
    if (!arena_part((uintptr_t)addr, len, &lo, &hi)) return (int)syscall(SYS_munlock, addr, len);
    return (int)outside(SYS_munlock, (uintptr_t)addr, len, lo, hi, 0);
}

/* mlock and mlock2 (flags >= 0) of a range. A block the manager locked is
 * skipped: relocking it with other flags (plain mlock clears the
 * MLOCK_ONFAULT the manager locks with) would split it from its neighbours,
 * a map or two per block that DeepSpeed-style pinning locks. Spans not locked
 * here (CUDA blocks pinned by registration alone, blocks inherited across
 * fork) are locked as asked. */
static int lock_range(uintptr_t a, size_t len, int flags) {
    return (int)(flags < 0 ? syscall(SYS_mlock, a, len) : syscall(SYS_mlock2, a, len, flags));
}

struct mlock_arg {
    int flags, rc, err;
};

static void lock_unlocked(struct dsp_span *s, uintptr_t a, uintptr_t e, void *arg) {
    struct mlock_arg *m = arg;
    if (s->state != DSP_SPAN_LIVE || s->locked) return;
    if (lock_range(a, e - a, m->flags) != 0) m->rc = -1, m->err = errno;
}

int dsp_mem_mlock(const void *addr, size_t len, int flags) {
    uintptr_t lo, hi, a = (uintptr_t)addr;
    if (!arena_part(a, len, &lo, &hi) || dsp_reentered()) return lock_range(a, len, flags);
    struct mlock_arg m = {flags, 0, errno};
    uintptr_t e = a + len < a ? UINTPTR_MAX : a + len;
    if (a < lo && lock_range(a, lo - a, flags) != 0) m.rc = -1, m.err = errno;
    if (e > hi && lock_range(hi, e - hi, flags) != 0) m.rc = -1, m.err = errno;
    dsp_mgr_lock();
    each_span(lo, hi, lock_unlocked, &m);
    dsp_mgr_unlock();
    errno = m.err;
    return m.rc;
}

int dsp_mem_munlockall(void) {
    struct dsp_manager *m = &dsp_mgr;
    if (dsp_reentered()) return (int)syscall(SYS_munlockall); /* a signal handler: see below */
    dsp_mgr_lock();
    int rc = (int)syscall(SYS_munlockall), err = errno;
    if (rc == 0) atomic_store(&m->lock_future, 0); /* MCL_FUTURE ends too */
    /* Lock the manager's locked spans again, each run of neighbours at once. */
    uintptr_t run = 0, end = 0;
    for (struct dsp_span *s = m->first;; s = s->anext) {
        if (s && s->state != DSP_SPAN_VACANT && s->locked && s->base == end) {
            end += s->len;
            continue;
        }
        if (end > run && dsp_pin_lock_range((void *)run, end - run) != 0)
            dsp_once(DSP_LOG_WARN, "munlockall: cannot lock %zu bytes of pinned blocks again (%s)",
                     end - run, strerror(errno));
        if (!s) break;
        run = end = s->state != DSP_SPAN_VACANT && s->locked ? s->base : 0;
        if (run) end = s->base + s->len;
    }
    dsp_mgr_unlock();
    errno = err;
    return rc;
}

/* Only the program's own blocks: memory it freed is not its to change (with
 * glibc that would be a use after free as well). */
static void taint(struct dsp_span *s, uintptr_t a, uintptr_t e, void *arg) {
    (void)a, (void)e;
    if (s->state == DSP_SPAN_LIVE) s->taint |= *(unsigned *)arg;
}

static void taint_unless_huge(struct dsp_span *s, uintptr_t a, uintptr_t e, void *arg) {
    (void)a, (void)e, (void)arg;
    if (s->state == DSP_SPAN_LIVE && !s->huge) s->taint |= DSP_TAINT_ADVICE;
}

int dsp_mem_mprotect(void *addr, size_t len, int prot) {
    uintptr_t lo, hi;
    int rc = (int)syscall(SYS_mprotect, addr, len, prot);
    if (rc != 0 || !arena_part((uintptr_t)addr, len, &lo, &hi) || dsp_reentered()) return rc;
    /* Read-write is what the manager made: it changes nothing of a block
     * not made otherwise before (which that earlier call tainted). */
    if (prot == (PROT_READ | PROT_WRITE)) return rc;
    int err = errno;
    unsigned bits = DSP_TAINT_PROT | ((prot & PROT_WRITE) ? 0 : DSP_TAINT_READONLY);
    dsp_mgr_lock();
    each_span(lo, hi, taint, &bits);
    dsp_mgr_unlock();
    errno = err;
    return rc;
}

/* MADV_DONTNEED and friends on a live block: its pages read zero afterwards,
 * as glibc's would, but stay resident, locked and registered. A block the
 * program made read-only cannot be written: its pages are dropped instead
 * (MADV_DONTNEED_LOCKED, Linux 5.18), and fault in again zeroed and locked. */
struct drop {
    int rc, advice;
};

static void zero(struct dsp_span *s, uintptr_t a, uintptr_t e, void *arg) {
    struct drop *d = arg;
    int *rc = &d->rc;
    if (s->state != DSP_SPAN_LIVE) return;
    /* Served memory is shared memory (shm.c), whose contents the kernel
     * keeps under MADV_DONTNEED (a forked child may be reading them) and
     * which MADV_FREE refuses: as the driver's memory would answer. */
    if (s->shared) {
        if (d->advice == MADV_FREE) *rc = -1, errno = EINVAL;
        return;
    }
    if (!(s->taint & DSP_TAINT_READONLY))
        memset((void *)a, 0, e - a);
    else if (syscall(SYS_madvise, a, e - a, MADV_DONTNEED_LOCKED) != 0)
        *rc = -1;
}

static int advice_changes_flags(int advice) {
    switch (advice) {
    case MADV_WILLNEED:
    case MADV_COLD:
    case MADV_PAGEOUT:
    case MADV_POPULATE_READ:
    case MADV_POPULATE_WRITE:
        return 0;
    default:
        return 1;
    }
}

int dsp_mem_madvise(void *addr, size_t len, int advice) {
    uintptr_t lo, hi;
    if (!arena_part((uintptr_t)addr, len, &lo, &hi))
        return (int)syscall(SYS_madvise, addr, len, advice);
    /* MADV_REMOVE frees a shared mapping's pages from under a driver's pin
     * (a served block mlock refused is pinned by registration alone); on
     * private memory, as every other block is, the kernel refuses it. */
    if (advice == MADV_REMOVE) return errno = EINVAL, -1;
    int dropping = advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_DONTNEED_LOCKED;
    int rc = 0, err = errno;
    if (dropping) {
        rc = (int)outside(SYS_madvise, (uintptr_t)addr, len, lo, hi, advice);
        err = errno;
        struct drop d = {rc, advice};
        dsp_mgr_lock();
        each_span(lo, hi, zero, &d);
        dsp_mgr_unlock();
        rc = d.rc;
        if (rc) err = errno;
    } else {
        rc = (int)syscall(SYS_madvise, addr, len, advice);
        err = errno;
        /* A huge-page advice the span already carries changes nothing
         * (NumPy advises MADV_HUGEPAGE on every large array). */
        if (rc == 0 && advice_changes_flags(advice)) {
            unsigned bits = DSP_TAINT_ADVICE;
            dsp_mgr_lock();
            if (advice == MADV_HUGEPAGE)
                each_span(lo, hi, taint_unless_huge, NULL);
            else
                each_span(lo, hi, taint, &bits);
            dsp_mgr_unlock();
        }
    }
    errno = err;
    return rc;
}
