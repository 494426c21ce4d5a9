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
    /* Driver-like pinned memory: MAP_SHARED (forked children share it, fork
     * copies nothing), out of core dumps, never cut from a chunk; taken
     * from and pooled in the registered pool only (issue 13). */
    DSP_BLK_SERVED = 16,
};
/* The layer's own flag bits for the block, in its registry entry from the
 * start (a pooled block's bits were its last owner's). */
#define DSP_BLK_USER(bits) ((unsigned)(bits) << 16)

/* Registry flags of a manager block. */
#define DSP_BLOCKF_REG  0x8000u /* its span is registered with the CUDA driver */
#define DSP_BLOCKF_USER 0x7fffu /* the layer's own bits (CUDA: the flags asked for) */
/* The layers' bits within DSP_BLOCKF_USER, in one place so they never collide. */
#define DSP_BLOCKF_CUDA_SERVED  0x4000u /* served by cudaHostAlloc/cudaMallocHost */
#define DSP_BLOCKF_CUDA_ASKED   0x000fu /* the cudaHostAlloc flags it asked for */
#define DSP_BLOCKF_MALLOC       0x2000u /* a malloc hint's block: free() may take it */
#define DSP_BLOCKF_MALLOC_ALIGN 0x01f0u /* log2 of its alignment above the page, else 0 */

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

/* As dsp_block_alloc; refused by the budget (ENOMEM), it asks the CUDA
 * layer's pool to make room and tries once more. It may call the driver: for
 * the public API and the CUDA layer's own allocations, never for another
 * layer's allocation path. */
void *dsp_block_alloc_room(size_t size, unsigned how, struct dsp_block *out);

/* The live block holding p, pinned in this process (not inherited across
 * fork): 1 with *out filled, else 0. Lock-free. */
int dsp_block_find(const void *p, struct dsp_block *out);

/* The live block holding p, inherited or not: 1 with *out filled, else 0.
 * Lock-free. */
int dsp_block_holding(const void *p, struct dsp_block *out);

/* The live block starting exactly at base, inherited or not: 1 or 0. */
int dsp_block_at(uintptr_t base, struct dsp_block *out);

/* Records that the block's whole span is now registered with the driver. */
int dsp_block_set_registered(uintptr_t base, unsigned user);

/* Frees a live block by its exact base: 0, or 1 when pooled memory is now over
 * its limit (dsp_pool_limit: the registered pool is the caller's to trim), or -EINVAL. A
 * registered block goes to the registered pool, the layer's freed() hook
 * dropping its state. */
int dsp_block_free(uintptr_t base);

/* As dsp_block_free, after the caller waited for the device (cudaFreeHost):
 * no copy submitted before can still use the block, which is pooled as
 * synced. dsp_block_free pools a registered block as unsynced: its next
 * owner, or its eviction, waits for the device first (issue 13). */
int dsp_block_free_synced(uintptr_t base);

/* As dsp_block_free, but only while the block's flags match: (flags & mask)
 * == want, checked with the free under the manager's lock (a check made
 * before, without it, may see a block freed and handed to another owner
 * since). -EINVAL when they do not; *out, if given, is the block freed. */
int dsp_block_free_if(uintptr_t base, unsigned mask, unsigned want, struct dsp_block *out);

/* As dsp_block_free (same results), but gives the memory back to the kernel at once instead
 * of pooling it: for a block its layer could not use (registration failed). */
int dsp_block_discard(uintptr_t base);

/* The CUDA layer's side of the manager. The core never calls the driver: it
 * calls these hooks, and only from the public API (dsp_alloc, dsp_free,
 * dsp_trim), never from an allocation path of another layer. */
struct dsp_layer_ops {
    void (*freed)(uintptr_t base, size_t len); /* a registered block was freed (no driver call) */
    int (*make_room)(size_t len); /* over budget: give back pooled blocks; 1 if it did */
    void (*over_limit)(void);     /* pooled memory is over its limit (dsp_pool_limit) */
    size_t (*trim)(void);         /* give back everything pooled; bytes */
    /* A yield request of the node ledger, from its timer thread (a thread of
     * the shim's, no lock held): give back what needs no device wait; bytes. */
    size_t (*yield)(void);
    /* 1 when yield can give anything back from the timer's thread (else the
     * registered pool is not offered: others would wait for it in vain). */
    int (*can_yield)(void);
};
void dsp_set_layer(const struct dsp_layer_ops *ops);

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

/* Eviction: takes up to max pooled registered spans, largest first, while
 * pooled memory is over its limit (DSP_EVICT_OVER: DSP_POOL_MAX or the node
 * share, dsp_pool_limit), or all of them (DSP_EVICT_ALL), or all that need no
 * device wait (DSP_EVICT_SYNCED: out[i].unsynced is 0 for each); the
 * caller unregisters each base with the driver, then hands the token to
 * dsp_cuda_evicted(). A span the driver refused to unregister is simply not
 * handed back: it stays LIVE, counted, in no index and not in the registry,
 * so it is never reused (its pages may still be pinned). */
struct dsp_evicted {
    uintptr_t base;
    size_t len;
    void *token;
    int unsynced; /* freed with no device wait since: wait before unregistering */
};
enum { DSP_EVICT_OVER, DSP_EVICT_ALL, DSP_EVICT_SYNCED };
size_t dsp_cuda_evict(int what, struct dsp_evicted *out, size_t max);
void dsp_cuda_evicted(void *token);

/* 1 when giving back the registered pool would leave room for len more
 * pinned bytes, else 0 (so a hopeless request does not empty it). */
int dsp_cuda_pool_would_make_room(size_t len);

#endif
