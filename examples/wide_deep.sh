#!/bin/sh
# examples/wide_deep.sh [DIR [tfgc run arguments]]: makes the click data
# of examples/wide_deep.tfg in DIR (default /tmp/wide_deep) with
# examples/wide_deep_data.tfg, a training set (sample seed 2) and a test
# set (seed 3) of one generating model, then trains on it.  N (training
# examples, 1,000,000), TEST (20,000), USERS (1,000) and ITEMS (100) may
# be set; arguments after DIR go to the training run (--param epochs=1
# ...).
set -eu
cd "$(dirname "$0")/.."
TFGC=${TFGC:-./tfgc}
D=${1:-/tmp/wide_deep}
[ $# -gt 0 ] && shift
U=${USERS:-1000}
I=${ITEMS:-100}
mkdir -p "$D"
for set in train:2:"${N:-1000000}" test:3:"${TEST:-20000}"; do
	name=${set%%:*} rest=${set#*:}
	$TFGC run examples/wide_deep_data.tfg --param users="$U" \
		--param items="$I" --param n="${rest#*:}" \
		--param sample_seed="${rest%%:*}" \
		--fetch x --out "$D/${name}_x.npy" \
		--fetch y --out "$D/${name}_y.npy" \
		--fetch p --out "$D/${name}_p.npy"
done
$TFGC run --free-ports --no-progress examples/wide_deep.tfg \
	--param data="$D" --param users="$U" --param items="$I" "$@"
