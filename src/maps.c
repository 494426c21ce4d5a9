/* The process's memory maps. The kernel refuses a new mapping, a split of one
 * (mprotect, munmap of a middle part), thread stacks and dlopen once the
 * process has vm.max_map_count of them (65,530 by default), and then the whole
 * process is broken, not just the manager (issue 12: 65,500 live blocks did
 * that). Blocks merge into few maps (pin.c says how), but merging can fail
 * (flags a program set, mlockall(MCL_FUTURE)), so the manager also keeps
 * count: it never makes a new pin that could take the process past
 * max_map_count less a reserve left to the program.
 *
 * Counting is reading /proc/self/maps (a line per map, O(maps)), so it is not
 * done per pin: each new pin takes 2 maps (the most one mmap into the middle of
 * a reservation adds) from a headroom known at the last count, each drop
 * what it may add (up to 2), and only an exhausted headroom costs a recount. Merged
 * blocks make recounts rare (one per ~28,000 new pins at the default limit);
 * when the limit is really near, a refusal is remembered for a short while so
 * a storm of refused pins does not recount each time. Everything here runs
 * under the manager's mutex. */
#include "log.h"
#include "manager.h"
#include "sys.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define RECOUNT_AFTER_REFUSAL_NS (100 * 1000000L)

static long headroom; /* maps the manager may still add before counting again */
static struct timespec refused_at;

size_t dsp_maps_max(void) {
    size_t v;
    return dsp_sys_read_size("/proc/sys/vm/max_map_count", &v) && v ? v : 65530;
}

size_t dsp_maps_reserve(size_t max_map_count) {
    size_t r = max_map_count / 8;
    return r > 1024 ? r : 1024;
}

size_t dsp_maps_count(void) {
    int fd = dsp_sys_open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return 0;
    char buf[8192];
    size_t lines = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    dsp_sys_close(fd);
    return lines;
}

static long since_ns(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (now.tv_sec - t->tv_sec) * 1000000000L + (now.tv_nsec - t->tv_nsec);
}

/* Room for n more maps: 0, or -ENOMEM. The last count is kept for the
 * callers' lines: a refusal in the pause after another has none of its own. */
static size_t last_now, last_max, last_reserve;

static int take(int n) {
    if (DSP_LIKELY(headroom >= n)) {
        headroom -= n;
        return 0;
    }
    if ((refused_at.tv_sec || refused_at.tv_nsec) &&
        since_ns(&refused_at) < RECOUNT_AFTER_REFUSAL_NS)
        return -ENOMEM;
    last_max = dsp_maps_max(), last_reserve = dsp_maps_reserve(last_max);
    last_now = dsp_maps_count();
    headroom = (long)last_max - (long)last_reserve - (long)last_now;
    if (headroom >= n) {
        headroom -= n;
        refused_at.tv_sec = refused_at.tv_nsec = 0;
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC_COARSE, &refused_at);
    return -ENOMEM;
}

/* A drop into the middle of a mapping splits it (pin.c counts how many maps
 * it may add), and trims drop many spans at once: every other 4 KiB block of
 * 72,083 freed and trimmed made 65,531 maps, after which the program could
 * create no thread and split no mapping (issue 30). So drops take from the
 * same headroom as pins, and one that would go into the reserve is refused. */
int dsp_maps_take(int n, int drop) {
    if (take(n) == 0) return 0;
    if (drop)
        dsp_once(DSP_LOG_INFO,
                 "pooled blocks kept locked: giving them back would split memory maps, and the "
                 "process has %zu of vm.max_map_count %zu, the last %zu being left to the "
                 "program; they go when their neighbours are freed, or raise vm.max_map_count",
                 last_now, last_max, last_reserve);
    else
        dsp_once(DSP_LOG_WARN,
                 "pinning refused: the process has %zu memory maps of vm.max_map_count %zu, and "
                 "the last %zu are left to the program; free pinned blocks, or raise "
                 "vm.max_map_count (sysctl -w vm.max_map_count=262144); the caller falls back",
                 last_now, last_max, last_reserve);
    return -ENOMEM;
}

void dsp_maps_recount(void) {
    headroom = 0;
    refused_at.tv_sec = refused_at.tv_nsec = 0;
}
