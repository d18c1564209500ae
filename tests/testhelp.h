/*
 * testhelp: a tiny assertion harness for evoeng's unit tests.
 *
 *   static void test_x(void) { CHECK(1 + 1 == 2); CHECK_STR(a, "b"); }
 *   int main(void) { RUN(test_x); return test_report(); }
 *
 * A failed CHECK prints file:line and the expression and counts the test
 * as failed, then carries on. test_report() prints a summary and returns
 * 0 (all passed), 1 (some failed). Exit 77 means "skipped" to meson.
 */
#ifndef EVO_TESTHELP_H
#define EVO_TESTHELP_H

#include <math.h>
#include <stdio.h>
#include <string.h>

/* TEST_ASAN: 1 in a build with AddressSanitizer (gcc or clang), whose
 * handlers change what some tests see (a SEGV is reported and exits 1). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
#define TEST_ASAN 0
#endif

static int th_checks, th_fails, th_tests, th_tests_failed, th_cur_failed;

#define CHECK(cond) do { th_checks++; if (!(cond)) { th_fails++; th_cur_failed = 1; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECK_MSG(cond, ...) do { th_checks++; if (!(cond)) { th_fails++; th_cur_failed = 1; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_STR(a, b) do { const char *th_a = (a), *th_b = (b); th_checks++; \
    if (!th_a || !th_b || strcmp(th_a, th_b) != 0) { th_fails++; th_cur_failed = 1; \
    fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  got:      \"%s\"\n  expected: \"%s\"\n", \
            __FILE__, __LINE__, #a, th_a ? th_a : "(null)", th_b ? th_b : "(null)"); } } while (0)

#define CHECK_CONTAINS(hay, needle) do { const char *th_h = (hay), *th_n = (needle); th_checks++; \
    if (!th_h || !strstr(th_h, th_n)) { th_fails++; th_cur_failed = 1; \
    fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: %s\n  text:    \"%s\"\n  missing: \"%s\"\n", \
            __FILE__, __LINE__, #hay, th_h ? th_h : "(null)", th_n); } } while (0)

#define CHECK_NEAR(a, b, tol) do { double th_x = (a), th_y = (b); th_checks++; \
    if (!(fabs(th_x - th_y) <= (tol))) { th_fails++; th_cur_failed = 1; \
    fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, expected %.17g +- %g\n", \
            __FILE__, __LINE__, #a, th_x, th_y, (double)(tol)); } } while (0)

#define RUN(fn) do { th_tests++; th_cur_failed = 0; fn(); \
    if (th_cur_failed) { th_tests_failed++; fprintf(stderr, "FAIL %s\n", #fn); } \
    else printf("ok   %s\n", #fn); } while (0)

static inline int test_report(void)
{
    printf("%d tests, %d failed; %d checks, %d failed\n", th_tests, th_tests_failed, th_checks, th_fails);
    return th_fails ? 1 : 0;
}

#endif
