#!/bin/sh
# `mpirun -n 3 tfgc server prog.tfg` runs a whole program and exits 0:
# each rank serves task OMPI_COMM_WORLD_RANK of the cluster, in cluster
# order, and the first job's task 0 drives the run
# (spec §10.6 "Launchers and cluster managers", spec/design.md
# "Launchers").  Open
# MPI's mpirun (openmpi-bin, which make deps installs), run as root here,
# with more ranks than the machine's 2 cores.
. tests/integration/common.inc

command -v mpirun >/dev/null ||
	fail "no mpirun: make deps installs Debian's openmpi-bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keyed, as a cluster should be: a tfgc server without a key warns
# (spec §10.1.1 "Cluster keys"); mpirun hands the environment to its ranks.
head -c 32 /dev/urandom >"$T/key"
export TFG_CLUSTER_KEY="$T/key"
mpi() { # N ARGS...: tfgc server ARGS under mpirun -n N, at most 60 s
	_n=$1
	shift
	timeout -k 5 60 mpirun --oversubscribe -n "$_n" $TFGC server "$@"
}

p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
cat >"$T/p.tfg" <<EOF
cluster {
    ps = ["127.0.0.1:$p0"]
    worker = ["127.0.0.1:$p1", "127.0.0.1:$p2"]
}
device "/job:ps/task:0" { var v = 0.0 }
inc = assign_add(v, 1.0)
session "/job:ps/task:0" { initialize() }
parallel {
    session each "/job:worker" as w {
        for i in 0..5 { run(inc) }
    }
}
session "/job:worker/task:1" { print "total", run(v) }
EOF
expect_rc 0 mpi 3 "$T/p.tfg"
[ "$(cat "$T/out")" = "total 10.0" ] || fail "mpirun -n 3 printed '$(cat "$T/out")'"
[ ! -s "$T/err" ] || fail "mpirun -n 3 wrote to stderr: $(cat "$T/err")"
# Without the key it runs as well, and every task says what it risks.
TFG_CLUSTER_KEY='' expect_rc 0 mpi 3 "$T/p.tfg"
[ "$(cat "$T/out")" = "total 10.0" ] || fail "unkeyed, mpirun -n 3 printed '$(cat "$T/out")'"
[ "$(grep -c 'warning: /job:.*: the cluster is unauthenticated: anyone who reaches 127.0.0.1:[0-9]*, any user of this machine, can run sessions' "$T/err")" = 3 ] ||
	fail "unkeyed, the tasks said: $(cat "$T/err")"

# Ports without hosts in a --cluster file: mpirun put every rank on this
# node, so they are localhost's.  A SLURM_PROCID that mpirun's ranks
# inherit (mpirun inside an sbatch script) does not count: mpirun's
# ranks are the process's own.
printf '{"ps": [":%s"], "worker": [":%s", ":%s"]}\n' "$p0" "$p1" "$p2" \
	>"$T/c.json"
expect_rc 0 timeout -k 5 60 mpirun --oversubscribe -n 3 -x SLURM_PROCID=0 \
	-x SLURM_NTASKS=1 $TFGC server --cluster "$T/c.json" --verbose "$T/p.tfg"
[ "$(cat "$T/out")" = "total 10.0" ] || fail "hostless run printed '$(cat "$T/out")'"
expect_in "$T/err" "tfg: /job:worker/task:1: serving on tcp://localhost:$p2"
# the controller listens where the other tasks reach it: the chief's host
expect_in "$T/err" "tfg: controller: listening on tcp://localhost:"

# A session that fails: mpirun reports the chief's exit status, and no
# rank is left waiting.
cat >"$T/f.tfg" <<EOF
cluster { a = ["127.0.0.1:$p0"]; b = ["127.0.0.1:$p1"] }
input x: f32[3]
device "/job:b" { y = x * 2 }
session { print run(y, feed { x: load("$T/none.npy") }) }
EOF
t0=$(now)
expect_rc 1 mpi 2 "$T/f.tfg"
within 30 "$t0" "$(now)" "a failed run under mpirun"
expect_in "$T/err" "none.npy"

# As many ranks as the cluster has tasks, or a clear error.
expect_rc 1 mpi 2 "$T/p.tfg"
expect_in "$T/err" "tfgc: error: mpirun started 2 processes (OMPI_COMM_WORLD_SIZE=2), but the cluster has 3 tasks (/job:ps/task:0 to /job:worker/task:1): start one process per task"
echo "mpirun: ok"
