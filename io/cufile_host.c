/* The I/O the shim does itself (io/cufile_host.h): a cuFileRead or
 * cuFileWrite into host memory the manager holds as pinned is a pread or
 * pwrite on the handle's file, straight into the caller's buffer, where cuFile
 * would stage it through its own bounce buffers. An fd opened with O_DIRECT
 * keeps it for the aligned middle; a misaligned head or tail goes through a
 * buffered descriptor of the same file (docs/io.md, "Host buffers: the I/O
 * done by the shim"). */
#include "cufile_host.h"
#include "fmt.h"
#include "internal.h"
#include "log.h"
#include "cufile_layer.h"
#include "dio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* Moves up to n bytes; stops early at end of file. Returns the bytes moved,
 * *err set to the errno of a failure (0 if none). */
static size_t xfer(int fd, int wr, char *p, size_t n, off_t off, int *err) {
    size_t done = 0;
    *err = 0;
    while (done < n) {
        size_t chunk = n - done > DSP_MAX_RW ? DSP_MAX_RW : n - done;
        ssize_t r = wr ? pwrite(fd, p + done, chunk, off + (off_t)done)
                       : pread(fd, p + done, chunk, off + (off_t)done);
        if (r < 0) {
            if (errno == EINTR) continue;
            *err = errno;
            break;
        }
        if (r == 0) break; /* end of file */
        done += (size_t)r;
    }
    return done;
}

/* A descriptor of hd's file without O_DIRECT, for misaligned pieces: opened
 * once per handle from /proc/self/fd, with the same access mode and sync
 * flags. -1 when that is refused. */
static int buffered_fd(struct dsp_cufile_handle *hd, int fl) {
    pthread_mutex_lock(&dsp_cufile_mu);
    int bfd = hd->bfd;
    pthread_mutex_unlock(&dsp_cufile_mu);
    if (bfd >= 0) return bfd;
    if (bfd == -2) return -1;
    char path[64];
    dsp_fmt(path, sizeof path, "/proc/self/fd/%d", hd->fd);
    int saved = errno;
    int nfd = open(path, (fl & (O_ACCMODE | O_SYNC | O_DSYNC)) | O_CLOEXEC);
    if (nfd < 0)
        dsp_once(DSP_LOG_WARN,
                 "cannot reopen fd %d without O_DIRECT (errno %d); misaligned cuFile I/O "
                 "into pinned memory goes to cuFile",
                 hd->fd, errno);
    errno = saved;
    pthread_mutex_lock(&dsp_cufile_mu);
    if (hd->bfd >= 0) { /* another thread was faster */
        if (nfd >= 0) close(nfd);
    } else {
        hd->bfd = nfd >= 0 ? nfd : -2;
    }
    bfd = hd->bfd;
    pthread_mutex_unlock(&dsp_cufile_mu);
    return bfd >= 0 ? bfd : -1;
}

ssize_t dsp_cufile_host_io(struct dsp_cufile_handle *hd, int wr, char *p, size_t size, off_t off) {
    int saved = errno;
    int fl = fcntl(hd->fd, F_GETFL);
    errno = saved;
    /* Anything cuFile answers with an error, or handles its own way, is its
     * to answer: a closed fd, the wrong access mode, O_APPEND. */
    if (fl < 0 || (fl & O_APPEND) || (fl & O_ACCMODE) == (wr ? O_RDONLY : O_WRONLY)) return -2;
    if ((uint64_t)off + size > (uint64_t)INT64_MAX) return -2;
    size_t head = 0, mid = 0;
    int dfd = -1, bfd = hd->fd;
    struct dsp_dio_align a = {0, 0};
    if (fl & O_DIRECT) {
        /* A file's alignment does not change: asked once per handle. */
        pthread_mutex_lock(&dsp_cufile_mu);
        int known = hd->align_ok;
        a = hd->align;
        pthread_mutex_unlock(&dsp_cufile_mu);
        if (!known) {
            if (dsp_dio_align(hd->fd, &a) != 0) return -2;
            pthread_mutex_lock(&dsp_cufile_mu);
            hd->align = a;
            hd->align_ok = 1;
            pthread_mutex_unlock(&dsp_cufile_mu);
        }
        size_t A = a.mem > a.off ? a.mem : a.off;
        /* Direct only where buffer and file offset can both be aligned. */
        /* A direct read past end of file zero-fills the buffer beyond what
         * it returns (docs/internals.md, "O_DIRECT alignment and end of
         * file"): the direct part stops at the last aligned offset before end
         * of file, the rest is read buffered (regression:
         * cufile_direct_eof_keeps_bytes). */
        struct stat st;
        uint64_t end = (uint64_t)off + size;
        if (!wr) {
            if (fstat(hd->fd, &st) != 0) return -2;
            if ((uint64_t)st.st_size < end) end = (uint64_t)st.st_size;
        }
        if ((((uintptr_t)p - (uintptr_t)off) & (A - 1)) == 0 && end > (uint64_t)off) {
            head = (A - ((uint64_t)off & (A - 1))) & (A - 1);
            if (head > size) head = size;
            if (end - (uint64_t)off > head) mid = (end - (uint64_t)off - head) & ~(uint64_t)(A - 1);
            dfd = hd->fd;
        }
        if (mid != size) {
            bfd = buffered_fd(hd, fl);
            if (bfd < 0) return -2;
        }
    }
    struct {
        int fd;
        size_t len;
    } seg[3] = {{bfd, head}, {dfd, mid}, {bfd, size - head - mid}};
    if (dfd < 0) seg[0].len = size, seg[1].len = seg[2].len = 0;
    size_t total = 0;
    int err = 0;
    for (int i = 0; i < 3 && !err; i++) {
        if (!seg[i].len) continue;
        size_t got = xfer(seg[i].fd, wr, p + total, seg[i].len, off + (off_t)total, &err);
        if (err == EINVAL && i == 1 && got == 0) {
            /* The file refused our alignment after all: the piece goes
             * buffered, no byte lost. */
            dsp_once(DSP_LOG_WARN,
                     "O_DIRECT I/O refused with EINVAL at the alignment the file reports "
                     "(%u/%u); doing it buffered",
                     a.mem, a.off);
            int b = buffered_fd(hd, fl);
            if (b < 0) {
                if (total == 0) return -2;
                break;
            }
            got = xfer(b, wr, p + total, seg[i].len, off + (off_t)total, &err);
        }
        total += got;
        if (!err && got < seg[i].len) break; /* end of file: short, as cuFile reports it */
    }
    if (err && total == 0) {
        errno = err;
        return -1;
    }
    errno = saved;
    return (ssize_t)total;
}
