/* io_cancel and the shim's locks: run with tests/aio/slow_cancel.c preloaded
 * after the shim, so the real io_cancel can be held open while the test
 * reaps and submits bounced requests in another thread. */
#include "aio_test.h"

#include <pthread.h>
#include <stdatomic.h>

struct cancel_call {
    io_context_t ctx;
    struct iocb *cb;
    struct io_event ev;
    int r;
};
static void *do_cancel(void *arg) {
    struct cancel_call *c = arg;
    c->r = io_cancel(c->ctx, c->cb, &c->ev);
    return NULL;
}

static _Atomic int *control(const char *name) {
    _Atomic int *p = dlsym(RTLD_DEFAULT, name);
    cr_assert(p, "%s not found: run with slow_cancel preloaded after the shim", name);
    return p;
}

Test(aio_cancel, no_lock_is_held_across_the_real_io_cancel_and_its_state_is_not_reused) {
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = plain_alloc(1 << 20) + 1; /* misaligned: bounced */
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 65536, 0);
    cb.data = (void *)11;
    struct iocb *l[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l), 1);
    cr_assert_eq(stat_of("aio_bounced"), 1);

    atomic_store(control("slow_cancel_armed"), 1);
    struct cancel_call c = {ctx, &cb, {0}, 0};
    pthread_t t;
    pthread_create(&t, NULL, do_cancel, &c);
    for (int i = 0; i < 3000 && !atomic_load(control("slow_cancel_inside")); i++) usleep(1000);
    cr_assert(atomic_load(control("slow_cancel_inside")), "io_cancel never reached libaio");

    /* While the real io_cancel runs: reap the request (its state goes back)
     * and bounce another one, which must not take that state. */
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq(ev.obj, &cb);
    cr_assert_eq((long)ev.res, 65536);
    check_pattern(buf, 0, 65536);
    struct iocb cb2;
    io_prep_pread(&cb2, fd, buf, 65536, 1 << 20);
    cr_assert_eq(run_one(ctx, &cb2), 65536);
    check_pattern(buf, 1 << 20, 65536);
    int held_up = atomic_load(control("slow_cancel_timed_out"));

    atomic_store(control("slow_cancel_gate"), 1);
    pthread_join(t, NULL);
    cr_assert(!held_up, "io_getevents waited for the real io_cancel: a lock was held across it");
    cr_assert(!atomic_load(control("slow_cancel_iocb_changed")),
              "the state io_cancel handed to libaio was reused during the call");
    /* A completed read: the kernel's answer, as without the shim. */
    cr_assert_eq(c.r, -EINVAL, "io_cancel: %d", c.r);
    cr_assert_eq(stat_of("aio_bounced"), 2);
    /* The state freed at the unpin is usable again. */
    io_prep_pread(&cb2, fd, buf, 65536, 4096);
    cr_assert_eq(run_one(ctx, &cb2), 65536);
    check_pattern(buf, 4096, 65536);
}
