#!/bin/sh
# Errors that say what to do (issue 13): a port another process holds
# suggests --free-ports (tfgc run) or --addr (tfgc server)
# (spec §7.1 "The cluster"); a missing file names the directory a
# relative path starts from, where tfgc run started (spec §8.4 "load").
. tests/integration/common.inc

port=$(free_port)
cat >"$T/p.tfg" <<TFG
cluster { local = ["127.0.0.1:$port"] }
input x: f32[?]
y = reduce_sum(x)
var w = 1.0
session { print run(y, feed { x: load("data/x.npy") }) }
TFG
# A listener holds the port for at most 30 s (killed at the end).
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
time.sleep(30)' "$port" &
holder=$!
_servers="$_servers $holder"
wait_listen "$port"
expect_rc 1 timeout 20 $TFGC run "$T/p.tfg"
expect_in "$T/err" "/job:local/task:0: cannot listen on tcp://127.0.0.1:$port: address in use (another process has that port: tfgc run --free-ports puts the tasks on free ports, or --addr /job:local/task:0=HOST:PORT moves this one)"
expect_rc 1 timeout 20 $TFGC server "$T/p.tfg" --job local --task 0
expect_in "$T/err" "address in use (another process has that port: give this task another with --addr /job:local/task:0=HOST:PORT, the same on the command line of every task and of tfgc run)"
kill "$holder"

# Relative paths start from the directory tfgc run started in, which the
# message shows: here a directory that is neither the repository nor the
# program's.
mkdir "$T/cwd"
tfgc=$(cd "$(dirname "$TFGC")" && pwd)/$(basename "$TFGC")
cwd=$(cd "$T/cwd" && pwd -P)
note="(a relative path starts from $cwd, the directory tfgc run started in"
cd "$T/cwd" || fail "cd"
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/p.tfg"
expect_in "$T/err" "error: data/x.npy: no such file $note"
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/p.tfg" --feed x=x.npy \
	--fetch y
expect_in "$T/err" "tfgc: error: x.npy: no such file $note"
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/p.tfg" --restore ckpt
expect_in "$T/err" "no checkpoint in ckpt: ckpt/MANIFEST: No such file or directory $note"
# One that is there from the program's directory: the note says so, and
# gives the path from here.
mkdir -p "$T/data"
: >"$T/data/x.npy"
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/p.tfg"
expect_in "$T/err" "there is a 'data/x.npy' from the program's directory: give '$T/data/x.npy', or run from $T/)"
rm -r "$T/data"
# An absolute path needs no note.
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/p.tfg" \
	--feed x="$cwd/x.npy" --fetch y
expect_in "$T/err" "tfgc: error: $cwd/x.npy: no such file"
grep -q 'relative path' "$T/err" && fail "an absolute path got the note"
# IDX files go through the same loader.
cat >"$T/q.tfg" <<'TFG'
session { print load("t10k-images-idx3-ubyte.gz") }
TFG
expect_rc 1 timeout 20 "$tfgc" run --free-ports "$T/q.tfg"
expect_in "$T/err" "t10k-images-idx3-ubyte.gz: no such file $note"
echo "hints: ok"
