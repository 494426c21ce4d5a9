/* The node ledger's file, segment and atomics (ledger.h). Runs inside malloc
 * under the manager's mutex: no allocation, no lock of ours held across a
 * system call (the only locks are the kernel's: a flock while a file is
 * initialised, and each owner's byte lock, which stands for its being
 * alive). */
#include "ledger.h"

#include "fmt.h"
#include "internal.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the ledger's atomics must be lock-free to work across processes");
_Static_assert(sizeof(struct dsp_ledger_slot) == 64, "one slot, one cache line");
_Static_assert(sizeof(struct dsp_ledger_head) <= 4096, "the header fits its page");
_Static_assert(sizeof(struct dsp_ledger_file) <= DSP_LEDGER_FILE_SIZE, "the file is one page");
_Static_assert(offsetof(struct dsp_ledger_file, version) == 8,
               "the format's number where every format has it");

/* Changes whenever a field moves: a ledger of another build's layout is refused. */
#define LAYOUT                                                                                     \
    ((uint32_t)(sizeof(struct dsp_ledger_map) ^                                                    \
                (offsetof(struct dsp_ledger_slot, reserved) << 8) ^                                \
                (offsetof(struct dsp_ledger_slot, trim_req) << 14) ^                               \
                (offsetof(struct dsp_ledger_slot, cap) << 20) ^                                    \
                (offsetof(struct dsp_ledger_head, key) << 26) ^                                    \
                (offsetof(struct dsp_ledger_file, key) << 4)))

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

int dsp_ledger_check(const struct dsp_ledger_map *m, unsigned uid, uint64_t ram, const char **why) {
    const struct dsp_ledger_head *h = &m->head.h;
    if (h->magic != DSP_LEDGER_MAGIC) return *why = "is corrupt (bad magic)", -EINVAL;
    if (h->version != DSP_LEDGER_VERSION || h->layout != LAYOUT || h->nslots != DSP_LEDGER_SLOTS ||
        h->slot_size != sizeof(struct dsp_ledger_slot))
        return *why = "is corrupt (its shared memory has another format)", -EINVAL;
    if (h->uid != uid) return *why = "names another user", -EINVAL;
    if (memchr(h->key, 0, sizeof h->key) == NULL) return *why = "is corrupt (key)", -EINVAL;
    /* Sense (issue 34: a ledger overwritten with random bytes was believed,
     * and refused every pin for "15.1 EiB pinned by 1063331291 processes"). */
    uint32_t hwm = atomic_load(&h->hwm);
    uint64_t cap = atomic_load(&h->cap);
    if (hwm > DSP_LEDGER_SLOTS || atomic_load(&h->users) > DSP_LEDGER_SLOTS || cap == 0 ||
        (ram && cap > ram))
        return *why = "is corrupt (counters)", -EINVAL;
    for (uint32_t i = 0; i < hwm; i++) {
        const struct dsp_ledger_slot *s = &m->slot[i];
        if (atomic_load(&s->state) > 1 || (ram && atomic_load(&s->reserved) > 2 * ram))
            return *why = "is corrupt (counters)", -EINVAL;
    }
    return 0;
}

/* A cap above the machine's memory means none; stored clamped, so that
 * dsp_ledger_check can call a larger one nonsense. */
static uint64_t clamp_cap(uint64_t cap, uint64_t ram) {
    return ram && cap > ram ? ram : cap;
}

static void initialise(struct dsp_ledger_map *m, const char *key, uint64_t cap, uint64_t nonce) {
    struct dsp_ledger_head *h = &m->head.h;
    memset(m, 0, sizeof *m);
    h->nonce = nonce;
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
    dsp_ledger_unmap(c);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    *why = w;
    *err = e;
    return e ? -e : -EINVAL;
}

union file_page {
    struct dsp_ledger_file f;
    char page[DSP_LEDGER_FILE_SIZE];
};

