/* The node ledger (issue 16): shared memory that every process of a user, in
 * one memory cgroup, consults before it pins, so that their sum stays under
 * one cap (docs/design.md, "The node ledger"; docs/node-ledger.md).
 *
 * The mechanism only: the file, the shared memory, its slots and the atomics.
 * What a process does with it (options, the wait, pool yield, fork) is
 * node.c's.
 *
 * Two objects (issue 34). The counters live in a System V shared memory
 * segment, which no process can shrink: a file mapping faults with SIGBUS
 * past the end of a file that another process truncated, and that killed
 * every user of the ledger. The file in /dev/shm only names the segment (its
 * id and a nonce, read and written with pread/pwrite, which cannot fault)
 * and carries the slots' locks. The segment is marked for removal as soon as
 * it is made: it lives while a process has it attached, and Linux lets others
 * attach it by id until then.
 *
 * Proof sketch of the cap. Every process adds to its own slot's `reserved`
 * first (a seq_cst fetch_add), then sums every slot (seq_cst loads) and takes
 * the bytes back when the sum passes the cap. Of any set of reservations held
 * at once, the last in the single total order of seq_cst operations loaded
 * every other one's increment (they came before its own loads), so the sum
 * it saw, at most the cap, bounds what they hold together. Two reservations
 * racing may both back off, never both pass. A crash leaves only its own
 * slot's figure, which the reclaimer zeroes: there is no shared total to
 * repair.
 *
 * Liveness is the kernel's, not a pid: each owner holds an open-file-
 * description lock (F_OFD_SETLK) on one byte of the file, its slot's index.
 * The kernel drops it when that open file goes away, its last descriptor
 * closed and the file's mapping gone: exit, SIGKILL, the OOM killer, or exec
 * (the descriptor is O_CLOEXEC). Closing the descriptor alone does not: a
 * PROT_NONE mapping of the file, never touched, keeps the open file, and so
 * the lock. A reclaimer that can take the byte's lock itself knows the owner
 * is gone whatever pid reuse did, and holds the slot while it zeroes it.
 *
 * What another process of the user writes is not believed: the file is
 * compared with what this process joined at the once-a-second check, and
 * the segment's counters are checked for sense there and at each refusal
 * (dsp_ledger_verify); nonsense means the process stops using the ledger. */
#ifndef DSP_LEDGER_H
#define DSP_LEDGER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DSP_LEDGER_MAGIC 0x52474c44505344ull /* "DSPLGR" */
/* The format: 1 was the counters mapped from the file (before issue 34); a
 * process meeting another format refuses the ledger, naming both. */
#define DSP_LEDGER_VERSION 2
#define DSP_LEDGER_SLOTS   256
#define DSP_LEDGER_KEY_MAX 200

/* One process, 64 bytes. state, reserved and trim_req are the protocol; the
 * rest is for people (dspreload stats --node) and for yield requests. */
struct dsp_ledger_slot {
    _Atomic uint32_t state;    /* 0 free, 1 used (its owner holds the byte's lock) */
    int32_t pid;               /* as the owner sees itself */
    uint64_t start;            /* /proc/self/stat field 22: clock ticks since boot */
    _Atomic uint64_t reserved; /* bytes pinned by the owner, counted against the cap */
    _Atomic uint64_t pooled;   /* of those, idle in its pools (refreshed by its timer) */
    _Atomic uint64_t refused;  /* reservations the node cap refused it */
    _Atomic uint64_t trim_req; /* bumped by others: "give back your pool" */
    int32_t rank, local_rank;  /* RANK, LOCAL_RANK; -1 when unset */
    _Atomic uint64_t cap;      /* the node cap as the owner applies it */
};

struct dsp_ledger_head {
    uint64_t magic; /* written last by the initialiser */
    uint32_t version, layout, nslots, slot_size;
    uint32_t uid;
    _Atomic uint32_t hwm;   /* slots at or past this index were never used */
    _Atomic uint32_t users; /* slots used, dead ones included until reclaimed */
    _Atomic uint64_t cap;   /* set by the process that found the ledger without users */
    uint64_t nonce;         /* the file's: which segment the file names */
    char key[DSP_LEDGER_KEY_MAX];
};

struct dsp_ledger_map {
    union {
        struct dsp_ledger_head h;
        char page[4096];
    } head;
    struct dsp_ledger_slot slot[DSP_LEDGER_SLOTS];
};

/* The file's content, one page, read and written with pread and pwrite only.
 * magic and version sit where format 1 had them, so that every format can
 * tell another one apart and name it. */
struct dsp_ledger_file {
    uint64_t magic; /* 0 in a file whose creator died before writing it */
    uint32_t version, layout;
    uint32_t uid;
    int32_t shmid;    /* the segment's System V id */
    uint64_t nonce;   /* also in the segment's header: an id reused for another segment is told */
    char release[16]; /* the dspreload that wrote it, for the warnings */
    char key[DSP_LEDGER_KEY_MAX];
};
#define DSP_LEDGER_FILE_SIZE 4096

/* A process's handle: the descriptor (whose open file holds the slot's
 * lock), the segment attached, the file's mapping that keeps the open file,
 * and the slot claimed (-1: none). */
