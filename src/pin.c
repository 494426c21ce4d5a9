/* Turning reserved address space into pinned memory and back. */
#include "config.h"
#include "errname.h"
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "maps.h"
#include "numa.h"
#include "shm.h"
#include "arena.h"
#include "pin.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Below this a block is populated by the calling thread alone: starting threads
 * costs more than it saves (bench/pin_bench measures it). */
#define PREFAULT_SLICE (64 * DSP_MiB)

/* The manager's own advice goes to the kernel directly: the library's
 * exported madvise is the program's (memcalls.c), and would take the
 * manager's mutex, which a drop already holds. 0, or -errno. */
static int advise(void *base, size_t len, int advice) {
    return syscall(SYS_madvise, base, len, advice) == 0 ? 0 : -errno;
}

static int populate(char *base, size_t len) {
    /* One madvise populates the range without a fault per page (Linux 5.14). */
    int rc = advise(base, len, MADV_POPULATE_WRITE);
    if (rc != -EINVAL) return rc; /* done, or failed (-EINVAL: before Linux 5.14) */
    for (size_t off = 0; off < len; off += DSP_PAGE) ((volatile char *)base)[off] = 0;
    return 0;
}

/* Huge pages pay only where the free memory they are made of is at hand
 * (issue 29; docs/design.md, "Huge pages only where they pay"). On a VM whose
 * balloon reports free pages to the host, the first touch of a reported free
 * 2 MiB page faults in the host: 2-6 ms of CPU time per huge page here,
 * against about 0.6 ms for 2 MiB of small pages and 0.05-0.15 ms for a huge
 * page the guest freed lately. There the manager asks for huge pages only
 * when it gave some back lately (manager.c, page_kind); wherever it asks,
 * the block is populated in WATCH_CHUNK pieces, each timed in the thread's
 * CPU time (the host's fault stalls the vCPU inside the system call and
 * counts there, where another process's turn on the CPU does not), and the
 * block keeps an account: each piece earns what small pages would have cost
 * (HUGE_PAYS_NS per 2 MiB, a little under the small pages' 0.6 ms) less what
 * it took. The block starts with slack() in credit; when the account falls
 * below zero, huge pages have cost more than small pages would have, by at
 * most the slack and one piece a thread, and the block turns to small pages
 * for what is left. So a block of warm memory with a few cold pages keeps
 * huge pages' speed, and a cold one loses a sixteenth. A turned block does
 * not turn back: each turn would be one more map. The timing (two clock
 * reads a piece) costs 1-2% of populating warm huge pages. */
#define WATCH_CHUNK  (2 * DSP_MiB)
#define HUGE_PAYS_NS 500000

/* What a block may lose to slow huge pages before it turns: a sixteenth of
 * what small pages would take for it (16 ms for 1 GiB). */
static int64_t slack(size_t len) {
    return (int64_t)(len / WATCH_CHUNK) * HUGE_PAYS_NS / 16;
}

/* The block being populated, shared by its threads. */
struct fill {
    char *base;
    size_t len;
    int watch;              /* huge pages asked under auto: time them */
    _Atomic int64_t credit; /* ns huge pages saved so far, from slack() */
    _Atomic size_t next;    /* the offset the next SHARE_CHUNK starts at */
    _Atomic int turned;     /* a thread found them slow and turns the block: time no more */
};

/* The whole block at once, whichever thread found it slow: MADV_NOHUGEPAGE on
 * a part only would split the block's mapping, one more map a thread
 * (tests/unit/test_hugepages.c counts them). The huge pages already in place
 * stay; the faults after it get small ones. */
static void turn_small(struct fill *f) {
    if (atomic_exchange(&f->turned, 1)) return; /* another thread does it */
    advise(f->base, f->len, MADV_NOHUGEPAGE);
    char a[32];
    dsp_once(DSP_LOG_INFO,
             "huge pages populate slower than small pages here (a VM whose host takes free "
             "memory back?): a new block turns to small pages once its huge pages have cost "
             "more than small ones would (here one of %s; DSP_HUGEPAGES=always keeps huge ones)",
             dsp_fmt_bytes(a, sizeof a, f->len));
}

