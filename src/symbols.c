#include "manager.h"
#include "symbols.h"

#include "config.h"
#include "str.h"
#include "sys.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* glibc's dlsym and dlvsym, by address. No symbol lookup can name them: an
 * unversioned definition satisfies a versioned reference (that is how the
 * shim's unversioned hooks interpose `cudaHostAlloc@libcudart.so.13`), so
 * even `dlsym@GLIBC_2.2.5` binds to the shim's own dlsym hook, and
 * dlvsym(RTLD_NEXT, "dlsym", ...) would go through the shim's dlvsym hook.
 * So they are read from the C library's own dynamic symbol table (libc.so.6,
 * or libdl.so.2 before glibc 2.34). The dlsym hook's entry points
 * (preload/dlsym.c) jump through these two pointers.
 *
 * This runs at the first dlsym of the process, which a sanitizer runtime
 * makes from its own initialisation, before any constructor and before its
 * interceptors work: so the code below calls nothing (the loader's list of
 * objects is read from _r_debug, not with dl_iterate_phdr, which TSan
 * intercepts; strings are compared by hand, since the sanitizers intercept
 * strcmp) and is not instrumented. */
__attribute__((used)) DSP_STARTUP_DATA void *dsp_glibc_dlsym_ptr, *dsp_glibc_dlvsym_ptr;

#define NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

/* Whether path's file name starts with prefix; by hand: no lazy binding of
 * strrchr at start-up. */
DSP_STARTUP_TEXT NO_SANITIZE static int named(const char *path, const char *prefix) {
    const char *s = path;
    for (const char *p = path; p && *p; p++)
        if (*p == '/') s = p + 1;
    return s && dsp_str_after(s, prefix) != NULL;
}

NO_SANITIZE static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

DSP_STARTUP_TEXT NO_SANITIZE static const ElfW(Sym) *
    defined(const struct dsp_elf_tables *t, uint32_t i, const char *name) {
    const ElfW(Sym) *s = &t->symtab[i];
    unsigned type = ELF64_ST_TYPE(s->st_info);
    if (s->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) return NULL;
    return dsp_str_eq(t->strtab + s->st_name, name) ? s : NULL;
}

/* The definition of name in one object's tables (any version: glibc's
 * versions of dlsym are one function), or NULL. */
DSP_STARTUP_TEXT NO_SANITIZE static const ElfW(Sym) *
    elf_lookup(const struct dsp_elf_tables *t, const char *name) {
    if (t->gnu_hash) {
        const uint32_t *ht = t->gnu_hash;
        uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&ht[4] + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = gnu_hash(name);
        if (!nbuckets) return NULL;
        uint32_t i = buckets[h % nbuckets];
        if (i == 0 || i < symoffset) return NULL; /* an empty bucket */
        for (;; i++) {
            uint32_t h2 = chain[i - symoffset];
            const ElfW(Sym) *s = (h | 1) == (h2 | 1) ? defined(t, i, name) : NULL;
            if (s) return s;
            if (h2 & 1) return NULL; /* the end of the bucket's chain */
        }
    }
    if (t->sysv_hash) { /* nchain is the number of symbols */
        for (uint32_t i = 0; i < t->sysv_hash[1]; i++) {
            const ElfW(Sym) *s = defined(t, i, name);
            if (s) return s;
        }
    }
    return NULL;
}

/* The symbol tables of the object at base with dynamic section dyn: 1 and
 * *t, or 0. */
DSP_STARTUP_TEXT NO_SANITIZE static int tables(const ElfW(Dyn) * dyn, uintptr_t base,
                                               struct dsp_elf_tables *t) {
    *t = (struct dsp_elf_tables){0};
    for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
        /* The loader relocates these in place where the dynamic section is
         * writable; elsewhere they are still offsets. */
        ElfW(Addr) a = dsp_dyn_ptr(d->d_un.d_ptr, base);
        if (d->d_tag == DT_SYMTAB) t->symtab = (const void *)a;
        if (d->d_tag == DT_STRTAB) t->strtab = (const void *)a;
        if (d->d_tag == DT_GNU_HASH) t->gnu_hash = (const void *)a;
        if (d->d_tag == DT_HASH) t->sysv_hash = (const void *)a;
        if (d->d_tag == DT_VERSYM) t->versym = (const void *)a;
    }
    return t->symtab && t->strtab;
}

/* The symbol tables of l when it is the C library (or, with libdl, libdl):
 * 1 and *t, else 0. */
DSP_STARTUP_TEXT NO_SANITIZE static int libc_tables(const struct link_map *l, int libdl,
                                                    struct dsp_elf_tables *t) {
    if (!named(l->l_name, "libc.so.") && !(libdl && named(l->l_name, "libdl.so."))) return 0;
    return tables(l->l_ld, l->l_addr, t);
}

