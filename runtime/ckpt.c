/*
 * runtime/ckpt.c: checkpoints of the variables
 * (spec §8.11 "save and restore"), written and read by a session's client
 * (roles layer, runtime/role.h).
 *
 * A checkpoint is a directory: one .npy file per variable (so NumPy
 * reads it), named after the variable ('/' as '.': "w.random.npy"), and
 * MANIFEST, a text file:
 *
 *     tfg checkpoint 1
 *     variables 2
 *     v<TAB>v.npy<TAB>/job:ps/task:0<TAB>f32<TAB>[784,100]<TAB>crc32=...<TAB>bytes=...
 *
 * one line per variable in the plan's order: its name, file, the task it
 * lived on, dtype, shape, and the CRC-32 (zlib's) and size of the whole
 * file.  A shard of a partitioned variable, or its slot, has an eighth
 * field saying how the shards join, "part=K/N:STRATEGY:ROWS:WHOLE"
 * (shard K of N of the variable WHOLE of ROWS rows;
 * spec §4.4.1 "Partitioned variables"), and its manifest says "tfg
 * checkpoint 2".
 * Restoring into a program that splits a variable otherwise (another N
 * or strategy, or not at all) joins the checkpoint's shards and cuts the
 * program's from them (resplit).  Saving writes everything into a fresh directory beside DIR,
 * flushed to disk, and only then puts it in DIR's place in one step
 * (renameat2 RENAME_EXCHANGE, or a rename when DIR is new): a crash
 * leaves either the old checkpoint or the new one, never half of one.
 * Restoring reads and checks every file before it returns anything, so
 * that a damaged, truncated or mismatched checkpoint changes nothing.
 *
 * The fresh directory is DIR.tmp-PID@HOST-XXXXXX, its writer's process
 * and host: a writer killed mid-save leaves it, and the next save of DIR
 * removes those of this host whose writer is gone (kill(PID, 0) says
 * ESRCH), so kills during save_every do not pile up partial copies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "runtime/role.h"

#define MANIFEST "MANIFEST"
#define MAGIC "tfg checkpoint 1"
#define MAGIC2 "tfg checkpoint 2" /* with shards' part= fields */
#define MAX_MANIFEST ((long)16 << 20)
#define MAX_LINE 4096

/* The file name of variable v in a checkpoint. */
static void
file_of(char *buf, size_t n, const RtVar *v)
{
	size_t k = 0;

	for (const char *p = v->name; *p && k + 5 < n; p++)
		buf[k++] = *p == '/' ? '.' : *p;
	snprintf(buf + k, n - k, ".npy");
}

static void
shape_of(char *buf, size_t n, const TfgShape *s)
{
	size_t k = (size_t)snprintf(buf, n, "[");

	for (int i = 0; i < s->rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
				      (long long)s->dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

/* CRC-32 and size of the file at path; -1 with errno when unreadable. */
static int
file_crc(const char *path, uint32_t *crc, long long *size)
{
	unsigned char buf[1 << 16];
	uLong c = crc32(0L, Z_NULL, 0);
	FILE *f = fopen(path, "rb");
	size_t n;

	*size = 0;
	if (f == NULL)
		return -1;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		c = crc32(c, buf, (uInt)n);
		*size += (long long)n;
	}
	n = (size_t)ferror(f);
	fclose(f);
	if (n) {
		errno = EIO;
		return -1;
	}
	*crc = (uint32_t)c;
	return 0;
}

/* fsync of a file or directory; 0 or -1 with errno. */
static int
sync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) |
			    O_CLOEXEC);
	int rv;

	if (fd < 0)
		return -1;
	rv = fsync(fd);
	close(fd);
	return rv;
}

