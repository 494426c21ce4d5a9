/* Shared between the two halves of the libcudart double: fake_cudart.c (host
 * and device memory, forwarded to the libcuda double: fake_cuda.c) and
 * fake_device.c (streams, copies, events, graph capture). Not exported: the
 * version script keeps only cuda* and fakecuda_* (fake_cudart.map). */
#ifndef FAKE_CUDART_H
#define FAKE_CUDART_H

#include <stddef.h>

/* 1 when [p, p + n) lies in cudaHostAlloc'd or registered memory: copies to or
 * from it are fully asynchronous, as the driver's are. */
int fk_host_pinned(const void *p, size_t n);
/* 1 when p is cudaMalloc'd memory. (Both ask the driver's records.) */
int fk_is_device(const void *p);
/* A potentially unsafe call (allocation, registration, cudaFreeHost, device
 * or stream synchronisation) that the capture rules forbid (fake_device.c):
 * 900 (cudaErrorStreamCaptureUnsupported), and the capture concerned is
 * invalidated, as the runtime does. 0 otherwise. The driver double asks it
 * for the calls forwarded to it (fakecu_set_device): the runtime double does
 * not ask again for those. */
int fk_capture_refuses(void);
/* Waits until every stream is idle (cudaDeviceSynchronize without its checks). */
void fk_device_idle(void);
/* cudaThreadExchangeStreamCaptureMode's work, without the last error: the
 * driver's cuThreadExchangeStreamCaptureMode too. 0, or 1 for a bad mode. */
int fk_exchange_mode(int *mode);
/* Sets the calling thread's last error when e is non-zero; returns e. */
int fk_ret(int e);

#endif
