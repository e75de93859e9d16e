#!/bin/sh
# examples/wide_deep.sh and .tfg (spec §6.36 "gather, embedding_lookup",
# §4.4.1 "Partitioned variables": its user tables and the cross's
# million weights in two shards each):
# the generator makes a small click data set (2,000 users, 200 items,
# 60,000 training and 5,000 test examples) and two workers on two ps
# train the wide-and-deep model on it for two epochs; the model's test
# AUC must come within 0.1 of the generating model's own (0.055
# measured: 0.655 of 0.710), its log-loss within 0.1, and the ps must
# have counted every update.  Then a table too small for the data's ids: the step fails,
# naming the gather, the id and the table's size.
. tests/integration/common.inc

USERS=2000 ITEMS=200 N=60000 TEST=5000 expect_rc 0 \
	sh examples/wide_deep.sh "$T/wd" --param epochs=2
cat "$T/out"
line=$(grep "epoch 2 " "$T/out") || fail "no line for epoch 2"
best=$(grep "generating model" "$T/out") || fail "no line for the model"
python3 - "$line" "$best" <<'PY' || fail "the model did not learn enough"
import sys
def field(s, name):
    w = s.split()
    return float(w[w.index(name) + 1 + (name == "test")])
m, g = sys.argv[1], sys.argv[2]
auc, best = field(m, "AUC"), field(g, "AUC")
ll, bll = float(m.split("log-loss")[1].split()[0]), float(g.split("log-loss")[1].split()[0])
print("AUC", auc, "of", best, "log-loss", ll, "of", bll)
sys.exit(not (auc > best - 0.1 and ll < bll + 0.1))
PY
grep -q "trained 236 global steps" "$T/out" ||
	fail "the ps did not count 236 global steps (2 epochs of 2 x 59 batches)"
expect_rc 1 $TFGC run --free-ports --no-progress examples/wide_deep.tfg \
	--param data="$T/wd" --param users=100 --param items=200 \
	--param epochs=1
grep -q "'gather' at examples/wide_deep.tfg:.*index .* is outside \[0, 100)" \
	"$T/err" || fail "no error naming the gather: $(cat "$T/err")"
echo "ok"
