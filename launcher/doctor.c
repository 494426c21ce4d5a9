/* dspreload doctor [PATH ...]: what this machine allows, one line a check,
 * OK / WARN / FAIL with the fix. Exit status 1 when anything FAILs. */
#include "cgroup.h"
#include "config.h"
#include "fmt.h"
#include "internal.h"
#include "ledger.h"
#include "maps.h"
#include "node.h"
#include "numa.h"
#include "plan.h"
#include "sys.h"
#include "launcher.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

static int fails, warns;

static void line(const char *level, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(const char *level, const char *what, const char *fmt, ...) {
    if (!strcmp(level, "FAIL")) fails++;
    if (!strcmp(level, "WARN")) warns++;
    printf("%-4s  %-22s ", level, what);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* lib: the one --lib named, or NULL for the one dspreload would find. */
static void check_library(const char *lib) {
    if (!lib) lib = find_library();
    if (!lib) {
        line("FAIL", "library",
             "libdspreload.so not found beside %s: build it (meson compile -C build) or install it",
             self_dir());
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    const char *(*version)(void) = h ? (const char *(*)(void))dlsym(h, "dsp_version") : NULL;
    if (!version)
        line("FAIL", "library", "%s does not load: %s", lib, dlerror());
    else if (preload_unsafe(lib))
        line("FAIL", "library", "%s", preload_unsafe_why(lib));
    else
        line("OK", "library", "%s (dspreload %s)", lib, version());
}

static void check_memlock(void) {
    char a[32];
    size_t lim = dsp_sys_memlock_limit();
    int cap = dsp_sys_has_ipc_lock();
    if (cap || lim == (size_t)-1)
        line("OK", "memlock", "%s",
             cap ? "CAP_IPC_LOCK: no limit on locked memory" : "RLIMIT_MEMLOCK unlimited");
    else
        line("WARN", "memlock",
             "RLIMIT_MEMLOCK is %s and CAP_IPC_LOCK is missing: dsp_alloc can lock only that much "
             "(CUDA blocks are still served, pinned by the driver). Fix: ulimit -l unlimited; "
             "docker run --ulimit memlock=-1; Kubernetes: capabilities add IPC_LOCK",
             dsp_fmt_bytes(a, sizeof a, lim));
}

/* The machine as the library reads it at its first pin (plan.h). */
static struct dsp_machine machine;

static void check_budget(void) {
    char a[32], b[32], c[32];
    extern char **environ;
    dsp_machine_read(&machine);
    dsp_config_load(environ, machine.mem); /* the library's own reading of DSP_* */
    struct dsp_budget_plan p;
    dsp_budget_plan(&machine, &p); /* and its own arithmetic */
    line(p.budget ? "OK" : "WARN", "budget",
         "RAM %s; pins up to %s (%s), pools up to %s (DSP_POOL_MAX)",
         dsp_fmt_bytes(a, sizeof a, machine.ram), dsp_fmt_bytes(b, sizeof b, p.budget), p.why,
         dsp_fmt_bytes(c, sizeof c, p.pool_max));
}

/* The node ledger this process would join: its key, cap and users. */
static void check_node(void) {
    char a[32], b[32], c[32];
    struct dsp_node_plan p;
    dsp_node_plan(&machine, &p); /* after check_budget's dsp_config_load */
    char key[4 * sizeof p.key];  /* the program's own DSP_NODE_KEY may hold anything */
    node_key_text(p.key, key, sizeof key);
    if (!p.on) {
        line("OK", "node ledger",
             "off (DSP_NODE=off or DSP_NODE_MAX_PINNED=off): each process "
             "budgets alone");
        return;
    }
    struct node_view v;
    const char *why;
    if (access(p.path, F_OK) != 0) {
        line("OK", "node ledger", "%s (%s): not created yet (no process has pinned); cap %s (%s)",
             p.path, key, dsp_fmt_bytes(a, sizeof a, p.cap), p.why);
        return;
    }
    if (node_view_open(p.path, &v, &why) != 0) {
        line("WARN", "node ledger",
             "%s (%s) %s: processes will refuse it and budget alone. Fix: remove it, or set "
             "DSP_NODE_KEY",
             p.path, key, why);
        return;
    }
    if (v.idle) {
        line("OK", "node ledger",
             "%s (%s): no process uses it now; the next to pin sets the cap, %s (%s)", p.path, key,
             dsp_fmt_bytes(a, sizeof a, p.cap), p.why);
        node_view_close(&v);
        return;
    }
    struct node_sum s;
    node_view_sum(&v, &s);
    line("OK", "node ledger",
         "%s (%s): cap %s, %u processes pinning %s (%s pooled), %u gone; `dspreload stats "
         "--node` lists them",
         p.path, key, dsp_fmt_bytes(a, sizeof a, atomic_load(&v.map->head.h.cap)), s.live,
         dsp_fmt_bytes(b, sizeof b, s.pinned), dsp_fmt_bytes(c, sizeof c, s.pooled), s.gone);
    node_view_close(&v);
}

static void check_cgroup(void) {
    char a[32], b[32], c[32];
    struct dsp_cgroup cg;
    if (dsp_cgroup_query(&cg, NULL, 0) != 0) {
        line("OK", "memory cgroup", "none found: the budget follows RAM");
    } else if (cg.limit == SIZE_MAX) {
        line("OK", "memory cgroup", "v%d, no memory limit: the budget follows RAM", cg.version);
    } else {
        line(cg.room ? "OK" : "WARN", "memory cgroup",
             "v%d limit %s (%s), %s used: auto budget at most %s (80%% of the room); a block "
             "that would not fit is refused, never OOM-killed",
             cg.version, dsp_fmt_bytes(a, sizeof a, cg.limit), cg.file,
             dsp_fmt_bytes(b, sizeof b, cg.usage),
             dsp_fmt_bytes(c, sizeof c, dsp_budget_auto(cg.room)));
    }
}

static void check_maps(void) {
    size_t max = dsp_maps_max(), reserve = dsp_maps_reserve(max), now = dsp_maps_count();
    int low = max < 65530;
    line(low ? "WARN" : "OK", "vm.max_map_count",
         "%zu: the manager keeps the last %zu maps for the program (this process has %zu); "
         "neighbouring blocks share maps%s",
         max, reserve, now, low ? ". Fix: sysctl -w vm.max_map_count=262144 (host, as root)" : "");
}

static void check_thp(void) {
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
        fclose(f);
    }
    mode[strcspn(mode, "\n")] = 0;
    if ((strstr(mode, "[always]") || strstr(mode, "[madvise]")) && dsp_page_reporting("/sys"))
        line("OK", "transparent hugepages",
             "%s, but this VM reports free pages to its host (virtio free page reporting), "
             "where huge pages of reported memory pin slower: blocks get small pages, but "
             "for huge pages the process gave back moments before (DSP_HUGEPAGES=always "
             "keeps huge ones)",
             mode);
    else if (strstr(mode, "[always]") || strstr(mode, "[madvise]"))
        line("OK", "transparent hugepages", "%s: large blocks pin several times faster", mode);
    else /* the rough figure docs/troubleshooting.md gives too, from
          * docs/memory.md, "Design notes": keep the three alike */
        line("WARN", "transparent hugepages",
             "%s: pinning large blocks is about 3.5x slower. Fix: echo madvise > "
             "/sys/kernel/mm/transparent_hugepage/enabled",
             mode[0] ? mode : "unknown");
}

/* A small sysfs file's first line, without its newline; "" when absent. */
static void sysfs_line(const char *path, char *out, size_t cap) {
    if (dsp_sys_read(path, out, cap) < 0) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* NUMA placement (issue 33): the nodes, DSP_NUMA, and each NVIDIA GPU's node
 * as the manager reads it (bus/pci/devices/<bus id>/numa_node). */
static void check_numa(void) {
    const char *mode = getenv("DSP_NUMA");
    if (!mode) mode = "auto";
    if (dsp_numa_configure(mode) != 0) {
        line("WARN", "NUMA placement",
             "DSP_NUMA=%s is none of auto, device, cpu, off or a node number: auto is used", mode);
        mode = "auto";
    }
    char online[256]; /* shown; whether there is anything to place is the library's reading */
    sysfs_line("/sys/devices/system/node/online", online, sizeof online);
    int off = !strcmp(mode, "off");
    if (!off)
        dsp_numa_plan(dsp_numa_sysfs()); /* warns of a fixed node not online, as the library */
    if (off ? !online[0] || (!strchr(online, '-') && !strchr(online, ','))
            : !__atomic_load_n(&dsp_numa_active, __ATOMIC_RELAXED)) {
        line("OK", "NUMA placement", "one node%s: nothing to place (placement costs nothing)",
             online[0] ? "" : " (no NUMA)");
        return;
    }
    char gpus[1024] = "";
    size_t n = 0;
    int unknown = 0;
    DIR *d = opendir("/sys/bus/pci/devices");
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[512], vendor[32], class[32];
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", e->d_name);
        sysfs_line(path, vendor, sizeof vendor);
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/class", e->d_name);
        sysfs_line(path, class, sizeof class);
        if (strcmp(vendor, "0x10de") != 0 ||
            (strncmp(class, "0x0300", 6) != 0 && strncmp(class, "0x0302", 6) != 0))
            continue;
        int node = dsp_numa_node_of_bus("/sys", e->d_name);
        unknown += node < 0;
        if (n < sizeof gpus)
            n += (size_t)snprintf(gpus + n, sizeof gpus - n, "%s%s on node %d", n ? ", " : "",
                                  e->d_name, node);
    }
    if (d) closedir(d);
    if (off)
        line("WARN", "NUMA placement",
             "nodes %s, DSP_NUMA=off: pinned blocks go where first touch puts them, often "
             "across nodes from their GPU. Fix: unset DSP_NUMA (auto)%s%s",
             online, n ? "; GPUs: " : "", gpus);
    else if (unknown)
        line("WARN", "NUMA placement",
             "nodes %s, DSP_NUMA=%s; GPUs: %s. A GPU of node -1 (unknown, as in many VMs) gets "
             "blocks on the calling CPU's node: pin its threads to the right node, or set "
             "DSP_NUMA=N",
             online, mode, gpus);
    else
        line("OK", "NUMA placement", "nodes %s, DSP_NUMA=%s; %s%s", online, mode,
             n ? "GPUs: " : "no NVIDIA GPU found: blocks go on the calling CPU's node", gpus);
}

static void *try_open(const char *const *names, const char **which) {
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            *which = *names;
            return h;
        }
    }
    return NULL;
}

