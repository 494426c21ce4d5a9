/* dspreload stats FILE ...: the JSON objects DSP_STATS_FILE wrote, one per
 * process (per rank), as one table with totals. */
#include "fmt.h"
#include "json_number.h"
#include "launcher.h"
#include "numa.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Totals: each value is below 2^64 and there are fewer than 2^31 files, so a
 * 128-bit sum cannot overflow. */
typedef unsigned __int128 u128;

static const char *u128_str(char *buf, size_t cap, u128 v) {
    char digits[48];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + (unsigned)(v % 10));
        v /= 10;
    } while (v);
    size_t k = 0;
    for (; n && k + 1 < cap; k++) buf[k] = digits[--n];
    if (cap) buf[k] = 0;
    return buf;
}

static void cell(char *buf, size_t cap, int have, u128 v, int bytes) {
    if (!have) {
        snprintf(buf, cap, "-");
    } else if (!bytes) {
        u128_str(buf, cap, v);
    } else if (v <= ULLONG_MAX) {
        dsp_fmt_bytes(buf, cap, (unsigned long long)v);
    } else { /* 16 EiB and more: tenths of EiB, rounded as dsp_fmt_bytes does */
        u128 tenths = (v * 10 + ((u128)1 << 59)) >> 60;
        char whole[48];
        u128_str(whole, sizeof whole, tenths / 10);
        if (tenths % 10)
            snprintf(buf, cap, "%s.%u EiB", whole, (unsigned)(tenths % 10));
        else
            snprintf(buf, cap, "%s EiB", whole);
    }
}

/* Reads the file into json (NUL-terminated): 0, or -1 with the reason printed.
 * Never blocks: a FIFO, a device or a directory is refused before any read (it
 * is opened with O_NONBLOCK, so not even the open waits for a writer). */
static int read_file(const char *path, char *json, size_t cap) {
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "dspreload: stats: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "dspreload: stats: %s is not a regular file\n", path);
        close(fd);
        return -1;
    }
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, json + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fprintf(stderr, "dspreload: stats: cannot read %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    json[n] = 0;
    return 0;
}

int cmd_stats(int argc, char **argv, const char *lib) {
    (void)lib;
    if (argc >= 1 && !strcmp(argv[0], "--node")) return cmd_stats_node(argc - 1, argv + 1);
    if (argc < 1) return usage_error("stats: give the JSON files DSP_STATS_FILE wrote");
    u128 total[NCOLS] = {0};
    /* NUMA placement (issue 33): each node's figures, every file's together. */
    u128 numa[DSP_NUMA_NODES][3] = {{0}};
    int numa_seen[DSP_NUMA_NODES] = {0};
    static const char *const numa_key[3] = {"pinned_bytes", "pooled_bytes", "fallbacks"};
    int bad = 0, shown = 0;
    for (int i = 0; i < argc; i++) {
        char json[16384];
        unsigned long long pid;
        if (read_file(argv[i], json, sizeof json) != 0) {
            bad = 1;
            continue;
        }
        if (json[0] != '{' || dsp_json_u64(json, "pid", &pid) != 0) {
            fprintf(stderr, "dspreload: stats: %s is not a dspreload stats file\n", argv[i]);
            bad = 1;
            continue;
        }
        if (!shown) { /* the head once a row follows */
            printf("%-10s %6s", "pid", "rank");
            for (size_t c = 0; c < NCOLS; c++) printf(" %12s", cols[c].head);
            printf("\n");
        }
        unsigned long long rank; /* RANK, SLURM_PROCID...: which rank of a job it was */
        if (dsp_json_u64(json, "rank", &rank) == 0)
            printf("%-10llu %6llu", pid, rank);
        else
            printf("%-10llu %6s", pid, "-");
        for (size_t c = 0; c < NCOLS; c++) {
            unsigned long long v;
            int have = dsp_json_u64(json, cols[c].key, &v) == 0;
            char buf[64];
            cell(buf, sizeof buf, have, have ? v : 0, cols[c].bytes);
            printf(" %12s", buf);
            if (have) total[c] += v;
        }
        for (int node = 0; node < DSP_NUMA_NODES; node++)
            for (int k = 0; k < 3; k++) {
                char key[64];
                unsigned long long v;
                snprintf(key, sizeof key, "numa_node%d_%s", node, numa_key[k]);
                if (dsp_json_u64(json, key, &v) != 0) continue;
                numa[node][k] += v;
                numa_seen[node] = 1;
            }
        printf("\n");
        shown++;
    }
    /* Totals of no file would read as a process that did nothing. */
    if (!shown) {
        printf("no stats file read: no totals\n");
        return bad;
    }
    printf("%-10s %6s", "total", "");
    for (size_t c = 0; c < NCOLS; c++) {
        char buf[64];
        cell(buf, sizeof buf, 1, total[c], cols[c].bytes);
        printf(" %12s", buf);
    }
    printf("\n");
    for (int node = 0; node < DSP_NUMA_NODES; node++) {
        if (!numa_seen[node]) continue;
        char p[64], q[64], f[64];
        cell(p, sizeof p, 1, numa[node][0], 1);
        cell(q, sizeof q, 1, numa[node][1], 1);
        cell(f, sizeof f, 1, numa[node][2], 0);
        printf("NUMA node %d: %s pinned, %s pooled, %s %s elsewhere\n", node, p, q, f,
               numa[node][2] == 1 ? "block" : "blocks");
    }
    return bad;
}
