/* A test double of libcufile.so.0 in compat mode (no nvidia-fs), for machines
 * without a GPU. It enforces what the shim must preserve:
 * - calls before cuFileDriverOpen (or after the last close) fail with
 *   CU_FILE_DRIVER_NOT_INITIALIZED (cuFileRead/Write return its negation);
 * - cuFileHandleRegister takes an open fd of type OPAQUE_FD, once
 *   (CU_FILE_HANDLE_ALREADY_REGISTERED);
 * - cuFileBufRegister fails on any overlap with a registered range
 *   (CU_FILE_MEMORY_ALREADY_REGISTERED); cuFileBufDeregister takes the exact
 *   registered base, else CU_FILE_MEMORY_NOT_REGISTERED;
 * - cuFileRead/Write use a registration only when called with its exact base
 *   (buf_off within it), and then move data straight to the buffer; any other
 *   buffer is staged through the double's own bounce buffer, then copied, and
 *   the staged bytes are counted (fakecufile_staged());
 * - I/O errors return -1 with errno, short reads at end of file their count;
 *   invalid arguments, and I/O running past a registration or a device
 *   allocation, return -CU_FILE_INVALID_VALUE;
 * - the last cuFileDriverClose deregisters what is still registered by calling
 *   its own export cuFileBufDeregister through the PLT, as libcufile calls
 *   its exports (a shim that takes a lock there without a re-entry guard
 *   deadlocks), counting failures (fakecufile_close_failures()).
 * - fakecufile_call_back(1) arms a library that calls back: cuFileBufRegister,
 *   cuFileBufDeregister and cuFileDriverClose each, before returning, run a
 *   thread that calls cuFileHandleDeregister(NULL) through the PLT (a
 *   preloaded shim's hook answers) and join it, counting
 *   (fakecufile_called_back()): a shim holding its lock across the call
 *   deadlocks there.
 * Device memory is the libcuda double's (tests/cuda/fake_cuda.c, linked):
 * fakecu_find_device() tells its allocations. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"
#include "fake_cuda.h" /* fakecu_find_device */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXH   256
#define MAXREG 4096
#define STAGE  (4u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int open_count;
static struct fh { int fd, live; } hs[MAXH];
static struct {
    uintptr_t base;
    size_t len;
} regs[MAXREG];
static int nreg;

enum { C_OPEN, C_CLOSE, C_HREG, C_HDEREG, C_BREG, C_BDEREG, C_READ, C_WRITE, C_N };
static const char *const cname[C_N] = {
    "cuFileDriverOpen",  "cuFileDriverClose",   "cuFileHandleRegister", "cuFileHandleDeregister",
    "cuFileBufRegister", "cuFileBufDeregister", "cuFileRead",           "cuFileWrite"};
static _Atomic int counts[C_N];
static _Atomic long long staged, direct;
static _Atomic int close_failures, register_failures;

int fakecufile_count(const char *name) {
    for (int i = 0; i < C_N; i++)
        if (!strcmp(name, cname[i])) return atomic_load(&counts[i]);
    return -1;
}
long long fakecufile_staged(void) {
    return atomic_load(&staged);
}
long long fakecufile_direct(void) {
    return atomic_load(&direct);
}
int fakecufile_close_failures(void) {
    return atomic_load(&close_failures);
}
int fakecufile_register_failures(void) {
    return atomic_load(&register_failures);
}
/* The length registered at exactly base, or 0. */
size_t fakecufile_registered(const void *base) {
    size_t len = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nreg; i++)
        if (regs[i].base == (uintptr_t)base) len = regs[i].len;
    pthread_mutex_unlock(&mu);
    return len;
}
int fakecufile_nregistered(void) {
    pthread_mutex_lock(&mu);
    int n = nreg;
    pthread_mutex_unlock(&mu);
    return n;
}

static _Atomic int call_back_on, called_back;

void fakecufile_call_back(int on) {
    atomic_store(&call_back_on, on);
}
int fakecufile_called_back(void) {
    return atomic_load(&called_back);
}
static void *call_back_main(void *arg) {
    (void)arg;
    cuFileHandleDeregister(NULL);
    atomic_fetch_add(&called_back, 1);
    return NULL;
}
static void call_back(void) {
    pthread_t t;
    if (atomic_load(&call_back_on) && pthread_create(&t, NULL, call_back_main, NULL) == 0)
        pthread_join(t, NULL);
}

static CUfileError_t status(int err) {
    return (CUfileError_t){err, 0};
}

CUfileError_t cuFileDriverOpen(void) {
    atomic_fetch_add(&counts[C_OPEN], 1);
    pthread_mutex_lock(&mu);
    open_count++;
    pthread_mutex_unlock(&mu);
    return status(CU_FILE_SUCCESS);
}

