#!/bin/sh
# Runs that never collide (spec/design.md "Runs"): the servers that
# `tfgc run` starts serve that run alone.  A second run of the same
# program on the same ports fails at once, before any session, saying
# whose the ports are; the first run's answer is never touched.  Servers
# started for attaching (`tfgc server`) are the one way to share them,
# and `tfgc stop` of nothing is a quick, clear, zero exit.
. tests/integration/common.inc

p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
# The shared counter of examples/ps_counter.tfg on fixed ports of the
# cluster block (the program as users write it), a little shorter.
cat >"$T/p.tfg" <<TFG
cluster {
    ps     = ["127.0.0.1:$p0"]
    worker = ["127.0.0.1:$p1", "127.0.0.1:$p2"]
}
device "/job:ps/task:0" { var v = 0.0 }
inc = assign_add(v, 1.0)
parallel {
    session "/job:ps/task:0" {
        initialize()
        for i in 0..4 { print "ps sees", run(v); sleep(60) }
    }
    session each "/job:worker" as w {
        wait_initialized()
        for i in 0..5 { print "worker", w.index, "made it", run(inc); sleep(25) }
    }
}
session "/job:ps/task:0" { print "final", run(v) }
TFG

# wait_line FILE: until FILE has a line (up to 20 s).
wait_line() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ -s "$1" ] || fail "no line in $1: $(cat "$1.err" 2>/dev/null)"
}

# first_ok N: run N of the first program ended well, with the answer.
first_ok() {
	wait "$a" || fail "round $1: the first run exited $?: $(cat "$T/a.err")"
	[ "$(tail -n 1 "$T/a")" = "final 10.0" ] ||
		fail "round $1: the first run printed: $(cat "$T/a")"
	[ "$(grep -c "made it" "$T/a")" = 10 ] ||
		fail "round $1: the first run printed: $(cat "$T/a")"
}

# 1. A second run while the first runs, twenty times: it fails without
#    running a session, naming the run that holds the ports and what to
#    do; the first prints 10.0.
round=1
while [ $round -le 20 ]; do
	: >"$T/a"
	$TFGC run "$T/p.tfg" >"$T/a" 2>"$T/a.err" &
	a=$!
	wait_line "$T/a"
	expect_rc 1 $TFGC run "$T/p.tfg"
	[ ! -s "$T/out" ] || fail "round $round: the second run ran a session: $(cat "$T/out")"
	expect_in "$T/err" "is held by another run of this program (tfgc run, pid $a)"
	expect_in "$T/err" "--free-ports"
	expect_in "$T/err" "tfgc server and run with tfgc run --attach"
	first_ok $round
	round=$((round + 1))
done
expect_in "$T/a.err" "refused a connection from 127.0.0.1"

# 2. Both at once: whichever gets its servers up runs, alone; a run that
#    fails prints no session line, and one that ends well has 10.0.
round=1
while [ $round -le 5 ]; do
	$TFGC run "$T/p.tfg" >"$T/a" 2>"$T/a.err" &
	a=$!
	$TFGC run "$T/p.tfg" >"$T/b" 2>"$T/b.err" &
	b=$!
	for r in a b; do
		if wait $(eval echo \$$r); then
			[ "$(tail -n 1 "$T/$r")" = "final 10.0" ] ||
				fail "at once $round: run $r printed: $(cat "$T/$r")"
		else
			[ ! -s "$T/$r" ] ||
				fail "at once $round: run $r failed after a session: $(cat "$T/$r" "$T/$r.err")"
		fi
	done
	round=$((round + 1))
done

# 3. A run's servers refuse an attached run and tfgc stop, naming the
#    run; the run ends well all the same.  (Its tasks are keyed, so they
#    refuse the others before anything is said, and whose they are comes
#    from /proc while they run: slower here, so that they still do when
#    a tfgc under ASan has started.)
sed 's/sleep(60)/sleep(1500)/' "$T/p.tfg" >"$T/slow.tfg"
$TFGC run "$T/slow.tfg" >"$T/a" 2>"$T/a.err" &
a=$!
wait_line "$T/a"
expect_rc 1 $TFGC run --attach "$T/slow.tfg"
expect_in "$T/err" "is held by a run of this program (tfgc run, pid $a)"
expect_rc 1 $TFGC stop "$T/slow.tfg"
expect_in "$T/err" "is held by a run of this program (tfgc run, pid $a)"
first_ok attached

# 4. Servers for attaching: a run without --attach is refused, told to
#    add it; with it, it runs; stop ends them, and stop of nothing says
#    so at once and exits 0.
#    (worker 1 with TF's flags, as the TF1 material starts each task)
for t in "ps 0 0" "worker 0 1"; do
	set -- $t
	$TFGC server --job $1 --task $2 "$T/p.tfg" 2>"$T/s$3" &
	_servers="$_servers $!"
done
$TFGC server --job_name=worker --task_index=1 "$T/p.tfg" 2>"$T/s2" &
_servers="$_servers $!"
wait_listen "$p0"
wait_listen "$p1"
wait_listen "$p2"
expect_rc 1 $TFGC run "$T/p.tfg"
[ ! -s "$T/out" ] || fail "a run ran a session on servers for attaching: $(cat "$T/out")"
expect_in "$T/err" "is served by a tfgc server of this program"
expect_in "$T/err" "add --attach"
expect_rc 0 $TFGC run --attach "$T/p.tfg"
[ "$(tail -n 1 "$T/out")" = "final 10.0" ] || fail "the attached run printed: $(cat "$T/out")"
expect_rc 0 $TFGC stop "$T/p.tfg"
wait $_servers || fail "a server exited $?"
_servers=""
t0=$(date +%s)
expect_rc 0 $TFGC stop "$T/p.tfg"
expect_in "$T/err" "no server of this program is running"
# nothing waited out: --startup-timeout is 30 s
[ $(($(date +%s) - t0)) -lt 10 ] || fail "tfgc stop of nothing took $(($(date +%s) - t0)) s"
echo "collide: ok"
