/* The libcudart double's selftest, run WITHOUT the shim: every behaviour of
 * the real driver that the doubles model (fake_cudart.c, fake_device.c, and
 * the driver double they are layered on: fake_cuda.c, fake_pin.c; its own
 * behaviours are t_driver_double.c's) holds, so the shim's tests against it
 * mean something:
 * - copies: to or from pinned memory they run when the stream gets to them;
 *   a pageable source is staged on the call; a pageable destination has its
 *   data when the call returns; stream, device and cudaFreeHost waits;
 * - events complete when the stream reaches them;
 * - cudaHostAlloc memory is shared (VM_SHARED) and left out of core dumps: a
 *   forked child shares it; registered private memory pinned with FOLL_PIN is
 *   copied into a child at fork, not shared copy-on-write;
 * - capture: the interaction rules of the three modes, 900 and 901.
 * Exit 0 pass, 1 fail. */
#include "gpu_check.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int fakecuda_foll_pinned(const void *p);
cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);

#define N    ((size_t)8 << 20)
#define BUSY 100 /* ms a stream is kept busy */
#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, what);                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static cudaStream_t s;
static unsigned char *dev;

static int all_are(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}
static void busy(void) {
    OK(cudaLaunchHostFunc(s, gpu_sleep_ms, (void *)(size_t)BUSY));
}
static int device_is(unsigned char v) {
    static unsigned char back[N];
    OK(cudaMemcpy(back, dev, N, cudaMemcpyDeviceToHost));
    return all_are(back, N, v);
}

/* An H2D copy from src queued behind a busy stream, src holding 1 at the call
 * and 2 from just after it; then the stream synchronised. */
static void h2d_then_overwrite(unsigned char *src) {
    memset(src, 1, N);
    busy();
    OK(cudaMemcpyAsync(dev, src, N, cudaMemcpyHostToDevice, s));
    memset(src, 2, N);
    OK(cudaStreamSynchronize(s));
}

static void copies(void) {
    unsigned char *h, *x = malloc(N);
    OK(cudaHostAlloc((void **)&h, N, 0));
    /* Pinned source: read when the stream gets to it. */
    h2d_then_overwrite(h);
    CHECK(device_is(2), "an H2D copy from pinned memory runs when the stream reaches it");
    /* Pageable source: staged on the call. */
    h2d_then_overwrite(x);
    CHECK(device_is(1), "an H2D copy from pageable memory is staged before the call returns");
    /* Pageable destination: complete on return; pinned: when the stream gets there. */
    OK(cudaMemsetAsync(dev, 7, N, s));
    memset(x, 0, N);
    busy();
    OK(cudaMemcpyAsync(x, dev, N, cudaMemcpyDeviceToHost, s));
    CHECK(all_are(x, N, 7), "a D2H copy into pageable memory has landed when the call returns");
    memset(h, 0, N);
    busy();
    OK(cudaMemcpyAsync(h, dev, N, cudaMemcpyDeviceToHost, s));
    CHECK(h[0] == 0, "a D2H copy into pinned memory has not landed while the stream is busy");
    OK(cudaStreamSynchronize(s));
    CHECK(all_are(h, N, 7), "... and has once the stream is synchronised");
    /* Events, device sync, cudaFreeHost. */
    cudaEvent_t e;
    OK(cudaEventCreate(&e));
    busy();
    OK(cudaEventRecord(e, s));
    CHECK(cudaEventQuery(e) == 600, "an event behind a busy stream is not ready");
    double t = gpu_now();
    OK(cudaDeviceSynchronize());
    CHECK(gpu_now() - t > BUSY * 0.5e-3 && cudaEventQuery(e) == 0,
          "cudaDeviceSynchronize waits for the stream; the event is then complete");
    busy();
    t = gpu_now();
    OK(cudaFreeHost(h));
    CHECK(gpu_now() - t > BUSY * 0.5e-3, "cudaFreeHost waits for the device");
    free(x);
}

