#include "log.h"

#include "fmt.h"
#include "internal.h"

#include <stdarg.h>
#include <unistd.h>

int dsp_log_level = DSP_LOG_WARN;
int dsp_log_fd = 2;

static const char *const level_name[] = {"error", "warning", "info", "debug"};

static void vlog(int level, const char *fmt, va_list ap) {
    /* Room for the fixed text and a few values of at most 259 bytes, each
     * escaped at worst into four (dsp_vfmt_log). */
    char line[2048];
    int n = level < 0 ? dsp_fmt(line, sizeof line, "dspreload[%d]: ", (int)getpid())
                      : dsp_fmt(line, sizeof line, "dspreload[%d]: %s: ", (int)getpid(),
                                level_name[level]);
    n += dsp_vfmt_log(line + n, sizeof line - (size_t)n, fmt, ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2; /* truncated: keep the newline */
    line[n++] = '\n';
    dsp_write_all(dsp_log_fd, line, (size_t)n);
}

DSP_STARTUP_TEXT void dsp_log(int level, const char *fmt, ...) {
    if (level > __atomic_load_n(&dsp_log_level, __ATOMIC_RELAXED)) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void dsp_log_once(int *once, int level, const char *fmt, ...) {
    if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED)) level = DSP_LOG_DEBUG;
    if (level > __atomic_load_n(&dsp_log_level, __ATOMIC_RELAXED)) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void dsp_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(-1, fmt, ap);
    va_end(ap);
}
