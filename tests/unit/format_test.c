/*
 * tests/unit/format_test.c: values printed as NumPy prints them
 * (runtime/format.c; spec/design.md, "print").
 *
 * Every expected string below was produced once by numpy 1.24.2 with
 * print(a) (str(a[()]) for 0-d), by a throw-away script, and pasted in.
 * RAMP(s, o) cases fill element i with i * s + o, computed in double and
 * converted to the dtype (numpy: (np.arange(n) * s + o).astype(dtype));
 * bool ramps are i % 3 == 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tfg.h"
#include "tests/unit/test.h"

typedef struct FmtCase {
	const char *name;
	TfgDtype dtype;
	int rank;
	int64_t dims[4];
	int ramp;             /* fill with i * scale + offset */
	double scale, offset; /* for ramps */
	const double *f;      /* float and bool values */
	const long long *i;   /* integer values */
	const char *want;     /* what numpy prints */
} FmtCase;

#define RAMP(s, o) 1, (s), (o), NULL, NULL
#define F(...) 0, 0, 0, (const double[]){__VA_ARGS__}, NULL
#define I(...) 0, 0, 0, NULL, (const long long[]){__VA_ARGS__}
#define NONE 0, 0, 0, NULL, NULL

static const FmtCase cases[] = {
	{"scalar", TFG_F32, 0, {0}, F(0.5),
	 "0.5"},
	{"scalar", TFG_F64, 0, {0}, F(0.5),
	 "0.5"},
	{"scalar", TFG_F32, 0, {0}, F(2.0),
	 "2.0"},
	{"scalar", TFG_F64, 0, {0}, F(2.0),
	 "2.0"},
	{"scalar", TFG_F32, 0, {0}, F(0.1),
	 "0.1"},
	{"scalar", TFG_F64, 0, {0}, F(0.1),
	 "0.1"},
	{"scalar", TFG_F32, 0, {0}, F(1e-05),
	 "1e-05"},
	{"scalar", TFG_F64, 0, {0}, F(1e-05),
	 "1e-05"},
	{"scalar", TFG_F32, 0, {0}, F(1e+16),
	 "1e+16"},
	{"scalar", TFG_F64, 0, {0}, F(1e+16),
	 "1e+16"},
	{"scalar", TFG_F32, 0, {0}, F(1000000000000000.0),
	 "1000000000000000.0"},
	{"scalar", TFG_F64, 0, {0}, F(1000000000000000.0),
	 "1000000000000000.0"},
	{"scalar", TFG_F32, 0, {0}, F(0.0001),
	 "1e-04"},
	{"scalar", TFG_F64, 0, {0}, F(0.0001),
	 "0.0001"},
	{"scalar", TFG_F32, 0, {0}, F(9.999e-05),
	 "9.999e-05"},
	{"scalar", TFG_F64, 0, {0}, F(9.999e-05),
	 "9.999e-05"},
	{"scalar", TFG_F32, 0, {0}, F(123456789.0),
	 "123456790.0"},
	{"scalar", TFG_F64, 0, {0}, F(123456789.0),
	 "123456789.0"},
	{"scalar", TFG_F32, 0, {0}, F(1.5e+16),
	 "1.5e+16"},
	{"scalar", TFG_F64, 0, {0}, F(1.5e+16),
	 "1.5e+16"},
	{"scalar", TFG_F32, 0, {0}, F(-0.0),
	 "-0.0"},
	{"scalar", TFG_F64, 0, {0}, F(-0.0),
	 "-0.0"},
	{"scalar", TFG_F32, 0, {0}, F(0.0),
	 "0.0"},
	{"scalar", TFG_F64, 0, {0}, F(0.0),
	 "0.0"},
	{"scalar", TFG_F32, 0, {0}, F(NAN),
	 "nan"},
	{"scalar", TFG_F64, 0, {0}, F(NAN),
	 "nan"},
	{"scalar", TFG_F32, 0, {0}, F(INFINITY),
	 "inf"},
	{"scalar", TFG_F64, 0, {0}, F(INFINITY),
	 "inf"},
	{"scalar", TFG_F32, 0, {0}, F(-INFINITY),
	 "-inf"},
	{"scalar", TFG_F64, 0, {0}, F(-INFINITY),
	 "-inf"},
	{"scalar", TFG_F32, 0, {0}, F(0.3333333333333333),
	 "0.33333334"},
	{"scalar", TFG_F64, 0, {0}, F(0.3333333333333333),
	 "0.3333333333333333"},
	{"scalar", TFG_F64, 0, {0}, F(5e-324),
	 "5e-324"},
	{"scalar", TFG_F64, 0, {0}, F(1e+300),
	 "1e+300"},
	{"scalar", TFG_F32, 0, {0}, F(16777217.0),
	 "16777216.0"},
	{"scalar", TFG_F64, 0, {0}, F(16777217.0),
	 "16777217.0"},
	{"scalar", TFG_F32, 0, {0}, F(3.4028234663852886e+38),
	 "3.4028235e+38"},
	{"scalar", TFG_F64, 0, {0}, F(3.4028234663852886e+38),
	 "3.4028234663852886e+38"},
	{"scalar", TFG_I32, 0, {0}, I(238LL),
	 "238"},
	{"scalar", TFG_I32, 0, {0}, I(-2147483648LL),
	 "-2147483648"},
	{"scalar", TFG_I64, 0, {0}, I(-9223372036854775807LL),
	 "-9223372036854775807"},
	{"scalar", TFG_BOOL, 0, {0}, F(1),
	 "True"},
	{"scalar", TFG_BOOL, 0, {0}, F(0),
	 "False"},
	{"vec", TFG_F32, 1, {3}, F(0.5, 1.0, 2.5),
	 "[0.5 1.  2.5]"},
	{"vec", TFG_F32, 1, {2}, F(0.1, 0.25),
	 "[0.1  0.25]"},
	{"vec", TFG_F64, 1, {2}, F(1.0, 2.0),
	 "[1. 2.]"},
	{"vec", TFG_F32, 1, {3},
	 F(0.3333333333333333, 0.6666666666666666, 33.333333333333336),
	 "[ 0.33333334  0.6666667  33.333332  ]"},
	{"vec", TFG_F64, 1, {3},
	 F(0.3333333333333333, 0.6666666666666666, 33.333333333333336),
	 "[ 0.33333333  0.66666667 33.33333333]"},
	{"vec", TFG_F64, 1, {3}, F(-1.5, 0.0, 22.125),
	 "[-1.5    0.    22.125]"},
	{"vec", TFG_F64, 1, {2}, F(-0.0, 1.0),
	 "[-0.  1.]"},
	{"vec", TFG_F32, 1, {2}, F(85628416.0, 1.0),
	 "[8.562842e+07 1.000000e+00]"},
	{"vec", TFG_F64, 1, {4}, F(0.001953125, 1.0, 2.0, 3.0),
	 "[1.953125e-03 1.000000e+00 2.000000e+00 3.000000e+00]"},
	{"sci", TFG_F64, 1, {2}, F(1e-05, 1.0),
	 "[1.e-05 1.e+00]"},
	{"sci", TFG_F32, 1, {2}, F(100000000.0, 1.0),
	 "[1.e+08 1.e+00]"},
	{"sci", TFG_F32, 1, {3}, F(0.1, 1234.5678, 1e-05),
	 "[1.0000000e-01 1.2345677e+03 9.9999997e-06]"},
	{"sci", TFG_F64, 1, {2}, F(1e-100, 1.0),
	 "[1.e-100 1.e+000]"},
	{"sci", TFG_F64, 1, {3}, F(0.001, 1.5, 2.0),
	 "[1.0e-03 1.5e+00 2.0e+00]"},
	{"sci", TFG_F64, 1, {2}, F(0.0001, 0.1),
	 "[0.0001 0.1   ]"},
	{"nonfinite", TFG_F64, 1, {3}, F(NAN, 1.5, -INFINITY),
	 "[ nan  1.5 -inf]"},
	{"nonfinite", TFG_F32, 1, {3}, F(NAN, 1e-09, -INFINITY),
	 "[   nan 1.e-09   -inf]"},
	{"nonfinite", TFG_F64, 1, {2}, F(NAN, INFINITY),
	 "[nan inf]"},
	{"nonfinite", TFG_F64, 1, {3}, F(NAN, 0.0, 0.0),
	 "[nan  0.  0.]"},
	{"int", TFG_I32, 1, {4}, I(1LL, -20LL, 300LL, 4LL),
	 "[  1 -20 300   4]"},
	{"int", TFG_I64, 1, {2},
	 I((-9223372036854775807LL - 1), 9223372036854775807LL),
	 "[-9223372036854775808  9223372036854775807]"},
	{"int", TFG_I32, 1, {1}, I(0LL),
	 "[0]"},
	{"bool", TFG_BOOL, 1, {3}, F(1, 0, 1),
	 "[ True False  True]"},
	{"bool", TFG_BOOL, 1, {2}, F(1, 1),
	 "[ True  True]"},
	{"bool", TFG_BOOL, 2, {2, 2}, F(0, 1, 1, 0),
	 "[[False  True]\n"
	 " [ True False]]"},
	{"mat", TFG_I32, 2, {2, 2}, I(1LL, 2LL, 3LL, 4LL),
	 "[[1 2]\n"
	 " [3 4]]"},
	{"mat", TFG_F32, 2, {2, 3}, F(0.5, -1.0, 2.0, 3.25, 100.0, 0.0),
	 "[[  0.5   -1.     2.  ]\n"
	 " [  3.25 100.     0.  ]]"},
	{"mat", TFG_I64, 3, {2, 2, 3},
	 I(-5LL, -4LL, -3LL, -2LL, -1LL, 0LL, 1LL, 2LL, 3LL, 4LL, 5LL, 6LL),
	 "[[[-5 -4 -3]\n"
	 "  [-2 -1  0]]\n"
	 "\n"
	 " [[ 1  2  3]\n"
	 "  [ 4  5  6]]]"},
	{"mat", TFG_F64, 4, {2, 1, 2, 1}, F(1.0, 2.0, 3.0, 4.0),
	 "[[[[1.]\n"
	 "   [2.]]]\n"
	 "\n"
	 "\n"
	 " [[[3.]\n"
	 "   [4.]]]]"},
	{"mat", TFG_F64, 3, {1, 1, 1}, F(7.0),
	 "[[[7.]]]"},
	{"mat", TFG_F64, 2, {2, 2}, F(1e-07, 1.0, NAN, -3.0),
	 "[[ 1.e-07  1.e+00]\n"
	 " [    nan -3.e+00]]"},
	{"empty", TFG_F32, 1, {0}, NONE,
	 "[]"},
	{"empty", TFG_I32, 2, {2, 0}, NONE,
	 "[]"},
	{"wrap", TFG_F64, 1, {30}, RAMP(0.37, -2),
	 "[-2.   -1.63 -1.26 -0.89 -0.52 -0.15  0.22  0.59  0.96  "
	 "1.33  1.7   2.07\n"
	 "  2.44  2.81  3.18  3.55  3.92  4.29  4.66  5.03  5.4   "
	 "5.77  6.14  6.51\n"
	 "  6.88  7.25  7.62  7.99  8.36  8.73]"},
	{"wrap", TFG_I64, 1, {40}, RAMP(12345, -100000),
	 "[-100000  -87655  -75310  -62965  -50620  -38275  -25930"
	 "  -13585   -1240\n"
	 "   11105   23450   35795   48140   60485   72830   85175"
	 "   97520  109865\n"
	 "  122210  134555  146900  159245  171590  183935  196280"
	 "  208625  220970\n"
	 "  233315  245660  258005  270350  282695  295040  307385"
	 "  319730  332075\n"
	 "  344420  356765  369110  381455]"},
	{"wrap", TFG_F32, 2, {3, 20}, RAMP(1.5, 0),
	 "[[ 0.   1.5  3.   4.5  6.   7.5  9.  10.5 12.  13.5 15. "
	 " 16.5 18.  19.5\n"
	 "  21.  22.5 24.  25.5 27.  28.5]\n"
	 " [30.  31.5 33.  34.5 36.  37.5 39.  40.5 42.  43.5 45. "
	 " 46.5 48.  49.5\n"
	 "  51.  52.5 54.  55.5 57.  58.5]\n"
	 " [60.  61.5 63.  64.5 66.  67.5 69.  70.5 72.  73.5 75. "
	 " 76.5 78.  79.5\n"
	 "  81.  82.5 84.  85.5 87.  88.5]]"},
	{"wrap", TFG_BOOL, 1, {20}, RAMP(1, 0),
	 "[ True False False  True False False  True False False  "
	 "True False False\n"
	 "  True False False  True False False  True False]"},
	{"summary", TFG_F32, 1, {2000}, RAMP(0.5, 0),
	 "[0.000e+00 5.000e-01 1.000e+00 ... 9.985e+02 9.990e+02 9"
	 ".995e+02]"},
	{"summary", TFG_I32, 1, {1001}, RAMP(1, 0),
	 "[   0    1    2 ...  998  999 1000]"},
	{"summary", TFG_I32, 1, {1000}, RAMP(0, 7),
	 "[7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7"
	 " 7 7 7 7 7 7 7 7 7\n"
	 " 7]"},
	{"summary", TFG_F64, 2, {40, 40}, RAMP(0.001, 0),
	 "[[0.000e+00 1.000e-03 2.000e-03 ... 3.700e-02 3.800e-02 "
	 "3.900e-02]\n"
	 " [4.000e-02 4.100e-02 4.200e-02 ... 7.700e-02 7.800e-02 "
	 "7.900e-02]\n"
	 " [8.000e-02 8.100e-02 8.200e-02 ... 1.170e-01 1.180e-01 "
	 "1.190e-01]\n"
	 " ...\n"
	 " [1.480e+00 1.481e+00 1.482e+00 ... 1.517e+00 1.518e+00 "
	 "1.519e+00]\n"
	 " [1.520e+00 1.521e+00 1.522e+00 ... 1.557e+00 1.558e+00 "
	 "1.559e+00]\n"
	 " [1.560e+00 1.561e+00 1.562e+00 ... 1.597e+00 1.598e+00 "
	 "1.599e+00]]"},
	{"summary", TFG_I64, 3, {11, 11, 11}, RAMP(1, 0),
	 "[[[   0    1    2 ...    8    9   10]\n"
	 "  [  11   12   13 ...   19   20   21]\n"
	 "  [  22   23   24 ...   30   31   32]\n"
	 "  ...\n"
	 "  [  88   89   90 ...   96   97   98]\n"
	 "  [  99  100  101 ...  107  108  109]\n"
	 "  [ 110  111  112 ...  118  119  120]]\n"
	 "\n"
	 " [[ 121  122  123 ...  129  130  131]\n"
	 "  [ 132  133  134 ...  140  141  142]\n"
	 "  [ 143  144  145 ...  151  152  153]\n"
	 "  ...\n"
	 "  [ 209  210  211 ...  217  218  219]\n"
	 "  [ 220  221  222 ...  228  229  230]\n"
	 "  [ 231  232  233 ...  239  240  241]]\n"
	 "\n"
	 " [[ 242  243  244 ...  250  251  252]\n"
	 "  [ 253  254  255 ...  261  262  263]\n"
	 "  [ 264  265  266 ...  272  273  274]\n"
	 "  ...\n"
	 "  [ 330  331  332 ...  338  339  340]\n"
	 "  [ 341  342  343 ...  349  350  351]\n"
	 "  [ 352  353  354 ...  360  361  362]]\n"
	 "\n"
	 " ...\n"
	 "\n"
	 " [[ 968  969  970 ...  976  977  978]\n"
	 "  [ 979  980  981 ...  987  988  989]\n"
	 "  [ 990  991  992 ...  998  999 1000]\n"
	 "  ...\n"
	 "  [1056 1057 1058 ... 1064 1065 1066]\n"
	 "  [1067 1068 1069 ... 1075 1076 1077]\n"
	 "  [1078 1079 1080 ... 1086 1087 1088]]\n"
	 "\n"
	 " [[1089 1090 1091 ... 1097 1098 1099]\n"
	 "  [1100 1101 1102 ... 1108 1109 1110]\n"
	 "  [1111 1112 1113 ... 1119 1120 1121]\n"
	 "  ...\n"
	 "  [1177 1178 1179 ... 1185 1186 1187]\n"
	 "  [1188 1189 1190 ... 1196 1197 1198]\n"
	 "  [1199 1200 1201 ... 1207 1208 1209]]\n"
	 "\n"
	 " [[1210 1211 1212 ... 1218 1219 1220]\n"
	 "  [1221 1222 1223 ... 1229 1230 1231]\n"
	 "  [1232 1233 1234 ... 1240 1241 1242]\n"
	 "  ...\n"
	 "  [1298 1299 1300 ... 1306 1307 1308]\n"
	 "  [1309 1310 1311 ... 1317 1318 1319]\n"
	 "  [1320 1321 1322 ... 1328 1329 1330]]]"},
	{"summary", TFG_F64, 2, {3, 500}, RAMP(100000.0, 1),
	 "[[1.00000000e+00 1.00001000e+05 2.00001000e+05 ... 4.970"
	 "00010e+07\n"
	 "  4.98000010e+07 4.99000010e+07]\n"
	 " [5.00000010e+07 5.01000010e+07 5.02000010e+07 ... 9.970"
	 "00010e+07\n"
	 "  9.98000010e+07 9.99000010e+07]\n"
	 " [1.00000001e+08 1.00100001e+08 1.00200001e+08 ... 1.497"
	 "00001e+08\n"
	 "  1.49800001e+08 1.49900001e+08]]"},
};

