/* How the libcuda double (fake_cuda.c) pins pages: as the NVIDIA driver does, with
 * FOLL_PIN (the driver's os-mlock.c calls pin_user_pages), reached from user
 * space through io_uring buffer registration, the one interface that pins
 * user pages the same way. What this changes, and why the double must model
 * it (docs/cuda.md, "Tests"):
 * - since Linux 5.9 (commit 70e806e4e645, "mm: Do early cow for pinned pages
 *   during fork() for ptes"), fork copies FOLL_PIN-pinned private pages into
 *   the child at once instead of sharing them copy-on-write: a fork with
 *   registered private memory costs a copy of it;
 * - pinned pages are not VM_LOCKED: munlock does not unpin them, VmLck does
 *   not count them.
 * io_uring takes at most 1 GiB per iovec and charges RLIMIT_MEMLOCK without
 * CAP_IPC_LOCK; where it refuses (limit, io_uring_disabled, file-backed
 * memory, no descriptor left), the double falls back to mlock for the memory
 * it maps itself, to nothing for registered memory, and fakecu_foll_pinned()
 * (fakecuda_foll_pinned() through the runtime double) tells the tests which
 * they got. */
#include "fake_cuda.h"

#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PIN_IOV_MAX ((size_t)1 << 30)

int fk_pin(void *p, size_t len, int lock_instead) {
    struct io_uring_params prm;
    memset(&prm, 0, sizeof prm);
    int fd = (int)syscall(__NR_io_uring_setup, 1, &prm);
    if (fd >= 0) {
        size_t n = (len + PIN_IOV_MAX - 1) / PIN_IOV_MAX;
        struct iovec iov[n ? n : 1];
        for (size_t i = 0; i < n; i++) {
            iov[i].iov_base = (char *)p + i * PIN_IOV_MAX;
            iov[i].iov_len =
                len - i * PIN_IOV_MAX < PIN_IOV_MAX ? len - i * PIN_IOV_MAX : PIN_IOV_MAX;
        }
        if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS, iov, (unsigned)n) == 0)
            return fd;
        close(fd);
    }
    /* Best effort: a lowered RLIMIT_MEMLOCK must not fail tests. Only memory
     * the double maps itself: munmap unlocks it, and memory a program (or the
     * shim) locked is never unlocked by the double. */
    if (lock_instead) mlock(p, len);
    return -1;
}

void fk_unpin(int pin) {
    if (pin >= 0) close(pin); /* the ring's buffers are unpinned as it goes */
}
