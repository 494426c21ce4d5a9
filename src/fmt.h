/* A small printf subset that never allocates, for logging and stats output
 * (glibc's printf family may call malloc, which the shim interposes). */
#ifndef DSP_FMT_H
#define DSP_FMT_H

#include <stdarg.h>
#include <stddef.h>

/* Conversions: %s %c %d %i %u %x %p %% with the length modifiers l, ll, z;
 * a field width (e.g. %8s, %-8s, %08x) is honoured. snprintf semantics:
 * returns the full length, writes at most cap-1 bytes plus NUL. */
int dsp_vfmt(char *buf, size_t cap, const char *fmt, va_list ap);
int dsp_fmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* As dsp_vfmt, for log lines: each %s has its control characters escaped and,
 * past 259 bytes, its middle replaced by "..." (widths ignored). */
int dsp_vfmt_log(char *buf, size_t cap, const char *fmt, va_list ap);

/* Human-readable byte count such as "1.5 GiB" or "512 B" into buf. */
const char *dsp_fmt_bytes(char *buf, size_t cap, unsigned long long bytes);

/* write(2) all of buf, retrying on EINTR and short writes; errno preserved. */
void dsp_write_all(int fd, const char *buf, size_t len);

#endif
