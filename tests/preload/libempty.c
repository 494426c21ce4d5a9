/* A preloaded library with nothing in it: the baseline of ctor_syscalls, so
 * that the dynamic loader's work for any preloaded library is counted on
 * both sides, and malloc_bench's reference for the start-up any LD_PRELOAD
 * costs (bench/meson.build builds it there too). */
int dsp_test_empty_preload;
