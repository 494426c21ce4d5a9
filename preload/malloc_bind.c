/* Binding the program straight to glibc's allocator while malloc hints are
 * off (issue 29): the hooks of malloc.c cost an indirect jump and a compare
 * on every call, so with hints off the library constructor rewrites the
 * loaded objects' GOT slots that the loader bound to a hook (or would bind to
 * one at a lazy first call) to glibc's own function.
 *
 * Why not an IFUNC whose resolver picks glibc's function: glibc relocates
 * libc.so.6 before any preloaded object (dependencies first), and libc binds
 * malloc and free eagerly (R_X86_64_GLOB_DAT); the resolver would run in an
 * object not yet relocated, where it cannot even reach glibc's address, and
 * glibc 2.36 prints "Relink `libc.so.6' with `libdspreload.so' for IFUNC
 * symbol `malloc'" in every process (elf/dl-machine.h; measured here, see
 * docs/internals.md, "glibc's allocator").
 *
 * What is rewritten: R_*_JUMP_SLOT and R_*_GLOB_DAT slots of every object
 * loaded when the constructor runs, except this library and the C library, that hold a hook's
 * address, or, for a lazy JUMP_SLOT of one of the family's names, still
 * point into their own object (the PLT: the loader would bind them to the
 * hook at the first call). A slot holding anything else (another allocator
 * preloaded before us, an auditor's trampoline) is left alone. Slots in the
 * RELRO segment are written between two mprotect calls, one pair per object.
 * A store of an aligned pointer is atomic, and both values are right while
 * hints are off: a thread calling meanwhile reaches glibc either way. */
#include "malloc_bind.h"

#include "internal.h"
#include "log.h"
#include "str.h"
#include "symbols.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT  R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT  R_AARCH64_GLOB_DAT
#endif

#ifdef R_JUMP_SLOT

#define MAX_SLOTS 64 /* per object: the family is 11 names, each with 2 kinds */

struct walk {
    const struct dsp_bind *t;
    int n;
    uintptr_t self; /* an address inside this library: its object is skipped */
    int rewritten, refused;
    /* The first pass: */
    int index, self_index;    /* objects seen; ours */
    unsigned defined_before;  /* bit i: an object between the program and ours defines t[i] */
    struct dl_phdr_info main; /* a copy: the loader's lives for one callback */
    int have_main;
    unsigned main_defines;      /* bit i: the program defines t[i].name */
    uintptr_t hook_lo, hook_hi; /* the lowest and highest hook address */
    uint32_t by_first[128];     /* bit i of [c]: t[i].name starts with the ASCII byte c */
};

struct object {
    const struct dl_phdr_info *info;
    uintptr_t relro_lo, relro_hi; /* the pages the loader made read-only */
    uintptr_t lo, hi;             /* its loaded segments' extent */
    const ElfW(Sym) * symtab;
    const char *strtab;
    uintptr_t *slot[MAX_SLOTS];
    uintptr_t value[MAX_SLOTS];
    int nslots, protect;
};

/* The glibc function of the family's name, or 0. Only the names that share
 * its first letter are compared, inline: a strcmp with each of the family's
 * eleven names was two thirds of the binding's instructions in Python (2,100
 * calls, issue 29). */
DSP_STARTUP_TEXT static uintptr_t by_name(const struct walk *w, const char *name) {
    unsigned char c = (unsigned char)name[0];
    for (uint32_t m = c < 128 ? w->by_first[c] : 0; m; m &= m - 1)
        if (dsp_str_eq(name, w->t[__builtin_ctz(m)].name)) return w->t[__builtin_ctz(m)].real;
    return 0;
}

DSP_STARTUP_TEXT static void add(struct object *o, const ElfW(Rela) * r, uintptr_t real) {
    if (o->nslots == MAX_SLOTS) return;
    uintptr_t a = o->info->dlpi_addr + r->r_offset;
    o->slot[o->nslots] = (uintptr_t *)a;
    o->value[o->nslots++] = real;
    if (a >= o->relro_lo && a < o->relro_hi) o->protect = 1;
}

/* The lazy slots of lazy[0..n) (relocation indexes), by their names. The
 * names are read from the object's symbol and string tables, each read a
 * cache miss: all the symbols of the batch are asked for first, then all the
 * names, so that the misses overlap. */
