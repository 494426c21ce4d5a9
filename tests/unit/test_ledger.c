/* The node ledger's mechanism (src/ledger.c), on ledgers of the test's own
 * under /dev/shm: the cap across processes, dead owners, and every file that
 * must be refused. Two connections in one process are two open files, so
 * their slot locks conflict as two processes' would. */
#include "ledger.h"
#include "node.h"

#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((uint64_t)1 << 20)

static char path[128];

static void gone(void) {
    unlink(path);
}

/* Each test in a process of its own, with a ledger of its own. */
static void fresh_path(void) {
    snprintf(path, sizeof path, "/dev/shm/dspreload-test-ledger-%d", (int)getpid());
    unlink(path);
    atexit(gone);
}

static void open_ok(struct dsp_ledger_conn *c, uint64_t cap) {
    const char *why = NULL;
    int err = 0;
    cr_assert_eq(dsp_ledger_open(c, path, "key:test", cap, &why, &err), 0, "%s (%s)", why,
                 strerror(err));
}

/* Two connections to one ledger of cap, each then claimed as a live owner. */
static void open_two_owners(struct dsp_ledger_conn *a, struct dsp_ledger_conn *b, uint64_t cap) {
    open_ok(a, cap);
    open_ok(b, cap);
    cr_assert_eq(dsp_ledger_claim(a, -1, -1, cap), 0);
    cr_assert_eq(dsp_ledger_claim(b, -1, -1, cap), 0);
}

static const char *open_refused(void) {
    struct dsp_ledger_conn c;
    const char *why = NULL;
    int err = 0;
    int rc = dsp_ledger_open(&c, path, "key:test", 64 * MiB, &why, &err);
    cr_assert_eq(rc, err ? -err : -EINVAL, "-errno, or -EINVAL when none applied: %d", rc);
    cr_assert_eq(c.fd, -1);
    cr_assert_null(c.map);
    return why;
}

Test(ledger, reserves_within_the_cap_and_gives_back, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(st.st_size, DSP_LEDGER_FILE_SIZE);
    cr_assert_eq(dsp_ledger_claim(&c, 3, 1, 64 * MiB), 0);
    cr_assert_eq(dsp_ledger_try_reserve(&c, 48 * MiB, 64 * MiB), 0);
    cr_assert_eq(dsp_ledger_try_reserve(&c, 16 * MiB, 64 * MiB), 0, "alone, up to the cap");
    cr_assert_eq(dsp_ledger_try_reserve(&c, 1, 64 * MiB), -ENOSPC);
    cr_assert_eq(dsp_ledger_total(c.map), 64 * MiB, "a refusal leaves nothing behind");
    dsp_ledger_sub(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_total(c.map), 0);
    cr_assert_eq(c.map->slot[c.slot].rank, 3);
    dsp_ledger_close(&c);
    cr_assert_eq(c.fd, -1);
}

Test(ledger, near_the_cap_a_process_past_its_share_leaves_the_rest, .init = fresh_path) {
    struct dsp_ledger_conn a, b;
    open_two_owners(&a, &b, 8 * MiB);
    cr_assert_neq(a.slot, b.slot, "two open files: two owners");
    cr_assert_eq(dsp_ledger_try_reserve(&b, 1 * MiB, 8 * MiB), 0);
    uint64_t got = 0;
    while (dsp_ledger_try_reserve(&a, 1 * MiB, 8 * MiB) == 0) got += MiB;
    cr_assert_eq(got, 6 * MiB, "past 7 MiB of 8, a holds no more than its half: %llu",
                 (unsigned long long)got);
    cr_assert_eq(dsp_ledger_try_reserve(&b, 1 * MiB, 8 * MiB), 0, "b, below its half, gets more");
    dsp_ledger_close(&a);
    dsp_ledger_close(&b);
}

/* Four processes racing for 1 MiB reservations, started together once all
 * hold a slot, never hold more than the cap, and each gets some. */
