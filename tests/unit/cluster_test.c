/*
 * tests/unit/cluster_test.c: where a server's cluster, task and hosts come
 * from (compiler/cluster.c; spec §10.6 "Launchers and cluster managers"):
 * TF_CONFIG as TensorFlow reads it, the launchers' ranks in
 * their order, and the nodes of a Slurm step of several nodes given to
 * the ranks by block distribution, which the one-node Slurm of
 * tests/slurm/run.sh cannot show.  The environment is set as srun and
 * mpirun set it; the step's host list is expanded by Debian's scontrol
 * itself (it needs only a slurm.conf to read, written here).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiler_int.h"
#include "tests/unit/test.h"

static const char *const vars[] = {
	"TF_CONFIG", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE",
	"MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
	"SLURM_NTASKS", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
	"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
	"SLURM_DISTRIBUTION", "SLURMD_NODENAME", NULL};

static const char prog[] =
	"cluster { ps = [\":2222\"]; worker = [\":2223\", \"w1:2224\"] }\n"
	"device \"/job:worker/task:1\" { y = 2 }\n"
	"session { print run(y) }\n";

/* One compilation of src with the cluster of the environment (and of
 * --cluster path, if not NULL), its diagnostics in err. */
typedef struct Env {
	Arena *ar;
	ClusterEnv ce;
	CompileOptions co;
	Program p;
	Diag d;
	FILE *errf;
	char *err;
	size_t nerr;
	int rc;
} Env;

static void
env_compile(Env *e, const char *src)
{
	memset(e, 0, sizeof *e);
	e->ar = arena_new();
	e->errf = open_memstream(&e->err, &e->nerr);
	diag_init(&e->d, e->errf);
	e->rc = cluster_load(&e->ce, e->ar, NULL, &e->d);
	if (e->rc == 0) {
		e->co.cluster = e->ce.cluster;
		e->co.cluster_from = e->ce.from;
		e->co.generic_ok = 1;
		e->co.source = src_from_string(e->ar, "p.tfg", src);
		e->rc = compile_file(&e->p, "p.tfg", &e->co, &e->d);
	}
	fflush(e->errf);
}

static void
env_free(Env *e)
{
	fclose(e->errf);
	free(e->err);
	arena_free(e->p.arena);
	arena_free(e->ar);
}

static void
clear_env(void)
{
	for (int i = 0; vars[i]; i++)
		unsetenv(vars[i]);
}

static void
t_tf_config(void)
{
	Env e;

	clear_env();
	setenv("TF_CONFIG", "{\"cluster\": {\"worker\": [\"a:1\", \"b:1\", "
	       "\"c:1\"], \"ps\": [\"p:1\"], \"chief\": [\"x:1\"]}, "
	       "\"task\": {\"type\": \"worker\", \"index\": 2}, "
	       "\"environment\": \"cloud\"}", 1);
	env_compile(&e, prog);
	ASSERT_EQ(e.rc, 0);
	ASSERT_STREQ(e.ce.from, "TF_CONFIG");
	/* the program's jobs first, in its order, then the JSON's own */
	ASSERT_EQ(e.p.ntask, 5);
	ASSERT_STREQ(e.p.tasks[0].name, "/job:ps/task:0");
	ASSERT_STREQ(e.p.tasks[3].name, "/job:worker/task:2");
	ASSERT_STREQ(e.p.tasks[3].addr, "c:1");
	ASSERT_STREQ(e.p.tasks[4].name, "/job:chief/task:0");
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 3);
	env_free(&e);
	/* the index may be left out (0), as TensorFlow reads it */
	setenv("TF_CONFIG", "{\"task\": {\"type\": \"worker\"}}", 1);
	env_compile(&e, prog);
	ASSERT_EQ(e.rc, 0);
	ASSERT(e.ce.cluster == NULL);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 1);
	env_free(&e);
	/* empty: no TF_CONFIG; and no launcher either */
	setenv("TF_CONFIG", " ", 1);
	env_compile(&e, prog);
	ASSERT_EQ(e.rc, 0);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), -2);
	env_free(&e);
	clear_env();
}

/* mpirun's rank wins over the SLURM_PROCID it inherits in an sbatch
 * script; every rank on this node: the hostless tasks are localhost's. */
static void
t_precedence(void)
{
	Env e;

	clear_env();
	setenv("SLURM_PROCID", "0", 1);
	setenv("SLURM_NTASKS", "1", 1);
	setenv("PMI_RANK", "0", 1);
	setenv("PMI_SIZE", "7", 1);
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
	env_compile(&e, prog);
	ASSERT_EQ(e.rc, 0);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 2);
	ASSERT_STREQ(e.ce.launcher, "mpirun");
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), 0);
	ASSERT_STREQ(e.p.tasks[0].addr, "localhost:2222");
	ASSERT_STREQ(e.p.plan->tasks[1].addr, "localhost:2223");
	ASSERT_STREQ(e.p.tasks[2].addr, "w1:2224");
	env_free(&e);
	/* ranks on other nodes too: no host to give */
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 2);
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), -1);
	env_free(&e);
	/* PMI's, when mpirun's are not there; its size must be the
	   cluster's */
	unsetenv("OMPI_COMM_WORLD_RANK");
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), -1);
	env_free(&e);
	setenv("PMI_SIZE", "3", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 0);
	ASSERT_STREQ(e.ce.launcher, "the MPI launcher");
	env_free(&e);
	/* a rank that is no number */
	setenv("PMI_RANK", "x", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), -1);
	env_free(&e);
	clear_env();
}

