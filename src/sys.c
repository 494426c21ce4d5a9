#include "sys.h"

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

DSP_STARTUP_DATA pid_t dsp_loaded_pid;
static DSP_TLS int in_constructor;

/* Before the library's other constructors (priority), so that they can use it. */
__attribute__((constructor(101))) static void loaded(void) {
    /* syscall() is bound when the library is loaded; getpid() would be bound
     * lazily, a symbol lookup at start-up (issue 29). */
    dsp_loaded_pid = (pid_t)syscall(SYS_getpid);
}

DSP_STARTUP_TEXT void dsp_sys_in_constructor(int on) {
    in_constructor = on;
}

DSP_STARTUP_TEXT pid_t dsp_sys_pid(void) {
    return in_constructor ? dsp_loaded_pid : getpid();
}

size_t dsp_sys_ram(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
}

int dsp_sys_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int dsp_sys_has_ipc_lock(void) {
    /* capget directly: no libcap dependency. */
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capget, &hdr, data) != 0) return 0;
    return (data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

size_t dsp_sys_memlock_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return (size_t)-1;
    return (size_t)rl.rlim_cur;
}

/* The system calls themselves: open and close called by name from inside
 * the library bind to its own fd hooks (preload/fdcalls.c), and each would
 * throw away the libaio layer's cached answers (io/dio.c), though the shim's
 * own files are never the program's. */
int dsp_sys_open(const char *path, int flags) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

void dsp_sys_close(int fd) {
    syscall(SYS_close, fd);
}

long dsp_sys_read(const char *path, char *buf, size_t cap) {
    int fd = dsp_sys_open(path, O_RDONLY);
    if (fd < 0) return -errno;
    ssize_t n;
    size_t got = 0;
    while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0) got += (size_t)n;
    dsp_sys_close(fd);
    buf[got] = 0;
    return (long)got;
}

int dsp_sys_read_size(const char *path, size_t *v) {
    char buf[64];
    if (dsp_sys_read(path, buf, sizeof buf) <= 0) return 0;
    if (!strncmp(buf, "max", 3)) return *v = SIZE_MAX, 1;
    size_t x = 0;
    const char *p = buf;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (x > (SIZE_MAX - 9) / 10) return *v = SIZE_MAX, 1;
        x = x * 10 + (size_t)(*p - '0');
    }
    if (p == buf) return 0;
    *v = x;
    return 1;
}

#define MPOL_PREFERRED_ 1
#define MPOL_F_NODE_    1
#define MPOL_F_ADDR_    2

int dsp_sys_cpu(void) {
    return sched_getcpu();
}

int dsp_sys_bind_node(void *base, size_t len, int node) {
    unsigned long mask = 1UL << node;
    return syscall(SYS_mbind, base, len, MPOL_PREFERRED_, &mask, sizeof mask * 8, 0) == 0 ? 0
                                                                                          : -errno;
}

static uint64_t clock_ns(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t) != 0) return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t dsp_sys_thread_ns(void) {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

uint64_t dsp_sys_mono_ns(void) {
    return clock_ns(CLOCK_MONOTONIC);
}

int dsp_sys_page_node(const void *p) {
    int node = -1;
    if (syscall(SYS_get_mempolicy, &node, NULL, 0, p, MPOL_F_NODE_ | MPOL_F_ADDR_) != 0)
        return -errno;
    return node;
}
