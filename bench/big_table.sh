#!/bin/sh
# bench/big_table.sh: a 10,000,000 x 64 f32 table (2.4 GiB) partitioned
# over 4 ps tasks on this machine (issue 28): initialized, trained
# (STEPS sgd steps of 512 ids), saved, restored and read again, each
# task a `tfgc server` under /usr/bin/time, whose maxrss is its peak
# resident memory; printed beside each ps's shard (ROWS / 4 rows of 64
# f32) as a ratio.  ROWS (10,000,000) and OPT (sgd) may be set (OPT
# adagrad doubles what a ps holds: the accumulator is a slot of the
# shard's size).  Needs some 9 GB of memory and a minute.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=$(pwd)/${TFGC:-tfgc}
ROWS=${ROWS:-10000000}
OPT=${OPT:-sgd}
STEPS=${STEPS:-3}
D=$(mktemp -d /tmp/tfg-big-table.XXXXXX) || exit 1
# the servers too, not only their /usr/bin/time (which a TERM kills,
# leaving its child behind); $(jobs -p) is empty in dash's subshell
pids=""
trap 'for j in $pids; do pkill -P "$j"; kill "$j"; done 2>/dev/null
rm -rf "$D"' EXIT
trap 'exit 1' INT TERM
cd "$D" || exit 1
python3 - "$ROWS" <<'PY' || exit 1
import struct, sys
rows = int(sys.argv[1])
ids = [i * (rows // 512) for i in range(512)]
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (512,), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("ids.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<512q", *ids))
PY
cat >big.tfg <<P
cluster { ps = ["localhost:1", "localhost:2", "localhost:3", "localhost:4"]; worker = ["localhost:5"] }
device replicas(ps="/job:ps", worker="/job:worker") {
    input ids: i64[512]
    var emb = partitioned(random_normal([$ROWS, 64], stddev=0.01, seed=1), 4)
    loss = reduce_sum(square(gather(emb, ids) - 1.0))
    train = minimize(loss, $OPT(0.1))
}
session "/job:worker/task:0" {
    initialize()
    let x = load("ids.npy")
    for i in 0..$STEPS { run(train, feed { ids: x }) }
    let before = run(loss, feed { ids: x })
    save("ck")
    restore("ck")
    print "loss before the save", before, "after the restore", run(loss, feed { ids: x })
}
P
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
addrs=""
for t in ps:0 ps:1 ps:2 ps:3 worker:0; do
	addrs="$addrs --addr /job:${t%:*}/task:${t#*:}=127.0.0.1:$(port)"
done
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /CPU: /'
for k in 0 1 2 3; do
	/usr/bin/time -f "%M" "$TFGC" server big.tfg --job ps --task $k \
		$addrs 2>"ps$k.log" &
	pids="$pids $!"
done
/usr/bin/time -f "%M" "$TFGC" server big.tfg --job worker --task 0 $addrs \
	2>worker.log &
pids="$pids $!"
t0=$(date +%s.%N)
"$TFGC" run --attach --startup-timeout 30 $addrs big.tfg || exit 1
t1=$(date +%s.%N)
"$TFGC" stop --startup-timeout 10 $addrs big.tfg
wait
shard=$((ROWS / 4 * 64 * 4 / 1024)) # KB, as maxrss
held=$shard what="shard"
if [ "$OPT" != sgd ]; then held=$((2 * shard)) what="shard and slot"; fi
for k in 0 1 2 3; do
	rss=$(tail -n 1 "ps$k.log")
	echo "ps $k: peak RSS $((rss / 1024)) MB, its $what $((held / 1024)) MB:" \
		"$(awk -v r="$rss" -v h="$held" 'BEGIN { printf "%.2f", r / h }')x" \
		"($OPT, the run $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
done
echo "worker (the client, which holds the checkpoint's tensors): peak RSS $(($(tail -n 1 worker.log) / 1024)) MB"
