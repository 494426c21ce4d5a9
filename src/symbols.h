/* Finding the real functions behind the hooks, at first call: the shim links
 * none of the libraries it wraps. */
#ifndef DSP_SYMBOLS_H
#define DSP_SYMBOLS_H

/* The next definition of `name` after this library: dlsym(RTLD_NEXT), else in
 * a loaded object whose file name starts with `lib_prefix` (such as
 * "libcudart.so"), found with dl_iterate_phdr and opened RTLD_NOLOAD: that is
 * how a library dlopen'ed RTLD_LOCAL (every Python extension) is reached, and
 * it never loads anything. NULL when not loaded. */
void *dsp_sym_next(const char *name, const char *lib_prefix);

/* As dsp_sym_next, for one version of a versioned symbol (dlvsym): libaio
 * exports two io_getevents with different arguments (docs/internals.md,
 * "libaio's symbols and conventions"). */
void *dsp_sym_next_v(const char *name, const char *version, const char *lib_prefix);

#endif
