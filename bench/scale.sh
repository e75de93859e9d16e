#!/bin/sh
# bench/scale.sh: how the runtime scales with the number of workers
# (issue 29).  Each worker's compute is replaced by a wait of WAIT ms in
# its session (bench/scale.tfg), so that 32 workers do not contend for
# this machine's cores and what is measured is the runtime: global
# steps/s at 1, 2, 4, 8, 16 and 32 workers on one ps against the ideal,
# N x the 1-worker rate, for a scalar model and one of MNIST's size
# (79,510 f32 read and updated each step), async and sync.  Then the
# counter without waits at 2 and 32 workers (updates/s: no collapse),
# the time from the command to the first step of 1 ps + 32 workers with
# a warm JIT cache, and an idle task's CPU and memory.  WORKERS, STEPS
# and WAIT may be set.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=$(pwd)/${TFGC:-tfgc}
WORKERS=${WORKERS:-1 2 4 8 16 32}
STEPS=${STEPS:-100}
WAIT=${WAIT:-20}
D=$(mktemp -d /tmp/tfg-scale.XXXXXX) || exit 1
trap 'rm -rf "$D"' EXIT
trap 'exit 1' INT TERM
TFG_JIT_CACHE=$D/jit
export TFG_JIT_CACHE

# cluster N PS: a --cluster file of PS ps tasks and N workers (ports
# moved to free ones by --free-ports)
cluster() {
	python3 - "$1" "$2" >"$D/c$1.$2.json" <<'PY'
import json, sys
n, ps = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"ps": ["localhost:%d" % (40000 + i) for i in range(ps)],
                  "worker": ["localhost:%d" % (40100 + i) for i in range(n)]}))
PY
}

# rate OPT N [PARAMS...]: the sum of the N workers' steps/s
rate() {
	opt=$1 n=$2; shift 2
	sed "s/OPTIMIZER/$opt/" bench/scale.tfg >"$D/s.tfg"
	[ -f "$D/c$n.1.json" ] || cluster "$n" 1
	$TFGC run "$D/s.tfg" --cluster "$D/c$n.1.json" --free-ports \
		--no-cluster-key --param steps="$STEPS" --param wait="$WAIT" "$@" \
		>"$D/out" 2>"$D/err" || { cat "$D/err" >&2; echo 0; return; }
	awk '/steps\/s/ {s += $NF} END {printf "%.2f\n", s}' "$D/out"
}

# row NAME OPT [PARAMS...]: a line per worker count, with the efficiency
row() {
	name=$1 opt=$2; shift 2
	one=""
	for n in $WORKERS; do
		m=$((n > 1 ? n - 1 : 1))
		case $opt in
		sync) o="sync(sgd(0.001), replicas=$n)" ;;
		backup) o="sync(sgd(0.001), replicas=$n, aggregate=$m)" ;;
		*) o=$opt ;;
		esac
		r=$(rate "$o" "$n" "$@")
		[ -z "$one" ] && one=$(awk -v r="$r" -v n="$n" 'BEGIN {print r / n}')
		awk -v r="$r" -v n="$n" -v one="$one" -v name="$name" \
		    'BEGIN {printf "%s, %2d workers: %8.1f worker steps/s, ideal %8.1f, efficiency %5.1f %%\n", name, n, r, n * one, 100 * r / (n * one)}'
	done
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; each worker waits $WAIT ms a step, $STEPS steps"
row "async, scalar model" "sgd(0.001)" --param n=1
row "async, MNIST-sized model (79,510 f32)" "sgd(0.001)" --param n=79510
row "sync (replicas=N), scalar model" sync --param n=1
row "sync, one backup worker (replicas=N, aggregate=N-1), scalar model" backup --param n=1

# the counter as fast as it goes, 2 and 32 workers on one ps: the updates
# over the span from the first worker's start to the last one's end
for n in 2 32; do
	cluster "$n" 1
	k=$((64000 / n))
	cat >"$D/counter.tfg" <<P