int dsp_ledger_read_file(int fd, struct dsp_ledger_file *f, unsigned uid, char *out,
                         const char **why) {
    union file_page p;
    ssize_t n = pread(fd, &p, sizeof p, 0);
    if (n < 0) return -errno;
    /* Another format first, whatever its size (format 1's file was 20 KiB):
     * the warning names both. */
    if (n >= 16 && p.f.magic == DSP_LEDGER_MAGIC && p.f.version != DSP_LEDGER_VERSION) {
        dsp_fmt(out, 160,
                "has ledger format %u (another dspreload's); this dspreload (%s) uses format %u",
                (unsigned)p.f.version, DSP_VERSION_STRING, (unsigned)DSP_LEDGER_VERSION);
        return *why = out, -EPROTO;
    }
    if (n != sizeof p) return *why = "has the wrong size", -EINVAL;
    /* A page without magic: its creator died between sizing the file and
     * its one pwrite (both under the flock); no process ever joined it. */
    if (p.f.magic == 0) return *why = "is not written yet", -ENODATA;
    if (p.f.magic != DSP_LEDGER_MAGIC) return *why = "is corrupt (bad magic)", -EINVAL;
    if (p.f.layout != LAYOUT) {
        char rel[sizeof p.f.release + 1];
        memcpy(rel, p.f.release, sizeof p.f.release);
        rel[sizeof p.f.release] = 0;
        dsp_fmt(out, 160,
                "has another layout of format %u (written by dspreload %s, built otherwise than "
                "this %s)",
                (unsigned)p.f.version, rel[0] ? rel : "?", DSP_VERSION_STRING);
        return *why = out, -EPROTO;
    }
    if (p.f.uid != uid) return *why = "names another user", -EINVAL;
    if (memchr(p.f.key, 0, sizeof p.f.key) == NULL) return *why = "is corrupt (key)", -EINVAL;
    *f = p.f;
    return 0;
}

struct dsp_ledger_map *dsp_ledger_attach(const struct dsp_ledger_file *f, unsigned uid,
                                         int rdonly) {
    struct shmid_ds ds;
    /* Not this user's, not made 0600, or not of the ledger's size: the id of
     * a segment that went with its last user, reused since for another. */
    if (shmctl(f->shmid, IPC_STAT, &ds) != 0 || ds.shm_perm.uid != uid || ds.shm_perm.cuid != uid ||
        (ds.shm_perm.mode & 0777) != 0600 || ds.shm_segsz != sizeof(struct dsp_ledger_map))
        return NULL;
    void *p = shmat(f->shmid, NULL, rdonly ? SHM_RDONLY : 0);
    if (p == (void *)-1) return NULL;
    struct dsp_ledger_map *m = p;
    if (m->head.h.nonce != f->nonce) {
        shmdt(p);
        return NULL;
    }
    return m;
}

void dsp_ledger_unmap(struct dsp_ledger_conn *c) {
    if (c->map) shmdt(c->map);
    if (c->keep) munmap(c->keep, DSP_LEDGER_FILE_SIZE);
    c->map = NULL;
    c->keep = NULL;
}

int dsp_ledger_in_use(int fd) {
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = DSP_LEDGER_SLOTS};
    return fcntl(fd, F_OFD_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
}

/* Under the flock: a new segment, marked for removal at once (it goes with
 * its last attachment, so none outlives its users; Linux still attaches it
 * by id until then, shmat(2)), initialised, then named in the file. 0, or
 * the refusal. */
static int make_segment(struct dsp_ledger_conn *c, const char *key, uint64_t cap, const char **why,
                        int *err) {
    int id = shmget(IPC_PRIVATE, sizeof *c->map, IPC_CREAT | IPC_EXCL | 0600);
    if (id < 0) return refuse(c, "cannot make its shared memory (shmget)", errno, why, err);
    void *p = shmat(id, NULL, 0);
    int e = errno;
    shmctl(id, IPC_RMID, NULL);
    if (p == (void *)-1) return refuse(c, "cannot attach its shared memory (shmat)", e, why, err);
    c->map = p;
    c->shmid = id;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* Tells this segment from one that later gets the same id. */
    uint64_t nonce = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                     ((uint64_t)getpid() << 40) ^ ((uint64_t)(uint32_t)id << 8) ^ 1;
    c->nonce = nonce;
    initialise(c->map, key, clamp_cap(cap, c->ram), nonce);
    union file_page fp;
    memset(&fp, 0, sizeof fp);
    fp.f.magic = DSP_LEDGER_MAGIC;
    fp.f.version = DSP_LEDGER_VERSION;
    fp.f.layout = LAYOUT;
    fp.f.uid = (uint32_t)geteuid();
    fp.f.shmid = id;
    fp.f.nonce = nonce;
    memcpy(fp.f.release, DSP_VERSION_STRING,
           sizeof DSP_VERSION_STRING < sizeof fp.f.release ? sizeof DSP_VERSION_STRING
                                                           : sizeof fp.f.release);
    memcpy(fp.f.key, c->map->head.h.key, sizeof fp.f.key);
    ssize_t n = pwrite(c->fd, &fp, sizeof fp, 0);
    if (n != (ssize_t)sizeof fp)
        return refuse(c, "cannot be written (/dev/shm full?)", n < 0 ? errno : ENOSPC, why, err);
    return 0;
}

