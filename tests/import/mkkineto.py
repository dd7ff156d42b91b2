"""Write a synthetic PyTorch profiler (Kineto) trace whose answer is known by
construction, in the layout of a chosen PyTorch generation:

  --format 1.9   categories Operator/Runtime/Kernel/Memcpy/Memset, tids as
                 strings ("25738", "stream 7"), integer microseconds
  --format 2.0   cpu_op/user_annotation/cuda_runtime/kernel/gpu_memcpy,
                 integer tids, distributedInfo, flows (ac2g)
  --format 2.4   as 2.0 plus baseTimeNanoseconds and relative times with
                 nanosecond decimals ("ts": 1234.567)

Each step (ProfilerStep#N, STEP_US long) starts with a DataLoader __next__
span of LOAD_US during which the GPU is idle, then a pageable host-to-device
copy (a cudaMemcpyAsync call of COPY_CALL_US, its GPU copy COPY_US, GPU idle
outside it), then KERNELS kernels back to back of KERNEL_US each, then
idle to the step's end. So per step: data wait = LOAD_US, GPU busy =
COPY_US + KERNELS * KERNEL_US, GPU idle in the pageable copy call =
COPY_CALL_US - COPY_US.

--pad N adds N cpu_op events per step (the bulk of a real trace) to make
large files for the throughput and memory benchmarks; --quirks adds what
Kineto is known to write that is not JSON (bare N/A, nan, a raw control byte
in a name, invalid UTF-8) to checked fields of extra events.

--no-steps leaves the ProfilerStep#N ranges out (a trace recorded without
the profiler's schedule): only the DataLoader spans mark the iterations.

Usage: mkkineto.py [--steps N] [--format F] [--pad N] [--quirks] [--rank R]
                   [--gzip] [--no-steps] OUT
"""
import argparse
import gzip
import json