Test(ledger, processes_racing_never_pass_the_cap, .init = fresh_path) {
    int res[2], go[2], hold[2];
    cr_assert_eq(pipe(res), 0);
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(hold), 0);
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            /* Only the parent's ends keep the others waiting: a parent that
             * failed must not leave them blocked. */
            close(res[0]);
            close(go[1]);
            close(hold[1]);
            struct dsp_ledger_conn c;
            const char *why;
            int err;
            if (dsp_ledger_open(&c, path, "key:test", 64 * MiB, &why, &err) != 0 ||
                dsp_ledger_claim(&c, k, k, 64 * MiB) != 0)
                _exit(1);
            uint64_t got = 0;
            char x;
            if (write(res[1], &got, sizeof got) != sizeof got || read(go[0], &x, 1) != 1) _exit(2);
            for (int i = 0; i < 100; i++) {
                if (dsp_ledger_try_reserve(&c, MiB, 64 * MiB) == 0) got += MiB;
                usleep(1000); /* a pin takes time: the others run meanwhile */
            }
            if (write(res[1], &got, sizeof got) != sizeof got) _exit(3);
            if (read(hold[0], &x, 1) != 0) _exit(4); /* hold until the parent has summed */
            _exit(0);
        }
    }
    close(res[1]);
    close(go[0]);
    close(hold[0]);
    uint64_t got;
    for (int k = 0; k < 4; k++) cr_assert_eq(read(res[0], &got, sizeof got), sizeof got);
    cr_assert_eq(write(go[1], "xxxx", 4), 4);
    uint64_t sum = 0;
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(read(res[0], &got, sizeof got), sizeof got);
        cr_assert_gt(got, 0, "every process got some");
        sum += got;
    }
    cr_assert_leq(sum, 64 * MiB, "held together: %llu", (unsigned long long)sum);
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_total(c.map), sum);
    close(hold[1]);
    for (int k = 0; k < 4; k++) {
        int st;
        cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    /* They exited without leaving: the next refusal's scan takes it all back. */
    cr_assert_eq(dsp_ledger_reclaim(&c), sum);
    cr_assert_eq(dsp_ledger_total(c.map), 0);
    cr_assert_eq(atomic_load(&c.map->head.h.users), 0);
    dsp_ledger_close(&c);
}

Test(ledger, a_killed_owner_is_reclaimed_a_live_one_never, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    cr_assert_eq(dsp_ledger_try_reserve(&c, 8 * MiB, 64 * MiB), 0);
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t kid = fork();
    if (kid == 0) {
        struct dsp_ledger_conn k;
        const char *why;
        int err;
        if (dsp_ledger_open(&k, path, "key:test", 64 * MiB, &why, &err) != 0 ||
            dsp_ledger_claim(&k, -1, -1, 64 * MiB) != 0 ||
            dsp_ledger_try_reserve(&k, 32 * MiB, 64 * MiB) != 0)
            _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(2);
        pause();
        _exit(0);
    }
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    cr_assert_eq(dsp_ledger_reclaim(&c), 0, "the owner lives");
    cr_assert_eq(dsp_ledger_total(c.map), 40 * MiB);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    cr_assert_eq(dsp_ledger_reclaim(&c), 32 * MiB);
    cr_assert_eq(dsp_ledger_total(c.map), 8 * MiB, "our own slot is never reclaimed");
    dsp_ledger_close(&c);
}

Test(ledger, yield_requests_reach_the_pooling_owners, .init = fresh_path) {
    struct dsp_ledger_conn a, b;
    open_two_owners(&a, &b, 64 * MiB);
    cr_assert_eq(dsp_ledger_ask_yield(&b), 0, "nobody pools: nobody asked");
    atomic_store(&a.map->slot[a.slot].pooled, 5 * MiB);
    uint64_t gen = atomic_load(&a.map->slot[a.slot].trim_req);
    cr_assert_eq(dsp_ledger_ask_yield(&b), 5 * MiB);
    cr_assert_eq(atomic_load(&a.map->slot[a.slot].trim_req), gen + 1);
    dsp_ledger_close(&a);
    dsp_ledger_close(&b);
}

