/* A rank of a job started by a real launcher (tests/launchers): pins two
 * buffers through the shim's dsp_alloc when it is preloaded (posix_memalign
 * when it is not, so that the same binary runs without the shim), fills one
 * with a pattern of its rank, and prints a checksum of what it receives.
 * With MPI (RANK_PIN_MPI) the ranks swap buffers with MPI_Sendrecv; without
 * (srun: SLURM_PROCID, SLURM_NTASKS), each checks its own, and the barriers are
 * files in the directory RANK_PIN_SYNC. Then, while every rank still holds its
 * blocks (between two barriers), it prints what the shim's statistics say of
 * the node ledger, so the test sees that the ranks shared one. Lines:
 *   rank R checksum C       the same with and without the shim
 *   pid rank R P            which stats file is whose
 *   node rank R users U pinned B cap C    only under the shim */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_number.h"
#ifdef RANK_PIN_MPI
#include <mpi.h>
#endif

/* Two blocks a rank fit the 8 MiB RLIMIT_MEMLOCK a non-root user commonly has. */
#define SIZE (2u << 20)

static void *(*pin_alloc)(size_t);
static int (*pin_free)(void *);
static int (*stats_json)(char *, size_t);

static void *get(size_t n) {
    if (pin_alloc) {
        void *p = pin_alloc(n);
        if (!p) {
            perror("dsp_alloc");
            exit(1);
        }
        return p;
    }
    void *p = NULL;
    if (posix_memalign(&p, 4096, n)) {
        fputs("posix_memalign failed\n", stderr);
        exit(1);
    }
    return p;
}

static void put(void *p) {
    if (pin_free)
        pin_free(p);
    else
        free(p);
}

static int rank, size = 1;

static void barrier(const char *name) {
#ifdef RANK_PIN_MPI
    (void)name;
    MPI_Barrier(MPI_COMM_WORLD);
#else
    const char *dir = getenv("RANK_PIN_SYNC");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, rank);
    FILE *f = fopen(path, "w");
    if (!f || fclose(f)) {
        perror(path);
        exit(1);
    }
    for (int r = 0, waited = 0; r < size; waited++) { /* 120 s at most */
        snprintf(path, sizeof path, "%s/%s.%d", dir, name, r);
        if (access(path, F_OK) == 0) {
            r++;
            continue;
        }
        if (waited > 12000) {
            fprintf(stderr, "rank %d: no %s after 120 s\n", rank, path);
            exit(1);
        }
        usleep(10000);
    }
#endif
}

int main(int argc, char **argv) {
#ifdef RANK_PIN_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#else
    (void)argc, (void)argv;
    const char *r = getenv("SLURM_PROCID"), *n = getenv("SLURM_NTASKS");
    rank = r ? atoi(r) : 0;
    size = n ? atoi(n) : 1;
#endif
    pin_alloc = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    pin_free = (int (*)(void *))dlsym(RTLD_DEFAULT, "dsp_free");
    stats_json = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "dsp_stats_json");

    unsigned char *out = get(SIZE), *in = get(SIZE);
    for (size_t i = 0; i < SIZE; i++) out[i] = (unsigned char)(rank * 131 + i * 7 + (i >> 12));
    int from = rank;
#ifdef RANK_PIN_MPI
    int peer = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Sendrecv(out, SIZE, MPI_BYTE, peer, 0, in, SIZE, MPI_BYTE, prev, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    from = prev;
#else
    memcpy(in, out, SIZE);
#endif
    uint64_t h = 1469598103934665603ull; /* FNV-1a over what came in */
    for (size_t i = 0; i < SIZE; i++) h = (h ^ in[i]) * 1099511628211ull;
    printf("rank %d checksum %016llx from rank %d\n", rank, (unsigned long long)h, from);
    printf("pid rank %d %d\n", rank, (int)getpid());
    fflush(stdout);

    barrier("pinned"); /* every rank has pinned its blocks */
    if (stats_json) {  /* a missing statistic prints -1, which the test refuses */
        printf("node rank %d users %lld pinned %lld cap %lld\n", rank,
               dsp_stat_from(stats_json, "node_users"),
               dsp_stat_from(stats_json, "node_pinned_bytes"),
               dsp_stat_from(stats_json, "node_cap_bytes"));
        fflush(stdout);
    }
    barrier("looked"); /* no rank frees before every rank has looked */
    put(in);
    put(out);
#ifdef RANK_PIN_MPI
    MPI_Finalize();
#endif
    return 0;
}
