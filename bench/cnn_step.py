"""bench/cnn_step.py: one Adam training step of TF's Deep MNIST network in
TF 2's tf.compat.v1 (a graph and a Session, as TF1 programs run) and in
eager PyTorch, the peers of tfg's bench/cnn_step.tfg (issue 27).

conv 5x5x32 SAME + relu, max-pool 2x2, conv 5x5x64 SAME + relu, max-pool
2x2, dense 1024 + relu with dropout (keep 0.5), dense 10, mean sparse
softmax cross-entropy, Adam(1e-4), batch 100, f32, NHWC for TF (NCHW for
PyTorch, its native layout), on one fixed batch: DIR/x.npy (u8
[100, 28, 28]) and DIR/y.npy (u8 [100]).  After a warm-up, R rounds of
S steps are timed; each round gives milliseconds per step; the median
round is printed, one line per peer:

    tf1_step_ms 91.2 threads 1 steps 10 rounds 7 loss 2.05
    torch_step_ms 182.0 threads 1 steps 10 rounds 7 loss 2.04

    python3 bench/cnn_step.py --feed DIR [--threads T] [--only tf1|torch]

threads: TF's intra- and inter-op threads, PyTorch's
torch.set_num_threads(T); T defaults to the cores this process may
use.  A peer that is not installed prints "torch_step_ms none (not
installed)".
"""
import argparse
import os
import statistics
import time

import numpy as np


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--feed", metavar="DIR", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int,
                   default=len(os.sched_getaffinity(0)))
    p.add_argument("--only", choices=["tf1", "torch"])
    return p.parse_args()


def timed(a, step):
    for _ in range(a.warmup):
        step()
    ms = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        ms.append((time.perf_counter() - t0) * 1e3 / a.steps)
    return statistics.median(ms), loss


def tf1(a, x, y):
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    except ImportError:
        print("tf1_step_ms none (not installed)")
        return
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        xs = v1.placeholder(tf.uint8, [100, 28, 28])
        ys = v1.placeholder(tf.uint8, [100])
        img = tf.reshape(tf.cast(xs, tf.float32) / 255.0, [-1, 28, 28, 1])

        def w(shape, seed):
            return tf.Variable(v1.random_normal(shape, stddev=0.1,
                                                seed=seed))

        def b(n):
            return tf.Variable(tf.constant(0.1, shape=[n]))

        def pool(h):
            return tf.nn.max_pool2d(h, 2, 2, "SAME")

        h1 = pool(tf.nn.relu(tf.nn.conv2d(img, w([5, 5, 1, 32], 1), 1,
                                          "SAME") + b(32)))
        h2 = pool(tf.nn.relu(tf.nn.conv2d(h1, w([5, 5, 32, 64], 2), 1,
                                          "SAME") + b(64)))
        h3 = tf.nn.relu(tf.matmul(tf.reshape(h2, [-1, 3136]),
                                  w([3136, 1024], 3)) + b(1024))
        h3 = v1.nn.dropout(h3, keep_prob=0.5)
        logits = tf.matmul(h3, w([1024, 10], 4)) + b(10)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.cast(ys, tf.int32), logits=logits))
        train = v1.train.AdamOptimizer(1e-4).minimize(loss)
        cfg = v1.ConfigProto(intra_op_parallelism_threads=a.threads,
                             inter_op_parallelism_threads=a.threads)
        with v1.Session(config=cfg) as s:
            s.run(v1.global_variables_initializer())
            feed = {xs: x, ys: y}

            def step():
                return s.run([train, loss], feed)[1]

            ms, l = timed(a, step)
    print("tf1_step_ms %.2f threads %d steps %d rounds %d loss %.3f" %
          (ms, a.threads, a.steps, a.rounds, l))


def torch_step(a, x, y):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_step_ms none (not installed)")
        return
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    xs = torch.from_numpy(x.astype(np.float32) / 255.0).reshape(
        100, 1, 28, 28)
    ys = torch.from_numpy(y.astype(np.int64))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 32, 5, padding=2)
            self.c2 = torch.nn.Conv2d(32, 64, 5, padding=2)
            self.f1 = torch.nn.Linear(3136, 1024)
            self.f2 = torch.nn.Linear(1024, 10)

        def forward(self, v):
            v = F.max_pool2d(F.relu(self.c1(v)), 2)
            v = F.max_pool2d(F.relu(self.c2(v)), 2)
            v = F.dropout(F.relu(self.f1(v.flatten(1))), 0.5, True)
            return self.f2(v)

    net = Net()
    opt = torch.optim.Adam(net.parameters(), 1e-4)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(net(xs), ys)
        loss.backward()
        opt.step()
        return loss.item()

    ms, l = timed(a, step)
    print("torch_step_ms %.2f threads %d steps %d rounds %d loss %.3f" %
          (ms, torch.get_num_threads(), a.steps, a.rounds, l))


def main():
    a = args()
    x = np.load(os.path.join(a.feed, "x.npy"))
    y = np.load(os.path.join(a.feed, "y.npy"))
    if a.only in (None, "tf1"):
        tf1(a, x, y)
    if a.only in (None, "torch"):
        torch_step(a, x, y)


if __name__ == "__main__":
    main()