static void check_libraries(void) {
    const char *which;
    static const char *const aio[] = {"libaio.so.1", "libaio.so.1t64", NULL};
    if (try_open(aio, &which))
        line("OK", "libaio", "%s found", which);
    else
        line("WARN", "libaio",
             "not found: the libaio layer stays idle. Fix: apt-get install libaio1");

    static const char *const rt[] = {"libcudart.so.13", "libcudart.so.12", NULL};
    void *h = try_open(rt, &which);
    if (!h) {
        line("WARN", "libcudart",
             "not on the library path: the CUDA layer serves programs that load one "
             "themselves (PyTorch does)");
    } else {
        int (*rtv)(int *) = (int (*)(int *))dlsym(h, "cudaRuntimeGetVersion");
        int (*count)(int *) = (int (*)(int *))dlsym(h, "cudaGetDeviceCount");
        int v = 0, n = 0;
        if (rtv) rtv(&v);
        line("OK", "libcudart", "%s, runtime %d.%d", which, v / 1000, v % 1000 / 10);
        int rc = count ? count(&n) : -1;
        if (rc == 0 && n > 0)
            line("OK", "GPUs", "%d visible", n);
        else
            line("WARN", "GPUs",
                 "none visible (cudaGetDeviceCount error %d): CUDA calls will pass through", rc);
    }
    static const char *const drv[] = {"libcuda.so.1", NULL};
    h = try_open(drv, &which);
    if (!h) {
        line("WARN", "libcuda", "no NVIDIA driver library: no GPU work possible here");
    } else {
        int (*dv)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
        int v = 0;
        if (dv) dv(&v);
        line("OK", "libcuda", "driver supports CUDA %d.%d", v / 1000, v % 1000 / 10);
    }
    static const char *const cufile[] = {"libcufile.so.0", NULL};
    if (try_open(cufile, &which))
        line("OK", "libcufile", "%s found", which);
    else
        line("WARN", "libcufile",
             "not found: the cuFile layer stays idle (GPUDirect Storage not installed)");
}

