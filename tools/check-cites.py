#!/usr/bin/env python3
"""check-cites.py — code and docs cite only documents inside the repository
(docs/architecture.md, "Where each rule lives").

Fails on a mention, in any tracked source or text file, of a design or style
file that lives outside the repository (DESIGN.md, STYLE.md, a ../shared/
path), and on a `docs/NAME.md` or `README.md`-style path under docs/ that
does not exist. Test data (tests/data/, *.json, *.gst) is not read. Public
data the tests read from beside the repository (../shared/data/, such as
the real GPU traces of tests/import) is data, not a cited document.

  tools/check-cites.py [--root DIR]   exit 1 on any such citation

Must never: change a file.
"""
import argparse
import os
import re
import subprocess
import sys

OUTSIDE = re.compile(r"\bDESIGN\.md\b|\bSTYLE\.md\b|\.\./shared/(?!data/)")
DOC_REF = re.compile(r"\bdocs/[A-Za-z0-9_.-]+\.md\b")
TEXT = (".c", ".h", ".cpp", ".cu", ".py", ".sh", ".mk", ".md", ".txt", ".map")
SKIP = ("tests/data/",)


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: every file
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build", ".venv")]
            for f in files:
                yield os.path.relpath(os.path.join(d, f), root)
        return
    yield from out.stdout.splitlines()


def main():
    ap = argparse.ArgumentParser(description="code and docs cite only the repository's own documents")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    errors = []
    for rel in tracked(root):
        base = os.path.basename(rel)
        if rel.startswith(SKIP) or not (rel.endswith(TEXT) or base in ("Makefile",)):
            continue
        if rel == "tools/check-cites.py":
            continue  # names the patterns it looks for
        try:
            with open(os.path.join(root, rel), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            if OUTSIDE.search(line):
                errors.append("%s:%d: cites a document outside the repository: %s"
                              % (rel, n, line.strip()[:100]))
            for m in DOC_REF.finditer(line):
                if not os.path.exists(os.path.join(root, m.group(0))):
                    errors.append("%s:%d: cites %s, which does not exist" % (rel, n, m.group(0)))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("check-cites: %d citation(s) of documents the repository does not hold" % len(errors),
              file=sys.stderr)
        return 1
    print("check-cites: every cited document is in the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
