/* What the libaio hook itself costs on the direct path, without the device's
 * noise: io_submit of aligned 4 KiB reads on a context that does not exist.
 * The kernel refuses it before looking at the iocbs (-EINVAL), so the time is
 * the system call plus, through the shim, classifying every iocb (one load of
 * each field, one registry lookup). Baseline: the same system call made
 * directly, which the shim cannot see. Alternating batches, medians.
 * usage: aio_overhead [--quick] [--json FILE]   (run under LD_PRELOAD) */
#include "schema.h"
#include "timing.h"

#include <errno.h>
#include <libaio.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_NR 32

static double batch_ns(int hook, long nr, struct iocb **list, int calls) {
    io_context_t bogus = (io_context_t)(uintptr_t)0xdead000;
    double t = now();
    for (int i = 0; i < calls; i++) {
        long r = hook ? io_submit(bogus, nr, list) : syscall(SYS_io_submit, bogus, nr, list);
        if (r != -EINVAL && !(r == -1 && errno == EINVAL)) {
            fprintf(stderr, "aio_overhead: io_submit gave %ld, expected EINVAL\n", r);
            exit(1);
        }
    }
    return (now() - t) * 1e9 / calls;
}

int main(int argc, char **argv) {
    int quick = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    static char buf[MAX_NR][4096] __attribute__((aligned(4096)));
    struct iocb cb[MAX_NR], *list[MAX_NR];
    for (int i = 0; i < MAX_NR; i++) {
        io_prep_pread(&cb[i], 0, buf[i], 4096, 4096 * (long long)i);
        list[i] = &cb[i];
    }
    int repeats = quick ? 7 : 15, calls = quick ? 20000 : 100000;
    long nrs[] = {1, MAX_NR};
    for (size_t k = 0; k < 2; k++) {
        long nr = nrs[k];
        double hook[15], sys[15];
        batch_ns(1, nr, list, calls / 10); /* warm */
        for (int r = 0; r < repeats; r++) {
            hook[r] = batch_ns(1, nr, list, calls);
            sys[r] = batch_ns(0, nr, list, calls);
        }
        double h = median(hook, repeats), s = median(sys, repeats); /* sorted: [0] min */
        char id[64], what[128];
        snprintf(id, sizeof id, "aio.hook_overhead.nr%ld", nr);
        snprintf(what, sizeof what,
                 "io_submit of %ld aligned 4 KiB read%s through the hook (refused context)", nr,
                 nr > 1 ? "s" : "");
        struct schema_fig *f =
            schema_figure(id, what, "ns", h, hook[0], hook[repeats - 1], repeats, 0);
        schema_baseline(f, "the same system call without the shim", s, sys[0], sys[repeats - 1]);
        printf("io_submit nr=%-2ld: %.0f ns through the hook, %.0f ns direct: %.1f ns per iocb\n",
               nr, h, s, (h - s) / nr);
    }
    if (json && schema_write(json, "aio_overhead", quick) != 0) return 1;
    return 0;
}