DSP_STARTUP_TEXT static void by_names(const struct walk *w, struct object *o, const ElfW(Rela) * r,
                                      const uint32_t *lazy, int n) {
    for (int i = 0; i < n; i++) __builtin_prefetch(&o->symtab[ELF64_R_SYM(r[lazy[i]].r_info)]);
    for (int i = 0; i < n; i++)
        __builtin_prefetch(o->strtab + o->symtab[ELF64_R_SYM(r[lazy[i]].r_info)].st_name);
    for (int i = 0; i < n; i++) {
        uintptr_t real = by_name(w, o->strtab + o->symtab[ELF64_R_SYM(r[lazy[i]].r_info)].st_name);
        if (real) add(o, &r[lazy[i]], real);
    }
}

/* The slots of relocations r[0..n) to rewrite: those the loader bound to a
 * hook, and lazy PLT slots of the family's names, which still point into
 * their own object (the loader maps an object's extent whole, its holes
 * inaccessible). Only those lazy slots' names are read, in batches: an
 * object bound at load (BIND_NOW, or a slot already called) has none, and
 * reading every relocation's symbol cost fio, with 64 libraries, 1.4 million
 * instructions at start-up (issue 29). */
DSP_STARTUP_TEXT static void collect(const struct walk *w, struct object *o, const ElfW(Rela) * r,
                                     size_t n) {
    enum { BATCH = 64 };
    uint32_t lazy[BATCH];
    int nlazy = 0;
    int names = o->symtab && o->strtab;
    for (size_t k = 0; k < n; k++) {
        unsigned long type = ELF64_R_TYPE(r[k].r_info);
        if (type != R_JUMP_SLOT && type != R_GLOB_DAT) continue;
        uintptr_t v = *(uintptr_t *)(o->info->dlpi_addr + r[k].r_offset);
        if (v - w->hook_lo <= w->hook_hi - w->hook_lo) { /* libc alone has 1,500 relocations */
            for (int i = 0; i < w->n; i++)
                if (v == w->t[i].hook) add(o, &r[k], w->t[i].real);
            continue;
        }
        if (type != R_JUMP_SLOT || !names || v - o->lo >= o->hi - o->lo) continue;
        lazy[nlazy++] = (uint32_t)k;
        if (nlazy == BATCH) by_names(w, o, r, lazy, nlazy), nlazy = 0;
    }
    by_names(w, o, r, lazy, nlazy);
}

struct relocs {
    const ElfW(Rela) * jmprel, *rela; /* rela: past its leading relative relocations */
    size_t njmp, nrela;
};

/* The object's PLT and other relocations, its symbols and its RELRO pages:
 * 0, or -1 when it has nothing to read. */
DSP_STARTUP_TEXT static int parse(const struct dl_phdr_info *info, struct object *o,
                                  struct relocs *rs) {
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t page = (uintptr_t)getauxval(AT_PAGESZ); /* sysconf's page of libc: a fault */
    o->lo = UINTPTR_MAX, o->hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < o->lo) o->lo = a;
            if (a + ph->p_memsz > o->hi) o->hi = a + ph->p_memsz;
        }
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) { /* as the loader's _dl_protect_relro rounds */
            o->relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
            o->relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!dyn) return -1;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmpsz = 0, relasz = 0, relacount = 0;
    int pltrela = 1;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t a = dsp_dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr); /* address entries */
        size_t v = dyn->d_un.d_val;                                  /* for the others */
        if (dyn->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela) *)a;
        if (dyn->d_tag == DT_PLTRELSZ) jmpsz = v;
        if (dyn->d_tag == DT_PLTREL) pltrela = v == DT_RELA;
        if (dyn->d_tag == DT_RELA) rela = (const ElfW(Rela) *)a;
        if (dyn->d_tag == DT_RELASZ) relasz = v;
        if (dyn->d_tag == DT_RELACOUNT) relacount = v;
        if (dyn->d_tag == DT_SYMTAB) o->symtab = (const ElfW(Sym) *)a;
        if (dyn->d_tag == DT_STRTAB) o->strtab = (const char *)a;
    }
    if (!pltrela) return -1; /* REL relocations: not on the architectures above */
    *rs = (struct relocs){jmprel, NULL, jmprel ? jmpsz / sizeof *jmprel : 0, 0};
    /* DT_RELA starts with its DT_RELACOUNT relative relocations: skipped. */
    if (rela && relacount * sizeof *rela <= relasz)
        rs->rela = rela + relacount, rs->nrela = relasz / sizeof *rela - relacount;
    return 0;
}

