#!/bin/sh
# bench/bigprog.sh N KIND: writes a program of N statements to stdout,
# for the checking-time rows of bench/run.sh (issue 25).  KIND graph: a
# chain of N graph statements, each of six nodes reading the one before;
# session: N lets in one session, each reading the one before.
n=$1
case $2 in
graph)
	awk -v n="$n" 'BEGIN {
		print "x0 = [1.0, 2.0, 3.0]"
		for (i = 1; i < n; i++)
			printf "x%d = x%d * 1.5 + reduce_sum(x%d) / 3.0\n", i, i - 1, i - 1
		printf "session {\n    print run(x%d)\n}\n", n - 1
	}' ;;
session)
	awk -v n="$n" 'BEGIN {
		print "x = 1.0"
		print "session {"
		print "    let a0 = run(x)"
		for (i = 1; i < n; i++)
			printf "    let a%d = a%d + 1\n", i, i - 1
		printf "    print a%d\n}\n", n - 1
	}' ;;
*)
	echo "usage: bench/bigprog.sh N graph|session" >&2
	exit 2 ;;
esac
