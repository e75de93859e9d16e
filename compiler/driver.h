/*
 * compiler/driver.h: tfgc's command line, shared by the driver
 * (compiler/driver.c: parsing, tfgc_main) and the commands it runs:
 * compiler/cmd_build.c (emit, compile), compiler/cmd_run.c (run, server,
 * stop's options), compiler/cmd_fmt.c (fmt).
 */
#ifndef TFG_COMPILER_DRIVER_H
#define TFG_COMPILER_DRIVER_H

#include "compiler/compiler_int.h"

/* The parsed command line: each option's value where compiler/help.def's
 * SET column puts it. */
typedef struct Args {
	int cmd;           /* CMD_<ID> of compiler/help.def */
	const char *file, *emit, *job, *cpu;
	const char *output, *name, *part; /* compile, plot -o; compile --name;
					     server --part */
	const char *x, *y, *size; /* plot --x, --y, --size */
	const char *cluster; /* --cluster FILE.json */
	const char *restore; /* run, server --restore DIR */
	const char *key;     /* --cluster-key FILE, or run's own */
	int no_key;          /* run --no-cluster-key */
	int no_shm;          /* --no-shm */
	const char *tls[3];  /* --tls-cert, --tls-key, --tls-ca FILE */
	const char *trace;   /* --trace FILE */
	int stats;           /* run --stats */
	const char *chief;   /* server --chief J:T or none */
	const char *listen;  /* run, stop --listen HOST:PORT */
	int stop;            /* run --attach --stop */
	int no_progress;     /* run --no-progress */
	double progress_every; /* run --progress-every S; < 0 unset */
	int soft_placement;  /* --soft-placement */
	int prefer_gpu;      /* --prefer-gpu */
	int gpu_tf32;        /* --gpu-tf32 */
	int check_numerics;  /* --check-numerics */
	int gpu_cc;          /* --gpu-arch sm_NN: NN; 0 unset */
	int shared;        /* compile --shared */
	int task;          /* --task for server: index; -1 unset */
	const char *task_s; /* --task J:T for emit */
	int opt_level;
	int log_placement, free_ports, attach, verbose;
	int picked_ports; /* server: --picked-ports, from tfgc run */
	int from_run;     /* server: --from-run, started by tfgc run (with
			     --free-ports too when its ports are picked) */
	uint64_t run_id;  /* run: its identity (not --attach); server:
			     --run-id, its run's (TfgOptions.run) */
	unsigned skip;     /* -fno-NAME: CompileOptions.skip */
	double startup_timeout, step_timeout; /* step: 0, none */
	double heartbeat_timeout;
	int max_specs;     /* --max-specs; 0: the runtime's default */
	PtrVec addr; /* --addr values */
	PtrVec feed, fetch, out; /* run --feed x=a.npy --fetch y --out y.npy */
	PtrVec shape;            /* --shape x=100,784 */
	PtrVec param;            /* --param n=8192 */
} Args;

/* A usage error of a's command: the message, the command's usage, and
 * where to read more (compiler/help.c); 2. */
#define bad_usage(a, ...) help_usage_error((a)->cmd, __VA_ARGS__)

/* driver.c: an option (the n bytes at s) that a's command does not take:
 * another command's, or none (with the nearest of the command's, where
 * one is near); 2. */
int unknown_option(const Args *a, const char *s, size_t n);

/* --task: "J:T" or "/job:J/task:T". */
int task_matches(const char *spec, const CTask *t);

/* cmd_build.c: tfgc emit (--emit=MODE after compile_file's passes up to
 * its stage) and tfgc compile (the program compiled by compile_file). */
int cmd_emit(Args *a, Program *p, CompileOptions *co, Diag *d);
int cmd_compile(Args *a, Program *p);

/* cmd_run.c: the runtime's options from the command line; tfgc server
 * and tfgc run of a compiled program. */
TfgOptions runtime_options(const Args *a);
int cmd_server(Args *a, Program *p, ClusterEnv *ce);
int cmd_run(Args *a, Program *p);

/* cmd_fmt.c: tfgc fmt [-w | --check] [FILE...], from its arguments. */
int cmd_fmt(int argc, char **argv);

#endif /* TFG_COMPILER_DRIVER_H */
