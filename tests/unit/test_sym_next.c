/* src/symbols.c: dsp_sym_next_all, the hooks' real functions found in one
 * walk of the loaded objects' symbol tables (issue 29). Here "this library"
 * is the test program, which holds the core: the objects after it are
 * symtest_a, symtest_b (linked in that order), then the C library. Each
 * answer is checked against glibc's dlsym(RTLD_NEXT), which it stands in for. */
#include "symbols.h"

#include "harness.h"

#include <dlfcn.h>
#include <stdlib.h>

int dsp_symtest_a_present(void);
int dsp_symtest_b_present(void);

/* The program's own definition (exported: the program links with
 * --export-dynamic): RTLD_DEFAULT finds it first, RTLD_NEXT never. */
__attribute__((visibility("default"))) int dsp_symtest_twice(void);
__attribute__((visibility("default"))) int dsp_symtest_twice(void) {
    return 'm';
}

static void *next1(const char *name) {
    const char *names[] = {name};
    void *out[1];
    dsp_sym_next_all(names, out, 1);
    return out[0];
}

Test(sym_next, the_first_of_two_definitions_in_load_order) {
    cr_assert(dsp_symtest_a_present() && dsp_symtest_b_present()); /* both linked */
    int (*f)(void) = (int (*)(void))next1("dsp_symtest_twice");
    cr_assert_not_null(f);
    cr_assert_eq(f(), 'a');
    cr_assert_eq((void *)f, dlsym(RTLD_NEXT, "dsp_symtest_twice"));
    f = (int (*)(void))next1("dsp_symtest_only_b");
    cr_assert_not_null(f);
    cr_assert_eq(f(), 'b');
}

Test(sym_next, the_default_version_not_the_hidden_one) {
    int (*f)(void) = (int (*)(void))next1("dsp_symtest_versioned");
    cr_assert_not_null(f);
    cr_assert_eq(f(), 2, "@@V2, not @V1");
    cr_assert_eq((void *)f, dlsym(RTLD_NEXT, "dsp_symtest_versioned"));
    /* A name whose only definition carries a (default) version. */
    cr_assert_eq(next1("dsp_symtest_a_present"), dlsym(RTLD_NEXT, "dsp_symtest_a_present"));
}

Test(sym_next, an_ifunc_or_data_is_left_to_dlsym) {
    cr_assert_null(next1("dsp_symtest_ifunc"), "its resolver must run: dlsym's work");
    int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "dsp_symtest_ifunc");
    cr_assert_not_null(f);
    cr_assert_eq(f(), 7);
    cr_assert_null(next1("dsp_symtest_data"));
}

Test(sym_next, not_found_and_rtld_local_are_null) {
    cr_assert_null(next1("dsp_symtest_no_such_name"));
    const char *path = getenv("DSP_SYMTEST_LOCAL");
    cr_assert_not_null(path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    cr_assert_not_null(dlsym(h, "dsp_symtest_local"));
    cr_assert_null(dlsym(RTLD_NEXT, "dsp_symtest_local"));
    cr_assert_null(next1("dsp_symtest_local"), "RTLD_NEXT does not see it: neither may this");
    dlclose(h);
}

/* The names the hooks resolve (preload/sigcalls.c, preload/fdcalls.c), in one
 * call: each answer found is dlsym's; most are found. */
Test(sym_next, the_hooks_names_answer_as_dlsym) {
    const char *names[] = {"pthread_sigmask",
                           "sigprocmask",
                           "sigaction",
                           "siglongjmp",
                           "longjmp",
                           "_longjmp",
                           "__longjmp_chk",
                           "setcontext",
                           "swapcontext",
                           "sigblock",
                           "sigsetmask",
                           "sighold",
                           "sigrelse",
                           "sigset",
                           "sigsuspend",
                           "ppoll",
                           "__ppoll_chk",
                           "pselect",
                           "epoll_pwait",
                           "epoll_pwait2",
                           "sigpause",
                           "__sigpause",
                           "__xpg_sigpause",
                           "close",
                           "close_range",
                           "closefrom",
                           "fclose",
                           "dup",
                           "dup2",
                           "dup3",
                           "fcntl",
                           "open",
                           "openat",
                           "__open_2",
                           "__openat_2",
                           "creat",
                           "socket",
                           "accept",
                           "accept4",
                           "pipe",
                           "pipe2",
                           "dsp_symtest_twice"};
    enum { N = sizeof names / sizeof *names };
    void *out[N];
    size_t found = dsp_sym_next_all(names, out, N);
    cr_assert_geq(found, N - 4, "found %zu of %d", found, N);
    for (int i = 0; i < N; i++)
        if (out[i]) cr_assert_eq(out[i], dlsym(RTLD_NEXT, names[i]), "%s", names[i]);
    cr_assert_eq(((int (*)(void))out[N - 1])(), 'a');
}

Test(sym_next, more_than_64_names_are_left_to_dlsym) {
    const char *names[65];
    void *out[65];
    for (int i = 0; i < 65; i++) names[i] = "close";
    cr_assert_eq(dsp_sym_next_all(names, out, 65), 0);
    for (int i = 0; i < 65; i++) cr_assert_null(out[i]);
}

/* dsp_sym_first_all: what dlsym(RTLD_DEFAULT) answers, from the program on
 * (the malloc binding's question, preload/malloc.c). */
Test(sym_next, first_all_answers_as_rtld_default) {
    const char *names[] = {"malloc",
                           "free",
                           "calloc",
                           "realloc",
                           "posix_memalign",
                           "malloc_usable_size",
                           "dsp_symtest_twice",
                           "dsp_symtest_versioned",
                           "dsp_symtest_ifunc",
                           "dsp_symtest_no_such_name"};
    enum { N = sizeof names / sizeof *names };
    void *out[N];
    cr_assert_eq(dsp_sym_first_all(names, out, N), N - 2);
    for (int i = 0; i < N - 2; i++)
        cr_assert_eq(out[i], dlsym(RTLD_DEFAULT, names[i]), "%s", names[i]);
    cr_assert_eq(((int (*)(void))out[6])(), 'm', "the program's own comes first");
    cr_assert_eq(((int (*)(void))out[7])(), 2);
    cr_assert_null(out[8], "an IFUNC: dlsym's");
    cr_assert_null(out[9]);
}
