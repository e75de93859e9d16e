#!/bin/sh
# The bytes of a sparse step (spec §4.4.1 "Partitioned variables",
# spec/design.md "Counted edges"): a worker training a table split over
# two ps sends each shard only its distinct ids and their rows'
# gradients, so a table of 1,000,000 rows and one of 10,000 move the
# same bytes for the same ids, and those are at most 1.1 times the
# distinct rows' bytes and their ids (as --trace shows them); the tables
# train alike.
. tests/integration/common.inc
cd "$T" || fail "no $T"
TFGC=$OLDPWD/$TFGC
[ -x "$TFGC" ] || TFGC=$(command -v "${TFGC##*/}")

# 512 ids of 300 distinct rows below 10,000, as a .npy
python3 - <<'PY' || fail "no ids"
import struct
ids = [(i % 300) * 31 + (i % 300) // 7 for i in range(512)]
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (512,), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("ids.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<512q", *ids))
assert len(set(ids)) == 300 and max(ids) < 10000
PY
cat >p.tfg <<'P'
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
param rows = 10000
device replicas(ps="/job:ps", worker="/job:worker") {
    input ids: i64[512]
    var emb = partitioned(zeros([rows, 8]), 2)
    loss = reduce_sum(square(gather(emb, ids) - 1.0))
    train = minimize(loss, sgd(0.01))
}
session "/job:worker/task:0" {
    initialize()
    let x = load("ids.npy")
    for i in 0..3 { run(train, feed { ids: x }) }
    print run(loss, feed { ids: x })
}
P
for rows in 10000 1000000; do
	expect_rc 0 $TFGC run --free-ports --trace "t$rows.json" p.tfg \
		--param rows=$rows
	cp out "out$rows"
done
cmp -s out10000 out1000000 || fail "the tables trained otherwise: $(cat out10000 out1000000)"
python3 - <<'PY' || fail "the bytes"
import json, collections
def sent(path):
    t = json.load(open(path))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    name = {e["pid"]: e["args"]["name"] for e in ev
            if e.get("ph") == "M" and e.get("name") == "process_name"}
    step = collections.defaultdict(int)
    for e in ev:
        if (name.get(e.get("pid"), "").endswith("worker/task:0") and
                " to /job:ps/" in e.get("name", "") and
                "bytes" in e.get("args", {})):
            step[e["args"]["step"]] += e["args"]["bytes"]
    return [step[s] for s in sorted(step)]
small, big = sent("t10000.json"), sent("t1000000.json")
print("bytes the worker sent per step:", small, big)
assert small == big, (small, big)
ideal = 300 * (8 * 4 + 8)  # the distinct rows' gradients and their ids
most = max(small)
print("most:", most, "ideal:", ideal, "ratio: %.3f" % (most / ideal))
assert ideal <= most <= 1.1 * ideal, most
PY
echo "ok sparse_bytes"
