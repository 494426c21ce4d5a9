/* Classification of the iocbs of one io_submit (io/aio_classify.c): which
 * go to the kernel as they are, pinned or not, which pass through untouched,
 * and which are sent through a bounce buffer, with their bounced state
 * prepared (docs/io.md has the rules). */
#ifndef DSP_AIO_CLASSIFY_H
#define DSP_AIO_CLASSIFY_H

#include "aio_state.h"

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

/* The common case, in one pass and without a copy of the iocbs: 1 with cls[]
 * filled when it covers all n (at most DSP_AIO_CHUNK), else 0. Inside
 * dsp_guard_enter/leave. */
int dsp_aio_fast_classify(struct iocb **ios, long n, uint8_t *cls);

/* Classifies ios[0..n) (n at most DSP_AIO_CHUNK) into p, preparing a bounced
 * state for each iocb that needs one (*bounced counts them): returns how many
 * can be submitted (fewer when iocb i cannot be read: the kernel would stop
 * there too). Inside dsp_guard_enter/leave. */
long dsp_aio_classify(io_context_t ctx, struct iocb **ios, long n, struct dsp_aio_plan *p,
                      int *bounced);

#endif