static int populate_part(struct fill *f, char *base, size_t len) {
    size_t off = 0;
    while (f->watch && off < len && !atomic_load_explicit(&f->turned, memory_order_relaxed)) {
        size_t n = len - off < WATCH_CHUNK ? len - off : WATCH_CHUNK;
        uint64_t t = dsp_sys_thread_ns();
        int rc = populate(base + off, n);
        if (rc) return rc;
        off += n;
        int64_t gain = (int64_t)((uint64_t)HUGE_PAYS_NS * n / WATCH_CHUNK) -
                       (int64_t)(dsp_sys_thread_ns() - t);
        if (off < len && atomic_fetch_add(&f->credit, gain) + gain < 0) turn_small(f);
    }
    return off < len ? populate(base + off, len - off) : 0;
}

/* The threads of a block take SHARE_CHUNK pieces of it in turn until none
 * is left, so that each ends when the block is done: equal slices ended
 * 5-20% apart (one thread's pages cost more, or it started later), and the
 * block's first pin waited for the last (issue 29, on 2 CPUs). Huge-page
 * aligned, so no huge page is split between two threads. */
#define SHARE_CHUNK (16 * DSP_MiB)

struct slice {
    struct fill *fill;
    int rc;
    pthread_t tid;
    int started;
};

static void *slice_main(void *arg) {
    struct slice *s = arg;
    struct fill *f = s->fill;
    for (;;) {
        size_t off = atomic_fetch_add_explicit(&f->next, SHARE_CHUNK, memory_order_relaxed);
        if (off >= f->len) break;
        size_t n = f->len - off < SHARE_CHUNK ? f->len - off : SHARE_CHUNK;
        int rc = populate_part(f, f->base + off, n);
        if (rc) s->rc = rc;
    }
    return NULL;
}

/* Each helper thread's stack: ours, unmapped once it is joined. A stack of
 * glibc's own would stay in its cache after the thread ends (up to 40 MiB),
 * two more mappings with pages that every later fork of the process copies
 * page tables for (issue 29: a fork with served memory held cost a fifth
 * more with the shim). As large as glibc's default, because the thread's
 * static TLS is placed in it too (ThreadSanitizer's alone is 900 KiB); only
 * the pages a thread touches are ever allocated. */
static size_t slice_stack(void) {
    pthread_attr_t d;
    size_t len = 0;
    if (pthread_getattr_default_np(&d) == 0) {
        pthread_attr_getstacksize(&d, &len);
        pthread_attr_destroy(&d);
    }
    return len >= ((size_t)1 << 20) ? dsp_align_up(len, DSP_PAGE) : (size_t)8 << 20;
}

static int start_slice(struct slice *s, pthread_attr_t *ap, char *stack, size_t stack_len) {
    if (stack && pthread_attr_setstack(ap, stack, stack_len) == 0 &&
        pthread_create(&s->tid, ap, slice_main, s) == 0)
        return 1;
    pthread_attr_t plain;
    if (pthread_attr_init(&plain) != 0) return 0;
    cpu_set_t cpus;
    int ok = (pthread_attr_getaffinity_np(ap, sizeof cpus, &cpus) != 0 ||
              pthread_attr_setaffinity_np(&plain, sizeof cpus, &cpus) == 0) &&
             pthread_create(&s->tid, &plain, slice_main, s) == 0;
    pthread_attr_destroy(&plain);
    return ok;
}

static int prefault_threads(struct fill *f, int threads, const cpu_set_t *cpus) {
    char *base = f->base;
    size_t len = f->len;
    if (threads < 1) threads = 1;
    if (threads == 1 || len < 2 * PREFAULT_SLICE) return populate_part(f, base, len);
    struct slice sl[64];
    if (threads > 64) threads = 64;
    int n = threads;
    for (int i = 0; i < n; i++) sl[i] = (struct slice){.fill = f};
    /* The caller works with the others: on the CPUs of the block's node
     * when it was placed (issue 33: each zeroes its pages in local memory). */
    pthread_attr_t attr;
    int have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr && cpus) pthread_attr_setaffinity_np(&attr, sizeof *cpus, cpus);
    size_t one = slice_stack(), stacks_len = (size_t)(n - 1) * one;
    char *stacks = mmap(NULL, stacks_len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (stacks == MAP_FAILED) stacks = NULL;
    for (int i = 1; i < n && have_attr; i++)
        sl[i].started = start_slice(&sl[i], &attr, stacks ? stacks + (i - 1) * one : NULL, one);
    if (have_attr) pthread_attr_destroy(&attr);
    slice_main(&sl[0]);
    int rc = sl[0].rc;
    for (int i = 1; i < n; i++) {
        if (sl[i].started)
            pthread_join(sl[i].tid, NULL);
        else
            slice_main(&sl[i]); /* no thread to be had: what is left, here */
        if (sl[i].rc) rc = sl[i].rc;
    }
    if (stacks) munmap(stacks, stacks_len); /* every thread on them is joined */
    return rc;
}

