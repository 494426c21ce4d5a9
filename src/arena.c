/* The arena: reservations of address space (PROT_NONE, no memory) that every
 * manager block is cut from, all inside one range [lo, hi) so that "is this
 * ours?" stays a compare. Vacant pieces are indexed by size for reuse and
 * coalesce with their neighbours.
 *
 * Unlimited address space (the usual case): one reservation of
 * DSP_ARENA_SIZE. Under a finite RLIMIT_AS the arena takes at most an eighth
 * of what the limit leaves at a time, and grows in place (right above hi,
 * else right below lo) when it is full, so the program keeps the rest of its
 * address space (regression: quota.arena_respects_rlimit_as). */
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "arena.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define ARENA_ALIGN   DSP_GiB
#define RESERVE_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
#define PIECE_ALIGN   DSP_HUGE_PAGE /* pieces keep 2 MiB-aligned blocks possible */
#define AS_SHARE      8             /* a piece is at most 1/AS_SHARE of what RLIMIT_AS leaves */
#define USER_TOP      ((uintptr_t)1 << 47)

/* What RLIMIT_AS still allows (the limit minus VmSize), SIZE_MAX when unlimited. */
static size_t as_left(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    size_t vm = 0; /* VmSize, statm's first number, in pages */
    if (dsp_sys_read_size("/proc/self/statm", &vm)) vm *= DSP_PAGE;
    return rl.rlim_cur > vm ? (size_t)rl.rlim_cur - vm : 0;
}

static int hexval(char c) { /* the digit's value, or -EINVAL for no hex digit */
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -EINVAL;
}

/* An address in the middle of the largest hole of the address space (from
 * /proc/self/maps, above 4 GiB), so that a piece placed there can grow both
 * ways; 0 when no hole holds 4 * len. mmap's own choice lands right under the
 * libraries, where the program's next mappings would fence the arena in. */
static uintptr_t roomy_place(size_t len) {
    int fd = dsp_sys_open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return 0;
    char buf[4096];
    uintptr_t a = 0, b = 0, prev = (uintptr_t)4 << 30, best = 0, best_len = 0;
    int field = 0; /* 0: start, 1: end, 2: the rest of the line */
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) {
            char c = buf[i];
            if (c == '\n') {
                field = 0, a = b = 0;
                continue;
            }
            if (field == 2) continue;
            if (field == 0 && c == '-') {
                field = 1;
                continue;
            }
            int d = hexval(c);
            if (d >= 0) {
                if (field == 0)
                    a = a * 16 + (uintptr_t)d;
                else
                    b = b * 16 + (uintptr_t)d;
                continue;
            }
            if (field == 1 && a < USER_TOP) {
                if (a > prev && a - prev > best_len) best = prev, best_len = a - prev;
                if (b > prev) prev = b;
            }
            field = 2;
        }
    dsp_sys_close(fd);
    if (prev < USER_TOP && USER_TOP - DSP_GiB - prev > best_len)
        best = prev, best_len = USER_TOP - DSP_GiB - prev;
    if (best_len / 4 < len) return 0;
    return (best + best_len / 2 - len / 2) & ~(uintptr_t)(ARENA_ALIGN - 1);
}

/* Reserves exactly [at, at + len), never over anything: 0, or -errno of
 * mmap (-EEXIST when something is there). */
static int map_at(struct dsp_manager *m, uintptr_t at, size_t len) {
    void *p = mmap((void *)at, len, PROT_NONE, RESERVE_FLAGS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) return -errno;
    if ((uintptr_t)p != at) { /* a kernel before 4.17 took the address as a hint */
        munmap(p, len);
        return -EEXIST;
    }
    dsp_arena_unlock_reserved(m, at, len);
    return 0;
}

static void publish_range(struct dsp_manager *m, uintptr_t lo, uintptr_t hi) {
    atomic_store_explicit(&m->hi, hi, memory_order_relaxed);
    atomic_store_explicit(&m->lo, lo, memory_order_release);
}