cluster { ps = ["localhost:1"]; worker = ["localhost:2"] }
device "/job:ps/task:0" { var v = 0.0 }
inc = assign_add(v, 1.0)
session "/job:ps/task:0" { initialize() }
session each "/job:worker" { run(inc); let t0 = now(); for i in 0..$k { run(inc) }; print "span", t0, now() }
session "/job:ps/task:0" { print "final", run(v) }
P
	$TFGC run "$D/counter.tfg" --cluster "$D/c$n.1.json" --free-ports \
		--no-cluster-key >"$D/out" 2>&1
	awk -v n="$n" -v k="$k" '/span/ {if (!s || $(NF-1) < s) s = $(NF-1); if ($NF > e) e = $NF}
	    /final/ {f = $NF} END {printf "counter, %2d workers x %d assign_add: %.0f updates/s, final %s (want %d)\n", n, k, n * k / (e - s), f, n * k + n}' "$D/out"
done

# command to first step: 1 ps + 32 workers, each printing when its
# first step is done; the JIT cache warm from the run before
cluster 32 1
cat >"$D/first.tfg" <<'P'
cluster { ps = ["localhost:1"]; worker = ["localhost:2"] }
device replicas(ps="/job:ps", worker="/job:worker") {
    var w = zeros([10])
    loss = reduce_sum(w)
    train = minimize(loss, sgd(0.1))
}
session "/job:ps/task:0" { initialize() }
session each "/job:worker" { run(train); print "first", now() }
P
for i in 1 2 3; do
	s=$(date +%s.%N)
	$TFGC run "$D/first.tfg" --cluster "$D/c32.1.json" --free-ports \
		--no-cluster-key >"$D/first" 2>&1
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" -v i="$i" '/first/ {t = $NF - s; if (!k || t < lo) lo = t; if (t > hi) hi = t; k++}
	    END {printf "1 ps + 32 workers, run %d%s: command to the first step done %.3f s, to every worker'"'"'s first step %.3f s, whole run %.3f s (%d workers)\n", i, i == 1 ? " (cold JIT cache)" : "", lo, hi, e - s, k}' "$D/first"
done

# an idle task: CPU and memory of each server of 1 ps + 32 workers
# while the sessions sleep 4 s
cat >"$D/idle.tfg" <<'P'
cluster { ps = ["localhost:1"]; worker = ["localhost:2"] }
device "/job:ps/task:0" { var v = 0.0 }
session "/job:ps/task:0" { initialize(); sleep(4000); print run(v) }
P
$TFGC run "$D/idle.tfg" --cluster "$D/c32.1.json" --free-ports \
	--no-cluster-key >/dev/null 2>&1 &
run=$!
sleep 1.5
pids=$(pgrep -P $run | tr '\n' ' ')
tick=$(getconf CLK_TCK)
cpu() { for p in $pids; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s}'; }
c0=$(cpu); t0=$(date +%s.%N)
sleep 2
c1=$(cpu); t1=$(date +%s.%N)
# RSS counts the pages of the tfgc binary that a task touched, which all
# tasks share (one copy in the page cache); its own memory is RssAnon,
# and PSS shares the binary's pages out
rss=$(for p in $pids; do awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null; done | sort -n | tail -1)
anon=$(for p in $pids; do awk '/RssAnon/ {print $2}' "/proc/$p/status" 2>/dev/null; done | sort -n | tail -1)
pss=$(for p in $pids; do awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null; done | sort -n | tail -1)
wait $run
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v tick="$tick" -v np="$(echo $pids | wc -w)" -v rss="$rss" -v anon="$anon" -v pss="$pss" \
    'BEGIN {printf "idle tasks (1 ps + 32 workers, sessions asleep): %.2f %% of a core per task; the largest: RSS %.1f MB, of which its own (RssAnon) %.1f MB, PSS %.1f MB (%d tasks)\n", 100 * (c1 - c0) / tick / (t1 - t0) / np, rss / 1024, anon / 1024, pss / 1024, np}'
