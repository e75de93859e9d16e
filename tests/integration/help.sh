#!/bin/sh
# tfgc's help (compiler/help.def; the text itself is in tests/golden/cli):
# tfgc --version names the libraries and what it found of CUDA; every
# command's help is the same whichever way it is asked for; the committed
# man page is what tfgc help --man prints now, and troff reads it without
# a warning; make install with DESTDIR and PREFIX puts tfgc, the man page,
# libtfg.a and <tfg/tfg.h> where they belong, and a program compiled by
# the installed tfgc links with the installed library alone
# (spec §10.3 "Ahead-of-time compilation"); make uninstall takes them away.
. tests/integration/common.inc
CC=${CC:-cc}

# tfgc --version: its own, then LLVM, OpenBLAS, zlib and OpenSSL, then
# the CUDA driver and NVRTC, found or not (both say which).
expect_rc 0 $TFGC --version
want=$(sed -n 's/^#define TFG_VERSION "\(.*\)"$/\1/p' runtime/tfg.h)
[ "$(sed -n 1p "$T/out")" = "tfgc $want" ] || fail "--version: $(head -1 "$T/out")"
i=2
for lib in "LLVM " "OpenBLAS " "zlib " "OpenSSL " "CUDA driver" "NVRTC"; do
	case $(sed -n "${i}p" "$T/out") in
	"$lib"*) ;;
	*) fail "--version line $i is not $lib...: $(cat "$T/out")" ;;
	esac
	i=$((i + 1))
done
grep -q "^CUDA driver.*GPU" "$T/out" || fail "--version: no GPU count or 'no GPU'"
[ -s "$T/err" ] && fail "--version wrote to stderr: $(cat "$T/err")"
$TFGC run --version >"$T/v2" || fail "tfgc run --version failed"
cmp -s "$T/out" "$T/v2" || fail "tfgc run --version differs from tfgc --version"

# Every command of the overview: help C, C --help and C -h agree.
cmds=$($TFGC --help | sed -n 's/^  tfgc \([a-z]*\).*/\1/p')
[ "$(echo $cmds | wc -w)" -ge 9 ] || fail "the overview lists: $cmds"
for c in $cmds; do
	expect_rc 0 $TFGC help "$c"
	mv "$T/out" "$T/h1"
	expect_rc 0 $TFGC "$c" --help
	cmp -s "$T/h1" "$T/out" || fail "tfgc help $c and tfgc $c --help differ"
	expect_rc 0 $TFGC "$c" -h
	cmp -s "$T/h1" "$T/out" || fail "tfgc help $c and tfgc $c -h differ"
	expect_in "$T/h1" "usage: tfgc $c"
done

# The committed man page is the table's.
$TFGC help --man >"$T/tfgc.1" || fail "tfgc help --man failed"
cmp -s "$T/tfgc.1" man/tfgc.1 ||
	fail "man/tfgc.1 is not what tfgc help --man prints: make man"
if command -v groff >/dev/null; then
	groff -man -Tutf8 -ww -z man/tfgc.1 2>"$T/groff" ||
		fail "groff failed: $(cat "$T/groff")"
	[ -s "$T/groff" ] && fail "groff warns: $(cat "$T/groff")"
	groff -man -Tutf8 man/tfgc.1 2>/dev/null | sed 's/.\x08//g' >"$T/page"
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" \
	    ENVIRONMENT FILES "SEE ALSO"; do
		grep -q "^$s\$" "$T/page" || fail "the man page has no $s"
	done
	expect_in "$T/page" "--heartbeat-timeout S [run, server, stop]"
	expect_in "$T/page" "TFG_CLUSTER_KEY"
else
	echo "SKIP: rendering man/tfgc.1: no groff (make deps: groff-base)"
fi

# make install into a staging directory, and what it installed at work.
D=$T/stage P=/opt/tfg
make -s --no-print-directory install DESTDIR="$D" PREFIX=$P >"$T/make" 2>&1 ||
	fail "make install failed: $(cat "$T/make")"
for f in bin/tfgc share/man/man1/tfgc.1 lib/libtfg.a include/tfg/tfg.h \
    include/tfg/runtime/errors.def; do
	[ -s "$D$P/$f" ] || fail "make install did not install $P/$f"
done
[ -x "$D$P/bin/tfgc" ] || fail "the installed tfgc is not executable"
cmp -s "$D$P/share/man/man1/tfgc.1" man/tfgc.1 || fail "another man page"
expect_rc 0 "$D$P/bin/tfgc" --version
expect_in "$T/out" "tfgc $want"
cat >"$T/model.tfg" <<'TFG'
cluster { local = ["localhost:2222"] }
input x: f32[3]
y = exp(x) * 2.0
session { print run(y, feed { x: [1.0, 2.0, 3.0] }) }
TFG
cat >"$T/main.c" <<'C'
#include <stdio.h>
#include <tfg/tfg.h>
#include "model.h"

int
main(void)
{
	float x[3] = {0, 1, 2}, y[3];

	if (model_y(x, y) != TFG_OK)
		return 1;
	printf("%.4f %.4f %.4f\n", y[0], y[1], y[2]);
	return 0;
}
C
expect_rc 0 "$D$P/bin/tfgc" compile "$T/model.tfg" -o "$T/model.o"
$CC -o "$T/main" "$T/main.c" "$T/model.o" -I"$D$P/include" -I"$T" \
	-L"$D$P/lib" -ltfg -lm 2>"$T/cc" || fail "cc: $(cat "$T/cc")"
[ "$("$T/main")" = "2.0000 5.4366 14.7781" ] ||
	fail "the installed library's program printed: $("$T/main")"

make -s --no-print-directory uninstall DESTDIR="$D" PREFIX=$P >"$T/make" 2>&1 ||
	fail "make uninstall failed: $(cat "$T/make")"
left=$(find "$D" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
[ -e "$D$P/include/tfg" ] && fail "make uninstall left include/tfg"
exit 0