DSP_STARTUP_TEXT NO_SANITIZE static int find_in(const struct link_map *l) {
    struct dsp_elf_tables t;
    if (!libc_tables(l, 1, &t)) return 0;
    const ElfW(Sym) *s = elf_lookup(&t, "dlsym"), *v = elf_lookup(&t, "dlvsym");
    if (!s || !v) return 0; /* libc.so.6 before 2.34 has neither: libdl.so.2 comes */
    __atomic_store_n(&dsp_glibc_dlvsym_ptr, (void *)(l->l_addr + v->st_value), __ATOMIC_RELEASE);
    __atomic_store_n(&dsp_glibc_dlsym_ptr, (void *)(l->l_addr + s->st_value), __ATOMIC_RELEASE);
    return 1;
}

/* The C library is loaded before the program runs and never unloaded: the
 * list is walked from its head, where the loader put it, and the walk stops
 * there (objects dlopen'ed later come after it). */
DSP_STARTUP_TEXT NO_SANITIZE void dsp_glibc_resolve(void) {
    if (__atomic_load_n(&dsp_glibc_dlsym_ptr, __ATOMIC_ACQUIRE)) return;
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (find_in(l)) return;
    static const char msg[] = "dspreload: error: glibc's dlsym not found in the C library: "
                              "every dlsym returns NULL\n";
    ssize_t w = write(2, msg, sizeof msg - 1); /* nothing else works yet */
    (void)w;
}

DSP_STARTUP_TEXT void *dsp_libc_sym(const char *name) {
    struct dsp_elf_tables t;
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (libc_tables(l, 0, &t)) {
            const ElfW(Sym) *s = elf_lookup(&t, name);
            return s && ELF64_ST_TYPE(s->st_info) == STT_FUNC ? (void *)(l->l_addr + s->st_value)
                                                              : NULL;
        }
    return NULL;
}

DSP_STARTUP_TEXT int dsp_elf_tables(const void *dynamic, uintptr_t base, struct dsp_elf_tables *t) {
    return tables(dynamic, base, t);
}

DSP_STARTUP_TEXT int dsp_elf_defines(const struct dsp_elf_tables *t, const char *name) {
    return elf_lookup(t, name) != NULL;
}

/* --- the next definitions, in one walk (dsp_sym_next_all) ------------------ */

enum { NEXT_NONE, NEXT_FOUND, NEXT_ASK };

/* What one object's tables answer for name, as glibc's lookup for dlsym reads
 * them (elf/dl-lookup.c, do_lookup_x and check_match with
 * DL_LOOKUP_RETURN_NEWEST): an undefined or zero entry, a local one, or one of
 * another kind is passed over; an unversioned definition (version index 0 or
 * 1) is taken at once; else the one default version (index 2 or more, not
 * hidden) if there is exactly one. NEXT_FOUND with *s a function, NEXT_ASK
 * when the answer is something else (dlsym will say), NEXT_NONE. */
DSP_STARTUP_TEXT static int next_in(const struct dsp_elf_tables *t, const char *name, uint32_t h,
                                    const ElfW(Sym) * *found) {
    const uint32_t *ht = t->gnu_hash;
    uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2], shift = ht[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)&ht[4];
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size), *chain = buckets + nbuckets;
    enum { BITS = sizeof(ElfW(Addr)) * 8 };
    if (!nbuckets || !bloom_size) return NEXT_NONE;
    ElfW(Addr) word = bloom[(h / BITS) & (bloom_size - 1)];
    if (!((word >> (h % BITS)) & (word >> ((h >> shift) % BITS)) & 1)) return NEXT_NONE;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return NEXT_NONE; /* an empty bucket */
    const ElfW(Sym) *versioned = NULL;
    int nversioned = 0;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *s = &t->symtab[i];
        unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        int kind_ok = type <= STT_FUNC || type == STT_COMMON || type == STT_TLS ||
                      type == STT_GNU_IFUNC; /* NOTYPE, OBJECT, FUNC and those */
        if ((h | 1) == (h2 | 1) && s->st_shndx != SHN_UNDEF && (s->st_value || type == STT_TLS) &&
            kind_ok && bind != STB_LOCAL && dsp_str_eq(t->strtab + s->st_name, name)) {
            ElfW(Half) v = t->versym ? t->versym[i] : 0;
            if ((v & 0x7fff) < 2) {
                *found = s;
                break;
            }
            if (!(v & 0x8000) && nversioned++ == 0) versioned = s;
        }
        if (h2 & 1) { /* the end of the bucket's chain */
            if (nversioned != 1) return nversioned ? NEXT_ASK : NEXT_NONE;
            *found = versioned;
            break;
        }
    }
    return ELF64_ST_TYPE((*found)->st_info) == STT_FUNC && (*found)->st_shndx != SHN_ABS
               ? NEXT_FOUND
               : NEXT_ASK;
}

