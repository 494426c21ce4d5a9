/* Classification of the iocbs of one io_submit (io/aio_classify.c): which
 * go to the kernel as they are, pinned or not, which pass through untouched,
 * and which are sent through a bounce buffer, with their bounced state
 * prepared (docs/io.md has the rules). */
#ifndef DSP_AIO_CLASSIFY_H
#define DSP_AIO_CLASSIFY_H

#include "aio_state.h"
#include "config.h"
#include "dio.h"
#include "guard.h"
#include "internal.h"
#include "registry.h"

#include <stdint.h>

#define DSP_AIO_CHUNK 128 /* iocbs classified and submitted per real call */

enum dsp_aio_cls {
    DSP_AIO_PASS = 0,
    DSP_AIO_DIRECT_PINNED,
    DSP_AIO_DIRECT_UNPINNED,
    DSP_AIO_BOUNCED
};

/* One iocb as read at submit, and what classification made of it. */
struct dsp_aio_plan {
    struct iocb *user;
    uint64_t buf, nbytes;
    int64_t off;
    uint32_t fd;
    uint16_t op;
    uint8_t cls;
    struct dsp_aio_bstate *st;
    uint64_t bounce_bytes; /* counted after submission, when st may be another's */
};

/* DSP_AIO_BOUNCE, set by io/aio.c before the first classification. */
extern int dsp_aio_policy;

/* One iocb's class on the fast path, or -1 when the general path must see
 * it: a plain read or write that the policy sends as it is (4 KiB-aligned
 * under misaligned, anything under never), or an opcode the shim never
 * touches. Misaligned I/O counts as sent as it is where the fd cache already
 * holds the fd as buffered (dsp_dio_peek: no query here, the general path
 * asks; issue 29: fio's buffered default). any: whether anything is
 * registered (nothing is pinned otherwise). */
static inline int fast_one(uint16_t op, uint32_t fd, uint64_t buf, uint64_t len, uint64_t off,
                           int any) {
    if (op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV) return -1;
    if (op != IOCB_CMD_PREAD && op != IOCB_CMD_PWRITE) return DSP_AIO_PASS;
    uint64_t bits = buf | len | (op == IOCB_CMD_PREAD ? off : 0);
    if (dsp_aio_policy != DSP_AIO_BOUNCE_NEVER &&
        (dsp_aio_policy != DSP_AIO_BOUNCE_MISALIGNED ||
         ((bits & (DSP_DIO_MAX_ALIGN - 1)) && dsp_dio_peek((int)fd) != 0)))
        return -1;
    return any && len <= DSP_MAX_RW && dsp_reg_contains(buf, len) ? DSP_AIO_DIRECT_PINNED
                                                                  : DSP_AIO_DIRECT_UNPINNED;
}

/* The common case, in one pass, inside dsp_guard_enter/leave; inline in
 * io_submit (issue 29: every instruction here is paid once per I/O). Returns
 * 1 with cls[] filled when the fast path covers all n iocbs (at most
 * DSP_AIO_CHUNK); 0 sends the call down the general path (which also answers
 * any bad pointer exactly). The cost per iocb: four words read by
 * dsp_guard_iocb_words where it exists (no jump buffer to set up), a few
 * tests, and a registry lookup only while something is registered
 * (tests/aio: aio_hook_steps counts the instructions). */
static inline int dsp_aio_fast_classify(struct iocb **ios, long n, uint8_t *cls) {
    if (!dsp_guard_faults_ok) return 0; /* no plain loads in this thread */
    /* Nothing registered (most programs: no pin yet), nothing is pinned: no
     * lookup per iocb (issue 29: a sixth of the hook's instructions under
     * fio). A block registered meanwhile counts as unpinned, as it would a
     * moment earlier. */
    int any = dsp_reg_count() != 0;
#if DSP_GUARD_IOCB_WORDS
    /* The array is checked as the iocb pointers are (io/guard.c): a bad one
     * is the general path's to answer without a load. */
    if (!dsp_guard_plausible((uintptr_t)ios, sizeof *ios * (size_t)n)) return 0;
    enum { PART = 16 };
    uint64_t w[4 * PART];
    for (long at = 0; at < n; at += PART) {
        long k = n - at < PART ? n - at : PART;
        if (dsp_guard_iocb_words((void *const *)(ios + at), k, w) != k) return 0;
        for (long i = 0; i < k; i++) {
            const uint64_t *x = w + 4 * i;
            int c = fast_one((uint16_t)x[0], (uint32_t)(x[0] >> 32), x[1], x[2], x[3], any);
            if (c < 0) return 0;
            cls[at + i] = (uint8_t)c;
        }
    }
    return 1;
#else
    volatile int all = 0;
    int failed;
    DSP_GUARD_BEGIN(failed)
    if (dsp_guard_plausible((uintptr_t)ios, sizeof *ios * (size_t)n)) {
        long i = 0;
        for (; i < n; i++) {
            const struct iocb *cb = ios[i];
            if (!dsp_guard_plausible((uintptr_t)cb, sizeof *cb)) break;
            int c = fast_one(cb->aio_lio_opcode, cb->aio_fildes, cb->aio_buf, cb->aio_nbytes,
                             (uint64_t)cb->aio_offset, any);
            if (c < 0) break;
            cls[i] = (uint8_t)c;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        all = i == n;
    }
    DSP_GUARD_END();
    return !failed && all;
#endif
}

/* Classifies ios[0..n) (n at most DSP_AIO_CHUNK) into p, preparing a bounced
 * state for each iocb that needs one (*bounced counts them): returns how many
 * can be submitted (fewer when iocb i cannot be read: the kernel would stop
 * there too). Inside dsp_guard_enter/leave. */
long dsp_aio_classify(io_context_t ctx, struct iocb **ios, long n, struct dsp_aio_plan *p,
                      int *bounced);

#endif
