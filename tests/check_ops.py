#!/usr/bin/env python3
"""tests/check_ops.py: make check-ops, part of make lint (stdlib/ops.def).

Fails, naming what to fix, when
  (1) the op table names a function (its grad, cpu or gpu column) that no
      file defines where the column says: compiler/autodiff.c,
      codegen/cpu*.c and codegen/cuda.c, codegen/cuda*.c;
  (2) an op has no test: its name (OP_<name>) in a unit test other than
      build_test.c (which builds every op), or a function that builds it
      called in a test's program (tests/golden/, tests/integration/,
      tests/gpu/), or as an operator (+ - * / % ** @ == != < <= > >=,
      unary -); an op with a gradient rule also in tests/unit/grad_test.c
      or a program that takes a gradient (grad, minimize); an op with a
      GPU kernel also in the GPU's unit tests or tests/golden/cuda/;
  (3) spec/language.md's table of op facts (spec section 6.7.2, between
      its markers) is not what `tfgc help --op-facts` prints.
Run from the repository root after a build; $TFGC is ./tfgc by default.
"""
import glob
import os
import re
import subprocess
import sys

problems = []


def problem(msg):
    problems.append(msg)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def uncomment(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


COLS = ("name", "nin", "nout", "flags", "attrs", "types", "cost", "fold",
        "grad", "cpu", "gpu")
table = uncomment(read("stdlib/ops.def"))
table = "\n".join(l for l in table.split("\n") if not l.startswith("#"))
ops = []
for m in re.finditer(r"\bOP\(([^()]*)\)", table):
    cells = [c.strip() for c in m.group(1).split(",")]
    if len(cells) != len(COLS):
        problem("stdlib/ops.def: OP(%s): %d columns, not %d"
                % (cells[0], len(cells), len(COLS)))
        continue
    ops.append(dict(zip(COLS, cells)))
calls = []  # (function, op)
for m in re.finditer(r"\bCALL\(\s*(\w+)\s*,\s*(\w+)\s*,", table):
    calls.append((m.group(1), m.group(2)))
if len(ops) < 10 or len(calls) < 10:
    problem("stdlib/ops.def: read %d ops and %d calls" % (len(ops),
                                                          len(calls)))

# (1) every function the table names is defined where its column says
def definitions(paths):
    names = set()
    for p in paths:
        names.update(re.findall(r"^(\w+)\(", read(p), re.M))
    return names


where = {
    "grad": ["compiler/autodiff.c"],
    "cpu": sorted(glob.glob("codegen/cpu*.c")) + ["codegen/cuda.c"],
    "gpu": sorted(glob.glob("codegen/cuda*.c")),
}
defined = {col: definitions(paths) for col, paths in where.items()}
for op in ops:
    for col, paths in where.items():
        if op[col] not in defined[col]:
            problem("stdlib/ops.def: %s's %s column names %s(), which "
                    "none of %s defines" % (op["name"], col, op[col],
                                            " ".join(paths)))

# (2) a test of every op
OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
             "pow": "**", "neg": "-", "matmul": "@", "equal": "==",
             "not_equal": "!=", "less": "<", "less_equal": "<=",
             "greater": ">", "greater_equal": ">="}
# ops a program makes without naming them: feeds, the ends of edges
# between tasks, fused groups, copies to a GPU, the random makers' draw
# counts, minimize's updates (of rows, where gathers read the table),
# initialization's checks, subscripts
IMPLIED = {"input": r"\binput\b", "send": r"/job:\w+/task:1",
           "recv": r"/job:\w+/task:1", "fused": r"\bfused\b",
           "copy": r"/gpu:0", "random_draw": r"\brandom_(uniform|normal)\(",
           "apply": r"\bminimize\(", "after": r"\bminimize\(",
           "apply_rows": r"(?s)\b(gather|embedding_lookup)\(.*\bminimize\(",
           "gather_var": r"(?s)\bvar\b.*\b(gather|embedding_lookup)\(",
           "var_initialized": r"\binitialize\b", "variable": r"\bvar\b",
           "const": r"\b\d", "slice": r"\w\[[^\]\n]*:|\bsplit\("}


