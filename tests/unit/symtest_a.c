/* A library for test_sym_next (src/symbols.c, dsp_sym_next_all): linked
 * before symtest_b, it defines a name both define, a name in two versions,
 * and an IFUNC. */
int dsp_symtest_a_present(void);
int dsp_symtest_a_present(void) {
    return 1;
}

int dsp_symtest_twice(void);
int dsp_symtest_twice(void) {
    return 'a';
}

/* dsp_symtest_versioned@V1 (hidden: an old binary's) and @@V2 (the default,
 * which dlsym answers). */
int dsp_symtest_v1(void);
int dsp_symtest_v1(void) {
    return 1;
}
int dsp_symtest_v2(void);
int dsp_symtest_v2(void) {
    return 2;
}
__asm__(".symver dsp_symtest_v1, dsp_symtest_versioned@V1");
__asm__(".symver dsp_symtest_v2, dsp_symtest_versioned@@V2");

static int ifunc_impl(void) {
    return 7;
}
static int (*ifunc_resolve(void))(void) {
    return ifunc_impl;
}
int dsp_symtest_ifunc(void) __attribute__((ifunc("ifunc_resolve")));

/* Data, not a function. */
int dsp_symtest_data = 5;
