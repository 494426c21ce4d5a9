#include "brlock.h"

#include <sched.h>

static _Atomic unsigned next_slot;
static DSP_TLS int my_slot = -1;

int dsp_br_slot(void) {
    int s = my_slot;
    if (DSP_UNLIKELY(s < 0)) {
        s = (int)(atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed) % DSP_BR_SLOTS);
        my_slot = s;
    }
    return s;
}

void dsp_br_write_lock(struct dsp_brlock *l) {
    pthread_mutex_lock(&l->wmutex);
    atomic_store_explicit(&l->writer, 1, memory_order_seq_cst);
    for (int i = 0; i < DSP_BR_SLOTS; i++) {
        unsigned spins = 0;
        while (atomic_load_explicit(&l->slot[i].readers, memory_order_seq_cst)) {
            if (++spins > 1000) sched_yield(), spins = 0;
            else dsp_br_cpu_relax();
        }
    }
}

void dsp_br_write_unlock(struct dsp_brlock *l) {
    atomic_store_explicit(&l->writer, 0, memory_order_release);
    pthread_mutex_unlock(&l->wmutex);
}
