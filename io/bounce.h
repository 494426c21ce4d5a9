/* Bounce buffers for the I/O wrappers: manager blocks (pinned, page-aligned),
 * in power-of-two classes from 64 KiB, reused. Bytes held, in use and kept,
 * stay within DSP_BOUNCE_POOL; a request that does not fit, or whose pinning
 * the manager refuses, gets NULL and its I/O passes through unchanged. */
#ifndef DSP_BOUNCE_H
#define DSP_BOUNCE_H

#include <stddef.h>

/* mu's fork slot (src/fork.h): taken under aio_state.c's tab_mu, held while
 * the manager's is taken (a kept block freed). */
#define DSP_FORK_BOUNCE DSP_FORK_OUTER_1

#define DSP_BOUNCE_MIN_SHIFT 16 /* 64 KiB: one class for every small I/O */

/* A buffer of at least len bytes (*cap says how many), or NULL. */
void *dsp_bounce_get(size_t len, size_t *cap);
void dsp_bounce_put(void *buf, size_t cap);

/* Everything kept is given back (dsp_trim, tests). */
size_t dsp_bounce_trim(void);

/* Fork handlers, registered by the I/O layer (src/fork.h): the child's buffers
 * are not pinned (mlock is not inherited); they are freed at its next request. */
void dsp_bounce_fork_child(void);
/* In the child after dsp_bounce_fork_child: a buffer that was in flight in the
 * parent (the child never completes that I/O), to be freed with the rest. */
void dsp_bounce_fork_adopt(void *buf, size_t cap);

#endif
