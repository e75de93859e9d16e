"""bench/torch_mnist.py: the MNIST MLP trained in one eager PyTorch
process, the single-process peer of tfg's MNIST training (issue 11).

The model, data and flags are those of bench/mnist_data.py (784-100-10
MLP, batch 100; --act, --init, --opt, --lr, --target, --stop-at-target,
--epochs, --max-steps, --eval-every, --data); --threads sets
torch.set_num_threads (default: the cores this process may use).  Each
epoch is one pass over the 60,000 training examples (600 steps),
reshuffled each epoch; test accuracy (all 10,000 test images) is
evaluated after each epoch and printed as

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


def extra(p):
    p.add_argument("--threads", type=int,
                   default=len(os.sched_getaffinity(0)))


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
    net = model(torch, a)
    opt = optimizer(torch, a, net.parameters())
    print("torch_mnist config: %s threads %d" % (mnist_data.config(a),
                                                 torch.get_num_threads()),
          flush=True)
    n = len(tx) // a.batch
    evals, target = [], None
    step = 0
    t0 = time.time()

    def evaluate(epoch):
        nonlocal target
        with torch.no_grad():
            acc = (net(ex).argmax(1) == ey).float().mean().item()
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
