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

/* Per-thread counters (issue 29): the libaio hook counts every io_submit, and
 * an atomic add on a line every thread shares was a good part of its cost.
 * The counters from aio_iocbs to aio_passthrough (stats_keys.h: one run) also
 * have a block per thread, added to with a plain load and store by its thread
 * only (dsp_stat_add_mine) and summed by dsp_stat_get; a thread's block is
 * added to the shared counters when it ends. Blocks come from a fixed pool
 * (DSP_TSTAT_BLOCKS); a thread that finds none adds to the shared counters. */
#define DSP_TSTAT_FIRST  DSP_ST_aio_iocbs
#define DSP_TSTAT_N      (DSP_ST_aio_passthrough - DSP_ST_aio_iocbs + 1)
#define DSP_TSTAT_BLOCKS 256
struct dsp_tstat {
    _Atomic uint64_t v[DSP_TSTAT_N];
    _Atomic int owned;
};
extern __thread __attribute__((tls_model("initial-exec"))) struct dsp_tstat *dsp_tstat_mine;
void dsp_stat_add_mine_slow(enum dsp_stat_id id, uint64_t v);
uint64_t dsp_tstat_sum(int k);

/* dsp_stat_add for an id of the per-thread run, from the thread's own block.
 * (A signal handler of the same thread that counts between the load and the
 * store loses one of the two counts: statistics only.) */
static inline void dsp_stat_add_mine(enum dsp_stat_id id, uint64_t v) {
    struct dsp_tstat *b = dsp_tstat_mine;
    if (__builtin_expect(!b, 0)) {
        dsp_stat_add_mine_slow(id, v);
        return;
    }
    _Atomic uint64_t *c = &b->v[id - DSP_TSTAT_FIRST];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

/* Two counters of the run at once, the thread's block looked up once. */
static inline void dsp_stat_add_mine2(enum dsp_stat_id a, enum dsp_stat_id b, uint64_t v) {
    struct dsp_tstat *k = dsp_tstat_mine;
    if (__builtin_expect(!k, 0)) {
        dsp_stat_add_mine_slow(a, v);
        dsp_stat_add_mine(b, v);
        return;
    }
    _Atomic uint64_t *c = &k->v[a - DSP_TSTAT_FIRST], *d = &k->v[b - DSP_TSTAT_FIRST];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
    atomic_store_explicit(d, atomic_load_explicit(d, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

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
    uint64_t v = atomic_load_explicit(&dsp_stat[id], memory_order_relaxed);
    if ((unsigned)(id - DSP_TSTAT_FIRST) < DSP_TSTAT_N) v += dsp_tstat_sum(id - DSP_TSTAT_FIRST);
    return v;
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
