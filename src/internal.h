/* Shared definitions of the manager core. Everything here is hidden from the
 * dynamic symbol table by -fvisibility=hidden and the export map.
 *
 * Errors inside the core: 0 or a non-negative result, or -errno; predicates
 * 1 or 0. The exceptions are named: the program's own system calls
 * (memcalls.c, memlock.c) return -1 and set errno, the public API in
 * include/dspreload.h its documented values (docs/design.md, "Layers of the
 * core"). */
#ifndef DSP_INTERNAL_H
#define DSP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <dspreload.h>

#define DSP_STR_(x) #x
#define DSP_STR(x)  DSP_STR_(x)
#define DSP_VERSION_STRING                                                                         \
    DSP_STR(DSP_VERSION_MAJOR) "." DSP_STR(DSP_VERSION_MINOR) "." DSP_STR(DSP_VERSION_PATCH)
/* meson.build's project version (which names the wheel and the Debian
 * package) and the public header's must be one: the build stops otherwise. */
#if defined(DSP_PROJECT_MAJOR) &&                                                                  \
    (DSP_PROJECT_MAJOR != DSP_VERSION_MAJOR || DSP_PROJECT_MINOR != DSP_VERSION_MINOR ||           \
     DSP_PROJECT_PATCH != DSP_VERSION_PATCH)
#error "include/dspreload.h's DSP_VERSION_* differ from meson.build's project version: change both"
#endif

#define DSP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define DSP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DSP_API         __attribute__((visibility("default")))
/* Start-up's page faults (issue 29): the first touch of each page of .bss
 * costs a fault (two when read before written), as much as the rest of the
 * constructor's work. Large zeroed arrays go to .lbss, after .bss
 * (DSP_LARGE_BSS), so that the small variables share a few pages; the few the
 * constructor always writes go to .data (DSP_STARTUP_DATA), on the page the
 * loader has written already (.got.plt, the zeroed head of .bss).
 * docs/design.md, "Initialisation". Only x86-64 compilers know .lbss as bss. */
#if defined(__x86_64__)
#define DSP_LARGE_BSS __attribute__((section(".lbss")))
#else
#define DSP_LARGE_BSS
#endif
#define DSP_STARTUP_DATA __attribute__((section(".data.dsp_startup")))
/* Code the constructor and destructor run, and the hooks glibc itself calls
 * while any program starts (the malloc family), together in .text.startup
 * (where the compiler puts constructors), so that their first calls fault in
 * one 64 KiB window of the library's code, not three (issue 29). */
#define DSP_STARTUP_TEXT __attribute__((section(".text.startup")))
/* Thread-locals on hot paths: initial-exec costs a plain %fs load, global-dynamic
 * a call (docs/internals.md, "Start-up order and thread-locals"). */
#define DSP_TLS __thread __attribute__((tls_model("initial-exec")))

#define DSP_KiB       ((size_t)1 << 10)
#define DSP_MiB       ((size_t)1 << 20)
#define DSP_GiB       ((size_t)1 << 30)
#define DSP_PAGE      ((size_t)4096)
#define DSP_HUGE_PAGE (2 * DSP_MiB)
/* The end of user address space with 5-level paging (2^47 with 4-level): no
 * mapping reaches past it, so no larger allocation or buffer can exist. */
#define DSP_USER_VA_END ((size_t)1 << 56)
/* The most one read or write moves (the kernel's MAX_RW_COUNT, INT_MAX
 * rounded down to a page): the kernel cuts longer ones short. */
#define DSP_MAX_RW ((size_t)0x7ffff000)

/* 1 when the process has never had a second thread (glibc 2.32+ keeps
 * __libc_single_threaded; it stays clear once a thread was made, and in the
 * child of a threaded parent), 0 when it has or when unknown. */
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
static inline int dsp_single_threaded(void) {
    return __libc_single_threaded != 0;
}
#else
static inline int dsp_single_threaded(void) {
    return 0;
}
#endif

static inline size_t dsp_align_up(size_t v, size_t a) {
    return (v + a - 1) & ~(a - 1);
}
static inline uintptr_t dsp_align_up_ptr(uintptr_t v, size_t a) {
    return (v + a - 1) & ~(uintptr_t)(a - 1);
}

#endif