static void fork_semantics(void) {
    unsigned char *h;
    OK(cudaHostAlloc((void **)&h, N, 0));
    memset(h, 3, N);
    CHECK(gpu_vm_flag(h, "sh") == 1 && gpu_vm_flag(h, "dd") == 1,
          "cudaHostAlloc memory is VM_SHARED and VM_DONTDUMP");
    pid_t pid = fork();
    if (pid == 0) {
        int ok = all_are(h, N, 3);
        memset(h, 4, N); /* shared: the parent sees it */
        _exit(ok ? 0 : 1);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "a forked child reads cudaHostAlloc memory");
    CHECK(all_are(h, N, 4), "cudaHostAlloc memory is shared with a forked child");
    OK(cudaFreeHost(h));

    unsigned char *r = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(r, 5, N);
    OK(cudaHostRegister(r, N, 0));
    if (!fakecuda_foll_pinned(r)) {
        /* io_uring refused (RLIMIT_MEMLOCK without CAP_IPC_LOCK, or disabled):
         * the double could not pin as the driver does, and says so. */
        printf("note: registered memory not FOLL_PIN-pinned here (io_uring refused)\n");
    } else {
        int pipefd[2];
        CHECK(pipe(pipefd) == 0, "pipe");
        pid = fork();
        if (pid == 0) {
            /* Copied at fork: the child's pages are its own before anyone writes. */
            long priv = gpu_smaps_kb(r, "Private_Dirty"), shared = gpu_smaps_kb(r, "Shared_Dirty");
            char ok = priv >= (long)(N >> 10) && shared == 0 && all_are(r, N, 5);
            if (write(pipefd[1], &ok, 1) != 1) _exit(2);
            _exit(0);
        }
        char ok = 0;
        CHECK(read(pipefd[0], &ok, 1) == 1 && waitpid(pid, &st, 0) == pid, "child");
        CHECK(ok, "registered (FOLL_PIN) private memory is copied into a forked child at fork");
        close(pipefd[0]), close(pipefd[1]);
    }
    OK(cudaHostUnregister(r));
    munmap(r, N);
}

/* Capture rules. */
static int other_rc, other_mode;
static void *other_alloc(void *arg) {
    (void)arg;
    int m = other_mode;
    OK(cudaThreadExchangeStreamCaptureMode(&m));
    void *q = NULL;
    other_rc = cudaHostAlloc(&q, 4096, 0);
    if (!other_rc) OK(cudaFreeHost(q));
    cudaGetLastError();
    return NULL;
}
static int from_other_thread(int mode) {
    pthread_t t;
    other_mode = mode;
    pthread_create(&t, NULL, other_alloc, NULL);
    pthread_join(t, NULL);
    return other_rc;
}
static int end_capture(void) {
    cudaGraph_t g = NULL;
    int rc = cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    return rc;
}

static void capture_rules(void) {
    unsigned char *h;
    OK(cudaHostAlloc((void **)&h, 4096, 0));
    struct gpu_attrs a;
    void *q = NULL;
    /* Global: attributes allowed; an allocation refused and the capture lost. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaMemsetAsync(dev, 9, N, s));
    CHECK(cudaPointerGetAttributes(&a, h) == 0 && a.type == 1,
          "attributes during a global capture");
    CHECK(end_capture() == 0, "the capture survives cudaPointerGetAttributes");
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaHostAlloc(&q, 4096, 0) == 900, "cudaHostAlloc in a global capture is 900");
    CHECK(end_capture() == 901, "the capture is then invalidated (901)");
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamSynchronize(s) == 900, "so is synchronising the capturing stream");
    CHECK(cudaStreamSynchronize(s) == 901, "... after which the stream reports the lost capture");
    CHECK(end_capture() == 901, "the capture is then invalidated (901)");
    /* Another thread, global mode: refused, and our global capture lost. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(from_other_thread(0) == 900, "another global-mode thread's allocation is 900");
    CHECK(end_capture() == 901, "... and invalidates the global capture");
    /* Another thread in relaxed or thread-local mode: allowed. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(from_other_thread(2) == 0, "a relaxed thread may allocate during a global capture");
    CHECK(from_other_thread(1) == 0, "so may a thread-local thread without a capture of its own");
    CHECK(end_capture() == 0, "the capture is still valid");
    /* Thread-local capture: others unaffected; our own call refused. */
    OK(cudaStreamBeginCapture(s, 1));
    CHECK(from_other_thread(0) == 0, "a thread-local capture does not restrict other threads");
    CHECK(cudaHostAlloc(&q, 4096, 0) == 900, "but restricts its own thread");
    CHECK(end_capture() == 901, "and is then invalidated");
    /* The capturing thread switched to relaxed: allowed. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int m = cudaStreamCaptureModeRelaxed;
    OK(cudaThreadExchangeStreamCaptureMode(&m));
    CHECK(cudaHostAlloc(&q, 4096, 0) == 0, "a relaxed thread may allocate in its own capture");
    OK(cudaThreadExchangeStreamCaptureMode(&m));
    CHECK(end_capture() == 0, "the capture is still valid");
    /* Relaxed capture: anything goes. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    void *q2 = NULL;
    CHECK(cudaHostAlloc(&q2, 4096, 0) == 0, "allocation in a relaxed capture");
    CHECK(end_capture() == 0, "a relaxed capture stays valid");
    OK(cudaFreeHost(q2));
    OK(cudaFreeHost(q));
    OK(cudaFreeHost(h));
}

int main(void) {
    gpu_need_device();
    OK(cudaMalloc((void **)&dev, N));
    OK(cudaStreamCreate(&s));
    copies();
    fork_semantics();
    capture_rules();
    printf("PASS\n");
    return 0;
}
