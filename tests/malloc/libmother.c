/* Another allocator preloaded before the shim (as jemalloc would be): its
 * malloc, free, calloc and realloc forward to glibc's. The shim must leave
 * the program bound to them (t_direct.c, "other"). */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) {
    return __libc_malloc(n);
}

void free(void *p) {
    __libc_free(p);
}

void *calloc(size_t m, size_t n) {
    return __libc_calloc(m, n);
}

void *realloc(void *p, size_t n) {
    return __libc_realloc(p, n);
}
