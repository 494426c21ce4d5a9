/* The program's own memory calls (src/memcalls.c says what each does to
 * memory the manager handed out). Outside the arena each is its system call
 * after one compare. */
#include "../src/manager.h"

#include <stddef.h>

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