int dsp_prefault(void *base, size_t len, int threads, const cpu_set_t *cpus, int *huge) {
    struct fill f = {.base = base, .len = len, .watch = huge && *huge, .credit = slack(len)};
    int rc = prefault_threads(&f, threads, cpus);
    if (huge && atomic_load(&f.turned)) *huge = 0; /* its threads joined: the advice is in */
    return rc;
}

int dsp_pin_threads(struct dsp_manager *m, size_t len) {
    long t = m->prefault_threads;
    if (t > 0) return (int)t;
    size_t by_size = len / PREFAULT_SLICE;
    int cpus = dsp_sys_cpus();
    t = by_size < 8 ? (long)by_size : 8;
    if (t > cpus) t = cpus;
    return t < 1 ? 1 : (int)t;
}

/* Back to reserved address space, unlocking too: 0, or the -errno of the
 * failed mmap when the pages could not even be given back (then they stay
 * populated and locked, and the caller keeps them counted). The span's fields
 * are not touched: this runs outside the manager's lock (regression: TSan race
 * between a populating thread and a neighbour's coalescing in
 * pool.threads_never_share_a_block). */
static int unmap(struct dsp_manager *m, const struct dsp_span *s) {
    void *base = (void *)s->base;
    dsp_shm_punch(m, s); /* served memory: its pages out of the file first */
    if (mmap(base, s->len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0) != MAP_FAILED) {
        dsp_arena_unlock_reserved(m, s->base, s->len); /* under the program's MCL_FUTURE */
        return 0;
    }
    /* ENOMEM: splitting the mapping would pass vm.max_map_count. As in
     * dsp_pin_drop: unlocked, the pages can still be dropped, and the next
     * use of the span maps over it (regression: pin.failed_unmap_*). The
     * munlock covers a lock of the program's MCL_FUTURE too. */
    int err = errno;
    if (syscall(SYS_munlock, base, s->len) == 0 && advise(base, s->len, MADV_DONTNEED) == 0)
        return 0;
    char a[32];
    dsp_once(DSP_LOG_WARN,
             "cannot give back %s after a failed pin (%s; vm.max_map_count?): it stays "
             "counted as pinned and out of use (stat pin_stuck_bytes)",
             dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err));
    return -err;
}

/* The order matters for the kernel's VMA merging (issue 12: one VMA per block
 * exhausted vm.max_map_count at about 65,500 live blocks). Two neighbouring
 * mappings merge only while their flags are equal and at most one of them has
 * an anon_vma, which it gets at its first fault. So every flag a block will
 * carry is set before any page is touched: mmap, then the huge-page advice,
 * then mlock2(MLOCK_ONFAULT), which locks without populating. At that last
 * flag change the block still has no anon_vma and merges with a locked
 * neighbour of the same kind; populating afterwards locks each page as it is
 * faulted in. Populating first, as before, gave every block an anon_vma of
 * its own and a VMA of its own for good (tests/unit/test_maps.c,
 * maps.live_blocks_share_vmas). */
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif

int dsp_pin_lock_range(void *base, size_t len) {
    /* The raw syscall: the sanitizers' mlock interceptors silently do nothing,
     * which would make the ASan/TSan suites test a manager that pins nothing. */
    return syscall(SYS_mlock2, base, len, MLOCK_ONFAULT) == 0 ? 0 : -errno;
}

/* Binds a mapped, unpopulated span to node (MPOL_PREFERRED, numa.c): -1
 * when it could not be (counted and said once), else node. */
