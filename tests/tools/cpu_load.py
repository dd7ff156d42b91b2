"""cpu_load.py — a competing load of known duty cycle for the truth tests
(tests/e2e/test_advice_truth.py, docs/testing.md "Truth tests beside a
competing load"): one process, one thread, that spends BUSY ms of its own
CPU time, then sleeps SLEEP ms, again and again.

    cpu_load.py --busy-ms 100 --sleep-ms 0    one steady busy process (a CPU burner)
    cpu_load.py --busy-ms 2 --sleep-ms 8      a process that sleeps and wakes

--cpu N pins it to CPU N; --seconds S ends it after S seconds (else it runs
until SIGTERM or SIGINT). It prints "ready PID" and flushes once it runs,
so a test starts its work after the load, not beside its start-up. At its
end it prints "done BUSY_S WALL_S": the CPU time it took and its wall time,
from which the duty it got is BUSY_S / WALL_S.

Busy time is the thread's own CPU time (time.thread_time), so on a busy
machine it takes the same CPU and more wall time, as a real job's work does.
Must never: write anything but those two lines, or outlive --seconds."""
import argparse
import os
import signal
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy-ms", type=float, required=True)
    ap.add_argument("--sleep-ms", type=float, default=0)
    ap.add_argument("--cpu", type=int, default=-1)
    ap.add_argument("--seconds", type=float, default=0)
    a = ap.parse_args()
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    t0, c0 = time.monotonic(), time.thread_time()
    print("ready %d" % os.getpid(), flush=True)
    x = 1.0
    while not stop and (a.seconds <= 0 or time.monotonic() - t0 < a.seconds):
        end = time.thread_time() + a.busy_ms / 1e3
        while time.thread_time() < end and not stop:
            for _ in range(200):
                x = x * 1.0000001 + 1e-9
        if a.sleep_ms > 0 and not stop:
            time.sleep(a.sleep_ms / 1e3)
    print("done %.3f %.3f" % (time.thread_time() - c0, time.monotonic() - t0), flush=True)
    return 0 if x > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
