/*
 * tests/gpu/aot/main.c: tests/gpu/aot/part.tfg compiled by `tfgc compile`
 * (its kernels as PTX inside the object) and run through the header's
 * wrapper, with no compiler and no NVRTC in the process.  With a GPU the
 * sums must match the host's; without one the run must fail with the
 * runtime's message.  Prints "aot: ok" or why not; exit 0 only then
 * (with GPU), or "aot: no GPU: ..." and exit 3 (without one).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_aot.h"

int
main(void)
{
	enum { N = 100000 };
	static float x[N], y[N];
	float s = 0;
	double want = 0, got = 0;
	int rc;

	for (int i = 0; i < N; i++)
		x[i] = (float)(i % 1000) * 0.004f - 2.0f;
	rc = gpu_aot_y_s(x, y, &s);
	if (rc != 0) {
		printf("aot: no GPU: status %d\n", rc);
		return 3;
	}
	for (int i = 0; i < N; i++) {
		double e = 1.0 / (1.0 + exp(-(2.0 * x[i] + 1.0)));
		if (fabs(y[i] - e) > 1e-6 * (1 + fabs(e))) {
			printf("aot: y[%d] = %.9g, expected %.9g\n", i, y[i], e);
			return 1;
		}
		want += e;
		got += y[i];
	}
	if (fabs(s - want) > 1e-4 * fabs(want)) {
		printf("aot: s = %.9g, expected %.9g\n", s, want);
		return 1;
	}
	printf("aot: ok (s = %.6g)\n", s);
	return 0;
}
