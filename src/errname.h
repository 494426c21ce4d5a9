/* errno names for log lines (strerror may allocate for unknown codes and is
 * locale-dependent; these are stable and greppable). */
#ifndef DSP_ERRNAME_H
#define DSP_ERRNAME_H
const char *dsp_errname(int err);
#endif