static int bind_node(void *base, size_t len, int node) {
    int err = dsp_sys_bind_node(base, len, node);
    if (err == 0) return node;
    dsp_numa_fallback(node, err, len);
    return -1;
}

/* Where a placed block's pages landed: the node of its last page, the one a
 * node that fills while it is populated gives to another first. A block not
 * on the node asked is counted there and said once. */
static int landed(const struct dsp_span *s, int bound) {
    int got = dsp_sys_page_node((const char *)s->base + s->len - DSP_PAGE);
    if (bound >= 0 && got >= 0 && got != bound) dsp_numa_fallback(bound, got, s->len);
    return got >= 0 && got < DSP_NUMA_NODES ? got : bound;
}

int dsp_pin_populate_lock(struct dsp_manager *m, struct dsp_span *s, int lock, int lock_optional,
                          int pages, int node) {
    void *base = (void *)s->base;
    int stuck;
    char a[32], b[32];
    int shared = 0;
    if (s->shared == DSP_SHARED_OURS) {
        int err = -dsp_shm_map(m, s);
        shared = err == 0;
        if (!shared)
            dsp_once(DSP_LOG_WARN,
                     "cannot map served memory from its shared file (%s): this block and "
                     "others like it are private memory, which a fork copies",
                     dsp_errname(err));
    }
    if (!shared && mmap(base, s->len, PROT_READ | PROT_WRITE,
                        MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
        int err = errno;
        dsp_once(DSP_LOG_WARN, "cannot map %s for pinning (%s); the caller falls back",
                 dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err));
        return -err;
    }
    /* Before any page is touched, as the flags below (VMA merging): blocks
     * placed on the same node carry the same policy and still merge. */
    int bound = node >= 0 ? bind_node(base, s->len, node) : -1;
    int huge = 0;
    if (pages > 0)
        huge = advise(base, s->len, MADV_HUGEPAGE) == 0;
    else if (pages < 0)
        advise(base, s->len, MADV_NOHUGEPAGE); /* as posix_memalign's pages under THP always */
    int locked = 0;
    if (lock) {
        int err = -dsp_pin_lock_range(base, s->len);
        locked = err == 0;
        if (!locked && lock_optional) { /* its layer pins it (the one asking: CUDA's registration;
                                           docs/troubleshooting.md quotes the line) */
            dsp_once(DSP_LOG_INFO,
                     "mlock of %s refused (%s); the block is pinned by CUDA registration alone",
                     dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err));
        } else if (!locked) {
            size_t lim = dsp_sys_memlock_limit();
            if (!dsp_sys_has_ipc_lock() && lim != (size_t)-1)
                dsp_once(DSP_LOG_WARN,
                         "mlock of %s refused (%s): RLIMIT_MEMLOCK is %s and CAP_IPC_LOCK is "
                         "missing; raise it "
                         "with `ulimit -l unlimited`, `docker run --ulimit memlock=-1`, or "
                         "grant CAP_IPC_LOCK",
                         dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err),
                         dsp_fmt_bytes(b, sizeof b, lim));
            else
                dsp_once(DSP_LOG_WARN,
                         "mlock of %s refused (%s): the kernel could not lock that much memory; "
                         "lower DSP_MAX_PINNED or free memory",
                         dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err));
            stuck = unmap(m, s) != 0;
            return stuck ? DSP_PIN_STUCK(err) : -err;
        }
    }
    /* Under auto the huge pages are timed as they come (populate_part). */
    int watch = huge && m->huge_mode == DSP_HUGEPAGES_AUTO;
    int rc = dsp_prefault(base, s->len, dsp_pin_threads(m, s->len),
                          bound >= 0 ? dsp_numa_cpus(bound) : NULL, watch ? &huge : NULL);
    if (rc) {
        dsp_once(DSP_LOG_WARN,
                 "cannot populate %s (%s): not enough free memory; the caller falls back",
                 dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(-rc));
        stuck = unmap(m, s) != 0;
        return stuck ? DSP_PIN_STUCK(-rc) : rc;
    }
    int where = node >= 0 ? landed(s, bound) : -1;
    return (locked ? DSP_PIN_LOCKED : 0) | (huge ? DSP_PIN_HUGE : 0) |
           (shared ? DSP_PIN_SHARED : 0) | (where >= 0 ? DSP_PIN_ON(where) : 0);
}

