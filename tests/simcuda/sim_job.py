"""A torchrun-like launcher for jobs of simulated ranks (tests/simcuda/README.md,
"Collectives across ranks").

Usage: sim_job.py [--nproc N] [--meet FILE] [--rank R ARG]... [--rank-env R K=V]...
                  -- PROGRAM ARG...

Starts N copies of PROGRAM (with its ARGs, plus each --rank R ARG given for
rank R, in order) as ranks 0..N-1 of one job, the way torchrun does: RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and MASTER_ADDR/PORT in each
rank's environment, and SIMCUDA_COLLECTIVES naming the file where the
simulated ranks meet at each collective (FILE, else a new one in a
temporary folder, removed at the end). --rank-env R K=V sets K for rank R
alone (GPUSTARVE_TEST_HOST=node1, say). Waits for every rank; exits with the
first failing rank's status, 0 when all succeed.
"""
import os
import subprocess
import sys
import tempfile


def parse(argv):
    nproc, meet, extra, envs = 4, None, {}, {}
    i = 0
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a == "--nproc":
            nproc = int(argv[i + 1])
            i += 2
        elif a == "--meet":
            meet = argv[i + 1]
            i += 2
        elif a == "--rank":
            extra.setdefault(int(argv[i + 1]), []).append(argv[i + 2])
            i += 3
        elif a == "--rank-env":
            k, v = argv[i + 2].split("=", 1)
            envs.setdefault(int(argv[i + 1]), {})[k] = v
            i += 3
        else:
            sys.exit("sim_job.py: unknown option %s" % a)
    if i >= len(argv) - 1:
        sys.exit(__doc__)
    return nproc, meet, extra, envs, argv[i + 1:]


def main():
    nproc, meet, extra, envs, cmd = parse(sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="sim_job-") as tmp:
        meet = meet or os.path.join(tmp, "collectives")
        procs = []
        for r in range(nproc):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc),
                       LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT="29500", SIMCUDA_COLLECTIVES=meet)
            env.update(envs.get(r, {}))
            procs.append(subprocess.Popen(cmd + extra.get(r, []), env=env))
        rcs = [p.wait() for p in procs]
    bad = [rc for rc in rcs if rc != 0]
    sys.exit(bad[0] if bad else 0)


if __name__ == "__main__":
    main()
