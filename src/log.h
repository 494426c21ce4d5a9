/* Allocation-free logging to stderr through write(2), one line per call:
 *   dspreload[PID]: LEVEL: message */
#ifndef DSP_LOG_H
#define DSP_LOG_H

#include "config.h" /* the levels: DSP_LOG_ERROR to DSP_LOG_DEBUG, DSP_LOG's values */

extern int dsp_log_level; /* set from DSP_LOG at init; warn before that */
extern int dsp_log_fd;    /* 2; tests point it at a pipe */

void dsp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs at `level` the first time `*once` is seen clear, at debug afterwards:
 * a failure that repeats on every call prints one line, not thousands. */
void dsp_log_once(int *once, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* dsp_log_once with a flag of its own, one per call site (as the kernel's
 * pr_warn_once): dsp_once(DSP_LOG_WARN, "...", ...). Async-signal-safe and
 * allocation-free like dsp_log. A flag that is also read or reset elsewhere,
 * or shared by several sites, stays explicit with dsp_log_once. */
#define dsp_once(level, ...)                                                                       \
    do {                                                                                           \
        static int dsp_once_flag_;                                                                 \
        dsp_log_once(&dsp_once_flag_, (level), __VA_ARGS__);                                       \
    } while (0)

/* One line with the dspreload[PID] prefix whatever DSP_LOG says (reports the
 * user asked for, such as DSP_STATS). */
void dsp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define dsp_warn(...)  dsp_log(DSP_LOG_WARN, __VA_ARGS__)
#define dsp_info(...)  dsp_log(DSP_LOG_INFO, __VA_ARGS__)
#define dsp_debug(...) dsp_log(DSP_LOG_DEBUG, __VA_ARGS__)

#endif
