/* The public API: dsp_alloc, dsp_free, dsp_is_pinned and friends. */
#include "log.h"
#include "manager.h"
#include "registry.h"
#include "stats.h"

#include <errno.h>

static int reserve_logged, exhausted_logged, meta_logged;

static void count_live(struct dsp_span *s, int sign) {
    if (sign > 0) {
        dsp_stat_add(DSP_ST_live_bytes, s->len);
        dsp_stat_add(DSP_ST_blocks_live, 1);
    } else {
        dsp_stat_sub(DSP_ST_live_bytes, s->len);
        dsp_stat_sub(DSP_ST_blocks_live, 1);
    }
    dsp_stat_set(DSP_ST_registry_ranges, dsp_reg_count());
}

/* Returns a cached span to the pool, or gives it back at once when it is not
 * locked (inherited across fork) or the pool is over DSP_POOL_MAX. */
static void retire(struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    if (!s->locked) {
        dsp_pin_drop(s); /* cannot fail for an unlocked span */
        dsp_arena_vacate(s);
        return;
    }
    dsp_pool_put(s);
    dsp_pool_release_until(m->pool_max);
}

static void *fail(int err) {
    errno = err;
    return NULL;
}

DSP_API void *dsp_alloc(size_t size) {
    if (!size) return fail(EINVAL);
    if (size > ((size_t)1 << 56) || !dsp_ensure_init()) return fail(ENOMEM);
    struct dsp_manager *m = &dsp_mgr;
    size_t len = dsp_align_up(size, DSP_PAGE);

    pthread_mutex_lock(&m->mu);
    struct dsp_span *s = dsp_pool_get(len);
    if (s) {
        if (dsp_reg_insert(s->base, s->len, DSP_RANGE_BLOCK, 0, s) != 0) {
            retire(s);
            pthread_mutex_unlock(&m->mu);
            dsp_log_once(&meta_logged, DSP_LOG_WARN,
                         "out of memory for the registry; the caller falls back");
            dsp_stat_add(DSP_ST_pin_failures, 1);
            return fail(ENOMEM);
        }
        dsp_stat_add(DSP_ST_pool_hits, 1);
        count_live(s, 1);
        pthread_mutex_unlock(&m->mu);
        return (void *)s->base;
    }
    dsp_stat_add(DSP_ST_pool_misses, 1);
    if (!atomic_load_explicit(&m->lo, memory_order_relaxed) && dsp_arena_reserve() != 0) {
        pthread_mutex_unlock(&m->mu);
        dsp_log_once(&reserve_logged, DSP_LOG_WARN,
                     "cannot reserve address space for pinned blocks "
                     "(ulimit -v?); lower DSP_ARENA_SIZE");
        dsp_stat_add(DSP_ST_pin_failures, 1);
        return fail(ENOMEM);
    }
    if (dsp_budget_reserve(len) != 0) {
        pthread_mutex_unlock(&m->mu);
        return fail(ENOMEM);
    }
    int huge = m->huge_mode == 1 || (m->huge_mode == 0 && len >= DSP_HUGE_PAGE);
    s = dsp_arena_take(len, huge ? DSP_HUGE_PAGE : DSP_PAGE);
    if (!s) {
        dsp_budget_release(len);
        pthread_mutex_unlock(&m->mu);
        dsp_log_once(&exhausted_logged, DSP_LOG_WARN,
                     "no address space left for pinned blocks (DSP_ARENA_SIZE); "
                     "raise DSP_ARENA_SIZE");
        dsp_stat_add(DSP_ST_pin_failures, 1);
        return fail(ENOMEM);
    }
    pthread_mutex_unlock(&m->mu);

    /* The slow part runs unlocked: the span is LIVE, so no one else touches it. */
    int rc = dsp_pin_populate_lock(s);

    pthread_mutex_lock(&m->mu);
    if (rc == 0 && dsp_reg_insert(s->base, s->len, DSP_RANGE_BLOCK, 0, s) != 0) {
        rc = -ENOMEM;
        if (dsp_pin_drop(s) != 0) { /* still locked: keep it, pooled and counted */
            dsp_pool_put(s);
            pthread_mutex_unlock(&m->mu);
            dsp_stat_add(DSP_ST_pin_failures, 1);
            return fail(ENOMEM);
        }
    }
    if (rc != 0) {
        dsp_budget_release(len);
        dsp_arena_vacate(s);
        pthread_mutex_unlock(&m->mu);
        dsp_stat_add(DSP_ST_pin_failures, 1);
        return fail(ENOMEM);
    }
    dsp_stat_add(DSP_ST_pinned_new_bytes, len);
    count_live(s, 1);
    pthread_mutex_unlock(&m->mu);
    return (void *)s->base;
}

DSP_API int dsp_free(void *ptr) {
    if (!ptr || !dsp_in_arena(ptr)) return errno = EINVAL, -1;
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_range r;
    pthread_mutex_lock(&m->mu);
    if (!dsp_reg_find((uintptr_t)ptr, &r) || r.base != (uintptr_t)ptr ||
        r.kind != DSP_RANGE_BLOCK) {
        pthread_mutex_unlock(&m->mu);
        return errno = EINVAL, -1;
    }
    dsp_reg_remove(r.base, NULL);
    struct dsp_span *s = r.owner;
    count_live(s, -1);
    retire(s);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

DSP_API int dsp_is_pinned(const void *ptr, size_t len) {
    return dsp_reg_contains((uintptr_t)ptr, len);
}

DSP_API size_t dsp_trim(void) {
    if (!dsp_ensure_init()) return 0;
    pthread_mutex_lock(&dsp_mgr.mu);
    size_t n = dsp_pool_release_until(0);
    pthread_mutex_unlock(&dsp_mgr.mu);
    return n;
}

DSP_API int dsp_stats_json(char *buf, size_t cap) {
    dsp_ensure_init();
    return dsp_stats_format_json(buf, cap);
}

DSP_API const char *dsp_version(void) {
    return DSP_VERSION_STRING;
}
