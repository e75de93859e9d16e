#!/bin/sh
# AOT task servers (spec/language.md §10.3 "Ahead-of-time compilation"):
# `tfgc compile -o` of a task whose run signature needs another task, a
# main.c of one line around tfg_serve_part linked with libtfg.a and the
# libraries the spec lists, no LLVM in it; it serves its task next to a
# `tfgc server` and beside another AOT server (which runs the session from
# the plan in its object), and refuses what is not its part.
. tests/integration/common.inc
CC=${CC:-cc}
LIBTFG=${LIBTFG:-build/libtfg.a}
LIBS="-lssl -lcrypto -lz -lpthread -lm"

# Both tasks of hello.tfg: task 1 computes y2, task 0 y and the session.
for t in 0 1; do
	expect_rc 0 $TFGC compile examples/hello.tfg --task local:$t \
		-o "$T/hello$t.o"
	cat >"$T/main$t.c" <<C
#include "hello$t.h"

int
main(int argc, char **argv)
{
	return tfg_serve_part(argc, argv, &hello${t}_parts);
}
C
	# shellcheck disable=SC2086
	expect_rc 0 $CC -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$T" \
		-o "$T/server$t" "$T/main$t.c" "$T/hello$t.o" "$LIBTFG" $LIBS
done
# The point: the runtime alone, no compiler, no LLVM.
nm "$T/server1" | grep -i llvm && fail "server1 has LLVM symbols"
nm "$T/server1" | grep -q ' T tfg_serve_part$' || fail "no tfg_serve_part"
nm "$T/server1" | grep -q 'compile_file\|check_program' &&
	fail "server1 has the compiler"
objdump -p "$T/server1" | grep NEEDED | grep -i llvm &&
	fail "server1 needs libLLVM"

# (a) The AOT server of task 1 with tfgc server for task 0.
local_ports 2
# shellcheck disable=SC2086
"$T/server1" $addrs 2>"$T/s1" &
s1=$!
_servers="$_servers $s1"
serve_hello() {
	# shellcheck disable=SC2086
	$TFGC server examples/hello.tfg --job local --task 0 $addrs 2>"$T/s0" &
	s0=$!
	_servers="$_servers $s0"
}
serve_hello
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "attached run printed '$(cat "$T/out")'"
# A second run on the same servers.
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "second run printed '$(cat "$T/out")'"

# (b) Another program (x = 3): the AOT server refuses its messages, and
# tells the run so at once.
sed 's/^x = 2$/x = 3/' examples/hello.tfg >"$T/other.tfg"
cmp -s examples/hello.tfg "$T/other.tfg" && fail "other.tfg is hello.tfg"
# shellcheck disable=SC2086
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs examples/hello.tfg
wait $s0 || fail "tfgc server exited $?: $(cat "$T/s0")"
wait $s1 || fail "the AOT server exited $?: $(cat "$T/s1")"
# shellcheck disable=SC2086
"$T/server1" $addrs 2>"$T/s1" &
s1=$!
_servers="$_servers $s1"
# shellcheck disable=SC2086
$TFGC server "$T/other.tfg" --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
_servers="$_servers $s0"
# shellcheck disable=SC2086
expect_rc 1 $TFGC run --attach --startup-timeout 3 $addrs "$T/other.tfg"
expect_in "$T/err" "/job:local/task:1 serves another program"
expect_in "$T/s1" "different source or plan"
# Each serves its own program on: SIGTERM stops both.
kill $s0 $s1
wait $s1 || fail "the AOT server exited $? on SIGTERM: $(cat "$T/s1")"
wait $s0

# (c) Two AOT servers: task 0's runs the session from its object's plan.
local_ports 2
# shellcheck disable=SC2086
"$T/server0" --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
_servers="$_servers $s0"
# shellcheck disable=SC2086
"$T/server1" $addrs --heartbeat-timeout 2 2>"$T/s1" &
s1=$!
_servers="$_servers $s1"
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "AOT-only run printed '$(cat "$T/out")'"
# shellcheck disable=SC2086
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs examples/hello.tfg
wait $s0 || fail "AOT server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "AOT server 1 exited $?: $(cat "$T/s1")"

# (d) What an AOT server refuses, before it listens.
# shellcheck disable=SC2086
expect_rc 1 "$T/server1" --job local --task 0 $addrs
expect_in "$T/err" "tfgc: error: this server holds the part of /job:local/task:1, not of /job:local/task:0"
expect_rc 1 "$T/server1" --job local --task 7
expect_in "$T/err" "the cluster has no task /job:local/task:7"
expect_rc 1 env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 "$T/server1"
expect_in "$T/err" "holds the part of /job:local/task:1, not of /job:local/task:0"
expect_rc 1 env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3 "$T/server1"
expect_in "$T/err" "the launcher started 3 processes"
expect_rc 1 env TF_CONFIG='{"task": {"type": "local", "index": 1}}' \
	"$T/server1"
expect_in "$T/err" "TF_CONFIG is set"
expect_rc 2 "$T/server1" examples/hello.tfg
expect_in "$T/err" "unexpected argument 'examples/hello.tfg'"
expect_rc 2 "$T/server1" --cluster c.json
expect_in "$T/err" "cluster is compiled in"
expect_rc 2 "$T/server1" --job local
expect_rc 2 "$T/server1" --bogus
expect_in "$T/err" "unknown option '--bogus'"
expect_rc 1 "$T/server1" --addr /job:local/task:9=127.0.0.1:1
expect_in "$T/err" "--addr '/job:local/task:9=127.0.0.1:1': the cluster has no such task"
# A port in use is an error naming the task.
held=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
time.sleep(20)' "$held" &
holder=$!
wait_listen "$held"
expect_rc 1 timeout 10 "$T/server1" --addr "/job:local/task:1=127.0.0.1:$held"
expect_in "$T/err" "tfgc: error: /job:local/task:1: cannot listen on tcp://127.0.0.1:$held: address in use"
kill $holder 2>/dev/null
expect_rc 0 "$T/server1" --help
expect_in "$T/out" "usage: $T/server1 [--job J --task T]"

# (e) --shared still exports tfg_parts for tfgc server --part; an object
# does not (two objects link into one program).
expect_rc 0 $TFGC compile examples/hello.tfg --task local:1 --shared \
	-o "$T/part1.so"
nm -D "$T/part1.so" | grep -q ' tfg_parts$' || fail "no tfg_parts in part1.so"
nm "$T/hello1.o" | grep -q ' tfg_parts$' && fail "hello1.o defines tfg_parts"
expect_rc 0 $TFGC compile examples/hello.tfg --task local:1 -o "$T/b.o" \
	--name other
expect_rc 0 $CC -std=c11 -I"$T" -o "$T/two" "$T/main1.c" "$T/hello1.o" \
	"$T/b.o" "$LIBTFG" $LIBS
echo "aot_server: ok"
