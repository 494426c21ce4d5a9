/* Hints off, the program's calls of the malloc family reach glibc's own
 * functions with no hook in between: the slots of its GOT hold glibc's
 * addresses (issue 29: the hooks made malloc(64)+free 1.22x). Run as
 * `t_malloc_direct off` (DSP_MALLOC_MIN unset), `t_malloc_direct on`
 * (hints on: the slots hold the hooks, which serve large blocks pinned) and
 * `t_malloc_direct other LIBMOTHER` (hints off, libmother.so preloaded first:
 * the names it defines stay bound to it, the rest go to glibc) and
 * `t_malloc_direct later LIBLATER` (hints off, LIBLATER opened after
 * start-up keeps the hook) and `t_malloc_direct refused` (hints off, built
 * with -z now so that its GOT is read-only, run under no_write_mprotect: the
 * slots keep the hooks, and the program works).
 * The slots are read through the program's own relocations, so lazy
 * binding (the default here) and -z now both count. */
#include "malloc_test.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <string.h>

#ifdef TAKE_ADDRESS
/* Built without -fPIE, the program's PLT entries of malloc and free become
 * their canonical addresses (docs/internals.md, "glibc's allocator"). */
void *(*volatile taken_malloc)(size_t);
void (*volatile taken_free)(void *);
#endif

struct find {
    const char *name;
    void *value;
    const char *object; /* a part of its file name; NULL: the program */
};

/* The value of the object's own PLT or GOT slot for `name`. */
static int in_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct find *f = arg;
    if (f->object && (!info->dlpi_name || !strstr(info->dlpi_name, f->object))) return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Rela) * rel[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_JMPREL) rel[0] = (const ElfW(Rela) *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_PLTRELSZ) len[0] = dyn->d_un.d_val;
        if (dyn->d_tag == DT_RELA) rel[1] = (const ElfW(Rela) *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_RELASZ) len[1] = dyn->d_un.d_val;
        if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_STRTAB) str = (const char *)dyn->d_un.d_ptr;
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; rel[k] && sym && str && i < len[k] / sizeof *rel[k]; i++) {
            const ElfW(Rela) *r = &rel[k][i];
            unsigned long t = ELF64_R_TYPE(r->r_info);
            if ((t == R_X86_64_JUMP_SLOT || t == R_X86_64_GLOB_DAT) &&
                !strcmp(str + sym[ELF64_R_SYM(r->r_info)].st_name, f->name))
                f->value = *(void **)(info->dlpi_addr + r->r_offset);
        }
    return 1; /* the program is the first object */
}

static void *slot_in(const char *object, const char *name) {
    struct find f = {name, NULL, object};
    dl_iterate_phdr(in_object, &f);
    return f.value;
}

static void *slot(const char *name) {
    return slot_in(NULL, name);
}

int main(int argc, char **argv) {
#ifndef __x86_64__
    printf("SKIP: reads x86-64 relocations\n");
    return 77;
#endif
    int on = argc > 1 && !strcmp(argv[1], "on"), other = argc > 1 && !strcmp(argv[1], "other");
    int refused = argc > 1 && !strcmp(argv[1], "refused");
    /* `later LIBLATER`: hints off, LIBLATER opened after start-up; the
     * binding, made by the constructor, left it alone: its slot holds the
     * hook the loader bound it to. */
    int later = argc > 2 && !strcmp(argv[1], "later");
    void *late = later ? dlopen(argv[2], RTLD_NOW) : NULL;
    CHECK(!later || late, "dlopen %s: %s", argc > 2 ? argv[2] : "", dlerror());
#ifdef TAKE_ADDRESS
    taken_malloc = malloc, taken_free = free; /* in code: an absolute relocation */
#endif
    /* One call of each first: a lazy slot is bound at its first call. */
    void *p = malloc(64), *q = calloc(2, 64), *r = NULL;
    __asm__ volatile("" : : "r"(p), "r"(q) : "memory"); /* keep GCC from eliding them */
    p = realloc(p, 128);
    CHECK(posix_memalign(&r, 64, 64) == 0 && malloc_usable_size(p) >= 128);
    free(p);
    free(q);
    free(r);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    Dl_info self;
    CHECK(libc && dladdr(shim("dsp_is_pinned"), &self));
    void *lib = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib);
    void *mother = other && argc > 2 ? dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD) : NULL;
    CHECK(!other || mother, "run as: t_malloc_direct other LIBMOTHER (preloaded first)");
    const char *names[] = {"malloc",  "free",           "calloc",
                           "realloc", "posix_memalign", "malloc_usable_size"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *got = slot(names[i]), *glibc = dlsym(libc, names[i]), *hook = dlsym(lib, names[i]);
        CHECK(got && glibc && hook && glibc != hook, "%s", names[i]);
        /* The other allocator's where it defines the name, else glibc's. */
        void *want = on || refused ? hook : other ? dlsym(mother, names[i]) : glibc;
        CHECK(!other || i >= 4 || want != glibc, "%s: not defined by %s", names[i], argv[2]);
        CHECK(got == want, "%s: slot %p, glibc's %p, the hook %p", names[i], got, glibc, hook);
    }
    if (later) {
        const char *base = strrchr(argv[2], '/');
        void *got = slot_in(base ? base + 1 : argv[2], "malloc"), *hook = dlsym(lib, "malloc");
        CHECK(got == hook, "%s's malloc slot %p, not the hook %p", argv[2], got, hook);
    }
    if (on) { /* the hooks serve */
        void *big = malloc(1 << 20);
        CHECK(big && is_pinned(big, 1 << 20));
        free(big);
    }
    PASS();
}
