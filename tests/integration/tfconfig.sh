#!/bin/sh
# Servers that take the cluster and their task from TF_CONFIG, as the
# pods of a Kubernetes manifest written for TF1 start them, and the
# cluster of --cluster FILE.json
# (spec §10.6 "Launchers and cluster managers", spec/design.md
# "Launchers"): the chief drives the run and every server exits by
# itself; bad TF_CONFIG and JSON are clear errors.
. tests/integration/common.inc

# Keyed, as a cluster should be (a tfgc server without a key warns,
# spec §10.1.1 "Cluster keys"): every pod gets the key's file.
head -c 32 /dev/urandom >"$T/key"
export TFG_CLUSTER_KEY="$T/key"
p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
p3=$(free_port)
# The program's cluster names two workers on ports nobody listens on:
# the JSON's cluster replaces it.
cat >"$T/p.tfg" <<EOF
cluster { ps = ["127.0.0.1:1"]; worker = ["127.0.0.1:2", "127.0.0.1:3"] }
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
# Go's encoding/json sorts the jobs, as Kubeflow's TF_CONFIG has them;
# the program's order stands, so the chief is still /job:ps/task:0.
cluster="\"cluster\": {\"worker\": [\"127.0.0.1:$p1\", \"127.0.0.1:$p2\",
    \"127.0.0.1:$p3\"], \"ps\": [\"127.0.0.1:$p0\"]}"
tf() { # TYPE INDEX: a pod's TF_CONFIG
	printf '{%s, "task": {"type": "%s", "index": %s}, "environment": "cloud"}' \
		"$cluster" "$1" "$2"
}

# Four pods: the workers first, the chief last, as they may come up.
TF_CONFIG=$(tf worker 0) $TFGC server "$T/p.tfg" >"$T/o1" 2>"$T/e1" &
w0=$!
TF_CONFIG=$(tf worker 1) $TFGC server "$T/p.tfg" >"$T/o2" 2>"$T/e2" &
w1=$!
TF_CONFIG=$(tf worker 2) $TFGC server "$T/p.tfg" >"$T/o3" 2>"$T/e3" &
w2=$!
sleep 0.3
TF_CONFIG=$(tf ps 0) $TFGC server "$T/p.tfg" >"$T/o0" 2>"$T/e0" || {
	cat "$T/e0"; fail "the chief exited $?"
}
[ "$(cat "$T/o0")" = "total 15.0" ] || fail "the chief printed '$(cat "$T/o0")'"
for w in $w0 $w1 $w2; do
	wait $w || fail "a worker exited $?: $(cat "$T/e1" "$T/e2" "$T/e3")"
done
[ ! -s "$T/e0" ] && [ ! -s "$T/o1" ] && [ ! -s "$T/e1" ] ||
	fail "unexpected output: $(cat "$T/e0" "$T/o1" "$T/e1")"

# The same cluster from --cluster, for tfgc run (and its servers) and
# for tfgc check; TF_CONFIG has no say then.
printf '{"ps": ["127.0.0.1:%s"],\n "worker": ["127.0.0.1:%s", "127.0.0.1:%s"]}\n' \
	"$p0" "$p1" "$p2" >"$T/c.json"
expect_rc 0 env TF_CONFIG='{"cluster": {"ps": ["127.0.0.1:1"]}}' \
	$TFGC run --cluster "$T/c.json" "$T/p.tfg"
[ "$(cat "$T/out")" = "total 10.0" ] || fail "--cluster run printed '$(cat "$T/out")'"
expect_rc 0 $TFGC check --cluster="$T/c.json" "$T/p.tfg"

# A session that fails: the chief exits 1 with the run, the other
# stops 0 after the shutdown.
printf '{"local": ["127.0.0.1:%s", "127.0.0.1:%s"]}' "$p0" "$p1" >"$T/l.json"
cat >"$T/f.tfg" <<EOF
input x: f32[3]
device "/job:local/task:1" { y = x * 2 }
session { print run(y, feed { x: load("$T/none.npy") }) }
EOF
$TFGC server --cluster "$T/l.json" --job local --task 1 --chief local:0 \
	"$T/f.tfg" 2>"$T/e1" &
s1=$!
expect_rc 1 $TFGC server --cluster "$T/l.json" --job local --task 0 \
	--chief /job:local/task:0 "$T/f.tfg"
