/* Malloc hints (docs/malloc-hints.md): allocations of at least DSP_MALLOC_MIN
 * bytes are served pinned by the manager, everything else goes to glibc's
 * allocator through its __libc_* entry points (no dlsym bootstrap).
 *
 * The hot paths are one compare each: sizes below `gate` go straight to glibc
 * (gate is SIZE_MAX while hints are off), and free() asks dsp_in_arena (two
 * loads and a compare) whether the pointer can be a manager block at all.
 *
 * Re-entrancy: anything the slow path calls that allocates on this thread
 * (initialisation, dl_iterate_phdr, dlsym) comes back here with the thread's
 * `busy` flag set and goes straight to glibc; the manager's prefault threads
 * allocate nothing.
 *
 * Signals (docs/design.md): a handler that interrupted its thread inside one
 * of our locks (dsp_in_manager, reentry.h) allocates from glibc and defers its
 * frees of hinted blocks; both checks are on the slow paths only. */
#include "block.h"
#include "block_bits.h"
#include "config.h"
#include "log.h"
#include "malloc_bind.h"
#include "malloc_rules.h"
#include "manager.h"
#include "sys.h"
#include "stats.h"
#include "symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern char **environ;
extern char *program_invocation_name;

/* Sizes at or over gate take the slow path: 0 until the rules are known (so
 * the first calls initialise), SIZE_MAX while hints are off, else
 * DSP_MALLOC_MIN. */
static DSP_STARTUP_DATA _Atomic size_t gate;
static DSP_STARTUP_DATA _Atomic pid_t config_owner; /* the process whose thread decides */
static size_t hint_max;                             /* DSP_MALLOC_MAX, SIZE_MAX for auto */
static int nfrom;                                   /* DSP_MALLOC_FROM names; 0: any caller */
static char from[DSP_MRULE_NAMES][DSP_MRULE_NAME_LEN];
static DSP_LARGE_BSS struct dsp_sites sites; /* call sites already resolved */
static _Atomic uint64_t sites_seen;          /* the loader's adds + subs when they were */
static DSP_TLS int busy;                     /* this thread is inside the slow path */

/* glibc's own functions that have no __libc_* entry point, found in libc
 * itself (not RTLD_NEXT: another allocator may sit there) on first use. */
static size_t (*_Atomic real_usable)(void *);
static void *(*_Atomic real_aligned_alloc)(size_t, size_t);
static _Atomic int libc_resolved;

/* With busy set (dlopen and dlsym allocate). */
static void resolve_libc_busy(void) {
    if (atomic_load_explicit(&libc_resolved, memory_order_acquire)) return;
    Dl_info info;
    void *h = NULL;
    if (dladdr((void *)__libc_malloc, &info) && info.dli_fname)
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        atomic_store(&real_usable, (size_t(*)(void *))dlsym(h, "malloc_usable_size"));
        atomic_store(&real_aligned_alloc, (void *(*)(size_t, size_t))dlsym(h, "aligned_alloc"));
        dlclose(h); /* drops only the reference RTLD_NOLOAD took */
    }
    if (!atomic_load(&real_usable))
        dsp_warn("glibc's malloc_usable_size not found: realloc keeps glibc blocks in glibc");
    atomic_store_explicit(&libc_resolved, 1, memory_order_release);
}

static void resolve_libc(void) {
    if (busy) return;
    busy = 1;
    resolve_libc_busy();
    busy = 0;
}

static size_t usable_foreign(void *p) {
    size_t (*fn)(void *) = atomic_load_explicit(&real_usable, memory_order_relaxed);
    if (DSP_UNLIKELY(!fn)) {
        resolve_libc();
        fn = atomic_load(&real_usable);
    }
    return fn ? fn(p) : 0;
}

/* --- the rules ----------------------------------------------------------- */

