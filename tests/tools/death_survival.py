#!/usr/bin/env python3
"""death_survival.py [--runs N] [--threads T] [--signal SIG] [--spin S] [--build DIR]
— how much of a process's trace survives its death (docs/collector-safety.md).

Runs build/tests/pread_counted (T threads looping on a 4 KiB pread, each
counting its completed calls in a file that outlives the process) traced by
LD_PRELOAD, sends SIG at a random instant 0.05-0.8 s in (seeded, so reruns
pick the same instants), and compares with `gpustarve dump --json`:
  made        completed preads, from the counts file
  kept        preads in the trace (trace file and live file)
  dropped     counted dropped by the collector (a full ring)
  unaccounted made - kept - dropped - lost (0, or -1..-T: a call made but
              not yet counted when the signal came)
Prints one line per run and the totals. Exit status 1 when any run has an
event unaccounted for."""
import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--signal", default="SIGKILL")
    ap.add_argument("--spin", type=int, default=0)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    cli, lib = os.path.join(a.build, "gpustarve"), os.path.join(a.build, "libgpustarve.so")
    prog = os.path.join(a.build, "tests", "pread_counted")
    sig = getattr(signal, a.signal)
    tmp = tempfile.mkdtemp(prefix="gs_death_")
    data, counts, run = (os.path.join(tmp, n) for n in ("data", "counts", "run"))
    with open(data, "wb") as f:
        f.write(os.urandom(16 * 4096))
    rng = random.Random(a.threads * 1000 + sig * 10 + a.spin)
    tot = {"made": 0, "kept": 0, "dropped": 0, "lost": 0}
    worst = 0
    for r in range(a.runs):
        shutil.rmtree(run, ignore_errors=True)
        with open(counts, "wb") as f:
            f.write(bytes(4096))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSTARVE_")}
        env.update(LD_PRELOAD=lib, GPUSTARVE_DIR=run)
        p = subprocess.Popen([prog, data, counts, str(a.threads), str(a.spin)],
                             stdout=subprocess.PIPE, env=env)
        p.stdout.readline()
        time.sleep(rng.uniform(0.05, 0.8))
        p.send_signal(sig)
        p.wait()
        with open(counts, "rb") as f:
            made = sum(struct.unpack("64Q", f.read(512)))
        out = subprocess.run([cli, "dump", "--json", run], capture_output=True)
        kept = dropped = lost = 0
        for line in out.stdout.decode().splitlines():
            x = json.loads(line)
            if x["kind"].startswith("pread") and x.get("path") == data:
                kept += 1
            elif x["kind"] == "drops":   # cumulative: the last one counts
                dropped, lost = x["dropped"], x["lost"]
        un = made - kept - dropped - lost
        worst = max(worst, un)
        for k, v in (("made", made), ("kept", kept), ("dropped", dropped), ("lost", lost)):
            tot[k] += v
        print("run %d: status %d, made %d, kept %d, dropped %d, lost %d, unaccounted %d, dump exit %d"
              % (r, p.returncode, made, kept, dropped, lost, un, out.returncode), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    print("%s, %d thread(s), spin %d, %d runs: made %d, kept %d (%.2f%%), dropped %d, lost %d, "
          "worst unaccounted in a run %d" % (a.signal, a.threads, a.spin, a.runs, tot["made"],
                                             tot["kept"], 100.0 * tot["kept"] / max(tot["made"], 1),
                                             tot["dropped"], tot["lost"], worst))
    return 1 if worst > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
