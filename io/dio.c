#include "dio.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static int pow2(uint32_t v) {
    return v && (v & (v - 1)) == 0;
}

int dsp_dio_align(int fd, struct dsp_dio_align *out) {
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_TYPE, &sx) != 0) return -errno;
    uint32_t mem = sx.stx_dio_mem_align, off = sx.stx_dio_offset_align;
    if ((sx.stx_mask & STATX_DIOALIGN) && pow2(mem) && pow2(off)) {
        *out = (struct dsp_dio_align){mem, off};
        return 0;
    }
    int ssz = 0;
    if (S_ISBLK(sx.stx_mode) && ioctl(fd, BLKSSZGET, &ssz) == 0 && pow2((uint32_t)ssz)) {
        *out = (struct dsp_dio_align){(uint32_t)ssz, (uint32_t)ssz};
        return 0;
    }
    *out = (struct dsp_dio_align){DSP_DIO_FALLBACK_ALIGN, DSP_DIO_FALLBACK_ALIGN};
    return 0;
}

int dsp_dio_is_direct(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -errno : (fl & O_DIRECT) != 0;
}

/* --- the libaio hooks' cache ------------------------------------------------
 * One word per fd: generation << 16 | log2(off) << 11 | log2(mem) << 6 |
 * direct << 1 | valid. A word whose generation is not the current one is no
 * answer. 48 bits of generation: at a million forgets a second, nine years
 * before one could come round again. */
int dsp_dio_cache_on;
static _Atomic uint64_t slot[DSP_DIO_CACHE_FDS];
static _Atomic uint64_t gen = 1;
/* Set before the first query: dsp_dio_forget skips the bump (an atomic
 * add on a shared line at every close of every process) until then. */
static _Atomic int used;
#define GEN_MASK (((uint64_t)1 << 48) - 1)

static int log2u(uint32_t v) {
    return 31 - __builtin_clz(v);
}

void dsp_dio_forget(void) {
    /* With the query's store of `used` and its read of `gen` (both seq_cst):
     * either the bump is seen, or the query comes after the call that made
     * it necessary and sees its effect. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&used, memory_order_relaxed))
        atomic_fetch_add_explicit(&gen, 1, memory_order_seq_cst);
}

static int query(int fd, struct dsp_dio_align *a) {
    int e = errno;
    int d = dsp_dio_is_direct(fd);
    if (d == 1 && dsp_dio_align(fd, a) != 0) d = 0;
    errno = e;
    return d;
}

/* The word held for fd when it is current, else 0. */
static inline uint64_t held(int fd) {
    if (!__atomic_load_n(&dsp_dio_cache_on, __ATOMIC_RELAXED) || fd < 0 || fd >= DSP_DIO_CACHE_FDS)
        return 0;
    uint64_t w = atomic_load_explicit(&slot[fd], memory_order_acquire);
    uint64_t g = atomic_load_explicit(&gen, memory_order_acquire) & GEN_MASK;
    return (w & 1) && w >> 16 == g ? w : 0;
}

int dsp_dio_peek(int fd) {
    uint64_t w = held(fd);
    return w ? (int)((w >> 1) & 1) : -1;
}

int dsp_dio_cached(int fd, struct dsp_dio_align *a) {
    if (!__atomic_load_n(&dsp_dio_cache_on, __ATOMIC_RELAXED) || fd < 0 || fd >= DSP_DIO_CACHE_FDS)
        return query(fd, a);
    uint64_t w = held(fd), g;
    if (w) {
        a->mem = 1u << ((w >> 6) & 31);
        a->off = 1u << ((w >> 11) & 31);
        return (w >> 1) & 1;
    }
    if (!atomic_load_explicit(&used, memory_order_relaxed)) atomic_store(&used, 1);
    g = atomic_load(&gen) & GEN_MASK;
    int d = query(fd, a);
    if (d < 0) return d; /* a closed fd: nothing to keep */
    uint64_t nw = g << 16 | 1;
    if (d == 1) nw |= (uint64_t)log2u(a->off) << 11 | (uint64_t)log2u(a->mem) << 6 | 2;
    /* A forget since g was read leaves this word stale: it is never used. */
    atomic_store_explicit(&slot[fd], nw, memory_order_release);
    return d;
}
