/* Finding the real functions behind the hooks, at first call: the shim links
 * none of the libraries it wraps. */
#ifndef DSP_SYMBOLS_H
#define DSP_SYMBOLS_H

#include "fork.h"

#include <link.h>
#include <stdatomic.h>
#include <stdint.h>

/* glibc's own dlsym and dlvsym, found by address in the C library's symbol
 * table (symbols.c), so that the shim's lookups never pass through its own
 * dlsym hook (preload/dlsym.c): the hook would answer a lookup of a served
 * name with the hook itself, and the shim would call itself forever (the
 * self-lookup loop of tkestack/gpu-manager issue 169). NULL if glibc's
 * cannot be found. */
void *dsp_real_dlsym(void *handle, const char *name);
void *dsp_real_dlvsym(void *handle, const char *name, const char *version);
/* The addresses, for the hook's entry points: NULL until dsp_glibc_resolve(). */
extern void *dsp_glibc_dlsym_ptr, *dsp_glibc_dlvsym_ptr;
void dsp_glibc_resolve(void);

/* glibc's own definition of function `name` in the C library (any version),
 * read from libc.so.6's symbol table: no lookup in any scope (another
 * allocator preloaded after the shim is not seen), no lock, no allocation.
 * NULL if not found. */
void *dsp_libc_sym(const char *name);

/* 1 for the C library (by file name: libc.so.*). */
int dsp_phdr_is_libc(const struct dl_phdr_info *info);

/* 1 when address a lies in one of the object's loaded segments. */
static inline int dsp_phdr_holds(const struct dl_phdr_info *info, uintptr_t a) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz) return 1;
    }
    return 0;
}

/* A loaded object's dynamic symbol tables, read once for several lookups. */
struct dsp_elf_tables {
    const ElfW(Sym) * symtab;
    const char *strtab;
    const uint32_t *gnu_hash, *sysv_hash;
    const ElfW(Half) * versym; /* each symbol's version index, or NULL */
};
/* Those of the object loaded at base with dynamic section `dynamic`: 1 and
 * *t, or 0. */
int dsp_elf_tables(const void *dynamic, uintptr_t base, struct dsp_elf_tables *t);
/* Those of a loaded object, by its PT_DYNAMIC: 1 and *t, or 0. */
int dsp_phdr_tables(const struct dl_phdr_info *info, struct dsp_elf_tables *t);
/* Whether they define function `name` (any version): 1 or 0. */
int dsp_elf_defines(const struct dsp_elf_tables *t, const char *name);
/* An address entry of a dynamic section: the loader rewrites most to
 * addresses where the section is writable; elsewhere (the vDSO, some
 * architectures) they stay offsets from base. */
static inline uintptr_t dsp_dyn_ptr(uintptr_t p, uintptr_t base) {
    return p < base ? base + p : p;
}

/* The next definitions after this library of the n (at most 64) functions
 * of names, in one walk of the loaded objects' symbol tables, the C library's
 * included (issue 29: a dlsym(RTLD_NEXT) each cost the constructor 0.2 µs,
 * 41 of them). out[i] gets what dlsym(RTLD_NEXT, names[i]) would answer, read
 * as glibc reads the tables: the first object that defines the name, its
 * unversioned or default-version definition. out[i] stays NULL where dlsym
 * must be asked: a name none of those objects defines (one loaded later, a
 * library opened RTLD_LOCAL, which RTLD_NEXT does not see either), or whose
 * first definition is not a plain function (an IFUNC, whose resolver dlsym
 * runs; data; several default versions), or behind an object without a GNU
 * hash table. Returns how many were found. */
size_t dsp_sym_next_all(const char *const *names, void **out, size_t n);
/* The same for what dlsym(RTLD_DEFAULT, names[i]) answers: the walk starts
 * at the program, this library included. */
size_t dsp_sym_first_all(const char *const *names, void **out, size_t n);

