/* For the GPU check's C programs (tests/gpu/run.sh): the CUDA runtime calls
 * they make, declared here instead of taken from cuda_runtime_api.h, so that
 * one source builds against CUDA 12 and 13 (whose headers changed several of
 * these signatures: cudaGraphInstantiate, cudaStreamGetCaptureInfo, the
 * attributes struct) and against the project's double in the rehearsal.
 * Every call here has the same ABI in CUDA 12 and 13 (docs/internals.md, "CUDA ABI").
 *
 * Output contract of every program: figure lines "NAME VALUE UNIT", "FAIL ..."
 * lines and exit 1 when a check fails, exit 77 when it cannot run here. */
#ifndef DSP_GPU_CHECK_H
#define DSP_GPU_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef void *cudaGraph_t;
typedef void *cudaGraphExec_t;

enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
enum { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeRelaxed = 2 };

/* The first 24 bytes of struct cudaPointerAttributes (CUDA 13 appends 64
 * reserved bytes): room for either. */
struct gpu_attrs {
    int type, device;
    void *devicePointer, *hostPointer;
    long reserved[8];
};

cudaError_t cudaFree(void *);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaHostRegister(void *, size_t, unsigned);
cudaError_t cudaHostUnregister(void *);
cudaError_t cudaHostGetFlags(unsigned *, void *);
cudaError_t cudaPointerGetAttributes(struct gpu_attrs *, const void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, cudaStream_t);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaLaunchHostFunc(cudaStream_t, void (*)(void *), void *);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamBeginCapture(cudaStream_t, int);
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t, unsigned long long);
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t);
cudaError_t cudaGraphDestroy(cudaGraph_t);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaDeviceGetPCIBusId(char *, int, int);
const char *cudaGetErrorString(cudaError_t);

static inline double gpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A call that must succeed: FAIL line and exit 1 otherwise. */
#define OK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != 0) {                                                                             \
            printf("FAIL %s: %d (%s)\n", #call, e_, cudaGetErrorString(e_));                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* No device: exit 77 (NOT RUN), saying why. Also makes stdout line
 * buffered: run.sh sends it to a file, and a crash or the SIGKILL of a
 * timeout must not lose the figures printed so far. Prints init_s, the time
 * the context took (seconds without persistence mode). */
static inline void gpu_need_device(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e || n < 1) {
        printf("NOT RUN: no CUDA device (%d: %s)\n", e, cudaGetErrorString(e));
        exit(77);
    }
    double t = gpu_now();
    OK(cudaFree(0)); /* the context up front: part of no other timing */
    printf("init_s %.3f s\n", gpu_now() - t);
}

/* The host function a stream runs to stay busy for the given milliseconds:
 * what the checks use instead of a kernel (no nvcc needed). */
static inline void gpu_sleep_ms(void *ms) {
    struct timespec t = {0, (long)(size_t)ms * 1000000L};
    while (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
    nanosleep(&t, NULL);
}

/* The line of /proc/self/smaps that starts with key ("VmFlags:",
 * "Private_Dirty:") in the mapping holding p, into line; 0, or -1 when none. */
static inline int gpu_smaps_line(const void *p, const char *key, char *line, size_t cap) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char perms[8];
    int in = 0, found = -1;
    size_t kl = strlen(key);
    while (f && found < 0 && fgets(line, (int)cap, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) /* a mapping's first line */
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && !strncmp(line, key, kl))
            found = 0;
    }
    if (f) fclose(f);
    return found;
}

/* Whether the mapping holding p has VmFlags flag ("sh" shared, "dd" left out
 * of core dumps, "dc" not copied at fork); -1 when unknown. */
static inline int gpu_vm_flag(const void *p, const char *flag) {
    char line[1024];
    if (gpu_smaps_line(p, "VmFlags:", line, sizeof line)) return -1;
    for (char *w = strtok(line + 8, " \n"); w; w = strtok(NULL, " \n"))
        if (!strcmp(w, flag)) return 1;
    return 0;
}

/* An smaps field of the mapping holding p, in kB ("Private_Dirty"); -1 when none. */
static inline long gpu_smaps_kb(const void *p, const char *field) {
    char line[256], key[64];
    snprintf(key, sizeof key, "%s:", field);
    return gpu_smaps_line(p, key, line, sizeof line) ? -1 : atol(line + strlen(key));
}

#endif