Test(ledger, a_creator_that_died_half_way_leaves_a_usable_file, .init = fresh_path) {
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    cr_assert_geq(fd, 0);
    close(fd); /* size 0: killed before it sized the file */
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    dsp_ledger_close(&c);
}

Test(ledger, a_stale_ledger_takes_the_new_cap, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    dsp_ledger_close(&c);
    open_ok(&c, 32 * MiB);
    cr_assert_eq(atomic_load(&c.map->head.h.cap), 32 * MiB, "no users: the opener's cap");
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 32 * MiB), 0);
    struct dsp_ledger_conn d;
    open_ok(&d, 128 * MiB);
    cr_assert_eq(atomic_load(&d.map->head.h.cap), 32 * MiB, "a user: the cap stays");
    dsp_ledger_close(&d);
    dsp_ledger_close(&c);
}

/* A file of this user's, linked at the ledger's name by make (symlink or
 * link): refused with why, and the file left untouched. */
static void refuses_a_link(int (*make)(const char *, const char *), const char *why) {
    char target[160];
    snprintf(target, sizeof target, "%s.target", path);
    int fd = open(target, O_CREAT | O_RDWR, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(make(target, path), 0);
    cr_assert_str_eq(open_refused(), why);
    struct stat st;
    cr_assert_eq(stat(target, &st), 0);
    cr_assert_eq(st.st_size, 0, "the link's target untouched");
    unlink(target);
}

Test(ledger, refuses_a_symbolic_link, .init = fresh_path) {
    refuses_a_link(symlink, "cannot be opened or created");
}

static void plant(size_t size, mode_t mode, int garbage) {
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    cr_assert_geq(fd, 0);
    char buf[4096];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = garbage ? (char)(i * 7 + 1) : 0;
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof buf ? size - done : sizeof buf;
        cr_assert_eq(write(fd, buf, n), (ssize_t)n);
        done += n;
    }
    fchmod(fd, mode);
    close(fd);
}

Test(ledger, refuses_a_corrupt_file, .init = fresh_path) {
    plant(DSP_LEDGER_FILE_SIZE, 0600, 1);
    cr_assert_str_eq(open_refused(), "is corrupt (bad magic)");
}

Test(ledger, refuses_the_wrong_size, .init = fresh_path) {
    plant(100, 0600, 0);
    cr_assert_str_eq(open_refused(), "has the wrong size");
}

Test(ledger, refuses_a_file_others_may_write, .init = fresh_path) {
    plant(DSP_LEDGER_FILE_SIZE, 0622, 0);
    cr_assert_str_eq(open_refused(), "is writable by group or others");
}

Test(ledger, refuses_another_users_file, .init = fresh_path) {
    if (geteuid() != 0) return; /* only root can give a file away */
    plant(DSP_LEDGER_FILE_SIZE, 0600, 0);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    cr_assert_str_eq(open_refused(), "belongs to another user");
}

Test(ledger, refuses_another_keys_ledger_at_the_same_name, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    dsp_ledger_close(&c);
    const char *why;
    int err;
    cr_assert_eq(dsp_ledger_open(&c, path, "key:other", 64 * MiB, &why, &err), -EINVAL);
    cr_assert_str_eq(why, "belongs to another key");
    cr_assert_eq(err, 0, "no errno applies");
}

Test(ledger, paths_name_the_user_and_the_key, .init = fresh_path) {
    char a[128], b[128], c[128];
    dsp_ledger_path(a, sizeof a, "/dev/shm", 1000, "key:x");
    dsp_ledger_path(b, sizeof b, "/dev/shm", 1000, "key:y");
    dsp_ledger_path(c, sizeof c, "/dev/shm", 1001, "key:x");
    cr_assert(!strncmp(a, "/dev/shm/dspreload-1000-", 24), "%s", a);
    cr_assert(strcmp(a, b) != 0);
    cr_assert(strcmp(a, c) != 0);
}

