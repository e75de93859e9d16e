"""bench/tf1_wide_deep.py: TF1's distributed runtime training the wide-and-
deep click model of examples/wide_deep.tfg, its peer for an examples-per-
second comparison.

Two ps tasks hold the variables and two worker tasks, each its own process
and client, build the same graph under tf.compat.v1.train.replica_device_
setter (variables round-robin over the ps) and train asynchronously
(between-graph replication).  The model is wide_deep.tfg's: fields user,
item, hour (x: i64[n, 3]) and their user-item cross hashed into --buckets
buckets; a wide part (a weight per user, item, hour and cross bucket, and a
bias) trained with FTRL; a deep part (16-number user and item embeddings,
their product summed, and joined with an 8-number hour embedding through 32
relus) trained with Adagrad, which also increments the global step.  The
user tables (eu, wu) and the cross's weights (wc) are partitioned in two
(fixed_size_partitioner(2)), one shard on each ps.

Worker 0 (the chief) initialises the variables; worker 1 waits until
report_uninitialized_variables is empty; then both meet at a barrier (a
counter on the ps) and start the clock.  Worker k iterates its shard of the
training set (the examples k, k+2, ...), reshuffled each epoch, in batches
of --batch (the last one short, as tfg's batches), feeding by feed_dict and
fetching [deep_train, wide_train] in one session.run per step.  Each worker
reads the clock after its last step and counts itself done on the ps; the
chief waits for both, then predicts the test set (test_x.npy) and computes
its AUC against test_y.npy (by ranks, ties averaged).  It prints one line:

    tf1_wide_deep examples_per_s X global_steps S train_s T workers 2 test_auc A

X = S * batch / T; T runs from the barrier to the end of the last worker's
last step (startup and the test are not in it).

Flags: --data DIR (made by examples/wide_deep.sh DIR: train_x.npy,
train_y.npy, test_x.npy, test_y.npy; default /tmp/wide_deep), --users,
--items, --buckets (100000, 10000, 1000000: the sizes the data was made
with, and the cross's buckets), --epochs (1), --max-steps (steps per
worker, 0: no limit), --batch (512).  Tasks listen on free 127.0.0.1
ports; every task dies with this process (PR_SET_PDEATHSIG) and the ps are
killed at the end.  Needs TF (make bench-deps: build/venv/bin/python3).

    sh examples/wide_deep.sh /tmp/wide_deep
    build/venv/bin/python3 bench/tf1_wide_deep.py --data /tmp/wide_deep

Where it differs from wide_deep.tfg: the cross is hashed by the same
SplitMix64 fingerprint (spec 6.38, built from TF's uint64 bitwise ops), but
the initial random values are TF's (stateless_random_normal, seeded by the
tfg seed and the shard's first row), not tfg's; the gradients of the loss
are computed once (tf.gradients) and applied by the two optimizers, where
tfg's program says minimize twice; each worker shards then shuffles (tfg
shuffles then shards); there is no per-epoch evaluation, only the chief's
one after training; --max-steps limits a worker's steps in all (tfg's
limit, its steps per epoch).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the launcher's helpers, as TF1's MNIST peer has them
from tf1_mnist import die_with_parent, free_port, quiet_tf  # noqa: E402

WAIT_S = 300  # the longest a task waits for another at startup or the end


def flags():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default="/tmp/wide_deep")
    p.add_argument("--users", type=int, default=100000)
    p.add_argument("--items", type=int, default=10000)
    p.add_argument("--buckets", type=int, default=1000000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0,
                   help="steps per worker, 0: no limit")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--role", choices=["ps", "worker"], help=argparse.SUPPRESS)
    p.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p.parse_args()


def serve(a):
    tf = quiet_tf()
    spec = tf.train.ClusterSpec(json.loads(a.spec))
    server = tf.compat.v1.train.Server(spec, job_name="ps",
                                       task_index=a.task)
    server.join()


def hash_bucket(tf, ids, n):
    """tfg's hash_bucket (spec 6.38): SplitMix64's output mix of the id's 64
    bits plus 0x9e3779b97f4a7c15, modulo n as an unsigned number."""
    def u64(v):
        return tf.constant(v, tf.uint64)

    def xorshift(z, k):
        return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, u64(k)))

    z = tf.bitcast(ids, tf.uint64) + u64(0x9e3779b97f4a7c15)
    z = xorshift(z, 30) * u64(0xbf58476d1ce4e5b9)
    z = xorshift(z, 27) * u64(0x94d049bb133111eb)
    z = xorshift(z, 31)
    return tf.cast(tf.math.floormod(z, u64(n)), tf.int64)


def build(tf, a):
    v1 = tf.compat.v1
    spec = json.loads(a.spec)
    halves = v1.fixed_size_partitioner(2)

    def normal(stddev, seed):
        # seeded by the shard's first row too, so that the two shards of a
        # partitioned table do not start equal
        def init(shape, dtype=tf.float32, partition_info=None):
            row = partition_info.var_offset[0] if partition_info else 0
            return tf.random.stateless_normal(shape, [seed, row],
                                              stddev=stddev, dtype=dtype)
        return init

    def var(name, shape, init, partitioner=None):
        return v1.get_variable(name, shape, tf.float32, init,
                               partitioner=partitioner)

    def look(table, ids):
        # gather rows, of a partitioned table too, by the op on the table's
        # ps (tf.gather of a variable on a ps fails to place its gradient)
        return v1.nn.embedding_lookup(table, ids, partition_strategy="div")

    zeros = v1.zeros_initializer()
    with v1.device(v1.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % a.task,
            cluster=tf.train.ClusterSpec(spec))):
        gs = v1.train.get_or_create_global_step()
        eu = var("eu", [a.users, 16], normal(0.1, 1), halves)
        ei = var("ei", [a.items, 16], normal(0.1, 2))
        eh = var("eh", [24, 8], normal(0.05, 3))
        w1 = var("w1", [24, 32], normal(0.2, 4))
        b1 = var("b1", [32], zeros)
        w2 = var("w2", [32, 1], normal(0.2, 5))
        wu = var("wu", [a.users], zeros, halves)
        wi = var("wi", [a.items], zeros)
        wh = var("wh", [24], zeros)
        wc = var("wc", [a.buckets], zeros, halves)
        b = var("b", [], zeros)

        x = v1.placeholder(tf.int64, [None, 3])
        y = v1.placeholder(tf.float32, [None])
        user, item, hour = x[:, 0], x[:, 1], x[:, 2]
        cross = hash_bucket(tf, user * a.items + item, a.buckets)
        wide = (look(wu, user) + look(wi, item) + look(wh, hour) +
                look(wc, cross) + b)
        uv = look(eu, user) * look(ei, item)
        h = tf.nn.relu(tf.matmul(tf.concat([uv, look(eh, hour)], 1), w1)
                       + b1)
        logit = wide + tf.reduce_sum(uv, 1) + tf.reshape(tf.matmul(h, w2),
                                                         [-1])
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=y, logits=logit))

        deep_vars = list(eu) + [ei, eh, w1, b1, w2]
        wide_vars = list(wu) + [wi, wh] + list(wc) + [b]
        grads = tf.gradients(loss, deep_vars + wide_vars)
        nd = len(deep_vars)
        deep_train = v1.train.AdagradOptimizer(
            0.05, initial_accumulator_value=0.0001).apply_gradients(
            zip(grads[:nd], deep_vars), global_step=gs)
        wide_train = v1.train.FtrlOptimizer(
            0.05, l1_regularization_strength=0.0001,
            initial_accumulator_value=0.0001).apply_gradients(
            zip(grads[nd:], wide_vars))
        prob = tf.sigmoid(logit)

        # not model state: the start barrier and the count of workers done
        def counter(name):
            return v1.get_variable(name, [], tf.int32, zeros,
                                   trainable=False)
        ready, done = counter("ready"), counter("done")
        return dict(gs=gs, x=x, y=y, train=[deep_train, wide_train],
                    prob=prob, ready=ready, arrive=v1.assign_add(ready, 1),
                    done=done, finish=v1.assign_add(done, 1),
                    init=v1.global_variables_initializer(),
                    uninit=v1.report_uninitialized_variables())


def auc(p, y):
    """The area under the ROC curve of scores p for labels y (0 or 1): the
    Mann-Whitney statistic, tied scores taking their average rank."""
    _, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = ((ends - counts + 1 + ends) / 2.0)[inv.ravel()]
    pos = y > 0.5
    npos, nneg = int(pos.sum()), int((~pos).sum())
    return (ranks[pos].sum() - npos * (npos + 1) / 2.0) / (npos * nneg)


def wait_for(sess, what, count, why, deadline):
    while sess.run(what) < count:
        if time.time() > deadline:
            sys.exit(why)
        time.sleep(0.001)


def work(a):
    tf = quiet_tf()
    v1 = tf.compat.v1
    spec = json.loads(a.spec)
    nworkers = len(spec["worker"])
    server = v1.train.Server(tf.train.ClusterSpec(spec), job_name="worker",
                             task_index=a.task)
    chief = a.task == 0
    xs = np.load(os.path.join(a.data, "train_x.npy"))[a.task::nworkers]
    ys = np.load(os.path.join(a.data, "train_y.npy"))[a.task::nworkers]
    if chief:
        tx = np.load(os.path.join(a.data, "test_x.npy"))
        ty = np.load(os.path.join(a.data, "test_y.npy"))
    g = build(tf, a)
    config = v1.ConfigProto(device_filters=[
        "/job:ps", "/job:worker/task:%d" % a.task])
    res = {}
    with v1.Session(server.target, config=config) as sess:
        if chief:
            sess.run(g["init"])
        deadline = time.time() + WAIT_S
        while len(sess.run(g["uninit"])) > 0:
            if time.time() > deadline:
                sys.exit("worker %d: variables never initialised" % a.task)
            time.sleep(0.05)
        sess.run(g["arrive"])
        wait_for(sess, g["ready"], nworkers, "worker %d: the other workers "
                 "never came" % a.task, deadline)
        res["t0"] = time.time()
        rng = np.random.default_rng(a.task)
        local = 0
        for epoch in range(a.epochs):
            perm = rng.permutation(len(xs))
            for i in range(0, len(xs), a.batch):
                if a.max_steps and local >= a.max_steps:
                    break
                idx = perm[i:i + a.batch]
                sess.run(g["train"], {g["x"]: xs[idx], g["y"]: ys[idx]})
                local += 1
        res["t1"] = time.time()
        res["local"] = local
        sess.run(g["finish"])
        if chief:
            wait_for(sess, g["done"], nworkers, "worker 0: the other "
                     "workers never finished", time.time() + WAIT_S)
            res["gs"] = int(sess.run(g["gs"]))
            p = np.concatenate([sess.run(g["prob"], {g["x"]: tx[i:i + 8192]})
                                for i in range(0, len(tx), 8192)])
            res["auc"] = float(auc(p, ty))
    with open(a.out, "w") as f:
        json.dump(res, f)


def main():
    a = flags()
    if a.role == "ps":
        die_with_parent()
        return serve(a)
    if a.role == "worker":
        die_with_parent()
        return work(a)
    nworkers = 2
    spec = {"ps": ["127.0.0.1:%d" % free_port() for _ in range(2)],
            "worker": ["127.0.0.1:%d" % free_port()
                       for _ in range(nworkers)]}
    me = os.path.abspath(__file__)
    tmp = "/tmp/tf1_wide_deep.%d" % os.getpid()
    base = [sys.executable, me] + sys.argv[1:] + ["--spec", json.dumps(spec)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    procs = [subprocess.Popen(base + ["--role", "ps", "--task", str(k)])
             for k in range(len(spec["ps"]))]
    try:
        workers = [subprocess.Popen(base + ["--role", "worker", "--task",
                                            str(k), "--out",
                                            "%s.%d" % (tmp, k)])
                   for k in range(nworkers)]
        procs += workers
        # wait for every worker; the first failure ends the run
        pending = list(workers)
        while pending:
            for w in list(pending):
                rc = w.poll()
                if rc is None:
                    continue
                pending.remove(w)
                if rc != 0:
                    sys.exit("tf1_wide_deep: a worker failed (exit %d)" % rc)
            time.sleep(0.05)
        res = []
        for k in range(nworkers):
            with open("%s.%d" % (tmp, k)) as f:
                res.append(json.load(f))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for k in range(nworkers):
            if os.path.exists("%s.%d" % (tmp, k)):
                os.unlink("%s.%d" % (tmp, k))
    secs = max(r["t1"] for r in res) - min(r["t0"] for r in res)
    steps = res[0]["gs"]
    print("tf1_wide_deep examples_per_s %.1f global_steps %d train_s %.3f "
          "workers %d test_auc %.4f" % (steps * a.batch / secs, steps, secs,
                                        nworkers, res[0]["auc"]))


if __name__ == "__main__":
    main()
