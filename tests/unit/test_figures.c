/* launcher/figures.c: how the command and its demo print what they measured
 * (issue 31: the demo printed "0.0 ms with dspreload, 0.0 ms without (2x)"). */
#include "figures.h"

#include "harness.h"
#include <string.h>

#define NS 1e-9

static const char *t(double secs, double res) {
    static char buf[64];
    return fig_time(buf, sizeof buf, secs, res);
}

static const char *r(double ratio) {
    static char buf[64];
    return fig_ratio(buf, sizeof buf, ratio);
}

Test(figures, times_take_the_unit_of_their_size_to_three_figures) {
    cr_assert_str_eq(t(42 * NS, NS), "42 ns");
    cr_assert_str_eq(t(123.456e-9, 1e-12), "123 ns");
    cr_assert_str_eq(t(28.14e-6, NS / 512), "28.1 µs");
    cr_assert_str_eq(t(18.04e-3, NS), "18.0 ms");
    cr_assert_str_eq(t(481.9e-3, NS), "482 ms");
    cr_assert_str_eq(t(3.3677, NS), "3.37 s");
    cr_assert_str_eq(t(1e-6, NS), "1.00 µs");
    cr_assert_str_eq(t(1, 0), "1.00 s", "an exact duration still has 3 figures");
}

Test(figures, rounding_up_a_decade_moves_to_the_next_unit) {
    cr_assert_str_eq(t(999.95e-6, NS), "1.00 ms");
    cr_assert_str_eq(t(999.4e-6, NS), "999 µs");
    cr_assert_str_eq(t(999.6e-9, 1e-12), "1.00 µs");
    cr_assert_str_eq(t(9.996e-3, NS), "10.0 ms");
}

Test(figures, no_digit_finer_than_the_clock) {
    cr_assert_str_eq(t(42.4 * NS, NS), "42 ns", "1 ns clock: no tenths of a ns");
    cr_assert_str_eq(t(1 * NS, NS), "1 ns");
    cr_assert_str_eq(t(18.1e-3, 4e-3), "18 ms", "a 4 ms tick: whole ms");
    cr_assert_str_eq(t(4.1e-3, 4e-3), "4 ms", "one tick");
    cr_assert_str_eq(t(0.5e-9, NS / 512), "0.500 ns", "the mean of 512 runs: a 512th of a tick");
}

Test(figures, zero_and_below_the_resolution) {
    cr_assert_str_eq(t(0, NS), "< 1 ns");
    cr_assert_str_eq(t(0.4 * NS, NS), "< 1 ns");
    cr_assert_str_eq(t(1e-3, 4e-3), "< 4 ms");
    cr_assert_str_eq(t(0, 0), "0 ns");
}

Test(figures, huge_and_unmeasured_values) {
    cr_assert_str_eq(t(1.2345e6, NS), "1230000 s");
    cr_assert_str_eq(t(1e30, NS), "1e+30 s");
    cr_assert_str_eq(t(-1, NS), "not measured");
    cr_assert_str_eq(t(1.0 / 0.0, NS), "not measured");
    cr_assert_str_eq(t(0.0 / 0.0, NS), "not measured");
}

Test(figures, ratios_have_two_significant_figures) {
    cr_assert_str_eq(r(0.999), "1.0x");
    cr_assert_str_eq(r(1), "1.0x");
    cr_assert_str_eq(r(1.44), "1.4x");
    cr_assert_str_eq(r(27.6), "28x");
    cr_assert_str_eq(r(0.71), "0.71x");
    cr_assert_str_eq(r(9.96), "10x");
    cr_assert_str_eq(r(0.0996), "0.10x");
    cr_assert_str_eq(r(276), "280x");
    cr_assert_str_eq(r(0.012345), "0.012x");
    cr_assert_str_eq(r(1e6), "1000000x");
}

Test(figures, no_ratio_of_nothing) {
    cr_assert_str_eq(r(0), "-");
    cr_assert_str_eq(r(-2), "-");
    cr_assert_str_eq(r(1.0 / 0.0), "-", "x / 0: a side was not measured");
    cr_assert_str_eq(r(0.0 / 0.0), "-", "0 / 0");
}

Test(figures, a_span_too_short_is_no_timing) {
    char buf[64];
    double res = NS;
    cr_assert_geq(fig_min_timed(res), 10e-6, "a few µs of a 1 ns clock are no timing");
    cr_assert_geq(fig_min_timed(4e-3), 4.0, "1000 ticks of a coarse clock");
    struct fig_span quick = {2e-6, res, 0}, slow = {18e-3, res, 1}, failed = {-1, 0, 0};
    cr_assert_str_eq(fig_span_text(buf, sizeof buf, quick), "too small to time");
    cr_assert_str_eq(fig_span_text(buf, sizeof buf, slow), "18.0 ms");
    cr_assert_str_eq(fig_span_text(buf, sizeof buf, failed), "not measured");
    cr_assert(!fig_both_timed(quick, slow));
    cr_assert(!fig_both_timed(slow, failed));
    cr_assert(fig_both_timed(slow, slow));
}

Test(figures, the_clock_reports_its_resolution) {
    double res = fig_clock_res(CLOCK_MONOTONIC);
    cr_assert(res > 0 && res < 1, "resolution %g", res);
}

Test(figures, a_short_buffer_is_cut_not_overrun) {
    char buf[4];
    memset(buf, 'x', sizeof buf);
    fig_time(buf, sizeof buf, 481.9e-3, NS);
    cr_assert_str_eq(buf, "482");
    fig_ratio(buf, 3, 27.6);
    cr_assert_str_eq(buf, "28");
}
