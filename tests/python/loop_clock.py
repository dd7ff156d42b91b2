"""The test loops' own stopwatch (tests/python/loop_*.py): what each script
times itself, to hold gpustarve's report against (tests/python/test_loops.py).

Each thread that loads keeps a Parts account of its work per unit (a
sample, a work item, a batch), cut the way docs/report-schema.md ("Measured
time") cuts a loader's batch, from the thread's own clocks:

    io       wall time inside the script's file reads
    cpu      its CPU time (time.thread_time_ns) outside those reads
    runq     waiting for a CPU (run_delay of /proc/thread-self/schedstat)
             outside those reads
    fault    off-CPU time in units where the thread took major page
             faults (resource.getrusage(RUSAGE_THREAD).ru_majflt) that
             made the storage read (read_bytes of /proc/thread-self/io:
             a forked worker's first touches of its libraries fault
             without reading)
    blocked  the rest of the unit's wall time: off-CPU without faults
             (sleeps, the GIL, locks)

and writes its running totals after every unit (Parts.emit: into a file of
LOOP_PARTS_DIR, else a line `loop-part {json}` on stderr; forked DataLoader
workers end with os._exit). The main thread writes `loop {json}` at the
end with its steps.

RATIONALE: schedstat is read with raw system calls through ctypes: the
script's own clock reads must not show up in the trace as file I/O (open
and read are hooked; syscall() is not).

Must never: import gpustarve or torch (the scripts do), or read a file
through a hooked call.
"""
import ctypes
import json
import os
import platform
import resource
import struct
import threading
import time

# openat, read, close
_NR = {"x86_64": (257, 0, 3), "aarch64": (56, 63, 57)}.get(platform.machine())
_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_AT_FDCWD = -100
_PATH = b"/proc/thread-self/schedstat"


def _proc(path, size=128):
    """A small /proc file of this thread, read with raw system calls."""
    if _NR is None:
        return b""
    fd = _syscall(ctypes.c_long(_NR[0]), ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(path),
                  ctypes.c_int(os.O_RDONLY | os.O_CLOEXEC))
    if fd < 0:
        return b""
    buf = ctypes.create_string_buffer(size)
    n = _syscall(ctypes.c_long(_NR[1]), ctypes.c_int(fd), buf, ctypes.c_size_t(size - 1))
    _syscall(ctypes.c_long(_NR[2]), ctypes.c_int(fd))
    return buf.raw[:max(n, 0)]


def run_delay_ns():
    """This thread's time runnable but not running, ns (0 without schedstat)."""
    f = _proc(_PATH).split()
    return int(f[1]) if len(f) > 1 else 0


def storage_read():
    """Bytes this thread made the storage read (task io's read_bytes)."""
    for line in _proc(b"/proc/thread-self/io", 512).splitlines():
        if line.startswith(b"read_bytes:"):
            return int(line.split()[1])
    return 0


def majflt():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_majflt


class Clocks(object):
    """One reading of the calling thread's clocks. RATIONALE: the wall
    clock is read last at a beginning and first at an end, so the window
    timed is the code between (a system call's return is where a waiting
    thread takes the CPU: the other clocks' reads would draw preemptions
    into the window otherwise, and a file read's time would hold them)."""
    __slots__ = ("wall", "cpu", "runq", "flt", "rd")

    def __init__(self, end=False, storage=False):
        if end:
            self.wall = time.perf_counter_ns()
        self.cpu = time.thread_time_ns()
        self.runq = run_delay_ns()
        self.flt = majflt()
        self.rd = storage_read() if storage else 0
        if not end:
            self.wall = time.perf_counter_ns()


KEYS = ("units", "wall", "io", "cpu", "runq", "fault", "blocked", "majflt")
UNIT_KEYS = ("end", "wall", "io", "cpu", "runq", "fault", "blocked")
# a parts file: the totals and those after the skipped units, then each unit
TOTALS = struct.Struct("<%dq" % (2 * len(KEYS)))
UNIT = struct.Struct("<%dq" % len(UNIT_KEYS))


