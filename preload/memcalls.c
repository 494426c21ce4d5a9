/* The program's own memory calls, as they must behave with the arena present:
 * the mlock family, and (to come) the calls a program may make on arena
 * memory itself. Each hook is a thin call into the core (src/memlock.c),
 * where the rules are written and unit-testable. Exported unversioned like
 * the other hooks (preload/libdspreload.map). */
#include "../src/manager.h"

#include <sys/mman.h>

/* mlockall: the reservation is not counted as locked, and a refusal for
 * RLIMIT_MEMLOCK gets the pool given back and one more try. */
DSP_API int mlockall(int flags) {
    return dsp_arena_mlockall(flags);
}

/* mlock, mlock2: the same "give back the pool and retry once" rule. */
DSP_API int mlock(const void *addr, size_t len) {
    return dsp_mlock_with_room(addr, len, 0, 0);
}

DSP_API int mlock2(const void *addr, size_t len, unsigned int flags) {
    return dsp_mlock_with_room(addr, len, 1, flags);
}
