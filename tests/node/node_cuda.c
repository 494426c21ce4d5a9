/* Helper for tests/node/node.sh: a rank of a CUDA job, against the runtime
 * double (tests/cuda/fake_cudart.c), under LD_PRELOAD.
 *   node_cuda pool MB STOP [capture]  makes an idle thread (the runtime's own, in a real
 *       CUDA program), cudaHostAlloc(MB) and cudaFreeHost it (what torch's
 *       _host_emptyCache() and CuPy's free_all_blocks() do: the shim keeps it
 *       registered in its pool), prints "pooled", then idles until the file
 *       STOP exists and prints "unregistered N" (the double's
 *       cudaHostUnregister calls so far); capture: idles inside a stream
 *       capture of the global mode, ended at STOP ("capture RC": 901 when
 *       another call invalidated it). With NODE_CUDA_DEVICE=N the program
 *       works on device N (cudaSetDevice first, as a rank of a job with one
 *       rank a GPU) and prints "contexts MASK" at the end: the devices whose
 *       primary context the runtime made (FAKECUDA_DEVICES). */
#include "cuda_test.h"

#include <pthread.h>
#include <unistd.h>

int cudaStreamCreate(void **s);
int cudaSetDevice(int d);
int cudaStreamBeginCapture(void *s, int mode);
int cudaStreamEndCapture(void *s, void **graph);

static void *idle(void *arg) {
    pause();
    return arg;
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[1], "pool")) {
        fprintf(stderr, "usage: node_cuda pool MB STOP [capture]\n");
        return 2;
    }
    const char *dev = getenv("NODE_CUDA_DEVICE");
    if (dev) CHECK(cudaSetDevice(atoi(dev)) == cudaSuccess);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, idle, NULL) == 0);
    void *p = NULL;
    size_t len = (size_t)atol(argv[2]) << 20;
    CHECK(cudaHostAlloc(&p, len, 0) == cudaSuccess && p);
    memset(p, 1, len);
    CHECK(cudaFreeHost(p) == cudaSuccess);
    void *s = NULL, *g = NULL;
    int capture = argc > 4 && !strcmp(argv[4], "capture");
    if (capture) CHECK(cudaStreamCreate(&s) == 0 && cudaStreamBeginCapture(s, 0) == 0);
    printf("pooled\n");
    fflush(stdout);
    while (access(argv[3], F_OK) != 0) usleep(10 * 1000);
    if (capture) printf("capture %d\n", cudaStreamEndCapture(s, &g));
    printf("unregistered %d\n", fakecuda_count("cudaHostUnregister"));
    if (dev) printf("contexts %u\n", fakecuda_contexts());
    return 0;
}
