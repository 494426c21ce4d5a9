/* The libaio hooks' table of bounced requests (io/aio_state.c): one state per
 * request sent through a bounce buffer, taken at submit and given back at
 * completion, cancel, io_destroy or fork. Each state's status word holds a
 * generation and an in-flight bit (generation << 1 | in flight), so exactly
 * one caller claims a request, and a claim that names an old status word
 * leaves a state reused since alone. */
#ifndef DSP_AIO_STATE_H
#define DSP_AIO_STATE_H

#include <linux/aio_abi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define DSP_AIO_MAX_SEGS  32   /* iovecs a bounced vectored request may have */
#define DSP_AIO_MAX_STATE 4096 /* bounced requests in flight */

typedef void *io_context_t; /* libaio's: a pointer that holds the kernel's aio_context_t */

/* A bounced request: the iocb the kernel sees, and what completion needs. */
struct dsp_aio_bstate {
    struct iocb kiocb; /* first: an event's obj points here */
    struct iocb *user; /* the caller's iocb */
    io_context_t ctx;
    _Atomic uint64_t status; /* generation << 1 | in flight */
    uint64_t destroy_token;  /* set by io_destroy while it waits */
    uint64_t destroy_status; /* the status word io_destroy saw: which request it waits for */
    char *buf;
    size_t cap;
    size_t head;  /* the caller's first byte within buf (widened reads) */
    size_t total; /* bytes the caller asked for */
    int is_read;
    int nseg;
    struct iovec seg[DSP_AIO_MAX_SEGS]; /* where a read's bytes go back */
    uint32_t next_free;
    uint32_t pins;   /* io_cancel calls using kiocb now (tab_mu) */
    int put_waiting; /* released while pinned: freed by the last unpin (tab_mu) */
};

/* Written by io/aio_state.c only; here so that the completion path's lookups
 * stay inline. The table is one mapping (NULL until the first bounce), so "is
 * this event's obj ours?" is a compare. */
extern struct dsp_aio_bstate *dsp_aio_tab;
extern _Atomic long dsp_aio_inflight; /* states taken and not yet given back */

/* A fresh state, or NULL (one warning) when the table cannot be mapped or is
 * full: the request passes through then. */
struct dsp_aio_bstate *dsp_aio_state_get(void);
/* Gives s back, with its bounce buffer; a state an io_cancel has pinned is
 * freed by the last unpin instead. */
void dsp_aio_state_put(struct dsp_aio_bstate *s);

/* 1 when no state is taken: the hooks have nothing of theirs to look for. */
static inline int dsp_aio_state_idle(void) {
    return atomic_load_explicit(&dsp_aio_inflight, memory_order_relaxed) == 0;
}

/* Marks a filled state as in flight (before the kernel can complete it). */
static inline void dsp_aio_state_publish(struct dsp_aio_bstate *s) {
    uint64_t v = atomic_load_explicit(&s->status, memory_order_relaxed);
    atomic_store_explicit(&s->status, (v & ~(uint64_t)1) + 3, memory_order_release);
}

/* Takes back a published state the kernel did not accept. */
static inline void dsp_aio_state_withdraw(struct dsp_aio_bstate *s) {
    atomic_fetch_and_explicit(&s->status, ~(uint64_t)1, memory_order_relaxed);
}

/* Takes an in-flight state for completion or release: 1 for exactly one caller. */
static inline int dsp_aio_state_claim(struct dsp_aio_bstate *s) {
    uint64_t v = atomic_load_explicit(&s->status, memory_order_acquire);
    while (v & 1)
        if (atomic_compare_exchange_weak_explicit(&s->status, &v, v & ~(uint64_t)1,
                                                  memory_order_acq_rel, memory_order_acquire))
            return 1;
    return 0;
}

/* As dsp_aio_state_claim, but only while the state is still the request whose
 * status word was v (a state reused since has a newer generation). */
static inline int dsp_aio_state_claim_exact(struct dsp_aio_bstate *s, uint64_t v) {
    return (v & 1) &&
           atomic_compare_exchange_strong_explicit(&s->status, &v, v & ~(uint64_t)1,
                                                   memory_order_acq_rel, memory_order_acquire);
}

/* The state whose kiocb is at obj (an event's obj), or NULL: not ours. */
static inline struct dsp_aio_bstate *dsp_aio_state_of(uint64_t obj) {
    struct dsp_aio_bstate *t = __atomic_load_n(&dsp_aio_tab, __ATOMIC_ACQUIRE);
    if (!t || obj < (uintptr_t)t) return NULL;
    uint64_t off = obj - (uintptr_t)t;
    if (off >= sizeof(struct dsp_aio_bstate) * DSP_AIO_MAX_STATE ||
        off % sizeof(struct dsp_aio_bstate))
        return NULL;
    return &t[off / sizeof(struct dsp_aio_bstate)];
}

/* For io_cancel: the in-flight state of the caller's iocb cb on ctx, pinned
 * (not reused until dsp_aio_state_unpin, even if given back meanwhile), with
 * its status word in *status; or NULL. */
struct dsp_aio_bstate *dsp_aio_state_pin(io_context_t ctx, struct iocb *cb, uint64_t *status);
void dsp_aio_state_unpin(struct dsp_aio_bstate *s);

/* For io_destroy, before its real call: marks the states in flight on ctx and
 * returns the mark, with in *seen how far the table was in use. */
uint64_t dsp_aio_state_mark(io_context_t ctx, uint32_t *seen);
/* After the real call returned 0: gives back every state still in flight
 * under that mark. */
void dsp_aio_state_release_marked(uint64_t token, uint32_t seen);

/* tab_mu's fork slot (src/fork.h): the outermost lock, held while bounce.c's
 * is taken. */
#define DSP_FORK_AIO DSP_FORK_OUTER_0

/* Fork handlers (DSP_FORK_AIO), registered by io/aio.c. */
void dsp_aio_state_fork_child(void);

#endif
