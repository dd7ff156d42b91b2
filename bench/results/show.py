#!/usr/bin/python3
"""show.py — print (or plot) the dated measurements in bench/results/*.jsonl.

Each line of a .jsonl file here is one measurement: date (UTC; time when
recorded), commit, machine (an id in machines.json), benchmark, metric,
value (null where only a range or a result was recorded), unit, min/max
where a range was recorded, and any parameters. `source` names the section
of the document it was first written in (docs/performance.md and
docs/testing.md before they were cut to what is true now:
`git show 36bd6c0:docs/performance.md`); `recorded_in` the commit that wrote
it there.

  show.py [FILE.jsonl...] [-b TEXT] [-m TEXT] [-c COMMIT]   a table per benchmark, oldest first
  show.py ... --plot OUT.png     value over time, one panel per benchmark and metric
                                 (needs matplotlib: Debian's python3-matplotlib; exit 2 without it)
  show.py --check                every row has the keys above and a known machine

-b, -m and -c keep rows whose benchmark, metric or commit contains TEXT.
Run with /usr/bin/python3. Must never: change a file other than OUT.png.
"""
import argparse
import glob
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIRED = ("date", "commit", "machine", "benchmark", "metric", "value", "unit", "source", "recorded_in")
SHOWN = set(REQUIRED) | {"time", "load", "min", "max", "variant", "date_basis", "command", "note"}


def load(files):
    rows = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    r = json.loads(line)
                    r["_at"] = "%s:%d" % (os.path.basename(path), n)
                    rows.append(r)
    return rows


def when(r):
    """sort key: date, then the start of the time range ('' when none)."""
    return (r["date"], (r.get("time") or "").split("-")[0])


def fmt_num(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.4g" % v if abs(v) < 1e5 else "%.0f" % v
    return str(v)


def fmt_value(r):
    s = fmt_num(r["value"]) if r["value"] is not None else ""
    if r.get("min") is not None or r.get("max") is not None:
        s += (" " if s else "") + "[%s, %s]" % (fmt_num(r.get("min")), fmt_num(r.get("max")))
    return (s or "-") + " " + r["unit"]


def params(r):
    """the row's parameters other than the common columns, as k=v."""
    out = []
    for k in sorted(r):
        if k in SHOWN or k.startswith("_") or k in ("source",):
            continue
        out.append("%s=%s" % (k, r[k]))
    return " ".join(out)


def print_tables(rows):
    by = {}
    for r in rows:
        by.setdefault(r["benchmark"], []).append(r)
    for bench in sorted(by, key=lambda b: min(when(r) for r in by[b])):
        print("== %s (%d)" % (bench, len(by[bench])))
        for r in sorted(by[bench], key=when):
            stamp = r["date"] + (" " + r["time"] if r.get("time") else "")
            print("  %-22s %-8s %-12s %-44s %-26s %s%s%s" % (
                stamp, r["commit"] or "-", (r.get("load") or "-")[:12],
                r["metric"][:44], fmt_value(r), ("(%s) " % r["variant"]) if r.get("variant") else "",
                params(r), "" if "date_basis" not in r else " [date: recorded]"))
        print()


def plot(rows, out, max_panels):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("show.py: --plot needs matplotlib (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    groups = {}
    for r in rows:
        if r["value"] is None and r.get("min") is None:
            continue
        groups.setdefault((r["benchmark"], r["metric"], r["unit"]), []).append(r)
    keys = sorted(groups, key=lambda k: -len(groups[k]))
    if len(keys) > max_panels:
        print("show.py: %d benchmark/metric pairs, plotting the %d with most rows (narrow with -b/-m)"
              % (len(keys), max_panels), file=sys.stderr)
        keys = keys[:max_panels]
    if not keys:
        print("show.py: nothing to plot", file=sys.stderr)
        return 1
    cols = 2 if len(keys) > 1 else 1
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(7 * cols, 3.2 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = sorted(groups[key], key=when)
        stamps = sorted({when(r) for r in pts})
        x_of = {s: i for i, s in enumerate(stamps)}
        series = {}
        for r in pts:
            series.setdefault(r.get("variant") or "", []).append(r)
        for name, rs in series.items():
            xs = [x_of[when(r)] for r in rs]
            ys = [r["value"] if r["value"] is not None else (r["min"] + r["max"]) / 2 for r in rs]
            lo = [y - r["min"] if r.get("min") is not None else 0 for y, r in zip(ys, rs)]
            hi = [r["max"] - y if r.get("max") is not None else 0 for y, r in zip(ys, rs)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=2, label=name[:40] or None)
        ax.set_xticks(range(len(stamps)))
        ax.set_xticklabels(["%s\n%s" % (s[0][5:], s[1]) for s in stamps], fontsize=6)
        ax.set_title("%s: %s" % (key[0][:40], key[1][:40]), fontsize=8)
        ax.set_ylabel(key[2], fontsize=8)
        if len(series) > 1:
            ax.legend(fontsize=5)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("show.py: wrote %s (%d panels)" % (out, len(keys)))
    return 0


def check(rows):
    with open(os.path.join(HERE, "machines.json"), encoding="utf-8") as f:
        machines = json.load(f)
    bad = 0
    for r in rows:
        missing = [k for k in REQUIRED if k not in r]
        if missing or r.get("machine") not in machines or (r["value"] is None and "min" not in r
                                                            and "result" not in r):
            print("%s: missing %s or unknown machine %r or no value/range/result"
                  % (r["_at"], ",".join(missing) or "-", r.get("machine")), file=sys.stderr)
            bad += 1
    print("show.py: %d rows, %d bad" % (len(rows), bad))
    return 1 if bad else 0


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `show.py | head` ends quietly
    ap = argparse.ArgumentParser(description="print or plot the measurements in bench/results/*.jsonl")
    ap.add_argument("files", nargs="*", help="default: every bench/results/*.jsonl")
    ap.add_argument("-b", "--benchmark", default="", help="keep benchmarks containing this text")
    ap.add_argument("-m", "--metric", default="", help="keep metrics containing this text")
    ap.add_argument("-c", "--commit", default="", help="keep rows of commits starting with this")
    ap.add_argument("--plot", metavar="OUT.png", help="draw the values over time (matplotlib)")
    ap.add_argument("--max-panels", type=int, default=12)
    ap.add_argument("--check", action="store_true", help="check every row's keys and machine")
    a = ap.parse_args()
    rows = load(a.files or sorted(glob.glob(os.path.join(HERE, "*.jsonl"))))
    if a.check:
        return check(rows)
    rows = [r for r in rows if a.benchmark.lower() in r["benchmark"].lower()
            and a.metric.lower() in r["metric"].lower()
            and (r["commit"] or "").startswith(a.commit)]
    if a.plot:
        return plot(rows, a.plot, a.max_panels)
    print_tables(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
