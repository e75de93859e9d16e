#!/bin/sh
# progress() and record() (spec §8.13 "progress", §8.14 "record"): plain
# lines when stdout is not a terminal (one at each epoch's end with
# --progress-every 0, more with a short period), nothing with
# --no-progress; a bar redrawn in place on a pseudo-terminal, below the
# printed lines, one per session of a `session each`; the CSV file's
# header, rows and empty cells, its rows kept by a run that is killed.
. tests/integration/common.inc

# 40 rows of f32 for batches of 4: 10 batches an epoch
data=$(python3 -c 'print(", ".join("%d.5" % i for i in range(40)))')
cat >"$T/p.tfg" <<TFG
param pause = 0
input x: f32[?]
s = reduce_sum(x)
session {
    let data = [$data]
    for epoch in 0..3 {
        for b in batches(data, 4, seed=epoch) {
            let l = run(s, feed { x: b.x })
            progress(loss=l, n=b.index)
            record("$T/c.csv", step=10 * epoch + b.index, loss=l)
            sleep(pause)
        }
        print "epoch", epoch + 1, "done"
        record("$T/c.csv", step=10 * epoch + 9, accuracy=0.5 + epoch)
    }
}
TFG

# onpty CMD...: runs CMD with its stdout and stderr on a pseudo-terminal
# 100 columns wide; what it wrote, in $T/tty (Python's repr escapes),
# and its exit status.  With $ctrl_c set to N, the terminal's Ctrl-C
# (SIGINT to its process group) comes once N bytes were written.
onpty() {
	python3 - "$@" >"$T/tty" <<'PY'
import fcntl, os, pty, signal, struct, sys, termios
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.execvp(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
ctrl_c = int(os.environ.get("ctrl_c", "0") or 0)
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
    if ctrl_c and len(out) >= ctrl_c:
        ctrl_c = 0
        os.killpg(pid, signal.SIGINT)
_, st = os.waitpid(pid, 0)
print(repr(out.decode()))
print("exit", os.waitstatus_to_exitcode(st))
PY
}

# -- plain lines, one an epoch: the last one (nothing changed) is left out
expect_rc 0 $TFGC run "$T/p.tfg" --progress-every 0
sed 's/  [0-9,]* ex\/s//; s/elapsed [0-9]*:[0-9][0-9]$/elapsed T/' "$T/out" \
	>"$T/plain"
cat >"$T/want" <<'OUT'
epoch 1 done
epoch 1/3  33%  step 10  loss 93.0000  n 9  elapsed T
epoch 2 done
epoch 2/3  66%  step 20  loss 105.0000  n 9  elapsed T
epoch 3 done
epoch 3/3  100%  step 30  loss 104.0000  n 9  elapsed T
OUT
diff -u "$T/want" "$T/plain" || fail "plain progress lines"

# -- the CSV: the header of every name, then time; empty cells
python3 - "$T/c.csv" <<'PY' || fail "the CSV file"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["step", "loss", "accuracy", "time"], rows[0]
assert len(rows) == 1 + 3 * 11, len(rows)
assert rows[1][:3] == ["0", "81.0", ""], rows[1]
assert rows[11][:3] == ["9", "", "0.5"], rows[11]
assert rows[33][:3] == ["29", "", "2.5"], rows[33]
t = [float(r[3]) for r in rows[1:]]
assert t == sorted(t) and 0 <= t[0] < 60, t
assert all(len(r) == 4 for r in rows)
PY

# -- more lines with a short period (8 steps of 0.1 s an epoch)
expect_rc 0 $TFGC run "$T/p.tfg" --param pause=100 --progress-every 0.3
n=$(grep -c 'elapsed' "$T/out")
[ "$n" -gt 4 ] || { cat "$T/out"; fail "$n plain lines with a 0.3 s period"; }
expect_in "$T/out" "ex/s"
expect_in "$T/out" "ETA"

# -- --no-progress: the printed lines alone
expect_rc 0 $TFGC run "$T/p.tfg" --no-progress
[ "$(cat "$T/out")" = "epoch 1 done
epoch 2 done
epoch 3 done" ] || { cat "$T/out"; fail "--no-progress printed progress"; }

# -- on a terminal: a bar redrawn in place; a printed line clears it and
# comes on a line of its own; the last drawing stays, with the time taken
onpty $TFGC run "$T/p.tfg" --param pause=30
expect_in "$T/tty" "exit 0"
expect_in "$T/tty" "epoch 1/3 [>...................]   3%  step 1  loss 81.0000  n 0"
expect_in "$T/tty" '\r\x1b[Jepoch 1 done\r\n'
expect_in "$T/tty" "epoch 3/3 [====================] 100%  step 30  loss 104.0000  n 9"
grep -q 'time 0:0[0-9]\\r\\n' "$T/tty" || { cat "$T/tty"; fail "no last bar"; }

# -- Ctrl-C while a bar is drawn: the bar's line is ended, so that the
# shell's prompt starts a line of its own
ctrl_c=60 onpty $TFGC run "$T/p.tfg" --param pause=200
expect_in "$T/tty" "exit 130"
expect_in "$T/tty" "epoch 1/3 ["
grep -q "\\\\r\\\\n'\$" "$T/tty" ||
	{ cat "$T/tty"; fail "Ctrl-C left the bar's line open"; }

# -- sessions at once: a labelled line each, one above the other
p1=$(free_port) p2=$(free_port)
cat >"$T/each.tfg" <<TFG
cluster { worker = ["127.0.0.1:$p1", "127.0.0.1:$p2"] }
session each "/job:worker" as w {
    for epoch in 0..2 {
        for i in 0..5 {
            progress(loss=w.index + i)
            sleep(40)
        }
    }
}
TFG
onpty $TFGC run "$T/each.tfg"
expect_in "$T/tty" "exit 0"
expect_in "$T/tty" '[/job:worker/task:0] epoch '
expect_in "$T/tty" '[/job:worker/task:1] epoch '
grep -q 'task:0\] epoch [0-9/]* \[[=>.]*\][ 0-9]*%  step [0-9]*  loss [0-9.]*\\r\\n\[/job:worker/task:1\] epoch' \
	"$T/tty" || { cat "$T/tty"; fail "no two bars, one above the other"; }
expect_in "$T/tty" '\x1b[1A'

# -- a killed run keeps the rows it wrote
cat >"$T/kill.tfg" <<TFG
session {
    for i in 0..3 { record("$T/k.csv", i=i) }
    sleep(20000)
}
TFG
$TFGC run "$T/kill.tfg" >"$T/out" 2>&1 &
pid=$!
for i in $(seq 100); do
	[ -e "$T/k.csv" ] && [ "$(wc -l <"$T/k.csv")" = 4 ] && break
	sleep 0.1
done
kill -TERM $pid
wait $pid
[ "$(cut -d, -f1 "$T/k.csv" | tr '\n' ' ')" = "i 0 1 2 " ] ||
	{ cat "$T/k.csv"; fail "the killed run's rows"; }

# -- the file's name made of a param and a literal, as save's directory
cat >"$T/joined.tfg" <<'TFG'
param out = "."
session {
    for i in 0..2 { record(out + "/j.csv", i=i, time=i) }
    save(out + "/ck")
}
TFG
expect_rc 0 $TFGC run "$T/joined.tfg" --param out="$T"
[ "$(tr '\n' ' ' <"$T/j.csv")" = "i,time 0,0 1,1 " ] ||
	{ cat "$T/j.csv"; fail "record() of a joined name"; }
[ -e "$T/ck/MANIFEST" ] || fail "save() of a joined name"
echo "ok"