class Parts(object):
    """Running totals (ns) of one thread's units of loading work."""

    def __init__(self, what, keep=False, skip=0):
        self.what = what
        self.t = dict.fromkeys(KEYS, 0)
        self.units = [] if keep else None  # keep: each unit's parts too
        # the totals after the first `skip` units (a loader's start-up: the
        # batches it prefetched before the report's measured steps)
        self.skip = skip
        self.skipped = dict.fromkeys(KEYS, 0)
        self._in = None
        self._io = [0, 0, 0]  # wall, cpu, runq inside reads of the open unit

    def begin(self, reads_inside=False):
        """reads_inside: the clock reads' own time (system calls, where
        a preempted thread takes the CPU back) inside the unit, as they
        are inside a span the tool measures around the unit."""
        self._in = Clocks(end=reads_inside, storage=True)
        self._io = [0, 0, 0]

    def read(self, f, *args, also=None):
        """f.read(*args), timed as file I/O (of `also` too: a Parts whose
        unit encloses this one's)."""
        a = Clocks()
        data = f.read(*args)
        b = Clocks(end=True)
        for p in (self, also) if also is not None else (self,):
            p._io[0] += b.wall - a.wall
            p._io[1] += b.cpu - a.cpu
            p._io[2] += b.runq - a.runq
        return data

    @property
    def open(self):
        return self._in is not None

    def end(self, emit=True, reads_inside=False):
        b = Clocks(end=not reads_inside, storage=True)
        a, self._in = self._in, None
        wall = b.wall - a.wall
        io = min(self._io[0], wall)
        cpu = max(0, min(b.cpu - a.cpu - self._io[1], wall - io))
        runq = max(0, min(b.runq - a.runq - self._io[2], wall - io - cpu))
        off = wall - io - cpu - runq
        flt = b.flt - a.flt if b.rd > a.rd else 0
        t = self.t
        t["units"] += 1
        t["wall"] += wall
        t["io"] += io
        t["cpu"] += cpu
        t["runq"] += runq
        t["majflt"] += flt
        if flt:
            t["fault"] += off
        else:
            t["blocked"] += off
        unit = {"end": b.wall, "wall": wall, "io": io, "cpu": cpu, "runq": runq,
                "fault": off if flt else 0, "blocked": 0 if flt else off}
        if self.units is not None:
            self.units.append(unit)
        if t["units"] == self.skip:
            self.skipped = dict(t)
        if emit:
            self.emit(unit)
        return wall, cpu + self._io[1], runq + self._io[2]

    def emit(self, unit=None):
        """The running totals: into LOOP_PARTS_DIR/<pid>-<tid>-<what>.parts
        (KEYS as 8 little-endian int64 at offset 0, then the same after the
        skipped units, rewritten each time: TOTALS; then each unit as
        UNIT_KEYS, int64, at its place: UNIT, `end` its wall clock's end
        reading)
        when set, else a `loop-part` line on stderr. RATIONALE: a worker
        writes them after every unit (it ends with os._exit); a line on a
        pipe the harness drains late can block the worker inside its next
        batch, and JSON costs it CPU there: a file's pwrite does neither."""
        d = os.environ.get("LOOP_PARTS_DIR")
        if d and self.units is None:
            if getattr(self, "_fd", None) is None or self._pid != os.getpid():
                name = "%d-%d-%s.parts" % (os.getpid(), threading.get_native_id(), self.what)
                self._fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT, 0o600)
                self._pid = os.getpid()
            vals = [self.t[k] for k in KEYS] + [self.skipped[k] for k in KEYS]
            os.pwrite(self._fd, TOTALS.pack(*vals), 0)
            if unit is not None:
                os.pwrite(self._fd, UNIT.pack(*(unit[k] for k in UNIT_KEYS)),
                          TOTALS.size + UNIT.size * (self.t["units"] - 1))
            return
        rec = dict(self.t, what=self.what, pid=os.getpid(), tid=threading.get_native_id(),
                   skipped=self.skipped)
        if self.units is not None:
            rec["each"] = self.units
        os.write(2, ("loop-part %s\n" % json.dumps(rec)).encode())


def read_parts(d):
    """{(pid, tid, what): totals} of the .parts files in d (Parts.emit)."""
    out = {}
    for name in os.listdir(d):
        if not name.endswith(".parts"):
            continue
        pid, tid, what = name[:-6].split("-", 2)
        with open(os.path.join(d, name), "rb") as f:
            raw = f.read()
        vals = TOTALS.unpack_from(raw)
        units = raw[TOTALS.size:len(raw) - (len(raw) - TOTALS.size) % UNIT.size]
        each = [dict(zip(UNIT_KEYS, u)) for u in UNIT.iter_unpack(units)]
        n = len(KEYS)
        out[(int(pid), int(tid), what)] = dict(zip(KEYS, vals[:n]), what=what, pid=int(pid),
                                               tid=int(tid), skipped=dict(zip(KEYS, vals[n:])),
                                               each=each)
    return out