/* The first pass: where this library stands, what the program and the
 * objects before this library define. */
DSP_STARTUP_TEXT static unsigned defines(const struct dl_phdr_info *info, const struct walk *w) {
    unsigned bits = 0;
    struct dsp_elf_tables t;
    if (dsp_phdr_tables(info, &t))
        for (int k = 0; k < w->n; k++)
            if (dsp_elf_defines(&t, w->t[k].name)) bits |= 1u << k;
    return bits;
}

DSP_STARTUP_TEXT static int survey(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct walk *w = arg;
    int at = w->index++;
    if (dsp_phdr_holds(info, w->self)) {
        w->self_index = at;
        return 1;
    }
    if (at == 0)
        w->main = *info, w->have_main = 1, w->main_defines = defines(info, w);
    else
        w->defined_before |= defines(info, w);
    return 0;
}

DSP_STARTUP_TEXT static int rebind(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct walk *w = arg;
    /* Nor the C library's own slots: its calls of malloc from within (strdup,
     * fopen) reach glibc through the hook, one jump more on calls the program
     * did not make itself, where rewriting them cost every process two
     * mprotect calls at start-up (issue 29: about 5 us). */
    if (dsp_phdr_holds(info, w->self) || dsp_phdr_is_libc(info)) return 0;
    struct object o = {.info = info};
    struct relocs rs;
    if (parse(info, &o, &rs)) return 0;
    collect(w, &o, rs.jmprel, rs.njmp);
    collect(w, &o, rs.rela, rs.nrela);
    if (!o.nslots) return 0;
    /* The system call itself: the shim's mprotect hook would read the arena's
     * bounds, a page fault at start-up (issue 29), for pages never the arena's. */
    if (o.protect &&
        syscall(SYS_mprotect, o.relro_lo, o.relro_hi - o.relro_lo, PROT_READ | PROT_WRITE)) {
        w->refused++; /* the hooks stay: right, one jump slower */
        return 0;
    }
    for (int i = 0; i < o.nslots; i++) __atomic_store_n(o.slot[i], o.value[i], __ATOMIC_RELAXED);
    w->rewritten += o.nslots;
    if (o.protect) syscall(SYS_mprotect, o.relro_lo, o.relro_hi - o.relro_lo, PROT_READ);
    return 0;
}

DSP_STARTUP_TEXT int dsp_bind_direct(const struct dsp_bind *all, int nall, uintptr_t self) {
    struct walk w = {.t = all, .n = nall, .self = self, .self_index = -1};
    dl_iterate_phdr(survey, &w);
    /* The names the loader binds to our hooks: where the lookup in the global
     * scope answers the hook; or, in a program that takes a name's address
     * without -fPIE (its PLT entry is then the address every object sees:
     * the canonical PLT, an undefined symbol to its own table), when the
     * program does not define the name and no
     * object between it and this library defines it (valgrind's preloads
     * come there, and define none). */
    struct dsp_bind t[32];
    int n = 0;
    for (int i = 0; i < nall && n < 32; i++)
        if (all[i].global == all[i].hook ||
            (w.have_main && dsp_phdr_holds(&w.main, all[i].global) && !(w.main_defines >> i & 1) &&
             w.self_index > 0 && !(w.defined_before >> i & 1)))
            t[n++] = all[i];
    w.t = t, w.n = n, w.hook_lo = UINTPTR_MAX, w.hook_hi = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].hook < w.hook_lo) w.hook_lo = t[i].hook;
        if (t[i].hook > w.hook_hi) w.hook_hi = t[i].hook;
        unsigned char c = (unsigned char)t[i].name[0];
        if (c < 128) w.by_first[c] |= 1u << i;
    }
    if (n) dl_iterate_phdr(rebind, &w);
    if (w.refused)
        dsp_info("malloc: %d object(s) refused a write to their read-only GOT; their calls go "
                 "through the hooks",
                 w.refused);
    return w.rewritten;
}

#else

int dsp_bind_direct(const struct dsp_bind *all, int nall, uintptr_t self) {
    (void)all, (void)nall, (void)self;
    return 0; /* the hooks serve: right, one jump slower */
}

#endif