static const char *fs_name(long type) {
    switch ((unsigned long)type) {
    case EXT4_SUPER_MAGIC:
        return "ext4";
    case TMPFS_MAGIC:
        return "tmpfs";
    case XFS_SUPER_MAGIC:
        return "xfs";
    case BTRFS_SUPER_MAGIC:
        return "btrfs";
    case NFS_SUPER_MAGIC:
        return "nfs";
    case OVERLAYFS_SUPER_MAGIC:
        return "overlay";
    case 0x0BD00BD0:
        return "lustre";
    case 0x65735546:
        return "fuse";
    default:
        return "other";
    }
}

/* The file O_DIRECT is tried on: for a directory, one made there and unlinked
 * at once (written to, and only through the descriptor mkstemp returned: its
 * name is never opened again, so nothing swapped in under that name is ever
 * written); for a regular file, that file read-only (a symlink followed, as
 * the user named it). Anything else (a FIFO, a device) is refused unopened or,
 * if it changed meanwhile, before any read: open with O_NONBLOCK never waits. */
static int open_probe(const char *path, const struct stat *st, int *made) {
    *made = 0;
    if (S_ISDIR(st->st_mode)) {
        char file[PATH_MAX];
        if ((size_t)snprintf(file, sizeof file, "%s/.dspreload-doctor-XXXXXX", path) >= sizeof file)
            return errno = ENAMETOOLONG, -1;
        int fd = mkostemp(file, O_CLOEXEC);
        if (fd < 0) return -1;
        unlink(file);
        *made = 1;
        return fd;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat now;
    if (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode)) {
        close(fd);
        return errno = EINVAL, -2;
    }
    return fd;
}

