#!/usr/bin/env python3
"""check-cycles.py — no circle of calls between the files of a part: for
every object file given, which other object defines each symbol it uses
(nm), and the circles in that graph (strongly connected components of more
than one file). A circle means two files each need the other, so neither
can be read, tested or changed alone (docs/architecture.md, "Dependencies").

  tools/check-cycles.py [--allow FILE,FILE,...]... OBJ...
  tools/check-cycles.py --self-test

--allow names one circle that is allowed (its files, by source path, in any
order): the collector's lazy start-up, where start-up calls the lifecycle's
set-up and the lifecycle's exec hook path starts the collector when no
constructor has yet (preload/gs_lifecycle.c, preload/gs_startup.c: the
Makefile's CYCLES_ALLOW_COLLECTOR; docs/architecture.md, "Dependencies").
Exit 1 on any other circle, on an allowed circle that a file joined, and on
an --allow that names no circle (the list stays exactly what remains).

Must never: change a file; it reads object files only.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def symbols(obj):
    """(defined global symbols, undefined symbols) of one object file."""
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            uses.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defs.add(parts[2])
    return defs, uses


def circles(objs):
    """The circles among objs: lists of object paths, and the edges between
    them as {(a, b): [symbols a takes from b]}."""
    defined, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        uses[o] = u
        for s in d:
            defined.setdefault(s, o)
    graph = {o: sorted({defined[s] for s in uses[o] if defined.get(s, o) != o}) for o in objs}
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan, iterative enough for a few hundred files
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in objs:
        if v not in index:
            visit(v)
    edges = {}
    for comp in found:
        for a in comp:
            for b in graph[a]:
                if b in comp:
                    edges[(a, b)] = sorted(s for s in uses[a] if defined.get(s) == b)
    return found, edges


def source_of(obj):
    """build/obj/analyzer/load/an_load.o -> analyzer/load/an_load.c (by the
    path below the build folder's first two levels)."""
    parts = obj.replace(os.sep, "/").split("/")
    for i in range(len(parts)):
        if parts[i] in ("obj", "pic"):
            return "/".join(parts[i + 1:])[:-2] + ".c"
    return obj


def check(objs, allowed):
    """The circles not allowed (lists of objects), and the allowed ones
    that were not found (sets of source paths)."""
    found, edges = circles(objs)
    bad, seen = [], []
    for comp in found:
        names = {source_of(o) for o in comp}
        if any(names == a for a in allowed):
            seen.append(names)
            continue
        bad.append(comp)
    for comp in bad:
        print("circle of %d files:" % len(comp), file=sys.stderr)
        for a in comp:
            for b in comp:
                if (a, b) in edges:
                    print("  %s -> %s: %s" % (source_of(a), source_of(b), ", ".join(edges[(a, b)][:6])),
                          file=sys.stderr)
    return bad, [a for a in allowed if a not in seen]


def self_test():
    """Three files in a circle must be caught, the same files in a line pass."""
    cc = os.environ.get("CC", "cc")
    tmp = tempfile.mkdtemp(prefix="gs_cycles_")
    try:
        def obj(name, text):
            src = os.path.join(tmp, "obj", name + ".c")
            os.makedirs(os.path.dirname(src), exist_ok=True)
            with open(src, "w") as f:
                f.write(text)
            out = src[:-2] + ".o"
            subprocess.run([cc, "-c", src, "-o", out], check=True)
            return out
        line = [obj("a", "int b(void); int a(void) { return b(); }\n"),
                obj("b", "int c(void); int b(void) { return c(); }\n"),
                obj("c", "int c(void) { return 1; }\n")]
        ring = [obj("x", "int y(void); int x(void) { return y(); }\n"),
                obj("y", "int z(void); int y(void) { return z(); }\n"),
                obj("z", "int x(void); int z(void) { return x(); }\n")]
        ok, _ = check(line, [])
        bad, _ = check(ring, [])
        allowed, missing = check(ring, [{"x.c", "y.c", "z.c"}])
        joined, _ = check(ring, [{"x.c", "y.c"}])  # z.c joined the allowed circle
        _, stale = check(line, [{"a.c", "b.c"}])    # an allowance with no circle
    finally:
        shutil.rmtree(tmp)
    if ok or len(bad) != 1 or allowed or missing or len(joined) != 1 or len(stale) != 1:
        print("check-cycles self-test FAILED", file=sys.stderr)
        return 1
    print("check-cycles self-test: a circle of three files caught, and one a file joined; a line "
          "and an allowed circle pass; an allowance that names no circle is caught")
    return 0


def main():
    ap = argparse.ArgumentParser(description="no circle of calls between the files of a part")
    ap.add_argument("--allow", action="append", default=[], help="FILE,FILE,...: one allowed circle")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("objs", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    allowed = [set(x.split(",")) for x in a.allow]
    bad, stale = check(a.objs, allowed)
    for names in stale:
        print("check-cycles: --allow %s names no circle: remove it" % ",".join(sorted(names)),
              file=sys.stderr)
    if bad:
        print("check-cycles: %d circle(s) between files (docs/architecture.md)" % len(bad), file=sys.stderr)
    if bad or stale:
        return 1
    if allowed:
        print("check-cycles: no circle between the %d files but the allowed %s" % (
            len(a.objs), "; ".join(",".join(sorted(x)) for x in allowed)))
    else:
        print("check-cycles: no circle between the %d files" % len(a.objs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