static int reserve_limited(struct dsp_manager *m, size_t left) {
    size_t want = (left / AS_SHARE) & ~(PIECE_ALIGN - 1);
    if (want > m->arena_size) want = m->arena_size;
    if (want < PIECE_ALIGN) return -ENOMEM;
    uintptr_t lo = roomy_place(want);
    if (!lo || map_at(m, lo, want) != 0) {
        void *p = mmap(NULL, want + PIECE_ALIGN, PROT_NONE, RESERVE_FLAGS, -1, 0);
        if (p == MAP_FAILED) return -ENOMEM;
        uintptr_t raw = (uintptr_t)p;
        lo = dsp_align_up_ptr(raw, PIECE_ALIGN);
        if (lo > raw) munmap(p, lo - raw);
        munmap((void *)(lo + want), raw + want + PIECE_ALIGN - (lo + want));
        dsp_arena_unlock_reserved(m, lo, want);
    }
    m->as_limited = 1;
    m->bump = lo;
    publish_range(m, lo, lo + want);
    char a[32], b[32];
    dsp_info("RLIMIT_AS: reserved %s of address space for pinned blocks (the limit leaves %s); "
             "more is reserved in pieces as needed",
             dsp_fmt_bytes(a, sizeof a, want), dsp_fmt_bytes(b, sizeof b, left));
    return 0;
}

int dsp_arena_reserve(struct dsp_manager *m) {
    size_t left = as_left();
    if (left != SIZE_MAX) return reserve_limited(m, left);
    size_t want = m->arena_size;
    for (; want >= ARENA_ALIGN; want /= 2) {
        void *p = mmap(NULL, want + ARENA_ALIGN, PROT_NONE, RESERVE_FLAGS, -1, 0);
        if (p == MAP_FAILED) continue;
        uintptr_t raw = (uintptr_t)p, lo = dsp_align_up_ptr(raw, ARENA_ALIGN);
        if (lo > raw) munmap(p, lo - raw);
        munmap((void *)(lo + want), raw + want + ARENA_ALIGN - (lo + want));
        dsp_arena_unlock_reserved(m, lo, want);
        m->bump = lo;
        publish_range(m, lo, lo + want);
        if (want < m->arena_size) {
            char a[32], b[32];
            dsp_info("reserved %s of address space for pinned blocks (%s refused)",
                     dsp_fmt_bytes(a, sizeof a, want), dsp_fmt_bytes(b, sizeof b, m->arena_size));
        }
        m->arena_size = want;
        return 0;
    }
    return -ENOMEM;
}

static struct dsp_span *new_span(struct dsp_manager *m, uintptr_t base, size_t len, int state) {
    struct dsp_span *s = dsp_slab_alloc(&m->spans);
    if (!s) return NULL;
    s->base = base;
    s->len = len;
    s->state = (uint8_t)state;
    s->unsynced = 0; /* (slab objects come back with their last values) */
    return s;
}

static void link_after(struct dsp_manager *m, struct dsp_span *prev, struct dsp_span *s) {
    s->aprev = prev;
    s->anext = prev ? prev->anext : m->first;
    if (s->anext)
        s->anext->aprev = s;
    else
        m->last = s;
    if (prev)
        prev->anext = s;
    else
        m->first = s;
}

void dsp_span_unlink(struct dsp_manager *m, struct dsp_span *s) {
    if (s->aprev)
        s->aprev->anext = s->anext;
    else
        m->first = s->anext;
    if (s->anext)
        s->anext->aprev = s->aprev;
    else
        m->last = s->aprev;
    dsp_slab_free(&m->spans, s);
}

struct dsp_span *dsp_span_split(struct dsp_manager *m, struct dsp_span *s, size_t len) {
    struct dsp_span *t = new_span(m, s->base + len, s->len - len, s->state);
    if (!t) return NULL;
    t->locked = s->locked;
    t->huge = s->huge;
    t->unsynced = s->unsynced;
    t->served = s->served; /* (a served block's tail past a failed pin's rest) */
    t->shared = s->shared; /* its pages are still the memfd's: punched when dropped */
    t->node = s->node;
    t->counted = s->counted; /* registered spans are never split */
    s->len = len;
    link_after(m, s, t);
    return t;
}

/* Returns a vacant span of exactly len bytes starting on an `align` boundary,
 * taken out of the index, or NULL. */
