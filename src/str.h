/* String tests written out, for code that runs at start-up or before any
 * constructor: libc's would each be bound lazily at their first call, a
 * symbol lookup through every loaded object (issue 29), and the sanitizers
 * intercept them before they are initialised (symbols.c's glibc lookup). Not
 * instrumented, so that such code may call them. */
#ifndef DSP_STR_H
#define DSP_STR_H

#include <stddef.h>

#define DSP_STR_FN static inline __attribute__((no_sanitize("address", "thread", "undefined")))

/* 1 when a and b are the same string. */
DSP_STR_FN int dsp_str_eq(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* The first c in s (its NUL for c == 0), or NULL: strchr. */
DSP_STR_FN const char *dsp_str_chr(const char *s, char c) {
    for (;; s++) {
        if (*s == c) return s;
        if (!*s) return NULL;
    }
}

/* s past prefix when s starts with it, else NULL. */
DSP_STR_FN const char *dsp_str_after(const char *s, const char *prefix) {
    while (*prefix)
        if (*s++ != *prefix++) return NULL;
    return s;
}

#endif
