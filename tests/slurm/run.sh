#!/bin/sh
# tests/slurm/run.sh: `srun -n 3 tfgc server prog.tfg` under a real Slurm
# (spec §10.6 "Launchers and cluster managers"; spec/design.md
# "Launchers").  As root, it starts a one-node Slurm cluster of this
# machine from Debian's slurm-wlm and munge (make deps installs them):
# munged, slurmctld and slurmd, each with its key, sockets, state and
# logs in a temporary directory and on ports picked free, so that it
# touches nothing of the system's and runs beside another copy of
# itself.  Then srun runs a program whose cluster names ports but no
# hosts (the hosts come from the allocation), and the errors of a wrong
# task count and of a distribution other than block.  The daemons are
# stopped at exit, whatever happened.  Prints "slurm: ok (up in N s)",
# or "slurm: SKIP" when not root (slurmd must be), or FAIL and exits 1.
#
# The node is this machine's short host name when that resolves to
# 127.0.0.1 (as /etc/hosts has it here), else "localhost": the tasks
# listen on their node's name, and tests bind 127.0.0.1 only.
cd "$(dirname "$0")/../.." || exit 1
. tests/integration/common.inc

if [ "$(id -u)" != 0 ]; then
	echo "slurm: 0 passed, 0 failed, 1 skipped (slurmd must run as root)"
	exit 0
fi
for b in munged slurmctld slurmd srun sinfo scontrol; do
	command -v $b >/dev/null ||
		fail "no $b: make deps installs Debian's slurm-wlm and munge"
done

pids=""
stop_daemons() {
	[ -s "$T/munge/pid" ] && pids="$pids $(cat "$T/munge/pid")"
	for p in $pids; do kill "$p" 2>/dev/null; done
	_i=0
	while [ $_i -lt 50 ]; do
		_left=""
		for p in $pids; do kill -0 "$p" 2>/dev/null && _left="$_left $p"; done
		[ -z "$_left" ] && break
		sleep 0.1
		_i=$((_i + 1))
	done
	for p in $_left; do kill -9 "$p" 2>/dev/null; done
}
trap 'stop_daemons; release_ports; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

t0=$(now)
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 2>/dev/null
chmod 600 "$T/munge/key"
# --force: as root, and with a key of its own
munged --force --key-file="$T/munge/key" --socket="$T/munge/sock" \
	--pid-file="$T/munge/pid" --log-file="$T/log/munged.log" \
	--seed-file="$T/munge/seed" || fail "munged did not start"

node=$(hostname -s)
case $(getent ahostsv4 "$node" 2>/dev/null | awk '{print $1; exit}') in
127.0.0.1) ;;
*) node=localhost ;;
esac
conf=$T/slurm.conf
cat >"$conf" <<EOF
ClusterName=tfgtest
SlurmctldHost=localhost
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$conf"
slurmctld -D -c -f "$conf" >"$T/log/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -N "$node" -f "$conf" >"$T/log/slurmd.out" 2>&1 &
pids="$pids $!"
i=0
until [ "$(sinfo -h -N -o %T 2>/dev/null)" = idle ]; do
	i=$((i + 1))
	if [ $i -ge 300 ]; then
		tail -n 20 "$T"/log/* >&2
		fail "the Slurm node did not come up within 30 s"
	fi
	sleep 0.1
done
up=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$(now)")

# srun -n N ARGS...: tfgc server under srun, more tasks than cores,
# refused at once rather than queued, and bounded.
run() {
	_n=$1
	shift
	timeout -k 5 90 srun -n "$_n" --overcommit --immediate=30 "$@"
}

p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
cat >"$T/p.tfg" <<EOF
cluster {
    ps = [":$p0"]
    worker = [":$p1", ":$p2"]
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
expect_rc 0 run 3 $TFGC server "$T/p.tfg" --verbose
[ "$(cat "$T/out")" = "total 10.0" ] || fail "srun -n 3 printed '$(cat "$T/out")'"
# the hosts are the allocation's: the node's name
expect_in "$T/err" "tfg: /job:worker/task:1: serving on tcp://$node:$p2"
# and the chief's controller listens on the chief's, for the others
expect_in "$T/err" "tfg: controller: listening on tcp://$node:"

# As many tasks as the cluster has, or a clear error.
expect_rc 1 run 2 $TFGC server "$T/p.tfg"
expect_in "$T/err" "tfgc: error: srun started 2 processes (SLURM_STEP_NUM_TASKS=2), but the cluster has 3 tasks (/job:ps/task:0 to /job:worker/task:1): start one process per task"
# Hosts from the allocation follow srun's default block distribution.
expect_rc 1 run 3 -m cyclic $TFGC server "$T/p.tfg"
expect_in "$T/err" "tfgc: error: srun distributes the tasks 'cyclic' (SLURM_DISTRIBUTION)"
echo "slurm: 1 passed, 0 failed, 0 skipped (up in $up s)"
