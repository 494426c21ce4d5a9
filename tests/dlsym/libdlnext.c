/* A wrapper library (as another preload or a profiler is): its
 * dlscope_b_only wraps the next one, found with dlsym(RTLD_NEXT). RTLD_NEXT
 * searches the local scope of the object the program dlopened, after the
 * caller: libdlscope_b is there (a dependency of this library, in no global
 * scope), so only a lookup made as this library finds it; one made as the
 * shim would search after the shim, and find nothing. */
#include <dlfcn.h>

int dlscope_b_only(void) {
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "dlscope_b_only");
    return next ? next() + 1000 : -1;
}

/* A use of libdlscope_b, so that the linker keeps it as a dependency. */
int dlscope_b_other(void);
int dlnext_other(void) {
    return dlscope_b_other();
}

/* Not a tail call: glibc must see this library as the caller. */
void *dlnext_next(void) {
    void *volatile f = dlsym(RTLD_NEXT, "dlscope_b_only");
    return f;
}
