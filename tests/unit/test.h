/*
 * tests/unit/test.h: the whole unit-test framework.  A test file defines
 * functions `static void t_xxx(void)` and a table
 *     TEST_MAIN({"name", t_xxx}, ...)
 * Each ASSERT failure prints file:line and the values, and the test goes on
 * to the next function; main exits 1 if any failed and prints
 * "N passed, N failed".
 */
#ifndef TFG_TESTS_UNIT_TEST_H
#define TFG_TESTS_UNIT_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

static jmp_buf test_jmp;
static int test_failed;

#define TEST_FAIL_(...)                                                       \
	do {                                                                  \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);               \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		test_failed = 1;                                              \
		longjmp(test_jmp, 1);                                         \
	} while (0)

#define ASSERT(c)                                                             \
	do {                                                                  \
		if (!(c))                                                     \
			TEST_FAIL_("assertion failed: %s", #c);               \
	} while (0)
#define ASSERT_EQ(a, b)                                                       \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_)                                                 \
			TEST_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); \
	} while (0)
#define ASSERT_STREQ(a, b)                                                    \
	do {                                                                  \
		const char *a_ = (a), *b_ = (b);                              \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                        \
			TEST_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b,      \
				   a_ ? a_ : "(null)", b_ ? b_ : "(null)");   \
	} while (0)
#define ASSERT_NEAR(a, b, tol)                                                \
	do {                                                                  \
		double a_ = (a), b_ = (b);                                    \
		if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol)))                  \
			TEST_FAIL_("%s ~ %s: %.17g != %.17g", #a, #b, a_, b_);\
	} while (0)

typedef struct TestCase {
	const char *name;
	void (*fn)(void);
} TestCase;

/* TEST_MAIN_FIXTURE(setup, teardown, cases...): setup runs once before
 * the tests (those named on the command line, or all) and teardown once
 * after them, to make and free what they share; either may be NULL.
 * Neither is a test, but an ASSERT in either fails the run. */
#define TEST_MAIN(...) TEST_MAIN_FIXTURE(NULL, NULL, __VA_ARGS__)
#define TEST_MAIN_FIXTURE(setup, teardown, ...)                               \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		static const TestCase cases[] = {__VA_ARGS__};                \
		void (*volatile up)(void) = setup;                            \
		void (*volatile down)(void) = teardown;                       \
		int n = sizeof cases / sizeof cases[0];                       \
		volatile int pass = 0, fail = 0;                              \
		test_failed = 0;                                              \
		if (up && setjmp(test_jmp) == 0)                              \
			up();                                                 \
		if (test_failed) {                                            \
			fprintf(stderr, "FAIL (setup)\n");                    \
			return 1;                                             \
		}                                                             \
		for (volatile int i = 0; i < n; i++) {                        \
			if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)  \
				continue;                                     \
			test_failed = 0;                                      \
			if (setjmp(test_jmp) == 0)                            \
				cases[i].fn();                                \
			if (test_failed) {                                    \
				fail++;                                       \
				fprintf(stderr, "FAIL %s\n", cases[i].name);  \
			} else                                                \
				pass++;                                       \
		}                                                             \
		test_failed = 0;                                              \
		if (down && setjmp(test_jmp) == 0)                            \
			down();                                               \
		if (test_failed) {                                            \
			fail++;                                               \
			fprintf(stderr, "FAIL (teardown)\n");                 \
		}                                                             \
		printf("%s: %d passed, %d failed\n", argv[0], pass, fail);    \
		return fail != 0;                                             \
	}

#endif /* TFG_TESTS_UNIT_TEST_H */