/* Builds the tensor a case describes. */
static RtTensor *
make(const FmtCase *c)
{
	TfgShape s = {c->rank, {0}};
	RtTensor *t;
	int64_t n;

	for (int k = 0; k < c->rank; k++)
		s.dims[k] = c->dims[k];
	if (rt_tensor_new(&t, c->dtype, &s) != TFG_OK)
		return NULL;
	n = tfg_shape_numel(&s);
	for (int64_t k = 0; k < n; k++) {
		double v = c->ramp ? (double)k * c->scale + c->offset
			   : c->f ? c->f[k]
				  : 0;
		/* for integer dtypes; a float case's NaN, inf or 1e300
		   has no integer value (converting it is undefined) */
		long long iv = c->ramp || c->f
				   ? (v > -9e18 && v < 9e18 ? (long long)v : 0)
			       : c->i ? c->i[k]
				      : 0;

		switch (c->dtype) {
		case TFG_BOOL:
			((uint8_t *)t->data)[k] = c->ramp ? k % 3 == 0 : v != 0;
			break;
		case TFG_I32:
			((int32_t *)t->data)[k] = (int32_t)iv;
			break;
		case TFG_I64:
			((int64_t *)t->data)[k] = (int64_t)iv;
			break;
		case TFG_F32:
			((float *)t->data)[k] = (float)v;
			break;
		default:
			((double *)t->data)[k] = v;
			break;
		}
	}
	return t;
}

