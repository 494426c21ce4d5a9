/* Regression (issue 13): a hinted block registered with the driver (the
 * program asked is_pinned(), so pin_memory() returned it as it is) is freed
 * while a copy from or into it is still queued: the driver treats it as
 * pinned memory, so the copy runs when its stream gets there. The shim
 * pooled the block at once, and the next cudaHostAlloc got it back: the new
 * owner's writes reached the device instead of the old data, and a late
 * device-to-host copy overwrote the new owner's data. Eviction (dsp_trim)
 * gave the pages back under a queued copy too. Now the new owner, or the
 * eviction, waits for the device first; free() itself never calls the
 * driver. The double runs copies on a stream thread, after a busy host
 * function. */
#include "cuda_test.h"

#include <dspreload.h>
#include <unistd.h>

typedef void *stream_t;
int cudaStreamCreate(stream_t *s);
int cudaStreamSynchronize(stream_t s);
int cudaMalloc(void **p, size_t n);
int cudaMemcpy(void *d, const void *s, size_t n, int kind);
int cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, stream_t st);
int cudaMemsetAsync(void *p, int v, size_t n, stream_t s);
int cudaLaunchHostFunc(stream_t s, void (*fn)(void *), void *arg);

#define N ((size_t)8 << 20)

static stream_t s;
static unsigned char *dev;

static void sleep_200ms(void *arg) {
    (void)arg;
    usleep(200000);
}

static int all_are(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

static unsigned char *registered_hinted(unsigned char v) {
    unsigned char *p = malloc(N); /* hinted: DSP_MALLOC_MIN=1M */
    CHECK(p);
    memset(p, v, N);
    CHECK(host_type(p) == 1 && fakecuda_kind(p) == 2, "registered when asked");
    return p;
}

static int device_is(unsigned char v) {
    static unsigned char back[N];
    CHECK(cudaMemcpy(back, dev, N, 2) == 0);
    return all_are(back, N, v);
}

int main(void) {
    CHECK(cudaStreamCreate(&s) == 0 && cudaMalloc((void **)&dev, N) == 0);

    /* Host to device, then free, then a new owner through cudaHostAlloc. */
    unsigned char *p = registered_hinted(0x11);
    CHECK(cudaLaunchHostFunc(s, sleep_200ms, NULL) == 0);
    CHECK(cudaMemcpyAsync(dev, p, N, 1, s) == 0); /* queued: pinned memory */
    free(p);
    unsigned char *q = NULL;
    CHECK(cudaHostAlloc((void **)&q, N, 0) == cudaSuccess);
    memset(q, 0x22, N); /* the new owner writes at once */
    CHECK(cudaStreamSynchronize(s) == 0);
    CHECK(device_is(0x11), "the device got the new owner's data (reused: %d)", q == p);
    CHECK(cudaFreeHost(q) == cudaSuccess);

    /* Device to host into a block freed before the copy ran. */
    CHECK(cudaMemsetAsync(dev, 0x33, N, s) == 0 && cudaStreamSynchronize(s) == 0);
    p = registered_hinted(0);
    CHECK(cudaLaunchHostFunc(s, sleep_200ms, NULL) == 0);
    CHECK(cudaMemcpyAsync(p, dev, N, 2, s) == 0);
    free(p);
    q = NULL;
    CHECK(cudaHostAlloc((void **)&q, N, 0) == cudaSuccess);
    memset(q, 0x44, N);
    CHECK(cudaStreamSynchronize(s) == 0);
    CHECK(all_are(q, N, 0x44), "a late copy overwrote the new owner's data (reused: %d)", q == p);
    CHECK(cudaFreeHost(q) == cudaSuccess);

    /* Eviction under a queued copy: dsp_trim gives the registered pool back. */
    p = registered_hinted(0x55);
    CHECK(cudaLaunchHostFunc(s, sleep_200ms, NULL) == 0);
    CHECK(cudaMemcpyAsync(dev, p, N, 1, s) == 0);
    free(p);
    int syncs = stat_of("cuda_syncs");
    dsp_trim();
    CHECK(stat_of("cuda_syncs") == syncs + 1, "the eviction waited for the device once");
    CHECK(cudaStreamSynchronize(s) == 0);
    CHECK(device_is(0x55), "the copy read pages given back");
    PASS();
}
