#include "slab.h"

#include <string.h>
#include <sys/mman.h>

#define CHUNK ((size_t)1 << 20)

void *dsp_slab_alloc(struct dsp_slab *s) {
    void *obj = s->free_list;
    if (obj) {
        s->free_list = *(void **)obj;
    } else {
        if (!s->cur || (size_t)(s->end - s->cur) < s->size) {
            size_t len = s->chunk ? s->chunk : CHUNK;
            void *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (c == MAP_FAILED) return NULL;
            s->cur = c;
            s->end = (char *)c + len;
        }
        obj = s->cur;
        s->cur += s->size;
    }
    memset(obj, 0, s->size);
    return obj;
}

void dsp_slab_free(struct dsp_slab *s, void *obj) {
    *(void **)obj = s->free_list;
    s->free_list = obj;
}
