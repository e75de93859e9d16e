#!/bin/sh
# Killing `tfgc run` leaves no task process behind (spec §10 "Processes").
. tests/integration/common.inc

cp tests/integration/progs/forever.tfg "$T/forever.tfg"
$TFGC run --free-ports "$T/forever.tfg" >"$T/out" 2>"$T/err" &
run=$!
# Wait until both servers are up and the session is running.
i=0
while [ $i -lt 100 ]; do
	n=$(pgrep -f "server $T/forever.tfg" | wc -l)
	[ "$n" -ge 2 ] && [ -s "$T/out" ] && break
	sleep 0.1
	i=$((i + 1))
done
[ "$n" -ge 2 ] || fail "the task processes did not start ($n found)"
kill -9 $run
i=0
while [ $i -lt 50 ]; do
	pgrep -f "server $T/forever.tfg" >/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
if pgrep -f "server $T/forever.tfg" >/dev/null; then
	pkill -9 -f "server $T/forever.tfg"
	fail "task processes outlived the killed tfgc run"
fi
echo "orphans: ok"
