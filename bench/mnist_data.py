"""bench/mnist_data.py: MNIST for the peers of the MNIST benchmarks
(bench/mlp_step.py, tf1_mnist.py, torch_mnist.py, torch_rpc_mnist.py).

load(dir) reads the four IDX .gz files of dir (default
../shared/data/mnist from the repository root) with gzip and NumPy, and
returns (train_x, train_y, test_x, test_y): x as f32 [n, 784] scaled to
[0, 1], y as int64 labels [n].  Also the flags and the initial weights
the peers share, so that each trains the same model the same way:

    784-100-10 MLP, hidden = act(x @ W1 + b1), logits = hidden @ W2 + b2,
    loss = mean softmax cross-entropy against one-hot labels, batch 100.

--init seed: W and b ~ normal(0, 1) (TF1's example, tf.random_normal);
--init scaled (default): W ~ normal(0, 1/sqrt(fan_in)), b = 0;
--init glorot: W ~ uniform(+-sqrt(6/(fan_in+fan_out))), b = 0.
"""
import argparse
import gzip
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "data",
                                            "mnist"))
# The defaults: what reached 97% test accuracy in the fewest steps and
# least wall time, in TF1 (2 async workers) and PyTorch alike (issue 11):
# relu + scaled init + Adam 0.003 took 1150-1350 global steps (2 epochs);
# SGD 0.5 1230-2190, momentum 0.9 lr 0.05 ~1700, Adam 0.001 ~2600,
# sigmoid ~2300-2900 at best, SGD 0.8 diverged under TF1's async updates.
DEFAULTS = dict(act="relu", init="scaled", opt="adam", lr=0.003)
DEFAULT_LR = {"sgd": 0.5, "momentum": 0.1, "adam": 0.003}


def _idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    got = int.from_bytes(data[0:4], "big")
    if got != magic:
        raise SystemExit("%s: not an IDX file (magic %#x)" % (path, got))
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(d=None):
    d = d or DEFAULT_DIR

    def images(name):
        x = _idx(os.path.join(d, name), 0x803)
        return (x.reshape(x.shape[0], 784).astype(np.float32) / 255.0)

    def labels(name):
        return _idx(os.path.join(d, name), 0x801).astype(np.int64)

    return (images("train-images-idx3-ubyte.gz"),
            labels("train-labels-idx1-ubyte.gz"),
            images("t10k-images-idx3-ubyte.gz"),
            labels("t10k-labels-idx1-ubyte.gz"))


def flags(doc, extra=None):
    """The flags all the MNIST peers take; extra(p) adds the script's own."""
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=DEFAULT_DIR,
                   help="directory of the IDX .gz files (default %(default)s)")
    p.add_argument("--epochs", type=int, default=10,
                   help="epochs (of each worker's shard) (default 10)")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--hidden", type=int, default=100)
    p.add_argument("--act", choices=["sigmoid", "relu"],
                   default=DEFAULTS["act"])
    p.add_argument("--init", choices=["seed", "scaled", "glorot"],
                   default=DEFAULTS["init"],
                   help="seed: normal(0,1) as TF1's example; scaled: "
                        "normal(0,1/sqrt(fan_in)), b=0; glorot: uniform")
    p.add_argument("--opt", choices=["sgd", "momentum", "adam"],
                   default=DEFAULTS["opt"])
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: sgd 0.5, momentum 0.1, "
                        "adam 0.003; the seed's config: --init seed --act "
                        "sigmoid --opt sgd --lr 0.0005)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--target", type=float, default=0.97,
                   help="test accuracy whose first time is reported")
    p.add_argument("--stop-at-target", action="store_true",
                   help="stop training once the target is reached")
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop after this many (global) steps (0: no limit)")
    p.add_argument("--eval-every", type=int, default=0,
                   help="also evaluate every N local steps (0: per epoch)")
    p.add_argument("--seed", type=int, default=1)
    if extra:
        extra(p)
    a = p.parse_args()
    if a.lr is None:
        a.lr = DEFAULT_LR[a.opt]
    return a


def config(a):
    return "act %s init %s opt %s lr %g%s batch %d hidden %d" % (
        a.act, a.init, a.opt, a.lr,
        " momentum %g" % a.momentum if a.opt == "momentum" else "",
        a.batch, a.hidden)


def init_weights(init, hidden=100, seed=1):
    """[W1, b1, W2, b2] as f32 NumPy arrays, the same for every peer."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in ((784, hidden), (hidden, 10)):
        if init == "seed":
            w = rng.standard_normal((fan_in, fan_out))
            b = rng.standard_normal(fan_out)
        elif init == "scaled":
            w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
            b = np.zeros(fan_out)
        else:
            lim = np.sqrt(6.0 / (fan_in + fan_out))
            w = rng.uniform(-lim, lim, (fan_in, fan_out))
            b = np.zeros(fan_out)
        out += [w.astype(np.float32), b.astype(np.float32)]
    return out
