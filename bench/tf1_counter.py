"""bench/tf1_counter.py: TF1's shared counter, the peer of bench/counter.tfg.

One ps task holds `v`; two worker tasks, each its own process and client
as TF1's between-graph replication has them, run `assign_add(v, 1.0)` as
fast as they can.  The workers meet at a barrier (a second variable)
before timing, so the rate counts only updates made while both run; the
last worker to finish checks that no update was lost.

    python3 bench/tf1_counter.py [N]     N updates per worker (default 2000)

Prints "tf1 counter: U updates/s (2 workers x N, final v = V)".  Needs
tensorflow-cpu (`make bench-deps` installs TF 2.21 into build/venv);
tasks listen on free 127.0.0.1 ports and are killed at the end.
"""
import json
import os
import socket
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def quiet_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    tf.get_logger().setLevel("ERROR")
    return tf


def serve(spec, job, task):
    tf = quiet_tf()
    server = tf.compat.v1.train.Server(tf.train.ClusterSpec(spec),
                                       job_name=job, task_index=task)
    server.join()


def graph(tf):
    with tf.device("/job:ps/task:0"):
        v = tf.compat.v1.get_variable("v", [], tf.float32,
                                      tf.compat.v1.zeros_initializer())
        ready = tf.compat.v1.get_variable("ready", [], tf.int32,
                                          tf.compat.v1.zeros_initializer())
        done = tf.compat.v1.get_variable("done", [], tf.int32,
                                         tf.compat.v1.zeros_initializer())
        inc = tf.compat.v1.assign_add(v, 1.0)
        arrive = tf.compat.v1.assign_add(ready, 1)
        finish = tf.compat.v1.assign_add(done, 1)
    return v, ready, done, inc, arrive, finish


def work(spec, task, n, out):
    tf = quiet_tf()
    server = tf.compat.v1.train.Server(tf.train.ClusterSpec(spec),
                                       job_name="worker", task_index=task)
    v, ready, done, inc, arrive, finish = graph(tf)
    init = tf.compat.v1.global_variables_initializer()
    inited = tf.compat.v1.is_variable_initialized(done)
    with tf.compat.v1.Session(server.target) as sess:
        if task == 0:
            sess.run(init)
        deadline = time.time() + 60
        while not sess.run(inited):
            if time.time() > deadline:
                sys.exit("worker %d: variables never initialised" % task)
            time.sleep(0.01)
        sess.run(arrive)
        while sess.run(ready) < 2:
            if time.time() > deadline:
                sys.exit("worker %d: the other worker never came" % task)
        t0 = time.time()
        for _ in range(n):
            sess.run(inc)
        t1 = time.time()
        final = None
        if sess.run(finish) == 2:
            final = float(sess.run(v))
    with open(out, "w") as f:
        json.dump({"t0": t0, "t1": t1, "final": final}, f)


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--serve", "--work"):
        spec = json.loads(sys.argv[2])
        if sys.argv[1] == "--serve":
            serve(spec, sys.argv[3], int(sys.argv[4]))
        else:
            work(spec, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    spec = {"ps": ["127.0.0.1:%d" % free_port()],
            "worker": ["127.0.0.1:%d" % free_port(),
                       "127.0.0.1:%d" % free_port()]}
    me = os.path.abspath(__file__)
    tmp = "/tmp/tf1_counter.%d" % os.getpid()
    ps = subprocess.Popen([sys.executable, me, "--serve", json.dumps(spec),
                           "ps", "0"])
    workers = [subprocess.Popen([sys.executable, me, "--work",
                                 json.dumps(spec), str(k), str(n),
                                 "%s.%d" % (tmp, k)]) for k in range(2)]
    try:
        for w in workers:
            if w.wait(timeout=300) != 0:
                sys.exit("tf1 counter: a worker failed")
    finally:
        for p in [ps] + workers:
            if p.poll() is None:
                p.kill()
                p.wait()
    res = []
    for k in range(2):
        with open("%s.%d" % (tmp, k)) as f:
            res.append(json.load(f))
        os.unlink("%s.%d" % (tmp, k))
    final = [r["final"] for r in res if r["final"] is not None][0]
    secs = max(r["t1"] for r in res) - min(r["t0"] for r in res)
    print("tf1 counter: %.0f updates/s (2 workers x %d, final v = %g%s)" %
          (2 * n / secs, n, final,
           "" if final == 2 * n else ", UPDATES LOST"))


if __name__ == "__main__":
    main()
