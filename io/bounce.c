#include "fork.h"
#include "bounce.h"

#include "block.h"
#include "config.h"
#include "internal.h"
#include "log.h"

#include <pthread.h>

#define CLASSES 48

#define mu (dsp_fork_locks.slot[DSP_FORK_BOUNCE]) /* fork.c takes it at fork (fork.h) */
static void *free_list[CLASSES];                  /* a kept buffer's first word links the next */
static size_t held;                               /* bytes in use and kept */
static int stale; /* set in a forked child: kept buffers are not pinned */

static unsigned class_of(size_t len, size_t *cap) {
    if (len > (size_t)1 << (CLASSES - 1)) {
        *cap = 0;
        return CLASSES;
    }
    unsigned k = DSP_BOUNCE_MIN_SHIFT;
    while (((size_t)1 << k) < len) k++;
    *cap = (size_t)1 << k;
    return k;
}

/* Frees kept buffers, largest first, until held + need fits limit (all with
 * need == SIZE_MAX). Called with mu held; returns bytes freed. counted: the
 * manager counts them as kept (dsp_block_keep); a fork child's stale ones it
 * does not (its fork handler cleared the count). */
static size_t release_kept(size_t need, size_t limit, int counted) {
    size_t freed = 0;
    for (int k = CLASSES - 1; k >= DSP_BOUNCE_MIN_SHIFT; k--) {
        while (free_list[k] && (need == (size_t)-1 || held + need > limit)) {
            void *b = free_list[k];
            free_list[k] = *(void **)b;
            if (counted) dsp_block_unkeep((size_t)1 << k);
            dsp_block_free((uintptr_t)b);
            held -= (size_t)1 << k;
            freed += (size_t)1 << k;
        }
    }
    return freed;
}

static void drop_stale(void) {
    if (!stale) return;
    stale = 0;
    release_kept((size_t)-1, 0, 0);
    held = 0;
}

void *dsp_bounce_get(size_t len, size_t *cap) {
    unsigned k = class_of(len, cap);
    if (k >= CLASSES) return NULL;
    size_t limit = (size_t)dsp_opt(DSP_OPT_BOUNCE_POOL);
    pthread_mutex_lock(&mu);
    drop_stale();
    void *b = free_list[k];
    if (b) {
        free_list[k] = *(void **)b;
        pthread_mutex_unlock(&mu);
        dsp_block_unkeep(*cap);
        return b;
    }
    if (held + *cap > limit) release_kept(*cap, limit, 1);
    if (held + *cap > limit) {
        pthread_mutex_unlock(&mu);
        dsp_once(DSP_LOG_WARN,
                 "libaio: bounce pool full (DSP_BOUNCE_POOL=%zu bytes, %zu held): I/O that "
                 "needs a bounce buffer of %zu bytes passes through unchanged",
                 limit, held, *cap);
        return NULL;
    }
    held += *cap; /* reserved: pinning runs outside the lock */
    pthread_mutex_unlock(&mu);
    b = dsp_block_alloc(*cap, DSP_BLK_QUIET, NULL);
    if (!b) {
        pthread_mutex_lock(&mu);
        held -= *cap;
        pthread_mutex_unlock(&mu);
        dsp_once(DSP_LOG_WARN,
                 "libaio: cannot pin a bounce buffer of %zu bytes (DSP_MAX_PINNED or "
                 "RLIMIT_MEMLOCK): I/O passes through unchanged",
                 *cap);
    }
    return b;
}

static void keep(void *buf, size_t cap) {
    size_t c;
    unsigned k = class_of(cap, &c);
    *(void **)buf = free_list[k];
    free_list[k] = buf;
}

/* A buffer is kept only as the manager's pool limit allows (issue 30: every
 * cache of pinned memory under one limit, DSP_POOL_MAX or the node share);
 * otherwise it goes to the manager's pool, whose rule decides what stays. */
void dsp_bounce_put(void *buf, size_t cap) {
    if (!dsp_block_keep(cap)) {
        dsp_block_free((uintptr_t)buf);
        pthread_mutex_lock(&mu);
        held -= cap;
        pthread_mutex_unlock(&mu);
        return;
    }
    pthread_mutex_lock(&mu);
    keep(buf, cap);
    pthread_mutex_unlock(&mu);
}

size_t dsp_bounce_trim(void) {
    pthread_mutex_lock(&mu);
    drop_stale();
    size_t n = release_kept((size_t)-1, 0, 1);
    pthread_mutex_unlock(&mu);
    return n;
}

void dsp_bounce_fork_child(void) {
    stale = 1;
}

void dsp_bounce_fork_adopt(void *buf, size_t cap) {
    keep(buf, cap); /* the child has one thread */
}
