#!/bin/sh
# tfgc plot FILE.csv (spec §10.7 "Training curves"): the CSV's errors,
# each with its exit status and message; then, where cairo can be loaded
# (make deps installs libcairo2; SKIP otherwise), a PNG of the right size
# whose curves are where the data puts them, 100k rows in good time, and
# an output that cannot be written.
. tests/integration/common.inc

# expect_err WANT TEXT ARGS...: tfgc plot ARGS exits WANT, saying TEXT.
expect_err() {
	_want=$1 _text=$2
	shift 2
	expect_rc "$_want" $TFGC plot "$@"
	expect_in "$T/err" "$_text"
}

# 1000 steps: a loss that decays, an accuracy that rises, measured every
# 50 steps (empty cells, and nan once), and a time column left out.
python3 - "$T/run.csv" <<'PY'
import math, sys
with open(sys.argv[1], "w") as f:
    f.write("step,loss,accuracy,time\n")
    for i in range(1000):
        loss = 2.3 * math.exp(-i / 200) + 0.05 * (i % 7) / 7
        acc = "%.4f" % (1 - 0.9 * math.exp(-i / 250)) if i % 50 == 0 else ""
        if i == 500:
            acc = "nan"
        f.write("%d,%.5f,%s,%.3f\n" % (i, loss, acc, i * 0.01))
PY

# What is wrong with the file, or the command line (exit 2).
expect_err 1 "cannot read '$T/none.csv': No such file or directory" \
	"$T/none.csv"
: >"$T/empty.csv"
expect_err 1 "'$T/empty.csv' is empty: expected a header" "$T/empty.csv"
printf '1,2.5\n2,2.25\n' >"$T/nohead.csv"
expect_err 1 "$T/nohead.csv:1: the first line is numbers, not a header" \
	"$T/nohead.csv"
printf 'loss\n1\n' >"$T/one.csv"
expect_err 1 "$T/one.csv:1: the header names one column ('loss')" \
	"$T/one.csv"
printf 'step,loss,acc\n1,2,\n2,2x,0.5\n' >"$T/word.csv"
expect_err 1 "$T/word.csv:3:3: '2x' is not a number (column 2, 'loss')" \
	"$T/word.csv"
printf 'step,loss,acc\n1,2,\n2,1\n' >"$T/ragged.csv"
expect_err 1 "$T/ragged.csv:3: 2 cells, but the header has 3 columns" \
	"$T/ragged.csv"
printf 'step,,acc\n' >"$T/noname.csv"
expect_err 1 "column 2 of the header has no name" "$T/noname.csv"
expect_err 1 "--x 'epoch': $T/run.csv has no such column (it has 'step'," \
	"$T/run.csv" --x epoch
expect_err 1 "--y 'acc': $T/run.csv has no such column" \
	"$T/run.csv" --y loss,acc
for s in 800 800x 0x600 -800x600 800x600x2 100x600 800x100 9000x600 wide; do
	expect_err 2 "--size takes WIDTHxHEIGHT in pixels, such as 800x600" \
		"$T/run.csv" --size "$s"
done
expect_err 1 "--size 800x200 gives each of the 2 panels 100 pixels" \
	"$T/run.csv" --size 800x200 --y loss,accuracy
expect_err 2 "unknown option '--colour'" "$T/run.csv" --colour
expect_err 2 "no input file" -o "$T/a.png"
expect_err 2 "'--trace' is not an option of 'tfgc plot'" "$T/run.csv" \
	--trace t.json
expect_in "$T/err" "usage: tfgc plot [-o OUT.png] [OPTION]... FILE.csv"
expect_rc 0 $TFGC plot -h
expect_in "$T/out" "usage: tfgc plot [-o OUT.png] [OPTION]... FILE.csv"
expect_in "$T/out" "  --size WxH "
expect_rc 0 $TFGC --help
expect_in "$T/out" "tfgc plot [-o OUT.png] [OPTION]... FILE.csv"
[ -e "$T/a.png" ] && fail "a failed plot wrote a file"

# cairo is dlopen'd: no executable links it, and a missing one is named.
if command -v ldd >/dev/null && ldd "$TFGC" | grep -q cairo; then
	fail "$TFGC links libcairo"
fi
expect_rc 1 env TFG_LIBCAIRO="$T/libnone.so" $TFGC plot "$T/run.csv" \
	-o "$T/a.png"
expect_in "$T/err" \
	"tfgc plot: cannot load $T/libnone.so (apt install libcairo2): "
