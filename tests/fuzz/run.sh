#!/bin/sh
# tests/fuzz/run.sh: the fuzz targets' runs (spec/design.md "Fuzzing").
#
#   run.sh fuzz TARGET SECS [SEED...]   make fuzz
#       build/fuzz/tests/fuzz/TARGET_fuzz (libFuzzer) for SECS seconds,
#       niced, from tests/fuzz/corpus/TARGET and the seeds; then the
#       inputs it found that reach code the corpus does not join the
#       corpus (-merge=1), so that it grows by what matters only
#       (FUZZ_MIN=1: the corpus is made again, smaller).  A crash, leak,
#       hang or failed check is left in build/fuzz/crash/ and fails the
#       run: fix it, then add the input to the corpus as crash-NAME.
#   run.sh replay TARGET [SEED...]      make fuzz-replay (make test)
#       build/asan/tests/fuzz/TARGET_replay (tests/fuzz/replay.c under
#       ASan) once on the corpus and the seeds.
#
# What the targets print (diagnostics of bad input, by design) goes to a
# log, shown only when the run fails.
cd "$(dirname "$0")/../.." || exit 1
mode=$1 t=$2
shift 2
corpus=tests/fuzz/corpus/$t

if [ "$mode" = replay ]; then
	log=build/asan/fuzz-$t.log
	if ASAN_OPTIONS=detect_leaks=1 "build/asan/tests/fuzz/${t}_replay" \
		"$corpus" "$@" >"$log.out" 2>"$log"; then
		# "N inputs"
		echo "fuzz-replay: $t: $(sed 's/ inputs*$//' "$log.out") passed, 0 failed, 0 skipped"
		exit 0
	fi
	tail -n 40 "$log"
	echo "fuzz-replay: $t: 0 passed, 1 failed, 0 skipped (whole output: $log)"
	exit 1
fi

secs=$1
shift
bin=build/fuzz/tests/fuzz/${t}_fuzz
new=build/fuzz/new/$t     # what this run found
seeds=build/fuzz/seeds/$t # the seeds, copied: libFuzzer reads directories
log=build/fuzz/$t.log
rm -rf "$new" "$seeds"
mkdir -p "$new" "$seeds" "$corpus" build/fuzz/crash
for f in "$@"; do
	cp "$f" "$seeds/$(echo "$f" | tr / _)"
done
echo "fuzz: $t for $secs s"
nice -n 10 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-close_fd_mask=3 -print_final_stats=1 \
	-artifact_prefix="build/fuzz/crash/$t-" "$new" "$corpus" "$seeds" \
	>"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
# The merge, failed run or not (what it found ran clean): into a directory
# holding the corpus and the seeds, so that only what reaches code none of
# them reaches gets in; edges count, not how often they run
# (-use_counters=0), which keeps the corpus small.
# With FUZZ_MIN=1 the corpus is made again, of what it had and what the
# run found, the smaller inputs first (libFuzzer's reductions among
# them): much smaller, but many files change.  crash-* inputs stay, and
# seed-* (wire_seeds.c).
merge=build/fuzz/merge/$t
from=$new
rm -rf "$merge"
mkdir -p "$merge"
if [ "${FUZZ_MIN:-0}" = 1 ]; then
	from="build/fuzz/old/$t $new"
	rm -rf "build/fuzz/old/$t"
	mkdir -p "build/fuzz/old/$t"
	for f in "$corpus"/*; do
		case ${f##*/} in
		crash-* | seed-*) ;;
		*) mv "$f" "build/fuzz/old/$t/" ;;
		esac
	done
fi
cp -R "$corpus"/. "$seeds"/. "$merge"/
LC_ALL=C ls "$merge" >"$merge.before"
# shellcheck disable=SC2086 # $from: one or two directories
nice -n 10 "$bin" -merge=1 -use_counters=0 -timeout=10 -rss_limit_mb=2048 \
	-close_fd_mask=3 "$merge" $from >"$log.merge" 2>&1 || {
	tail -n 20 "$log.merge"
	echo "fuzz: $t: merging into $corpus failed"
	exit 1
}
added=0
for f in $(LC_ALL=C ls "$merge" | LC_ALL=C comm -13 "$merge.before" -); do
	cp "$merge/$f" "$corpus/"
	added=$((added + 1))
done
if [ "$rc" -ne 0 ]; then
	grep -v '^#[0-9]' "$log" | tail -n 60
	echo "fuzz: $t: FAILED after ${execs:-?} runs ($added new inputs in" \
		"$corpus); the input is in build/fuzz/crash/ (whole output:" \
		"$log)"
	exit 1
fi
echo "fuzz: $t: $execs runs in $secs s; $added new inputs in $corpus" \
	"($(ls "$corpus" | wc -l), $(cat "$corpus"/* | wc -c) bytes)"
