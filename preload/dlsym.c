/* dlsym and dlvsym: a lookup of a function the shim serves, on a handle of
 * the library that defines it (libcuda.so.1, libcudart.so.*, libcufile.so.0),
 * returns the shim's hook, so that programs which find these functions by
 * dlopen and dlsym (JAX/XLA, static cudart, KvikIO, ctypes) reach the manager
 * as programs linked against the libraries do. Every other lookup keeps
 * glibc's exact semantics.
 *
 * RTLD_DEFAULT and RTLD_NEXT depend on the caller: glibc reads its return
 * address to find the caller's object (the namespace and local scope for
 * RTLD_DEFAULT, the objects after it for RTLD_NEXT). Those lookups must reach
 * glibc as if the program called it, so the entry points are a few
 * instructions of assembly that jump, not call: on those handles straight to
 * glibc's dlsym, on any other handle to dsp_dlsym_handle. Neither ever
 * returns the shim's hook for RTLD_DEFAULT (the preloaded hooks come first
 * there anyway) or RTLD_NEXT (a caller asking for the next definition gets
 * the next one).
 *
 * glibc is reached by the address of its own (src/symbols.c), never through
 * this hook: no recursion (HAMi-core PR 326), no self-lookup loop. Nothing here
 * allocates, and nothing runs before the first lookup: sanitizer runtimes
 * call dlsym(RTLD_NEXT) before any constructor of ours. */
#include "config.h"
#include "internal.h"
#include "interposed.h"
#include "manager.h"
#include "stats.h"
#include "symbols.h"

#include <stdlib.h>
#include <string.h>

/* The entry points: on RTLD_DEFAULT ((void *)0) and RTLD_NEXT ((void *)-1) a
 * jump to glibc's dlsym (dsp_glibc_dlsym_ptr, found at the first call: the
 * registers holding the arguments are saved around the search), on any other
 * handle a jump to dsp_dlsym_handle. */
#if defined(__x86_64__)
#define ENTRY_POINT(name, ptr, handle)                                                             \
    ".globl " #name "\n"                                                                           \
    ".type " #name ", @function\n" #name ":\n"                                                     \
    "  endbr64\n"                                                                                  \
    "  test %rdi, %rdi\n"                                                                          \
    "  jz 1f\n"                                                                                    \
    "  cmp $-1, %rdi\n"                                                                            \
    "  je 1f\n"                                                                                    \
    "  jmp " #handle "\n"                                                                          \
    "1:\n"                                                                                         \
    "  mov " #ptr "(%rip), %rax\n"                                                                 \
    "  test %rax, %rax\n"                                                                          \
    "  jz 2f\n"                                                                                    \
    "  jmp *%rax\n"                                                                                \
    "2:\n" /* three pushes: the stack is 16-byte aligned at the call */                            \
    "  push %rdi\n"                                                                                \
    "  push %rsi\n"                                                                                \
    "  push %rdx\n"                                                                                \
    "  call dsp_glibc_resolve\n"                                                                   \
    "  pop %rdx\n"                                                                                 \
    "  pop %rsi\n"                                                                                 \
    "  pop %rdi\n"                                                                                 \
    "  mov " #ptr "(%rip), %rax\n"                                                                 \
    "  test %rax, %rax\n"                                                                          \
    "  jz 3f\n"                                                                                    \
    "  jmp *%rax\n"                                                                                \
    "3:\n"                                                                                         \
    "  ret\n" /* not found: NULL */                                                                \
    ".size " #name ", .-" #name "\n"