struct next_walk {
    const char *const *names;
    void **out;
    size_t n, found;
    uint32_t hash[64];
    uint64_t settled;     /* bit i: names[i] answered (found, or left to dlsym) */
    uintptr_t self, vdso; /* an address in this library; the vDSO's image */
    int past_self;        /* 1 from the start for dsp_sym_first_all */
};

DSP_STARTUP_TEXT int dsp_phdr_is_libc(const struct dl_phdr_info *info) {
    return named(info->dlpi_name, "libc.so.");
}

DSP_STARTUP_TEXT int dsp_phdr_tables(const struct dl_phdr_info *info, struct dsp_elf_tables *t) {
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return tables((const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                          info->dlpi_addr, t);
    return 0;
}

DSP_STARTUP_TEXT static int next_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct next_walk *w = arg;
    int libc = dsp_phdr_is_libc(info);
    if (!w->past_self) {
        w->past_self = dsp_phdr_holds(info, w->self);
        /* This library opened after the C library (dlopen): RTLD_NEXT then
         * searches its own dependencies, not the list; dlsym answers. */
        return libc;
    }
    /* The vDSO is in the loader's list but in no lookup scope. */
    if (w->vdso && dsp_phdr_holds(info, w->vdso)) return 0;
    struct dsp_elf_tables t;
    /* Without a GNU hash table: dlsym answers whatever is still open. */
    if (!dsp_phdr_tables(info, &t) || !t.gnu_hash) return 1;
    for (size_t i = 0; i < w->n; i++) {
        const ElfW(Sym) *s = NULL;
        int r = w->settled >> i & 1 ? NEXT_NONE : next_in(&t, w->names[i], w->hash[i], &s);
        if (r == NEXT_NONE) continue;
        w->settled |= (uint64_t)1 << i;
        if (r == NEXT_FOUND) w->out[i] = (void *)(info->dlpi_addr + s->st_value), w->found++;
    }
    /* Past the C library come only objects opened later: RTLD_NEXT sees those
     * opened RTLD_GLOBAL and not the others, which the list does not say. */
    return libc || w->settled == (w->n == 64 ? UINT64_MAX : ((uint64_t)1 << w->n) - 1);
}

DSP_STARTUP_TEXT static size_t walk_all(const char *const *names, void **out, size_t n,
                                        int from_head) {
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (n > 64) return 0;
    struct next_walk w = {names,
                          out,
                          n,
                          0,
                          {0},
                          0,
                          (uintptr_t)dsp_sym_next_all,
                          (uintptr_t)getauxval(AT_SYSINFO_EHDR),
                          from_head};
    for (size_t i = 0; i < n; i++) w.hash[i] = gnu_hash(names[i]);
    dl_iterate_phdr(next_object, &w);
    return w.found;
}

DSP_STARTUP_TEXT size_t dsp_sym_next_all(const char *const *names, void **out, size_t n) {
    return walk_all(names, out, n, 0);
}

DSP_STARTUP_TEXT size_t dsp_sym_first_all(const char *const *names, void **out, size_t n) {
    return walk_all(names, out, n, 1);
}

DSP_STARTUP_TEXT static void *glibc_dlsym(void *h, const char *name) {
    void *fn = __atomic_load_n(&dsp_glibc_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (!fn) dsp_glibc_resolve(), fn = __atomic_load_n(&dsp_glibc_dlsym_ptr, __ATOMIC_ACQUIRE);
    return fn ? ((void *(*)(void *, const char *))fn)(h, name) : NULL;
}

static void *glibc_dlvsym(void *h, const char *name, const char *version) {
    void *fn = __atomic_load_n(&dsp_glibc_dlvsym_ptr, __ATOMIC_ACQUIRE);
    if (!fn) dsp_glibc_resolve(), fn = __atomic_load_n(&dsp_glibc_dlvsym_ptr, __ATOMIC_ACQUIRE);
    return fn ? ((void *(*)(void *, const char *, const char *))fn)(h, name, version) : NULL;
}

DSP_STARTUP_TEXT void *dsp_real_dlsym(void *handle, const char *name) {
    return glibc_dlsym(handle, name);
}

void *dsp_real_dlvsym(void *handle, const char *name, const char *version) {
    return glibc_dlvsym(handle, name, version);
}

struct search {
    const char *prefix;
    char path[4096];
    void *self_base; /* our own object, to skip */
};

static int match(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct search *s = arg;
    const char *path = info->dlpi_name;
    if (!path || !*path || (void *)info->dlpi_addr == s->self_base) return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, s->prefix, strlen(s->prefix)) != 0) return 0;
    size_t n = strlen(path);
    if (n >= sizeof s->path) return 0;
    memcpy(s->path, path, n + 1);
    return 1; /* the first one loaded */
}

