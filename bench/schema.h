/* The benchmarks' common JSON output, merged by bench/report.py into one report
 * (bench/run). One file per benchmark program:
 *   {"bench": NAME, "quick": bool,
 *    "figures": [{"id", "what", "unit", "value", "baseline", "baseline_what",
 *                 "ratio", "higher_is_better", "spread": [min, max], "repeats",
 *                 "goal", "met", "baseline_spread", "delta_spread", "note"}],
 *    "series": {PLOT: [{"label", "x", "y", "y_min", "y_max", "x_unit", "y_unit"}]}}
 * ratio is how many times better than the baseline (baseline / value for times,
 * value / baseline for throughputs): above 1 is better. delta_spread: min and
 * max of value - baseline over the rounds, where the sides ran in pairs (a
 * "delta" goal is judged on the medians, its noise on these). note: what the run itself
 * found that limits the figure on this machine (bench/report.py prints it
 * beside a missed goal). Figures and series are
 * collected in memory and written at once by schema_write(). */
#ifndef DSP_BENCH_SCHEMA_H
#define DSP_BENCH_SCHEMA_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_MAX_FIGS   64
#define SCHEMA_MAX_SERIES 16
#define SCHEMA_MAX_POINTS 16

struct schema_fig {
    char id[64], what[128], unit[16], baseline_what[96], goal[48], note[512];
    double value, lo, hi;          /* median and spread of the repeats */
    double dlo, dhi;               /* delta_spread; NAN: none */
    double base, base_lo, base_hi; /* NAN: no baseline */
    int repeats, higher_is_better;
    int met; /* 1, 0, or -1 when there is no goal */
};

struct schema_series {
    char plot[32], label[64], x_unit[16], y_unit[16];
    int n;
    double x[SCHEMA_MAX_POINTS], y[SCHEMA_MAX_POINTS], lo[SCHEMA_MAX_POINTS], hi[SCHEMA_MAX_POINTS];
};

static struct schema_fig schema_figs[SCHEMA_MAX_FIGS];
static struct schema_series schema_series[SCHEMA_MAX_SERIES];
static int schema_nfigs, schema_nseries;

/* Adds a figure; base NAN for none. The ratio and, for a goal of the form
 * "ratio >= X" or "value < X" (also <=, >), whether it is met are computed
 * here. */
static inline struct schema_fig *schema_figure(const char *id, const char *what, const char *unit,
                                               double value, double lo, double hi, int repeats,
                                               int higher_is_better) {
    if (schema_nfigs == SCHEMA_MAX_FIGS) return NULL;
    struct schema_fig *f = &schema_figs[schema_nfigs++];
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    snprintf(f->what, sizeof f->what, "%s", what);
    snprintf(f->unit, sizeof f->unit, "%s", unit);
    f->value = value, f->lo = lo, f->hi = hi, f->repeats = repeats;
    f->higher_is_better = higher_is_better;
    f->base = f->base_lo = f->base_hi = NAN;
    f->dlo = f->dhi = NAN;
    f->met = -1;
    return f;
}

static inline void schema_baseline(struct schema_fig *f, const char *what, double base, double lo,
                                   double hi) {
    if (!f) return;
    snprintf(f->baseline_what, sizeof f->baseline_what, "%s", what);
    f->base = base, f->base_lo = lo, f->base_hi = hi;
}

static inline double schema_ratio(const struct schema_fig *f) {
    if (isnan(f->base) || f->value == 0 || f->base == 0) return NAN;
    return f->higher_is_better ? f->value / f->base : f->base / f->value;
}

static inline void schema_goal(struct schema_fig *f, const char *goal) {
    if (!f) return;
    char what[16], op[3];
    double bound;
    snprintf(f->goal, sizeof f->goal, "%s", goal);
    if (sscanf(goal, "%15s %2s %lf", what, op, &bound) != 3) return;
    double v = !strcmp(what, "ratio")   ? schema_ratio(f)
               : !strcmp(what, "delta") ? f->value - f->base
                                        : f->value;
    if (isnan(v)) return;
    f->met = !strcmp(op, ">=")   ? v >= bound
             : !strcmp(op, ">")  ? v > bound
             : !strcmp(op, "<=") ? v <= bound
                                 : v < bound;
}

/* The spread of value - baseline over rounds that ran both sides. */
static inline void schema_delta_spread(struct schema_fig *f, double lo, double hi) {
    if (f) f->dlo = lo, f->dhi = hi;
}

/* The figure added with id, or NULL. */
static inline struct schema_fig *schema_find(const char *id) {
    for (int i = 0; i < schema_nfigs; i++)
        if (!strcmp(schema_figs[i].id, id)) return &schema_figs[i];
    return NULL;
}

/* The figure's note: printf-style. */
static inline __attribute__((format(printf, 2, 3))) void schema_note(struct schema_fig *f,
                                                                     const char *fmt, ...) {
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->note, sizeof f->note, fmt, ap);
    va_end(ap);
}

