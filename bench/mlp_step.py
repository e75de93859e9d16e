"""bench/mlp_step.py: one SGD training step of the MNIST MLP in NumPy (by
hand) and eager PyTorch, the peers of tfg's MNIST step (issue 11).

784-100-10, batch 100, f32, sigmoid hidden layer, mean softmax
cross-entropy against one-hot labels, plain SGD lr 0.1, on one fixed
batch: random uniform pixels in [0, 1), or with --feed DIR the one in
DIR/x.npy (f32 [B, 784]) and DIR/y.npy (labels), which bench/mnist.sh
writes from MNIST's first training images for tfg and the peers alike.  NumPy: forward, backward by hand and in-place updates, as
a user would write them.  PyTorch: nn.Linear layers, F.cross_entropy,
autograd and torch.optim.SGD.  After a warm-up, R rounds of S steps are
timed; each round gives microseconds per step; the median round is
printed.

    python3 bench/mlp_step.py [--steps S] [--rounds R] [--threads T]
                              [--act sigmoid|relu] [--only numpy|torch]
                              [--feed DIR]

Prints one line per peer:

    numpy_step_us 123.4 threads 2 steps 200 rounds 9 loss 2.30
    torch_step_us 98.7 threads 2 steps 200 rounds 9 loss 2.30

(threads: NumPy's BLAS threads as asked through OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS, which must be set before NumPy loads; PyTorch's
torch.get_num_threads() after torch.set_num_threads(T)).  T defaults to
the cores this process may use.  loss: the loss after the timed steps,
to show both peers train the same thing.  A peer that is not installed
prints "torch_step_us none (not installed)".
"""
import argparse
import os
import sys
import time


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--threads", type=int,
                   default=len(os.sched_getaffinity(0)))
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--hidden", type=int, default=100)
    p.add_argument("--act", choices=["sigmoid", "relu"], default="sigmoid")
    p.add_argument("--only", choices=["numpy", "torch"])
    p.add_argument("--feed", metavar="DIR",
                   help="the batch: DIR/x.npy and DIR/y.npy")
    return p.parse_args()


a = args()
for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = str(a.threads)
import numpy as np  # noqa: E402  (after the thread counts are set)

B, H = a.batch, a.hidden
rng = np.random.default_rng(1)
X = rng.uniform(0, 1, (B, 784)).astype(np.float32)
Y = rng.integers(0, 10, B)
if a.feed:
    X = np.ascontiguousarray(np.load(os.path.join(a.feed, "x.npy")),
                             np.float32)
    Y = np.load(os.path.join(a.feed, "y.npy")).astype(np.int64)
    if X.shape != (B, 784) or Y.shape != (B,):
        sys.exit("mlp_step.py: %s: x.npy must be f32 [%d, 784] and y.npy "
                 "[%d]" % (a.feed, B, B))
W1 = (rng.standard_normal((784, H)) / np.sqrt(784)).astype(np.float32)
W2 = (rng.standard_normal((H, 10)) / np.sqrt(H)).astype(np.float32)


def timed(step):
    """Microseconds per step: the median of the rounds."""
    for _ in range(a.warmup):
        step()
    us = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        us.append((time.perf_counter() - t0) * 1e6 / a.steps)
    return sorted(us)[len(us) // 2], float(loss)


def numpy_peer():
    x, y = X, Y
    w1, w2 = W1.copy(), W2.copy()
    b1, b2 = np.zeros(H, np.float32), np.zeros(10, np.float32)
    onehot = np.zeros((B, 10), np.float32)
    onehot[np.arange(B), y] = 1
    lr = np.float32(a.lr)
    sigmoid = a.act == "sigmoid"

    def step():
        nonlocal w1, b1, w2, b2
        # forward
        z = x @ w1
        z += b1
        if sigmoid:
            h = 1 / (1 + np.exp(-z))
        else:
            h = np.maximum(z, 0)
        logits = h @ w2
        logits += b2
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) - logits[np.arange(B), y])
        # backward: d loss / d logits = (softmax - onehot) / B
        g = e / s
        g -= onehot
        g *= np.float32(1.0 / B)
        gw2 = h.T @ g
        gb2 = g.sum(axis=0)
        gh = g @ w2.T
        if sigmoid:
            gh *= h * (1 - h)
        else:
            gh *= z > 0
        gw1 = x.T @ gh
        gb1 = gh.sum(axis=0)
        # SGD, in place
        w1 -= lr * gw1
        b1 -= lr * gb1
        w2 -= lr * gw2
        b2 -= lr * gb2
        return loss

    return timed(step)


def torch_peer():
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    l1, l2 = torch.nn.Linear(784, H), torch.nn.Linear(H, 10)
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(W1.T.copy()))
        l2.weight.copy_(torch.from_numpy(W2.T.copy()))
        l1.bias.zero_()
        l2.bias.zero_()
    act = torch.nn.Sigmoid() if a.act == "sigmoid" else torch.nn.ReLU()
    model = torch.nn.Sequential(l1, act, l2)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return timed(step), torch.get_num_threads(), torch.__version__


def line(name, us, threads, loss, version):
    print("%s_step_us %.1f threads %d steps %d rounds %d loss %.4f "
          "version %s" % (name, us, threads, a.steps, a.rounds, loss,
                          version))


if a.only in (None, "numpy"):
    us, loss = numpy_peer()
    line("numpy", us, a.threads, loss, np.__version__)
if a.only in (None, "torch"):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_step_us none (not installed)")
        sys.exit(0)
    (us, loss), threads, version = torch_peer()
    line("torch", us, threads, loss, version)
sys.stdout.flush()
