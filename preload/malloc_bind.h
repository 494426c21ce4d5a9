/* With malloc hints off, the program calls glibc's allocator without the
 * hooks (malloc_bind.c, issue 29). */
#ifndef DSP_MALLOC_BIND_H
#define DSP_MALLOC_BIND_H

#include "symbols.h"

#include <link.h>
#include <stdint.h>

/* A hook of the family, glibc's own function for it, its name, and what a
 * lookup of the name in the global scope answers (dlsym(RTLD_DEFAULT)). */
struct dsp_bind {
    uintptr_t hook, real;
    const char *name;
    uintptr_t global;
};

/* Rewrites the GOT slots of the loaded objects (all but the one holding
 * self) that are bound, or would bind at a lazy first call, to one of the n
 * hooks of t, to its glibc function; only for names the loader binds to the
 * hook (no other allocator comes first). The number of slots rewritten. */
int dsp_bind_direct(const struct dsp_bind *t, int n, uintptr_t self);

#endif
