/* Re-entrancy from signal handlers (docs/design.md, "Signals").
 *
 * Every mutex of ours that an allocation or a free could wait on is taken
 * through dsp_lock/dsp_unlock, which count the locks this thread holds (or is
 * waiting for) in one initial-exec thread-local. A signal handler that runs
 * malloc or free on a thread whose count is non-zero must not take any of
 * them: that thread would wait for itself. The malloc layer then serves the
 * allocation from glibc and defers the free (dsp_defer_free); the next unlock
 * that brings a thread's count back to zero frees what was deferred. */
#ifndef DSP_REENTRY_H
#define DSP_REENTRY_H

#include "fork.h"
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* Locks of ours this thread holds or waits for. */
extern DSP_TLS int dsp_in_manager;
/* Entries waiting in the deferred-free area (may read low for a moment). */
extern _Atomic int dsp_deferred_pending;
void dsp_deferred_drain(void);

/* This thread must not take a lock of ours now: it holds one (a signal
 * handler interrupted it there), or it is forking, and the fork handlers hold
 * them all (fork.h). Its allocations go to glibc, its frees are deferred. */
static inline int dsp_reentered(void) {
    return dsp_in_manager ||
           DSP_UNLIKELY(atomic_load_explicit(&dsp_fork_locks.owner, memory_order_relaxed) ==
                        (uintptr_t)pthread_self());
}

static inline void dsp_lock(pthread_mutex_t *mu) {
    dsp_in_manager++;
    atomic_signal_fence(memory_order_seq_cst); /* counted before it can block */
    pthread_mutex_lock(mu);
}

static inline void dsp_unlock(pthread_mutex_t *mu) {
    pthread_mutex_unlock(mu);
    atomic_signal_fence(memory_order_seq_cst);
    if (--dsp_in_manager == 0 &&
        DSP_UNLIKELY(atomic_load_explicit(&dsp_deferred_pending, memory_order_relaxed) > 0))
        dsp_deferred_drain();
}

/* Deferred frees, for a signal handler that interrupted its thread inside one
 * of our locks. p is freed later by the handler set for its kind with
 * dsp_defer_set_handler: DSP_DEFER_MALLOC, a pointer malloc handed out (the
 * malloc layer's free); DSP_DEFER_BLOCK, a block base (the manager's
 * dsp_block_free, set at initialisation: this file is below the manager and
 * never calls it by name). 0, -EINVAL for a null or odd p, or -ENOSPC when
 * the area is full (logged once; the block leaks). Async-signal-safe: no
 * lock, no allocation. */
enum { DSP_DEFER_BLOCK = 0, DSP_DEFER_MALLOC = 1 };
int dsp_defer_free(void *p, int kind);
void dsp_defer_set_handler(int kind, void (*fn)(void *));
void dsp_defer_fork_child(void);

#endif
