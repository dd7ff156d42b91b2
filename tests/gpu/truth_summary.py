#!/usr/bin/env python3
"""truth_summary.py — print the comparisons of an advice truth run, one line
each, from the GS_TRUTH_LOG file tests/e2e/test_advice_truth.py wrote
(tests/gpu/validate.sh --truth prints them beside the PASS/FAIL lines).

    truth_summary.py LOG.jsonl

Each line: the regime and attempt, the CPUs the model counted, the first
run's mean step, then either the advice followed (workers, predicted and
measured mean step, error) or, with no advice, 2 more workers' gain; and
when the comparison missed, the first setting run again. Exit 2 when the log
cannot be read."""
import json
import sys


def line(e):
    m = e.get("model") or {}
    head = "   %-26s attempt %d  cpus %-4s first %5.1f ms (workers %d)" % (
        e.get("regime", "?"), e.get("attempt", 0), m.get("cpus", "?"), e["step_ms"], e["workers"])
    if e["outcome"] == "advised":
        body = "advice %d: predicted %.1f, measured %.1f ms (%+.0f%%)" % (
            e["value"], e["predicted_ms"], e["measured_ms"], 100 * e["error"])
    else:
        body = "%s: %d workers %.1f ms (gain %+.0f%%)" % (
            e["outcome"], e["value"], e["measured_ms"], 100 * e["gain"])
    tail = "held" if e["ok"] else "missed"
    if "again_ms" in e:
        tail += "; first setting again %.1f ms (%+.0f%%)" % (e["again_ms"], 100 * e["drift"])
    return "%s  %s  %s" % (head, body, tail)


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 2:
        print("usage: truth_summary.py LOG.jsonl", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            entries = [json.loads(l) for l in f if l.strip()]
    except (OSError, ValueError) as e:
        print("truth_summary.py: %s: %s" % (argv[1], e), file=sys.stderr)
        return 2
    for e in entries:
        try:
            print(line(e))
        except (KeyError, TypeError) as err:
            print("   (an entry without %s: %s)" % (err, json.dumps(e)[:200]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
