#!/bin/sh
# Many controllers at once against one set of servers (issue 25, item
# 10): 64 `tfgc run --attach` of the shared counter against three
# `tfgc server`s all end, each with all its output.  Servers keep a
# reply link per controller; recycling the oldest of 8 while it still
# carried a reply lost a run's last OUTPUT or SESSION_END, and the run
# waited for good (spec/design.md "Transport").
. tests/integration/common.inc

N=${TFG_CONCURRENT_RUNS:-64}
p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
addrs="--addr /job:ps/task:0=127.0.0.1:$p0"
addrs="$addrs --addr /job:worker/task:0=127.0.0.1:$p1"
addrs="$addrs --addr /job:worker/task:1=127.0.0.1:$p2"
prog=examples/ps_counter.tfg
$TFGC server $prog --job ps --task 0 $addrs 2>"$T/s0" &
s0=$!
$TFGC server $prog --job worker --task 0 $addrs 2>"$T/s1" &
s1=$!
$TFGC server $prog --job worker --task 1 $addrs 2>"$T/s2" &
s2=$!
_servers="$s0 $s1 $s2"
pids=""
i=0
while [ "$i" -lt "$N" ]; do
	timeout 150 $TFGC run --attach --startup-timeout 100 $addrs $prog \
		>"$T/o$i" 2>"$T/e$i" &
	pids="$pids $!"
	i=$((i + 1))
done
# count PATTERN FILE: the lines of FILE that start with PATTERN
count() {
	grep -c "^$1" "$2"
}
i=0
for p in $pids; do
	o="$T/o$i"
	wait "$p" ||
		fail "run $i of $N exited $? (124: it hung): $(tail -3 "$T/e$i")"
	# what every run prints, whatever the others do to the counter
	[ "$(count '\[/job:ps/task:0\] ps sees ' "$o")" = 5 ] &&
		[ "$(count '\[/job:worker/task:0\] worker 0 made it ' "$o")" = 5 ] &&
		[ "$(count '\[/job:worker/task:1\] worker 1 made it ' "$o")" = 5 ] &&
		[ "$(wc -l <"$o")" = 16 ] &&
		tail -1 "$o" | grep -Eq '^[0-9]+(\.[0-9]+)?$' ||
		fail "run $i of $N printed: $(cat "$o")"
	i=$((i + 1))
done
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs $prog
wait $s0 || fail "the ps exited $?: $(cat "$T/s0")"
wait $s1 || fail "worker 0 exited $?: $(cat "$T/s1")"
wait $s2 || fail "worker 1 exited $?: $(cat "$T/s2")"
