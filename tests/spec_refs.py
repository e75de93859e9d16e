"""tests/spec_refs.py: every section of spec/language.md cited in the
sources names its section as it is now (tests/lint.sh, rule (e)).

A citation is `§N` or `§N.M...` followed by the section's title in double
quotes, exactly as its heading in spec/language.md gives it:

    /* the maker's shape (spec §6.13 "zeros, ones, fill") */

so that a section renumbered or retitled makes every stale citation of it
fail here instead of pointing at another section.  Files checked: the C
sources and headers, the lexer and grammar, the op tables, scripts and
programs under tests/, examples/ and bench/, the Makefile, and
spec/design.md and README.md, and in spec/language.md itself the table
of signatures that `tfgc help --ops` makes from stdlib/ops.def
(between the OPS_BEGIN and OPS_END markers; tests/lint.sh checks that it
is what the compiler prints).  Prints one line per bad citation,
file:line first; exits 1 if there was one.
"""
import os
import re
import subprocess
import sys

HEADING = re.compile(r"^#{2,6} (\d+(?:\.\d+)*)\.? (.+?)\s*$")
CITE = re.compile(r'§(\d+(?:\.\d+)*)(?: "([^"\n]*)")?')
EXTS = (".c", ".h", ".re", ".y", ".def", ".sh", ".inc", ".py", ".tfg")
DIRS = ("lang", "compiler", "codegen", "runtime", "stdlib", "tests",
        "examples", "bench")
FILES = ("Makefile", "spec/design.md", "README.md")
OPS_BEGIN = "<!-- tfgc help --ops: begin -->"
OPS_END = "<!-- tfgc help --ops: end -->"


def sections(path):
    secs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = HEADING.match(line)
            if m:
                secs[m.group(1)] = m.group(2)
    return secs


def sources():
    try:
        out = subprocess.run(["git", "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split("\n")
        names = [n for n in out if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d in DIRS:
            for root, _, files in os.walk(d):
                names += [os.path.join(root, f) for f in files]
        names += list(FILES)
    for n in sorted(set(names)):
        if n in FILES or (n.split("/")[0] in DIRS and n.endswith(EXTS)):
            if n != "tests/spec_refs.py" and os.path.isfile(n):
                yield n


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    secs = sections("spec/language.md")
    bad = 0
    for path in list(sources()) + ["spec/language.md"]:
        with open(path, encoding="utf-8", errors="replace") as f:
            inside = path != "spec/language.md"
            for no, line in enumerate(f, 1):
                if not inside or line.startswith(OPS_END):
                    inside = line.startswith(OPS_BEGIN)
                    continue
                for m in CITE.finditer(line):
                    num, title = m.group(1), m.group(2)
                    want = secs.get(num)
                    if want is None:
                        why = "no section %s in spec/language.md" % num
                    elif title is None:
                        why = 'write its title: §%s "%s"' % (num, want)
                    elif title != want:
                        why = 'section %s is "%s" now' % (num, want)
                    else:
                        continue
                    print("%s:%d: %s: %s" % (path, no, m.group(0), why))
                    bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
