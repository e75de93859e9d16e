/*
 * compiler/shape.c: dtype promotion and broadcasting
 * (spec §5.4 "The result dtype of a binary operation", §6.1 "Broadcasting").
 *
 * Promotion follows NumPy 2 (NEP 50) on our dtypes, with TF's literal
 * defaults: a literal written as an operand is weak and takes the other
 * side's dtype when that has the same kind or a higher one.  u8 is an
 * integer below i32: with i32 or i64 it gives them, with f32 f32 (every
 * u8 is an exact f32, as NumPy has it).
 */
#include "compiler/compiler_int.h"

int
dtype_is_int(TfgDtype t)
{
	return t == TFG_U8 || t == TFG_I32 || t == TFG_I64;
}

int
dtype_is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

/* 0 bool, 1 int, 2 float */
static int
kind_of(TfgDtype t)
{
	return t == TFG_BOOL ? 0 : dtype_is_int(t) ? 1 : 2;
}

/* The order of the dtypes of one kind, by range: u8 < i32 < i64 and
 * f32 < f64 (the enum's order is the wire's, and u8 came last). */
static int
rank_of(TfgDtype t)
{
	return t == TFG_U8 ? 0 : t == TFG_I32 || t == TFG_F32 ? 1 : 2;
}

TfgDtype
dtype_promote(TfgDtype a, int aweak, TfgDtype b, int bweak)
{
	if (aweak && bweak) /* two literals: the higher kind's default */
		return kind_of(a) == 2 || kind_of(b) == 2 ? TFG_F32
		       : a > b                          ? a
							: b;
	if (aweak && !bweak)
		return kind_of(b) >= kind_of(a) ? b
		       : kind_of(a) == 2      ? TFG_F32
					      : a;
	if (bweak && !aweak)
		return dtype_promote(b, 1, a, 0);
	if (a == b)
		return a;
	if (kind_of(a) != kind_of(b)) {
		/* one side is a float, or one is a bool */
		TfgDtype lo = kind_of(a) < kind_of(b) ? a : b;
		TfgDtype hi = kind_of(a) < kind_of(b) ? b : a;
		if (kind_of(hi) == 2 && kind_of(lo) == 1 && lo != TFG_U8)
			return TFG_F64; /* i32/i64 with f32: f64 */
		return hi; /* u8 with f32: f32, as NumPy */
	}
	return rank_of(a) > rank_of(b) ? a : b; /* u8 < i32 < i64, f32 < f64 */
}

int
shape_broadcast(TfgShape *out, const TfgShape *a, const TfgShape *b)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	TfgShape s = {r, {0}};

	for (int i = 0; i < r; i++) {
		int ia = a->rank - r + i, ib = b->rank - r + i;
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		if (da == IR_DIM_UNKNOWN || db == IR_DIM_UNKNOWN) {
			/* ? with 1 or ?: ?; ? with d: d (or an error in
			   the specialisation) */
			s.dims[i] = da == IR_DIM_UNKNOWN && db != 1 ? db
				    : db == IR_DIM_UNKNOWN && da != 1 ? da
				    : IR_DIM_UNKNOWN;
			continue;
		}
		if (da != db && da != 1 && db != 1)
			return -1;
		s.dims[i] = da == 1 ? db : da;
	}
	*out = s;
	return 0;
}

int
shape_known(const TfgShape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] == IR_DIM_UNKNOWN)
			return 0;
	return 1;
}
