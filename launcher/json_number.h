/* Numbers from the flat JSON object dsp_stats_json() writes: its counters are
 * unsigned 64-bit. Shared by dspreload stats, the demo and the tests. */
#ifndef DSP_JSON_NUMBER_H
#define DSP_JSON_NUMBER_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number for "key": 0 with *out set, or -1 when the key is absent or its
 * value is not a decimal from 0 to UINT64_MAX (a sign, or more, is refused). */
static inline int dsp_json_u64(const char *json, const char *key, unsigned long long *out) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p) return -1;
    p += strlen(pat);
    if (*p < '0' || *p > '9') return -1;
    unsigned long long v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (ULLONG_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* The same as a signed number for the tests' comparisons: -1 when absent,
 * and LLONG_MAX for a value above it. */
static inline long long dsp_json_number(const char *json, const char *key) {
    unsigned long long v;
    if (dsp_json_u64(json, key, &v) != 0) return -1;
    return v > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)v;
}

/* One statistic, read through dsp_stats_json (the library's, or one found
 * with dlsym by a program run under LD_PRELOAD): its value, or -1. */
static inline long long dsp_stat_from(int (*stats_json)(char *, size_t), const char *key) {
    char buf[8192];
    stats_json(buf, sizeof buf);
    return dsp_json_number(buf, key);
}

#endif