DSP_STARTUP_TEXT static void configure(void) {
    /* One thread decides: the claim is the deciding process's pid, so that a
     * child forked while a thread of its parent was deciding (that thread is
     * not in the child) takes the work over, exactly one of its threads;
     * else hints would stay off there and every allocation take the slow path. */
    pid_t me = dsp_sys_pid(), owner = 0;
    if (!atomic_compare_exchange_strong(&config_owner, &owner, me) &&
        (owner == me || !atomic_compare_exchange_strong(&config_owner, &owner, me)))
        return;
    size_t min = (size_t)dsp_opt(DSP_OPT_MALLOC_MIN), g = SIZE_MAX;
    if (min != DSP_SIZE_AUTO) {
        /* A share (25%) is of the memory the plan reads: made now, where
         * hints are on and the process is about to pin. */
        if (dsp_cfg.share[DSP_OPT_MALLOC_MAX] != DSP_NO_SHARE) dsp_plan();
        size_t max = (size_t)dsp_opt(DSP_OPT_MALLOC_MAX);
        hint_max = max == DSP_SIZE_AUTO ? SIZE_MAX : max;
        int dropped;
        nfrom = dsp_mrule_names(dsp_opt_str(DSP_OPT_MALLOC_FROM), from, DSP_MRULE_NAMES, &dropped);
        if (dropped)
            dsp_warn("DSP_MALLOC_FROM: %d name(s) ignored (at most %d names of %d characters)",
                     dropped, DSP_MRULE_NAMES, DSP_MRULE_NAME_LEN - 1);
        resolve_libc_busy();
        g = min ? min : 1;
        if (dsp_opt_str(DSP_OPT_MALLOC_FROM)[0] && !nfrom) {
            dsp_warn("DSP_MALLOC_FROM names no library; malloc hints are off");
            g = SIZE_MAX;
        } else {
            dsp_info("malloc hints on: allocations of %zu bytes and more%s%s", g,
                     nfrom ? " from " : "", nfrom ? dsp_opt_str(DSP_OPT_MALLOC_FROM) : "");
        }
    }
    atomic_store_explicit(&gate, g, memory_order_release); /* never 0: decided */
}

/* Called with busy set: 1 once the rules are known. Until then gate is 0 and
 * every allocation comes here, so initialisation may run inside the first one
 * (a library constructor's, before ours); before libc itself is initialised
 * (no environment yet) a later call decides. */
DSP_STARTUP_TEXT static int hints_ready(void) {
    if (DSP_LIKELY(atomic_load_explicit(&gate, memory_order_acquire) != 0)) return 1;
    if (!environ || !dsp_ensure_init()) return 0;
    configure();
    return atomic_load_explicit(&gate, memory_order_acquire) != 0;
}

static void bind_direct(void);

/* Library constructor: decides the rules before main; with hints off, binds
 * the program straight to glibc's allocator (bind_direct). Before the
 * program's first call, not later: binding after the program's 4,096th
 * malloc (so that a process that allocates little never pays for it) left
 * every call site that had gone through the hooks slower for good, about
 * two cycles a call on this machine's AMD CPU (malloc(64)+free 5.0 -> 5.8 ns
 * in a loop that started before the binding; one pair through the hooks
 * before it was enough), as the jump through the slot had seen several
 * targets (issue 29, measured; docs/design.md). */
DSP_STARTUP_TEXT void dsp_malloc_init(void) {
    if (busy) return;
    busy = 1;
    if (hints_ready() && atomic_load_explicit(&gate, memory_order_acquire) == SIZE_MAX)
        bind_direct();
    busy = 0;
}

struct site_search {
    uintptr_t addr;
    uint64_t loader_count;
    int allowed;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg) {
    struct site_search *s = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        s->loader_count = info->dlpi_adds + info->dlpi_subs;
    if (!dsp_phdr_holds(info, s->addr)) return 0;
    /* The main program has no name here: it goes by argv[0]. */
    const char *path =
        info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
    s->allowed = dsp_mrule_path_matches(path, (const char(*)[DSP_MRULE_NAME_LEN])from, nfrom);
    return 1;
}

/* DSP_MALLOC_FROM: whether the caller's code lies in a named library. Each
 * call site is resolved once with dl_iterate_phdr (no dladdr: it takes the
 * loader's lock and may allocate) and cached lock-free; code in no loaded
 * object counts as "not from". No lock of ours is held here, so a malloc the
 * loader makes under its own lock (dlopen) cannot deadlock against us. The
 * cache is emptied when the loader's count of loads and unloads has changed
 * since it was filled (checked on each miss). */
