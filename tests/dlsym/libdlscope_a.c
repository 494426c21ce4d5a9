/* Loaded RTLD_LOCAL with its dependency libdlscope_b: dlsym(RTLD_DEFAULT) from
 * here searches the global scope and this library's local scope, so it finds
 * b's symbol, which the program (whose scope lacks b) cannot. glibc tells the
 * scope by the caller's return address: a hook that called glibc's dlsym
 * instead of jumping to it would search the shim's scope and find nothing. */
#include <dlfcn.h>

int dlscope_b_only(void);

/* Not a tail call: glibc must see this library as the caller. */
void *dlscope_a_finds_b(void) {
    void *volatile f = dlsym(RTLD_DEFAULT, "dlscope_b_only");
    return f;
}

int dlscope_a_calls_b(void) {
    return dlscope_b_only();
}
