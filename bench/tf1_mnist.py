"""bench/tf1_mnist.py: TF1's distributed MNIST, the peer of tfg's MNIST
training (issue 11): the program of record, TF1's classic between-graph
asynchronous example.

One ps task holds the variables (W1, b1, W2, b2, the global step, the
optimizer's slots); two worker tasks, each its own process and client,
build the same graph under tf.compat.v1.train.replica_device_setter and
train asynchronously.  Worker 0 (the chief) initialises the variables;
worker 1 waits until report_uninitialized_variables is empty; then both
meet at a barrier (a counter on the ps) and start the clock.  Worker k
iterates its shard (the training examples k, k+2, ...: 30,000 each, 300
steps of 100), reshuffled each epoch, feeding batches by feed_dict and
fetching [train_op, global_step] as the TF1 example does.  The chief
evaluates test accuracy (all 10,000 test images) after each of its epochs
(and every --eval-every local steps if given) and prints

    epoch E step S acc A time T

(S: the global step; T: seconds since the workers began training, read
when the evaluation ends).  At the end:

    tf1_mnist_steps_per_s X global_steps S train_s T workers 2
    tf1_mnist_target 0.97 time T step S epoch E acc A
    (or: tf1_mnist_target 0.97 not_reached best A)
    tf1_mnist_startup_s X   (launch of the tasks to the start of training)

The model and flags are those of bench/mnist_data.py (784-100-10 MLP,
batch 100; --act, --init, --opt, --lr, --target, --stop-at-target,
--epochs, --max-steps, --data).  Tasks listen on free 127.0.0.1 ports;
every task dies with this process (PR_SET_PDEATHSIG) and the ps is
killed at the end.  Needs TF (make bench-deps: build/venv/bin/python3).

    build/venv/bin/python3 bench/tf1_mnist.py --epochs 10 --stop-at-target
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnist_data  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def die_with_parent():
    # PR_SET_PDEATHSIG = 1: no task outlives the launcher.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() == 1:  # the launcher died before the prctl
        sys.exit(1)


def quiet_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    tf.get_logger().setLevel("ERROR")
    return tf


def extra(p):
    p.add_argument("--role", choices=["ps", "worker"], help=argparse.SUPPRESS)
    p.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sync", type=int, default=0, metavar="M",
                   help="SyncReplicasOptimizer(replicas_to_aggregate=M, "
                   "total_num_replicas=workers): bench/sync.sh")
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp",
                   help="cnn: TF's Deep MNIST network (bench/tf1_cnn_mnist.py)")





def serve(a):
    tf = quiet_tf()
    spec = tf.train.ClusterSpec(json.loads(a.spec))
    server = tf.compat.v1.train.Server(spec, job_name="ps",
                                       task_index=a.task)
    server.join()


def cnn(tf, a):
    """TF's Deep MNIST network, as examples/cnn_mnist.tfg: conv 5x5x32,
    max-pool 2, conv 5x5x64, max-pool 2, dense 1024 with dropout, dense 10,
    initial weights scaled by 1/sqrt(fan-in), biases 0.1 (0 for the last);
    the logits and the keep probability (1 unless fed)."""
    v1 = tf.compat.v1
    rng = __import__("numpy").random.default_rng(a.seed)

    def var(name, shape, sd):
        init = (rng.standard_normal(shape) * sd).astype("float32")
        return v1.get_variable(name, initializer=init)

    def bias(name, n, v):
        return v1.get_variable(name, initializer=tf.constant(v, shape=[n]))

    x = v1.placeholder(tf.float32, [None, 784])
    keep = v1.placeholder_with_default(1.0, [])
    img = tf.reshape(x, [-1, 28, 28, 1])
    h = tf.nn.relu(tf.nn.conv2d(img, var("w1", [5, 5, 1, 32], 0.2), 1,
                                "SAME") + bias("b1", 32, 0.1))
    h = tf.nn.max_pool2d(h, 2, 2, "SAME")
    h = tf.nn.relu(tf.nn.conv2d(h, var("w2", [5, 5, 32, 64], 0.035), 1,
                                "SAME") + bias("b2", 64, 0.1))
    h = tf.nn.max_pool2d(h, 2, 2, "SAME")
    h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 3136]),
                             var("w3", [3136, 1024], 0.018)) +
                   bias("b3", 1024, 0.1))
    h = v1.nn.dropout(h, keep_prob=keep)
    logits = tf.matmul(h, var("w4", [1024, 10], 0.031)) + bias("b4", 10, 0.0)
    return x, keep, logits


def build(tf, a, nworkers):
    v1 = tf.compat.v1
    if a.model == "cnn":
        return build_cnn(tf, a)
    w1, b1, w2, b2 = mnist_data.init_weights(a.init, a.hidden, a.seed)
    spec = json.loads(a.spec)
    with v1.device(v1.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % a.task,
            cluster=tf.train.ClusterSpec(spec))):
        gs = v1.train.get_or_create_global_step()
        W1 = v1.get_variable("W1", initializer=w1)
        B1 = v1.get_variable("b1", initializer=b1)
        W2 = v1.get_variable("W2", initializer=w2)
        B2 = v1.get_variable("b2", initializer=b2)
        x = v1.placeholder(tf.float32, [None, 784])
        y = v1.placeholder(tf.int64, [None])
        z = tf.matmul(x, W1) + B1
        h = tf.sigmoid(z) if a.act == "sigmoid" else tf.nn.relu(z)
        logits = tf.matmul(h, W2) + B2
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
            labels=tf.one_hot(y, 10), logits=logits))
        if a.opt == "sgd":
            opt = v1.train.GradientDescentOptimizer(a.lr)
        elif a.opt == "momentum":
            opt = v1.train.MomentumOptimizer(a.lr, a.momentum)
        else:
            opt = v1.train.AdamOptimizer(a.lr)
        if a.sync:
            opt = v1.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=a.sync,
                total_num_replicas=nworkers)
        train = opt.minimize(loss, global_step=gs)
        acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y),
                                     tf.float32))
        g = control(tf)
    if a.sync:
        # the token queue's runner and first tokens (the chief's), each
        # worker's local step, and a wait for the global variables only:
        # a worker's own local step is not the chief's to initialise
        g.update(sync_qr=opt.get_chief_queue_runner(),
                 sync_tokens=opt.get_init_tokens_op(),
                 sync_local=opt.local_step_init_op,
                 uninit=v1.report_uninitialized_variables(
                     v1.global_variables()))
    return dict(g, gs=gs, x=x, y=y, train=train, acc=acc, loss=loss)


def control(tf):
    """Not model state, on the ps: the barrier and the stop flag, and the
    initialisation ops (built last, under the device setter)."""
    v1 = tf.compat.v1
    ready = v1.get_variable("ready", [], tf.int32, v1.zeros_initializer(),
                            trainable=False)
    stop = v1.get_variable("stop", [], tf.int32, v1.zeros_initializer(),
                           trainable=False)
    return dict(ready=ready, stop=stop, arrive=v1.assign_add(ready, 1),
                set_stop=v1.assign(stop, 1),
                init=v1.global_variables_initializer(),
                uninit=v1.report_uninitialized_variables())


def build_cnn(tf, a):
    v1 = tf.compat.v1
    spec = json.loads(a.spec)
    with v1.device(v1.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % a.task,
            cluster=tf.train.ClusterSpec(spec))):
        gs = v1.train.get_or_create_global_step()
        x, keep, logits = cnn(tf, a)
        y = v1.placeholder(tf.int64, [None])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        # halved every epoch of the workers, as cnn_mnist.tfg's rate
        rate = v1.train.exponential_decay(a.lr, gs, 60000 // a.batch, 0.5)
        train = v1.train.AdamOptimizer(rate).minimize(loss, global_step=gs)
        right = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), y),
                                      tf.float32))
        g = control(tf)
    return dict(g, gs=gs, x=x, y=y, train=train, right=right, loss=loss,
                keep=keep)


def work(a):
    tf = quiet_tf()
    v1 = tf.compat.v1
    spec = json.loads(a.spec)
    nworkers = len(spec["worker"])
    server = v1.train.Server(tf.train.ClusterSpec(spec), job_name="worker",
                             task_index=a.task)
    tx, ty, ex, ey = mnist_data.load(a.data)
    shard = tx[a.task::nworkers], ty[a.task::nworkers]
    g = build(tf, a, nworkers)
    chief = a.task == 0
    config = v1.ConfigProto(device_filters=[
        "/job:ps", "/job:worker/task:%d" % a.task])
    res = {"evals": [], "target": None}
    with v1.Session(server.target, config=config) as sess:
        if chief:
            sess.run(g["init"])
        deadline = time.time() + 120
        while len(sess.run(g["uninit"])) > 0:
            if time.time() > deadline:
                sys.exit("worker %d: variables never initialised" % a.task)
            time.sleep(0.05)
        if "sync_local" in g:
            sess.run(g["sync_local"])
            if chief:
                g["sync_qr"].create_threads(sess, daemon=True, start=True)
                sess.run(g["sync_tokens"])
        sess.run(g["arrive"])
        while sess.run(g["ready"]) < nworkers:
            if time.time() > deadline:
                sys.exit("worker %d: the other workers never came" % a.task)
            time.sleep(0.001)
        t0 = time.time()
        res["t0"] = t0
        rng = __import__("numpy").random.default_rng(a.seed + a.task)
        n = len(shard[0]) // a.batch
        local = 0
        step = 0
        done = False

        def evaluate(epoch):
            if "right" in g:  # the CNN: in batches of 500, as cnn_mnist.tfg
                acc = sum(float(sess.run(g["right"], {
                    g["x"]: ex[i:i + 500], g["y"]: ey[i:i + 500]}))
                    for i in range(0, len(ex), 500)) / len(ex)
            else:
                acc = float(sess.run(g["acc"], {g["x"]: ex, g["y"]: ey}))
            s = int(sess.run(g["gs"]))
            t = time.time() - t0
            print("epoch %g step %d acc %.4f time %.3f" % (epoch, s, acc, t),
                  flush=True)
            res["evals"].append([epoch, s, acc, t, local])
            if res["target"] is None and acc >= a.target:
                res["target"] = [epoch, s, acc, t]
                if a.stop_at_target:
                    sess.run(g["set_stop"])
                    return True
            return False

        for epoch in range(1, a.epochs + 1):
            perm = rng.permutation(len(shard[0]))
            for i in range(n):
                idx = perm[i * a.batch:(i + 1) * a.batch]
                feed = {g["x"]: shard[0][idx], g["y"]: shard[1][idx]}
                if "keep" in g:
                    feed[g["keep"]] = 0.5
                _, step = sess.run([g["train"], g["gs"]], feed)
                local += 1
                if a.max_steps and step >= a.max_steps:
                    done = True
                elif a.stop_at_target and local % 20 == 0 and \
                        sess.run(g["stop"]):
                    done = True
                if chief and a.eval_every and local % a.eval_every == 0 \
                        and i != n - 1:
                    done = evaluate(epoch - 1 + (i + 1) / n) or done
                if done:
                    break
            if chief and not (res["evals"] and res["evals"][-1][4] == local):
                done = evaluate(epoch if i == n - 1 else
                                epoch - 1 + (i + 1) / n) or done
            if done:
                break
        res["t1"] = time.time()
        res["local"] = local
        res["gs"] = int(sess.run(g["gs"]))
    with open(a.out, "w") as f:
        json.dump(res, f)


def main():
    a = mnist_data.flags(__doc__, extra)
    if a.role == "ps":
        die_with_parent()
        return serve(a)
    if a.role == "worker":
        die_with_parent()
        return work(a)
    spec = {"ps": ["127.0.0.1:%d" % free_port()],
            "worker": ["127.0.0.1:%d" % free_port()
                       for _ in range(a.workers)]}
    print("tf1_mnist config: %s workers %d" % (mnist_data.config(a),
                                               a.workers), flush=True)
    me = os.path.abspath(__file__)
    tmp = "/tmp/tf1_mnist.%d" % os.getpid()
    base = [sys.executable, me] + sys.argv[1:] + ["--spec", json.dumps(spec)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    launch = time.time()
    procs = [subprocess.Popen(base + ["--role", "ps", "--task", "0"])]
    try:
        workers = [subprocess.Popen(base + ["--role", "worker", "--task",
                                            str(k), "--out",
                                            "%s.%d" % (tmp, k)])
                   for k in range(a.workers)]
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
                    sys.exit("tf1_mnist: a worker failed (exit %d)" % rc)
            time.sleep(0.05)
        res = []
        for k in range(a.workers):
            with open("%s.%d" % (tmp, k)) as f:
                res.append(json.load(f))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for k in range(a.workers):
            if os.path.exists("%s.%d" % (tmp, k)):
                os.unlink("%s.%d" % (tmp, k))
    t0 = min(r["t0"] for r in res)
    secs = max(r["t1"] for r in res) - t0
    steps = max(r["gs"] for r in res)
    print("tf1_mnist_steps_per_s %.1f global_steps %d train_s %.3f "
          "workers %d" % (steps / secs, steps, secs, a.workers))
    tg = res[0]["target"]
    if tg:
        print("tf1_mnist_target %g time %.3f step %d epoch %g acc %.4f" %
              (a.target, tg[3], tg[1], tg[0], tg[2]))
    else:
        best = max([e[2] for e in res[0]["evals"]] or [0])
        print("tf1_mnist_target %g not_reached best %.4f" % (a.target, best))
    print("tf1_mnist_startup_s %.3f" % (t0 - launch))


if __name__ == "__main__":
    main()
