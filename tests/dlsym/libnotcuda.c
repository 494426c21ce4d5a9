/* A library that is not the CUDA driver but defines a function of the same
 * name (a wrapper, a stub of another project): lookups on its handle get its
 * own function, never the shim's hook. */
int cuMemHostAlloc(void **p, unsigned long size, unsigned flags) {
    (void)size, (void)flags;
    *p = 0;
    return 7;
}