expect_rc 1 env TFG_LIBCAIRO=libz.so.1 $TFGC plot "$T/run.csv" -o "$T/a.png"
expect_in "$T/err" "libz.so.1 has no cairo_image_surface_create"
$TFGC plot "$T/run.csv" -o "$T/curve.png" 2>"$T/err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q "cannot load [^ ]*libcairo.so.2 " "$T/err"; then
	echo "SKIP: tfgc plot's drawing: $(cat "$T/err") (make deps)"
	exit 0
fi
[ "$rc" -eq 0 ] || fail "tfgc plot exited $rc: $(cat "$T/err")"

# check_png FILE W H: the PNG is W x H, and not blank.  With --curves,
# the loss (blue, the top panel) falls from left to right and the
# accuracy (orange, the bottom one) rises.
check_png() {
	python3 - "$@" <<'PY' || fail "$1 is not the plot it should be"
import struct, sys, zlib
path, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
curves = "--curves" in sys.argv
raw = open(path, "rb").read()
assert raw[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
pos, idat, ihdr = 8, b"", None
while pos < len(raw):
    n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
    body = raw[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = ihdr[:4]
assert (w, h) == (W, H), "IHDR says %dx%d, expected %dx%d" % (w, h, W, H)
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
data = zlib.decompress(idat)
stride = w * bpp
assert len(data) == h * (stride + 1), "IDAT holds %d bytes" % len(data)
rows, prev = [], bytearray(stride)
for y in range(h):
    f, line = data[y * (stride + 1)], bytearray(
        data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else
                                  b if pb <= pc else c)) & 255
        else:
            assert f == 0, "filter %d" % f
    rows.append(bytes(line))
    prev = line
colours, ink = set(), 0
blue, orange = [], []
for y, line in enumerate(rows):
    for x in range(w):
        r, g, b = line[x * bpp:x * bpp + 3]
        colours.add((r, g, b))
        if (r, g, b) != (255, 255, 255):
            ink += 1
        if b > r + 80 and b > g + 30:
            blue.append((x, y))
        elif r > 200 and 80 < g < 180 and b < 90:
            orange.append((x, y))
frac = ink / (w * h)
assert len(colours) >= 2, "one colour"
assert 0.01 < frac < 0.5, "%.3f of the pixels are not background" % frac
if curves:
    assert len(blue) > 500 and len(orange) > 300, (len(blue), len(orange))
    assert all(y < h // 2 for x, y in blue), "loss outside its panel"
    assert all(y >= h // 2 for x, y in orange), "accuracy outside its panel"
    def mean_y(pts, lo, hi):
        ys = [y for x, y in pts if lo <= x < hi]
        return sum(ys) / len(ys)
    assert mean_y(blue, 0, w // 4) < mean_y(blue, 3 * w // 4, w), \
        "the loss does not fall"
    assert mean_y(orange, 0, w // 4) > mean_y(orange, 3 * w // 4, w), \
        "the accuracy does not rise"
print("%s: %dx%d, %d colours, %.1f%% ink" % (path, w, h, len(colours),
                                            100 * frac))
PY
}

# Two panels (time is left out), 300 pixels each.
check_png "$T/curve.png" 800 600 --curves
# --size, --y, --x; and the default output name, FILE.png.
expect_rc 0 $TFGC plot "$T/run.csv" --y accuracy --x time --size 400x250
check_png "$T/run.png" 400 250
# A column with no value at all is a panel that says so.
printf 'step,loss,acc\n1,2,\n2,1.5,nan\n3,1,\n' >"$T/nodata.csv"
expect_rc 0 $TFGC plot "$T/nodata.csv" -o "$T/nodata.png"
check_png "$T/nodata.png" 800 600

# An output that cannot be written.
expect_err 1 "cannot write '$T/no/such.png': No such file or directory" \
	"$T/run.csv" -o "$T/no/such.png"
expect_err 1 "cannot write '$T': Is a directory" "$T/run.csv" -o "$T"

# 100k rows: decimated to the pixel columns, so quick even under ASan.
python3 - "$T/big.csv" <<'PY'
import math, sys
with open(sys.argv[1], "w") as f:
    f.write("step,loss,accuracy\n")
    for i in range(100000):
        f.write("%d,%.5f,%s\n" % (i, 2 * math.exp(-i / 20000) + (i % 13) / 40,
                                  "%.3f" % (i / 1e5) if i % 1000 == 0 else ""))
PY
t0=$(now)
expect_rc 0 $TFGC plot "$T/big.csv" -o "$T/big.png"
within 10 "$t0" "$(now)" "tfgc plot of 100k rows"
check_png "$T/big.png" 800 600 --curves
echo "plot: ok"