/* Opens the file at path (made 0600 when it is new) and takes its flock,
 * refusing what must not be used; *st: what it is. 0, 1 when the name no
 * longer names the file locked (another process replaced it meanwhile: try
 * again), or the refusal. */
static int open_locked(struct dsp_ledger_conn *c, const char *path, struct stat *st,
                       const char **why, int *err) {
    /* O_NOFOLLOW: a symbolic link planted at the name is refused, never
     * followed; O_NONBLOCK: a FIFO planted there cannot hang the open. */
    int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    c->fd = open(path, flags | O_CREAT | O_EXCL, 0600);
    /* The umask may have narrowed 0600: the other processes of this user
     * must be able to open it too. */
    if (c->fd >= 0) fchmod(c->fd, 0600);
    if (c->fd < 0 && errno == EEXIST) c->fd = open(path, flags);
    if (c->fd < 0) return refuse(c, "cannot be opened or created", errno, why, err);
    if (fstat(c->fd, st) != 0) return refuse(c, "cannot be examined", errno, why, err);
    if (!S_ISREG(st->st_mode)) return refuse(c, "is not a regular file", 0, why, err);
    /* A hard link planted at the name (protected_hardlinks off) would have
     * us write a ledger into another file of this user's. */
    if (st->st_nlink != 1) return refuse(c, "has other names (hard links)", 0, why, err);
    c->dev = (unsigned long long)st->st_dev;
    c->ino = (unsigned long long)st->st_ino;
    if (st->st_uid != geteuid()) return refuse(c, "belongs to another user", 0, why, err);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return refuse(c, "is writable by group or others", 0, why, err);
    /* Processes starting together: one writes the file, under its flock,
     * which the others wait for (a few system calls). A creator killed
     * before it finished left a file of size 0 or without magic: the next
     * one to hold the flock writes it. */
    int rc = lock_bounded(c->fd);
    if (rc != 0) return refuse(c, "cannot be locked", -rc, why, err);
    struct stat named;
    if (fstat(c->fd, st) != 0) return refuse(c, "cannot be examined", errno, why, err);
    if (lstat(path, &named) != 0 || named.st_dev != st->st_dev || named.st_ino != st->st_ino) {
        close(c->fd);
        c->fd = -1;
        return 1;
    }
    return 0;
}

