/* Process-wide statistics: relaxed atomic counters, readable at any time as one
 * JSON object (dsp_stats_json), printed or written at exit on request. */
#ifndef DSP_STATS_H
#define DSP_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum dsp_stat_id {
#define DSP_STAT(key, kind, help) DSP_ST_##key,
#include "stats_keys.h"
#undef DSP_STAT
    DSP_ST_COUNT
};

extern _Atomic uint64_t dsp_stat[DSP_ST_COUNT];

static inline void dsp_stat_add(enum dsp_stat_id id, uint64_t v) {
    atomic_fetch_add_explicit(&dsp_stat[id], v, memory_order_relaxed);
}
static inline void dsp_stat_sub(enum dsp_stat_id id, uint64_t v) {
    atomic_fetch_sub_explicit(&dsp_stat[id], v, memory_order_relaxed);
}
static inline void dsp_stat_set(enum dsp_stat_id id, uint64_t v) {
    atomic_store_explicit(&dsp_stat[id], v, memory_order_relaxed);
}
static inline uint64_t dsp_stat_get(enum dsp_stat_id id) {
    return atomic_load_explicit(&dsp_stat[id], memory_order_relaxed);
}
void dsp_stat_max(enum dsp_stat_id id, uint64_t v);

/* Zeroes every statistic (a forked child starts its own account). */
void dsp_stats_reset(void);

int dsp_stats_format_json(char *buf, size_t cap);

/* 1 when dsp_stats_at_exit will write something: the process used the shim
 * and DSP_STATS or DSP_STATS_FILE asks (its caller then plans the budget
 * first, the summary's figure, manager.h). */
int dsp_stats_due_at_exit(void);
/* At exit: the DSP_STATS summary and the DSP_STATS_FILE object, as configured. */
void dsp_stats_at_exit(void);

/* "%p" in pattern becomes the pid; 0, or -ENAMETOOLONG if it does not fit. */
int dsp_stats_path(char *out, size_t cap, const char *pattern, int pid);

#endif
