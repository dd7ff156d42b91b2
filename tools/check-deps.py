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

Inside preload/ it checks two things more: its modules (x.c with its header
x.h) include each other without a circle, except through the collector's
lazy start-up (gs_startup); and the collector's GPUSTARVE_* variables are
read (getenv) in preload/gs_config.c only, a GPU source's own
(GPUSTARVE_CUPTI_*) in cupti/gs_cupti.c only.

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


# preload/: the one module a circle of includes may pass through (the lazy
# start-up: it calls every module's set-up, and they read the state it
# leaves or start it from an entry point; preload/gs_startup.c).
CIRCLE_OK = "gs_startup"
# Who may read which GPUSTARVE_* variables: file -> prefix of the names.
ENV_READERS = {"preload/gs_config.c": "GPUSTARVE_", "cupti/gs_cupti.c": "GPUSTARVE_CUPTI_"}
GETENV = re.compile(r'\b(?:secure_)?getenv\s*\(\s*"(GPUSTARVE_\w*)"')


def circles(graph, skip):
    """The strongly connected parts of more than one node (Tarjan), without
    the nodes in skip."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w in skip:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index and v not in skip:
            visit(v)
    return out


def check_preload(root):
    """Circles between preload/'s modules, and GPUSTARVE_* reads outside
    their one reader."""
    errors, graph, where = [], {}, {}
    for rel in sorted(walk(root)):
        if not rel.startswith(("preload/", "cupti/")):
            continue
        with open(os.path.join(root, rel), errors="replace") as f:
            text = f.read()
        for m in GETENV.finditer(text):
            if not m.group(1).startswith(ENV_READERS.get(rel, "\0")):
                errors.append("%s:%d: reads %s (the collector's variables are read in "
                              "preload/gs_config.c only, the CUPTI source's in cupti/gs_cupti.c)"
                              % (rel, text.count("\n", 0, m.start()) + 1, m.group(1)))
        if not rel.startswith("preload/"):
            continue
        mod = os.path.splitext(os.path.basename(rel))[0]
        for m in INCLUDE.finditer(text):
            dst = os.path.splitext(os.path.basename(m.group(2)))[0]
            if m.group(1) == '"' and dst != mod and \
                    os.path.exists(os.path.join(root, "preload", m.group(2))):
                graph.setdefault(mod, set()).add(dst)
                where.setdefault((mod, dst), rel)
    for part in circles(graph, {CIRCLE_OK}):
        arrows = ["%s -> %s" % (a, b) for a in part for b in sorted(graph.get(a, ())) if b in part]
        first = where[tuple(arrows[0].split(" -> "))]
        errors.append("%s: preload/ modules %s include each other in a circle (%s); only the "
                      "lazy start-up (%s) may close one" % (first, ", ".join(part),
                                                            ", ".join(arrows), CIRCLE_OK))
    return errors


def write_tree(root, files):
    """Write files ({path: text}) under root."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def self_test_preload():
    """A circle between two preload modules and GPUSTARVE_* reads outside
    their reader must fail; a circle through the start-up and the readers'
    own reads must pass."""
    clean = {
        "preload/gs_a.h": "int a(void);\n",
        "preload/gs_b.h": "int b(void);\n",
        "preload/gs_startup.h": "void gs_init(void);\n",
        "preload/gs_a.c": '#include "gs_a.h"\n#include "gs_startup.h"\n',
        "preload/gs_startup.c": '#include "gs_a.h"\n',
        "preload/gs_config.c": 'const char *d = getenv("GPUSTARVE_DIR");\n',
        "cupti/gs_cupti.c": 'const char *l = getenv("GPUSTARVE_CUPTI_LIB");\n',
    }
    broken = dict(clean, **{
        "preload/gs_b.c": '#include "gs_b.h"\n#include "gs_a.h"\n',
        "preload/gs_a.c": '#include "gs_a.h"\n#include "gs_b.h"\n',
        "preload/gs_output.c": 'const char *d = secure_getenv( "GPUSTARVE_DIR");\n',
        "cupti/gs_cupti_guest.c": 'const char *l = getenv("GPUSTARVE_CUPTI_LIB");\n',
        "cupti/gs_cupti.c": 'const char *l = getenv("GPUSTARVE_FLUSH_MS");\n',
    })
    found = []
    for files in (clean, broken):
        tmp = tempfile.mkdtemp(prefix="gs_deps_")
        try:
            write_tree(tmp, files)
            found.append(check_preload(tmp))
        finally:
            shutil.rmtree(tmp)
    ok, bad = found
    want = {"preload/gs_a.c", "preload/gs_output.c", "cupti/gs_cupti_guest.c", "cupti/gs_cupti.c"}
    got = {e.split(":")[0] for e in bad}
    if ok or got != want:
        print("check-deps preload self-test FAILED: clean tree gave %r; bad tree flagged %r, "
              "want %r" % (ok, sorted(got), sorted(want)))
        return 1
    print("check-deps preload self-test: a circle and %d stray reads caught, clean tree passes"
          % (len(bad) - 1))
    return 0


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
        return self_test() or self_test_preload()
    errors = check(os.path.abspath(a.root)) + check_preload(os.path.abspath(a.root))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("check-deps: %d error(s) against the arrows and rules of docs/architecture.md"
              % len(errors), file=sys.stderr)
        return 1
    print("check-deps: every #include follows the arrows of docs/architecture.md; preload/ has "
          "no circle but the start-up's, and one reader of GPUSTARVE_*")
    return 0


if __name__ == "__main__":
    sys.exit(main())
