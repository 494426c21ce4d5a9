/* The registry: every pinned range of the process (manager blocks, and ranges
 * other layers pin, such as CUDA host registrations), non-overlapping, with
 * lookup of any interior address in O(log n).
 *
 * A B+tree keyed by base address with optimistic (seqlock) readers: lookups
 * from any number of threads run in parallel and write no shared memory;
 * inserts and removals are serialised (registry.c says why that is safe). */
#ifndef DSP_REGISTRY_H
#define DSP_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

enum dsp_range_kind { DSP_RANGE_BLOCK = 1, DSP_RANGE_EXTERNAL = 2 };

struct dsp_range {
    uintptr_t base, end; /* [base, end) */
    void *owner;         /* the manager's span for blocks */
    uint32_t gen;        /* registry generation when it was pinned */
    uint16_t kind;
    uint16_t flags; /* free for the layers' own use */
};

/* 0; -EINVAL for an empty or wrapping range; -EEXIST when it overlaps a range
 * already registered; -ENOMEM when no node could be allocated. */
int dsp_reg_insert(uintptr_t base, size_t len, unsigned kind, unsigned flags, void *owner);

/* Removes the range that starts exactly at base: 0 (and *out filled when not
 * NULL), or -ENOENT. */
int dsp_reg_remove(uintptr_t base, struct dsp_range *out);

/* The range holding addr, whatever its generation: 1 and *out filled, or 0.
 * In a signal handler that interrupted this thread's own write of the
 * registry, the answer is not known: 0 (and dsp_reg_contains says 0). */
int dsp_reg_find(uintptr_t addr, struct dsp_range *out);

/* The range with the greatest base <= addr, holding addr or not: 1 and *out
 * filled, or 0. */
int dsp_reg_floor(uintptr_t addr, struct dsp_range *out);

/* 1 when [addr, addr+len) lies inside one range pinned in this process (not an
 * inherited one in a forked child), else 0. */
int dsp_reg_contains(uintptr_t addr, size_t len);

/* Replaces the flags of the range that starts exactly at base: 0 or -ENOENT. */
int dsp_reg_set_flags(uintptr_t base, unsigned flags);

/* The current generation: a range whose gen differs was inherited across fork. */
uint32_t dsp_reg_generation(void);

/* How many ranges are registered: read inline by io_submit's fast path
 * (issue 29), written by the registry's writers only. */
extern size_t dsp_reg_n;
static inline size_t dsp_reg_count(void) {
    return __atomic_load_n(&dsp_reg_n, __ATOMIC_RELAXED);
}

/* Tests only (tests/unit/test_registry.c): when set, called by every writer
 * between the two increments of the sequence counter. */
extern void (*dsp_reg_test_mid_write)(void);

/* Fork: prepare takes the lock so no reader or writer is mid-way; the child
 * bumps the generation, so ranges inherited from the parent (whose locks the
 * child did not inherit) stop counting as pinned but can still be found. */
void dsp_reg_fork_child(void);

#endif
