/* The table of bounced libaio requests (io/aio_state.h): where the states
 * live, their free list, the pins of io_cancel, the marks of io_destroy and
 * the fork handlers that reset them. */
#include "fork.h"
#include "aio_state.h"

#include "errname.h"
#include "log.h"
#include "bounce.h"
#include "dio.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

/* Bounce states: one mapping, so "is this event's obj ours?" is a compare.
 * tab_mu guards the free list, high_water, pins and put_waiting; no call
 * into libaio, the bounce pool, the manager or the log is made with it held
 * (docs/design.md has the lock order). */
struct dsp_aio_bstate *dsp_aio_tab;
_Atomic long dsp_aio_inflight;
#define tab_mu (dsp_fork_locks.slot[DSP_FORK_AIO]) /* fork.c takes it at fork (fork.h) */
static uint32_t free_head = UINT32_MAX, high_water;
static uint64_t destroy_tokens;
/* Explicit, not dsp_once: dsp_aio_state_get's two refusals share it, so
 * whichever comes first is the one warning. */
static int tab_logged;

struct dsp_aio_bstate *dsp_aio_state_get(void) {
    pthread_mutex_lock(&tab_mu);
    if (!dsp_aio_tab) {
        void *m = mmap(NULL, sizeof(struct dsp_aio_bstate) * DSP_AIO_MAX_STATE,
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            pthread_mutex_unlock(&tab_mu);
            dsp_log_once(&tab_logged, DSP_LOG_WARN,
                         "libaio: no memory for bounce bookkeeping (%s): I/O passes through",
                         dsp_errname(errno));
            return NULL;
        }
        __atomic_store_n(&dsp_aio_tab, (struct dsp_aio_bstate *)m, __ATOMIC_RELEASE);
    }
    struct dsp_aio_bstate *s = NULL;
    if (free_head != UINT32_MAX) {
        s = &dsp_aio_tab[free_head];
        free_head = s->next_free;
    } else if (high_water < DSP_AIO_MAX_STATE) {
        s = &dsp_aio_tab[high_water++];
    }
    if (s) {
        s->destroy_token = 0;
        atomic_fetch_add_explicit(&dsp_aio_inflight, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&tab_mu);
    if (!s)
        dsp_log_once(&tab_logged, DSP_LOG_WARN,
                     "libaio: %d bounced requests already in flight: more pass through",
                     DSP_AIO_MAX_STATE);
    return s;
}

/* Called with tab_mu held. */
static void free_push(struct dsp_aio_bstate *s) {
    s->next_free = free_head;
    free_head = (uint32_t)(s - dsp_aio_tab);
}

void dsp_aio_state_put(struct dsp_aio_bstate *s) {
    if (s->buf) dsp_bounce_put(s->buf, s->cap);
    s->buf = NULL;
    pthread_mutex_lock(&tab_mu);
    /* An io_cancel still has this kiocb in the kernel's hands: reused now,
     * the kernel could cancel another request by its address. */
    if (s->pins)
        s->put_waiting = 1;
    else
        free_push(s);
    pthread_mutex_unlock(&tab_mu);
    atomic_fetch_sub_explicit(&dsp_aio_inflight, 1, memory_order_relaxed);
}

/* --- io_cancel ------------------------------------------------------------ */

/* The bounced state of the caller's iocb on ctx, or NULL; called with tab_mu
 * held. Cancel is rare: a scan of the states in use. */
static struct dsp_aio_bstate *find_user(io_context_t ctx, struct iocb *cb, uint64_t *status) {
    for (uint32_t i = 0; i < high_water; i++) {
        uint64_t v = atomic_load_explicit(&dsp_aio_tab[i].status, memory_order_acquire);
        if ((v & 1) && dsp_aio_tab[i].user == cb && dsp_aio_tab[i].ctx == ctx) {
            *status = v;
            return &dsp_aio_tab[i];
        }
    }
    return NULL;
}

struct dsp_aio_bstate *dsp_aio_state_pin(io_context_t ctx, struct iocb *cb, uint64_t *status) {
    pthread_mutex_lock(&tab_mu);
    struct dsp_aio_bstate *s = find_user(ctx, cb, status);
    if (s) s->pins++;
    pthread_mutex_unlock(&tab_mu);
    return s;
}

void dsp_aio_state_unpin(struct dsp_aio_bstate *s) {
    pthread_mutex_lock(&tab_mu);
    if (--s->pins == 0 && s->put_waiting) {
        s->put_waiting = 0;
        free_push(s);
    }
    pthread_mutex_unlock(&tab_mu);
}

/* --- io_destroy ----------------------------------------------------------- */

uint64_t dsp_aio_state_mark(io_context_t ctx, uint32_t *seen) {
    pthread_mutex_lock(&tab_mu);
    uint64_t token = ++destroy_tokens;
    for (uint32_t i = 0; i < high_water; i++) {
        uint64_t v = atomic_load_explicit(&dsp_aio_tab[i].status, memory_order_acquire);
        if ((v & 1) && dsp_aio_tab[i].ctx == ctx) {
            dsp_aio_tab[i].destroy_status = v;
            dsp_aio_tab[i].destroy_token = token;
        }
    }
    *seen = high_water;
    pthread_mutex_unlock(&tab_mu);
    return token;
}

void dsp_aio_state_release_marked(uint64_t token, uint32_t seen) {
    /* A state reaped meanwhile and reused by another request has a newer
     * status word: the exact claim leaves it alone. */
    for (uint32_t i = 0; i < seen; i++) {
        pthread_mutex_lock(&tab_mu);
        int mine = dsp_aio_tab[i].destroy_token == token &&
                   dsp_aio_state_claim_exact(&dsp_aio_tab[i], dsp_aio_tab[i].destroy_status);
        pthread_mutex_unlock(&tab_mu);
        if (mine) dsp_aio_state_put(&dsp_aio_tab[i]);
    }
}

/* --- fork ----------------------------------------------------------------- */

/* The child has no aio context of the parent's (the ring is not inherited):
 * every bounced request is gone, its buffer freed with the rest (bounce's
 * child handler has run: fork.h). */
void dsp_aio_state_fork_child(void) {
    for (uint32_t i = 0; i < high_water; i++) {
        struct dsp_aio_bstate *s = &dsp_aio_tab[i];
        if ((atomic_load_explicit(&s->status, memory_order_relaxed) & 1) && s->buf)
            dsp_bounce_fork_adopt(s->buf, s->cap);
        atomic_store_explicit(&s->status, 0, memory_order_relaxed);
        s->buf = NULL;
        s->pins = 0; /* a cancel in another thread of the parent */
        s->put_waiting = 0;
    }
    free_head = UINT32_MAX;
    high_water = 0;
    atomic_store_explicit(&dsp_aio_inflight, 0, memory_order_relaxed);
    /* The child shares its open files with the parent, whose F_SETFL it
     * does not see: it starts with no cached answer. */
    dsp_dio_forget();
}
