/*
 * tests/unit/test.h: the whole unit-test framework.  A test file defines
 * functions `static void t_xxx(void)` and a table
 *     TEST_MAIN({"name", t_xxx}, ...)
 * Each ASSERT failure prints file:line and the values, and the test goes on
 * to the next function; main exits 1 if any failed and prints
 * "N passed, N failed, N skipped".  A test that cannot run here says
 * TEST_SKIP("why"): it counts as skipped, never as passed; one that
 * cannot run a part of itself says TEST_SKIP_PART("why") and goes on,
 * skipped too unless it fails.  One that
 * needs a GPU or NVRTC says TEST_SKIP_GPU("why"), which is a failure
 * under TFG_REQUIRE_GPU=1 (a machine that has them must run it).
 */
#ifndef TFG_TESTS_UNIT_TEST_H
#define TFG_TESTS_UNIT_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf test_jmp;
static int test_failed, test_skipped;
static const char *test_name = "";

#define TEST_FAIL_(...)                                                       \
	do {                                                                  \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);               \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		test_failed = 1;                                              \
		longjmp(test_jmp, 1);                                         \
	} while (0)

/* A part of the test cannot run here: the test goes on, and counts as
 * skipped unless it fails. */
#define TEST_SKIP_PART(...)                                                   \
	do {                                                                  \
		printf("SKIP %s: ", test_name);                               \
		printf(__VA_ARGS__);                                          \
		putchar('\n');                                                \
		test_skipped = 1;                                             \
	} while (0)
#define TEST_SKIP(...)                                                        \
	do {                                                                  \
		TEST_SKIP_PART(__VA_ARGS__);                                  \
		longjmp(test_jmp, 1);                                         \
	} while (0)
/* Whether a GPU test that would skip must fail (TFG_REQUIRE_GPU=1). */
static inline int
test_require_gpu(void)
{
	const char *v = getenv("TFG_REQUIRE_GPU");

	return v && strcmp(v, "1") == 0;
}
#define TEST_SKIP_GPU(...)                                                    \
	do {                                                                  \
		if (test_require_gpu()) {                                     \
			fprintf(stderr, "TFG_REQUIRE_GPU=1: ");               \
			TEST_FAIL_(__VA_ARGS__);                              \
		}                                                             \
		TEST_SKIP(__VA_ARGS__);                                       \
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
		volatile int pass = 0, fail = 0, skip = 0;                    \
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
			test_failed = test_skipped = 0;                       \
			test_name = cases[i].name;                            \
			fflush(NULL);                                         \
			if (setjmp(test_jmp) == 0)                            \
				cases[i].fn();                                \
			fflush(NULL);                                         \
			if (test_failed) {                                    \
				fail++;                                       \
				fprintf(stderr, "FAIL %s\n", cases[i].name);  \
			} else if (test_skipped)                              \
				skip++;                                       \
			else                                                  \
				pass++;                                       \
		}                                                             \
		test_failed = 0;                                              \
		if (down && setjmp(test_jmp) == 0)                            \
			down();                                               \
		if (test_failed) {                                            \
			fail++;                                               \
			fprintf(stderr, "FAIL (teardown)\n");                 \
		}                                                             \
		printf("%s: %d passed, %d failed, %d skipped\n", argv[0],     \
		       pass, fail, skip);                                     \
		return fail != 0;                                             \
	}

#endif /* TFG_TESTS_UNIT_TEST_H */