static struct dsp_span *take_vacant(struct dsp_manager *m, size_t len, size_t align) {
    struct dsp_span *s = dsp_bins_find(&m->vacant, len + align - DSP_PAGE);
    if (!s) return NULL;
    dsp_bins_remove(&m->vacant, s);
    uintptr_t start = dsp_align_up_ptr(s->base, align);
    if (start > s->base) {
        struct dsp_span *body = dsp_span_split(m, s, start - s->base);
        if (!body) return dsp_bins_insert(&m->vacant, s), NULL;
        dsp_bins_insert(&m->vacant, s);
        s = body;
    }
    if (s->len > len) {
        struct dsp_span *tail = dsp_span_split(m, s, len);
        if (!tail) return (void)dsp_arena_vacate(m, s), NULL;
        dsp_bins_insert(&m->vacant, tail);
    }
    return s;
}

/* Under mu: the block fits between the bump pointer and hi. */
static int bump_fits(struct dsp_manager *m, size_t len, size_t align) {
    uintptr_t hi = atomic_load_explicit(&m->hi, memory_order_relaxed);
    uintptr_t start = dsp_align_up_ptr(m->bump, align);
    return start <= hi && hi - start >= len;
}

static struct dsp_span *take_bump(struct dsp_manager *m, size_t len, size_t align) {
    if (!bump_fits(m, len, align)) return NULL;
    uintptr_t start = dsp_align_up_ptr(m->bump, align);
    /* Both spans exist before either is linked: a gap linked with the bump
     * left behind it would be linked again by the next call, and the two
     * copies would merge into a vacant span overlapping the next block
     * (regression: arena.failed_span_allocation_leaves_no_overlap). */
    struct dsp_span *gap = NULL, *s;
    if (start > m->bump && !(gap = new_span(m, m->bump, start - m->bump, DSP_SPAN_VACANT)))
        return NULL;
    s = new_span(m, start, len, DSP_SPAN_LIVE);
    if (!s) {
        if (gap) dsp_slab_free(&m->spans, gap);
        return NULL;
    }
    if (gap) {
        link_after(m, m->last, gap);
        dsp_arena_vacate(m, gap); /* indexes it, merging with a vacant predecessor */
    }
    link_after(m, m->last, s);
    m->bump = start + len;
    return s;
}

/* Under mu, the arena being full for this block: reserves a piece right above
 * hi (1: the bump pointer has room now) or right below lo (2: a vacant span
 * has), never over anything, or fails (-ENOMEM, logged once). A piece is at
 * most DSP_ARENA_SIZE minus what is reserved and, under RLIMIT_AS, an eighth
 * of what the limit leaves, or just the block when that is larger but at most
 * half of it. lo and hi change only once the piece is ours, so dsp_in_arena
 * never covers anything else. */
static int grow(struct dsp_manager *m, size_t len, size_t align) {
    uintptr_t lo = atomic_load_explicit(&m->lo, memory_order_relaxed);
    uintptr_t hi = atomic_load_explicit(&m->hi, memory_order_relaxed);
    size_t total = hi - lo, room = m->arena_size > total ? m->arena_size - total : 0;
    size_t left = as_left();
    size_t share = left == SIZE_MAX ? room : (left / AS_SHARE) & ~(PIECE_ALIGN - 1);
    if (share > room) share = room;
    size_t need_above = dsp_align_up(dsp_align_up_ptr(m->bump, align) + len - hi, PIECE_ALIGN);
    size_t need_below = dsp_align_up(len + align, PIECE_ALIGN);
    size_t up = need_above > share ? need_above : share;
    size_t down = need_below > share ? need_below : share;
    int up_ok = up <= room && (up == share || up <= left / 2);
    int down_ok = down <= room && (down == share || down <= left / 2) && lo > down;
    if (up_ok && map_at(m, hi, up) == 0) {
        atomic_store_explicit(&m->hi, hi + up, memory_order_release);
        return 1;
    }
    if (down_ok && map_at(m, lo - down, down) == 0) {
        struct dsp_span *s = new_span(m, lo - down, down, DSP_SPAN_VACANT);
        if (!s) {
            munmap((void *)(lo - down), down);
            return -ENOMEM;
        }
        link_after(m, NULL, s);
        atomic_store_explicit(&m->lo, lo - down, memory_order_release);
        dsp_arena_vacate(m, s); /* merges with a vacant first span, indexes it */
        return 2;
    }
    if (m->as_limited) { /* unlimited: the manager's "raise DSP_ARENA_SIZE" says it */
        char a[32], b[32], c[32];
        dsp_once(DSP_LOG_WARN,
                 "cannot grow the address space for pinned blocks by %s (%s reserved, "
                 "RLIMIT_AS leaves %s); raise `ulimit -v`; the caller falls back",
                 dsp_fmt_bytes(a, sizeof a, up < down ? up : down),
                 dsp_fmt_bytes(b, sizeof b, total),
                 dsp_fmt_bytes(c, sizeof c, left == SIZE_MAX ? 0 : left));
    }
    return -ENOMEM;
}

