/* 100,000 live hinted malloc(64K) (issue 12, "one VMA per block"): each block
 * was a map of its own, and at ~65,500 vm.max_map_count broke the whole
 * process. The maps must grow with the memory, not the block count, and the
 * process must keep working. Under LD_PRELOAD with DSP_MALLOC_MIN=64K. */
#include "malloc_test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#define N 100000

static int maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void *nothing(void *arg) {
    return arg;
}

static char *blocks[N];

int main(void) {
    size_t (*trim)(void) = (size_t(*)(void))shim("dsp_trim");
    int before = maps();
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(64 << 10);
        CHECK(blocks[i], "malloc %d", i);
        blocks[i][0] = (char)i;
        blocks[i][(64 << 10) - 1] = (char)~i;
    }
    CHECK(stat_of("malloc_hinted") >= N, "hinted %lld", stat_of("malloc_hinted"));
    int live = maps();
    fprintf(stderr, "%d live hinted blocks: %d maps above %d\n", N, live - before, before);
    CHECK(live <= before + 300, "%d live blocks took %d maps", N, live - before);
    char *big = malloc(64 << 20);
    CHECK(big);
    memset(big, 1, 64 << 20);
    free(big);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, nothing, NULL) == 0);
    pthread_join(t, NULL);
    void *h = dlopen("libm.so.6", RTLD_NOW);
    CHECK(h, "%s", dlerror());
    dlclose(h);
    for (int i = 0; i < N; i++) {
        CHECK(blocks[i][0] == (char)i && blocks[i][(64 << 10) - 1] == (char)~i, "block %d", i);
        free(blocks[i]);
    }
    CHECK(stat_of("malloc_hinted_bytes") == 0);
    trim();
    int after = maps();
    CHECK(after <= before + 8, "after free and dsp_trim: %d maps above %d", after - before, before);
    PASS();
}
