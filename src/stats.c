/* Process-wide statistics: the counters themselves (stats.h). Everything
 * that reads them out, the JSON object and the exit summary, is in
 * stats_out.c, above the layers whose figures it gathers (the node ledger). */
#include "stats.h"

_Atomic uint64_t dsp_stat[DSP_ST_COUNT];

void dsp_stat_max(enum dsp_stat_id id, uint64_t v) {
    uint64_t cur = atomic_load_explicit(&dsp_stat[id], memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(
                          &dsp_stat[id], &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void dsp_stats_reset(void) {
    for (int i = 0; i < DSP_ST_COUNT; i++)
        atomic_store_explicit(&dsp_stat[i], 0, memory_order_relaxed);
}
