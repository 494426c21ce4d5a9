#include "dio.h"

#include "errname.h"
#include "internal.h"
#include "log.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/membarrier.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
static DSP_LARGE_BSS _Atomic uint64_t slot[DSP_DIO_CACHE_FDS];
static _Atomic uint64_t gen = 1;
#define GEN_MASK (((uint64_t)1 << 48) - 1)

/* Forgetting costs nothing in a process whose cache never kept an answer: a
 * compiler barrier and one relaxed load of `bumping` in every open, close
 * and dup of every process (issue 29's review: a seq_cst fence there cost
 * every process, for the few that use the cache).
 *
 * The first query sets `bumping` before it reads the generation. It is a
 * Dekker pairing: forget [the call that changed the fd (E); load bumping]
 * against the first query [store bumping; read gen; ask the kernel]. At least
 * one side must see the other's store: either the forget bumps (and the
 * query's word is stale, or the query saw the bump and E with it), or the
 * query's question comes after E. A seq_cst fence on both sides gives that;
 * here the forget side's fence is the query's membarrier
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED, once): every other running thread of the
 * process passes, while it runs, a point where its memory accesses are in
 * program order (a full barrier there). A forget whose load comes after that
 * point sees `bumping` (stored before the membarrier); one whose load comes
 * before it had E before it too (the compiler barrier keeps E first), and E
 * is seen by every access the query makes after the membarrier returns. A
 * thread not running then is such a point already; one started later sees
 * `bumping`. A query in another thread that has not seen `ready` (stored
 * with release after the membarrier) makes the membarrier itself.
 *
 * Where membarrier is refused (ENOSYS, EPERM under a seccomp profile), the
 * query's side keeps its full barrier and a forget racing that very first
 * store is ordered only by what its system call happens to do after the
 * change: nothing that orders a later load for F_SETFL and dup2, whose
 * change is published by a spin_unlock, a release. Such a forget may go
 * unseen, and the answer stay stale until the next forget. A stale answer
 * costs at most what the program gets without the shim: a misaligned
 * request the kernel refuses (-EINVAL), or a bounce that was not needed. */
static _Atomic int bumping, ready;

static int log2u(uint32_t v) {
    return 31 - __builtin_clz(v);
}

void dsp_dio_forget(void) {
    atomic_signal_fence(memory_order_seq_cst); /* E, the hooked call, stays first */
    if (DSP_UNLIKELY(atomic_load_explicit(&bumping, memory_order_relaxed)))
        atomic_fetch_add_explicit(&gen, 1, memory_order_seq_cst);
}

/* Before a query keeps its first answer: every forget from now on bumps. */
static void start_bumping(void) {
    /* A seq_cst exchange: the query side's full barrier, whatever membarrier
     * answers (and no fence TSan cannot model, gcc -Wtsan). */
    atomic_exchange_explicit(&bumping, 1, memory_order_seq_cst);
    int e = errno;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0 ||
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        dsp_debug("libaio: membarrier is refused (%s): the fd cache's first answer is ordered "
                  "by a barrier on its side only",
                  dsp_errname(errno));
    errno = e;
    atomic_store_explicit(&ready, 1, memory_order_release);
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
    if (DSP_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire))) start_bumping();
    g = atomic_load(&gen) & GEN_MASK;
    int d = query(fd, a);
    if (d < 0) return d; /* a closed fd: nothing to keep */
    uint64_t nw = g << 16 | 1;
    if (d == 1) nw |= (uint64_t)log2u(a->off) << 11 | (uint64_t)log2u(a->mem) << 6 | 2;
    /* A forget since g was read leaves this word stale: it is never used. */
    atomic_store_explicit(&slot[fd], nw, memory_order_release);
    return d;
}
