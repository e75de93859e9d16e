#!/bin/sh
# Strangers at a server's port (issue 25, items 6-9; spec/design.md
# "Transport"): memory only for peers that proved themselves, deadlines
# for connections that never do, descriptors that run out without
# starving the members, and refusals said once, then counted.
. tests/integration/common.inc

cat >"$T/p.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223"] }
x = 2
device "/job:local/task:1" { y = x * 21 }
session { print run(y) }
TFG
local_ports 2
head -c 32 /dev/urandom >"$T/key"
serve 0 $addrs --cluster-key "$T/key"
serve 1 $addrs --cluster-key "$T/key"
wait_listen "$p0"
wait_listen "$p1"

# 1. A HELLO, then a frame of 1 GiB announced: closed at its length, no
#    memory spent (it grew a ps by 1 GiB a connection), said once.
python3 - "$p1" <<'PY' || fail "a stranger's 1 GiB frame was read"
import os, socket, struct, sys, time
port = int(sys.argv[1])
for _ in range(3):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(struct.pack("<Q", (1 << 63) | 3) + os.urandom(32) +
              struct.pack("<Q", 1 << 30))
    s.settimeout(5)
    try:
        s.sendall(b"\0" * (8 << 20))
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()
PY
expect_in "$T/s1" "a message of 1073741824 bytes before it answered a ping"
[ "$(grep -c 'before it answered a ping' "$T/s1")" = 1 ] ||
	fail "task 1 said: $(cat "$T/s1")"
rss=$(awk '/VmHWM/ {print $2}' /proc/$s1/status)
[ "$rss" -lt 400000 ] || fail "task 1 grew to $rss kB"

# 2. A connection that says nothing is closed after 10 s, and said.
python3 - "$p0" <<'PY' || fail "an idle connection stayed"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
t = time.time()
assert s.recv(100) == b""
assert 9 < time.time() - t < 16, time.time() - t
PY
expect_in "$T/s0" "did not authenticate (answer a ping, deliver a frame) within 10 s"

# 3. Members are served all the while.
expect_rc 0 $TFGC run --attach --startup-timeout 10 --cluster-key "$T/key" \
	$addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "42" ] || fail "the run printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop --startup-timeout 10 --cluster-key "$T/key" \
	$addrs "$T/p.tfg"
wait $s0 $s1
_servers=""

# 4. Unkeyed, 64 descriptors: 100 idle connections take them all; the
#    oldest that never authenticated are shed, said once, and a run
#    works; 900 oversized frames make one line.
command -v prlimit >/dev/null || fail "no prlimit (util-linux)"
local_ports 2
prlimit --nofile=64:64 $TFGC server "$T/p.tfg" --job local --task 0 \
	$addrs 2>"$T/s0" &
s0=$!
$TFGC server "$T/p.tfg" --job local --task 1 $addrs 2>"$T/s1" &
s1=$!
_servers="$s0 $s1"
wait_listen "$p0"
wait_listen "$p1"
python3 - "$p0" "$p1" "$T/held" <<'PY' &
import os, socket, struct, sys, time
p0, p1 = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", p0)) for _ in range(100)]
for _ in range(900):
    s = socket.create_connection(("127.0.0.1", p1))
    s.sendall(struct.pack("<Q", 1 << 62) + b"garbled")
    s.close()
open(sys.argv[3], "w").write("up\n")
time.sleep(8)
PY
h=$!
i=0
while [ ! -s "$T/held" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "42" ] || fail "the run printed '$(cat "$T/out")'"
expect_in "$T/s0" "no descriptors left"
[ "$(grep -c 'no descriptors left' "$T/s0")" -le 2 ] ||
	fail "task 0 said: $(cat "$T/s0")"
# Each reason is said once: the oversized frames, and (on a slow build,
# where the connections pile up before they are read) the host's limit.
[ "$(grep -c 'a message of' "$T/s1")" = 1 ] &&
	[ "$(grep -c 'refused a connection' "$T/s1")" -le 2 ] ||
	fail "task 1 said: $(cat "$T/s1")"
kill $h 2>/dev/null
wait $h 2>/dev/null
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/p.tfg"
wait $s0 $s1
_servers=""
