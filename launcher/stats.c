/* dspreload stats FILE ...: the JSON objects DSP_STATS_FILE wrote, one per
 * process (per rank), as one table with totals. */
#include "../src/fmt.h"
#include "json_number.h"
#include "launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *key, *head;
    int bytes;
} cols[] = {
    {"pinned_bytes_peak", "peak pinned", 1},
    {"blocks_live", "live", 0},
    {"pool_hits", "pool hits", 0},
    {"pool_misses", "misses", 0},
    {"cuda_host_alloc_served", "cuda served", 0},
    {"cuda_host_alloc_passthrough", "passed", 0},
    {"aio_bounced", "aio bounced", 0},
    {"pin_failures", "failures", 0},
    {"fallbacks", "fallbacks", 0},
};
#define NCOLS (sizeof cols / sizeof *cols)

static void cell(char *buf, size_t cap, long long v, int bytes) {
    if (v < 0)
        snprintf(buf, cap, "-");
    else if (bytes)
        dsp_fmt_bytes(buf, cap, (unsigned long long)v);
    else
        snprintf(buf, cap, "%lld", v);
}

int cmd_stats(int argc, char **argv) {
    if (argc < 1) return usage_error("stats: give the JSON files DSP_STATS_FILE wrote");
    long long total[NCOLS] = {0};
    printf("%-10s", "pid");
    for (size_t c = 0; c < NCOLS; c++) printf(" %12s", cols[c].head);
    printf("\n");
    int bad = 0;
    for (int i = 0; i < argc; i++) {
        FILE *f = fopen(argv[i], "r");
        char json[16384];
        size_t n = f ? fread(json, 1, sizeof json - 1, f) : 0;
        if (f) fclose(f);
        json[n] = 0;
        long long pid = dsp_json_number(json, "pid");
        if (!f || json[0] != '{' || pid < 0) {
            fprintf(stderr, "dspreload: stats: %s is not a dspreload stats file\n", argv[i]);
            bad = 1;
            continue;
        }
        printf("%-10lld", pid);
        for (size_t c = 0; c < NCOLS; c++) {
            long long v = dsp_json_number(json, cols[c].key);
            char buf[32];
            cell(buf, sizeof buf, v, cols[c].bytes);
            printf(" %12s", buf);
            if (v > 0) total[c] += v;
        }
        printf("\n");
    }
    printf("%-10s", "total");
    for (size_t c = 0; c < NCOLS; c++) {
        char buf[32];
        cell(buf, sizeof buf, total[c], cols[c].bytes);
        printf(" %12s", buf);
    }
    printf("\n");
    return bad;
}
