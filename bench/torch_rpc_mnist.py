"""bench/torch_rpc_mnist.py: the MNIST MLP trained by a parameter server
in torch.distributed.rpc with two asynchronous workers, the PyTorch peer
of tf1_mnist.py (issue 11).

Three processes: "ps" holds the parameters, the optimizer (the same
torch.optim as torch_mnist.py) and the global step; workers "worker0"
and "worker1" each hold a copy of the model.  A step of a worker:
forward and backward on its batch with the weights it has, then one
rpc_sync to the ps that applies the gradients under a lock (a step of
the optimizer, global step + 1) and returns the new weights, which the
next step uses; the workers do not wait for each other, so a gradient
may be a step stale, as with TF1's asynchronous replicas.  Worker k
iterates its shard (examples k, k+2, ...), reshuffled each epoch; worker
0 evaluates test accuracy after each of its epochs with the ps's current
weights and prints

    epoch E step S acc A time T

and at the end

    torch_rpc_mnist_steps_per_s X global_steps S train_s T workers 2 threads N
    torch_rpc_mnist_target 0.97 time T step S epoch E acc A
    (or: ..._target 0.97 not_reached best A)
    torch_rpc_mnist_startup_s X

Flags: those of bench/mnist_data.py, and --threads (torch threads of
each process, default 1: three processes share the cores).  Every
process dies with the launcher (PR_SET_PDEATHSIG).

    python3 bench/torch_rpc_mnist.py --epochs 10 --stop-at-target
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnist_data  # noqa: E402

import torch  # noqa: E402
import torch.distributed.rpc as rpc  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_mnist import model, optimizer  # noqa: E402


def extra(p):
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() == 1:  # the launcher died before the prctl
        sys.exit(1)


# The ps's state; its functions run on the RPC threads of the ps.
PS = {}


def ps_init(a):
    net = model(torch, a)
    PS.update(net=net, params=list(net.parameters()),
              opt=optimizer(torch, a, net.parameters()),
              lock=threading.Lock(), gs=0, stop=False, ready=0)


def ps_arrive():
    with PS["lock"]:
        PS["ready"] += 1


def ps_ready():
    return PS["ready"]


def ps_weights():
    with PS["lock"]:
        return [p.detach().clone() for p in PS["params"]], PS["gs"]


def ps_update(grads):
    """Apply one worker's gradients; the new weights, global step, stop."""
    with PS["lock"]:
        for p, g in zip(PS["params"], grads):
            p.grad = g
        PS["opt"].step()
        PS["gs"] += 1
        return ([p.detach().clone() for p in PS["params"]], PS["gs"],
                PS["stop"])


def ps_stop():
    PS["stop"] = True


