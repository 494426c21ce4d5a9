/* The machine's physical limits, for scale in the report: memcpy and memset
 * bandwidth of one thread on warm 64 MiB buffers (populated and passed over
 * once before timing: first touch of fresh memory on these VMs is several
 * times slower than anything else measured). Median and spread of repeats.
 * Run as `limits [--quick] [--json FILE]` (FILE in bench/schema.h's format). */
#include "schema.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN ((size_t)64 << 20)
#define PER 8 /* passes per timed repeat */

#define CLOBBER(p) __asm__ volatile("" : : "r"(p) : "memory")

int main(int argc, char **argv) {
    int quick;
    const char *json;
    if (schema_args(argc, argv, 1, "--json", "limits [--quick] [--json FILE]", &quick, &json) != 0)
        return 2;
    int reps = quick ? 3 : 7;
    char *a = malloc(LEN), *b = malloc(LEN);
    if (!a || !b) {
        perror("malloc");
        return 1;
    }
    memset(a, 1, LEN); /* warm: first touch, then a pass over both */
    memset(b, 2, LEN);
    memcpy(b, a, LEN);
    double cp[16], st[16];
    for (int r = 0; r < reps; r++) { /* interleaved, so drift hits both */
        double t = now();
        for (int k = 0; k < PER; k++) {
            memcpy(k & 1 ? a : b, k & 1 ? b : a, LEN);
            CLOBBER(a);
        }
        cp[r] = PER * (double)LEN / (now() - t) / 1e9;
        t = now();
        for (int k = 0; k < PER; k++) {
            memset(k & 1 ? a : b, k, LEN);
            CLOBBER(b);
        }
        st[r] = PER * (double)LEN / (now() - t) / 1e9;
    }
    double mc = median(cp, reps), ms = median(st, reps); /* median() sorts */
    schema_figure("limits.memcpy", "memcpy bandwidth, 64 MiB warm buffers, one thread", "GB/s", mc,
                  cp[0], cp[reps - 1], reps, 1);
    schema_figure("limits.memset", "memset bandwidth, 64 MiB warm buffer, one thread", "GB/s", ms,
                  st[0], st[reps - 1], reps, 1);
    schema_point("limits", "memcpy", "bytes", "GB/s", (double)LEN, mc, cp[0], cp[reps - 1]);
    schema_point("limits", "memset", "bytes", "GB/s", (double)LEN, ms, st[0], st[reps - 1]);
    printf("memcpy %.2f GB/s (%.2f - %.2f), memset %.2f GB/s (%.2f - %.2f), %d repeats\n", mc,
           cp[0], cp[reps - 1], ms, st[0], st[reps - 1], reps);
    free(a);
    free(b);
    return json && schema_write(json, "limits", quick) ? 1 : 0;
}