static void
t_numpy(void)
{
	int bad = 0;

	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		RtTensor *t = make(&cases[k]);
		char *got;

		ASSERT(t != NULL);
		got = rt_format_str(t);
		ASSERT(got != NULL);
		if (strcmp(got, cases[k].want) != 0) {
			fprintf(stderr,
				"case %zu (%s, %s): numpy prints\n%s\n"
				"we print\n%s\n",
				k, cases[k].name, tfg_dtype_name(t->dtype),
				cases[k].want, got);
			bad++;
		}
		free(got);
		rt_tensor_free(t);
	}
	ASSERT_EQ(bad, 0);
}

/* rt_format writes the same text to a stream. */
static void
t_stream(void)
{
	TfgShape s = {2, {2, 2}};
	RtTensor *t;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	ASSERT_EQ(rt_tensor_new(&t, TFG_I32, &s), TFG_OK);
	for (int k = 0; k < 4; k++)
		((int32_t *)t->data)[k] = k + 1;
	f = open_memstream(&buf, &n);
	ASSERT(f != NULL);
	rt_format(f, t);
	fclose(f);
	ASSERT_STREQ(buf, "[[1 2]\n [3 4]]");
	free(buf);
	rt_tensor_free(t);
}

/* A string tensor of the given shape holding n strings (NUL-terminated,
 * or with lengths in len when not NULL), laid out as runtime/tfg.h says. */