static int caller_allowed(const void *caller) {
    if (!nfrom) return 1;
    uintptr_t a = (uintptr_t)caller;
    int v = dsp_sites_get(&sites, a);
    if (v >= 0) return v;
    struct site_search s = {a, 0, 0};
    dl_iterate_phdr(find_object, &s);
    uint64_t seen = atomic_load_explicit(&sites_seen, memory_order_relaxed);
    if (s.loader_count != seen &&
        atomic_compare_exchange_strong(&sites_seen, &seen, s.loader_count))
        dsp_sites_clear(&sites);
    dsp_sites_put(&sites, a, s.allowed);
    return s.allowed;
}

/* DSP_MALLOC_MAX: the gauge malloc_hinted_bytes is the account (a forked
 * child's restarts at zero with the rest of its statistics). */
static int budget_take(size_t len) {
    uint64_t now =
        atomic_fetch_add_explicit(&dsp_stat[DSP_ST_malloc_hinted_bytes], len, memory_order_relaxed);
    if (now + len <= hint_max) return 1;
    dsp_stat_sub(DSP_ST_malloc_hinted_bytes, len);
    return 0;
}

/* --- the slow paths -------------------------------------------------------- */

/* A hinted block's own bits: the malloc mark, and log2 of an alignment above
 * the page, so that free() knows the one pointer it handed out. */
#define ALIGN_SHIFT 4 /* of DSP_BLOCKF_MALLOC_ALIGN */
static unsigned mark_for(size_t align) {
    unsigned shift = align > DSP_PAGE ? (unsigned)__builtin_ctzll(align) : 0;
    return DSP_BLOCKF_MALLOC | shift << ALIGN_SHIFT;
}

/* A hinted block of n bytes aligned to align, or NULL: then the caller calls
 * the real allocator. errno is left as it was. */
static __attribute__((noinline)) void *hint(size_t n, size_t align, const void *caller, int zero) {
    if (busy || dsp_reentered()) return NULL; /* inside our lock, or forking (reentry.h) */
    busy = 1;
    int saved = errno;
    void *p = NULL;
    size_t req;
    if (!hints_ready() || n < atomic_load_explicit(&gate, memory_order_relaxed) ||
        dsp_mrule_request(n, align, &req) != 0)
        goto out;
    if (!caller_allowed(caller)) goto rejected;
    size_t len = dsp_align_up(req, DSP_PAGE);
    if (!budget_take(len)) {
        dsp_once(DSP_LOG_INFO,
                 "malloc hints: DSP_MALLOC_MAX reached; larger allocations go to the real "
                 "allocator until hinted ones are freed");
        goto rejected;
    }
    /* Never a span registered with the driver (regression:
     * hinted_malloc_never_gets_a_registered_span): memory the program believes
     * pageable must stay so until it pins it (is_pinned, pin_memory,
     * cudaHostRegister), or its copies from it become truly asynchronous
     * and a buffer reused after cudaMemcpyAsync returns is read late (issue
     * 13). Registered spans stay in the CUDA pool, for cudaHostAlloc. Never
     * the CUDA layer's make_room either: no driver call from an allocation
     * path. */
    struct dsp_block b;
    unsigned mark = mark_for(align);
    if (!dsp_block_alloc(req, DSP_BLK_QUIET | DSP_BLK_USER(mark), &b)) {
        dsp_stat_sub(DSP_ST_malloc_hinted_bytes, len);
        dsp_once(DSP_LOG_WARN,
                 "malloc hints: the manager cannot pin %zu more bytes (DSP_MAX_PINNED, "
                 "RLIMIT_MEMLOCK or memory); such allocations go to the real allocator",
                 len);
        goto rejected;
    }
    p = (void *)dsp_align_up_ptr(b.base, align);
    if (zero && !b.fresh) memset(p, 0, n);
    dsp_stat_add(DSP_ST_malloc_hinted, 1);
    goto out;
rejected:
    dsp_stat_add(DSP_ST_malloc_hint_rejected, 1);
out:
    errno = saved;
    busy = 0;
    return p;
}

