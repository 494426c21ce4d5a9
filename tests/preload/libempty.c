/* A preloaded library with nothing in it: the baseline of ctor_syscalls, so
 * that the dynamic loader's work for any preloaded library is counted on
 * both sides. */
int dsp_test_empty_preload;
