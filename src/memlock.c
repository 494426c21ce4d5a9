/* The program's own mlockall, mlock and mlock2 with the shim present
 * (hooked in preload/memcalls.c). Two things differ from calling the kernel
 * directly:
 * - the arena's reservation is address space only, yet mlockall(MCL_CURRENT)
 *   would count it: the kernel refuses MCL_CURRENT without CAP_IPC_LOCK when
 *   all of VmSize exceeds RLIMIT_MEMLOCK, and locks PROT_NONE ranges into
 *   VmLck. So the unused tail is given back around the call and everything
 *   reserved-only is unlocked after it (regression:
 *   mlockall_does_not_count_the_reservation);
 * - the pool's locked blocks count against the program's RLIMIT_MEMLOCK: when
 *   the kernel refuses for the limit (ENOMEM, EAGAIN) and the pool holds
 *   blocks, they are given back and the call tried once more (regressions:
 *   program_mlockall_gets_the_pool_back, program_mlock_gets_the_pool_back).
 * The calls are raw system calls: the sanitizers' interceptors make the mlock
 * family a silent no-op. Each returns 0, or -1 and errno, as the system call
 * (with memcalls.c, the exception to the core's -errno: internal.h). */
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "pool.h"
#include "memcalls.h"
#include "arena.h"
#include "memlock.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

/* Under mu. MCL_CURRENT runs without MCL_FUTURE first, so that the tail can
 * be reserved again unlocked (with VM_LOCKED in the defaults the kernel would
 * count it against RLIMIT_MEMLOCK and refuse); MCL_FUTURE alone then leaves
 * the existing mappings as they are. 0, or -errno (dsp_arena_mlockall sets
 * errno from it, as the system call). */
static int lock_all(int flags) {
    struct dsp_manager *m = &dsp_mgr;
    /* Reserved after MCL_FUTURE, the arena would be locked and counted against
     * RLIMIT_MEMLOCK (and refused): reserve it now, while it still can be. */
    if (flags & MCL_FUTURE) dsp_arena_ready(m);
    if (!(flags & MCL_CURRENT)) {
        if (syscall(SYS_mlockall, flags) != 0) return -errno;
        atomic_store(&m->lock_future, (flags & MCL_FUTURE) != 0);
        return 0;
    }
    size_t tail = dsp_arena_shed_tail(m);
    long rc = syscall(SYS_mlockall, flags & ~MCL_FUTURE);
    int err = errno;
    dsp_arena_restore_tail(m, tail);
    if (rc != 0) return -err;
    atomic_store(&m->lock_future, 0); /* the kernel cleared its defaults */
    dsp_arena_unlock_vacant(m);
    if (flags & MCL_FUTURE) {
        if (syscall(SYS_mlockall, MCL_FUTURE | (flags & MCL_ONFAULT)) != 0) return -errno;
        atomic_store(&m->lock_future, 1);
    }
    return 0;
}

static void log_retry(const char *call, int err, size_t pooled) {
    char a[32];
    dsp_once(DSP_LOG_INFO,
             "%s refused (%s) while the pool held %s: the pool is given back and the call "
             "tried again",
             call, err == EAGAIN ? "EAGAIN" : "ENOMEM", dsp_fmt_bytes(a, sizeof a, pooled));
}

int dsp_arena_mlockall(int flags) {
    struct dsp_manager *m = &dsp_mgr;
    if (dsp_reentered() || !dsp_ensure_init()) return (int)syscall(SYS_mlockall, flags);
    int rc;
    for (int attempt = 0;; attempt++) {
        dsp_mgr_lock();
        rc = lock_all(flags);
        size_t pooled = dsp_pooled_bytes(m);
        dsp_mgr_unlock();
        if (rc == 0 || attempt || (rc != -ENOMEM && rc != -EAGAIN) || !pooled) break;
        log_retry("mlockall", -rc, pooled);
        dsp_trim();
    }
    if (rc == 0) return 0;
    errno = -rc; /* the program's own system call: -1 and errno */
    return -1;
}

/* Blocks the manager locked are left as they are (memcalls.c). */
static long mlock_call(const void *addr, size_t len, int two, unsigned flags) {
    return dsp_mem_mlock(addr, len, two ? (int)flags : -1);
}

int dsp_mlock_with_room(const void *addr, size_t len, int two, unsigned flags) {
    struct dsp_manager *m = &dsp_mgr;
    if (mlock_call(addr, len, two, flags) == 0) return 0;
    int err = errno;
    if (dsp_reentered()) return -1; /* a signal handler inside the manager: no retry */
    /* A manager that never started holds no pool: nothing to give back. */
    if ((err == ENOMEM || err == EAGAIN) &&
        atomic_load_explicit(&dsp_init_state, memory_order_acquire) == 2) {
        dsp_mgr_lock();
        size_t pooled = dsp_pooled_bytes(m);
        dsp_mgr_unlock();
        if (pooled) {
            log_retry(two ? "mlock2" : "mlock", err, pooled);
            dsp_trim();
            if (mlock_call(addr, len, two, flags) == 0) return 0;
            err = errno;
        }
    }
    errno = err;
    return -1;
}
