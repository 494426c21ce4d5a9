/* The device half of the libcudart double (see fake_cudart.c for memory):
 * streams that run their work later, on a thread of their own, as a GPU's copy
 * engines do, so that what the driver's documentation makes the caller's
 * business (docs/internals.md, "Copies and graph capture") is visible
 * to a test:
 * - cudaMemcpyAsync to or from pinned memory (cudaHostAlloc'd or registered)
 *   is queued: the host buffer is read or written when the stream gets to it;
 * - from pageable memory the source is staged before the call returns (the
 *   caller may reuse it at once), into pageable memory the call returns when
 *   the data has landed;
 * - cudaLaunchHostFunc queues a host function (the tests' "busy kernel");
 * - events complete when the stream reaches them;
 * - stream capture records the work into a graph instead of running it, with
 *   the runtime's interaction rules (cudaStreamCaptureMode): a thread whose
 *   mode (cudaThreadExchangeStreamCaptureMode) is not relaxed may not make a
 *   potentially unsafe call while it captures itself (a capture not begun in
 *   relaxed mode) or, in global mode, while any thread captures in global
 *   mode; such a call fails with 900 and invalidates that capture, whose end
 *   then returns 901 (fk_capture_refuses). cudaPointerGetAttributes stays
 *   allowed.
 * Simplifications: every stream, the legacy default stream (NULL) included,
 * is independent of the others (no implicit legacy-stream barrier); cudaMemcpy
 * waits for the whole device, then copies. Memory "on the device" is host
 * memory (the driver double's cuMemAlloc, fake_cuda.c, through cudaMalloc).
 * The driver double is handed this device at the runtime's first call
 * (fakecu_set_device): its cuMemFreeHost, cuMemFree and cuCtxSynchronize wait
 * with fk_device_idle, its potentially unsafe calls ask fk_capture_refuses,
 * and cuThreadExchangeStreamCaptureMode is fk_exchange_mode. */
#include "fake_cudart.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OP_COPY, OP_SET, OP_FN, OP_EVENT };

struct op {
    int kind;
    void *dst;
    const void *src;
    size_t n;
    int val;
    void (*fn)(void *);
    void *arg;
    void *staged; /* freed once copied */
    struct event *ev;
    struct op *next;
};

struct graph {
    struct op *head, *tail;
};

struct stream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    unsigned long queued, done; /* ops ever queued, ops finished */
    pthread_t thr;
    int started;
    /* capture: 0 none, 1 active, 2 invalidated (cudaStreamCaptureStatus) */
    int capture, mode;
    pthread_t owner; /* the capturing thread */
    struct graph *g;
    struct stream *next_all;
};

struct event {
    struct stream *s;
    unsigned long seq; /* done when s->done >= seq */
    double t;          /* when the stream reached it */
};

static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream *all;
static struct stream legacy = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static int captures;             /* streams capturing in a mode other than relaxed */
static __thread int thread_mode; /* cudaThreadExchangeStreamCaptureMode: 0 global */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run(struct op *o) {
    switch (o->kind) {
    case OP_COPY:
        memcpy(o->dst, o->src, o->n);
        break;
    case OP_SET:
        memset(o->dst, o->val, o->n);
        break;
    case OP_FN:
        o->fn(o->arg);
        break;
    case OP_EVENT:
        o->ev->t = now();
        break;
    }
    free(o->staged);
}

static void *worker(void *arg) {
    struct stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head) pthread_cond_wait(&s->cv, &s->mu);
        struct op *o = s->head;
        pthread_mutex_unlock(&s->mu);
        run(o);
        pthread_mutex_lock(&s->mu);
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        s->done++;
        free(o);
        pthread_cond_broadcast(&s->cv);
    }
    return NULL;
}

static struct stream *resolve(void *handle) {
    struct stream *s = handle ? handle : &legacy;
    pthread_mutex_lock(&all_mu);
    if (!s->started) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        s->started = pthread_create(&s->thr, &a, worker, s) == 0;
        pthread_attr_destroy(&a);
        if (s == &legacy) {
            s->next_all = all;
            all = s;
        }
    }
    pthread_mutex_unlock(&all_mu);
    return s;
}

static struct op *op_new(int kind) {
    struct op *o = calloc(1, sizeof *o);
    if (o) o->kind = kind;
    return o;
}