/* The pointer hint() handed out for block b: its base, or the base aligned up
 * to an alignment above the page, whose log2 the block's bits keep. */
static uintptr_t handed_out(const struct dsp_block *b) {
    unsigned shift = (b->flags & DSP_BLOCKF_MALLOC_ALIGN) >> ALIGN_SHIFT;
    return shift ? dsp_align_up_ptr(b->base, (size_t)1 << shift) : b->base;
}

/* The hinted block that p starts: 1 and *b, or 0 for anything else in the
 * arena: dsp_alloc and cudaHostAlloc blocks are not free()'s to take, and an
 * interior pointer frees nothing (glibc aborts on one; taking the whole block
 * from its owner would corrupt memory silently). */
static int hinted_block(const void *p, struct dsp_block *b) {
    return dsp_block_holding(p, b) && (b->flags & DSP_BLOCKF_MALLOC) &&
           (uintptr_t)p == handed_out(b);
}

static __attribute__((noinline)) void hinted_free(void *p) {
    if (DSP_UNLIKELY(dsp_reentered())) {
        /* A signal handler that interrupted this thread inside one of our
         * locks, or code run by the fork handlers while ours hold them all
         * (reentry.h): freed at the next unlock, checked then. */
        int saved = errno;
        dsp_defer_set_handler(DSP_DEFER_MALLOC, hinted_free);
        dsp_defer_free(p, DSP_DEFER_MALLOC);
        errno = saved;
        return;
    }
    int saved = errno, was = busy;
    busy = 1;
    struct dsp_block b, freed;
    /* The check above is lock-free, so it may see a block that another
     * thread frees (a racing double free) and the pool hands to another
     * owner before this free runs: the free checks again, under the
     * manager's lock, that the block at that base is still a hinted one
     * handed out at p, so it never takes a cudaHostAlloc or dsp_alloc block
     * (regression: malloc_double_free_keeps_the_next_owners_block). A hinted
     * block handed out again at the same address is freed, as glibc frees a
     * chunk reused since: the two frees cannot be told apart. */
    unsigned mask = DSP_BLOCKF_MALLOC | DSP_BLOCKF_MALLOC_ALIGN;
    if (hinted_block(p, &b) && dsp_block_free_if(b.base, mask, b.flags & mask, &freed) >= 0) {
        if (!freed.inherited) dsp_stat_sub(DSP_ST_malloc_hinted_bytes, freed.len);
    } else {
        dsp_once(
            DSP_LOG_WARN,
            "free or realloc of %p: inside the pinned arena but no live malloc'd "
            "block starts there (freed twice, an interior pointer, or a dsp_alloc/cudaHostAlloc "
            "block?); ignored",
            p);
    }
    busy = was;
    errno = saved;
}

static __attribute__((noinline)) void *malloc_slow(size_t n, const void *caller) {
    void *p = hint(n, 1, caller, 0);
    return p ? p : __libc_malloc(n);
}

static __attribute__((noinline)) void *calloc_slow(size_t m, size_t s, const void *caller) {
    size_t n;
    if (!__builtin_mul_overflow(m, s, &n)) {
        void *p = hint(n, 1, caller, 1);
        if (p) return p;
    }
    return __libc_calloc(m, s); /* ENOMEM on overflow, as glibc */
}

/* A glibc block (or NULL) that grows to n >= DSP_MALLOC_MIN moves to the
 * manager when the rules allow. */
static __attribute__((noinline)) void *realloc_up(void *p, size_t n, const void *caller) {
    if (p && !usable_foreign(p)) return __libc_realloc(p, n);
    void *q = hint(n, 1, caller, 0);
    if (!q) return __libc_realloc(p, n);
    if (p) {
        size_t old = usable_foreign(p);
        memcpy(q, p, old < n ? old : n);
        __libc_free(p);
    }
    return q;
}

/* A hinted block: stays where it is while n fits it and uses at least half of
 * it; otherwise moves, to a new hinted block or to glibc below the threshold. */
