/* Process-wide statistics: the counters themselves (stats.h). Everything
 * that reads them out, the JSON object and the exit summary, is in
 * stats_out.c, above the layers whose figures it gathers (the node ledger). */
#include "stats.h"

#include "internal.h"

#include <pthread.h>

_Atomic uint64_t dsp_stat[DSP_ST_COUNT];

/* --- per-thread blocks (stats.h) ---------------------------------------- */
static DSP_LARGE_BSS struct dsp_tstat tstat[DSP_TSTAT_BLOCKS];
__thread __attribute__((tls_model("initial-exec"))) struct dsp_tstat *dsp_tstat_mine;
/* Set once the pool had no block for this thread: shared counters for good. */
static __thread __attribute__((tls_model("initial-exec"))) int tstat_none;
static pthread_key_t tstat_key;
static pthread_once_t tstat_once = PTHREAD_ONCE_INIT;
static int tstat_key_ok;

/* A thread ends: its counts go to the shared counters, its block back to
 * the pool. */
static void tstat_release(void *p) {
    struct dsp_tstat *b = p;
    for (int k = 0; k < DSP_TSTAT_N; k++) {
        uint64_t v = atomic_exchange_explicit(&b->v[k], 0, memory_order_relaxed);
        if (v) atomic_fetch_add_explicit(&dsp_stat[DSP_TSTAT_FIRST + k], v, memory_order_relaxed);
    }
    dsp_tstat_mine = NULL;
    atomic_store_explicit(&b->owned, 0, memory_order_release);
}

static void tstat_init(void) {
    tstat_key_ok = pthread_key_create(&tstat_key, tstat_release) == 0;
}

void dsp_stat_add_mine_slow(enum dsp_stat_id id, uint64_t v) {
    pthread_once(&tstat_once, tstat_init);
    if (!tstat_none && tstat_key_ok)
        for (int i = 0; i < DSP_TSTAT_BLOCKS; i++) {
            int free_ = 0;
            if (atomic_load_explicit(&tstat[i].owned, memory_order_relaxed) ||
                !atomic_compare_exchange_strong(&tstat[i].owned, &free_, 1))
                continue;
            if (pthread_setspecific(tstat_key, &tstat[i]) != 0) {
                atomic_store(&tstat[i].owned, 0);
                break;
            }
            dsp_tstat_mine = &tstat[i];
            dsp_stat_add_mine(id, v);
            return;
        }
    tstat_none = 1;
    dsp_stat_add(id, v);
}

uint64_t dsp_tstat_sum(int k) {
    uint64_t v = 0;
    for (int i = 0; i < DSP_TSTAT_BLOCKS; i++)
        v += atomic_load_explicit(&tstat[i].v[k], memory_order_relaxed);
    return v;
}

void dsp_stat_max(enum dsp_stat_id id, uint64_t v) {
    uint64_t cur = atomic_load_explicit(&dsp_stat[id], memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(
                          &dsp_stat[id], &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void dsp_stats_reset(void) {
    for (int i = 0; i < DSP_ST_COUNT; i++)
        atomic_store_explicit(&dsp_stat[i], 0, memory_order_relaxed);
    for (int i = 0; i < DSP_TSTAT_BLOCKS; i++)
        for (int k = 0; k < DSP_TSTAT_N; k++)
            atomic_store_explicit(&tstat[i].v[k], 0, memory_order_relaxed);
}
