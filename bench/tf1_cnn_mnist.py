"""bench/tf1_cnn_mnist.py: TF's Deep MNIST network trained by TF1's
distributed runtime as examples/cnn_mnist.tfg trains it (issue 27): one
ps, two asynchronous workers under replica_device_setter, Adam from
1e-3 halved every epoch (exponential_decay), batch 100, dropout 0.5, the same initial weights' scales, the test
accuracy over all 10,000 test images (in batches of 500) after each of
the chief's epochs, until 99%.  It is bench/tf1_mnist.py with --model
cnn and these settings first (later flags override them); it prints what
that prints (tf1_mnist_target 0.99 time T ...).  Needs TF (make
bench-deps: build/venv/bin/python3).

    build/venv/bin/python3 bench/tf1_cnn_mnist.py --epochs 3 --stop-at-target
"""
import os
import sys

sys.dont_write_bytecode = True  # no bench/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tf1_mnist  # noqa: E402

if "--role" not in sys.argv:
    sys.argv[1:1] = ["--model", "cnn", "--opt", "adam", "--lr", "0.001",
                     "--target", "0.99"]
tf1_mnist.main()