/* Adds a point to the series `label` of plot `plot` (created on first use). */
static inline void schema_point(const char *plot, const char *label, const char *x_unit,
                                const char *y_unit, double x, double y, double lo, double hi) {
    struct schema_series *s = NULL;
    for (int i = 0; i < schema_nseries; i++)
        if (!strcmp(schema_series[i].plot, plot) && !strcmp(schema_series[i].label, label))
            s = &schema_series[i];
    if (!s) {
        if (schema_nseries == SCHEMA_MAX_SERIES) return;
        s = &schema_series[schema_nseries++];
        memset(s, 0, sizeof *s);
        snprintf(s->plot, sizeof s->plot, "%s", plot);
        snprintf(s->label, sizeof s->label, "%s", label);
        snprintf(s->x_unit, sizeof s->x_unit, "%s", x_unit);
        snprintf(s->y_unit, sizeof s->y_unit, "%s", y_unit);
    }
    if (s->n == SCHEMA_MAX_POINTS) return;
    s->x[s->n] = x, s->y[s->n] = y, s->lo[s->n] = lo, s->hi[s->n] = hi;
    s->n++;
}

static inline void schema_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static inline void schema_num(FILE *f, double v) {
    if (isnan(v) || isinf(v))
        fputs("null", f);
    else
        fprintf(f, "%.10g", v);
}

static inline void schema_array(FILE *f, const double *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        schema_num(f, v[i]);
    }
    fputc(']', f);
}

/* ', "KEY": ' and the value; a NULL string or a NaN number is null. */
static inline void schema_kstr(FILE *f, const char *key, const char *s) {
    fprintf(f, ", \"%s\": ", key);
    if (s)
        schema_str(f, s);
    else
        fputs("null", f);
}

static inline void schema_knum(FILE *f, const char *key, double v) {
    fprintf(f, ", \"%s\": ", key);
    schema_num(f, v);
}

static inline void schema_karray(FILE *f, const char *key, const double *v, int n) {
    fprintf(f, ", \"%s\": ", key);
    if (n > 0 && isnan(v[0]))
        fputs("null", f);
    else
        schema_array(f, v, n);
}

/* Writes the file; 0, or -1 (with a message) when it cannot. */
static inline int schema_write(const char *path, const char *bench, int quick) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "{\"bench\": ");
    schema_str(f, bench);
    fprintf(f, ", \"quick\": %s,\n \"figures\": [", quick ? "true" : "false");
    for (int i = 0; i < schema_nfigs; i++) {
        const struct schema_fig *g = &schema_figs[i];
        int base = !isnan(g->base);
        double spread[2] = {g->lo, g->hi}, base_spread[2] = {g->base_lo, g->base_hi};
        fprintf(f, "%s\n  {\"id\": ", i ? "," : "");
        schema_str(f, g->id);
        schema_kstr(f, "what", g->what);
        schema_kstr(f, "unit", g->unit);
        schema_knum(f, "value", g->value);
        schema_karray(f, "spread", spread, 2);
        fprintf(f, ", \"repeats\": %d, \"higher_is_better\": %s", g->repeats,
                g->higher_is_better ? "true" : "false");
        schema_knum(f, "baseline", g->base);
        schema_karray(f, "baseline_spread", base_spread, 2);
        schema_kstr(f, "baseline_what", base ? g->baseline_what : NULL);
        schema_knum(f, "ratio", schema_ratio(g));
        schema_kstr(f, "goal", g->goal[0] ? g->goal : NULL);
        fprintf(f, ", \"met\": %s", g->met < 0 ? "null" : g->met ? "true" : "false");
        if (!isnan(g->dlo)) {
            double d[2] = {g->dlo, g->dhi};
            schema_karray(f, "delta_spread", d, 2);
        }
        if (g->note[0]) schema_kstr(f, "note", g->note);
        fputc('}', f);
    }
    fprintf(f, "\n ],\n \"series\": {");
    int nplots = 0;
    for (int i = 0; i < schema_nseries; i++) {
        int first = 1; /* series of one plot are written together, in order */
        for (int k = 0; k < i; k++)
            if (!strcmp(schema_series[k].plot, schema_series[i].plot)) first = 0;
        if (!first) continue;
        fprintf(f, "%s\n  ", nplots++ ? "," : "");
        schema_str(f, schema_series[i].plot);
        fprintf(f, ": [");
        int nlab = 0;
        for (int k = i; k < schema_nseries; k++) {
            const struct schema_series *s = &schema_series[k];
            if (strcmp(s->plot, schema_series[i].plot)) continue;
            fprintf(f, "%s\n   {\"label\": ", nlab++ ? "," : "");
            schema_str(f, s->label);
            schema_kstr(f, "x_unit", s->x_unit);
            schema_kstr(f, "y_unit", s->y_unit);
            schema_karray(f, "x", s->x, s->n);
            schema_karray(f, "y", s->y, s->n);
            schema_karray(f, "y_min", s->lo, s->n);
            schema_karray(f, "y_max", s->hi, s->n);
            fputc('}', f);
        }
        fprintf(f, "]");
    }
    fprintf(f, "\n }\n}\n");
    return fclose(f) ? -1 : 0;
}

/* The common command line, argv[first..]: --quick, and json_flag FILE (the
 * JSON to write). 0, or -1 after printing "usage: USAGE" on anything else. */
static inline int schema_args(int argc, char **argv, int first, const char *json_flag,
                              const char *usage, int *quick, const char **json) {
    *quick = 0;
    *json = NULL;
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            *quick = 1;
        else if (!strcmp(argv[i], json_flag) && i + 1 < argc)
            *json = argv[++i];
        else
            first = -1;
    }
    if (first >= 0 && argc >= first) return 0;
    fprintf(stderr, "usage: %s\n", usage);
    return -1;
}

#endif
