/*
 * runtime/part.c: parts compiled ahead of time into a shared object
 * (`tfgc compile --shared`), loaded by `tfgc server --part` instead of
 * JIT-compiling at start-up
 * (spec/language.md §10.3 "Ahead-of-time compilation").
 *
 * The object exports one table, `tfg_parts` (TfgPartTable in tfg.h),
 * whatever its symbol prefix, so the server needs no name from the user
 * (an object has it as PREFIX_parts only: runtime/serve.c serves that).
 * Its calls to tfg_rt_recv/tfg_rt_send resolve to the loading process
 * (tfgc exports them: it links with -rdynamic).  Three checks keep a
 * wrong object out before anything runs: the program hash (the source),
 * the task, and tfg_plan_digest (the edge keys and the run signatures,
 * which --fetch/--feed change), since generated code hard-wires keys and
 * arena layouts.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

struct TfgPartLib {
	void *handle; /* dlopen's */
};

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t
fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t
fnv_int(uint64_t h, int64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (8 * i));
	return fnv(h, b, sizeof b);
}

static uint64_t
fnv_shape(uint64_t h, TfgDtype t, const TfgShape *s)
{
	h = fnv_int(fnv_int(h, t), s->rank);
	for (int i = 0; i < s->rank; i++)
		h = fnv_int(h, s->dims[i]);
	return h;
}

TFG_API uint64_t
tfg_plan_digest(const TfgPlan *plan)
{
	uint64_t h = fnv_int(0xcbf29ce484222325ull, plan->hash);

	h = fnv_int(fnv_int(h, plan->ntask), plan->nedge);
	for (int i = 0; i < plan->nedge; i++) {
		const RtEdge *e = &plan->edges[i];
		h = fnv_str(fnv_int(h, e->key), e->name);
		h = fnv_int(fnv_int(h, e->src), e->dst);
		h = fnv_shape(h, e->dtype, &e->shape);
		h = fnv_int(h, (int64_t)e->nbytes); /* strings: their text */
	}
	h = fnv_int(h, plan->nsig);
	for (int s = 0; s < plan->nsig; s++) {
		const RtSig *g = &plan->sigs[s];
		h = fnv_int(fnv_int(h, g->client), g->nfeed);
		for (int i = 0; i < g->nfeed; i++) {
			h = fnv_str(fnv_int(h, g->feeds[i].key),
				    g->feeds[i].name);
			h = fnv_shape(h, g->feeds[i].dtype,
				      &g->feeds[i].shape);
		}
		h = fnv_int(h, g->nfetch);
		for (int i = 0; i < g->nfetch; i++)
			h = fnv_str(fnv_int(h, g->fetches[i].key),
				    g->fetches[i].name);
		h = fnv_int(h, g->ntask);
		for (int i = 0; i < g->ntask; i++)
			h = fnv_int(h, g->tasks[i]);
	}
	h = fnv_int(h, plan->nvar); /* parts name variables by index */
	for (int i = 0; i < plan->nvar; i++) {
		h = fnv_str(fnv_int(h, plan->vars[i].task), plan->vars[i].name);
		h = fnv_shape(h, plan->vars[i].dtype, &plan->vars[i].shape);
	}
	return h;
}

/* what: "part 'x.so'", as messages name it. */
tfg_status
rt_part_check(const TfgPartTable *t, const char *what, const TfgPlan *plan,
	      int task, TfgError *e)
{
	const char *want = plan->tasks[task].name;

	if (t->magic != TFG_PART_MAGIC || t->version != TFG_PART_VERSION)
		return tfg_error(e, TFG_EFORMAT, "%s: not a part of this "
				 "version of tfg (magic %#x, version %u)",
				 what, t->magic, t->version);
	if (t->hash != plan->hash)
		return tfg_error(e, TFG_EINVAL, "%s was compiled from a "
				 "different program than '%s' (or with other "
				 "--fetch/--feed/--shape flags)", what,
				 plan->file);
	if (t->task != task || !t->task_name ||
	    strcmp(t->task_name, want) != 0)
		return tfg_error(e, TFG_EINVAL, "%s is the part of %s, not of "
				 "%s", what, t->task_name ? t->task_name : "?",
				 want);
	if (t->nsig != plan->nsig || t->digest != tfg_plan_digest(plan))
		return tfg_error(e, TFG_EINVAL, "%s was compiled for other "
				 "run signatures than this server's (compile "
				 "and serve with the same --fetch and --feed "
				 "flags)", what);
	for (int s = 0; s < plan->nsig; s++) {
		const RtSig *g = &plan->sigs[s];
		int has = 0;
		for (int i = 0; i < g->ntask; i++)
			has |= g->tasks[i] == task;
		if (has != (t->sigs[s].fn != NULL))
			return tfg_error(e, TFG_EINVAL, "%s: signature %d %s "
					 "a part for %s", what, s,
					 has ? "lacks" : "has unexpectedly",
					 want);
	}
	return TFG_OK;
}

TFG_API tfg_status
tfg_part_load(TfgPartLib **out, const char *path, const TfgPlan *plan,
	      int task, RtPart *parts, TfgError *e)
{
	const TfgPartTable *t;
	TfgPartLib *lib;
	void *h;
	tfg_status st;
	char buf[4096];

	*out = NULL;
	/* dlopen searches the library path for a name without a slash:
	   a part is a file, named as given */
	if (strchr(path, '/') == NULL) {
		snprintf(buf, sizeof buf, "./%s", path);
		h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
	} else {
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	if (h == NULL)
		return tfg_error(e, TFG_ENOENT, "cannot load part: %s",
				 dlerror());
	t = dlsym(h, "tfg_parts");
	if (t == NULL) {
		dlclose(h);
		return tfg_error(e, TFG_EFORMAT, "part '%s' has no tfg_parts "
				 "table (make it with tfgc compile --shared)",
				 path);
	}
	snprintf(buf, sizeof buf, "part '%s'", path);
	if ((st = rt_part_check(t, buf, plan, task, e)) != TFG_OK) {
		dlclose(h);
		return st;
	}
	if ((lib = calloc(1, sizeof *lib)) == NULL) {
		dlclose(h);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	lib->handle = h;
	for (int s = 0; s < plan->nsig; s++) {
		parts[s].fn = t->sigs[s].fn;
		parts[s].arena_size = (size_t)t->sigs[s].arena_size;
	}
	*out = lib;
	return TFG_OK;
}

TFG_API void
tfg_part_close(TfgPartLib *lib)
{
	if (lib == NULL)
		return;
	dlclose(lib->handle);
	free(lib);
}
