/* How the dspreload command and its demo print what they measured (issue 31:
 * figures a person can trust). One set of rules for `demo`, `stats` and
 * `doctor`:
 *
 * - A duration is printed in the unit its size calls for (ns, µs, ms, s) to
 *   3 significant figures, and never to a digit finer than it was
 *   measured: the leading digit of the clock's resolution (clock_getres),
 *   divided by the repetitions a figure is the mean of. "18.0 ms", "482 ms",
 *   "3.37 s", "42 ns" (not "42.0": a 1 ns clock), "18 ms" with a 4 ms tick;
 *   999.95 µs rounds to "1.00 ms". Below one tick: "< 1 ns".
 * - A span shorter than fig_min_timed() of its clock is no timing: it reads
 *   "too small to time". The demo repeats such work until it takes long
 *   enough instead.
 * - A ratio has two significant figures: "0.71x", "1.4x", "28x", "280x".
 *   There is none where a side was not timed.
 * - Sizes are src/fmt.c's dsp_fmt_bytes ("1.5 KiB", "20.4 GiB"): exact
 *   counts, to tenths of their binary unit.
 *
 * stats and doctor print counts and sizes only (dsp_fmt_bytes); the demo
 * workload (dspreload-demo) times. figures.c uses no other file of the
 * project: that program links nothing of the shim. */
#ifndef DSP_LAUNCHER_FIGURES_H
#define DSP_LAUNCHER_FIGURES_H

#include <stddef.h>
#include <time.h>

/* The resolution of clock c in seconds (clock_getres); 1 ns if it cannot say. */
double fig_clock_res(clockid_t c);

/* The shortest span a clock of resolution res times: 1000 ticks (for the 3
 * figures printed) and at least 10 µs (below, the clock's own reading and the
 * scheduler weigh in). */
double fig_min_timed(double res);

/* A measured duration: secs (the mean of the repetitions), res (the clock's
 * resolution over the repetitions) and whether the whole measured span was at
 * least fig_min_timed. secs < 0 or not finite: not measured. */
struct fig_span {
    double secs, res;
    int timed;
};

/* secs measured to res, by the rules above, into buf; "< 1 ns" (the
 * resolution) below it; "not measured" when secs is negative or not finite. */
const char *fig_time(char *buf, size_t cap, double secs, double res);

/* fig_time of a span, or "too small to time" when it was not timed. */
const char *fig_span_text(char *buf, size_t cap, struct fig_span s);

/* ratio to two significant figures with an "x": "1.4x"; "-" when ratio is
 * not a finite positive number. */
const char *fig_ratio(char *buf, size_t cap, double ratio);

/* Whether both spans were timed (a ratio or a difference of them means
 * something). */
int fig_both_timed(struct fig_span a, struct fig_span b);

#endif