/* No /dev/shm (a minimal container): refused with the reason, nothing made. */
Test(ledger, refuses_a_missing_directory, .init = fresh_path) {
    snprintf(path, sizeof path, "/nonexistent-dspreload-%d/ledger", (int)getpid());
    struct dsp_ledger_conn c;
    const char *why = NULL;
    int err = 0;
    cr_assert_eq(dsp_ledger_open(&c, path, "key:test", 64 * MiB, &why, &err), -ENOENT);
    cr_assert_str_eq(why, "cannot be opened or created");
    cr_assert_eq(err, ENOENT);
}

/* Regression: the default key was the literal "cgroup:%.*s" (dsp_fmt has no
 * precision), so every cgroup of a user shared one ledger. */
Test(ledger, the_default_key_names_the_cgroup, .init = fresh_path) {
    char key[200], text[4096] = "";
    struct dsp_machine mc;
    dsp_machine_read(&mc);
    dsp_node_default_key(&mc, key, sizeof key);
    cr_assert(strstr(key, "%") == NULL, "%s", key);
    FILE *f = fopen("/proc/self/cgroup", "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    if (strcmp(key, "node") != 0) {
        cr_assert(!strncmp(key, "cgroup:", 7), "%s", key);
        cr_assert_gt(strlen(key), 7, "%s", key);
    }
}

/* Regression: a cgroup path longer than the key's room was cut silently, so
 * two cgroups whose paths differ only past the cut (a Kubernetes
 * container's id at the end) shared one ledger. */
Test(ledger, a_long_cgroup_path_is_hashed_not_cut, .init = fresh_path) {
    char a[300], b[300], ka[200], kb[200];
    memset(a, 'p', sizeof a - 1);
    a[0] = '/';
    a[sizeof a - 1] = 0;
    memcpy(b, a, sizeof b);
    b[sizeof b - 2] = 'q';
    dsp_node_cgroup_key(ka, sizeof ka, a, strlen(a));
    dsp_node_cgroup_key(kb, sizeof kb, b, strlen(b));
    cr_assert(strcmp(ka, kb) != 0, "%s", ka); /* (no cr_assert_str_neq in every build) */
    cr_assert(!strncmp(ka, "cgroup:/ppp", 11), "%s", ka);
    cr_assert(strchr(ka, '#') != NULL, "%s", ka);
    cr_assert_lt(strlen(ka), DSP_LEDGER_KEY_MAX);
    dsp_node_cgroup_key(ka, sizeof ka, "/a/b", 2); /* a short one as it was */
    cr_assert_str_eq(ka, "cgroup:/a");
}

/* Review of issue 16: growing the file past RLIMIT_FSIZE raised SIGXFSZ,
 * which killed the program at its first pin. */
Test(ledger, a_small_file_size_limit_refuses_instead_of_killing, .init = fresh_path) {
    struct rlimit r = {1024, 1024};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
    cr_assert_str_eq(open_refused(), "cannot be sized (RLIMIT_FSIZE, ulimit -f)");
}

/* A hard link planted at the name would have a ledger written into another
 * file of this user's. */
Test(ledger, refuses_a_hard_link, .init = fresh_path) {
    refuses_a_link(link, "has other names (hard links)");
}

/* A creator killed between sizing the file and writing it left a page of
 * zeros that was refused as corrupt for good: under the flock, no magic
 * means no process ever joined it, so it is written again. */
Test(ledger, a_creator_killed_before_magic_leaves_a_usable_file, .init = fresh_path) {
    plant(DSP_LEDGER_FILE_SIZE, 0600, 0); /* as if killed after posix_fallocate */
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    dsp_ledger_close(&c);
}

/* Every slot held by a live owner (one open file each, so one process can
 * hold them all): the next claim answers -EBUSY and takes nothing. */
