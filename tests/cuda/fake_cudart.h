/* Shared between the two halves of the libcudart double: fake_cudart.c (host
 * memory: cudaHostAlloc, registration, attributes, device memory) and
 * fake_device.c (streams, copies, events, graph capture). Not exported: the
 * version script keeps only cuda* and fakecuda_* (fake_cudart.map). */
#ifndef FAKE_CUDART_H
#define FAKE_CUDART_H

#include <stddef.h>

/* 1 when [p, p + n) lies in cudaHostAlloc'd or registered memory: copies to or
 * from it are fully asynchronous, as the driver's are. */
int fk_host_pinned(const void *p, size_t n);
/* 1 when p is cudaMalloc'd memory. */
int fk_is_device(const void *p);
/* A potentially unsafe call (allocation, registration, cudaFreeHost, device
 * or stream synchronisation) that the capture rules forbid (fake_device.c):
 * 900 (cudaErrorStreamCaptureUnsupported), and the capture concerned is
 * invalidated, as the runtime does. 0 otherwise. */
int fk_capture_refuses(void);
/* Waits until every stream is idle (cudaDeviceSynchronize without its checks). */
void fk_device_idle(void);
/* Pins [p, p + len) as the driver does (FOLL_PIN, fake_pin.c): returns the
 * handle fk_unpin takes, or -1 when that was refused (then mlock instead,
 * best effort, when lock_instead). */
int fk_pin(void *p, size_t len, int lock_instead);
void fk_unpin(int pin);
/* Sets the calling thread's last error when e is non-zero; returns e. */
int fk_ret(int e);

#endif
