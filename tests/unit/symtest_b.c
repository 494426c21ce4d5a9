/* A library for test_sym_next, linked after symtest_a (unversioned). */
int dsp_symtest_b_present(void);
int dsp_symtest_b_present(void) {
    return 1;
}

int dsp_symtest_twice(void);
int dsp_symtest_twice(void) {
    return 'b';
}

int dsp_symtest_only_b(void);
int dsp_symtest_only_b(void) {
    return 'b';
}
