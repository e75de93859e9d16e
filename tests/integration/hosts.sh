#!/bin/sh
# Hosts with real network stacks (issue 29): four network namespaces
# joined by links of 0.25 ms each way and 1 Gbit/s out of each
# (tests/integration/hosts.inc), one task in each, as a cluster manager
# would start them (`tfgc server --cluster FILE` with the namespaces'
# addresses, a cluster key, frames MACed as between hosts), and
# examples/mnist_distributed.tfg (1 ps + 3 workers) trained across them
# to 97% test accuracy.  Everything made is removed, also when the test
# fails.  Root only (skipped otherwise).
. tests/integration/common.inc
. tests/integration/hosts.inc
need_mnist
trap 'hosts_down; kill $_servers 2>/dev/null; release_ports; rm -rf "$T"' EXIT
hosts_up 4 || { echo "SKIP: $(hosts_up 0 2>&1 | head -1)"; exit 0; }

cat >"$T/c.json" <<J
{"ps": ["10.77.0.1:2222"], "worker": ["10.77.0.2:2222", "10.77.0.3:2222", "10.77.0.4:2222"]}
J
head -c 32 /dev/urandom >"$T/key"
params="--param data=$DATA --param epochs=${EPOCHS:-4} --param curves=$T/curves.csv"
opts="--cluster $T/c.json --cluster-key $T/key"
i=0
for x in "ps 0" "worker 0" "worker 1" "worker 2"; do
	set -- $x
	on_host $i $TFGC server examples/mnist_distributed.tfg $opts $params \
		--job "$1" --task "$2" 2>"$T/s$i" &
	_servers="$_servers $!"
	i=$((i + 1))
done
on_host 0 $TFGC run --attach --stop --no-progress examples/mnist_distributed.tfg \
	$opts $params >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] || fail "training across the hosts exited $rc: $(cat "$T/out" "$T/err")"
python3 - "$T/out" <<'PY' || fail "not 97% across the hosts: $(cat "$T/out")"
import sys
acc = [float(l.split("test accuracy")[1].split()[0]) for l in open(sys.argv[1])
       if "test accuracy" in l]
assert acc and acc[-1] >= 0.97, acc
PY
grep "test accuracy" "$T/out" | tail -n 1 >&2
exit 0
