/* A preloaded library with nothing in it: malloc_bench's reference for the
 * start-up any LD_PRELOAD costs (the loader opens, maps and relocates it),
 * beside the shim's. */
int dsp_bench_empty_preload;