/* Removes directory tmp and the files in it (no subdirectories). */
static void
remove_dir(const char *tmp, const TfgPlan *plan)
{
	char path[2 * PATH_MAX], file[512];

	for (int i = 0; i < plan->nvar; i++) {
		file_of(file, sizeof file, &plan->vars[i]);
		snprintf(path, sizeof path, "%s/%s", tmp, file);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/%s", tmp, MANIFEST);
	unlink(path);
	rmdir(tmp);
}

/* Removes directory path and the plain files in it. */
static void
remove_tree(const char *path)
{
	char file[2 * PATH_MAX];
	DIR *d = opendir(path);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(file, sizeof file, "%s/%s", path, de->d_name) <
		    (int)sizeof file)
			unlink(file);
	}
	closedir(d);
	rmdir(path);
}

/* Removes the temporaries of saves of dir (base name `base` in `parent`)
 * whose writer, a process of this host, is gone. */
static void
remove_orphans(const char *parent, const char *base)
{
	char host[256], path[2 * PATH_MAX];
	size_t nb = strlen(base);
	DIR *d = opendir(parent);
	struct dirent *de;

	if (d == NULL)
		return;
	if (gethostname(host, sizeof host) != 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	while ((de = readdir(d)) != NULL) {
		const char *s = de->d_name, *at, *dash;
		char *end;
		long pid;

		if (strncmp(s, base, nb) != 0 ||
		    strncmp(s + nb, ".tmp-", 5) != 0)
			continue;
		s += nb + 5;
		pid = strtol(s, &end, 10);
		at = end;
		dash = strrchr(s, '-');
		if (end == s || pid <= 0 || *at != '@' || !dash || dash < at ||
		    (size_t)(dash - at - 1) != strlen(host) ||
		    strncmp(at + 1, host, strlen(host)) != 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* alive, or not ours to know */
		if (snprintf(path, sizeof path, "%s/%s", parent, de->d_name) <
		    (int)sizeof path)
			remove_tree(path);
	}
	closedir(d);
}

/* Writes the files of the checkpoint into directory tmp. */
static tfg_status
write_files(const char *tmp, const TfgPlan *plan, RtTensor *const *val,
	    TfgError *e)
{
	char path[2 * PATH_MAX], file[512], sh[256];
	FILE *m;
	tfg_status st;
	int shards = 0;

	snprintf(path, sizeof path, "%s/%s", tmp, MANIFEST);
	if ((m = fopen(path, "w")) == NULL)
		return tfg_error(e, TFG_EIO, "%s: cannot create: %s", path,
				 strerror(errno));
	for (int i = 0; i < plan->nvar; i++)
		shards |= plan->vars[i].part.whole != NULL;
	fprintf(m, "%s\nvariables %d\n", shards ? MAGIC2 : MAGIC, plan->nvar);
	for (int i = 0; i < plan->nvar; i++) {
		const RtVar *v = &plan->vars[i];
		uint32_t crc;
		long long size;

		file_of(file, sizeof file, v);
		snprintf(path, sizeof path, "%s/%s", tmp, file);
		if ((st = rt_npy_save(path, val[i], e)) != TFG_OK) {
			fclose(m);
			return st;
		}
		if (sync_path(path, 0) != 0 || file_crc(path, &crc, &size)) {
			fclose(m);
			return tfg_error(e, TFG_EIO, "%s: %s", path,
					 strerror(errno));
		}
		shape_of(sh, sizeof sh, &v->shape);
		fprintf(m, "%s\t%s\t%s\t%s\t%s\tcrc32=%08x\tbytes=%lld",
			v->name, file, plan->tasks[v->task].name,
			tfg_dtype_name(v->dtype), sh, crc, size);
		if (v->part.whole)
			fprintf(m, "\tpart=%d/%d:%s:%lld:%s", v->part.k,
				v->part.n, v->part.mod ? "mod" : "div",
				(long long)v->part.rows, v->part.whole);
		fputc('\n', m);
	}
	if (fflush(m) != 0 || fsync(fileno(m)) != 0) {
		int err = errno;

		fclose(m);
		return tfg_error(e, TFG_EIO, "%s/%s: write failed: %s", tmp,
				 MANIFEST, strerror(err));
	}
	if (fclose(m) != 0)
		return tfg_error(e, TFG_EIO, "%s/%s: write failed: %s", tmp,
				 MANIFEST, strerror(errno));
	return TFG_OK;
}

/* The new checkpoint at tmp becomes dir: swapped in one step, the old
 * one then at tmp.  Where the file system cannot swap, the old one is
 * first renamed away (a crash right then leaves both whole, neither at
 * dir).  0, or -1 with errno. */
static int
put_in_place(char *tmp, const char *dir, int exists)
{
	char old[PATH_MAX];

	if (!exists)
		return rename(tmp, dir);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	snprintf(old, sizeof old, "%s.old-XXXXXX", dir);
	if (mkdtemp(old) == NULL || rmdir(old) != 0 || rename(dir, old) != 0)
		return -1;
	if (rename(tmp, dir) != 0) {
		int err = errno;

		rename(old, dir);
		errno = err;
		return -1;
	}
	snprintf(tmp, PATH_MAX, "%s", old);
	return 0;
}

tfg_status
rt_ckpt_save(const TfgPlan *plan, const char *dir, RtTensor *const *val,
	     TfgError *e)
{
	char tmp[PATH_MAX], parent[PATH_MAX], name[PATH_MAX], host[64];
	char *slash;
	struct stat sb;
	tfg_status st;
	int exists;

	if (strlen(dir) == 0 || strlen(dir) > PATH_MAX - 64)
		return tfg_error(e, TFG_EINVAL, "'%s' is no directory name",
				 dir);
	for (int i = 0; i < plan->nvar; i++)
		if (val[i] == NULL || val[i]->dtype != plan->vars[i].dtype ||
		    !tfg_shape_eq(&val[i]->shape, &plan->vars[i].shape))
			return tfg_error(e, TFG_EINVAL, "saving %s: variable "
					 "'%s' has no value of its type",
					 dir, plan->vars[i].name);
	exists = stat(dir, &sb) == 0;
	if (exists && !S_ISDIR(sb.st_mode))
		return tfg_error(e, TFG_EINVAL, "cannot save a checkpoint to "
				 "%s: it is not a directory", dir);
	/* a fresh directory beside dir, so that the rename stays on one
	   file system; first those of writers that died go */
	snprintf(name, sizeof name, "%s", dir);
	while ((slash = strrchr(name, '/')) && slash[1] == '\0' &&
	       slash != name)
		*slash = '\0';
	snprintf(parent, sizeof parent, "%s", name);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		remove_orphans(parent[0] ? parent : "/", slash + 1);
	} else {
		remove_orphans(".", parent);
	}
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld@%s-XXXXXX", name,
		     (long)getpid(), host) >= (int)sizeof tmp)
		return tfg_error(e, TFG_EINVAL, "'%s' is no directory name",
				 dir);
	if (mkdtemp(tmp) == NULL)
		return tfg_error(e, TFG_EIO, "cannot save a checkpoint to "
				 "%s: %s", dir, strerror(errno));
	if ((st = write_files(tmp, plan, val, e)) != TFG_OK) {
		remove_dir(tmp, plan);
		return st;
	}
	if (sync_path(tmp, 1) != 0 || put_in_place(tmp, dir, exists) != 0) {
		int err = errno;

		remove_dir(tmp, plan);
		return tfg_error(e, TFG_EIO, "cannot save a checkpoint to "
				 "%s: %s", dir, strerror(err));
	}
	/* the old checkpoint, now at tmp, goes; the parent learns of the
	   new one */
	if (exists)
		remove_dir(tmp, plan);
	snprintf(parent, sizeof parent, "%s", dir);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	sync_path(slash ? (parent[0] ? parent : "/") : ".", 1);
	return TFG_OK;
}

