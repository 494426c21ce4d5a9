/* Preloaded after the shim, this is the "real" io_cancel the shim finds
 * (under libaio's version node, slow_cancel.map): armed by the test, its next
 * call waits at a gate the test opens, so that the test can act while the
 * shim is inside the real call. It notes whether the gate timed out (the test
 * was held up: a lock of the shim's is held across the call) and whether the
 * iocb it was given changed meanwhile (the shim reused its state). */
#include <errno.h>
#include <linux/aio_abi.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

API _Atomic int slow_cancel_armed, slow_cancel_inside, slow_cancel_gate;
API _Atomic int slow_cancel_timed_out, slow_cancel_iocb_changed;

API int io_cancel(aio_context_t ctx, struct iocb *cb, struct io_event *ev) {
    if (atomic_exchange(&slow_cancel_armed, 0)) {
        struct iocb seen;
        memcpy(&seen, cb, sizeof seen);
        atomic_store(&slow_cancel_inside, 1);
        int i = 0;
        while (!atomic_load(&slow_cancel_gate) && i++ < 3000) usleep(1000);
        if (!atomic_load(&slow_cancel_gate)) atomic_store(&slow_cancel_timed_out, 1);
        if (memcmp(&seen, cb, sizeof seen) != 0) atomic_store(&slow_cancel_iocb_changed, 1);
    }
    int e = errno;
    long r = syscall(SYS_io_cancel, ctx, cb, ev);
    if (r < 0) r = -errno;
    errno = e;
    return (int)r;
}
