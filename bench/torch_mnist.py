"""bench/torch_mnist.py: the MNIST MLP trained in one eager PyTorch
process, the single-process peer of tfg's MNIST training (issue 11).

The model, data and flags are those of bench/mnist_data.py (784-100-10
MLP, batch 100; --act, --init, --opt, --lr, --target, --stop-at-target,
--epochs, --max-steps, --eval-every, --data); --threads sets
torch.set_num_threads (default: the cores this process may use).
--model cnn trains TF's Deep MNIST network instead, as
bench/tf1_mnist.py's --model cnn and examples/cnn_mnist.tfg do (see
cnn() below and bench/torch_cnn_mnist.py, which sets its flags).  Each
epoch is one pass over the 60,000 training examples (600 steps),
reshuffled each epoch; test accuracy (all 10,000 test images; the CNN's
in batches of 500) is evaluated after each epoch and printed as

    epoch E step S acc A time T

(T: seconds since training began, read when the evaluation ends).  At
the end:

    torch_mnist_steps_per_s X steps S train_s T threads N
    torch_mnist_target 0.97 time T step S epoch E acc A
    (or: ..._target 0.97 not_reached best A)

    python3 bench/torch_mnist.py --epochs 10 --stop-at-target
"""
import os
import sys
import time

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnist_data  # noqa: E402
import numpy as np  # noqa: E402


def extra(p):
    p.add_argument("--threads", type=int,
                   default=len(os.sched_getaffinity(0)))
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp",
                   help="cnn: TF's Deep MNIST network "
                        "(bench/torch_cnn_mnist.py)")


def model(torch, a):
    w1, b1, w2, b2 = mnist_data.init_weights(a.init, a.hidden, a.seed)
    l1, l2 = torch.nn.Linear(784, a.hidden), torch.nn.Linear(a.hidden, 10)
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(w1.T.copy()))
        l1.bias.copy_(torch.from_numpy(b1))
        l2.weight.copy_(torch.from_numpy(w2.T.copy()))
        l2.bias.copy_(torch.from_numpy(b2))
    act = torch.nn.Sigmoid() if a.act == "sigmoid" else torch.nn.ReLU()
    return torch.nn.Sequential(l1, act, l2)


def cnn(torch, a):
    """TF's Deep MNIST network, as bench/tf1_mnist.py's cnn() and
    examples/cnn_mnist.tfg: conv 5x5x32, max-pool 2, conv 5x5x64, max-pool
    2, dense 1024 with dropout 0.5 (in training only), dense 10; the same
    initial weights as tf1_mnist.py's (drawn in TF's layout, then moved to
    PyTorch's), biases 0.1 (0 for the last)."""
    nn = torch.nn
    rng = np.random.default_rng(a.seed)
    w = [rng.standard_normal(shape) * sd for shape, sd in (
        ((5, 5, 1, 32), 0.2), ((5, 5, 32, 64), 0.035),
        ((3136, 1024), 0.018), ((1024, 10), 0.031))]
    c1 = nn.Conv2d(1, 32, 5, padding=2)
    c2 = nn.Conv2d(32, 64, 5, padding=2)
    d3, d4 = nn.Linear(3136, 1024), nn.Linear(1024, 10)
    # HWIO to OIHW; w3's rows flatten TF's NHWC [7, 7, 64] (h, w, c), ours
    # NCHW (c, h, w); [in, out] to [out, in]
    ws = [w[0].transpose(3, 2, 0, 1), w[1].transpose(3, 2, 0, 1),
          w[2].reshape(7, 7, 64, 1024).transpose(2, 0, 1, 3)
          .reshape(3136, 1024).T, w[3].T]
    with torch.no_grad():
        for layer, v, b in zip((c1, c2, d3, d4), ws, (0.1, 0.1, 0.1, 0.0)):
            layer.weight.copy_(torch.from_numpy(v.astype(np.float32)))
            layer.bias.fill_(b)
    return nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                         c1, nn.ReLU(), nn.MaxPool2d(2),
                         c2, nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), d3, nn.ReLU(), nn.Dropout(0.5), d4)


def optimizer(torch, a, params):
    if a.opt == "sgd":
        return torch.optim.SGD(params, lr=a.lr)
    if a.opt == "momentum":
        return torch.optim.SGD(params, lr=a.lr, momentum=a.momentum)
    return torch.optim.Adam(params, lr=a.lr)


def main():
    a = mnist_data.flags(__doc__, extra)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    tx, ty, ex, ey = (torch.from_numpy(v) for v in mnist_data.load(a.data))
    net = cnn(torch, a) if a.model == "cnn" else model(torch, a)
    opt = optimizer(torch, a, net.parameters())
    n = len(tx) // a.batch
    sched = None
    if a.model == "cnn":
        # halved every epoch (600 steps), continuously, as tf1_mnist.py's
        # exponential_decay(lr, step, 600, 0.5) and cnn_mnist.tfg's rate
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: 0.5 ** (s / n))
        config = "model cnn opt %s lr %g (halved every %d steps) batch %d" % (
            a.opt, a.lr, n, a.batch)
    else:
        config = mnist_data.config(a)
    print("torch_mnist config: %s threads %d" % (config,
                                                 torch.get_num_threads()),
          flush=True)
    evals, target = [], None
    step = 0
    t0 = time.time()

    def evaluate(epoch):
        nonlocal target
        net.eval()  # no dropout
        with torch.no_grad():
            if a.model == "cnn":  # in batches of 500, as cnn_mnist.tfg
                acc = sum((net(ex[i:i + 500]).argmax(1) == ey[i:i + 500])
                          .sum().item()
                          for i in range(0, len(ex), 500)) / len(ex)
            else:
                acc = (net(ex).argmax(1) == ey).float().mean().item()
        net.train()
        t = time.time() - t0
        print("epoch %g step %d acc %.4f time %.3f" % (epoch, step, acc, t),
              flush=True)
        evals.append((step, acc))
        if target is None and acc >= a.target:
            target = (epoch, step, acc, t)
            return a.stop_at_target
        return False

    done = False
    for epoch in range(1, a.epochs + 1):
        perm = torch.randperm(len(tx))
        for i in range(n):
            idx = perm[i * a.batch:(i + 1) * a.batch]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(tx[idx]), ty[idx])
            loss.backward()
            opt.step()
            if sched:
                sched.step()
            step += 1
            if a.max_steps and step >= a.max_steps:
                done = True
                break
            if a.eval_every and step % a.eval_every == 0 and i != n - 1:
                if evaluate(epoch - 1 + (i + 1) / n):
                    done = True
                    break
        if not evals or evals[-1][0] != step:
            done = evaluate(epoch if i == n - 1 else
                            epoch - 1 + (i + 1) / n) or done
        if done:
            break
    secs = time.time() - t0
    print("torch_mnist_steps_per_s %.1f steps %d train_s %.3f threads %d" %
          (step / secs, step, secs, torch.get_num_threads()))
    if target:
        print("torch_mnist_target %g time %.3f step %d epoch %g acc %.4f" %
              (a.target, target[3], target[1], target[0], target[2]))
    else:
        print("torch_mnist_target %g not_reached best %.4f" %
              (a.target, max([e[1] for e in evals] or [0])))


if __name__ == "__main__":
    main()
