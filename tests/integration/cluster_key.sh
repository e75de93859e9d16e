#!/bin/sh
# Cluster keys (spec/design.md "Cluster keys"): with --cluster-key every
# frame carries a MAC under a key of its connection.  A run with the same
# key works; a replayed connection, garbage, a truncated or oversized
# frame, and runs with another key or none are refused, each with a clear
# error, while the servers serve on and a correct run follows.
. tests/integration/common.inc

cp tests/integration/progs/double_sum.tfg "$T/p.tfg"
head -c 32 /dev/urandom >"$T/key"
head -c 32 /dev/urandom >"$T/other"
local_ports 2
px=$(free_port) # a recording proxy in front of task 1
opts="--startup-timeout 5 --cluster-key $T/key $addrs"
serve 0 $opts
serve 1 $opts
wait_listen "$p0"
wait_listen "$p1"

# 1. The same key: works, through a proxy that records what this
# controller sends task 1.
python3 - "$px" "$p1" "$T/rec" <<'PY' &
import socket, sys, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1]))); ls.listen(8); ls.settimeout(20)
rec = open(sys.argv[3], "wb")
def pipe(a, b, out):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            if out:
                out.write(d); out.flush()
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
c, _ = ls.accept()  # the controller's link to task 1: recorded
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
threading.Thread(target=pipe, args=(s, c, None), daemon=True).start()
pipe(c, s, rec)
PY
proxy=$!
sleep 0.3
viaproxy=$(echo "$addrs" | sed "s|task:1=127.0.0.1:$p1|task:1=127.0.0.1:$px|")
expect_rc 0 $TFGC run --attach --startup-timeout 5 --cluster-key "$T/key" $viaproxy "$T/p.tfg"
[ "$(cat "$T/out")" = "6.0" ] || fail "keyed run printed '$(cat "$T/out")'"
wait $proxy
[ "$(wc -c <"$T/rec")" -gt 100 ] || fail "the proxy recorded $(wc -c <"$T/rec") bytes"

# 2. That connection replayed byte for byte: the server's HELLO has a new
# nonce, so nothing of it is valid; refused, logged once with the
# address, and the server serves on.
python3 - "$p1" "$T/rec" <<'PY' || fail "replay"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
s.settimeout(5)
got = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
except OSError:
    pass
# its HELLO (40 bytes: a word, its random part, its view), then the
# refusal word 0x8000000000000004
assert got[40:48] == bytes([4, 0, 0, 0, 0, 0, 0, 0x80]), got
PY
expect_in "$T/s1" "/job:local/task:1: refused a connection from 127.0.0.1:"
expect_in "$T/s1" "without a valid MAC under this cluster's key"

# 3. Garbage, a frame cut short, a huge length, a frame before any HELLO:
# each refused or dropped; no more lines (one per host).
python3 - "$p1" <<'PY' || fail "garbage"
import os, socket, struct, sys, time
port = int(sys.argv[1])
def send(b, wait=0.2):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b)
    time.sleep(wait)
    s.close()
send(os.urandom(4096))
send(struct.pack("<Q", 1 << 40) + b"x" * 100)           # oversized
send(struct.pack("<Q", 200) + b"y" * 50)                # truncated
send(struct.pack("<Q", (1 << 63) | 3) + os.urandom(7))  # a HELLO cut short
send(struct.pack("<Q", (1 << 63) | 3) + os.urandom(32) +
     struct.pack("<Q", 112) + os.urandom(112 + 16))     # a frame, bad MAC
PY
[ "$(grep -c "refused a connection" "$T/s1")" = 1 ] || fail "task 1 said: $(cat "$T/s1")"

# 4. Another key, and none: the run names the task and the reason, at
# once, not at the start-up deadline.
t0=$(now)
expect_rc 1 $TFGC run --attach --startup-timeout 20 --cluster-key "$T/other" $addrs "$T/p.tfg"
expect_in "$T/err" "refused this tfgc: their cluster keys differ (give every task the same --cluster-key)"
expect_rc 1 $TFGC run --attach --startup-timeout 20 $addrs "$T/p.tfg"
expect_in "$T/err" "refused this tfgc: it has a cluster key, this process none (give it --cluster-key)"
t1=$(now)
within 5 "$t0" "$t1" "the refused runs"

# 5. The key from TFG_CLUSTER_KEY; then a correct run works still.
TFG_CLUSTER_KEY="$T/key" expect_rc 0 $TFGC run --attach --startup-timeout 5 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "6.0" ] || fail "run after the attacks printed '$(cat "$T/out")'"

# 6. Key files that are no keys.
head -c 8 /dev/urandom >"$T/short"
expect_rc 1 $TFGC run --attach --cluster-key "$T/short" $addrs "$T/p.tfg"
expect_in "$T/err" "has too few bytes: a key is 16 to 4096 bytes (make one with 'head -c 32 /dev/urandom > "
expect_rc 1 $TFGC run --attach --cluster-key "$T/missing" $addrs "$T/p.tfg"
expect_in "$T/err" "cannot read the cluster key $T/missing (--cluster-key): No such file or directory"

expect_rc 0 $TFGC stop --cluster-key "$T/key" $addrs "$T/p.tfg"
for t in 0 1; do
	eval "wait \$s$t" || fail "server $t exited $?: $(cat "$T/s$t")"
done
# task 0 met the other key in 4: one line, as task 1 (none in 5)
[ "$(grep -c "refused a connection" "$T/s0")" = 1 ] || fail "task 0 said: $(cat "$T/s0")"
[ "$(wc -l <"$T/s1")" = 1 ] || fail "task 1 said: $(cat "$T/s1")"

# 7. Servers without a key refuse a keyed controller, naming why.
serve 0 --startup-timeout 5 $addrs
serve 1 --startup-timeout 5 $addrs
wait_listen "$p0"
wait_listen "$p1"
expect_rc 1 $TFGC run --attach --cluster-key "$T/key" $addrs "$T/p.tfg"
expect_in "$T/err" "refused this tfgc: it has no cluster key, this process has one"
expect_rc 0 $TFGC stop $addrs "$T/p.tfg"
wait $s0 $s1
echo "cluster_key: ok"
