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

/* DIRECT_UNPINNED is 0: the fast path's common class, which it tells from the
 * others with one OR over the iocbs (dsp_aio_fast_classify). */
enum dsp_aio_cls {
    DSP_AIO_DIRECT_UNPINNED = 0,
    DSP_AIO_PASS,
    DSP_AIO_DIRECT_PINNED,
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

/* 1 when the calling thread's tracked mask leaves SIGSEGV and SIGBUS open and
 * can be trusted (io/guard.h): io_submit's fast path may read iocbs without
 * dsp_guard_enter. A new thread's first call, or one that blocks either
 * signal, or a process where the mask is asked at every call, takes the
 * general path, which asks. */
static inline int dsp_aio_fast_thread(void) {
    return __atomic_load_n(&dsp_guard_mask, __ATOMIC_RELAXED) == DSP_MASK_OPEN &&
           !__atomic_load_n(&dsp_guard_ask, __ATOMIC_RELAXED);
}

/* The fast path's whole policy, set by io/aio.c before it turns the path on:
 * a read or write with any of these bits set in its buffer, length or (for a
 * read) offset needs the fd cache's word to go as it is. DSP_DIO_MAX_ALIGN - 1
 * under DSP_AIO_BOUNCE=misaligned, 0 under never (every read and write goes as
 * it is); the other policies have no fast path. */
extern uint64_t dsp_aio_fast_mask;

/* The common case, in one pass; inline in io_submit (issue 29: every
 * instruction here is paid once per I/O). n is 1 to DSP_AIO_FAST_MAX. Returns
 * 1 when the fast path covers all n iocbs, with cls[] filled and the OR of
 * their classes in *odd (0: all DSP_AIO_DIRECT_UNPINNED), or 0 to send the
 * call down the general path, which also answers any bad pointer exactly.
 * Per iocb: four words read by dsp_guard_iocb_words (on x86-64 no jump
 * buffer to set up), a few tests of opcode and alignment (the fd cache's
 * word only for a misaligned one: docs/io.md), and a registry lookup only
 * while something is registered (tests/aio: aio_hook_steps counts the
 * instructions).
 *
 * Only where a fault of the words' loads reaches the guard's handler: the
 * caller checks it, io_submit with dsp_aio_fast_thread (no dsp_guard_enter:
 * the loads need no guard state), the general path with dsp_guard_faults_ok
 * after dsp_guard_enter. */
#define DSP_AIO_FAST_MAX 32
static inline __attribute__((always_inline)) int
dsp_aio_fast_classify(struct iocb **ios, long n, uint8_t *cls, unsigned *odd) {
    /* The array is checked as the iocb pointers are (io/guard.c): a bad one
     * is the general path's to answer without a load. One compare for any n
     * up to DSP_AIO_FAST_MAX (an array in the top 256 bytes of the address
     * space goes the general way). */
    if ((uintptr_t)ios - 65536 > DSP_USER_VA_END - 65536 - sizeof *ios * DSP_AIO_FAST_MAX) return 0;
    uint64_t w[4 * DSP_AIO_FAST_MAX];
    if (dsp_guard_iocb_words((void *const *)ios, n, w) != n) return 0;
    /* Nothing registered (most programs: no pin yet), nothing is pinned: no
     * lookup per iocb (issue 29: a sixth of the hook's instructions under
     * fio). A block registered meanwhile counts as unpinned, as it would a
     * moment earlier. */
    int any = dsp_reg_count() != 0;
    uint64_t mask = dsp_aio_fast_mask;
    unsigned all = 0;
    for (long i = 0; i < n; i++) {
        const uint64_t *x = w + 4 * i;
        unsigned op = (uint16_t)x[0], c = DSP_AIO_DIRECT_UNPINNED;
        if (op > IOCB_CMD_PWRITE) {
            if (op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV) return 0;
            c = DSP_AIO_PASS; /* an opcode the shim never touches */
        } else {
            /* A write's offset is never widened (docs/io.md). */
            uint64_t bits = x[1] | x[2] | (op == IOCB_CMD_PREAD ? x[3] : 0);
            /* Misaligned counts as sent as it is where the fd cache already
             * holds the fd as buffered (no query here, the general path asks;
             * issue 29: fio's buffered default). */
            if ((bits & mask) && dsp_dio_peek((int)(x[0] >> 32)) != 0) return 0;
            if (any && x[2] <= DSP_MAX_RW && dsp_reg_contains(x[1], x[2]))
                c = DSP_AIO_DIRECT_PINNED;
        }
        cls[i] = (uint8_t)c;
        all |= c;
    }
    *odd = all;
    return 1;
}

/* Classifies ios[0..n) (n at most DSP_AIO_CHUNK) into p, preparing a bounced
 * state for each iocb that needs one (*bounced counts them): returns how many
 * can be submitted (fewer when iocb i cannot be read: the kernel would stop
 * there too). Inside dsp_guard_enter/leave. */
long dsp_aio_classify(io_context_t ctx, struct iocb **ios, long n, struct dsp_aio_plan *p,
                      int *bounced);

#endif
