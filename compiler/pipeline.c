/*
 * compiler/pipeline.c: compile_file, which runs the passes of
 * compiler/passes.def in order, QBE style: one loop over a table, each
 * pass named once (for CompileOptions.until, -fno-NAME and --emit).
 *
 * The front passes do more than one thing, so they are small functions
 * here: parse reads and parses; check checks (--addr included), and stops a
 * program whose `?` dims are left where that is an error; specialise
 * prunes a specialisation to its signature, or makes a program with `?`
 * dims left a generic plan, which ends the pipeline (spec/design.md
 * "Unknown dims").  Placement sees the graph as written (it is what
 * --log-device-placement shows); the passes after it keep each value on
 * its device, so they never move work between tasks.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* A program with `?` dims left is checked, never compiled to code
 * (spec §4.3 "Inputs"): each such input is an error naming --shape. */
int
unknown_dims(Program *p, Diag *d, const char *what)
{
	for (int i = 0; i < p->g.nodes.n; i++) {
		IrNode *n = p->g.nodes.v[i];
		char eg[128];
		size_t k = 0;
		if (n->op != OP_input || shape_known(&n->shape))
			continue;
		eg[0] = '\0';
		for (int j = 0; j < n->shape.rank && k < sizeof eg; j++)
			k += n->shape.dims[j] == IR_DIM_UNKNOWN
			     ? snprintf(eg + k, sizeof eg - k, "%sN",
					j ? "," : "")
			     : snprintf(eg + k, sizeof eg - k, "%s%lld",
					j ? "," : "",
					(long long)n->shape.dims[j]);
		diag_error(d, n->loc, "input '%s' has unknown dims (%s): %s "
			   "--shape %s=%s", n->name,
			   ir_type_str(p->arena, n->dtype, &n->shape), what,
			   n->name, eg);
	}
	return d->nerr;
}

/* PASS_PARSE: read (unless the source was given) and parse. */
static int
pass_parse(Program *p)
{
	const CompileOptions *o = p->opt;
	int err = 0;

	if (o && o->source) {
		p->src = o->source;
	} else if (!(p->src = src_read(p->arena, p->path, &err))) {
		diag_error(p->diag, (SrcLoc){0}, "cannot read '%s': %s",
			   p->path, strerror(err));
		return 1;
	}
	p->ast = lang_parse(p->arena, p->src, p->diag);
	return !p->ast || p->diag->nerr;
}

/* PASS_CHECK: the checker; with `?` dims left, tfgc check
 * stops here, and a command that cannot make a generic plan or a
 * specialisation fails naming --shape. */
static int
pass_check(Program *p)
{
	const CompileOptions *o = p->opt;

	if (check_program(p))
		return 1;
	if (p->nunknown && o && o->unknown_ok) {
		p->done = 1;
		return 0;
	}
	return p->nunknown && !(o && (o->generic_ok || o->spec_sig)) &&
	       unknown_dims(p, p->diag, "give its shape with");
}

/* Values that take only their input's type (check_unknown_dep) lose the
 * input, which only told the signatures their feeds. */
static void
drop_type_deps(Program *p)
{
	for (int i = 0; i < p->g.nodes.n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (x->type_dep)
			x->nin = 0, x->type_dep = 0;
	}
}

/* PASS_SPECIALISE: a specialisation keeps only its signature, whose dims
 * are all known; a program with `?` dims left becomes a generic plan,
 * and that is all it gets. */
static int
pass_specialise(Program *p)
{
	const CompileOptions *o = p->opt;
	int rc = 0;

	if (o && o->spec_sig)
		rc = prune_to_sig(p, o->spec_sig - 1);
	else if (p->nunknown) {
		p->done = 1;
		return plan_generic(p);
	}
	drop_type_deps(p);
	return rc;
}

static const struct {
	int (*run)(Program *p);
	const char *name;
} passes[] = {
#define PASS(id, run, name, emit, skip) {run, name},
#include "compiler/passes.def"
#undef PASS
};

int
pass_skippable(int pass)
{
	static const unsigned char skip[] = {
#define PASS(id, run, name, emit, skip) skip,
#include "compiler/passes.def"
#undef PASS
	};

	return pass >= 0 && pass < PASS__N && skip[pass];
}

int
pass_lookup(const char *name)
{
	for (int i = 0; i < PASS__N; i++)
		if (strcmp(passes[i].name, name) == 0)
			return i;
	return -1;
}

const char *
pass_name(int pass)
{
	return pass >= 0 && pass < PASS__N ? passes[pass].name : "?";
}

int
pass_of_emit(const char *mode)
{
	static const char *const emit[] = {
#define PASS(id, run, name, emit, skip) emit,
#include "compiler/passes.def"
#undef PASS
	};
	size_t n = strlen(mode);

	for (int i = 0; i < PASS__N; i++)
		for (const char *e = emit[i]; (e = strstr(e, mode)) != NULL;
		     e += n)
			if ((e == emit[i] || e[-1] == ' ') &&
			    (e[n] == ' ' || e[n] == '\0'))
				return i;
	return -1;
}

int
compile_file(Program *p, const char *path, const CompileOptions *o,
	     Diag *d)
{
	int until = o && o->until ? pass_lookup(o->until) : PASS_PLAN;

	memset(p, 0, sizeof *p);
	p->arena = arena_new();
	p->opt = o;
	p->diag = d;
	p->path = path;
	if (until < 0) {
		diag_error(d, (SrcLoc){0}, "no pass '%s'", o->until);
		return 1;
	}
	for (int i = 0; i < PASS__N && !p->done; i++) {
		int skip = o && (o->skip >> i & 1) && pass_skippable(i);

		if (!skip && passes[i].run(p))
			return d->nerr ? d->nerr : 1;
		if (i == until)
			break;
	}
	return 0;
}