struct dsp_ledger_conn {
    int fd;
    struct dsp_ledger_map *map; /* the segment */
    void *keep;                 /* PROT_NONE: never touched, so never a SIGBUS */
    int slot;
    int shmid;
    uint64_t nonce;
    uint64_t ram;                /* the machine's, the measure of sense */
    unsigned long long dev, ino; /* of the file fd was opened on */
    char why[160];               /* a refusal's reason, when it has numbers in it */
};

/* 1 when c->fd is still the ledger's descriptor, else 0: a program that
 * closes descriptors it does not own (closefrom) may reuse the number for a
 * file of its own, which the slots' byte locks must never reach. (The slot's
 * own lock stays: the mapping keeps the open file.) One fstat. */
int dsp_ledger_fd_ok(const struct dsp_ledger_conn *c);

/* 64-bit FNV-1a of the first n bytes of s (up to its NUL). */
uint64_t dsp_ledger_hash(const char *s, size_t n);
/* /dev/shm/dspreload-<uid>-<hash of key> into out (cap bytes). */
void dsp_ledger_path(char *out, size_t cap, const char *dir, unsigned uid, const char *key);

/* Opens or creates the ledger at path for key, cap being the node cap this
 * process would set on a ledger without users. 0, or a negative errno with
 * *why (a phrase naming the reason, valid while c is) and *err (the errno
 * that applied, 0 when none did: the return is -EINVAL then, for a file not
 * to use); never follows a symbolic link, and refuses anything but a regular
 * file of this euid, writable by it alone, of the exact size, with this
 * format, layout and key, naming a segment of this user whose counters make
 * sense. A file naming a segment that is gone (its last user exited) gets a
 * new one. No slot is claimed. */
int dsp_ledger_open(struct dsp_ledger_conn *c, const char *path, const char *key, uint64_t cap,
                    const char **why, int *err);
void dsp_ledger_close(struct dsp_ledger_conn *c); /* leaves the slot first */
/* Detaches the segment and unmaps the file, leaving the slot and the
 * descriptor as they are (a fork child's copies). */
void dsp_ledger_unmap(struct dsp_ledger_conn *c);

/* Whether what this process joined is still there and makes sense: the file
 * still names its segment (not truncated or overwritten by another process),
 * and the segment passes dsp_ledger_check. 0, or -EINVAL with *why. One
 * pread and a scan of the used slots: at the once-a-second check and at
 * refusals, never per pin. */
int dsp_ledger_verify(struct dsp_ledger_conn *c, const char **why);

/* Claims a free slot (reclaiming a dead owner's on the way): 0, or -EBUSY
 * when all are held by live processes. */
int dsp_ledger_claim(struct dsp_ledger_conn *c, int rank, int local_rank, uint64_t cap);
/* Gives the slot back (its bytes with it): at exit. */
void dsp_ledger_leave(struct dsp_ledger_conn *c);

/* Adds len to the own slot if the sum over all slots stays within cap and,
 * once that sum passes cap - cap/8, the own slot within cap/users (the fair
 * share: docs/node-ledger.md, "The policy"). 0, or -ENOSPC (nothing changed). */
int dsp_ledger_try_reserve(struct dsp_ledger_conn *c, uint64_t len, uint64_t cap);
void dsp_ledger_sub(struct dsp_ledger_conn *c, uint64_t len);

/* Sum of every slot's reserved (saturating). */
uint64_t dsp_ledger_total(const struct dsp_ledger_map *m);
/* Zeroes and frees the slots whose owners are gone: the bytes taken back. */
uint64_t dsp_ledger_reclaim(struct dsp_ledger_conn *c);
/* Asks every other live slot that pools bytes to give them back: the pooled
 * bytes asked for (0: nobody had any). */
uint64_t dsp_ledger_ask_yield(struct dsp_ledger_conn *c);

/* Whether any slot's byte is locked (a live process uses the file): 1 or 0;
 * 1 also when fcntl fails (unknown counts as used). One fcntl. */
int dsp_ledger_in_use(int fd);
/* Whether slot i's owner still holds its lock (fd: any descriptor of the
 * file, read-only will do). 1 alive, 0 gone, or -errno of fcntl (unknown). */
int dsp_ledger_slot_alive(int fd, int i);
/* Checks a segment's header and counters for sense (also the launcher's
 * read-only view): the format, layout and uid; users and hwm at most the slot
 * count; a cap neither 0 nor over ram; slots in state 0 or 1, none holding
 * more than twice ram (its pins within the cap, and one request in flight of
 * at most the cap). ram 0: not checked. 0, or -EINVAL with *why. */
int dsp_ledger_check(const struct dsp_ledger_map *m, unsigned uid, uint64_t ram, const char **why);

/* Reads and checks a ledger file's page (the launcher's view): 0 with *f;
 * -EPROTO (another format, or another build's layout), -ENODATA (a page of
 * zeros: its creator died before writing it) or -EINVAL (anything else
 * wrong) with *why (out: room for a reason with numbers, at least 160
 * bytes); or -errno of pread. */
int dsp_ledger_read_file(int fd, struct dsp_ledger_file *f, unsigned uid, char *out,
                         const char **why);
/* Attaches the segment f names, read-only (rdonly) or not: the address, or
 * NULL when it is gone or is not this user's segment of f's nonce. */
struct dsp_ledger_map *dsp_ledger_attach(const struct dsp_ledger_file *f, unsigned uid, int rdonly);

#endif