/* The maps a drop of s may add: one for each side where the mapping goes on
 * into a neighbour that is not vacant (a hole in the middle of a mapping
 * splits it in three). A vacant neighbour is PROT_NONE already and merges with
 * the drop, and past the arena's ends the mapping ends anyway. An upper bound
 * (a neighbour with other flags, huge pages or the memfd, is a map of its own)
 * but for one rare case: a vacant neighbour left mapped by a drop near the
 * limit (below) does not merge, which costs the reserve at most one map. */
static int drop_maps(const struct dsp_span *s) {
    return (s->aprev && s->aprev->state != DSP_SPAN_VACANT) +
           (s->anext && s->anext->state != DSP_SPAN_VACANT);
}

/* Under mu, as a span's pages go back to the kernel: huge ones are the
 * huge pages a VM whose host takes free pages back still has at hand for a
 * while (manager.c, page_kind). */
static void give_back(struct dsp_manager *m, struct dsp_span *s) {
    if (s->huge) atomic_store_explicit(&m->huge_back_ns, dsp_sys_mono_ns(), memory_order_relaxed);
    s->huge = 0;
}

int dsp_pin_drop(struct dsp_manager *m, struct dsp_span *s) {
    void *base = (void *)s->base;
    int splits = drop_maps(s);
    if (splits && !s->taint && !s->served && dsp_maps_take(splits, 1) != 0) {
        /* The reserve left to the program is near (issue 30: trims of every
         * other small block filled vm.max_map_count). Locked, the span stays
         * pooled: unlocking it splits the mapping as much as a new one does,
         * and its neighbours' frees merge it into a span that costs fewer
         * maps to drop. Unlocked, its pages go without touching the mapping
         * (vacant but readable, as after the ENOMEM below); the next use
         * maps over it. Spans the program changed (already maps of their
         * own) and served ones (which no pool of ours may keep once
         * unregistered) are dropped whatever the count: they are few. */
        if (s->locked) return -ENOMEM;
        dsp_shm_punch(m, s);
        advise(base, s->len, MADV_DONTNEED);
        give_back(m, s);
        return 0;
    }
    /* Mapping PROT_NONE over the range unlocks it and gives its pages back at
     * once, leaving the address space reserved. */
    dsp_shm_punch(m, s); /* served memory: its pages out of the file first */
    if (mmap(base, s->len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0) != MAP_FAILED) {
        dsp_arena_unlock_reserved(m, s->base, s->len); /* under the program's MCL_FUTURE */
        s->locked = 0;
        give_back(m, s);
        return 0;
    }
    /* ENOMEM: splitting the mapping would pass vm.max_map_count. Unlocked,
     * the span can still become vacant (the next use maps over it); locked,
     * it must stay counted where it is. */
    int err = errno;
    char a[32];
    if (s->locked && syscall(SYS_munlock, base, s->len) != 0) {
        dsp_once(DSP_LOG_WARN, "cannot unlock %s (%s; vm.max_map_count?): it stays in the pool",
                 dsp_fmt_bytes(a, sizeof a, s->len), dsp_errname(err));
        return -err;
    }
    advise(base, s->len, MADV_DONTNEED);
    s->locked = 0;
    give_back(m, s);
    return 0;
}

/* Under mu: a registered span the program changed, freed. It cannot be given
 * back here (only the CUDA layer may unregister it), so what the program can
 * have changed is put back as the manager made it. */
void dsp_mem_restore(struct dsp_span *s) {
    void *p = (void *)s->base;
    syscall(SYS_mprotect, p, s->len, PROT_READ | PROT_WRITE);
    syscall(SYS_madvise, p, s->len, MADV_DOFORK);
    syscall(SYS_madvise, p, s->len, MADV_KEEPONFORK);
    syscall(SYS_madvise, p, s->len, s->shared ? MADV_DONTDUMP : MADV_DODUMP); /* shm.c */
    if (s->huge) syscall(SYS_madvise, p, s->len, MADV_HUGEPAGE);
    s->taint = 0;
}
