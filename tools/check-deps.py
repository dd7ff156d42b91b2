#!/usr/bin/env python3
"""check-deps.py — the direction of the dependencies between the parts of
gpustarve, checked on every #include (docs/architecture.md, "Parts").

Every `#include "..."` of a C, C++ or CUDA file is resolved to the part that
holds the included file (next to the includer first, as the compiler does,
then anywhere in the tree); an include that crosses into a part the
includer's part may not use is an error. `#include <...>` of the CUDA,
CUPTI or NVTX headers is an error outside the parts that may need them (the
collector's NVTX and CUDA hooks carry their own declarations). Includes that
resolve to nothing in the tree (system headers, generated ones under
build/) are not checked.

  tools/check-deps.py [--root DIR]   check the tree; exit 1 on any error
  tools/check-deps.py --self-test    check that a reversed arrow is caught

Must never: change a file; it reads sources only.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

# Parts, most specific prefix first. A file belongs to the first that matches.
PARTS = [
    ("tests/simcuda/", "tests/simcuda"),
    ("tests/", "tests"),
    ("trace/", "trace"),
    ("sink/", "sink"),
    ("preload/", "preload"),
    ("cupti/", "cupti"),
    ("analyzer/base/", "analyzer/base"),
    ("analyzer/load/", "analyzer/load"),
    ("analyzer/decide/", "analyzer/decide"),
    ("analyzer/model/", "analyzer/model"),
    ("analyzer/machine/", "analyzer/machine"),
    ("analyzer/report/", "analyzer/report"),
    ("analyzer/cmd/", "analyzer/cmd"),
    ("analyzer/", "analyzer"),
    ("import/", "import"),
    ("include/", "include"),
    ("python/", "python"),
    ("examples/", "examples"),
    ("bench/", "bench"),
]

# What each part may include, besides itself. The arrows of
# docs/architecture.md: analyzer -> trace, preload -> trace, cupti -> trace,
# import -> trace, both collector halves -> sink, never analyzer <-> preload,
# never cupti -> preload. Inside the analyzer, layers ("The analyzer's
# layers"): base <- load <- model -> decide -> base, report -> model,
# cmd on top (and the only layer that reaches import/); machine (what
# `check` measures of this machine) beside model, on base only. Tests and
# benchmarks reach into what they test.
AN_BASE = {"trace", "analyzer/base"}
ALLOWED = {
    "trace": set(),
    "include": set(),
    "sink": {"trace"},
    "preload": {"trace", "sink", "include"},
    "cupti": {"trace", "sink"},
    "import": {"trace"},
    "analyzer/base": {"trace"},
    "analyzer/load": AN_BASE,
    "analyzer/decide": AN_BASE,
    "analyzer/model": AN_BASE | {"analyzer/load", "analyzer/decide"},
    "analyzer/machine": AN_BASE,
    "analyzer/report": AN_BASE | {"analyzer/load", "analyzer/decide", "analyzer/model"},
    "analyzer/cmd": AN_BASE | {"analyzer/load", "analyzer/decide", "analyzer/model",
                               "analyzer/report", "analyzer/machine", "import"},
    "analyzer": set(),
    "python": set(),
    "examples": {"include"},
    "bench": {"trace", "include"},
    "tests/simcuda": {"tests"},
    "tests": {"trace", "sink", "preload", "cupti", "include", "tests/simcuda", "import",
              "analyzer/base", "analyzer/load", "analyzer/decide", "analyzer/model",
              "analyzer/report", "analyzer/machine", "analyzer/cmd"},
}

# Parts that may include the CUDA toolkit's own headers.
CUDA_HEADERS = re.compile(r"^(cuda|cupti|nvtx3/|nvToolsExt|driver_types|vector_types)")
CUDA_OK = {"cupti", "tests/simcuda", "tests", "examples", "bench"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)
SOURCES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")
SKIP_DIRS = {".git", "build", ".venv", "node_modules", "__pycache__"}


def part_of(rel):
    for prefix, name in PARTS:
        if rel.startswith(prefix):
            return name
    return None


def walk(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            if f.endswith(SOURCES):
                yield os.path.relpath(os.path.join(d, f), root)


def check(root):
    files = sorted(walk(root))
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    errors = []
    for rel in files:
        src = part_of(rel)
        if src is None:
            continue
        with open(os.path.join(root, rel), errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            kind, name = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if kind == "<":
                if CUDA_HEADERS.match(name) and src not in CUDA_OK:
                    errors.append("%s:%d: %s includes the CUDA header <%s>" % (rel, line, src, name))
                continue
            here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
            if os.path.exists(os.path.join(root, here)):
                targets = [here]
            else:
                targets = [c for c in by_name.get(os.path.basename(name), [])
                           if c.endswith(os.path.normpath(name))]
            for t in targets:
                dst = part_of(t)
                if dst is None or dst == src or dst in ALLOWED.get(src, set()):
                    continue
                errors.append("%s:%d: %s includes %s (%s -> %s is not an allowed arrow)" % (
                    rel, line, src, t, src, dst))
    return errors


def self_test():
    """A tree with one reversed arrow of each kind must fail, one without
    none must pass."""
    tmp = tempfile.mkdtemp(prefix="gs_deps_")
    try:
        def put(rel, text):
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        put("trace/gs_trace.h", "int x;\n")
        put("preload/gs_collector.h", '#include "gs_trace.h"\n')
        put("analyzer/load/an_ok.c", '#include "gs_trace.h"\n#include <stdio.h>\n')
        put("analyzer/model/an_m.h", '#include "load/an_ok.c"\n')
        put("analyzer/report/rep_ok.c", '#include "model/an_m.h"\n')
        put("analyzer/cmd/cli_ok.h", '#include "report/rep_ok.c"\n')
        put("analyzer/machine/mc_ok.c", '#include "gs_trace.h"\n')
        ok = check(tmp)
        put("analyzer/load/an_bad.c", '#include "gs_collector.h"\n')
        put("analyzer/load/an_up.c", '#include "model/an_m.h"\n')
        put("analyzer/decide/an_dm.c", '#include "../model/an_m.h"\n')
        put("analyzer/report/rep_cli.c", '#include "cmd/cli_ok.h"\n')
        put("analyzer/machine/mc_up.c", '#include "model/an_m.h"\n')
        put("import/imp_bad.c", '#include "model/an_m.h"\n')
        put("cupti/gs_bad.c", '#include "../preload/gs_collector.h"\n')
        put("trace/gs_bad.c", '#include "an_ok.c"\n')
        put("preload/gs_cuda.c", "#include <cuda_runtime.h>\n")
        bad = check(tmp)
    finally:
        shutil.rmtree(tmp)
    want = {"analyzer/load/an_bad.c", "cupti/gs_bad.c", "trace/gs_bad.c", "preload/gs_cuda.c",
            "analyzer/load/an_up.c", "analyzer/decide/an_dm.c", "analyzer/report/rep_cli.c",
            "import/imp_bad.c", "analyzer/machine/mc_up.c"}
    got = {e.split(":")[0] for e in bad}
    if ok or got != want:
        print("check-deps self-test FAILED: clean tree gave %r; bad tree flagged %r, want %r"
              % (ok, sorted(got), sorted(want)))
        return 1
    print("check-deps self-test: %d reversed arrows caught, clean tree passes" % len(bad))
    return 0


def main():
    ap = argparse.ArgumentParser(description="check the direction of #include arrows "
                                 "between gpustarve's parts (docs/architecture.md)")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true", help="check that reversed arrows are caught")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    errors = check(os.path.abspath(a.root))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("check-deps: %d include(s) against the arrows of docs/architecture.md" % len(errors),
              file=sys.stderr)
        return 1
    print("check-deps: every #include follows the arrows of docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
