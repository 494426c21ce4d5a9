/* src/fork.c: one set of fork handlers takes every layer's lock (the slots of
 * struct dsp_fork_locks) in the order of enum dsp_fork_slot before the fork,
 * holds them all until the parent's and the child's handlers, and in the
 * child runs the layers' child handlers in reverse, whatever order the
 * layers registered in. */
#include "fork.h"
#include "helpers.h"

#include "aio_state.h"
#include "bounce.h"
#include "cuda_core.h"
#include "cuda_vreg.h"
#include "cufile_layer.h"

#include "harness.h"
#include <dspreload.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char seen[16];
static int nseen;
static void mark(char c) {
    if (nseen < (int)sizeof seen - 1) seen[nseen++] = c;
}
static void top_child(void) {
    mark('1');
}
static void bottom_child(void) {
    mark('2');
}

/* Every slot and fork_mu held by this thread (a default mutex: EBUSY). */
static int all_held(void) {
    if (pthread_mutex_trylock(&dsp_fork_locks.fork) != EBUSY) return 0;
    for (int i = 0; i < DSP_FORK_SLOTS; i++)
        if (pthread_mutex_trylock(&dsp_fork_locks.slot[i]) != EBUSY) return 0;
    return 1;
}
static int none_held(void) {
    for (int i = 0; i < DSP_FORK_SLOTS; i++) {
        if (pthread_mutex_trylock(&dsp_fork_locks.slot[i]) != 0) return 0;
        pthread_mutex_unlock(&dsp_fork_locks.slot[i]);
    }
    return 1;
}
/* Registered before the shim's: its prepare runs after the shim's, its
 * parent before the shim's (pthread_atfork's order). */
static int held_in_prepare = -1, held_in_parent = -1;
static void probe_prepare(void) {
    held_in_prepare = all_held();
}
static void probe_parent(void) {
    held_in_parent = all_held();
}

static void *idle(void *arg) {
    pause();
    return arg;
}

Test(fork_order, every_lock_held_across_fork_children_reset_in_reverse) {
    pthread_atfork(probe_prepare, probe_parent, NULL);
    pthread_t t; /* threaded: a single-threaded process takes no lock (fork.h) */
    cr_assert_eq(pthread_create(&t, NULL, idle, NULL), 0);
    void *p = dsp_alloc(4096); /* initialises: installs the handlers */
    cr_assert_not_null(p);
    /* Registered bottom first: the slot, not the registration, sets the order. */
    dsp_fork_register(DSP_FORK_SLOTS - 1, bottom_child);
    dsp_fork_register(0, top_child);
    dsp_fork_register(0, top_child); /* again: a no-op */
    pid_t pid = fork();
    if (pid == 0) _exit(strcmp(seen, "21") == 0 && none_held() ? 0 : 1);
    cr_assert_eq(held_in_prepare, 1, "a lock was free after prepare");
    cr_assert_eq(held_in_parent, 1, "a lock was free before the parent's release");
    cr_assert(none_held(), "a lock still held after fork");
    cr_assert_str_eq(seen, "");
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: wrong order, or a lock held");
    dsp_free(p);
}

/* Issue 32: the core's slots are positions; each layer names its own in its
 * header. Two layers naming one slot would share a mutex, and a layer's lock
 * in a slot out of nest order would deadlock the prepare handler: every lock
 * of docs/design.md, "Locks", has a slot of its own, in that order. */
Test(fork_order, each_lock_has_a_slot_of_its_own_in_nest_order) {
    const int order[] = {DSP_FORK_AIO,  DSP_FORK_BOUNCE, DSP_FORK_MANAGER, DSP_FORK_REGISTRY,
                         DSP_FORK_CUDA, DSP_FORK_VREG,   DSP_FORK_CUFILE};
    cr_assert_eq(sizeof order / sizeof order[0], (size_t)DSP_FORK_SLOTS, "a slot nobody takes");
    for (size_t i = 1; i < sizeof order / sizeof order[0]; i++)
        cr_assert_lt(order[i - 1], order[i], "lock %zu of \"Locks\" is not below lock %zu", i,
                     i - 1);
}
