/* The deferred-free area (reentry.h): a fixed array of slots claimed with a
 * compare-and-swap, so a signal handler can push without a lock or an
 * allocation. Pointers handed out by the manager are page-aligned, so bit 0
 * carries the kind. */
#include "reentry.h"
#include "log.h"
#include "stats.h"

#include <errno.h>

#define SLOTS 256

DSP_TLS int dsp_in_manager;
_Atomic int dsp_deferred_pending;

static DSP_LARGE_BSS _Atomic uintptr_t slot[SLOTS];
static _Atomic int draining;
static DSP_STARTUP_DATA void (*_Atomic handler[2])(void *); /* by kind */

DSP_STARTUP_TEXT void dsp_defer_set_handler(int kind, void (*fn)(void *)) {
    atomic_store_explicit(&handler[kind & 1], fn, memory_order_release);
}

int dsp_defer_free(void *p, int kind) {
    uintptr_t v = (uintptr_t)p | (uintptr_t)(kind & 1);
    if (!p || ((uintptr_t)p & 1)) return -EINVAL;
    for (size_t i = 0; i < SLOTS; i++) {
        uintptr_t none = 0;
        if (atomic_load_explicit(&slot[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&slot[i], &none, v)) {
            atomic_fetch_add(&dsp_deferred_pending, 1);
            dsp_stat_add(DSP_ST_deferred_frees, 1);
            return 0;
        }
    }
    dsp_stat_add(DSP_ST_deferred_frees_leaked, 1);
    dsp_once(DSP_LOG_WARN,
             "free of %p in a signal handler deferred, but the deferred-free area is full "
             "(%d blocks); the block is leaked",
             p, SLOTS);
    return -ENOSPC;
}

/* A block is freed with dsp_block_free, not dsp_free: no call of a span
 * kind's party (over_limit) from whichever path drains. */
static void release(uintptr_t v) {
    void (*fn)(void *) = atomic_load_explicit(&handler[v & 1], memory_order_acquire);
    if (fn) fn((void *)(v & ~(uintptr_t)1));
}

/* Outside all our locks. One thread drains at a time; one that finds another
 * draining leaves the work to it (it re-checks before it stops). */
void dsp_deferred_drain(void) {
    while (atomic_load(&dsp_deferred_pending) > 0) {
        int no = 0;
        if (!atomic_compare_exchange_strong(&draining, &no, 1)) return;
        for (size_t i = 0; i < SLOTS; i++) {
            if (!atomic_load_explicit(&slot[i], memory_order_relaxed)) continue;
            uintptr_t v = atomic_exchange(&slot[i], 0);
            if (!v) continue;
            atomic_fetch_sub(&dsp_deferred_pending, 1);
            release(v);
        }
        atomic_store(&draining, 0);
    }
}

/* A fork while another thread was draining: that thread is not in the child. */
void dsp_defer_fork_child(void) {
    atomic_store(&draining, 0);
}
