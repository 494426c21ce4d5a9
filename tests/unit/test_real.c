/* preload/real.h: the next definition of a libc function a hook stands in
 * front of. */
#include "real.h"

#include "harness.h"
#include <errno.h>

typedef int (*int_fn)(int);
DSP_REAL_DECL(int_fn, dsp_no_such_libc_function)

/* Regression (review of issue 29's change): a hook whose libc has no next
 * definition (close_range and closefrom before glibc 2.34, epoll_pwait2
 * before 2.35) called NULL, and looked the name up again at every call. */
Test(real, missing_symbol_answers_enosys_not_a_null_call) {
    errno = 0;
    cr_assert_eq(real_dsp_no_such_libc_function()(1), -1);
    cr_assert_eq(errno, ENOSYS);
    cr_assert_not_null(real_dsp_no_such_libc_function_ptr, "looked up once, kept");
    cr_assert_eq(real_dsp_no_such_libc_function(), real_dsp_no_such_libc_function_ptr);
}
