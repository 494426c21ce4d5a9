/* Opened RTLD_LOCAL by test_sym_next: RTLD_NEXT does not see it. */
int dsp_symtest_local(void);
int dsp_symtest_local(void) {
    return 'l';
}