def burn(ms):
    """ms of this thread's own CPU time."""
    end = time.thread_time_ns() + int(ms * 1e6)
    x = 1
    while time.thread_time_ns() < end:
        for _ in range(100):
            x = (x * 6364136223846793005 + 1) & 0xFFFFFFFFFFFFFFFF
    return x


class Steps(object):
    """The main thread's steps: wall time and time waiting for data (the
    script's own data wait), with the wait cut into CPU, run-queue delay
    and the rest (blocked)."""

    def __init__(self):
        self.steps = []
        self._t0 = None
        self._wait = [0, 0, 0, 0]

    def start(self):
        self._t0 = time.perf_counter_ns()
        self._wait = [0, 0, 0, 0]

    def wait_begin(self):
        self._w = Clocks()

    def wait_end(self):
        b = Clocks(end=True)
        a = self._w
        self._wait[0] += b.wall - a.wall
        self._wait[1] += b.cpu - a.cpu
        self._wait[2] += b.runq - a.runq

    def add_wait(self, wall, cpu, runq):
        """A wait the caller timed itself (Parts.end's answer)."""
        self._wait[0] += wall
        self._wait[1] += cpu
        self._wait[2] += runq

    def end(self):
        wall = time.perf_counter_ns() - self._t0
        w, c, q = self._wait[0], self._wait[1], self._wait[2]
        self.steps.append({"wall": wall, "wait": w, "wait_cpu": c, "wait_runq": q,
                           "wait_blocked": max(0, w - c - q)})

    def emit(self, **extra):
        rec = dict(extra, steps=self.steps, pid=os.getpid())
        os.write(2, ("loop %s\n" % json.dumps(rec)).encode())


class SimGPU(object):
    """The simulated GPU (tests/simcuda) driven through ctypes, for a loop
    run on it: each step copies its batch to the device (pageable) and runs
    one kernel, `loop_kernel` (its time: SIMCUDA_KERNEL_US), then waits for
    it. The runtime is loaded by path from `libdir` with RTLD_GLOBAL and its
    calls made by name through the process's global scope, so that
    gpustarve's hooks (preloaded first) see them, as they see a program's."""

    class Dim3(ctypes.Structure):
        _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]

    def __init__(self, libdir, max_bytes=1 << 22):
        self._rt = ctypes.CDLL(os.path.join(libdir, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
        g = ctypes.CDLL(None)
        self._memcpy = g.cudaMemcpy
        self._memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self._sync = g.cudaDeviceSynchronize
        rt = self._rt
        # getattr: the names start with two underscores (a class would mangle them)
        reg_bin = getattr(rt, "__cudaRegisterFatBinary")
        reg_fn = getattr(rt, "__cudaRegisterFunction")
        reg_bin.restype = ctypes.c_void_p
        reg_bin.argtypes = [ctypes.c_void_p]
        reg_fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.c_int] + [ctypes.c_void_p] * 5
        rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, SimGPU.Dim3, SimGPU.Dim3, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_void_p]
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self._fatbin = ctypes.create_string_buffer(64)
        self._stub = ctypes.create_string_buffer(8)  # the kernel's host stub: any address
        handle = reg_bin(ctypes.addressof(self._fatbin))
        reg_fn(handle, ctypes.addressof(self._stub), b"loop_kernel", b"loop_kernel", -1,
               None, None, None, None, None)
        self._dev = ctypes.c_void_p()
        if rt.cudaMalloc(ctypes.byref(self._dev), max_bytes) != 0:
            raise RuntimeError("cudaMalloc failed on the simulated GPU")
        self._max = max_bytes

    def step(self, host_array):
        """Copy host_array (a numpy array or a tensor's .numpy()) to the
        device, run the kernel, wait for it."""
        n = min(host_array.nbytes, self._max)
        if self._memcpy(self._dev, host_array.ctypes.data, n, 1) != 0:  # cudaMemcpyHostToDevice
            raise RuntimeError("cudaMemcpy failed")
        one = SimGPU.Dim3(1, 1, 1)
        if self._rt.cudaLaunchKernel(ctypes.addressof(self._stub), one, one, None, 0, None) != 0:
            raise RuntimeError("cudaLaunchKernel failed")
        self._sync()


def sim_gpu_from_env():
    """A SimGPU when LOOP_SIM_GPU names the simulated runtime's folder."""
    d = os.environ.get("LOOP_SIM_GPU")
    return SimGPU(d) if d else None
