"""A training loop without a DataLoader, for the sweep tests: --steps steps,
each marked with gpustarve's step and fetch markers (python/gpustarve), each
waiting a time its setting gives: the argument --wait-ms (swept with
--set-arg) or else the environment variable LOADER_WAIT_MS (swept with
--set), 5 ms without either; every --stall-every-th step (counted from 0)
waits --stall-ms more, as a loader that stalls now and then does. It says
the wait it used on stderr, so a test can see that the setting reached it.
The step's time is sleep: it overlaps whatever else the machine runs, so
its order between settings far apart holds on a busy machine."""
import argparse
import os
import sys
import time

import gpustarve

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--wait-ms", type=float, default=None)
p.add_argument("--stall-every", type=int, default=4)
p.add_argument("--stall-ms", type=float, default=0)
a = p.parse_args()
ms = a.wait_ms if a.wait_ms is not None else float(os.environ.get("LOADER_WAIT_MS", "5"))
sys.stderr.write("sweep_steps: wait_ms=%g\n" % ms)
for i in range(a.steps):
    gpustarve.step_begin(i)
    gpustarve.fetch_begin(i)
    stall = a.stall_ms if i % a.stall_every == a.stall_every - 1 else 0
    time.sleep((ms + stall) / 1000)
    gpustarve.fetch_end(i)
    gpustarve.step_end(i)