static RtTensor *
strings(int rank, const int64_t *dims, int n, const char *const *v,
	const size_t *len)
{
	TfgShape s = {rank, {0}};
	size_t text = 0, off = (size_t)n * TFG_STRING_RECORD;
	RtTensor *t;
	unsigned char *b;

	for (int k = 0; k < rank; k++)
		s.dims[k] = dims[k];
	for (int i = 0; i < n; i++)
		text += len ? len[i] : strlen(v[i]);
	if (rt_tensor_new(&t, TFG_STRING, &s) != TFG_OK)
		return NULL;
	free(t->data);
	t->data = b = malloc(off + text + 1);
	t->nbytes = off + text;
	for (int i = 0; i < n; i++) {
		size_t l = len ? len[i] : strlen(v[i]);
		for (int k = 0; k < 8; k++) {
			b[i * 16 + k] = (unsigned char)(off >> (8 * k));
			b[i * 16 + 8 + k] = (unsigned char)(l >> (8 * k));
		}
		memcpy(b + off, v[i], l);
		off += l;
	}
	return t;
}

/* String tensors print as numpy 1.24.2 prints str arrays (pasted from
 * print(np.array(...)) as above): a scalar as its text, elements as
 * Python's repr, unpadded, rows wrapped by characters, not bytes. */
