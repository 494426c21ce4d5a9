/* The memory of a span: populated, locked, dropped, and put back as the
 * manager made it. */
#ifndef DSP_PIN_H
#define DSP_PIN_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

struct dsp_manager;
struct dsp_span;

/* Populates (and locks) a LIVE span outside the manager's lock, touching only
 * memory, never the span: returns DSP_PIN_* bits for the caller to record under
 * the lock, or -errno with the stage logged (the memory is then unmapped), or,
 * when even that failed, DSP_PIN_STUCK(errno): its pages may stay populated
 * and locked, so the caller keeps the span counted and never reuses it.
 * With lock_optional a refused mlock is no error: DSP_PIN_LOCKED is clear.
 * pages: 1 ask for transparent huge pages, -1 forbid them (MADV_NOHUGEPAGE),
 * 0 neither (manager.c, page_kind); under DSP_HUGEPAGES=auto huge pages that
 * populate slower than small ones are given up for the rest of the block
 * (DSP_PIN_HUGE clear). node: the NUMA node to bind it to
 * before it is populated (numa.h), -1 none; then DSP_PIN_NODE(rc) says the
 * node its pages landed on (-1 unknown). */
#define DSP_PIN_LOCKED       1
#define DSP_PIN_HUGE         2
#define DSP_PIN_SHARED       4 /* mapped from the memfd (asked by s->shared) */
#define DSP_PIN_ON(node)     (((node) + 1) << 8)
#define DSP_PIN_NODE(rc)     ((((rc) >> 8) & 0xff) - 1)
#define DSP_PIN_STUCK_BASE   (-4096)
#define DSP_PIN_STUCK(err)   (DSP_PIN_STUCK_BASE - (err))
#define DSP_PIN_IS_STUCK(rc) ((rc) <= DSP_PIN_STUCK_BASE)
int dsp_pin_populate_lock(struct dsp_manager *m, struct dsp_span *s, int lock, int lock_optional,
                          int pages, int node);
/* Unlock, free the memory, PROT_NONE again: 0, or -ENOMEM when that would
 * take the process's maps into the reserve left to the program (maps.c), or
 * the -errno of the failed mmap (logged with it) when a locked span could not
 * even be unlocked; in both cases it is unchanged and must stay accounted. */
int dsp_pin_drop(struct dsp_manager *m, struct dsp_span *s);
/* mlock2(MLOCK_ONFAULT) of a mapped range, the way every block is locked (so
 * that relocked ranges keep merging with their neighbours): 0 or -errno. */
int dsp_pin_lock_range(void *base, size_t len);
/* Populates [base, base+len) with up to threads threads, the helpers on
 * cpus when given (the CPUs of the node the range is bound to). huge, when
 * given and 1: the range has MADV_HUGEPAGE that timing may take back (pin.c,
 * populate_part); set to 0 when its huge pages proved slow and the rest got
 * small ones. */
int dsp_prefault(void *base, size_t len, int threads, const cpu_set_t *cpus, int *huge);
/* How many threads populate a new block of len bytes: DSP_PREFAULT_THREADS,
 * or by the block's size and the CPUs the process may run on (auto). */
int dsp_pin_threads(struct dsp_manager *m, size_t len);
/* Under mu: a span whose mapping the program changed (memcalls.c), put back
 * as the manager made it. */
void dsp_mem_restore(struct dsp_span *s);

#endif
