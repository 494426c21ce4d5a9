/* The program's own mlockall and mlock beside the shim (preload/memcalls.c),
 * run under LD_PRELOAD with CAP_IPC_LOCK dropped and a finite RLIMIT_MEMLOCK,
 * as in a container. argv[1] picks the case:
 *   reservation: mlockall_does_not_count_the_reservation
 *   mlockall_pool: program_mlockall_gets_the_pool_back
 *   mlockall_flags: program_mlockall_gets_the_pool_back_with_every_flag
 *   mlock_pool: program_mlock_gets_the_pool_back (DSP_MALLOC_MIN=1M)
 *   future_first: mlockall_future_before_the_first_block */
#include <dspreload.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static size_t status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field), v = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') v = strtoull(line + n + 1, NULL, 10) * 1024;
    if (f) fclose(f);
    return v;
}

/* As in a container: no CAP_IPC_LOCK, RLIMIT_MEMLOCK of limit bytes or the
 * hard limit when lower (raising it needs CAP_SYS_RESOURCE). Returns it. */
static size_t containerise(size_t limit) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    CHECK(syscall(SYS_capget, &hdr, data) == 0, "capget");
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    data[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
    CHECK(syscall(SYS_capset, &hdr, data) == 0, "capset");
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0, "getrlimit");
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < limit) limit = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = limit;
    CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit: %m");
    return limit;
}

/* Regression (issue 12): the PROT_NONE reservation counted as locked (VmLck
 * 95 GiB), and mlockall(MCL_CURRENT) failed under a finite RLIMIT_MEMLOCK
 * since the kernel compares all of VmSize with it. */
static void reservation(void) {
    size_t vm0 = status_bytes("VmSize");
    size_t limit = containerise(vm0 + 64 * MiB);
    CHECK(limit >= vm0 + 5 * MiB, "RLIMIT_MEMLOCK's hard limit leaves too little room");
    void *first = dsp_alloc(1 * MiB);
    CHECK(first, "dsp_alloc");
    CHECK(status_bytes("VmSize") > vm0 + 32 * GiB, "the arena is reserved");
    CHECK(mlockall(MCL_CURRENT | MCL_FUTURE) == 0, "mlockall: %m");
    size_t locked = status_bytes("VmLck");
    CHECK(locked <= limit, "VmLck %zu after mlockall", locked);
    CHECK(status_bytes("VmSize") > vm0 + 32 * GiB, "the arena's tail was reserved again");
    /* Blocks within the limit's room: under MCL_FUTURE the kernel locks (and
     * counts) every new mapping, the manager's PROT_NONE ones included. */
    size_t blk = ((limit - locked) / 3) & ~(size_t)0xffff;
    CHECK(blk >= 128 << 10, "VmLck %zu of a %zu limit leaves no room", locked, limit);
    for (int i = 0; i < 20; i++) {
        char *p = dsp_alloc(blk);
        CHECK(p, "dsp_alloc %d of %zu under MCL_FUTURE", i, blk);
        memset(p, i, blk);
        CHECK(dsp_is_pinned(p, blk), "pinned");
        CHECK(dsp_free(p) == 0, "dsp_free");
    }
    dsp_trim(); /* the pooled block back to reserved address space, unlocked */
    size_t after = status_bytes("VmLck");
    CHECK(after < locked + blk, "VmLck %zu after trim, %zu after mlockall", after, locked);
    CHECK(munlockall() == 0, "munlockall: %m");
    /* Everything but the live block, which stays locked until it is freed
     * (memcalls.c: munlockall relocks the manager's blocks). */
    CHECK(status_bytes("VmLck") == 1 * MiB, "VmLck %zu after munlockall", status_bytes("VmLck"));
    CHECK(dsp_free(first) == 0, "dsp_free");
}

/* mlockall(MCL_FUTURE) before the first block: the arena, reserved later,
 * would be locked by the kernel and refused for the limit. */
static void future_first(void) {
    size_t vm0 = status_bytes("VmSize");
    size_t limit = containerise(vm0 + 64 * MiB);
    CHECK(mlockall(MCL_FUTURE) == 0, "mlockall: %m");
    char *p = dsp_alloc(256 << 10);
    CHECK(p, "dsp_alloc after MCL_FUTURE");
    CHECK(status_bytes("VmLck") <= limit, "VmLck %zu", status_bytes("VmLck"));
    CHECK(dsp_free(p) == 0, "dsp_free");
}

