/* One set of fork handlers for every layer (fork.h). */
#include "fork.h"

#include <pthread.h>

/* Held from prepare to parent or child: a slot filled meanwhile waits, so the
 * slots a fork locked are the slots it releases. */
static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;
static const struct dsp_fork_ops *slots[DSP_FORK_SLOTS];
static int installed;

void dsp_fork_register(enum dsp_fork_slot slot, const struct dsp_fork_ops *ops) {
    pthread_mutex_lock(&fork_mu);
    slots[slot] = ops;
    pthread_mutex_unlock(&fork_mu);
}

static void prepare(void) {
    pthread_mutex_lock(&fork_mu);
    for (int i = 0; i < DSP_FORK_SLOTS; i++)
        if (slots[i]) slots[i]->lock();
}

static void parent(void) {
    for (int i = DSP_FORK_SLOTS - 1; i >= 0; i--)
        if (slots[i]) slots[i]->unlock();
    pthread_mutex_unlock(&fork_mu);
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
}

void dsp_fork_install(void) {
    if (installed) return; /* initialisation may run again in a child */
    pthread_atfork(prepare, parent, child);
    installed = 1;
}
