/* The program's own memory calls, as they must behave with the manager
 * present. Each hook is a thin call into the core, where the rules are
 * written and unit-testable: the mlock family in src/memlock.c (the
 * reservation is not counted as locked; a refusal for RLIMIT_MEMLOCK gets the
 * pool given back and one more try), the calls on memory the manager handed
 * out in src/memcalls.c. Outside the arena each is its system call after one
 * compare. Exported unversioned like the other hooks (preload/libdspreload.map). */
#include "manager.h"
#include "memcalls.h"
#include "memlock.h"

#include <stddef.h>

DSP_API int mlockall(int flags) {
    return dsp_arena_mlockall(flags);
}

DSP_API int mlock(const void *addr, size_t len) {
    return dsp_mlock_with_room(addr, len, 0, 0);
}

DSP_API int mlock2(const void *addr, size_t len, unsigned int flags) {
    return dsp_mlock_with_room(addr, len, 1, flags);
}

DSP_API int munlock(const void *addr, size_t len) {
    return dsp_mem_munlock(addr, len);
}

DSP_API int munlockall(void) {
    return dsp_mem_munlockall();
}

DSP_API int mprotect(void *addr, size_t len, int prot) {
    return dsp_mem_mprotect(addr, len, prot);
}

DSP_API int madvise(void *addr, size_t len, int advice) {
    return dsp_mem_madvise(addr, len, advice);
}
