/* For the CUDA test programs: each runs under LD_PRELOAD=libdspreload.so,
 * linked against the test double libcudart.so.13, and exits 0 (pass) or 1. */
#ifndef DSP_CUDA_TEST_H
#define DSP_CUDA_TEST_H

#define DSP_CUDA_PROTOTYPES
#include "json_number.h"
#include "cuda_types.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fakecuda_count(const char *name); /* calls that reached the double */
int fakecuda_kind(const void *p);     /* 0 unknown, 1 cudaHostAlloc memory, 2 registered */
void fakecuda_call_back_on_register(const void *q); /* fake_cudart.c */
int fakecuda_called_back(void);
unsigned fakecuda_contexts(void); /* devices whose primary context the runtime made (a mask) */

struct attrs24 {
    int type, device;
    void *devicePointer, *hostPointer;
};

#include <stdarg.h>

/* No format attribute: "" __VA_ARGS__ gives an empty format for bare checks. */
static inline void check_failed(const char *file, int line, const char *expr, const char *fmt,
                                ...) {
    fprintf(stderr, "FAIL %s:%d: %s ", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) check_failed(__FILE__, __LINE__, #c, "" __VA_ARGS__);                            \
    } while (0)

static inline void *shim(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        fprintf(stderr, "FAIL: %s not found: run under LD_PRELOAD=libdspreload.so\n", name);
        exit(1);
    }
    return f;
}

static inline int is_pinned(const void *p, size_t n) {
    return ((int (*)(const void *, size_t))shim("dsp_is_pinned"))(p, n);
}

static inline long long stat_of(const char *key) {
    return dsp_stat_from((int (*)(char *, size_t))shim("dsp_stats_json"), key);
}

static inline int calls(const char *fn) {
    return fakecuda_count(fn);
}

static inline int host_type(const void *p) {
    struct attrs24 a;
    memset(&a, 0x7f, sizeof a);
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) return -1;
    return a.type;
}

#define PASS()                                                                                     \
    do {                                                                                           \
        printf("PASS\n");                                                                          \
        return 0;                                                                                  \
    } while (0)

#endif
