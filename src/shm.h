/* The memfd that served memory is mapped from (shm.c). */
#ifndef DSP_SHM_H
#define DSP_SHM_H

#include <stddef.h>
#include <stdint.h>

struct dsp_manager;
struct dsp_span;

/* Under mu: 1 when served blocks can be shared memory (the memfd is open and
 * still ours), else 0 (logged once; they are then private). */
int dsp_shm_ready(struct dsp_manager *m);
/* Fork child, under mu: the memfd is the parent's: closed here, the spans
 * mapping it marked FOREIGN (their pages are never punched from this side). */
void dsp_shm_fork_child(struct dsp_manager *m);
/* Maps a LIVE span of served memory read-write from the memfd, out of core
 * dumps: 0 or -errno (then nothing was mapped). */
int dsp_shm_map(struct dsp_manager *m, const struct dsp_span *s);
/* Gives an OURS span's pages back to the system, unlocking them; the caller
 * then maps the range PROT_NONE. */
void dsp_shm_punch(struct dsp_manager *m, const struct dsp_span *s);

#endif