/* As cuFile's: how many opens are not closed yet. */
long cuFileUseCount(void) {
    pthread_mutex_lock(&mu);
    long n = open_count;
    pthread_mutex_unlock(&mu);
    return n;
}

CUfileError_t cuFileDriverClose_v2(void) {
    atomic_fetch_add(&counts[C_CLOSE], 1);
    pthread_mutex_lock(&mu);
    if (open_count == 0) {
        pthread_mutex_unlock(&mu);
        return status(CU_FILE_DRIVER_NOT_INITIALIZED);
    }
    int last = --open_count == 0;
    uintptr_t left[64];
    int n = 0;
    for (int i = 0; last && i < nreg && n < 64; i++) left[n++] = regs[i].base;
    if (last)
        for (int i = 0; i < MAXH; i++) hs[i].live = 0;
    open_count += last; /* still open while it deregisters */
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++)
        if (cuFileBufDeregister((const void *)left[i]).err != CU_FILE_SUCCESS)
            atomic_fetch_add(&close_failures, 1);
    pthread_mutex_lock(&mu);
    open_count -= last;
    nreg = last ? 0 : nreg;
    pthread_mutex_unlock(&mu);
    call_back();
    return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverClose(void) {
    return cuFileDriverClose_v2();
}

CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr) {
    atomic_fetch_add(&counts[C_HREG], 1);
    if (!fh || !descr) return status(CU_FILE_INVALID_VALUE);
    if (descr->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD) return status(CU_FILE_INVALID_FILE_TYPE);
    if (fcntl(descr->handle.fd, F_GETFL) < 0) return status(CU_FILE_INVALID_VALUE);
    CUfileError_t rc = status(CU_FILE_INTERNAL_ERROR);
    pthread_mutex_lock(&mu);
    if (!open_count) {
        rc = status(CU_FILE_DRIVER_NOT_INITIALIZED);
        goto out;
    }
    for (int i = 0; i < MAXH; i++)
        if (hs[i].live && hs[i].fd == descr->handle.fd) {
            rc = status(CU_FILE_HANDLE_ALREADY_REGISTERED);
            goto out;
        }
    for (int i = 0; i < MAXH; i++)
        if (!hs[i].live) {
            hs[i] = (struct fh){descr->handle.fd, 1};
            *fh = &hs[i];
            rc = status(CU_FILE_SUCCESS);
            break;
        }
out:
    pthread_mutex_unlock(&mu);
    return rc;
}

void cuFileHandleDeregister(CUfileHandle_t fh) {
    atomic_fetch_add(&counts[C_HDEREG], 1);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXH; i++)
        if (fh == &hs[i]) hs[i].live = 0;
    pthread_mutex_unlock(&mu);
}

CUfileError_t cuFileBufRegister(const void *base, size_t len, int flags) {
    atomic_fetch_add(&counts[C_BREG], 1);
    (void)flags;
    CUfileError_t rc = status(CU_FILE_SUCCESS);
    pthread_mutex_lock(&mu);
    uintptr_t b = (uintptr_t)base;
    if (!open_count) {
        rc = status(CU_FILE_DRIVER_NOT_INITIALIZED);
    } else if (!base || !len) {
        rc = status(CU_FILE_INVALID_VALUE);
    } else {
        for (int i = 0; i < nreg; i++)
            if (regs[i].base < b + len && b < regs[i].base + regs[i].len)
                rc = status(CU_FILE_MEMORY_ALREADY_REGISTERED);
        if (rc.err == CU_FILE_SUCCESS && nreg == MAXREG) rc = status(CU_FILE_INTERNAL_ERROR);
        if (rc.err == CU_FILE_SUCCESS) {
            regs[nreg].base = b;
            regs[nreg].len = len;
            nreg++;
        }
    }
    pthread_mutex_unlock(&mu);
    if (rc.err != CU_FILE_SUCCESS) atomic_fetch_add(&register_failures, 1);
    call_back();
    return rc;
}

CUfileError_t cuFileBufDeregister(const void *base) {
    atomic_fetch_add(&counts[C_BDEREG], 1);
    CUfileError_t rc = status(CU_FILE_MEMORY_NOT_REGISTERED);
    pthread_mutex_lock(&mu);
    if (!open_count) rc = status(CU_FILE_DRIVER_NOT_INITIALIZED);
    for (int i = 0; open_count && i < nreg; i++)
        if (regs[i].base == (uintptr_t)base) {
            regs[i] = regs[--nreg];
            rc = status(CU_FILE_SUCCESS);
            break;
        }
    pthread_mutex_unlock(&mu);
    call_back();
    return rc;
}