int dsp_ledger_open(struct dsp_ledger_conn *c, const char *path, const char *key, uint64_t cap,
                    const char **why, int *err) {
    c->fd = -1;
    c->map = NULL;
    c->keep = NULL;
    c->slot = -1;
    c->ram = dsp_sys_ram();
    if (strlen(key) >= DSP_LEDGER_KEY_MAX) return refuse(c, "has a key too long", 0, why, err);
    struct stat st;
    struct dsp_ledger_file f = {0};
    const char *bad = NULL;
    int rc, fresh;
    for (int tries = 0;; tries++) {
        rc = open_locked(c, path, &st, why, err);
        if (rc < 0) return rc;
        if (rc == 1) goto again;
        fresh = st.st_size == 0;
        if (fresh) break;
        rc = dsp_ledger_read_file(c->fd, &f, (unsigned)geteuid(), c->why, &bad);
        /* Another format's or build's file that no live process holds (an
         * upgrade left it): removed, and made anew. A process of that
         * version that still has it open keeps its own file; one waiting
         * for its flock sees the name changed and opens again. */
        if (rc == -EPROTO && !dsp_ledger_in_use(c->fd) && unlink(path) == 0) {
            close(c->fd);
            c->fd = -1;
            goto again;
        }
        /* No magic under the flock: whatever a creator killed half way
         * left is written over. */
        fresh = rc == -ENODATA;
        if (fresh) break;
        if (rc != 0) return refuse(c, bad, rc == -EINVAL || rc == -EPROTO ? 0 : -rc, why, err);
        if (strcmp(f.key, key) != 0) return refuse(c, "belongs to another key", 0, why, err);
        break;
    again:
        if (tries == 3) return refuse(c, "keeps being replaced by another process", 0, why, err);
    }
    /* Writing a file past RLIMIT_FSIZE raises SIGXFSZ, which kills the
     * program: refused before. */
    struct rlimit fsize;
    if (fresh && getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        fsize.rlim_cur < DSP_LEDGER_FILE_SIZE)
        return refuse(c, "cannot be sized (RLIMIT_FSIZE, ulimit -f)", 0, why, err);
    /* A full /dev/shm refuses here, with its own reason. */
    int e = fresh ? posix_fallocate(c->fd, 0, DSP_LEDGER_FILE_SIZE) : 0;
    if (e) return refuse(c, "cannot be sized (/dev/shm full?)", e, why, err);
    if (!fresh) c->map = dsp_ledger_attach(&f, (unsigned)geteuid(), 0);
    c->shmid = f.shmid;
    c->nonce = f.nonce;
    if (!c->map) {
        /* The segment went with its last user (or never was): a new one,
         * unless live processes hold slots of the file, which then use a
         * segment this process cannot reach. */
        if (!fresh && dsp_ledger_in_use(c->fd))
            return refuse(c,
                          "is in use by processes whose shared memory this one cannot reach "
                          "(another IPC namespace: a container sharing /dev/shm without "
                          "--ipc=host?)",
                          0, why, err);
        rc = make_segment(c, key, cap, why, err);
        if (rc != 0) return rc;
    }
    if (dsp_ledger_check(c->map, (unsigned)geteuid(), c->ram, &bad) != 0)
        return refuse(c, bad, 0, why, err);
    if (strcmp(c->map->head.h.key, key) != 0)
        return refuse(c, "belongs to another key", 0, why, err);
    /* Keeps the open file, and so the slot's lock, while the program may
     * close the descriptor (closefrom). PROT_NONE: never read or written, so
     * a truncated file cannot fault here. */
    void *k = mmap(NULL, DSP_LEDGER_FILE_SIZE, PROT_NONE, MAP_SHARED, c->fd, 0);
    if (k == MAP_FAILED) return refuse(c, "cannot be mapped", errno, why, err);
    c->keep = k;
    /* Still under the flock: a ledger whose users are all gone (a previous
     * job's) takes this process's cap, so a stale one never keeps an old
     * setting. */
    struct dsp_ledger_head *h = &c->map->head.h;
    dsp_ledger_reclaim(c);
    if (atomic_load(&h->users) == 0) atomic_store(&h->cap, clamp_cap(cap, c->ram));
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
    dsp_ledger_unmap(c);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

int dsp_ledger_verify(struct dsp_ledger_conn *c, const char **why) {
    union file_page p;
    ssize_t n = pread(c->fd, &p, sizeof p, 0);
    if (n >= 0 && n < (ssize_t)sizeof p) return *why = "was truncated by another process", -EINVAL;
    if (n < 0) return *why = "cannot be read", -EINVAL;
    if (p.f.magic != DSP_LEDGER_MAGIC || p.f.version != DSP_LEDGER_VERSION ||
        p.f.shmid != c->shmid || p.f.nonce != c->nonce)
        return *why = "was overwritten by another process", -EINVAL;
    return dsp_ledger_check(c->map, (unsigned)geteuid(), c->ram, why);
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
    /* Before the slot is touched: no slot ever holds more than the cap and
     * one request within it (dsp_ledger_check's measure of sense). */
    if (len > cap) return -ENOSPC;
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
