"""bench/torch_cnn_mnist.py: TF's Deep MNIST network trained in one eager
PyTorch process, the peer of examples/cnn_mnist.tfg for issue 27's
"below single-process PyTorch" goal: the same model and settings (Adam
from 1e-3 halved every epoch, continuously, batch 100, dropout 0.5, the
same initial weights' scales, the test accuracy over all 10,000 test
images in batches of 500 after each epoch, until 99%), in one process on
every core this process may use (--threads to change).  It is
bench/torch_mnist.py with --model cnn and these settings first (later
flags override them); it prints what that prints (torch_mnist_target
0.99 time T ...).  Needs PyTorch and NumPy (Debian's /usr/bin/python3).

    /usr/bin/python3 bench/torch_cnn_mnist.py --epochs 3 --stop-at-target
"""
import os
import sys

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_mnist  # noqa: E402

sys.argv[1:1] = ["--model", "cnn", "--opt", "adam", "--lr", "0.001",
                 "--target", "0.99"]
torch_mnist.main()
