/* The number for "key" in the flat JSON object dsp_stats_json() writes, or -1
 * when the key is absent. Shared by dspreload stats, the demo and the tests. */
#ifndef DSP_JSON_NUMBER_H
#define DSP_JSON_NUMBER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long long dsp_json_number(const char *json, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p) return -1;
    p += strlen(pat);
    char *end;
    long long v = strtoll(p, &end, 10);
    return end == p ? -1 : v;
}

/* One statistic, read through dsp_stats_json (the library's, or one found
 * with dlsym by a program run under LD_PRELOAD): its value, or -1. */
static inline long long dsp_stat_from(int (*stats_json)(char *, size_t), const char *key) {
    char buf[8192];
    stats_json(buf, sizeof buf);
    return dsp_json_number(buf, key);
}

#endif