struct dsp_span *dsp_arena_take(struct dsp_manager *m, size_t len, size_t align) {
    struct dsp_span *s = take_vacant(m, len, align);
    if (!s) {
        int g = bump_fits(m, len, align) ? 0 : grow(m, len, align);
        if (g < 0) return NULL;
        s = g == 2 ? take_vacant(m, len, align) : take_bump(m, len, align);
        if (!s) return NULL;
    }
    s->state = DSP_SPAN_LIVE;
    s->locked = 0;
    s->huge = 0;
    s->taint = 0;
    return s;
}

size_t dsp_arena_shed_tail(struct dsp_manager *m) {
    if (!atomic_load_explicit(&m->lo, memory_order_relaxed)) return 0;
    struct dsp_span *t = m->last;
    if (t && t->state == DSP_SPAN_VACANT) { /* reserved only: part of the tail */
        dsp_bins_remove(&m->vacant, t);
        m->bump = t->base;
        dsp_span_unlink(m, t);
    }
    uintptr_t hi = atomic_load_explicit(&m->hi, memory_order_relaxed);
    if (hi <= m->bump) return 0;
    /* hi first: dsp_in_arena must never cover the hole. */
    atomic_store_explicit(&m->hi, m->bump, memory_order_seq_cst);
    munmap((void *)m->bump, hi - m->bump);
    return hi - m->bump;
}

void dsp_arena_restore_tail(struct dsp_manager *m, size_t len) {
    if (!len) return;
    if (map_at(m, m->bump, len) == 0) {
        atomic_store_explicit(&m->hi, m->bump + len, memory_order_release);
        return;
    }
    char a[32];
    dsp_once(DSP_LOG_INFO,
             "the %s of address space above the pinned blocks could not be reserved again "
             "after mlockall (something was mapped there); the arena ends at its last block",
             dsp_fmt_bytes(a, sizeof a, len));
}

void dsp_arena_unlock_vacant(struct dsp_manager *m) {
    for (struct dsp_span *s = m->first; s; s = s->anext)
        if (s->state == DSP_SPAN_VACANT) syscall(SYS_munlock, s->base, s->len);
    uintptr_t hi = atomic_load_explicit(&m->hi, memory_order_relaxed);
    if (hi > m->bump) syscall(SYS_munlock, m->bump, hi - m->bump);
}

struct dsp_span *dsp_arena_vacate(struct dsp_manager *m, struct dsp_span *s) {
    s->state = DSP_SPAN_VACANT;
    s->locked = s->huge = s->taint = 0;
    struct dsp_span *p = s->aprev, *n = s->anext;
    if (p && p->state == DSP_SPAN_VACANT) {
        dsp_bins_remove(&m->vacant, p);
        p->len += s->len;
        dsp_span_unlink(m, s);
        s = p;
    }
    if (n && n->state == DSP_SPAN_VACANT) {
        dsp_bins_remove(&m->vacant, n);
        s->len += n->len;
        dsp_span_unlink(m, n);
    }
    dsp_bins_insert(&m->vacant, s);
    return s;
}

void dsp_arena_unlock_reserved(struct dsp_manager *m, uintptr_t base, size_t len) {
    if (DSP_LIKELY(!atomic_load_explicit(&m->lock_future, memory_order_relaxed))) return;
    int err = errno;
    syscall(SYS_munlock, base, len);
    errno = err;
}
