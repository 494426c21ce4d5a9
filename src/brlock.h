/* A big-reader lock: readers touch only their own cache line, so lookups from
 * many threads do not bounce one lock word between cores (a pthread rwlock
 * would). Writers are rare (pin/unpin) and pay for scanning every slot.
 *
 * Reader: count++ in its slot, then check `writer`; writer: set `writer`, then
 * wait for every slot to drain. Both sides use seq_cst so that at least one of
 * them sees the other (Dekker); release/acquire on the counters and on
 * `writer` order the protected data for readers and writers. */
#ifndef DSP_BRLOCK_H
#define DSP_BRLOCK_H

#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define DSP_BR_SLOTS 64

struct dsp_brlock {
    _Atomic int writer;
    pthread_mutex_t wmutex;
    struct {
        _Atomic long readers;
        char pad[64 - sizeof(long)];
    } slot[DSP_BR_SLOTS] __attribute__((aligned(64)));
};

#define DSP_BRLOCK_INIT {0, PTHREAD_MUTEX_INITIALIZER, {{0, {0}}}}

int dsp_br_slot(void); /* this thread's slot, assigned at its first read */

static inline void dsp_br_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline int dsp_br_read_lock(struct dsp_brlock *l) {
    int s = dsp_br_slot();
    for (;;) {
        atomic_fetch_add_explicit(&l->slot[s].readers, 1, memory_order_seq_cst);
        if (DSP_LIKELY(!atomic_load_explicit(&l->writer, memory_order_seq_cst))) return s;
        atomic_fetch_sub_explicit(&l->slot[s].readers, 1, memory_order_release);
        while (atomic_load_explicit(&l->writer, memory_order_acquire)) dsp_br_cpu_relax();
    }
}

static inline void dsp_br_read_unlock(struct dsp_brlock *l, int s) {
    atomic_fetch_sub_explicit(&l->slot[s].readers, 1, memory_order_release);
}

void dsp_br_write_lock(struct dsp_brlock *l);
void dsp_br_write_unlock(struct dsp_brlock *l);

#endif
