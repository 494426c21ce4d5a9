/* The fork handlers of every layer, in one pthread_atfork registration, and
 * every lock they take. The lock order lives here: each lock is a slot of
 * struct dsp_fork_locks, in the order of enum dsp_fork_slot (docs/design.md,
 * "Locks", lists the same locks in the same order), and before fork(2) fork.c
 * takes them all top to bottom, as running code nests them; after it the
 * parent releases them bottom to top, and the child re-initialises them all
 * and then runs the layers' child handlers bottom to top (a layer's reset may
 * use the layers below it: aio's adopts into bounce's lists, the manager's
 * reads the registry). A layer writes no fork handler of its own but its
 * child reset. */
#ifndef DSP_FORK_H
#define DSP_FORK_H

/* The core names its own two locks; a layer above it takes one of the other
 * slots, by where its lock nests, and names it in its own header
 * (#define DSP_FORK_AIO DSP_FORK_OUTER_0 in io/aio_state.h): an outer slot
 * for a lock held while the manager's is taken (the first the outermost), a
 * leaf slot for one that is never held while a lock of the core is taken.
 * A new lock takes a free slot (or a new one, here) and a row in "Locks";
 * test fork_order checks that no two layers share one. */
enum dsp_fork_slot {
    DSP_FORK_OUTER_0,  /* the outermost lock of a layer (io/aio_state.h) */
    DSP_FORK_OUTER_1,  /* taken under OUTER_0 (io/bounce.h) */
    DSP_FORK_MANAGER,  /* DSP_MGR_MU (src/manager.h) */
    DSP_FORK_REGISTRY, /* wmutex (src/registry.c) */
    DSP_FORK_LEAF_0,   /* a layer's leaf lock (preload/cuda_core.h) */
    DSP_FORK_LEAF_1,   /* (preload/cuda_vreg.h) */
    DSP_FORK_LEAF_2,   /* (io/cufile_layer.h) */
    DSP_FORK_SLOTS
};

/* What the parent writes after fork(2) costs: every page the fork made
 * copy-on-write faults and is copied at its first write (a fork was visibly
 * slower with the shim while its handlers wrote four pages; issue 13;
 * docs/concurrency.md, "Fork").
 * So the handlers write as little as they can:
 * - a process with one thread, outside every counted lock of ours
 *   (dsp_in_manager), takes no lock at all: no other thread can be inside a
 *   layer. The child's handlers run all the same. (A signal handler that
 *   forks while its thread is inside an uncounted I/O table lock then gets a
 *   child whose I/O tables may be half updated; before, that fork deadlocked.)
 * - otherwise every lock is in one page that the fork leaves out of the
 *   parent's copy-on-write (struct dsp_fork_locks), taken with plain
 *   pthread calls, not dsp_lock,
 *   which would count in a thread-local the parent then writes back. The
 *   forking thread is recorded in the same object instead (owner), so that
 *   whatever runs on it meanwhile (a signal handler, another library's fork
 *   handler: glibc runs those registered before ours after our prepare and
 *   before our parent and child) sees dsp_reentered() and takes no lock. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Every lock the prepare handler takes, in one object of a page of its own
 * (4 KiB, aligned to it). The first fork that takes them marks that page
 * MADV_WIPEONFORK: the kernel then neither copies it nor makes it
 * copy-on-write, so the parent's unlocks after fork(2) write no page the fork
 * write-protected (a fault and a page copy at every fork of a threaded
 * process, 1 of the 16 us a fork with the shim took more than without; issue
 * 29; test fork_writes_one_page), and every child, of fork, _Fork or clone,
 * finds all of them zero, which is each unlocked (PTHREAD_MUTEX_INITIALIZER)
 * with no owner. Where the page is not 4 KiB or the kernel refuses the
 * advice, the page is copy-on-write as any other: one fault a fork. A layer
 * names its slot with a macro of its own (tab_mu, wmutex, ...). */
#define DSP_FORK_LOCKS_PAGE 4096
struct dsp_fork_locks {
    union {
        struct {
            pthread_mutex_t fork;                 /* fork_mu: the slots themselves (fork.c) */
            pthread_mutex_t slot[DSP_FORK_SLOTS]; /* each layer's, as enum dsp_fork_slot names it */
            /* The thread between prepare and parent (pthread_self), else 0: it
             * holds every lock above, so it must not take one (dsp_reentered). */
            _Atomic uintptr_t owner;
        };
        char page[DSP_FORK_LOCKS_PAGE]; /* nothing else of ours is wiped with them */
    };
};
extern struct dsp_fork_locks dsp_fork_locks;

/* The one pthread_atfork, in initialisation before any registration (once
 * per process, even when a child runs initialisation again). */
void dsp_fork_install(void);

/* The child handler of a layer's slot (again the same: a no-op): it resets
 * the layer in a fork child, after fork.c re-initialised every lock. NULL:
 * the lock is all the layer keeps. After dsp_fork_install, with no lock of
 * ours held; a registration waits for a fork in progress (fork_mu), except
 * with one thread, where none can be (start-up leaves the locks' page
 * unwritten: test startup_leaves_the_fork_locks_page_unwritten). */
void dsp_fork_register(enum dsp_fork_slot slot, void (*child)(void));

#endif