def work(a, k):
    tx, ty, ex, ey = (torch.from_numpy(v) for v in mnist_data.load(a.data))
    nw = a.workers
    sx, sy = tx[k::nw].contiguous(), ty[k::nw].contiguous()
    net = model(torch, a)
    params = list(net.parameters())
    rpc.rpc_sync("ps", ps_arrive)
    deadline = time.time() + 120
    while rpc.rpc_sync("ps", ps_ready) < nw:
        if time.time() > deadline:
            sys.exit("worker %d: the other workers never came" % k)
        time.sleep(0.001)
    ws, gs = rpc.rpc_sync("ps", ps_weights)
    with torch.no_grad():
        for p, w in zip(params, ws):
            p.copy_(w)
    t0 = time.time()
    res = {"t0": t0, "evals": [], "target": None}
    g = torch.Generator().manual_seed(a.seed + k)
    n = len(sx) // a.batch
    local = 0

    def evaluate(epoch):
        ws, s = rpc.rpc_sync("ps", ps_weights)
        with torch.no_grad():
            h = F.linear(ex, ws[0], ws[1])
            h = torch.sigmoid(h) if a.act == "sigmoid" else torch.relu(h)
            acc = (F.linear(h, ws[2], ws[3]).argmax(1) == ey) \
                .float().mean().item()
        t = time.time() - t0
        print("epoch %g step %d acc %.4f time %.3f" % (epoch, s, acc, t),
              flush=True)
        res["evals"].append([epoch, s, acc, t, local])
        if res["target"] is None and acc >= a.target:
            res["target"] = [epoch, s, acc, t]
            if a.stop_at_target:
                rpc.rpc_sync("ps", ps_stop)
                return True
        return False

    done = False
    for epoch in range(1, a.epochs + 1):
        perm = torch.randperm(len(sx), generator=g)
        for i in range(n):
            idx = perm[i * a.batch:(i + 1) * a.batch]
            for p in params:
                p.grad = None
            F.cross_entropy(net(sx[idx]), sy[idx]).backward()
            ws, gs, stop = rpc.rpc_sync(
                "ps", ps_update, args=([p.grad for p in params],))
            with torch.no_grad():
                for p, w in zip(params, ws):
                    p.copy_(w)
            local += 1
            done = stop or bool(a.max_steps and gs >= a.max_steps)
            if k == 0 and a.eval_every and local % a.eval_every == 0 \
                    and i != n - 1:
                done = evaluate(epoch - 1 + (i + 1) / n) or done
            if done:
                break
        if k == 0 and not (res["evals"] and res["evals"][-1][4] == local):
            done = evaluate(epoch if i == n - 1 else
                            epoch - 1 + (i + 1) / n) or done
        if done:
            break
    res["t1"] = time.time()
    res["local"] = local
    res["gs"] = rpc.rpc_sync("ps", ps_weights)[1]
    with open(a.out, "w") as f:
        json.dump(res, f)


def task(a):
    die_with_parent()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    name = "ps" if a.rank == 0 else "worker%d" % (a.rank - 1)
    if a.rank == 0:
        ps_init(a)
    opts = rpc.TensorPipeRpcBackendOptions(
        init_method="tcp://127.0.0.1:%d" % a.port, num_worker_threads=8,
        rpc_timeout=300)
    rpc.init_rpc(name, rank=a.rank, world_size=a.workers + 1,
                 rpc_backend_options=opts)
    try:
        if a.rank > 0:
            work(a, a.rank - 1)
    finally:
        rpc.shutdown()  # waits for every process


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    a = mnist_data.flags(__doc__, extra)
    if a.rank >= 0:
        return task(a)
    print("torch_rpc_mnist config: %s workers %d threads %d" %
          (mnist_data.config(a), a.workers, a.threads), flush=True)
    me = os.path.abspath(__file__)
    tmp = "/tmp/torch_rpc_mnist.%d" % os.getpid()
    base = [sys.executable, me] + sys.argv[1:] + ["--port", str(free_port())]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    launch = time.time()
    procs = []
    try:
        for r in range(a.workers + 1):
            procs.append(subprocess.Popen(
                base + ["--rank", str(r), "--out", "%s.%d" % (tmp, r - 1)]))
        pending = list(procs)
        while pending:
            for p in list(pending):
                rc = p.poll()
                if rc is None:
                    continue
                pending.remove(p)
                if rc != 0:
                    sys.exit("torch_rpc_mnist: a process failed (exit %d)"
                             % rc)
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
    print("torch_rpc_mnist_steps_per_s %.1f global_steps %d train_s %.3f "
          "workers %d threads %d" % (steps / secs, steps, secs, a.workers,
                                     a.threads))
    tg = res[0]["target"]
    if tg:
        print("torch_rpc_mnist_target %g time %.3f step %d epoch %g "
              "acc %.4f" % (a.target, tg[3], tg[1], tg[0], tg[2]))
    else:
        best = max([e[2] for e in res[0]["evals"]] or [0])
        print("torch_rpc_mnist_target %g not_reached best %.4f" %
              (a.target, best))
    print("torch_rpc_mnist_startup_s %.3f" % (t0 - launch))


if __name__ == "__main__":
    main()
