/* One set of fork handlers for every layer (fork.h). */
#include "fork.h"
#include "internal.h"
#include "reentry.h"

#include <pthread.h>

#define FRESH PTHREAD_MUTEX_INITIALIZER
struct dsp_fork_locks dsp_fork_locks __attribute__((aligned(512))) = {.aio = FRESH,
                                                                      .bounce = FRESH,
                                                                      .manager = FRESH,
                                                                      .registry = FRESH,
                                                                      .cuda = FRESH,
                                                                      .vreg = FRESH,
                                                                      .cufile = FRESH,
                                                                      .fork = FRESH};
_Static_assert(sizeof(struct dsp_fork_locks) <= 512, "the fork locks fit their alignment");
/* Held from prepare to parent or child: a slot filled meanwhile waits, so the
 * slots a fork locked are the slots it releases. */
#define fork_mu (dsp_fork_locks.fork)
static int unlocked; /* this fork took no lock (fork.h) */
static const struct dsp_fork_ops *slots[DSP_FORK_SLOTS];
static int installed;

void dsp_fork_register(enum dsp_fork_slot slot, const struct dsp_fork_ops *ops) {
    pthread_mutex_lock(&fork_mu);
    slots[slot] = ops;
    pthread_mutex_unlock(&fork_mu);
}

static void prepare(void) {
    /* Written only when it changes: every page written after a fork takes
     * a fault, even once the child is gone, and this runs at every fork. */
    int none = dsp_single_threaded() && dsp_in_manager == 0;
    if (unlocked != none) unlocked = none;
    if (none) return;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &dsp_fork_locks.saved);
    pthread_mutex_lock(&fork_mu);
    for (int i = 0; i < DSP_FORK_SLOTS; i++)
        if (slots[i]) slots[i]->lock();
}

static void parent(void) {
    if (unlocked) return; /* nothing written: no page copied */
    for (int i = DSP_FORK_SLOTS - 1; i >= 0; i--)
        if (slots[i]) slots[i]->unlock();
    pthread_mutex_unlock(&fork_mu);
    pthread_sigmask(SIG_SETMASK, &dsp_fork_locks.saved, NULL);
}

static void child(void) {
    /* These handlers run, so they are registered, whatever the flag said when
     * another thread forked: initialisation in this child must not register
     * them twice (prepare would then take every lock twice). */
    installed = 1;
    for (int i = DSP_FORK_SLOTS - 1; i >= 0; i--)
        if (slots[i]) slots[i]->child();
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    fork_mu = fresh;
    if (!unlocked) pthread_sigmask(SIG_SETMASK, &dsp_fork_locks.saved, NULL);
}

void dsp_fork_install(void) {
    if (installed) return; /* initialisation may run again in a child */
    pthread_atfork(prepare, parent, child);
    installed = 1;
}
