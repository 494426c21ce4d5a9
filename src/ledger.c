/* The node ledger's file and atomics (ledger.h). Runs inside malloc under the
 * manager's mutex: no allocation, no lock of ours held across a system call
 * (the only locks are the kernel's: a flock while a file is initialised, and
 * each owner's byte lock, which stands for its being alive). */
#include "ledger.h"

#include "fmt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the ledger's atomics must be lock-free to work across processes");
_Static_assert(sizeof(struct dsp_ledger_slot) == 64, "one slot, one cache line");
_Static_assert(sizeof(struct dsp_ledger_head) <= 4096, "the header fits its page");

/* Changes whenever a field moves: a ledger of another build's layout is refused. */
#define LAYOUT                                                                                     \
    ((uint32_t)(sizeof(struct dsp_ledger_map) ^                                                    \
                (offsetof(struct dsp_ledger_slot, reserved) << 8) ^                                \
                (offsetof(struct dsp_ledger_slot, trim_req) << 14) ^                               \
                (offsetof(struct dsp_ledger_slot, cap) << 20) ^                                    \
                (offsetof(struct dsp_ledger_head, key) << 26)))

uint64_t dsp_ledger_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n && s[i]; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

void dsp_ledger_path(char *out, size_t cap, const char *dir, unsigned uid, const char *key) {
    uint64_t h = dsp_ledger_hash(key, (size_t)-1);
    dsp_fmt(out, cap, "%s/dspreload-%u-%08x%08x", dir, uid, (unsigned)(h >> 32), (unsigned)h);
}

/* The lock that stands for slot i's owner: byte i of the file, through the
 * open file description (so the threads of one process share it, and a
 * fork child that closes its copy of the descriptor does not release it).
 * 1 when the lock of that type was set, else 0 (held by another). */
static int byte_lock(int fd, int i, short type) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

int dsp_ledger_slot_alive(int fd, int i) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0) return -errno;
    return fl.l_type != F_UNLCK;
}

int dsp_ledger_check(const struct dsp_ledger_map *m, unsigned uid, const char **why) {
    const struct dsp_ledger_head *h = &m->head.h;
    if (h->magic != DSP_LEDGER_MAGIC) return *why = "is corrupt (bad magic)", -EINVAL;
    if (h->version != DSP_LEDGER_VERSION || h->layout != LAYOUT || h->nslots != DSP_LEDGER_SLOTS ||
        h->slot_size != sizeof(struct dsp_ledger_slot))
        return *why = "has another version or layout (an older or newer dspreload?)", -EINVAL;
    if (h->uid != uid) return *why = "names another user", -EINVAL;
    if (memchr(h->key, 0, sizeof h->key) == NULL) return *why = "is corrupt (key)", -EINVAL;
    if (atomic_load(&h->hwm) > DSP_LEDGER_SLOTS || atomic_load(&h->cap) == 0)
        return *why = "is corrupt (counters)", -EINVAL;
    return 0;
}

static void initialise(struct dsp_ledger_map *m, const char *key, uint64_t cap) {
    struct dsp_ledger_head *h = &m->head.h;
    memset(m, 0, sizeof *m);
    h->version = DSP_LEDGER_VERSION;
    h->layout = LAYOUT;
    h->nslots = DSP_LEDGER_SLOTS;
    h->slot_size = sizeof(struct dsp_ledger_slot);
    h->uid = (uint32_t)geteuid();
    atomic_store(&h->cap, cap);
    size_t n = strlen(key);
    memcpy(h->key, key, n < sizeof h->key ? n : sizeof h->key - 1);
    atomic_thread_fence(memory_order_seq_cst);
    h->magic = DSP_LEDGER_MAGIC; /* last: a reader that sees it sees the rest */
}

/* The initialiser's flock, waited for 2 s at most: a process stopped (^Z)
 * in the middle of its open must not stall every other first pin. 0, or
 * -errno (-EWOULDBLOCK when the 2 s passed). */
static int lock_bounded(int fd) {
    for (int i = 0; i < 2000; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK && errno != EINTR) return -errno;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -EWOULDBLOCK;
}

/* The open's failure: c emptied, *why and *err set; -e, or -EINVAL when no
 * errno applies (e 0: the file is not one to use). */
static int refuse(struct dsp_ledger_conn *c, const char *w, int e, const char **why, int *err) {
    if (c->map) munmap(c->map, sizeof *c->map);
    if (c->fd >= 0) close(c->fd);
    c->map = NULL;
    c->fd = -1;
    *why = w;
    *err = e;
    return e ? -e : -EINVAL;
}