expect_in "$T/err" "none.npy"
wait $s1 || fail "the other server exited $?: $(cat "$T/e1")"

# No chief, no run: a server stops by itself, in twice --startup-timeout.
t0=$(now)
expect_rc 1 env TF_CONFIG="$(tf worker 1)" $TFGC server --startup-timeout 1 "$T/p.tfg"
within 10 "$t0" "$(now)" "a server without a controller"
expect_in "$T/err" "/job:worker/task:1: no controller came within 2 s: the chief, /job:ps/task:0, starts it"

# The chief killed during the run: the others stop too.
cat >"$T/g.tfg" <<EOF
device "/job:local/task:1" { y = 2 }
session { for i in 0..1000 { run(y); sleep(50) } }
EOF
$TFGC server --cluster "$T/l.json" --job local --task 1 --chief local:0 \
	--startup-timeout 1 "$T/g.tfg" 2>"$T/e1" &
s1=$!
$TFGC server --cluster "$T/l.json" --job local --task 0 --chief local:0 \
	--startup-timeout 5 "$T/g.tfg" 2>"$T/e0" &
s0=$!
sleep 1.5
kill -9 $s0
t0=$(now)
wait $s1
rc=$?
within 10 "$t0" "$(now)" "a server whose chief was killed"
[ "$rc" = 1 ] || fail "the server whose chief was killed exited $rc"
expect_in "$T/e1" "the chief, /job:local/task:0, has been gone for 1 s"

# TF_CONFIG that is no JSON, a task the cluster lacks, a task index past
# its job's: each a clear error, at once.
t0=$(now)
expect_rc 1 env TF_CONFIG='{"cluster": {"ps": ["a:1"],}}' $TFGC server "$T/p.tfg"
expect_in "$T/err" "TF_CONFIG:1:27: error: trailing comma before '}': JSON allows none"
expect_rc 1 env TF_CONFIG="$(tf evaluator 0)" $TFGC server "$T/p.tfg"
expect_in "$T/err" "error: TF_CONFIG names task type 'evaluator', which is not a job of the cluster of TF_CONFIG (it has 'ps', 'worker')"
expect_rc 1 env TF_CONFIG="$(tf worker 3)" $TFGC server "$T/p.tfg"
expect_in "$T/err" "error: TF_CONFIG names task 3 of job 'worker', which has 3 tasks in the cluster of TF_CONFIG"
expect_rc 1 env TF_CONFIG='{"task": {"type": "worker", "index": "1"}}' $TFGC server "$T/p.tfg"
expect_in "$T/err" "TF_CONFIG:1:38: error: TF_CONFIG's task \"index\" must be a whole number"
# A cluster without a job of the program's.
expect_rc 1 env TF_CONFIG='{"cluster": {"worker": ["a:1"]}}' $TFGC check "$T/p.tfg"
expect_in "$T/err" "TF_CONFIG:1:13: error: the cluster of TF_CONFIG has no job 'ps', which the program's cluster block defines"
# Malformed --cluster JSON: file:line:col.
printf '{"ps": ["a:1"],\n "worker": ["b:1" "b:2"]}\n' >"$T/bad.json"
expect_rc 1 $TFGC run --cluster "$T/bad.json" "$T/p.tfg"
expect_in "$T/err" "$T/bad.json:2:19: error: expected ',' or ']' after an element of the array, found '\"'"
expect_rc 1 $TFGC run --cluster "$T/none.json" "$T/p.tfg"
expect_in "$T/err" "cannot read --cluster '$T/none.json'"
# Where the controller listens: on a host of this machine.
expect_rc 2 $TFGC run --attach --listen 2222 "$T/p.tfg"
expect_in "$T/err" "error: --listen takes HOST:PORT (PORT 0: any free one), not '2222'"
expect_rc 1 $TFGC run --attach --listen 192.0.2.1:0 "$T/p.tfg"
expect_in "$T/err" "cannot listen on tcp://192.0.2.1:0"
# No task at all: a usage error.
expect_rc 2 $TFGC server "$T/p.tfg"
expect_in "$T/err" "server needs --job J and --task T, or TF_CONFIG"
within 10 "$t0" "$(now)" "the bad inputs"
echo "tfconfig: ok"