static void *lookup(void *h, const char *name, const char *version) {
    return version ? glibc_dlvsym(h, name, version) : glibc_dlsym(h, name);
}

void *dsp_sym_next_v(const char *name, const char *version, const char *lib_prefix) {
    void *fn = lookup(RTLD_NEXT, name, version);
    if (fn || !lib_prefix) return fn;
    struct search s = {lib_prefix, {0}, NULL};
    Dl_info self;
    if (dladdr((void *)dsp_sym_next, &self)) s.self_base = self.dli_fbase;
    /* dlopen must not run inside the callback (the loader lock is held). */
    if (!dl_iterate_phdr(match, &s)) return NULL;
    void *h = dlopen(s.path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    fn = lookup(h, name, version);
    dlclose(h); /* drops only the reference RTLD_NOLOAD took */
    return fn;
}

void *dsp_sym_next(const char *name, const char *lib_prefix) {
    return dsp_sym_next_v(name, NULL, lib_prefix);
}

int dsp_sym_ours(const char *name) {
    Dl_info found, self;
    void *p = glibc_dlsym(RTLD_DEFAULT, name);
    return p && dladdr(p, &found) && dladdr((void *)dsp_sym_ours, &self) &&
           found.dli_fbase == self.dli_fbase;
}

const char *dsp_sym_object(const void *p) {
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname) return NULL;
    const char *base = strrchr(info.dli_fname, '/');
    return base ? base + 1 : info.dli_fname;
}

/* One thread resolves a layer at a time. Two threads' first calls that
 * resolved together both ran start(), writing the layer's function table at
 * once, and one's lookups stored a function another had already read as
 * missing (ThreadSanitizer in cuda_threads, now and then). The thread that
 * arrives second waits for the first and answers as it settled; a call from
 * inside the resolution (start() reaching a hook) passes through. The wait
 * is bounded, not a lock: the lookups (dlsym, dlopen) take the loader's
 * lock, and a library constructor that the loader runs under it may call a
 * hook meanwhile; after a second that call passes through, what the program
 * would have had without the shim. */
#define RESOLVE_WAIT_NS 1000000000ull

int dsp_layer_resolve(struct dsp_layer *l) {
    uintptr_t self = (uintptr_t)pthread_self();
    int idle = 0;
    if (!atomic_compare_exchange_strong(&l->resolving, &idle, 1)) {
        if (atomic_load(&l->resolver) == self) return atomic_load(&l->mode); /* re-entered */
        uint64_t until = dsp_sys_mono_ns() + RESOLVE_WAIT_NS;
        while (atomic_load(&l->mode) == DSP_LAYER_UNRESOLVED && atomic_load(&l->resolving) &&
               dsp_sys_mono_ns() < until)
            sched_yield();
        return atomic_load(&l->mode);
    }
    atomic_store(&l->resolver, self);
    int found_all = 1;
    for (const struct dsp_sym *s = l->syms; s->name; s++) {
        /* Found ones only: a lookup made before the library was loaded must
         * not undo an earlier finding. */
        void *fn = dsp_sym_next(s->name, l->lib), *none = NULL;
        if (fn)
            __atomic_compare_exchange_n(s->slot, &none, fn, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
        if (!__atomic_load_n(s->slot, __ATOMIC_ACQUIRE) && s->required) found_all = 0;
    }
    int ready = dsp_ensure_init(); /* 0: re-entered from init */
    /* Before serving: until then no thread takes the layer's locks. */
    if (ready && l->fork_child) dsp_fork_register(l->fork_slot, l->fork_child);
    if (!ready || !found_all) { /* or the library is not loaded yet (a probe) */
        atomic_store(&l->resolver, 0);
        atomic_store(&l->resolving, 0); /* the next call tries again */
        return DSP_LAYER_UNRESOLVED;
    }
    int m = dsp_opt(l->off_option) == l->off_value ? DSP_LAYER_PASS : DSP_LAYER_SERVING;
    if (m == DSP_LAYER_SERVING && l->start && !l->start()) m = DSP_LAYER_PASS;
    int expected = DSP_LAYER_UNRESOLVED;
    atomic_compare_exchange_strong(&l->mode, &expected, m);
    return atomic_load(&l->mode); /* settled: resolving stays set */
}