static void
t_strings(void)
{
	static const char *const esc[] = {"it's", "a\"b", "q'\"",
					  "tab\there", "nl\nx", "back\\s",
					  "\xc3\xa9", "\x7f", ""};
	static const char *const np[] = {"\xc2\xa0x", "\xe2\x80\x8b",
					 "\xe2\x80\xa8", "a\0b", "\x1b",
					 "\xf0\x9f\x98\x80"};
	static const size_t np_len[] = {3, 3, 3, 3, 1, 4};
	static const char *const m[] = {"ab", "c", "d", "efg"};
	const char *e9[12];
	const char *bad[] = {"x", "\xff"};
	struct {
		RtTensor *t;
		const char *want;
	} c[7];
	int64_t d[2] = {0, 0};
	int bad_cases = 0;

	for (int i = 0; i < 12; i++)
		e9[i] = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			"\xc3\xa9\xc3\xa9";
	c[0].t = strings(0, d, 1, m + 3, NULL);
	c[0].want = "efg";
	d[0] = 2, d[1] = 2;
	c[1].t = strings(2, d, 4, m, NULL);
	c[1].want = "[['ab' 'c']\n ['d' 'efg']]";
	d[0] = 9;
	c[2].t = strings(1, d, 9, esc, NULL);
	c[2].want = "[\"it's\" 'a\"b' 'q\\'\"' 'tab\\there' 'nl\\nx' "
		    "'back\\\\s' '\xc3\xa9' '\\x7f' '']";
	d[0] = 6;
	c[3].t = strings(1, d, 6, np, np_len);
	c[3].want = "['\\xa0x' '\\u200b' '\\u2028' 'a\\x00b' '\\x1b' "
		    "'\xf0\x9f\x98\x80']";
	d[0] = 12;
	c[4].t = strings(1, d, 12, e9, NULL);
	c[4].want = "['\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		    "\xc3\xa9\xc3\xa9' 'ééééééééé' 'ééééééééé' 'ééééééééé' "
		    "'ééééééééé' 'ééééééééé'\n 'ééééééééé' 'ééééééééé' "
		    "'ééééééééé' 'ééééééééé' 'ééééééééé' 'ééééééééé']";
	/* not numpy's: a byte that is not UTF-8 prints escaped */
	d[0] = 2;
	c[5].t = strings(1, d, 2, bad, NULL);
	c[5].want = "['x' '\\xff']";
	d[0] = 0;
	c[6].t = strings(1, d, 0, NULL, NULL);
	c[6].want = "[]";
	for (int k = 0; k < 7; k++) {
		char *got;
		ASSERT(c[k].t != NULL);
		got = rt_format_str(c[k].t);
		ASSERT(got != NULL);
		if (strcmp(got, c[k].want) != 0) {
			fprintf(stderr, "string case %d: want\n%s\ngot\n%s\n", k,
				c[k].want, got);
			bad_cases++;
		}
		free(got);
	}
	/* records pointing outside the buffer are never followed */
	c[1].t->nbytes -= 4;
	{
		char *got = rt_format_str(c[1].t);
		ASSERT_STREQ(got, "<invalid string tensor>");
		free(got);
	}
	for (int k = 0; k < 7; k++)
		rt_tensor_free(c[k].t);
	ASSERT_EQ(bad_cases, 0);
}