static __attribute__((noinline)) void *realloc_hinted(void *p, size_t n, const void *caller) {
    struct dsp_block b;
    if (!hinted_block(p, &b)) {
        if (dsp_reentered()) { /* a signal handler inside our registry write: not known now */
            errno = ENOMEM;
            return NULL; /* p untouched */
        }
        hinted_free(p); /* logs */
        errno = ENOMEM;
        return NULL;
    }
    if (!n) { /* glibc frees and returns NULL */
        hinted_free(p);
        return NULL;
    }
    size_t usable = b.base + b.len - (uintptr_t)p;
    if (n <= usable && n >= usable / 2 && n >= atomic_load_explicit(&gate, memory_order_relaxed))
        return p;
    void *q = n >= atomic_load_explicit(&gate, memory_order_relaxed) ? hint(n, 1, caller, 0) : NULL;
    if (!q) q = __libc_malloc(n);
    if (!q) return NULL; /* ENOMEM from glibc; p untouched */
    memcpy(q, p, usable < n ? usable : n);
    hinted_free(p);
    return q;
}

static inline void *do_realloc(void *p, size_t n, const void *caller) {
    if (DSP_LIKELY(!dsp_in_arena(p))) {
        if (DSP_LIKELY(n < atomic_load_explicit(&gate, memory_order_relaxed)))
            return __libc_realloc(p, n);
        return realloc_up(p, n, caller);
    }
    return realloc_hinted(p, n, caller);
}

static inline int is_pow2(size_t a) {
    return a && !(a & (a - 1));
}

/* --- the interposed family --------------------------------------------------- */

/* The four glibc's own start-up calls (locale and stdio set-up reach them
 * through libc's slots, which keep the hooks) lie with the constructor's code
 * (DSP_STARTUP_TEXT): elsewhere they cost every process a page fault. */
#define CALLER() __builtin_return_address(0)
#define SLOW(n)  DSP_UNLIKELY((n) >= atomic_load_explicit(&gate, memory_order_relaxed))

DSP_STARTUP_TEXT DSP_API void *malloc(size_t n) {
    if (DSP_LIKELY(n < atomic_load_explicit(&gate, memory_order_relaxed))) return __libc_malloc(n);
    return malloc_slow(n, CALLER());
}

DSP_STARTUP_TEXT DSP_API void free(void *p) {
    if (DSP_LIKELY(!dsp_in_arena(p))) {
        __libc_free(p); /* preserves errno itself */
        return;
    }
    hinted_free(p);
}

DSP_STARTUP_TEXT DSP_API void *calloc(size_t m, size_t s) {
    /* The product may wrap: then it is small, glibc sees the overflow and
     * fails with ENOMEM, or large, and calloc_slow checks. */
    if (DSP_LIKELY(m * s < atomic_load_explicit(&gate, memory_order_relaxed)))
        return __libc_calloc(m, s);
    return calloc_slow(m, s, CALLER());
}

DSP_STARTUP_TEXT DSP_API void *realloc(void *p, size_t n) {
    return do_realloc(p, n, CALLER());
}