/* Moves up to n bytes at off; stops at end of file. Misaligned I/O on an
 * O_DIRECT fd goes through a buffered descriptor of the same file, as compat
 * mode handles it. */
static ssize_t posix_io(int fd, int wr, char *p, size_t n, off_t off) {
    size_t done = 0;
    int bfd = -1;
    while (done < n) {
        int use = bfd >= 0 ? bfd : fd;
        ssize_t r = wr ? pwrite(use, p + done, n - done, off + (off_t)done)
                       : pread(use, p + done, n - done, off + (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EINVAL && bfd < 0) {
            int fl = fcntl(fd, F_GETFL);
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            if (fl >= 0 && (fl & O_DIRECT) && (bfd = open(path, fl & O_ACCMODE)) >= 0) continue;
            errno = EINVAL;
        }
        if (r < 0) {
            int e = errno;
            if (bfd >= 0) close(bfd);
            errno = e;
            return done ? (ssize_t)done : -1;
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    if (bfd >= 0) close(bfd);
    return (ssize_t)done;
}

/* The calling thread's bounce buffer, aligned for O_DIRECT, freed at thread
 * exit. */
static pthread_key_t stage_key;
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;
static void stage_key_init(void) {
    pthread_key_create(&stage_key, free);
}
static char *bounce(void) {
    pthread_once(&stage_once, stage_key_init);
    char *b = pthread_getspecific(stage_key);
    if (!b && posix_memalign((void **)&b, 4096, STAGE) == 0) pthread_setspecific(stage_key, b);
    return b;
}

static ssize_t io(CUfileHandle_t fh, int wr, char *base, size_t size, off_t file_off,
                  off_t buf_off) {
    atomic_fetch_add(&counts[wr ? C_WRITE : C_READ], 1);
    if (!base || file_off < 0 || buf_off < 0) return -CU_FILE_INVALID_VALUE;
    int fd = -1;
    ssize_t reg_len = -1;
    pthread_mutex_lock(&mu);
    int opened = open_count > 0;
    for (int i = 0; i < MAXH; i++)
        if (fh == &hs[i] && hs[i].live) fd = hs[i].fd;
    for (int i = 0; i < nreg; i++)
        if (regs[i].base == (uintptr_t)base) reg_len = (ssize_t)regs[i].len;
    pthread_mutex_unlock(&mu);
    if (!opened) return -CU_FILE_DRIVER_NOT_INITIALIZED;
    if (fd < 0) return -CU_FILE_HANDLE_NOT_REGISTERED;
    if (size == 0) return 0;
    char *p = base + buf_off;
    uintptr_t dbase;
    size_t dlen;
    unsigned long long id;
    if (reg_len < 0 && fakecu_find_device((uintptr_t)p, &dbase, &dlen, &id) &&
        size > dlen - ((uintptr_t)p - dbase))
        return -CU_FILE_INVALID_VALUE; /* runs past its device allocation */
    if (reg_len >= 0) {                /* registered: straight to the buffer */
        if ((size_t)buf_off > (size_t)reg_len || size > (size_t)reg_len - (size_t)buf_off)
            return -CU_FILE_INVALID_VALUE;
        ssize_t r = posix_io(fd, wr, p, size, file_off);
        if (r > 0) atomic_fetch_add(&direct, r);
        return r;
    }
    /* Staged through the bounce buffer (aligned, so O_DIRECT fds work). */
    char *stage = bounce();
    if (!stage) return -CU_FILE_INTERNAL_ERROR;
    size_t done = 0;
    while (done < size) {
        size_t n = size - done < STAGE ? size - done : STAGE;
        if (wr) memcpy(stage, p + done, n);
        ssize_t r = posix_io(fd, wr, stage, n, file_off + (off_t)done);
        if (r < 0) return done ? (ssize_t)done : -1;
        if (!wr) memcpy(p + done, stage, (size_t)r);
        atomic_fetch_add(&staged, r);
        done += (size_t)r;
        if ((size_t)r < n) break;
    }
    return (ssize_t)done;
}

ssize_t cuFileRead(CUfileHandle_t fh, void *base, size_t size, off_t file_off, off_t buf_off) {
    return io(fh, 0, base, size, file_off, buf_off);
}

/* cuFileRead under a name the shim does not serve: bench/cufile_bench
 * reaches the double past the shim with it, now that the shim's dlsym hook
 * answers cuFile names looked up on libcufile's own handle too (KvikIO's
 * way, issue 15). */
ssize_t fake_cufile_read_direct(CUfileHandle_t fh, void *base, size_t size, off_t file_off,
                                off_t buf_off) {
    return io(fh, 0, base, size, file_off, buf_off);
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
                    off_t buf_off) {
    return io(fh, 1, (char *)base, size, file_off, buf_off);
}