/* Queues o on s (or records it into s's capture); returns its sequence number. */
static unsigned long submit(struct stream *s, struct op *o) {
    pthread_mutex_lock(&s->mu);
    unsigned long seq;
    if (s->capture) {
        if (s->g->tail)
            s->g->tail->next = o;
        else
            s->g->head = o;
        s->g->tail = o;
        seq = s->queued;
    } else {
        if (s->tail)
            s->tail->next = o;
        else
            s->head = o;
        s->tail = o;
        seq = ++s->queued;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return seq;
}

static void wait_for(struct stream *s, unsigned long seq) {
    pthread_mutex_lock(&s->mu);
    while (s->done < seq) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void idle(struct stream *s) {
    pthread_mutex_lock(&s->mu);
    while (s->done < s->queued) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void fk_device_idle(void) {
    pthread_mutex_lock(&all_mu);
    for (struct stream *s = all; s; s = s->next_all) idle(s);
    pthread_mutex_unlock(&all_mu);
}

int fk_capture_refuses(void) {
    if (!__atomic_load_n(&captures, __ATOMIC_ACQUIRE) || thread_mode == 2) return 0;
    int refused = 0;
    pthread_mutex_lock(&all_mu);
    for (struct stream *s = all; s; s = s->next_all) {
        pthread_mutex_lock(&s->mu);
        if (s->capture == 1 && s->mode != 2 &&
            (pthread_equal(s->owner, pthread_self()) || (thread_mode == 0 && s->mode == 0))) {
            s->capture = 2;
            refused = 1;
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&all_mu);
    return refused ? 900 : 0;
}

/* --- streams ------------------------------------------------------------- */

int cudaStreamCreateWithFlags(void **out, unsigned flags) {
    (void)flags;
    if (!out) return fk_ret(1);
    struct stream *s = calloc(1, sizeof *s);
    if (!s) return fk_ret(2);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_lock(&all_mu);
    s->next_all = all;
    all = s;
    pthread_mutex_unlock(&all_mu);
    resolve(s);
    *out = s;
    return 0;
}

int cudaStreamCreate(void **out) {
    return cudaStreamCreateWithFlags(out, 0);
}

/* The stream's thread and record stay (a destroyed stream's work still
 * completes, as the driver's does); nothing is queued on it again. */
int cudaStreamDestroy(void *s) {
    return s ? 0 : fk_ret(1);
}

int cudaStreamSynchronize(void *h) {
    struct stream *s = resolve(h);
    pthread_mutex_lock(&s->mu);
    int lost = s->capture == 2;
    pthread_mutex_unlock(&s->mu);
    if (lost) return fk_ret(901);
    int rc = fk_capture_refuses();
    if (rc) return fk_ret(rc);
    idle(s);
    return 0;
}

int cudaStreamQuery(void *h) {
    struct stream *s = resolve(h);
    int rc = fk_capture_refuses();
    if (rc) return fk_ret(rc);
    pthread_mutex_lock(&s->mu);
    int busy = s->done < s->queued;
    pthread_mutex_unlock(&s->mu);
    return busy ? 600 /* cudaErrorNotReady */ : 0;
}

int cudaLaunchHostFunc(void *h, void (*fn)(void *), void *arg) {
    if (!fn) return fk_ret(1);
    struct op *o = op_new(OP_FN);
    if (!o) return fk_ret(2);
    o->fn = fn;
    o->arg = arg;
    submit(resolve(h), o);
    return 0;
}

/* --- copies -------------------------------------------------------------- */

enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT = 4 };

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *h) {
    if (kind < 0 || kind > 4 || (n && (!dst || !src))) return fk_ret(1);
    struct stream *s = resolve(h);
    if (!n) return 0;
    if (kind == DEFAULT) /* unified addressing: the pointers tell */
        kind =
            fk_is_device(src) ? (fk_is_device(dst) ? D2D : D2H) : (fk_is_device(dst) ? H2D : H2H);
    struct op *o = op_new(OP_COPY);
    if (!o) return fk_ret(2);
    o->dst = dst;
    o->src = src;
    o->n = n;
    int src_host = kind == H2D || kind == H2H, dst_host = kind == D2H || kind == H2H;
    int capturing = s->capture != 0;
    /* Pageable source: staged now, so the caller may reuse it on return. */
    if (src_host && !fk_host_pinned(src, n) && !capturing) {
        o->staged = malloc(n);
        if (!o->staged) {
            free(o);
            return fk_ret(2);
        }
        memcpy(o->staged, src, n);
        o->src = o->staged;
    }
    unsigned long seq = submit(s, o);
    /* Pageable destination: the call returns when the data has landed. */
    if (dst_host && !fk_host_pinned(dst, n) && !capturing) wait_for(s, seq);
    return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (kind < 0 || kind > 4 || (n && (!dst || !src))) return fk_ret(1);
    int rc = fk_capture_refuses();
    if (rc) return fk_ret(rc);
    fk_device_idle();
    if (n) memcpy(dst, src, n);
    return 0;
}

int cudaMemsetAsync(void *dst, int val, size_t n, void *h) {
    if (n && !fk_is_device(dst)) return fk_ret(1);
    struct op *o = op_new(OP_SET);
    if (!o) return fk_ret(2);
    o->dst = dst;
    o->val = val;
    o->n = n;
    submit(resolve(h), o);
    return 0;
}

int cudaMemset(void *dst, int val, size_t n) {
    int rc = cudaMemsetAsync(dst, val, n, NULL);
    if (!rc) idle(&legacy);
    return rc;
}

/* --- events -------------------------------------------------------------- */

int cudaEventCreate(void **out) {
    if (!out) return fk_ret(1);
    struct event *e = calloc(1, sizeof *e);
    if (!e) return fk_ret(2);
    *out = e;
    return 0;
}

int cudaEventCreateWithFlags(void **out, unsigned flags) {
    (void)flags;
    return cudaEventCreate(out);
}

int cudaEventDestroy(void *e) {
    free(e); /* (the driver, too, lets a recorded event be destroyed) */
    return 0;
}

int cudaEventRecord(void *h, void *stream) {
    struct event *e = h;
    if (!e) return fk_ret(1);
    struct op *o = op_new(OP_EVENT);
    if (!o) return fk_ret(2);
    o->ev = e;
    struct stream *s = resolve(stream);
    e->s = s;
    e->seq = submit(s, o);
    return 0;
}

int cudaEventSynchronize(void *h) {
    struct event *e = h;
    if (!e) return fk_ret(1);
    if (e->s) wait_for(e->s, e->seq);
    return 0;
}

int cudaEventQuery(void *h) {
    struct event *e = h;
    if (!e) return fk_ret(1);
    int rc = fk_capture_refuses();
    if (rc) return fk_ret(rc);
    if (!e->s) return 0;
    pthread_mutex_lock(&e->s->mu);
    int done = e->s->done >= e->seq;
    pthread_mutex_unlock(&e->s->mu);
    return done ? 0 : 600;
}

int cudaEventElapsedTime(float *ms, void *a, void *b) {
    struct event *x = a, *y = b;
    if (!ms || !x || !y) return fk_ret(1);
    *ms = (float)((y->t - x->t) * 1e3);
    return 0;
}

int cudaStreamWaitEvent(void *h, void *ev, unsigned flags) {
    (void)h, (void)flags;
    return cudaEventSynchronize(ev); /* simplification: the host waits */
}

/* --- graph capture ------------------------------------------------------- */

int fk_exchange_mode(int *mode) {
    if (!mode || *mode < 0 || *mode > 2) return 1;
    int old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return 0;
}

int cudaThreadExchangeStreamCaptureMode(int *mode) {
    return fk_ret(fk_exchange_mode(mode));
}

int cudaStreamBeginCapture(void *h, int mode) {
    if (!h || mode < 0 || mode > 2) return fk_ret(1); /* the legacy stream cannot capture */
    struct stream *s = resolve(h);
    struct graph *g = calloc(1, sizeof *g);
    if (!g) return fk_ret(2);
    pthread_mutex_lock(&s->mu);
    int busy = s->capture != 0;
    if (!busy) {
        s->capture = 1;
        s->mode = mode;
        s->owner = pthread_self();
        s->g = g;
    }
    pthread_mutex_unlock(&s->mu);
    if (busy) {
        free(g);
        return fk_ret(1);
    }
    if (mode != 2) __atomic_fetch_add(&captures, 1, __ATOMIC_RELEASE);
    return 0;
}

static void ops_free(struct op *o) {
    while (o) {
        struct op *n = o->next;
        free(o);
        o = n;
    }
}

int cudaStreamEndCapture(void *h, void **graph) {
    if (!h || !graph) return fk_ret(1);
    struct stream *s = h;
    pthread_mutex_lock(&s->mu);
    int st = s->capture, mode = s->mode;
    struct graph *g = s->g;
    s->capture = 0;
    s->g = NULL;
    pthread_mutex_unlock(&s->mu);
    if (!st) return fk_ret(1);
    if (mode != 2) __atomic_fetch_sub(&captures, 1, __ATOMIC_RELEASE);
    if (st == 2) {
        ops_free(g->head);
        free(g);
        *graph = NULL;
        return fk_ret(901); /* cudaErrorStreamCaptureInvalidated */
    }
    *graph = g;
    return 0;
}

int cudaStreamIsCapturing(void *h, int *status) {
    if (!status) return fk_ret(1);
    struct stream *s = resolve(h);
    pthread_mutex_lock(&s->mu);
    *status = s->capture;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* CUDA 12+ signature: (exec, graph, flags). */
int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags) {
    (void)flags;
    if (!exec || !graph) return fk_ret(1);
    struct graph *g = graph, *x = calloc(1, sizeof *x);
    if (!x) return fk_ret(2);
    for (struct op *o = g->head; o; o = o->next) {
        struct op *c = malloc(sizeof *c);
        if (!c) {
            ops_free(x->head);
            free(x);
            return fk_ret(2);
        }
        *c = *o;
        c->next = NULL;
        if (x->tail)
            x->tail->next = c;
        else
            x->head = c;
        x->tail = c;
    }
    *exec = x;
    return 0;
}

int cudaGraphLaunch(void *exec, void *h) {
    if (!exec) return fk_ret(1);
    struct stream *s = resolve(h);
    for (struct op *o = ((struct graph *)exec)->head; o; o = o->next) {
        struct op *c = malloc(sizeof *c);
        if (!c) return fk_ret(2);
        *c = *o;
        c->next = NULL;
        c->staged = NULL;
        submit(s, c);
    }
    return 0;
}

static int graph_free(void *p) {
    if (!p) return fk_ret(1);
    ops_free(((struct graph *)p)->head);
    free(p);
    return 0;
}
int cudaGraphDestroy(void *g) {
    return graph_free(g);
}
int cudaGraphExecDestroy(void *x) {
    return graph_free(x);
}
