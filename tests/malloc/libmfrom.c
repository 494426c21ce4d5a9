/* A library named in DSP_MALLOC_FROM by t_from. Its functions do work after
 * the allocation: a wrapper that only tail-calls malloc leaves no return
 * address of its own, and its allocations count as its caller's. */
#include <stdlib.h>

size_t from_lib_calls;

void *from_lib_malloc(size_t n) {
    void *p = malloc(n);
    __atomic_add_fetch(&from_lib_calls, 1, __ATOMIC_RELAXED);
    return p;
}

void *from_lib_calloc(size_t n) {
    void *p = calloc(1, n);
    __atomic_add_fetch(&from_lib_calls, 1, __ATOMIC_RELAXED);
    return p;
}
