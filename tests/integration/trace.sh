#!/bin/sh
# tfgc run --trace (spec/design.md "Traces"): one Chrome trace-event file
# for the whole run, that Perfetto and chrome://tracing open: a track
# (process) per task, named; every kernel, send, receive, part and step
# with its step, bytes and duration; the tasks' clocks aligned, so a
# tensor is received after it began to be sent.
. tests/integration/common.inc

cat >"$T/p.tfg" <<'TFG'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:1" {
    r = random_uniform([128, 128], seed=1)
    m = matmul(r, transpose(r))
    s1 = reduce_sum(sigmoid(m))
}
t = s1 * 2.0
session {
    for i in 0..4 { print run(t) }
}
TFG
expect_rc 0 $TFGC run --free-ports --trace "$T/t.json" "$T/p.tfg"
[ "$(wc -l <"$T/out")" = 4 ] || fail "the run printed: $(cat "$T/out")"
python3 - "$T/t.json" <<'PY' || fail "the trace is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
assert names == {0: "/job:local/task:0", 1: "/job:local/task:1"}, names
x = [e for e in ev if e.get("ph") == "X"]
for e in x:
    assert e["dur"] >= 0 and e["ts"] > 1e15, e  # microseconds since 1970
    assert e["args"]["step"] >= 1, e
def cats(pid):
    return {e["cat"] for e in x if e["pid"] == pid}
assert {"step", "recv", "part"} <= cats(0), cats(0)
assert {"kernel", "send", "part"} <= cats(1), cats(1)
kernels = {e["name"] for e in x if e["cat"] == "kernel" and e["pid"] == 1}
assert "matmul m" in kernels and "reduce_sum s1" in kernels, kernels
steps = [e for e in x if e["cat"] == "step"]
assert len(steps) == 4, steps
for s in steps:
    n = s["args"]["step"]
    send = [e for e in x if e["cat"] == "send" and e["args"]["step"] == n]
    recv = [e for e in x if e["cat"] == "recv" and e["args"]["step"] == n]
    assert len(send) == 1 and len(recv) == 1, (send, recv)
    assert send[0]["name"] == "'s1' to /job:local/task:0", send
    assert recv[0]["name"] == "'s1' from /job:local/task:1", recv
    assert send[0]["args"]["bytes"] == 4 == recv[0]["args"]["bytes"]
    # clocks aligned: the receive ends after the send began (within the
    # offset's error, the way of one message), both inside the step
    assert recv[0]["ts"] + recv[0]["dur"] >= send[0]["ts"] - 1000, (send, recv)
    assert s["ts"] <= recv[0]["ts"] and recv[0]["ts"] <= s["ts"] + s["dur"], (s, recv)
PY
# A trace that cannot be written: the run says so and fails.
expect_rc 1 $TFGC run --free-ports --trace "$T/no/such/dir/t.json" "$T/p.tfg"
expect_in "$T/err" "cannot write the trace $T/no/such/dir/t.json"
# A server's own trace (tfgc server --trace FILE), written when it stops.
local_ports 2
sed -i "s/localhost:1/127.0.0.1:$p0/; s/localhost:2/127.0.0.1:$p1/" "$T/p.tfg"
$TFGC server "$T/p.tfg" --job local --task 1 --trace "$T/s1.json" 2>"$T/s1" &
s1=$!
$TFGC server "$T/p.tfg" --job local --task 0 2>"$T/s0" &
s0=$!
expect_rc 0 $TFGC run --attach --trace "$T/a.json" "$T/p.tfg"
expect_in "$T/err" "the trace $T/a.json has nothing from /job:local/task:0"
expect_rc 0 $TFGC stop "$T/p.tfg"
wait $s0 $s1 || fail "a server failed: $(cat "$T/s0" "$T/s1")"
python3 - "$T/s1.json" "$T/a.json" <<'PY' || fail "the servers' traces"
import json, sys
own = json.load(open(sys.argv[1]))["traceEvents"]
run = json.load(open(sys.argv[2]))["traceEvents"]
# the run took task 1's events; what it did after (nothing) is its own
assert any(e.get("cat") == "kernel" and e["pid"] == 1 for e in run), run
assert any(e.get("name") == "process_name" for e in own), own
PY
echo "trace: ok"
