#include "log.h"
#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(log, lines_carry_pid_and_level) {
    log_capture_start();
    dsp_warn("something %s %d", "odd", 42);
    char want[128];
    snprintf(want, sizeof want, "dspreload[%d]: warning: something odd 42\n", getpid());
    cr_assert_str_eq(log_capture_collect(), want);
}

Test(log, level_filters) {
    log_capture_start();
    dsp_log_level = DSP_LOG_ERROR;
    dsp_warn("hidden");
    dsp_log(DSP_LOG_ERROR, "shown");
    dsp_log_level = DSP_LOG_DEBUG;
    dsp_debug("debug too");
    const char *out = log_capture_collect();
    cr_assert_null(strstr(out, "hidden"));
    cr_assert(strstr(out, "error: shown"));
    cr_assert(strstr(out, "debug: debug too"));
}

Test(log, once_demotes_repeats_to_debug) {
    log_capture_start();
    static int once;
    for (int i = 0; i < 3; i++) dsp_log_once(&once, DSP_LOG_WARN, "repeat %d", i);
    const char *out = log_capture_collect();
    cr_assert(strstr(out, "warning: repeat 0"));
    cr_assert_null(strstr(out, "repeat 1"));
}

/* dsp_once: each call site has a flag of its own. */
static void site_a(int i) {
    dsp_once(DSP_LOG_WARN, "site a %d", i);
}
static void site_b(int i) {
    dsp_once(DSP_LOG_WARN, "site b %d", i);
}
Test(log, once_macro_logs_each_site_once) {
    log_capture_start();
    for (int i = 0; i < 3; i++) site_a(i), site_b(i);
    const char *out = log_capture_collect();
    cr_assert(strstr(out, "warning: site a 0"));
    cr_assert(strstr(out, "warning: site b 0"));
    cr_assert_null(strstr(out, "site a 1"));
    cr_assert_null(strstr(out, "site b 1"));
}

/* Regression (issue 14): the 1023-byte cut dropped the reason after a long
 * echoed value. */
Test(log, long_value_keeps_the_reason) {
    log_capture_start();
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    big[sizeof big - 2] = 'z';
    dsp_warn("DSP_X=%s is not valid; the reason", big);
    const char *out = log_capture_collect();
    size_t n = strlen(out);
    cr_assert_leq(n, 400);
    cr_assert(strstr(out, "aaa...aaa"), "%s", out);
    cr_assert(strstr(out, "az is not valid; the reason\n"), "%s", out);
}

/* Regression (issue 14): a value with a newline in it forged an extra line. */
Test(log, control_characters_in_values_are_escaped) {
    log_capture_start();
    dsp_warn("DSP_LOG=%s is not valid", "x\ndspreload[1]: error: forged\t\x1b[2J");
    const char *out = log_capture_collect();
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
    cr_assert(strstr(out, "DSP_LOG=x\\ndspreload[1]: error: forged\\t\\x1b[2J is not valid"), "%s",
              out);
}

static void log_error_only(void) {
    setenv("DSP_LOG", "error", 1), setenv("DSP_MAX_PINNED", "1M", 1);
}
Test(log, dsp_log_env_silences_warnings, .init = log_error_only) {
    log_capture_start();
    cr_assert_null(dsp_alloc(2 << 20));
    cr_assert_str_eq(log_capture_collect(), "");
}