DSP_API void *reallocarray(void *p, size_t m, size_t s) {
    size_t n;
    if (__builtin_mul_overflow(m, s, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return do_realloc(p, n, CALLER());
}

DSP_API int posix_memalign(void **out, size_t align, size_t n) {
    if (!dsp_mrule_posix_align_ok(align)) return EINVAL;
    void *p = SLOW(n) ? hint(n, align, CALLER(), 0) : NULL;
    if (!p) p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

DSP_API void *aligned_alloc(size_t align, size_t n) {
    /* Only power-of-two alignments are hinted; glibc decides on the rest (2.36
     * rounds them up like memalign, 2.38 fails with EINVAL). */
    if (SLOW(n) && is_pow2(align)) {
        void *p = hint(n, align, CALLER(), 0);
        if (p) return p;
    }
    void *(*fn)(size_t, size_t) = atomic_load_explicit(&real_aligned_alloc, memory_order_relaxed);
    if (DSP_UNLIKELY(!fn)) {
        resolve_libc(); /* once; not from inside the slow path */
        fn = atomic_load(&real_aligned_alloc);
    }
    return fn ? fn(align, n) : __libc_memalign(align, n);
}

DSP_API void *memalign(size_t align, size_t n) {
    if (SLOW(n) && is_pow2(align)) {
        void *p = hint(n, align, CALLER(), 0);
        if (p) return p;
    }
    return __libc_memalign(align, n);
}

DSP_API void *valloc(size_t n) {
    void *p = SLOW(n) ? hint(n, DSP_PAGE, CALLER(), 0) : NULL;
    return p ? p : __libc_valloc(n);
}

DSP_API void *pvalloc(size_t n) {
    size_t r;
    void *p = NULL;
    if (SLOW(n) && !__builtin_add_overflow(n, DSP_PAGE - 1, &r))
        p = hint(r & ~(DSP_PAGE - 1), DSP_PAGE, CALLER(), 0);
    return p ? p : __libc_pvalloc(n);
}

DSP_API size_t malloc_usable_size(void *p) {
    if (DSP_LIKELY(!dsp_in_arena(p))) return usable_foreign(p);
    struct dsp_block b;
    return hinted_block(p, &b) ? b.base + b.len - (uintptr_t)p : 0;
}

/* --- hints off: no hook at all ------------------------------------------------ */

/* Our own entry points, by a hidden name: their addresses within this library,
 * whatever another object defines under the public name. */
#define BIND(name, real)                                                                           \
    { (uintptr_t) hook_##name, (uintptr_t)(real), #name, 0 }
#define HOOK(name)                                                                                 \
    extern __typeof__(name) hook_##name                                                            \
        __attribute__((alias(#name), copy(name), visibility("hidden")))
HOOK(malloc);
HOOK(free);
HOOK(calloc);
HOOK(realloc);
HOOK(reallocarray);
HOOK(posix_memalign);
HOOK(aligned_alloc);
HOOK(memalign);
HOOK(valloc);
HOOK(pvalloc);
HOOK(malloc_usable_size);

/* With hints off every hook only forwards to glibc: one compare and an
 * indirect jump on calls that are cheap themselves (issue 29; docs/design.md,
 * "Malloc hints off: no hook"). The objects loaded now are bound to glibc's
 * functions instead (malloc_bind.c); objects loaded later (dlopen), pointers
 * taken with dlsym, and the loader's own allocations keep reaching glibc
 * through the hooks. Which block came from which path does not matter: with
 * hints off every block is glibc's. A name is bound only where the hook is
 * what the loader binds it to (no allocator preloaded before us defines it). */
DSP_STARTUP_TEXT static void bind_direct(void) {
    /* glibc's functions without an __libc_* name, from libc's own symbol
     * table: a dlopen of libc would allocate, and set up glibc's heap in a
     * process that never allocates. */
    const struct dsp_bind all[] = {
        BIND(malloc, __libc_malloc),
        BIND(free, __libc_free),
        BIND(calloc, __libc_calloc),
        BIND(realloc, __libc_realloc),
        BIND(reallocarray, dsp_libc_sym("reallocarray")),
        BIND(posix_memalign, dsp_libc_sym("posix_memalign")),
        BIND(aligned_alloc, dsp_libc_sym("aligned_alloc")),
        BIND(memalign, __libc_memalign),
        BIND(valloc, __libc_valloc),
        BIND(pvalloc, __libc_pvalloc),
        BIND(malloc_usable_size, dsp_libc_sym("malloc_usable_size")),
    };
    enum { N = sizeof all / sizeof *all };
    struct dsp_bind t[N];
    /* What the global scope answers for each name, read from the symbol
     * tables in one walk (dsp_sym_first_all; dlsym for what they cannot
     * say): 11 dlsym calls were a fifth of the binding (issue 29). */
    const char *names[N];
    void *global[N];
    for (int i = 0; i < N; i++) names[i] = all[i].name;
    dsp_sym_first_all(names, global, N);
    int n = 0;
    for (int i = 0; i < N; i++)
        if (all[i].real) {
            t[n] = all[i];
            t[n++].global =
                (uintptr_t)(global[i] ? global[i] : dsp_real_dlsym(RTLD_DEFAULT, all[i].name));
        }
    int slots = dsp_bind_direct(t, n, (uintptr_t)hook_malloc);
    dsp_debug("malloc hints off: %d GOT slot(s) bound to glibc", slots);
}