/* Python's formatting of one value (spec §8.5 "Session expressions"): each
 * expected string is what Python 3 printed for the same format and value
 * ('%' when printf is 1, format() when 0). */
static const struct {
	const char *fmt;
	int printf;
	TfgDtype dtype;
	double v;
	const char *str;
	const char *want;
} pycases[] = {
	{"%.3f ms", 1, TFG_F64, 3.936755657196045, NULL, "3.937 ms"},
	{"%5d|", 1, TFG_I64, 42, NULL, "   42|"},
	{"%-5d|", 1, TFG_I64, -42, NULL, "-42  |"},
	{"%05d", 1, TFG_I64, -42, NULL, "-0042"},
	{"%+d", 1, TFG_I64, 42, NULL, "+42"},
	{"% d", 1, TFG_I64, 42, NULL, " 42"},
	{"%x", 1, TFG_I64, 255, NULL, "ff"},
	{"%#X", 1, TFG_I64, 255, NULL, "0XFF"},
	{"%#o", 1, TFG_I64, 8, NULL, "0o10"},
	{"%x", 1, TFG_I64, -255, NULL, "-ff"},
	{"%d", 1, TFG_F64, 3.9, NULL, "3"},
	{"%d", 1, TFG_F64, -3.9, NULL, "-3"},
	{"%.1e", 1, TFG_F64, 12345.678, NULL, "1.2e+04"},
	{"%g", 1, TFG_F64, 1e-07, NULL, "1e-07"},
	{"%10.4g|", 1, TFG_F64, 3.141592653589793, NULL, "     3.142|"},
	{"%E", 1, TFG_F64, INFINITY, NULL, "INF"},
	{"%f", 1, TFG_F64, NAN, NULL, "nan"},
	{"%+.2f", 1, TFG_F64, -0.0, NULL, "-0.00"},
	{"100%% of %d", 1, TFG_I64, 7, NULL, "100% of 7"},
	{"[%8.3f]", 1, TFG_F32, 0.1, NULL, "[   0.100]"},
	{"%-8s|", 1, TFG_STRING, 0, "ab", "ab      |"},
	{"%.2s", 1, TFG_STRING, 0, "abc", "ab"},
	{"%s", 1, TFG_F64, 0.1, NULL, "0.1"},
	{"%r", 1, TFG_I64, 5, NULL, "5"},
	{".2f", 0, TFG_F64, 3.14159, NULL, "3.14"},
	{">10.1f", 0, TFG_F64, 3.14159, NULL, "       3.1"},
	{"<8d", 0, TFG_I64, 42, NULL, "42      "},
	{"^9", 0, TFG_I64, 7, NULL, "    7    "},
	{"*^9", 0, TFG_I64, 7, NULL, "****7****"},
	{"08.2f", 0, TFG_F64, -3.5, NULL, "-0003.50"},
	{"+.3e", 0, TFG_F64, 12345.678, NULL, "+1.235e+04"},
	{".1%", 0, TFG_F64, 0.256, NULL, "25.6%"},
	{"", 0, TFG_F64, 0.1, NULL, "0.1"},
	{"", 0, TFG_STRING, 0, "abc", "abc"},
	{">5", 0, TFG_STRING, 0, "ab", "   ab"},
	{"x", 0, TFG_I64, 255, NULL, "ff"},
	{"#x", 0, TFG_I64, 255, NULL, "0xff"},
	{".3", 0, TFG_F64, 3.14159, NULL, "3.14"},
	{"=+8d", 0, TFG_I64, 42, NULL, "+     42"},
	{"G", 0, TFG_F64, 1e+20, NULL, "1E+20"},
	{"5", 0, TFG_I64, 3, NULL, "    3"},
};