/* Five hinted arrays of 1.5 MiB, freed: the pool holds 7.5 MiB locked. */
static void fill_pool(void) {
    char *a[5];
    for (int i = 0; i < 5; i++) {
        a[i] = malloc(3 * MiB / 2);
        CHECK(a[i] && dsp_is_pinned(a[i], 3 * MiB / 2), "hinted array %d", i);
        memset(a[i], i, 3 * MiB / 2);
    }
    for (int i = 0; i < 5; i++) free(a[i]);
    CHECK(status_bytes("VmLck") >= 15 * MiB / 2, "the pool holds 7.5 MiB locked");
}

/* Regression (issue 12): after freeing 5 hinted arrays of 1.5 MiB, the pool
 * holds 7.5 MiB locked of an 8 MiB limit and the program's own mlock(4 MiB)
 * fails (it succeeds without the shim). */
static void mlock_pool(void) {
    containerise(8 * MiB);
    fill_pool();
    char *buf = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED, "mmap");
    CHECK(mlock(buf, 4 * MiB) == 0, "the program's mlock(4 MiB): %m");
    CHECK(status_bytes("VmLck") == 4 * MiB, "VmLck %zu", status_bytes("VmLck"));
    CHECK(munlock(buf, 4 * MiB) == 0, "munlock");
    CHECK(mlock2(buf, 4 * MiB, 0) == 0, "mlock2: %m");
    /* Past the limit even with the pool empty: the kernel's own answer. */
    char *big = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    CHECK(mlock(big, 8 * MiB) == -1 && errno == ENOMEM, "over the limit: %m");
}

/* The same for mlockall: the pool's 7.5 MiB take the program past its
 * limit; given back (and shed with the tail), mlockall succeeds. */
static void mlockall_pool(void) {
    size_t vm0 = status_bytes("VmSize");
    char *own = mmap(NULL, 1 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(own != MAP_FAILED, "mmap");
    size_t limit = containerise(vm0 + 8 * MiB);
    CHECK(limit >= vm0 + 5 * MiB, "RLIMIT_MEMLOCK's hard limit leaves too little room");
    fill_pool(); /* VmSize now passes the limit */
    CHECK(mlockall(MCL_CURRENT) == 0, "mlockall: %m");
    CHECK(status_bytes("VmLck") <= limit, "VmLck");
    CHECK(munlockall() == 0, "munlockall");
    void *p = dsp_alloc(1 * MiB);
    CHECK(p && dsp_free(p) == 0, "the manager still works");
    errno = 0;
    CHECK(mlockall(0) == -1 && errno == EINVAL, "errno as the kernel's: %m");
}

/* As mlockall_pool for each form with MCL_CURRENT (issue 30 lists
 * MCL_FUTURE and MCL_ONFAULT with it): refused for the pool's blocks, each
 * gets them back and succeeds; MCL_FUTURE stays in force until munlockall. */
static void mlockall_flags(void) {
    static const int forms[] = {MCL_CURRENT | MCL_FUTURE, MCL_CURRENT | MCL_ONFAULT,
                                MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT};
    size_t vm0 = status_bytes("VmSize");
    size_t limit = containerise(vm0 + 8 * MiB);
    CHECK(limit >= vm0 + 5 * MiB, "RLIMIT_MEMLOCK's hard limit leaves too little room");
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        fill_pool();
        CHECK(mlockall(forms[i]) == 0, "mlockall(%d): %m", forms[i]);
        CHECK(status_bytes("VmLck") <= limit, "VmLck %zu", status_bytes("VmLck"));
        CHECK(munlockall() == 0, "munlockall");
    }
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: %s reservation|mlockall_pool|mlock_pool", argv[0]);
    if (!strcmp(argv[1], "reservation"))
        reservation();
    else if (!strcmp(argv[1], "mlockall_pool"))
        mlockall_pool();
    else if (!strcmp(argv[1], "future_first"))
        future_first();
    else if (!strcmp(argv[1], "mlockall_flags"))
        mlockall_flags();
    else if (!strcmp(argv[1], "mlock_pool"))
        mlock_pool();
    else
        CHECK(0, "unknown case %s", argv[1]);
    puts("ok");
    return 0;
}