int dsp_ledger_open(struct dsp_ledger_conn *c, const char *path, const char *key, uint64_t cap,
                    const char **why, int *err) {
    c->fd = -1;
    c->map = NULL;
    c->slot = -1;
    if (strlen(key) >= DSP_LEDGER_KEY_MAX) return refuse(c, "has a key too long", 0, why, err);
    /* O_NOFOLLOW: a symbolic link planted at the name is refused, never
     * followed; O_NONBLOCK: a FIFO planted there cannot hang the open. */
    int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    c->fd = open(path, flags | O_CREAT | O_EXCL, 0600);
    /* The umask may have narrowed 0600: the other processes of this user
     * must be able to open it too. */
    if (c->fd >= 0) fchmod(c->fd, 0600);
    if (c->fd < 0 && errno == EEXIST) c->fd = open(path, flags);
    if (c->fd < 0) return refuse(c, "cannot be opened or created", errno, why, err);
    struct stat st;
    if (fstat(c->fd, &st) != 0) return refuse(c, "cannot be examined", errno, why, err);
    if (!S_ISREG(st.st_mode)) return refuse(c, "is not a regular file", 0, why, err);
    /* A hard link planted at the name (protected_hardlinks off) would have
     * us write a ledger into another file of this user's. */
    if (st.st_nlink != 1) return refuse(c, "has other names (hard links)", 0, why, err);
    c->dev = (unsigned long long)st.st_dev;
    c->ino = (unsigned long long)st.st_ino;
    if (st.st_uid != geteuid()) return refuse(c, "belongs to another user", 0, why, err);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return refuse(c, "is writable by group or others", 0, why, err);
    /* Processes starting together: one initialises, under the file's flock,
     * which the others wait for (it covers a few system calls on a 20 KiB
     * file). A creator killed before it finished left a file of size 0 or
     * without magic: the next one to hold the flock initialises it. */
    int rc = lock_bounded(c->fd);
    if (rc != 0) return refuse(c, "cannot be locked", -rc, why, err);
    if (fstat(c->fd, &st) != 0) return refuse(c, "cannot be examined", errno, why, err);
    int fresh = st.st_size == 0;
    if (!fresh && (size_t)st.st_size != sizeof *c->map)
        return refuse(c, "has the wrong size", 0, why, err);
    /* Growing a file past RLIMIT_FSIZE raises SIGXFSZ, which kills the
     * program: refused before. */
    struct rlimit fsize;
    if (fresh && getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        fsize.rlim_cur < sizeof *c->map)
        return refuse(c, "cannot be sized (RLIMIT_FSIZE, ulimit -f)", 0, why, err);
    /* fallocate, not ftruncate, and on every open (it is idempotent): a
     * full /dev/shm fails here, rather than with SIGBUS at the first store
     * into a file whose pages were never allocated (one made by ftruncate). */
    int e = posix_fallocate(c->fd, 0, sizeof *c->map);
    if (e) return refuse(c, "cannot be sized (/dev/shm full?)", e, why, err);
    void *p = mmap(NULL, sizeof *c->map, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
    if (p == MAP_FAILED) return refuse(c, "cannot be mapped", errno, why, err);
    c->map = p;
    struct dsp_ledger_head *h = &c->map->head.h;
    if (fresh || h->magic == 0) {
        /* No magic under the flock: no process ever finished initialising
         * it (magic is the last store, made under this flock), so whatever
         * a creator killed half way left is overwritten. */
        initialise(c->map, key, cap);
    }
    const char *bad;
    if (dsp_ledger_check(c->map, (unsigned)geteuid(), &bad) != 0)
        return refuse(c, bad, 0, why, err);
    if (strcmp(h->key, key) != 0) return refuse(c, "belongs to another key", 0, why, err);
    /* Still under the flock: a ledger whose users are all gone (a previous
     * job's) takes this process's cap, so a stale file never keeps an old
     * setting. */
    dsp_ledger_reclaim(c);
    if (atomic_load(&h->users) == 0) atomic_store(&h->cap, cap);
    flock(c->fd, LOCK_UN);
    return 0;
}

int dsp_ledger_fd_ok(const struct dsp_ledger_conn *c) {
    struct stat st;
    return fstat(c->fd, &st) == 0 && (unsigned long long)st.st_dev == c->dev &&
           (unsigned long long)st.st_ino == c->ino;
}

void dsp_ledger_close(struct dsp_ledger_conn *c) {
    dsp_ledger_leave(c);
    if (c->map) munmap(c->map, sizeof *c->map);
    if (c->fd >= 0) close(c->fd);
    c->map = NULL;
    c->fd = -1;
}

static uint64_t proc_start(void) {
    char buf[1024];
    long n = dsp_sys_read("/proc/self/stat", buf, sizeof buf);
    if (n <= 0) return 0;
    const char *p = NULL;
    for (long i = 0; i < n; i++)
        if (buf[i] == ')') p = buf + i; /* the command may hold spaces and parentheses */
    if (!p) return 0;
    /* After ") " come fields 3, 4, ...: field 22 is the 20th. */
    int field = 2;
    uint64_t v = 0;
    for (p++; *p && field < 22; p++)
        if (*p == ' ') field++;
    for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

/* Under the byte's lock, which the caller holds: a dead owner's slot zeroed
 * and freed. The bytes it held. */
static uint64_t clear(struct dsp_ledger_map *m, int i) {
    struct dsp_ledger_slot *s = &m->slot[i];
    uint64_t had = atomic_exchange(&s->reserved, 0);
    atomic_store(&s->pooled, 0);
    if (atomic_exchange(&s->state, 0) == 1) {
        uint32_t u = atomic_load(&m->head.h.users);
        while (u && !atomic_compare_exchange_weak(&m->head.h.users, &u, u - 1)) {
        }
    }
    return had;
}

int dsp_ledger_claim(struct dsp_ledger_conn *c, int rank, int local_rank, uint64_t cap) {
    struct dsp_ledger_map *m = c->map;
    for (int i = 0; i < DSP_LEDGER_SLOTS; i++) {
        if (!byte_lock(c->fd, i, F_WRLCK)) continue; /* a live owner, or a reclaimer */
        clear(m, i);                                 /* a dead owner's leftovers */
        struct dsp_ledger_slot *s = &m->slot[i];
        s->pid = (int32_t)getpid();
        s->start = proc_start();
        s->rank = rank;
        s->local_rank = local_rank;
        atomic_store(&s->refused, 0);
        atomic_store(&s->cap, cap);
        /* Visible to every later summer before the slot holds a byte: a
         * reserver loads hwm after its own increment (ledger.h). */
        uint32_t hwm = atomic_load(&m->head.h.hwm);
        while (hwm < (uint32_t)i + 1 &&
               !atomic_compare_exchange_weak(&m->head.h.hwm, &hwm, (uint32_t)i + 1)) {
        }
        atomic_fetch_add(&m->head.h.users, 1);
        atomic_store(&s->state, 1);
        c->slot = i;
        return 0;
    }
    return -EBUSY;
}

void dsp_ledger_leave(struct dsp_ledger_conn *c) {
    if (!c->map || c->slot < 0) return;
    clear(c->map, c->slot);
    byte_lock(c->fd, c->slot, F_UNLCK);
    c->slot = -1;
}

uint64_t dsp_ledger_total(const struct dsp_ledger_map *m) {
    uint32_t n = atomic_load(&m->head.h.hwm);
    if (n > DSP_LEDGER_SLOTS) n = DSP_LEDGER_SLOTS;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = atomic_load(&m->slot[i].reserved);
        sum = __builtin_add_overflow(sum, v, &sum) ? UINT64_MAX : sum;
    }
    return sum;
}

int dsp_ledger_try_reserve(struct dsp_ledger_conn *c, uint64_t len, uint64_t cap) {
    struct dsp_ledger_slot *s = &c->map->slot[c->slot];
    uint64_t mine = atomic_fetch_add(&s->reserved, len) + len;
    uint64_t sum = dsp_ledger_total(c->map);
    int ok = sum <= cap && mine >= len; /* mine < len: it wrapped */
    if (ok && sum > cap - cap / 8) {
        /* Near the cap, a process past its fair share leaves the rest to
         * those below theirs (a rank starting late), unless it is alone in
         * holding anything. */
        uint32_t users = atomic_load(&c->map->head.h.users);
        ok = users <= 1 || mine <= cap / users || sum == mine;
    }
    if (!ok) atomic_fetch_sub(&s->reserved, len);
    return ok ? 0 : -ENOSPC;
}

void dsp_ledger_sub(struct dsp_ledger_conn *c, uint64_t len) {
    _Atomic uint64_t *r = &c->map->slot[c->slot].reserved;
    uint64_t v = atomic_load(r);
    while (!atomic_compare_exchange_weak(r, &v, v > len ? v - len : 0)) {
    }
}

uint64_t dsp_ledger_reclaim(struct dsp_ledger_conn *c) {
    struct dsp_ledger_map *m = c->map;
    uint32_t n = atomic_load(&m->head.h.hwm);
    uint64_t got = 0;
    for (uint32_t i = 0; i < n && i < DSP_LEDGER_SLOTS; i++) {
        if ((int)i == c->slot || atomic_load(&m->slot[i].state) == 0) continue;
        /* The byte's lock taken: its owner is gone (it can only be held by
         * a live open file), and no claimer takes the slot meanwhile. */
        if (!byte_lock(c->fd, (int)i, F_WRLCK)) continue;
        got += clear(m, (int)i);
        byte_lock(c->fd, (int)i, F_UNLCK);
    }
    return got;
}

uint64_t dsp_ledger_ask_yield(struct dsp_ledger_conn *c) {
    struct dsp_ledger_map *m = c->map;
    uint32_t n = atomic_load(&m->head.h.hwm);
    uint64_t asked = 0;
    for (uint32_t i = 0; i < n && i < DSP_LEDGER_SLOTS; i++) {
        struct dsp_ledger_slot *s = &m->slot[i];
        if ((int)i == c->slot || atomic_load(&s->state) == 0) continue;
        uint64_t pooled = atomic_load(&s->pooled);
        if (!pooled) continue;
        atomic_fetch_add(&s->trim_req, 1);
        asked += pooled;
    }
    return asked;
}