static void
t_pyformat(void)
{
	char why[300];

	for (size_t i = 0; i < sizeof pycases / sizeof *pycases; i++) {
		TfgShape s = {0, {0}};
		RtTensor *t = NULL;
		char *got;

		if (pycases[i].dtype != TFG_STRING) {
			ASSERT_EQ(rt_tensor_new(&t, pycases[i].dtype, &s),
				  TFG_OK);
			if (pycases[i].dtype == TFG_F64)
				*(double *)t->data = pycases[i].v;
			else if (pycases[i].dtype == TFG_F32)
				*(float *)t->data = (float)pycases[i].v;
			else
				*(int64_t *)t->data = (int64_t)pycases[i].v;
		}
		got = tfg_format_value(pycases[i].fmt, pycases[i].printf, t,
				       pycases[i].str, why, sizeof why);
		if (got == NULL || strcmp(got, pycases[i].want) != 0)
			TEST_FAIL_("'%s' of case %zu: got '%s' (%s), want '%s'",
				   pycases[i].fmt, i, got ? got : "NULL",
				   got ? "" : why, pycases[i].want);
		free(got);
		rt_tensor_free(t);
	}
	/* what is refused, and says why */
	ASSERT(tfg_format_check("%d of %d", 1, why, sizeof why) < 0);
	ASSERT(strstr(why, "2 directives") != NULL);
	ASSERT(tfg_format_check("no value", 1, why, sizeof why) < 0);
	ASSERT(tfg_format_check("%.3q", 1, why, sizeof why) < 0);
	ASSERT(strstr(why, "unknown conversion 'q'") != NULL);
	ASSERT(tfg_format_check("%", 1, why, sizeof why) < 0);
	ASSERT(tfg_format_check("%5000d", 1, why, sizeof why) < 0);
	ASSERT(tfg_format_check(".3z", 0, why, sizeof why) < 0);
	ASSERT(tfg_format_check(",d", 0, why, sizeof why) < 0);
	ASSERT(tfg_format_check("<", 0, why, sizeof why) == 0);
	ASSERT(tfg_format_check("", 0, why, sizeof why) == 0);
	ASSERT(tfg_format_value("%d", 1, NULL, "abc", why, sizeof why) ==
	       NULL);
	ASSERT(strstr(why, "formats a number, not a string") != NULL);
}

TEST_MAIN({"numpy", t_numpy}, {"stream", t_stream}, {"strings", t_strings},
	  {"pyformat", t_pyformat})
