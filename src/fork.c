/* One set of fork handlers for every layer (fork.h). */
#include "fork.h"
#include "internal.h"
#include "reentry.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

/* All zero, as the wiped page of a child (fork.h): glibc's
 * PTHREAD_MUTEX_INITIALIZER is. In .bss, its own page, which start-up never
 * writes (dsp_fork_register): a page first written costs a fault (issue 29). */
struct dsp_fork_locks dsp_fork_locks __attribute__((aligned(DSP_FORK_LOCKS_PAGE))) = {
    .fork = PTHREAD_MUTEX_INITIALIZER,
    .slot = {[0 ... DSP_FORK_SLOTS - 1] = PTHREAD_MUTEX_INITIALIZER}};
_Static_assert(sizeof(struct dsp_fork_locks) == DSP_FORK_LOCKS_PAGE, "the fork locks are a page");
static int wipe_tried; /* the page's advice asked for (fork.h) */
/* Held from prepare to parent or child: a slot filled meanwhile waits, so the
 * child handlers a fork runs are those of the slots it saw. */
#define fork_mu (dsp_fork_locks.fork)
static int unlocked; /* this fork took no lock (fork.h) */
static DSP_STARTUP_DATA void (*children[DSP_FORK_SLOTS])(void);
static DSP_STARTUP_DATA int installed;

/* In the child: whoever held them is not there. */
static void init_locks(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    fork_mu = fresh;
    for (int i = 0; i < DSP_FORK_SLOTS; i++) dsp_fork_locks.slot[i] = fresh;
    atomic_store_explicit(&dsp_fork_locks.owner, 0, memory_order_relaxed);
}

DSP_STARTUP_TEXT void dsp_fork_register(enum dsp_fork_slot slot, void (*child)(void)) {
    /* With one thread no fork can be in progress: the constructor's
     * registrations leave the locks' page untouched (its first write would
     * be one more page fault in every process's start-up, issue 29). */
    if (dsp_single_threaded()) {
        children[slot] = child;
        return;
    }
    pthread_mutex_lock(&fork_mu);
    children[slot] = child;
    pthread_mutex_unlock(&fork_mu);
}

static void prepare(void) {
    /* Written only when it changes: every page written after a fork takes
     * a fault, even once the child is gone, and this runs at every fork. */
    int none = dsp_single_threaded() && dsp_in_manager == 0;
    if (unlocked != none) unlocked = none;
    if (none) return;
    if (!wipe_tried) {
        /* Once a process, at its first fork that takes the locks: a process
         * that never forks threaded makes no system call for it. Only where
         * the object is exactly a page: a larger page would wipe neighbours. */
        wipe_tried = 1;
        if (getpagesize() == DSP_FORK_LOCKS_PAGE)
            syscall(SYS_madvise, &dsp_fork_locks, DSP_FORK_LOCKS_PAGE, MADV_WIPEONFORK);
    }
    pthread_mutex_lock(&fork_mu);
    atomic_store_explicit(&dsp_fork_locks.owner, (uintptr_t)pthread_self(), memory_order_relaxed);
    for (int i = 0; i < DSP_FORK_SLOTS; i++) pthread_mutex_lock(&dsp_fork_locks.slot[i]);
}

static void parent(void) {
    if (unlocked) return; /* nothing written: no page copied */
    for (int i = DSP_FORK_SLOTS - 1; i >= 0; i--) pthread_mutex_unlock(&dsp_fork_locks.slot[i]);
    atomic_store_explicit(&dsp_fork_locks.owner, 0, memory_order_relaxed);
    pthread_mutex_unlock(&fork_mu);
}

static void child(void) {
    /* These handlers run, so they are registered, whatever the flag said when
     * another thread forked: initialisation in this child must not register
     * them twice (prepare would then take every lock twice). */
    installed = 1;
    init_locks();
    for (int i = DSP_FORK_SLOTS - 1; i >= 0; i--)
        if (children[i]) children[i]();
}

/* What pthread_atfork is (glibc's libc_nonshared.a, nptl/pthread_atfork.c,
 * linked into the library past all of its own code), with the same object
 * handle: called directly, the constructor's code stays in one window of
 * pages (DSP_STARTUP_TEXT, issue 29). */
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);
extern void *__dso_handle __attribute__((weak, visibility("hidden")));

DSP_STARTUP_TEXT void dsp_fork_install(void) {
    if (installed) return; /* initialisation may run again in a child */
    __register_atfork(prepare, parent, child, &__dso_handle ? __dso_handle : NULL);
    installed = 1;
}
