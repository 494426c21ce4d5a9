/* For the malloc-hint tests: programs run under LD_PRELOAD=libdspreload.so
 * with DSP_MALLOC_MIN set; they reach the shim's API through dlsym, as an
 * application that knows nothing of it would not. */
#ifndef DSP_MALLOC_TEST_H
#define DSP_MALLOC_TEST_H

#include "../../launcher/json_number.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static inline void *shim_fn(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        fprintf(stderr, "FAIL: %s not found: run under LD_PRELOAD=libdspreload.so\n", name);
        exit(1);
    }
    return f;
}

/* Pinned by the manager (a hinted block), as every layer sees it. */
static inline int pinned(const void *p, size_t n) {
    return ((int (*)(const void *, size_t))shim_fn("dsp_is_pinned"))(p, n);
}

static inline long long stat_of(const char *key) {
    char buf[8192];
    ((int (*)(char *, size_t))shim_fn("dsp_stats_json"))(buf, sizeof buf);
    return dsp_json_number(buf, key);
}

#endif
