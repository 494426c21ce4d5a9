/* A libaio whose io_submit returns at once (no system call): with it, the
 * libaio hook's own cost is the whole difference between a call through the
 * hook and the same call made on a dlopen handle, which the shim cannot see.
 * Built as libaio.so.1 with libaio's version nodes (fake_libaio.map). */
#include <errno.h>

__attribute__((visibility("default"))) int io_submit(void *ctx, long nr, void **ios) {
    (void)ctx;
    (void)ios;
    return nr > 0 ? (int)nr : -EINVAL;
}

__attribute__((visibility("default"))) int io_getevents(void *ctx, long min_nr, long nr, void *ev,
                                                        void *ts) {
    (void)ctx, (void)min_nr, (void)nr, (void)ev, (void)ts;
    return 0;
}
