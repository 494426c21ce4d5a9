/* src/fork.c: one set of fork handlers takes every layer's locks in the order
 * of enum dsp_fork_slot, whatever order the layers registered in, and releases
 * them (in the child: resets them) in reverse. */
#include "fork.h"
#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char seen[16];
static int nseen;
static void mark(char c) {
    if (nseen < (int)sizeof seen - 1) seen[nseen++] = c;
}
static void top_lock(void) {
    mark('T');
}
static void top_unlock(void) {
    mark('t');
}
static void top_child(void) {
    mark('1');
}
static void bottom_lock(void) {
    mark('B');
}
static void bottom_unlock(void) {
    mark('b');
}
static void bottom_child(void) {
    mark('2');
}

Test(fork_order, slots_lock_in_order_and_release_in_reverse) {
    void *p = dsp_alloc(4096); /* initialises: installs the handlers */
    cr_assert_not_null(p);
    static const struct dsp_fork_ops top = {top_lock, top_unlock, top_child},
                                     bottom = {bottom_lock, bottom_unlock, bottom_child};
    /* Registered bottom first: the slot, not the registration, sets the order. */
    dsp_fork_register(DSP_FORK_SLOTS - 1, &bottom);
    dsp_fork_register(0, &top);
    dsp_fork_register(0, &top); /* again: a no-op */
    pid_t pid = fork();
    if (pid == 0) _exit(strcmp(seen, "TB21") == 0 ? 0 : 1);
    cr_assert_str_eq(seen, "TBbt");
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child saw the wrong order");
    dsp_free(p);
}
