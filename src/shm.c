/* Served memory as the driver's (issue 13; docs/internals.md, "The driver's
 * memory and fork"): cudaHostAlloc memory is MAP_SHARED and VM_DONTDUMP, so a
 * forked child shares it and fork copies nothing, where private memory that
 * the driver pins (FOLL_PIN) is copied page by page at every fork (a fork
 * with 2 GiB took 866 ms here instead of 0.6 ms).
 *
 * One memfd backs every served block, each mapped at the file offset equal to
 * its own address: neighbouring blocks then have consecutive offsets and
 * merge into one VMA as anonymous ones do (issue 12), and an offset is never
 * used by two blocks at once. Dropping a block punches its pages out of the
 * file before unmapping it (unmapping alone would leave them in it).
 *
 * After fork the child's copy of the descriptor is closed and the spans it
 * inherited are FOREIGN: freeing them there only unmaps, so a child never
 * punches the parent's memory. The program may close our descriptor and reuse
 * its number: every use checks the file's identity first, so a punch or map
 * never reaches a file of the program's. */
#include "errname.h"
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Offsets are user addresses: the file spans the whole user range (aarch64
 * places mappings above 2^47; shmem files may be that large, and the size
 * commits nothing). */
#define FILE_LEN ((off_t)DSP_USER_VA_END)

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

static int same_file(struct dsp_manager *m, int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == m->shm_dev &&
           (uint64_t)st.st_ino == m->shm_ino;
}

/* Why served memory cannot be shared here: logged once, then private; 0, the
 * answer of dsp_shm_ready. */
static int unavailable(struct dsp_manager *m, const char *why, int err) {
    m->shm_state = -1;
    dsp_once(DSP_LOG_INFO,
             "served pinned memory is private memory (%s: %s): forked children get a copy "
             "of it, not the parent's pages",
             why, dsp_errname(err));
    return 0;
}

/* 1 when the memfd is open now, else 0 (logged). */
static int open_file(struct dsp_manager *m) {
    struct rlimit fs;
    /* Growing a file past RLIMIT_FSIZE raises SIGXFSZ, which kills. */
    if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY &&
        fs.rlim_cur < (rlim_t)FILE_LEN)
        return unavailable(m, "RLIMIT_FSIZE is finite", EFBIG);
    int fd = (int)syscall(SYS_memfd_create, "dspreload", MFD_CLOEXEC);
    if (fd < 0) return unavailable(m, "memfd_create", errno);
    struct stat st;
    if (ftruncate(fd, FILE_LEN) != 0 || fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return unavailable(m, "ftruncate", err);
    }
    m->shm_dev = (uint64_t)st.st_dev;
    m->shm_ino = (uint64_t)st.st_ino;
    m->shm_fd1 = fd + 1;
    return 1;
}

int dsp_shm_ready(struct dsp_manager *m) {
    if (m->shm_state < 0) return 0;
    if (m->shm_fd1 && same_file(m, m->shm_fd1 - 1)) return 1;
    if (m->shm_fd1)
        dsp_once(DSP_LOG_WARN, "the program closed the descriptor of served pinned memory; "
                               "opening another");
    m->shm_fd1 = 0;
    return open_file(m);
}

int dsp_shm_map(struct dsp_manager *m, const struct dsp_span *s) {
    int fd = m->shm_fd1 - 1;
    void *base = (void *)s->base;
    if (fd < 0 || s->base + s->len > (uintptr_t)FILE_LEN || !same_file(m, fd)) return -EBADF;
    if (mmap(base, s->len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, fd, (off_t)s->base) ==
        MAP_FAILED)
        return -errno;
    syscall(SYS_madvise, base, s->len, MADV_DONTDUMP); /* as the driver's VM_DONTDUMP */
    return 0;
}

/* Through the mapping, not the descriptor: MADV_REMOVE punches whatever
 * file the range maps, so a descriptor the program closed (or whose number
 * it reused) never matters; it refuses locked ranges, hence the munlock.
 * The descriptor is the fallback (a range the program made read-only). */
void dsp_shm_punch(struct dsp_manager *m, const struct dsp_span *s) {
    if (s->shared != DSP_SHARED_OURS) return;
    void *base = (void *)s->base;
    syscall(SYS_munlock, base, s->len);
    if (syscall(SYS_madvise, base, s->len, MADV_REMOVE) == 0) return;
    int fd = m->shm_fd1 - 1;
    if (fd >= 0 && same_file(m, fd))
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)s->base, (off_t)s->len);
}

void dsp_shm_fork_child(struct dsp_manager *m) {
    if (m->shm_fd1 && same_file(m, m->shm_fd1 - 1)) close(m->shm_fd1 - 1);
    m->shm_fd1 = 0; /* this process's own served blocks get a file of its own */
    for (struct dsp_span *s = m->first; s; s = s->anext)
        if (s->shared) s->shared = DSP_SHARED_FOREIGN;
}