static void check_path(const char *path) {
    struct statfs fs;
    struct stat st;
    if (statfs(path, &fs) != 0 || stat(path, &st) != 0) {
        line("FAIL", path, "cannot be read: %s", strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        line("FAIL", path, "not a regular file or directory: O_DIRECT not tested");
        return;
    }
    const char *fsn = fs_name((long)fs.f_type);
    int made, fd = open_probe(path, &st, &made);
    if (fd == -2) {
        line("FAIL", path, "not a regular file or directory: O_DIRECT not tested");
        return;
    }
    if (fd < 0) {
        if (S_ISDIR(st.st_mode))
            line("WARN", path, "%s; not writable here, O_DIRECT not tested (%s)", fsn,
                 strerror(errno));
        else
            line("FAIL", path, "cannot be read: %s", strerror(errno));
        return;
    }
    unsigned mem_align = 0, off_align = 0;
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        mem_align = sx.stx_dio_mem_align;
        off_align = sx.stx_dio_offset_align;
    }
    /* O_DIRECT on the descriptor in hand (O_NONBLOCK cleared): a file system
     * without it refuses with EINVAL, as open(O_DIRECT) would. */
    int fl = fcntl(fd, F_GETFL);
    int direct = fl >= 0 && fcntl(fd, F_SETFL, (fl & ~O_NONBLOCK) | O_DIRECT) == 0;
    int err = errno;
    char result[128] = "";
    if (direct) {
        void *buf;
        if (posix_memalign(&buf, 4096, 4096) == 0) {
            memset(buf, 0, 4096);
            ssize_t n = made ? pwrite(fd, buf, 4096, 0) : pread(fd, buf, 4096, 0);
            if (n < 0)
                snprintf(result, sizeof result, " (a 4 KiB %s failed: %s)", made ? "write" : "read",
                         strerror(errno));
            free(buf);
        }
    }
    close(fd);
    if (!direct)
        line("WARN", path, "%s: O_DIRECT refused (%s): I/O there goes through the page cache", fsn,
             strerror(err));
    else if (mem_align)
        line("OK", path, "%s: O_DIRECT works%s; alignment %u bytes in memory, %u in the file", fsn,
             result, mem_align, off_align);
    else
        line("OK", path, "%s: O_DIRECT works%s; no alignment reported (the I/O layer assumes 4096)",
             fsn, result);
}

int cmd_doctor(int argc, char **argv, const char *lib) {
    printf("dspreload %s doctor\n", DSP_VERSION_STRING);
    check_library(lib);
    check_memlock();
    check_budget();
    check_cgroup();
    check_node();
    check_maps();
    check_thp();
    check_numa();
    check_libraries();
    for (int i = 0; i < argc; i++) check_path(argv[i]);
    printf("%d FAIL, %d WARN\n", fails, warns);
    return fails ? 1 : 0;
}
