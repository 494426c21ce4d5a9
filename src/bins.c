#include "span.h"

#include "internal.h"

#define OWN_BIN_SCAN 32

static void bin_of(size_t len, unsigned *fl, unsigned *sl) {
    size_t pages = len / DSP_PAGE;
    if (pages < DSP_BIN_SL) {
        *fl = 0;
        *sl = (unsigned)pages;
        return;
    }
    unsigned f = 63u - (unsigned)__builtin_clzll(pages); /* >= 3 */
    *fl = f - 2;
    *sl = (unsigned)(pages >> (f - 3)) & (DSP_BIN_SL - 1);
}

void dsp_bins_insert(struct dsp_bins *b, struct dsp_span *s) {
    unsigned fl, sl;
    bin_of(s->len, &fl, &sl);
    s->bin = (uint16_t)(fl * DSP_BIN_SL + sl);
    s->bprev = NULL;
    s->bnext = b->head[fl][sl];
    if (s->bnext) s->bnext->bprev = s;
    b->head[fl][sl] = s;
    b->sl_map[fl] |= (uint8_t)(1u << sl);
    b->fl_map |= 1ull << fl;
    b->bytes += s->len;
}

void dsp_bins_remove(struct dsp_bins *b, struct dsp_span *s) {
    unsigned fl = s->bin / DSP_BIN_SL, sl = s->bin % DSP_BIN_SL;
    if (s->bprev)
        s->bprev->bnext = s->bnext;
    else
        b->head[fl][sl] = s->bnext;
    if (s->bnext) s->bnext->bprev = s->bprev;
    if (!b->head[fl][sl]) {
        b->sl_map[fl] &= (uint8_t) ~(1u << sl);
        if (!b->sl_map[fl]) b->fl_map &= ~(1ull << fl);
    }
    s->bprev = s->bnext = NULL;
    b->bytes -= s->len;
}

struct dsp_span *dsp_bins_find(struct dsp_bins *b, size_t len) {
    unsigned fl, sl;
    bin_of(len, &fl, &sl);
    /* Own bin: spans here may be smaller than len; take the tightest that fits. */
    struct dsp_span *best = NULL;
    int scanned = 0;
    for (struct dsp_span *s = b->head[fl][sl]; s && scanned < OWN_BIN_SCAN;
         s = s->bnext, scanned++) {
        if (s->len >= len && (!best || s->len < best->len)) {
            best = s;
            if (s->len == len) break;
        }
    }
    if (best) return best;
    /* Any span of a higher bin fits. */
    unsigned above = sl + 1 < DSP_BIN_SL ? b->sl_map[fl] & (uint8_t)(0xffu << (sl + 1)) : 0;
    if (above) return b->head[fl][__builtin_ctz(above)];
    uint64_t fmask = fl + 1 < 64 ? b->fl_map & (~0ull << (fl + 1)) : 0;
    if (!fmask) return NULL;
    unsigned f2 = (unsigned)__builtin_ctzll(fmask);
    return b->head[f2][__builtin_ctz(b->sl_map[f2])];
}

struct dsp_span *dsp_bins_largest(struct dsp_bins *b) {
    if (!b->fl_map) return NULL;
    unsigned fl = 63u - (unsigned)__builtin_clzll(b->fl_map);
    unsigned sl = 31u - (unsigned)__builtin_clz(b->sl_map[fl]);
    struct dsp_span *best = b->head[fl][sl];
    int scanned = 0;
    for (struct dsp_span *s = best; s && scanned < OWN_BIN_SCAN; s = s->bnext, scanned++)
        if (s->len > best->len) best = s;
    return best;
}