/* The next definition of `name` after this library: dlsym(RTLD_NEXT), else in
 * a loaded object whose file name starts with `lib_prefix` (such as
 * "libcudart.so"), found with dl_iterate_phdr and opened RTLD_NOLOAD: that is
 * how a library dlopen'ed RTLD_LOCAL (every Python extension) is reached, and
 * it never loads anything. NULL when not loaded. */
void *dsp_sym_next(const char *name, const char *lib_prefix);

/* As dsp_sym_next, for one version of a versioned symbol (dlvsym): libaio
 * exports two io_getevents with different arguments (docs/internals.md,
 * "libaio's symbols and conventions"). */
void *dsp_sym_next_v(const char *name, const char *version, const char *lib_prefix);

/* 1 when the program's own lookup of `name` (the global scope, in load order)
 * finds this library's definition, 0 when another object's comes first (a
 * sanitizer runtime, another preload, the program itself). Hooks that keep
 * state up to date (the tracked signal mask, the fd cache) are trusted only
 * where they are the ones called. */
int dsp_sym_ours(const char *name);

/* The file name (without folders) of the loaded object that holds address
 * `p`, or NULL. */
const char *dsp_sym_object(const void *p);

/* One resolver for the layers that wrap a library loaded at any time (the
 * CUDA runtime, the CUDA driver, cuFile): the real functions are looked up at
 * the layer's first call, again at each call until the library is loaded,
 * then the layer settles into serving or passing through for good.
 *
 * A layer describes itself once, statically; every hook starts with
 * dsp_layer_serving(&layer): one atomic load and a branch once settled. */
struct dsp_sym {
    const char *name;
    void **slot;  /* where the real function goes (NULL when not loaded) */
    int required; /* the layer cannot serve without it */
};

enum { DSP_LAYER_UNRESOLVED = 0, DSP_LAYER_SERVING = 1, DSP_LAYER_PASS = 2 };

struct dsp_layer {
    _Atomic int mode;             /* DSP_LAYER_* */
    _Atomic int resolving;        /* a thread is in dsp_layer_resolve, or it settled */
    _Atomic uintptr_t resolver;   /* that thread (pthread_self) */
    const char *lib;              /* file name prefix: "libcudart.so" */
    const struct dsp_sym *syms;   /* terminated by a NULL name */
    int off_option, off_value;    /* dsp_opt(off_option) == off_value: pass through */
    enum dsp_fork_slot fork_slot; /* registered once the manager is ready */
    void (*fork_child)(void);     /* its fork child handler, or NULL (fork.h) */
    /* Once the manager is ready and the required functions are found, before
     * the layer serves; returns 0 to pass through instead. Optional. */
    int (*start)(void);
};

/* The slow path: resolves, and settles when the library is loaded. Returns
 * the mode now (DSP_LAYER_UNRESOLVED: ask again at the next call). One thread
 * at a time: a call that arrives while another thread resolves waits for it
 * (a second at most), one from inside the resolution passes through. */
int dsp_layer_resolve(struct dsp_layer *l);

/* A real-function slot of a layer, read by a hook: atomically, since a call
 * that passes through while another thread resolves the layer (or one from
 * inside the resolution) reads it as dsp_layer_resolve fills it
 * (ThreadSanitizer in cuda_threads, issue 29). NULL: not found (yet). */
#define DSP_REAL(slot) __atomic_load_n(&(slot), __ATOMIC_ACQUIRE)

/* 1 when the layer serves (resolving it first if need be), else 0. */
static inline int dsp_layer_serving(struct dsp_layer *l) {
    int m = atomic_load_explicit(&l->mode, memory_order_acquire);
    return __builtin_expect(m == DSP_LAYER_SERVING, 1) ||
           (m == DSP_LAYER_UNRESOLVED && dsp_layer_resolve(l) == DSP_LAYER_SERVING);
}

/* Serving stops for good (a forked child, no usable driver). */
static inline void dsp_layer_pass(struct dsp_layer *l) {
    atomic_store(&l->mode, DSP_LAYER_PASS);
}

#endif
