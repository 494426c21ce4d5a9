/* Four threads read at random into pinned host memory (aligned or not, one
 * fd with O_DIRECT, one without) and into six device allocations that do not
 * all fit the registration cache (10M for 6 x 4M), so registrations are made
 * and released while other threads read through them. Every byte is checked;
 * cuFile never sees a buffer registered twice nor a deregistration in use. */
#include "cufile_test.h"

#include <pthread.h>

#define MiB   (1u << 20)
#define NDEV  6
#define ITERS 200

static CUfileHandle_t fh[2];
static char *dev[NDEV];

static void *worker(void *arg) {
    size_t me = (size_t)(uintptr_t)arg;
    unsigned seed = (unsigned)me * 7919u + 1;
    char *h = pinned(2 * MiB);
    for (int i = 0; i < ITERS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 8) % (MiB / 2 - 4096);
        size_t off = (seed >> 4) % (7 * MiB);
        size_t boff = (seed & 1) ? (seed >> 12) % 4096 : 0;
        if (seed & 2) off &= ~(size_t)4095;
        CUfileHandle_t f = fh[(seed >> 3) & 1];
        if ((seed >> 5) % 3 == 0) {
            /* Threads share allocations, each in its own quarter. */
            char *d = dev[(seed >> 7) % NDEV];
            boff += me * MiB;
            ssize_t r = cuFileRead(f, d, n, (off_t)off, (off_t)boff);
            if (r != (ssize_t)n || !same(d + boff, n, off, 11)) {
                fprintf(stderr, "FAIL device read %zd of %zu\n", r, n);
                exit(1);
            }
        } else {
            ssize_t r = cuFileRead(f, h, n, (off_t)off, (off_t)boff);
            if (r != (ssize_t)n || !same(h + boff, n, off, 11)) {
                fprintf(stderr, "FAIL host read %zd of %zu at %zu+%zu\n", r, n, off, boff);
                exit(1);
            }
        }
    }
    return NULL;
}

int main(void) {
    OPEN_DRIVER();
    int wfd = make_file("/tmp", 8 * MiB, 11);
    int dfd = reopen(wfd, O_RDONLY | O_DIRECT);
    fh[0] = handle_of(wfd);
    fh[1] = handle_of(dfd);
    for (int i = 0; i < NDEV; i++) dev[i] = device(4 * MiB);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(fakecufile_register_failures() == 0, "nothing registered twice");
    CHECK(fakecufile_nregistered() <= 2, "the cache kept its bound (10M: two of 4M)");
    CHECK(stat_of("cufile_autoregistered") > NDEV, "registrations were released and made again");
    /* Each device allocation, read alone now, holds the file's bytes. */
    for (int i = 0; i < NDEV; i++) {
        CHECK(cuFileRead(fh[i & 1], dev[i], 4 * MiB, MiB, 0) == 4 * MiB);
        CHECK(same(dev[i], 4 * MiB, MiB, 11));
    }
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS && fakecufile_close_failures() == 0);
    PASS();
}