Test(ledger, a_full_ledger_answers_ebusy, .init = fresh_path) {
    static struct dsp_ledger_conn c[DSP_LEDGER_SLOTS + 1];
    for (int i = 0; i <= DSP_LEDGER_SLOTS; i++) open_ok(&c[i], 64 * MiB);
    for (int i = 0; i < DSP_LEDGER_SLOTS; i++)
        cr_assert_eq(dsp_ledger_claim(&c[i], -1, -1, 64 * MiB), 0, "slot %d", i);
    cr_assert_eq(dsp_ledger_claim(&c[DSP_LEDGER_SLOTS], -1, -1, 64 * MiB), -EBUSY);
    cr_assert_eq(c[DSP_LEDGER_SLOTS].slot, -1);
    for (int i = 0; i <= DSP_LEDGER_SLOTS; i++) dsp_ledger_close(&c[i]);
}

/* Issue 34: another process of the user that runs `truncate -s 0` on the
 * ledger's file killed every process using it with SIGBUS at its next
 * access, the counters being mapped from the file. They live in a segment
 * that no one can shrink now: every access still works, and the check
 * notices the file is no longer the one joined. */
Test(ledger, a_truncated_file_kills_no_user, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    cr_assert_eq(dsp_ledger_try_reserve(&c, 8 * MiB, 64 * MiB), 0);
    const char *why = NULL;
    cr_assert_eq(dsp_ledger_verify(&c, &why), 0, "%s", why);
    cr_assert_eq(truncate(path, 0), 0);
    cr_assert_eq(dsp_ledger_try_reserve(&c, 8 * MiB, 64 * MiB), 0);
    dsp_ledger_sub(&c, 4 * MiB);
    cr_assert_eq(dsp_ledger_total(c.map), 12 * MiB);
    dsp_ledger_reclaim(&c);
    dsp_ledger_ask_yield(&c);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL);
    cr_assert_str_eq(why, "was truncated by another process");
    dsp_ledger_close(&c);
}

/* Issue 34: a file overwritten while in use was believed. The file must
 * still name the segment joined. */
Test(ledger, an_overwritten_file_is_not_believed, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    char junk[DSP_LEDGER_FILE_SIZE];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 13 + 5);
    int fd = open(path, O_WRONLY);
    cr_assert_eq(pwrite(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    close(fd);
    const char *why = NULL;
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL);
    cr_assert_str_eq(why, "was overwritten by another process");
    cr_assert_eq(dsp_ledger_try_reserve(&c, 8 * MiB, 64 * MiB), 0, "the segment still works");
    dsp_ledger_close(&c);
}

/* Issue 34: counters overwritten with random bytes refused every pin, for
 * "15.1 EiB pinned by 1063331291 processes". Each nonsense alone is caught;
 * the same ledger restored passes. */
Test(ledger, nonsense_counters_are_corrupt, .init = fresh_path) {
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&c, -1, -1, 64 * MiB), 0);
    struct dsp_ledger_head *h = &c.map->head.h;
    struct dsp_ledger_slot *s = &c.map->slot[c.slot];
    const char *why = NULL;
    atomic_store(&h->users, 1063331291u);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "users");
    cr_assert_str_eq(why, "is corrupt (counters)");
    atomic_store(&h->users, 1);
    atomic_store(&h->cap, (uint64_t)1 << 61);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "a cap past the machine's memory");
    atomic_store(&h->cap, 0);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "no cap");
    atomic_store(&h->cap, 64 * MiB);
    atomic_store(&s->reserved, (uint64_t)17 << 60);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "a slot holding exbibytes");
    atomic_store(&s->reserved, 0);
    atomic_store(&s->state, 7);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "a state that is none");
    atomic_store(&s->state, 1);
    atomic_store(&h->hwm, 100000);
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL, "hwm past the slots");
    atomic_store(&h->hwm, (uint32_t)c.slot + 1);
    h->magic = 42;
    cr_assert_eq(dsp_ledger_verify(&c, &why), -EINVAL);
    cr_assert_str_eq(why, "is corrupt (bad magic)");
    h->magic = DSP_LEDGER_MAGIC;
    cr_assert_eq(dsp_ledger_verify(&c, &why), 0, "%s", why);
    dsp_ledger_close(&c);
}

