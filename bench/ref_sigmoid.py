"""bench/ref_sigmoid.py N TFG_MS: y = sigmoid(a*x + b) on N f32 in NumPy
and eager PyTorch (each as a user would write it, median of 9 runs after a
warm-up), printed as rows of bench/kernels.sh's table beside tfgc's time
TFG_MS measured in the same run; ratio = their time / tfgc's."""
import sys
import time

import numpy as np

n, tfg = int(sys.argv[1]), float(sys.argv[2])
x = np.random.default_rng(1).uniform(-4, 4, n).astype(np.float32)
a, b = np.float32(1.5), np.float32(0.25)


def median_ms(f):
    f()
    ts = []
    for _ in range(9):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[4] * 1e3


def row(what, ms, goal):
    print("| sigmoid(a*x + b), 16M f32, vs %s | %.2f ms | %s: %.2f ms | "
          "%.2fx | %s |" % (what, tfg, what, ms, ms / tfg, goal))


row("NumPy %s" % np.__version__,
    median_ms(lambda: 1.0 / (1.0 + np.exp(-(a * x + b)))), ">= 3x")
try:
    import torch
except ImportError:
    print("| sigmoid(a*x + b) vs eager PyTorch | %.2f ms | not installed "
          "(make bench-deps) | — | > 1x |" % tfg)
    sys.exit(0)
tx = torch.from_numpy(x)
row("PyTorch %s (%d threads)" % (torch.__version__, torch.get_num_threads()),
    median_ms(lambda: torch.sigmoid(a * tx + b)), "> 1x")