STEP_US = 100000
LOAD_US = 30000
COPY_CALL_US = 6000
COPY_US = 4000
KERNELS = 50
KERNEL_US = 1000
BASE_US = 1700000000000000  # a wall-clock microsecond count, as Kineto writes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--format", default="2.0", choices=["1.9", "2.0", "2.4"])
    ap.add_argument("--pad", type=int, default=0)
    ap.add_argument("--quirks", action="store_true")
    ap.add_argument("--rank", type=int, default=-1)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--bare-array", action="store_true")
    ap.add_argument("--no-steps", action="store_true")
    ap.add_argument("--kernels", type=int, default=KERNELS,
                    help="kernels per step (default %d; more than 50 overrun the step)" % KERNELS)
    a = ap.parse_args()
    old = a.format == "1.9"
    rel = a.format == "2.4"
    pid, tid, dev, stream = 4242, 4242, 0, 7
    cat = {
        "op": "Operator" if old else "cpu_op",
        "annot": "Operator" if old else "user_annotation",
        "rt": "Runtime" if old else "cuda_runtime",
        "k": "Kernel" if old else "kernel",
        "cp": "Memcpy" if old else "gpu_memcpy",
    }

    def t(us):
        if rel:  # relative to baseTimeNanoseconds, with ns decimals
            ns = int(round((us - BASE_US) * 1000))
            return "%d.%03d" % (ns // 1000, ns % 1000)
        return str(int(us))

    def tids(x):
        return '"%s"' % x if old else str(x)

    opener = gzip.open if a.gzip else open
    with opener(a.out, "wt", encoding="utf-8", errors="surrogateescape") as f:
        if a.bare_array:
            f.write("[\n")
        else:
            f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n')
            f.write('    {"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 17179869184, '
                    '"computeMajor": 8, "computeMinor": 0, "numSms": 108}\n  ],\n')
            if a.rank >= 0:
                f.write('  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 2},\n'
                        % a.rank)
            if rel:
                f.write('  "baseTimeNanoseconds": %d,\n' % (BASE_US * 1000))
            f.write('  "traceEvents": [\n')
        first = True

        def ev(s):
            nonlocal first
            f.write(("" if first else ",\n") + s)
            first = False

        ev('{"ph": "M", "name": "process_name", "pid": %d, "tid": 0, "args": {"name": "python3"}}'
           % pid)
        ev('{"ph": "M", "name": "thread_name", "pid": %d, "tid": %s, "args": {"name": "MainThread"}}'
           % (pid, tids(tid)))
        corr = 1
        gpu_lines = []
        for s in range(a.steps):
            t0 = BASE_US + s * STEP_US
            if not a.no_steps:
                ev('{"ph": "X", "cat": "%s", "name": "ProfilerStep#%d", "pid": %d, "tid": %s, '
                   '"ts": %s, "dur": %d}' % (cat["annot"], s + 1, pid, tids(tid), t(t0), STEP_US))
            ev('{"ph": "X", "cat": "%s", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter'
               '.__next__", "pid": %d, "tid": %s, "ts": %s, "dur": %d}'
               % (cat["annot"], pid, tids(tid), t(t0), LOAD_US))
            c0 = t0 + LOAD_US
            ev('{"ph": "X", "cat": "%s", "name": "cudaMemcpyAsync", "pid": %d, "tid": %s, "ts": %s, '
               '"dur": %d, "args": {"correlation": %d}}' % (cat["rt"], pid, tids(tid), t(c0),
                                                            COPY_CALL_US, corr))
            if not old:
                ev('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", '
                   '"name": "ac2g"}' % (corr, pid, tid, t(c0)))
            g0 = c0 + (COPY_CALL_US - COPY_US)
            gpu_lines.append('{"ph": "X", "cat": "%s", "name": "Memcpy HtoD (Pageable -> Device)", '
                             '"pid": %d, "tid": %s, "ts": %s, "dur": %d, "args": {"device": %d, '
                             '"stream": %d, "correlation": %d, "bytes": 4194304}}'
                             % (cat["cp"], dev, tids("stream %d" % stream) if old else stream,
                                t(g0), COPY_US, dev, stream, corr))
            corr += 1
            k0 = c0 + COPY_CALL_US
            for k in range(a.kernels):
                ev('{"ph": "X", "cat": "%s", "name": "cudaLaunchKernel", "pid": %d, "tid": %s, '
                   '"ts": %s, "dur": 5, "args": {"correlation": %d}}'
                   % (cat["rt"], pid, tids(tid), t(k0 + k * 10), corr))
                gpu_lines.append('{"ph": "X", "cat": "%s", "name": "volta_sgemm_128x64_nn", '
                                 '"pid": %d, "tid": %s, "ts": %s, "dur": %d, "args": {"device": %d, '
                                 '"stream": %d, "correlation": %d}}'
                                 % (cat["k"], dev, tids("stream %d" % stream) if old else stream,
                                    t(k0 + k * KERNEL_US * KERNELS // a.kernels),
                                    KERNEL_US * KERNELS // a.kernels, dev, stream, corr))
                corr += 1
            for p in range(a.pad):
                ev('{"ph": "X", "cat": "%s", "name": "aten::add_", "pid": %d, "tid": %s, '
                   '"ts": %s, "dur": 3, "args": {"External id": %d, "Input Dims": [[256, 1024], '
                   '[256, 1024], []], "Input type": ["float", "float", "Scalar"]}}'
                   % (cat["op"], pid, tids(tid), t(k0 + 10 + (p % 4000) * 10), p))
            if a.quirks:
                ev('{"ph": "X", "cat": "%s", "name": "odd\x01name", "pid": %d, "tid": %s, '
                   '"ts": %s, "dur": 1, "args": {"est. achieved occupancy %%": N/A, '
                   '"warps": nan}}' % (cat["op"], pid, tids(tid), t(k0 + 20)))
                ev('{"ph": "X", "cat": "%s", "name": "bad \udcff\udcfe utf8", "pid": %d, '
                   '"tid": %s, "ts": %s, "dur": 1}' % (cat["op"], pid, tids(tid), t(k0 + 30)))
        # Kineto writes GPU activity after the CPU side
        for line in gpu_lines:
            ev(line)
        ev('{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": %s}'
           % t(BASE_US + a.steps * STEP_US + 1000))
        if a.bare_array:
            f.write("\n]\n")
        else:
            f.write('\n  ],\n  "traceName": "synthetic"\n}\n')


if __name__ == "__main__":
    main()