/* A format-1 file (the counters in the file, 20 KiB) at the ledger's name. */
static void plant_format_1(void) {
    plant(20480, 0600, 0);
    int fd = open(path, O_WRONLY);
    struct {
        uint64_t magic;
        uint32_t version;
    } old = {DSP_LEDGER_MAGIC, 1};
    cr_assert_eq(pwrite(fd, &old, sizeof old, 0), (ssize_t)sizeof old);
    close(fd);
}

/* Issue 34: two dspreload versions on one ledger must never misread each
 * other. A format-1 file that a live process holds a slot of (its byte
 * locked) is refused, the reason naming both formats and this release, and
 * left as it was. */
Test(ledger, a_ledger_of_another_format_is_refused_naming_both, .init = fresh_path) {
    plant_format_1();
    int holder = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1};
    cr_assert_eq(fcntl(holder, F_OFD_SETLK, &fl), 0, "a live owner of slot 5");
    struct dsp_ledger_conn c;
    const char *why = NULL;
    int err = -1;
    cr_assert_eq(dsp_ledger_open(&c, path, "key:test", 64 * MiB, &why, &err), -EINVAL);
    cr_assert_eq(err, 0);
    char want[160];
    snprintf(want, sizeof want,
             "has ledger format 1 (another dspreload's); this dspreload (%s) uses format %d",
             DSP_VERSION_STRING, DSP_LEDGER_VERSION);
    cr_assert_str_eq(why, want);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 20480, "the other version's file left as it was");
    close(holder);
}

/* The same file once no process holds it (an upgrade left it behind) is
 * replaced: every process of the new version warned and budgeted alone
 * until someone removed it by hand. */
Test(ledger, a_stale_ledger_of_another_format_is_replaced, .init = fresh_path) {
    plant_format_1();
    struct stat old;
    cr_assert_eq(stat(path, &old), 0);
    int keeper = open(path, O_RDONLY); /* an old process's view keeps its own file */
    struct dsp_ledger_conn c;
    open_ok(&c, 64 * MiB);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, DSP_LEDGER_FILE_SIZE);
    struct stat kept;
    cr_assert_eq(fstat(keeper, &kept), 0);
    cr_assert_eq(kept.st_size, 20480, "the old file itself never shrinks under its holders");
    close(keeper);
    dsp_ledger_close(&c);
}

/* The file names a segment this process cannot attach while live processes
 * hold slots of it (another IPC namespace sharing /dev/shm): refused, and
 * the file is not taken over from under them. */
Test(ledger, a_segment_out_of_reach_is_not_replaced_under_its_users, .init = fresh_path) {
    struct dsp_ledger_conn a;
    open_ok(&a, 64 * MiB);
    cr_assert_eq(dsp_ledger_claim(&a, -1, -1, 64 * MiB), 0);
    struct dsp_ledger_file f;
    int fd = open(path, O_RDWR);
    cr_assert_eq(pread(fd, &f, sizeof f, 0), (ssize_t)sizeof f);
    struct dsp_ledger_file other = f;
    other.shmid = -2; /* no segment here has it */
    cr_assert_eq(pwrite(fd, &other, sizeof other, 0), (ssize_t)sizeof other);
    const char *why = open_refused();
    cr_assert(strstr(why, "is in use by processes whose shared memory this one cannot reach"), "%s",
              why);
    struct dsp_ledger_file now;
    cr_assert_eq(pread(fd, &now, sizeof now, 0), (ssize_t)sizeof now);
    cr_assert_eq(now.shmid, -2, "the file left as it was");
    cr_assert_eq(pwrite(fd, &f, sizeof f, 0), (ssize_t)sizeof f);
    close(fd);
    dsp_ledger_close(&a);
    /* Once nobody holds a slot, the stale name is replaced. */
    struct dsp_ledger_conn b;
    open_ok(&b, 64 * MiB);
    dsp_ledger_close(&b);
}