def texts(patterns):
    out = []
    for pat in patterns:
        for p in sorted(glob.glob(pat)):
            out.append((p, read(p)))
    return out


unit = [t for t in texts(["tests/unit/*.c"])
        if not t[0].endswith("build_test.c")]
programs = texts(["tests/golden/*/*.tfg", "tests/integration/*.sh",
                  "tests/integration/*.tfg", "tests/gpu/*.sh",
                  "tests/gpu/*.tfg", "examples/*.tfg"])
programs = [(p, t) for p, t in programs if not p.startswith("examples/")]
grad_progs = [(p, t) for p, t in programs
              if re.search(r"\b(grad|minimize)\(", t)]
grad_unit = [t for t in unit if t[0].endswith("grad_test.c")]
gpu_unit = [t for t in unit if re.search(r"(cuda|gpu)\w*_test\.c$", t[0])]
# their programs are strings in the C
grad_progs += grad_unit
gpu_progs = [(p, t) for p, t in programs
             if p.startswith("tests/golden/cuda/") or
             p.startswith("tests/gpu/")] + gpu_unit
callers = {}
for fn, op in calls:
    callers.setdefault(op, []).append(fn)


def named(op, units, progs):
    """Whether units name OP_<name> or progs make the op."""
    name = op["name"]
    if any(re.search(r"\bOP_%s\b" % name, t) for _, t in units):
        return True
    pats = [r"\b%s\(" % fn for fn in callers.get(name, [])]
    if name in OPERATORS:
        pats.append(r"\w\s*%s\s*[\w(]" % re.escape(OPERATORS[name]))
    if name in IMPLIED:
        pats.append(IMPLIED[name])
    return any(re.search(pat, t) for pat in pats for _, t in progs)


for op in ops:
    name = op["name"]
    if name == "grad":
        continue  # expanded before any backend: its tests are grad_test's
    if not named(op, unit, programs):
        problem("%s: no test names OP_%s or runs a program that makes it"
                % (name, name))
    if op["grad"] != "d_none" and not named(op, grad_unit, grad_progs):
        problem("%s: its gradient (%s) has no test: tests/unit/grad_test.c "
                "or a program with grad() or minimize()" % (name,
                                                          op["grad"]))
    if op["gpu"] not in ("cu_host", "cu_none") and \
            not named(op, gpu_unit, gpu_progs):
        problem("%s: its GPU kernel (%s) has no test: the GPU unit tests "
                "or tests/golden/cuda/" % (name, op["gpu"]))

# (3) the spec's table of op facts
tfgc = os.environ.get("TFGC", "./tfgc")
try:
    facts = subprocess.run([tfgc, "help", "--op-facts"], check=True,
                           capture_output=True, text=True).stdout
except (OSError, subprocess.CalledProcessError) as e:
    problem("cannot run %s help --op-facts: %s" % (tfgc, e))
    facts = None
spec = read("spec/language.md")
m = re.search(r"^<!-- tfgc help --op-facts: begin -->\n(.*?)"
              r"^<!-- tfgc help --op-facts: end -->$", spec, re.S | re.M)
if not m:
    problem("spec/language.md has no table of op facts between "
            "'<!-- tfgc help --op-facts: begin -->' and its end marker")
elif facts is not None and m.group(1) != facts:
    problem("spec/language.md's table of op facts (spec section 6.7.2) is "
            "not what 'tfgc help --op-facts' prints: paste its output "
            "between the markers")

for p in problems:
    print("check-ops: " + p)
if problems:
    sys.exit(1)
print("check-ops: ok (%d ops, %d functions)" % (len(ops), len(calls)))
