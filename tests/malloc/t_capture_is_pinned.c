/* Regression (issue 13): torch's is_pinned() inside a graph capture asks
 * cudaPointerGetAttributes, which the driver allows during a global-mode
 * capture. For a hinted block the shim registers it with the driver at that
 * first question; a registration is a potentially unsafe call, so made as
 * is, it invalidated the application's capture (EndCapture 901, the double
 * enforcing the runtime's rules). The shim must make it in the relaxed mode,
 * as torch makes its own cudaHostAlloc, so the capture survives. Also: the
 * thread's own capture mode is left as it was. */
#include "cuda_test.h"

typedef void *stream_t;
int cudaStreamCreate(stream_t *s);
int cudaStreamBeginCapture(stream_t s, int mode);
int cudaStreamEndCapture(stream_t s, void **graph);
int cudaGraphDestroy(void *g);
int cudaMalloc(void **p, size_t n);
int cudaMemsetAsync(void *p, int v, size_t n, stream_t s);
int cudaThreadExchangeStreamCaptureMode(int *mode);

int main(void) {
    stream_t s;
    void *dev, *g = NULL;
    CHECK(cudaStreamCreate(&s) == 0 && cudaMalloc(&dev, 1 << 20) == 0);
    char *p = malloc(4 << 20); /* hinted (DSP_MALLOC_MIN=1M), not registered yet */
    CHECK(p && fakecuda_kind(p) == 0, "hinted, unregistered: kind %d", fakecuda_kind(p));
    int before = calls("cudaHostRegister");
    CHECK(cudaStreamBeginCapture(s, 0 /* global */) == 0);
    CHECK(cudaMemsetAsync(dev, 1, 1 << 20, s) == 0);
    CHECK(host_type(p) == 1, "is_pinned() during a capture: cudaMemoryTypeHost");
    CHECK(calls("cudaHostRegister") == before + 1, "registered on demand, inside the capture");
    int mode = 1;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode) == 0 && mode == 0,
          "the thread's capture mode is back to global (it is %d)", mode);
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode) == 0);
    int rc = cudaStreamEndCapture(s, &g);
    CHECK(rc == 0 && g, "the capture survives the shim's registration (EndCapture %d)", rc);
    cudaGraphDestroy(g);
    free(p);
    PASS();
}
