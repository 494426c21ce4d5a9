/* Durations, ratios and "too small to time": the rules are figures.h's. */
#include "figures.h"

#include <stdio.h>

/* The powers of ten are those of the literals (1e9, 1e-9): 10^k is exact in
 * a double up to k = 22 and 1 / 10^k is the nearest double to 10^-k, so a
 * resolution of exactly 1 ns is one power of ten, not a hair above it. */
#define FIG_EXP_MAX 22

static double p10(int e) {
    double p = 1;
    for (int i = 0; i < (e < 0 ? -e : e); i++) p *= 10;
    return e < 0 ? 1 / p : p;
}

/* x in units of 10^q, rounded to the nearest whole one. */
static double quanta(double x, int q) {
    double v = q < 0 ? x * p10(-q) : x / p10(q);
    return (double)(unsigned long long)(v + 0.5);
}

/* The exponent of x's leading digit (10^e <= x < 10^(e+1)), for x within
 * [10^-FIG_EXP_MAX, 10^FIG_EXP_MAX). */
static int lead_exp(double x) {
    int e = -FIG_EXP_MAX;
    while (e < FIG_EXP_MAX - 1 && p10(e + 1) <= x) e++;
    return e;
}

/* n quanta of 10^q as a decimal in units of 10^u: as many decimals as the
 * quantum has below the unit, none when it is coarser. */
static void put_decimal(char *buf, size_t cap, double n, int q, int u, const char *suffix) {
    if (q >= u)
        snprintf(buf, cap, "%.0f%s", n * p10(q - u), suffix);
    else
        snprintf(buf, cap, "%.*f%s", u - q, n / p10(u - q), suffix);
}

double fig_clock_res(clockid_t c) {
    struct timespec r;
    if (clock_getres(c, &r) != 0 || (r.tv_sec == 0 && r.tv_nsec == 0)) return 1e-9;
    return (double)r.tv_sec + (double)r.tv_nsec * 1e-9;
}

double fig_min_timed(double res) {
    double ticks = 1000 * res;
    return ticks > 10e-6 ? ticks : 10e-6;
}

const char *fig_time(char *buf, size_t cap, double secs, double res) {
    static const char *const unit[] = {"ns", "µs", "ms", "s"};
    if (!(secs >= 0) || !(res >= 0) || secs > 1e300 || res > 1e300) {
        snprintf(buf, cap, "not measured");
        return buf;
    }
    if (secs >= p10(FIG_EXP_MAX) || res >= p10(FIG_EXP_MAX)) { /* past any clock: no unit fits */
        snprintf(buf, cap, "%.3g s", secs > res ? secs : res);
        return buf;
    }
    if (res > 0 && secs < res) { /* no tick passed: all that is known is the bound */
        char bound[32];
        snprintf(buf, cap, "< %s", fig_time(bound, sizeof bound, res, res));
        return buf;
    }
    if (secs < p10(-FIG_EXP_MAX)) {
        snprintf(buf, cap, "0 ns");
        return buf;
    }
    /* The finest digit: the third significant one, or the resolution's
     * leading digit where that is coarser (a 4 ms tick: whole ms). */
    int eres = res < p10(-FIG_EXP_MAX) ? -FIG_EXP_MAX : lead_exp(res);
    int e = lead_exp(secs);
    int q = e - 2 > eres ? e - 2 : eres;
    double n = quanta(secs, q);
    if (q <= e + 1 && n >= p10(e + 1 - q)) { /* rounded up a decade: 999.95 µs is 1.00 ms */
        e++;
        q = e - 2 > eres ? e - 2 : eres;
        n = quanta(secs, q);
    }
    /* The unit of the leading digit: ns up to 999 ns, then µs, ms and s. */
    int u = e >= 0 ? 0 : e >= -3 ? -3 : e >= -6 ? -6 : -9;
    char suffix[8];
    snprintf(suffix, sizeof suffix, " %s", unit[(u + 9) / 3]);
    put_decimal(buf, cap, n, q, u, suffix);
    return buf;
}

const char *fig_span_text(char *buf, size_t cap, struct fig_span s) {
    if (!(s.secs >= 0))
        snprintf(buf, cap, "not measured");
    else if (!s.timed)
        snprintf(buf, cap, "too small to time");
    else
        fig_time(buf, cap, s.secs, s.res);
    return buf;
}

const char *fig_ratio(char *buf, size_t cap, double ratio) {
    if (!(ratio >= p10(-FIG_EXP_MAX + 1)) || ratio >= p10(FIG_EXP_MAX - 1)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    int q = lead_exp(ratio) - 1;
    double n = quanta(ratio, q);
    if (n >= 100) /* rounded up a decade: 0.999 is 1.0x, 9.96 is 10x */
        n = quanta(ratio, ++q);
    put_decimal(buf, cap, n, q, 0, "x");
    return buf;
}

int fig_both_timed(struct fig_span a, struct fig_span b) {
    return a.secs >= 0 && b.secs >= 0 && a.timed && b.timed;
}
