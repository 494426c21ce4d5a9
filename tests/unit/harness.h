/* The test harness: Criterion, except in the ThreadSanitizer build.
 *
 * Criterion cannot start under TSan (its inheritable arena is mapped where TSan
 * forbids: Snaipe/Criterion#274, open since 2018), so that build compiles the
 * same test files against the small compatible subset below: each Test() runs
 * in its own forked process, with its .init and .timeout, and the same
 * assertion macros. */
#ifndef DSP_TEST_HARNESS_H
#define DSP_TEST_HARNESS_H

#ifndef DSP_MINI_CRITERION
#include <criterion/criterion.h>
#else

#include <stdio.h>
#include <string.h>

struct mc_test {
    const char *suite, *name;
    void (*fn)(void);
    void (*init)(void);
    double timeout;
    struct mc_test *next;
};

void mc_register(struct mc_test *t);
/* No format attribute: "" __VA_ARGS__ makes an empty format when a check has
 * no message; the Criterion build checks the formats. */
void mc_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn));

#define Test(S, N, ...)                                                                            \
    static void S##_##N##_fn(void);                                                                \
    static struct mc_test S##_##N##_desc = {                                                       \
        .suite = #S, .name = #N, .fn = S##_##N##_fn, __VA_ARGS__};                                 \
    __attribute__((constructor)) static void S##_##N##_reg(void) {                                 \
        mc_register(&S##_##N##_desc);                                                              \
    }                                                                                              \
    static void S##_##N##_fn(void)

#define MC_CHECK(cond, expr, ...)                                                                  \
    do {                                                                                           \
        if (!(cond)) mc_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__);                            \
    } while (0)

#define cr_assert(c, ...)           MC_CHECK((c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...)       MC_CHECK(!(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...)     MC_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)    MC_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)     MC_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)    MC_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)     MC_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)    MC_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)      MC_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)  MC_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) MC_CHECK(strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_fail(...)         mc_fail(__FILE__, __LINE__, "failure", "" __VA_ARGS__)

#endif
#endif