/* A slurm.conf for scontrol to read; its path is static. */
static const char *
slurm_conf(void)
{
	static char path[] = "/tmp/tfg-cluster-test.XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "ClusterName=t\nSlurmctldHost=localhost\n"
				   "NodeName=n[1-3]\n";

	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, sizeof text - 1), (long)sizeof text - 1);
	close(fd);
	return path;
}

/* srun -n 3 over nodes n1 and n2 (SLURM_STEP_TASKS_PER_NODE "2,1"): the
 * ranks fill n1, then n2; a task with a host keeps it. */
static void
t_slurm_block(void)
{
	const char *conf = slurm_conf();
	Env e;

	clear_env();
	setenv("SLURM_CONF", conf, 1);
	setenv("SLURM_PROCID", "1", 1);
	setenv("SLURM_NTASKS", "3", 1);
	setenv("SLURM_STEP_NUM_TASKS", "3", 1);
	setenv("SLURM_STEP_NODELIST", "n[1-2]", 1);
	setenv("SLURM_STEP_TASKS_PER_NODE", "2,1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 1);
	ASSERT_STREQ(e.ce.launcher, "srun");
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), 0);
	ASSERT_STREQ(e.p.tasks[0].addr, "n1:2222");
	ASSERT_STREQ(e.p.tasks[1].addr, "n1:2223");
	ASSERT_STREQ(e.p.tasks[2].addr, "w1:2224");
	env_free(&e);
	/* one a node, "1(x3)" */
	setenv("SLURM_STEP_NODELIST", "n[1-3]", 1);
	setenv("SLURM_STEP_TASKS_PER_NODE", "1(x3)", 1);
	setenv("SLURMD_NODENAME", "n2", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 1);
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), 0);
	ASSERT_STREQ(e.p.tasks[0].addr, "n1:2222");
	ASSERT_STREQ(e.p.tasks[1].addr, "n2:2223");
	env_free(&e);
	/* srun put the rank elsewhere than block distribution would */
	setenv("SLURMD_NODENAME", "n3", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 1);
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), -1);
	env_free(&e);
	/* counts that do not match the nodes */
	setenv("SLURMD_NODENAME", "n2", 1);
	setenv("SLURM_STEP_TASKS_PER_NODE", "2,1", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), 1);
	ASSERT_EQ(cluster_hosts(&e.ce, &e.p), -1);
	env_free(&e);
	/* the size of the step, not of the job, must be the cluster's */
	setenv("SLURM_STEP_NUM_TASKS", "2", 1);
	env_compile(&e, prog);
	ASSERT_EQ(cluster_task(&e.ce, &e.p, &e.d), -1);
	env_free(&e);
	unlink(conf);
	clear_env();
	unsetenv("SLURM_CONF");
}

/* A cluster file in TF_CONFIG's shape ({"cluster": {...}}): the job
 * 'cluster' is refused, with a note saying what the file holds; its one
 * long line is shown as a window around the caret (lang/diag.c). */
static void
t_file_nested(void)
{
	char path[] = "/tmp/tfg-cluster-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	Arena *ar = arena_new();
	ClusterEnv ce;
	Diag d;
	char *err = NULL;
	size_t nerr = 0;
	FILE *errf = open_memstream(&err, &nerr);

	ASSERT(f != NULL);
	fputs("{\"cluster\": {\"ps\": [\"localhost:31000\"], \"worker\": [", f);
	for (int i = 0; i < 32; i++)
		fprintf(f, "%s\"localhost:%d\"", i ? ", " : "", 31001 + i);
	fputs("]}}\n", f);
	fclose(f);
	clear_env();
	diag_init(&d, errf);
	ASSERT(cluster_load(&ce, ar, path, &d) != 0);
	fflush(errf);
	ASSERT(strstr(err, ":1:13: error: job 'cluster' must be a list of "
		      "\"host:port\" addresses, not an object"));
	ASSERT(strstr(err, "note: a cluster file holds the jobs alone, "
		      "{\"ps\": [...], \"worker\": [...]}; the {\"cluster\": "
		      "..., \"task\": ...} of TF_CONFIG goes in that variable"));
	/* 160 bytes of the 600-byte line, cut with "..." */
	ASSERT(strstr(err, "\"localhost:310...\n"));
	ASSERT(strstr(err, "localhost:31031") == NULL);
	fclose(errf);
	free(err);
	unlink(path);
	arena_free(ar);
}

TEST_MAIN({"tf_config", t_tf_config}, {"file_nested", t_file_nested},
	  {"precedence", t_precedence},
	  {"slurm_block", t_slurm_block})