#elif defined(__aarch64__)
#define ENTRY_POINT(name, ptr, handle)                                                             \
    ".globl " #name "\n"                                                                           \
    ".type " #name ", %function\n" #name ":\n"                                                     \
    "  hint #34\n" /* bti c: reached by an indirect branch (PLT, pointer) */                       \
    "  cbz x0, 1f\n"                                                                               \
    "  cmn x0, #1\n"                                                                               \
    "  b.eq 1f\n"                                                                                  \
    "  b " #handle "\n"                                                                            \
    "1:\n"                                                                                         \
    "  adrp x16, " #ptr "\n"                                                                       \
    "  ldr x16, [x16, :lo12:" #ptr "]\n"                                                           \
    "  cbz x16, 2f\n"                                                                              \
    "  br x16\n"                                                                                   \
    "2:\n"                                                                                         \
    "  stp x29, x30, [sp, #-48]!\n"                                                                \
    "  mov x29, sp\n"                                                                              \
    "  stp x0, x1, [sp, #16]\n"                                                                    \
    "  str x2, [sp, #32]\n"                                                                        \
    "  bl dsp_glibc_resolve\n"                                                                     \
    "  ldp x0, x1, [sp, #16]\n"                                                                    \
    "  ldr x2, [sp, #32]\n"                                                                        \
    "  ldp x29, x30, [sp], #48\n"                                                                  \
    "  adrp x16, " #ptr "\n"                                                                       \
    "  ldr x16, [x16, :lo12:" #ptr "]\n"                                                           \
    "  cbz x16, 3f\n"                                                                              \
    "  br x16\n"                                                                                   \
    "3:\n"                                                                                         \
    "  mov x0, #0\n"                                                                               \
    "  ret\n"                                                                                      \
    ".size " #name ", .-" #name "\n"
#else
#error "preload/dlsym.c: no entry points for this architecture (x86_64 and aarch64 only)"
#endif
__asm__(".pushsection .text\n" ENTRY_POINT(dlsym, dsp_glibc_dlsym_ptr, dsp_dlsym_handle)
            ENTRY_POINT(dlvsym, dsp_glibc_dlvsym_ptr, dsp_dlvsym_handle) ".popsection\n");

/* Addresses only: the hooks are defined by their layers with their own types. */
#define DSP_HOOK_ENTRY(lib, name) void name(void);
DSP_HOOKED
#undef DSP_HOOK_ENTRY

/* Each hook, with the library a served name must come from (by file name
 * prefix) and the option that turns its layer off (then the real answer
 * stands). */
struct hooked {
    const char *name;
    void (*hook)(void);
    const char *lib;
    int off_option, off_value;
};
/* Sorted by strcmp (bsearch): the table's order (preload/interposed.h),
 * capitals first, so cuFile*, cuG*, cuM*, cuP*, then cuda*. */
#define DSP_HOOK_ENTRY(lib, name)                                                                  \
    {#name, name, DSP_LIB_FILE(lib), DSP_LIB_OPTION(lib), DSP_LIB_OFF(lib)},
static const struct hooked table[] = {DSP_HOOKED};
#define NTABLE (sizeof table / sizeof table[0])

static int by_name(const void *key, const void *elem) {
    return strcmp(key, ((const struct hooked *)elem)->name);
}

/* The slow path, for names starting with "cu" that glibc found. */
static void *substitute(const char *name, void *fn) {
    const struct hooked *t = bsearch(name, table, NTABLE, sizeof *table, by_name);
    if (!t || fn == (void *)t->hook) return fn;
    const char *obj = dsp_sym_object(fn);
    if (!obj || strncmp(obj, t->lib, strlen(t->lib)) != 0) return fn; /* another library's */
    /* Off (DSP_CUDA=off, DSP_CUFILE=off), or asked during the manager's own
     * start-up: the real function. */
    if (!dsp_ensure_init() || dsp_opt(t->off_option) == t->off_value) return fn;
    dsp_stat_add(DSP_ST_dlsym_hooked, 1);
    return (void *)t->hook;
}

/* Called only from the entry points above, by a jump: the caller's frame. */
__attribute__((used)) void *dsp_dlsym_handle(void *handle, const char *name) {
    void *fn = dsp_real_dlsym(handle, name);
    if (DSP_LIKELY(!fn || name[0] != 'c' || name[1] != 'u')) return fn;
    return substitute(name, fn);
}

__attribute__((used)) void *dsp_dlvsym_handle(void *handle, const char *name, const char *version) {
    void *fn = dsp_real_dlvsym(handle, name, version);
    if (DSP_LIKELY(!fn || name[0] != 'c' || name[1] != 'u')) return fn;
    return substitute(name, fn);
}
