/* The node ledger (issue 16): one file in shared memory that every process of
 * a user, in one memory cgroup, consults before it pins, so that their sum
 * stays under one cap (docs/design.md, "The node ledger").
 *
 * The mechanism only: the file, its slots and the atomics. What a process
 * does with it (options, the wait, pool yield, fork) is node.c's.
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
 * closed and its mapping gone: exit, SIGKILL, the OOM killer, or exec (the
 * descriptor is O_CLOEXEC). Closing the descriptor alone does not: the
 * mapping keeps the open file, and so the lock. A
 * reclaimer that can take the byte's lock itself knows the owner is gone
 * whatever pid reuse did, and holds the slot while it zeroes it. */
#ifndef DSP_LEDGER_H
#define DSP_LEDGER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DSP_LEDGER_MAGIC   0x52474c44505344ull /* "DSPLGR" */
#define DSP_LEDGER_VERSION 1
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
    char key[DSP_LEDGER_KEY_MAX];
};

struct dsp_ledger_map {
    union {
        struct dsp_ledger_head h;
        char page[4096];
    } head;
    struct dsp_ledger_slot slot[DSP_LEDGER_SLOTS];
};

/* A process's handle: the descriptor (whose open file holds the slot's
 * lock), the mapping and the slot claimed (-1: none). */
struct dsp_ledger_conn {
    int fd;
    struct dsp_ledger_map *map;
    int slot;
    unsigned long long dev, ino; /* of the file fd was opened on */
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
 * *why (a static phrase naming the reason) and *err (the errno that applied,
 * 0 when none did: the return is -EINVAL then, for a file not to use); never
 * follows a symbolic link, and refuses anything but a regular file of this
 * euid, writable by it alone, of the exact size, with this layout and key.
 * No slot is claimed. */
int dsp_ledger_open(struct dsp_ledger_conn *c, const char *path, const char *key, uint64_t cap,
                    const char **why, int *err);
void dsp_ledger_close(struct dsp_ledger_conn *c); /* leaves the slot first */

/* Claims a free slot (reclaiming a dead owner's on the way): 0, or -EBUSY
 * when all are held by live processes. */
int dsp_ledger_claim(struct dsp_ledger_conn *c, int rank, int local_rank, uint64_t cap);
/* Gives the slot back (its bytes with it): at exit. */
void dsp_ledger_leave(struct dsp_ledger_conn *c);

/* Adds len to the own slot if the sum over all slots stays within cap and,
 * once that sum passes cap - cap/8, the own slot within cap/users (the fair
 * share: see docs/design.md). 0, or -ENOSPC (nothing changed). */
int dsp_ledger_try_reserve(struct dsp_ledger_conn *c, uint64_t len, uint64_t cap);
void dsp_ledger_sub(struct dsp_ledger_conn *c, uint64_t len);

/* Sum of every slot's reserved (saturating). */
uint64_t dsp_ledger_total(const struct dsp_ledger_map *m);
/* Zeroes and frees the slots whose owners are gone: the bytes taken back. */
uint64_t dsp_ledger_reclaim(struct dsp_ledger_conn *c);
/* Asks every other live slot that pools bytes to give them back: the pooled
 * bytes asked for (0: nobody had any). */
uint64_t dsp_ledger_ask_yield(struct dsp_ledger_conn *c);

/* Whether slot i's owner still holds its lock (fd: any descriptor of the
 * file, read-only will do). 1 alive, 0 gone, or -errno of fcntl (unknown). */
int dsp_ledger_slot_alive(int fd, int i);
/* Checks a mapping's header (the launcher's read-only view): 0, or -EINVAL
 * with *why. */
int dsp_ledger_check(const struct dsp_ledger_map *m, unsigned uid, const char **why);

#endif
