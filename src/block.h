/* The manager as the layers (CUDA, malloc hints, I/O) see it: blocks with a
 * little state of their own, kept in the registry entry so that lookups need no
 * lock. */
#ifndef DSP_BLOCK_H
#define DSP_BLOCK_H

#include <stddef.h>
#include <stdint.h>

enum {
    DSP_BLK_LOCK_OPTIONAL = 1, /* populated but unlocked if mlock is refused (the driver pins) */
    DSP_BLK_QUIET = 4, /* a budget refusal is counted, not logged (the caller logs its own line) */
    DSP_BLK_RETRY = 8, /* a budget refusal is neither logged nor counted (a retry follows) */
};
/* Driver-like pinned memory of a registered span kind (span_kind.h):
 * MAP_SHARED (forked children share it, fork copies nothing), out of core
 * dumps, never cut from a chunk; taken from, and pooled in, that kind's
 * pool of spans it reuses only (issue 13). */
#define DSP_BLK_SERVED(kind)     ((unsigned)(kind) << 8)
#define DSP_BLK_SERVED_KIND(how) (((how) >> 8) & 0xffu)
/* The layer's own flag bits for the block, in its registry entry from the
 * start (a pooled block's bits were its last owner's). */
#define DSP_BLK_USER(bits) ((unsigned)(bits) << 16)

/* Registry flags of a manager block. */
#define DSP_BLOCKF_REG  0x8000u /* its span is registered by a span kind (span_kind.h) */
#define DSP_BLOCKF_USER 0x7fffu /* the layers' own bits (preload/block_bits.h) */

struct dsp_block {
    uintptr_t base;
    size_t len;      /* the caller's block: its size rounded up to the page */
    size_t span_len; /* from dsp_block_alloc: the memory behind it, >= len, to register whole */
    unsigned flags;  /* DSP_BLOCKF_* */
    int inherited;   /* from the parent across fork: not pinned here, never a driver call */
    int fresh;       /* from dsp_block_alloc: newly mapped, so it reads as zeros */
    int unsynced;    /* from dsp_block_alloc: a registered span freed with no device
                        wait since: wait for the device before the new owner uses it */
};

/* A live block of at least size bytes, or NULL with errno (as dsp_alloc). */
void *dsp_block_alloc(size_t size, unsigned how, struct dsp_block *out);

/* As dsp_block_alloc; refused by the budget (ENOMEM), it asks the registered
 * span kinds' pools to make room (span_kind.h, make_room) and tries once
 * more. The kind's layer may call its party (the CUDA driver): for the
 * public API and that layer's own allocations, never for another layer's
 * allocation path. */
void *dsp_block_alloc_room(size_t size, unsigned how, struct dsp_block *out);

/* The live block holding p, pinned in this process (not inherited across
 * fork): 1 with *out filled, else 0. Lock-free. */
int dsp_block_find(const void *p, struct dsp_block *out);

/* The live block holding p, inherited or not: 1 with *out filled, else 0.
 * Lock-free. */
int dsp_block_holding(const void *p, struct dsp_block *out);

/* The live block starting exactly at base, inherited or not: 1 or 0. */
int dsp_block_at(uintptr_t base, struct dsp_block *out);

/* Records that the block's whole span is now registered by kind
 * (span_kind.h), the layer's bits now user. 0 or -EINVAL. */
int dsp_block_set_registered(uintptr_t base, int kind, unsigned user);

/* Frees a live block by its exact base: 0, or 1 when pooled memory is now over
 * its limit (dsp_pool_limit: a kind's registered pool is its layer's to trim), or -EINVAL. A
 * registered block goes to its kind's pool, the kind's freed() hook
 * dropping the layer's state. */
int dsp_block_free(uintptr_t base);

/* As dsp_block_free, after the caller waited for the device (cudaFreeHost):
 * no copy submitted before can still use the block, which is pooled as
 * synced. dsp_block_free pools a registered block as unsynced: its next
 * owner, or its eviction, waits first (issue 13). */
int dsp_block_free_synced(uintptr_t base);

/* As dsp_block_free, but only while the block's flags match: (flags & mask)
 * == want, checked with the free under the manager's lock (a check made
 * before, without it, may see a block freed and handed to another owner
 * since). -EINVAL when they do not; *out, if given, is the block freed. */
int dsp_block_free_if(uintptr_t base, unsigned mask, unsigned want, struct dsp_block *out);

/* As dsp_block_free (same results), but gives the memory back to the kernel at once instead
 * of pooling it: for a block its layer could not use (registration failed). */
int dsp_block_discard(uintptr_t base);

/* Another layer's cache of live blocks kept for reuse (the libaio bounce
 * pool): dsp_trim() calls fn too and adds the bytes it gave back. At most a
 * few; registering one twice is a no-op. */
void dsp_add_trimmer(size_t (*fn)(void));
/* Such a cache asks before it keeps a live block of len bytes idle: 1 when it
 * may (everything idle, the pools and what layers keep, stays within the
 * pools' limit: DSP_POOL_MAX or the node share), counted until
 * dsp_block_unkeep (reused, or freed); 0: free it instead, into the pool
 * whose rule decides what goes. */
int dsp_block_keep(size_t len);
void dsp_block_unkeep(size_t len);

#endif
