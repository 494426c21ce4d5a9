/* The arena: one reservation of address space that every block is cut from,
 * so that "is this ours?" is a compare (manager.h, dsp_in_arena). Under the
 * manager's lock. */
#ifndef DSP_ARENA_H
#define DSP_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct dsp_manager;
struct dsp_span;

int dsp_arena_reserve(struct dsp_manager *m); /* 0 or -errno */
struct dsp_span *dsp_arena_take(struct dsp_manager *m, size_t len,
                                size_t align); /* a LIVE span, or NULL */
/* Memory already dropped; merges with vacant neighbours and returns the span
 * that now holds s (s itself may be gone). */
struct dsp_span *dsp_arena_vacate(struct dsp_manager *m, struct dsp_span *s);
struct dsp_span *dsp_span_split(struct dsp_manager *m, struct dsp_span *s,
                                size_t len); /* s keeps len; returns the tail */
void dsp_span_unlink(struct dsp_manager *m, struct dsp_span *s);
/* For the program's mlockall (memlock.c), under mu: shed_tail gives back the
 * reservation above the last block (a trailing vacant span included; hi drops
 * to the bump pointer first) and returns its length; restore_tail reserves it
 * again where nothing took it meanwhile (else the arena ends at the bump);
 * unlock_vacant munlocks every reserved-only range. */
size_t dsp_arena_shed_tail(struct dsp_manager *m);
void dsp_arena_restore_tail(struct dsp_manager *m, size_t len);
void dsp_arena_unlock_vacant(struct dsp_manager *m);
/* After a PROT_NONE mapping of the manager's: munlock it while MCL_FUTURE is
 * in force (a cheap check otherwise). Keeps errno. */
void dsp_arena_unlock_reserved(struct dsp_manager *m, uintptr_t base, size_t len);

#endif
