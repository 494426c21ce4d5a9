/* The next definition of a libc function a hook stands in front of, found
 * once and kept: one load and a branch afterwards. Concurrent first calls
 * find the same address. DSP_REAL_DECL(type, name) declares real_name(),
 * which returns it (looked up with RTLD_NEXT, through glibc's own dlsym:
 * src/symbols.h). The library's constructor finds every one of a list with
 * DSP_REAL_FIND_ALL, so that no signal handler is the first to call one
 * (dlsym is not async-signal-safe): most in one walk of the loaded objects'
 * symbol tables (dsp_sym_next_all: 41 dlsyms were a fifth of the
 * constructor, issue 29), the rest with dlsym. */
#ifndef DSP_REAL_H
#define DSP_REAL_H

#include "internal.h"
#include "symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

/* Under ASan or TSan the runtime stands in front of these calls and reaches
 * the next definition itself, possibly ours, before it is initialised (an
 * instrumented hook then crashes in TSan's start-up): the sanitizer builds
 * define no hook here, and the libaio hooks ask the kernel, as the bound
 * check would make them do anyway. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) ||                               \
    __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DSP_NO_LIBC_HOOKS 1
#endif

/* What a hook calls when libc has no next definition (close_range and
 * closefrom before glibc 2.34, epoll_pwait2 before 2.35, found by a program
 * through our export): -1 with ENOSYS, as a missing system call answers. A
 * lookup that failed once is not made again, and no hook calls NULL. Every
 * hooked function returns an int, a pointer (sigset: -1 is SIG_ERR) or
 * nothing, so the cast stub's answer is the caller's error value. */
static inline long dsp_real_missing(void) {
    errno = ENOSYS;
    return -1;
}

#define DSP_REAL_DECL(type, name)                                                                  \
    static DSP_STARTUP_DATA type real_##name##_ptr;                                                \
    static inline type real_##name(void) {                                                         \
        type f = __atomic_load_n(&real_##name##_ptr, __ATOMIC_RELAXED);                            \
        if (DSP_UNLIKELY(!f)) {                                                                    \
            f = (type)dsp_real_dlsym(RTLD_NEXT, #name);                                            \
            if (!f) f = (type)(void *)dsp_real_missing;                                            \
            __atomic_store_n(&real_##name##_ptr, f, __ATOMIC_RELAXED);                             \
        }                                                                                          \
        return f;                                                                                  \
    }                                                                                              \
    static inline void real_##name##_set(void *f) {                                                \
        if (f) __atomic_store_n(&real_##name##_ptr, (type)f, __ATOMIC_RELAXED);                    \
    }

/* For a list of DSP_REAL_DECL entries X(type, name): its name, and its lookup. */
#define DSP_REAL_NAME(type, name) #name,
#define DSP_REAL_FIND(type, name) (void)real_##name();
#define DSP_REAL_SET(type, name)  real_##name##_set(found_[i_++]);

/* Every real function of a list found now: those the loaded objects' tables
 * answer in one walk (dsp_sym_next_all), the rest with dlsym, one each. */
#define DSP_REAL_FIND_ALL(LIST)                                                                    \
    do {                                                                                           \
        static const char *const names_[] = {LIST(DSP_REAL_NAME)};                                 \
        void *found_[sizeof names_ / sizeof *names_];                                              \
        size_t i_ = 0;                                                                             \
        dsp_sym_next_all(names_, found_, sizeof names_ / sizeof *names_);                          \
        LIST(DSP_REAL_SET)                                                                         \
        LIST(DSP_REAL_FIND)                                                                        \
    } while (0)

/* 1 when the program's lookup of every one of names finds this library's
 * definition (dsp_sym_ours). */
static inline int dsp_real_all_ours(const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!dsp_sym_ours(names[i])) return 0;
    return 1;
}

#endif