/* --------------------------------------------------------------- restore */

/* One line of MANIFEST, split at its tabs. */
typedef struct Entry {
	char name[256], file[512], task[256], dtype[16], shape[256];
	uint32_t crc;
	long long bytes;
	int used;
	/* how it joins the other shards: part.whole NULL when unsplit, and
	   then as one shard of itself (a variable of rank >= 1) */
	RtShardOf part;
	char whole[256];
} Entry;

/* "K/N:STRATEGY:ROWS:WHOLE" into x->part; -1 when malformed. */
static int
parse_part(const char *s, Entry *x)
{
	char strategy[4];
	long long rows;
	int k, n, len;

	if (sscanf(s, "%d/%d:%3[a-z]:%lld:%n", &k, &n, strategy, &rows,
		   &len) != 4 || n < 1 || n > 1000000 || k < 0 || k >= n ||
	    rows < n || (strcmp(strategy, "div") && strcmp(strategy, "mod")) ||
	    s[len] == '\0' || strlen(s + len) >= sizeof x->whole)
		return -1;
	strcpy(x->whole, s + len);
	x->part = (RtShardOf){x->whole, k, n, strategy[0] == 'm', rows};
	return 0;
}

static int
parse_line(char *line, Entry *x)
{
	char *f[8];
	int n = 0;
	unsigned long crc;
	char *end;

	for (char *p = line; n < 8; n++) {
		f[n] = p;
		if ((p = strchr(p, '\t')) == NULL) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (n < 7 || n > 8 || strncmp(f[5], "crc32=", 6) != 0 ||
	    strncmp(f[6], "bytes=", 6) != 0 || strlen(f[0]) >= sizeof x->name ||
	    strlen(f[1]) >= sizeof x->file || strlen(f[2]) >= sizeof x->task ||
	    strlen(f[3]) >= sizeof x->dtype || strlen(f[4]) >= sizeof x->shape ||
	    strchr(f[1], '/') || f[1][0] == '.' || f[1][0] == '\0' ||
	    (n == 8 && (strncmp(f[7], "part=", 5) != 0 ||
			parse_part(f[7] + 5, x) != 0)))
		return -1;
	errno = 0;
	crc = strtoul(f[5] + 6, &end, 16);
	if (errno || *end || end == f[5] + 6 || crc > 0xffffffffUL)
		return -1;
	x->crc = (uint32_t)crc;
	x->bytes = strtoll(f[6] + 6, &end, 10);
	if (errno || *end || end == f[6] + 6 || x->bytes < 0)
		return -1;
	strcpy(x->name, f[0]);
	strcpy(x->file, f[1]);
	strcpy(x->task, f[2]);
	strcpy(x->dtype, f[3]);
	strcpy(x->shape, f[4]);
	return 0;
}

/* The entries of dir's MANIFEST into *out (malloc'd), *n of them. */
static tfg_status
read_manifest(const char *dir, Entry **out, int *n, TfgError *e)
{
	char path[2 * PATH_MAX], line[MAX_LINE];
	int nvar = -1, k = 0, lineno = 0;
	Entry *v = NULL;
	FILE *f;
	tfg_status st = TFG_OK;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
	if ((f = fopen(path, "r")) == NULL) {
		int err = errno;
		char note[PATH_MAX + 100];

		return tfg_error(e, err == ENOENT ? TFG_ENOENT : TFG_EIO,
				 "no checkpoint in %s: %s: %s%s", dir, path,
				 strerror(err), err == ENOENT ?
				 rt_relative_note(note, sizeof note, dir) : "");
	}
	while (st == TFG_OK && fgets(line, sizeof line, f)) {
		size_t len = strlen(line);

		lineno++;
		if (len == 0 || line[len - 1] != '\n') {
			st = tfg_error(e, TFG_EFORMAT, "%s:%d: a line is cut "
				       "short or too long", path, lineno);
			break;
		}
		line[len - 1] = '\0';
		if (lineno == 1) {
			if (strcmp(line, MAGIC) != 0 &&
			    strcmp(line, MAGIC2) != 0)
				st = tfg_error(e, TFG_EFORMAT, "%s: not a tfg "
					       "checkpoint manifest (expected "
					       "'%s')", path, MAGIC);
		} else if (lineno == 2) {
			char *end;

			if (strncmp(line, "variables ", 10) != 0 ||
			    (nvar = (int)strtol(line + 10, &end, 10)) < 0 ||
			    *end || nvar > 1000000 ||
			    !(v = calloc((size_t)nvar + 1, sizeof *v)))
				st = tfg_error(e, TFG_EFORMAT, "%s:2: expected "
					       "'variables N'", path);
		} else if (k >= nvar || parse_line(line, &v[k++]) != 0) {
			st = tfg_error(e, TFG_EFORMAT, "%s:%d: malformed "
				       "variable line", path, lineno);
		}
	}
	if (st == TFG_OK && ferror(f))
		st = tfg_error(e, TFG_EIO, "%s: read error", path);
	if (st == TFG_OK && (nvar < 0 || k != nvar))
		st = tfg_error(e, TFG_EFORMAT, "%s: truncated: %d of %d "
			       "variables listed", path, k, nvar < 0 ? 0 : nvar);
	fclose(f);
	if (st != TFG_OK) {
		free(v);
		return st;
	}
	*out = v;
	*n = nvar;
	return TFG_OK;
}

/* Checks entry x against a variable `name` of dtype t and shape sh and
 * loads its file into *out. */
static tfg_status
load_entry(const char *dir, const char *name, TfgDtype t,
	   const TfgShape *shape, const Entry *x, RtTensor **out, TfgError *e)
{
	char path[2 * PATH_MAX], sh[256];
	uint32_t crc;
	long long size;
	tfg_status st;

	shape_of(sh, sizeof sh, shape);
	if (strcmp(x->dtype, tfg_dtype_name(t)) != 0 ||
	    strcmp(x->shape, sh) != 0)
		return tfg_error(e, TFG_ESHAPE, "%s: variable '%s' is %s%s "
				 "in the checkpoint, %s%s in the program", dir,
				 name, x->dtype, x->shape, tfg_dtype_name(t),
				 sh);
	snprintf(path, sizeof path, "%s/%s", dir, x->file);
	if (file_crc(path, &crc, &size) != 0)
		return tfg_error(e, TFG_EIO, "%s: variable '%s': %s", path,
				 name, strerror(errno));
	if (size != x->bytes)
		return tfg_error(e, TFG_EFORMAT, "%s: variable '%s': %lld "
				 "bytes, the manifest says %lld (truncated?)",
				 path, name, size, x->bytes);
	if (crc != x->crc)
		return tfg_error(e, TFG_EFORMAT, "%s: variable '%s': CRC-32 "
				 "%08x, the manifest says %08x (damaged)", path,
				 name, crc, x->crc);
	if ((st = rt_npy_load(out, path, e)) != TFG_OK) {
		char why[sizeof e->msg];

		snprintf(why, sizeof why, "%s", e->msg);
		return tfg_error(e, st, "variable '%s': %s", name, why);
	}
	if ((*out)->dtype != t || !tfg_shape_eq(&(*out)->shape, shape)) {
		rt_tensor_free(*out);
		*out = NULL;
		return tfg_error(e, TFG_ESHAPE, "%s: variable '%s': the file "
				 "holds another dtype or shape than %s%s",
				 path, name, tfg_dtype_name(t), sh);
	}
	return TFG_OK;
}

/* ------------------------------------------------------- re-splitting */

static int64_t
part_rows(const RtShardOf *p, int k)
{
	return tfg_shard_rows(p->rows, p->n, p->mod, k);
}

/* Which shard of p holds the whole's row g, and at which of its rows. */
static int
part_of(const RtShardOf *p, int64_t g, int64_t *row)
{
	int64_t base = p->rows / p->n, extra = p->rows % p->n;
	int64_t long_rows = extra * (base + 1);

	if (p->mod) {
		*row = g / p->n;
		return (int)(g % p->n);
	}
	if (g < long_rows) {
		*row = g % (base + 1);
		return (int)(g / (base + 1));
	}
	*row = (g - long_rows) % base;
	return (int)(extra + (g - long_rows) / base);
}

/* "[a,b]" into *sh; -1 when it is no shape. */
static int
parse_shape(const char *s, TfgShape *sh)
{
	char *end;

	memset(sh, 0, sizeof *sh);
	if (*s++ != '[')
		return -1;
	while (*s != ']') {
		if (sh->rank == TFG_MAX_RANK || (sh->rank && *s++ != ','))
			return -1;
		errno = 0;
		sh->dims[sh->rank++] = strtoll(s, &end, 10);
		if (errno || end == s || sh->dims[sh->rank - 1] < 0)
			return -1;
		s = end;
	}
	return s[1] == '\0' ? 0 : -1;
}

/* How v joins: its part, or as the one shard of itself when unsplit
 * (rank >= 1).  0 when it cannot be split (a scalar). */
static int
split_of(const char *name, const TfgShape *sh, const RtShardOf *part,
	 RtShardOf *out)
{
	if (part->whole) {
		*out = *part;
		return 1;
	}
	if (sh->rank < 1 || sh->dims[0] < 1)
		return 0;
	*out = (RtShardOf){name, 0, 1, 0, sh->dims[0]};
	return 1;
}

static int
same_split(const RtShardOf *a, const RtShardOf *b)
{
	return strcmp(a->whole, b->whole) == 0 && a->n == b->n &&
	       a->mod == b->mod && a->rows == b->rows;
}

/* An entry's split, its shape read: 0 when it has none. */
static int
entry_split(const Entry *x, TfgShape *sh, RtShardOf *out)
{
	if (parse_shape(x->shape, sh) != 0)
		return 0;
	return split_of(x->name, sh, &x->part, out);
}

/* The whole's shape and dtype as "f32[7,2]", shard shape sh, split p. */
static void
whole_text(char *buf, size_t n, const char *dtype, const TfgShape *sh,
	   const RtShardOf *p, int split)
{
	TfgShape w = *sh;
	char s[256];

	w.dims[0] = p->rows;
	shape_of(s, sizeof s, &w);
	if (!split)
		snprintf(buf, n, "%s%s (not partitioned)", dtype, s);
	else
		snprintf(buf, n, "%s%s (%d shard%s%s)", dtype, s, p->n,
			 p->n == 1 ? "" : "s", p->mod ? ", mod" : "");
}

/* The program's variables that are shards of `whole` (from the plan's
 * variable i on) take their rows from the checkpoint's shards of it,
 * which are checked to join into the same whole first. */
static tfg_status
resplit(const char *dir, const TfgPlan *plan, int i, const char *whole,
	Entry *x, int n, RtTensor **val, TfgError *e)
{
	const RtVar *v = &plan->vars[i];
	RtShardOf want, have = {0}, p;
	RtTensor **src;
	const Entry **from;
	const char *dtype = "";
	TfgShape sh, first = {0};
	char a[300], b[300];
	size_t rowbytes;
	tfg_status st = TFG_OK;
	int nsrc = 0;

	split_of(v->name, &v->shape, &v->part, &want);
	/* the checkpoint's shards of it: one split, every shard once */
	for (int k = 0; k < n; k++) {
		if (!entry_split(&x[k], &sh, &p) || strcmp(p.whole, whole))
			continue;
		if (nsrc++ == 0) {
			have = p;
			first = sh;
			dtype = x[k].dtype;
		} else if (!same_split(&p, &have))
			return tfg_error(e, TFG_EFORMAT, "%s: the shards of "
					 "variable '%s' in the checkpoint do "
					 "not agree on how it is split (%s is "
					 "shard %d of %d of %lld rows, %s)",
					 dir, whole, x[k].name, p.k, p.n,
					 (long long)p.rows, p.mod ? "mod" :
					 "div");
		if (sh.rank != first.rank ||
		    memcmp(sh.dims + 1, first.dims + 1,
			   (size_t)(sh.rank - 1) * sizeof *sh.dims) ||
		    strcmp(x[k].dtype, dtype) ||
		    sh.dims[0] != part_rows(&p, p.k))
			return tfg_error(e, TFG_EFORMAT, "%s: variable '%s' is "
					 "%s%s in the checkpoint, which is no "
					 "shard %d of %d of '%s' (%lld rows): "
					 "its shards do not add up to the "
					 "variable's shape", dir, x[k].name,
					 x[k].dtype, x[k].shape, p.k, p.n,
					 whole, (long long)p.rows);
	}
	if (nsrc == 0 || have.n > n)
		return tfg_error(e, TFG_ENOENT, "%s: variable '%s' is not in "
				 "the checkpoint", dir, whole);
	if (!(from = calloc((size_t)have.n, sizeof *from)) ||
	    !(src = calloc((size_t)have.n, sizeof *src))) {
		free(from);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	for (int k = 0; k < n && st == TFG_OK; k++) {
		if (!entry_split(&x[k], &sh, &p) || strcmp(p.whole, whole))
			continue;
		if (from[p.k])
			st = tfg_error(e, TFG_EFORMAT, "%s: shard %d of "
				       "variable '%s' is in the checkpoint "
				       "twice (%s, %s)", dir, p.k, whole,
				       from[p.k]->name, x[k].name);
		from[p.k] = &x[k];
	}
	for (int k = 0; k < have.n && st == TFG_OK; k++)
		if (!from[k])
			st = tfg_error(e, TFG_EFORMAT, "%s: variable '%s' is "
				       "split into %d shards in the checkpoint, "
				       "and shard %d is missing: its shards do "
				       "not add up to the variable's shape",
				       dir, whole, have.n, k);
	if (st == TFG_OK &&
	    (have.rows != want.rows || strcmp(from[0]->dtype,
					      tfg_dtype_name(v->dtype)) ||
	     first.rank != v->shape.rank ||
	     memcmp(first.dims + 1, v->shape.dims + 1,
		    (size_t)(first.rank - 1) * sizeof *first.dims))) {
		whole_text(a, sizeof a, from[0]->dtype, &first, &have,
			   from[0]->part.whole != NULL);
		whole_text(b, sizeof b, tfg_dtype_name(v->dtype), &v->shape,
			   &want, v->part.whole != NULL);
		st = tfg_error(e, TFG_ESHAPE, "%s: variable '%s' is %s in the "
			       "checkpoint, %s in the program", dir, whole, a,
			       b);
	}
	for (int k = 0; k < have.n && st == TFG_OK; k++) {
		TfgShape s;

		parse_shape(from[k]->shape, &s);
		((Entry *)from[k])->used++;
		st = load_entry(dir, from[k]->name, v->dtype, &s, from[k],
				&src[k], e);
	}
	/* each of the program's shards its rows of the whole */
	rowbytes = tfg_dtype_size(v->dtype);
	for (int d = 1; d < v->shape.rank; d++)
		rowbytes *= (size_t)v->shape.dims[d];
	for (int j = i; j < plan->nvar && st == TFG_OK; j++) {
		const RtVar *u = &plan->vars[j];
		RtShardOf q;

		if (u->hidden || !split_of(u->name, &u->shape, &u->part, &q) ||
		    strcmp(q.whole, whole) || val[j])
			continue;
		if (!same_split(&q, &want) || u->dtype != v->dtype ||
		    u->shape.rank != v->shape.rank ||
		    u->shape.dims[0] != part_rows(&q, q.k) ||
		    memcmp(u->shape.dims + 1, v->shape.dims + 1,
			   (size_t)(v->shape.rank - 1) * sizeof *v->shape.dims)) {
			st = tfg_error(e, TFG_EINVAL, "the program's shards of "
				       "'%s' do not join (%s)", whole, u->name);
			break;
		}
		if (rt_tensor_new(&val[j], u->dtype, &u->shape) != TFG_OK) {
			st = tfg_error(e, TFG_ENOMEM, "out of memory");
			break;
		}
		for (int64_t r = 0; r < u->shape.dims[0]; r++) {
			int64_t at, g = tfg_shard_first(q.rows, q.n, q.mod, q.k) +
					r * (q.mod ? q.n : 1);
			int k = part_of(&have, g, &at);

			memcpy((char *)val[j]->data + (size_t)r * rowbytes,
			       (char *)src[k]->data + (size_t)at * rowbytes,
			       rowbytes);
		}
	}
	for (int k = 0; k < have.n; k++)
		rt_tensor_free(src[k]);
	free(src);
	free(from);
	return st;
}

/* Whether a checkpoint's variable is internal state that the compiler
 * made (a random maker's draws "w/random", an optimizer's slots): its
 * name is no identifier of the program, having a '/'. */
static int
internal(const char *name)
{
	return strchr(name, '/') != NULL;
}

/* The note of what the checkpoint has that the program does not: the
 * names the user gave, and a count of the internal ones. */
static void
left_out(const char *dir, const Entry *x, int n, char *note, size_t size)
{
	size_t k = 0;
	int named = 0, hidden = 0;

	note[0] = '\0';
	for (int i = 0; i < n; i++)
		if (!x[i].used)
			named += !internal(x[i].name), hidden += internal(x[i].name);
	if (named == 0 && hidden == 0)
		return;
	k = (size_t)snprintf(note, size, "%s: left out %d variable%s of the "
			     "checkpoint that the program does not have",
			     dir, named + hidden, named + hidden == 1 ? "" : "s");
	for (int i = 0, j = 0; i < n && k < size; i++)
		if (!x[i].used && !internal(x[i].name))
			k += (size_t)snprintf(note + k, size - k, "%s%s",
					      j++ ? ", " : ": ", x[i].name);
	if (hidden && k < size)
		snprintf(note + k, size - k, "%s%d of their internal state",
			 named ? " and " : ": ", hidden);
}

/* Whether the checkpoint has shards of variable whole (or whole
 * unsplit too, when shards_only is 0). */
static int
has_shards(const Entry *x, int n, const char *whole, int shards_only)
{
	TfgShape sh;
	RtShardOf p;

	for (int k = 0; k < n; k++)
		if (entry_split(&x[k], &sh, &p) && strcmp(p.whole, whole) == 0 &&
		    (x[k].part.whole || !shards_only))
			return 1;
	return 0;
}

tfg_status
rt_ckpt_load(const TfgPlan *plan, const char *dir, RtTensor **val,
	     char *note, size_t nnote, TfgError *e)
{
	Entry *x;
	int n;
	tfg_status st;

	note[0] = '\0';
	for (int i = 0; i < plan->nvar; i++)
		val[i] = NULL;
	if ((st = read_manifest(dir, &x, &n, e)) != TFG_OK)
		return st;
	for (int i = 0; i < plan->nvar && st == TFG_OK; i++) {
		const RtVar *v = &plan->vars[i];
		RtShardOf mine = {0}, theirs;
		TfgShape sh;
		int k = 0, split = split_of(v->name, &v->shape, &v->part,
					     &mine);

		if (val[i]) /* cut from its whole's shards already */
			continue;
		while (k < n && strcmp(x[k].name, v->name) != 0)
			k++;
		/* split otherwise than in the checkpoint, a shard on
		   either side: cut anew */
		if (split && (k == n ? has_shards(x, n, mine.whole,
						  !v->part.whole)
				     : entry_split(&x[k], &sh, &theirs) &&
				       !same_split(&mine, &theirs) &&
				       (v->part.whole || x[k].part.whole)))
			st = resplit(dir, plan, i, mine.whole, x, n, val, e);
		else if (k == n && v->hidden) { /* its draws from the start */
			if (rt_tensor_new(&val[i], v->dtype, &v->shape) !=
			    TFG_OK)
				st = tfg_error(e, TFG_ENOMEM, "out of memory");
			else
				memset(val[i]->data, 0, val[i]->nbytes);
		} else if (k == n)
			st = tfg_error(e, TFG_ENOENT, "%s: variable '%s' is not "
				       "in the checkpoint (a checkpoint restores "
				       "the variables it has, and the program "
				       "needs every one of its own)", dir,
				       v->name);
		else if (x[k].used++)
			st = tfg_error(e, TFG_EFORMAT, "%s: variable '%s' is "
				       "in the checkpoint twice", dir, v->name);
		else
			st = load_entry(dir, v->name, v->dtype, &v->shape,
					&x[k], &val[i], e);
	}
	if (st == TFG_OK)
		left_out(dir, x, n, note, nnote);
	free(x);
	if (st != TFG_OK)
		for (int i = 0; i < plan->nvar; i++) {
			rt_tensor_free(val[i]);
			val[i] = NULL;
		}
	return st;
}
