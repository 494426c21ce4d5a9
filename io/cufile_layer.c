/* What the cuFile layer's files share (io/cufile_layer.h): the real library's
 * functions, the re-entry guard and the condition the layer's lock waits on.
 * The hooks (io/cufile.c) and the registration table (io/cufile_reg.c) both
 * call into the real library from here, so neither calls the other back. */
#include "cufile_layer.h"

struct dsp_real_cufile dsp_real_cufile;
const struct dsp_sym dsp_syms_cufile[] = DSP_SYMS(cufile);

DSP_TLS int dsp_cufile_inside;

pthread_cond_t dsp_cufile_idle = PTHREAD_COND_INITIALIZER;

CUfileError_t dsp_cufile_real_buf_register(const void *base, size_t len, int flags) {
    return DSP_CUFILE_CALL(cuFileBufRegister, base, len, flags);
}

CUfileError_t dsp_cufile_real_buf_deregister(const void *base) {
    return DSP_CUFILE_CALL(cuFileBufDeregister, base);
}
