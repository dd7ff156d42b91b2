"""Tracing must never change the traced program: a killed child keeps what it
flushed, a full disk or an unwritable directory leave output and exit code
unchanged with at most one warning line; damaged traces give clear errors."""
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import time

import pytest

import gstest
from conftest import CLI, PRELOAD, PY, READ_DATASET, clean_env, dump, run_plain, run_traced

# The parent kills the child once the child's reads are on disk, as the
# collector's periodic flush (GPUSTARVE_FLUSH_MS) put them there: it watches
# the child's trace with `gpustarve dump` (run untraced) instead of guessing
# how long a flush takes on a loaded machine.
KILL_SCRIPT = r"""
import glob, json, os, signal, subprocess, sys, time
path, cli, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
run_dir = os.environ["GPUSTARVE_DIR"]
untraced = {k: v for k, v in os.environ.items() if not k.startswith("GPUSTARVE_")}
untraced["GPUSTARVE_DISABLE"] = "1"   # the collector passes exec on: it must stay silent
pid = os.fork()
if pid == 0:
    fd = os.open(path, os.O_RDONLY)
    n = 0
    while True:
        b = os.pread(fd, 4096, n)
        if not b:
            break
        n += len(b)
    os.write(1, b"child read %d\n" % n)
    time.sleep(600)         # killed once its reads are on disk
    os._exit(0)

def flushed():
    for f in glob.glob(os.path.join(run_dir, "*-%d.gst" % pid)):
        p = subprocess.run([cli, "dump", "--json", f], capture_output=True, env=untraced)
        recs = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
        if sum(max(r.get("ret", 0), 0) for r in recs
               if r.get("path") == path and r["kind"].startswith("pread")) == want:
            return True
    return False

deadline = time.monotonic() + 120
while not flushed():
    if time.monotonic() > deadline:
        print("the child's reads never reached its trace")
        break
    time.sleep(0.05)
os.kill(pid, signal.SIGKILL)
_, status = os.waitpid(pid, 0)
print("child killed", os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)
"""


def test_sigkilled_child_keeps_flushed_events(built, tmp_path):
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(10 * 4096 + 100))
    p = run_traced([PY, "-c", KILL_SCRIPT, str(data), CLI, str(10 * 4096 + 100)], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert b"child killed True" in p.stdout
    recs, err, code = dump(tmp_path / "run", check=False)
    assert code == 0, err
    procs = [r for r in recs if r["kind"] == "process"]
    assert len(procs) == 2
    child = [r for r in procs if r["ppid"] == procs[0]["pid"] or r["ppid"] == procs[1]["pid"]]
    assert child
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"].startswith("pread")]
    assert sum(max(r["ret"], 0) for r in reads) == 10 * 4096 + 100
    assert {r["pid"] for r in reads} == {child[0]["pid"]}


def _mount(kind_opts, where):
    return subprocess.run(["mount", "-t", "tmpfs", "-o", kind_opts, "tmpfs", where],
                          capture_output=True).returncode == 0


def _tmpfs(size):
    """A tmpfs of `size` mounted on a new directory, for a fixture to yield."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tempfile.mkdtemp(prefix="gs_tmpfs_")
    if not _mount("size=" + size, where):
        os.rmdir(where)
        pytest.skip("cannot mount tmpfs here")
    yield where
    subprocess.run(["umount", where])
    os.rmdir(where)


@pytest.fixture
def small_tmpfs():
    yield from _tmpfs("96k")


@pytest.fixture
def readonly_dir():
    if os.geteuid() != 0:
        where = tempfile.mkdtemp(prefix="gs_ro_")
        os.chmod(where, 0o555)
        yield where
        os.chmod(where, 0o755)
        os.rmdir(where)
        return
    where = tempfile.mkdtemp(prefix="gs_ro_")
    if not _mount("ro,size=64k", where):
        os.rmdir(where)
        pytest.skip("cannot mount a read-only tmpfs here")
    yield where
    subprocess.run(["umount", where])
    os.rmdir(where)


def warnings_of(stderr):
    return [l for l in stderr.decode().splitlines() if "gpustarve" in l and "warning" in l]


def test_full_disk_changes_nothing(built, dataset, small_tmpfs):
    root, _ = dataset
    cmd = [READ_DATASET, root, "--mode", "pread", "--chunk", "512", "--workers", "2",
           "--exit", "5"]
    plain = run_plain(cmd)
    traced = run_traced(cmd, os.path.join(small_tmpfs, "run"))
    assert traced.returncode == plain.returncode == 5
    assert traced.stdout == plain.stdout
    assert len(warnings_of(traced.stderr)) <= 1
    # what did get written is still readable up to its last complete frame
    dump(os.path.join(small_tmpfs, "run"), check=False)


@pytest.fixture
def tmpfs_64m():
    yield from _tmpfs("64m")


# A program that writes into the directory its trace goes to: a 40 MiB
# checkpoint while a forked worker lives (workers 0), or WORKERS forked
# workers that each write 2 MiB once all are started. It prints what it
# wrote, a listing of the directory's files with their digests, and exits 1
# when a write failed.
WRITES_SCRIPT = r"""
import hashlib, os, sys
out, workers = sys.argv[1], int(sys.argv[2])
def write(name, mib):
    try:
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(range(256)) * (mib * 4096))
        return 0
    except OSError as e:
        print("%s: %s" % (name, e.strerror), flush=True)
        return 1
r, w = os.pipe()
pids = []
for i in range(max(workers, 1)):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(write("part%02d" % i, 2) if workers else 0)
    pids.append(pid)
os.close(r)
rc = write("ckpt", 40) if workers == 0 else 0
os.write(w, b"x" * len(pids))
for pid in pids:
    rc |= os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
for name in sorted(os.listdir(out)):
    if os.path.isfile(os.path.join(out, name)):
        with open(os.path.join(out, name), "rb") as f:
            print(name, hashlib.sha256(f.read()).hexdigest())
sys.exit(rc)
"""


@pytest.mark.parametrize("workers", [0, 20])
def test_tracing_takes_no_space_the_program_needs(built, tmpfs_64m, workers):
    """A 64 MiB file system holds the run directory and the program's output:
    a 40 MiB checkpoint written while a forked worker lives, or 20 forked
    workers writing 2 MiB each, behave exactly as untraced (exit status,
    output, files). Each traced process once set 17.5 MiB aside for its live
    file without looking at the free space, and the checkpoint failed with
    ENOSPC. One warning line says that little was set aside."""
    out = os.path.join(tmpfs_64m, "out")
    os.mkdir(out)
    cmd = [PY, "-c", WRITES_SCRIPT, out, str(workers)]
    plain = run_plain(cmd)
    assert plain.returncode == 0, plain.stdout.decode()
    shutil.rmtree(out)
    os.mkdir(out)
    traced = run_traced(cmd, os.path.join(tmpfs_64m, "run"))
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout)
    theirs = [l for l in traced.stderr.decode().splitlines() if "gpustarve" not in l]
    assert theirs == plain.stderr.decode().splitlines()
    warned = warnings_of(traced.stderr)
    assert len(warned) == 1 and "MiB free" in warned[0], warned
    procs = [r for r in dump(os.path.join(tmpfs_64m, "run"))[0] if r["kind"] == "process"]
    assert len(procs) == max(workers, 1) + 1  # traced all the same
    # every process ended with everything written: no live file is left
    assert not [f for f in os.listdir(os.path.join(tmpfs_64m, "run")) if ".live" in f]


@pytest.fixture
def ext4_1200m(tmp_path):
    """A 1200 MiB ext4 file system on a loop device (a sparse image: blocks
    fallocate'd there take no memory and no I/O)."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        pytest.skip("a loop-mounted ext4 needs root and mkfs.ext4")
    img, where = tmp_path / "fs.img", tmp_path / "mnt"
    where.mkdir()
    with open(img, "wb") as f:
        f.truncate(1200 << 20)
    if subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], capture_output=True).returncode or \
            subprocess.run(["mount", "-o", "loop", str(img), str(where)],
                           capture_output=True).returncode:
        pytest.skip("cannot mount a loop file system here")
    yield str(where)
    subprocess.run(["umount", str(where)])


# Fills its file system to 8 MiB from full (fallocate), then makes 20,000
# preads, which the collector can no longer write.
FILL_SCRIPT = r"""
import os, sys
out, data = sys.argv[1], sys.argv[2]
st = os.statvfs(out)
fd = os.open(os.path.join(out, "fill"), os.O_RDWR | os.O_CREAT, 0o600)
os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize - (8 << 20))
f = os.open(data, os.O_RDONLY)
for i in range(20000):
    os.pread(f, 512, 0)
print("done")
"""


def test_nearly_full_file_system_stops_the_trace_and_gives_space_back(built, ext4_1200m,
                                                                     tmp_path):
    """A process sets ring slots aside in its live file (over 1 GiB free),
    then the program fills the file system to 8 MiB from full: the trace
    stops (the events are counted lost, one warning line) and, at the end,
    the live file is its header page alone (the count), its slots' blocks
    given back."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(4096))
    run_dir = os.path.join(ext4_1200m, "run")
    p = run_traced([PY, "-c", FILL_SCRIPT, ext4_1200m, str(data)], run_dir)
    assert (p.returncode, p.stdout) == (0, b"done\n"), p.stderr.decode()
    warned = warnings_of(p.stderr)
    assert len(warned) == 1 and ("nearly full" in warned[0] or "MiB free" in warned[0]), warned
    lives = [f for f in os.listdir(run_dir) if f.endswith(".live")]
    assert len(lives) == 1 and os.path.getsize(os.path.join(run_dir, lives[0])) == 4096
    assert os.stat(os.path.join(run_dir, lives[0])).st_blocks <= 8  # 4 KiB on disk
    _, _, _, lost = _totals_line(p.stderr)
    assert lost > 0
    recs, _, _ = dump(run_dir, check=False)
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"].startswith("pread")]
    assert len(reads) < 20000


@pytest.mark.parametrize("how", ["preloaded by hand", "python"])
def test_unwritable_directory_changes_nothing(built, dataset, readonly_dir, how):
    root, _ = dataset
    if how == "python":
        cmd = [PY, "-c", "import sys; print(sum(len(open(sys.argv[1]+'/'+f,'rb').read()) "
                         "for f in __import__('os').listdir(sys.argv[1]))); sys.exit(4)", root]
    else:
        cmd = [READ_DATASET, root, "--workers", "2", "--exit", "4"]
    plain = run_plain(cmd)
    env = clean_env(LD_PRELOAD=PRELOAD, GPUSTARVE_DIR=os.path.join(readonly_dir, "run"))
    traced = run_plain(cmd, env=env)
    assert traced.returncode == plain.returncode == 4
    assert traced.stdout == plain.stdout
    assert len(warnings_of(traced.stderr)) == 1
    other = [l for l in traced.stderr.decode().splitlines() if l not in
             plain.stderr.decode().splitlines()]
    assert other == warnings_of(traced.stderr)


def test_uncreatable_run_directory_runs_nothing(built, tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "file").write_text("")
    p = subprocess.run([CLI, "run", "-o", str(tmp_path / "file" / "such" / "dir"), "--",
                        "touch", str(marker)], capture_output=True, env=clean_env())
    assert p.returncode == 2
    assert b"file/such" in p.stderr and b"Not a directory" in p.stderr
    assert not marker.exists()


def _real_trace(tmp_path, dataset):
    root, _ = dataset
    run = tmp_path / "run"
    assert run_traced([READ_DATASET, root, "--chunk", "1024"], run).returncode == 0
    files = sorted(run.glob("*.gst"))
    assert len(files) == 1
    return files[0]


def test_truncated_trace_gives_partial_dump_and_exit_2(built, dataset, tmp_path):
    f = _real_trace(tmp_path, dataset)
    whole, _, code = dump(f)
    assert code == 0
    size = f.stat().st_size
    f_cut = tmp_path / "cut.gst"
    shutil.copy(f, f_cut)
    os.truncate(f_cut, size - 7)
    part, err, code = dump(f_cut, check=False)
    assert code == 2
    assert "cut.gst" in err and "offset" in err
    # the reader's closing record counts what the damaged last frame held
    closing = part[-1]
    assert closing["kind"] == "drops" and closing["lost"] > 0, closing
    part = part[:-1]
    assert 0 < len(part) < len(whole)
    assert part == whole[:len(part)] or part[1:] == whole[1:len(part)]


def test_garbage_file_is_refused(built, tmp_path):
    g = tmp_path / "garbage.gst"
    g.write_bytes(os.urandom(5000))
    _, err, code = dump(g, check=False)
    assert code == 2
    assert "garbage.gst" in err


def test_empty_directory_is_refused(built, tmp_path):
    (tmp_path / "empty").mkdir()
    _, err, code = dump(tmp_path / "empty", check=False)
    assert code == 2
    assert err.strip()


LEFTOVER = r"""
import os, sys, time
parent = os.getpid()
if os.fork() == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)                 # let the caller's pipes close: nothing
    os.dup2(null, 2)                 # but gpustarve run waits for this child
    while os.getppid() == parent:    # still running when the command returns:
        time.sleep(0.01)             # reads only once its parent has exited
    with open(sys.argv[1], "rb") as f:
        f.read()
    os._exit(0)
print("parent done")
"""


def test_run_waits_for_processes_left_behind(built, tmp_path):
    """A child still running when the command exits (a DataLoader worker
    shutting down) has its whole trace on disk when `run` returns."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(12345))
    p = run_traced([PY, "-c", LEFTOVER, str(data)], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"parent done\n"
    recs, _, code = dump(tmp_path / "run")
    assert code == 0
    procs = [r for r in recs if r["kind"] == "process"]
    assert len(procs) == 2
    assert len([r for r in recs if r["kind"] == "exit"]) == 2
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"] == "read"]
    assert sum(max(r["ret"], 0) for r in reads) == 12345


# ---- privacy (docs/collector-safety.md) ---------------------------------------------

def test_run_directory_and_traces_are_private(built, tmp_path):
    """Traces hold every path read and the whole command line: 0700 / 0600."""
    data = tmp_path / "blob"
    data.write_bytes(b"x" * 100)
    p = run_traced([PY, "-c", "import sys; open(sys.argv[1], 'rb').read()", str(data),
                    "--api-key=SECRET"], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o700
    files = list((tmp_path / "run").glob("*.gst"))
    assert files
    for f in files:
        assert f.stat().st_mode & 0o777 == 0o600, f
    # the default directory of `run` too
    p = subprocess.run([CLI, "run", "--", "true"], cwd=tmp_path, capture_output=True,
                       env=clean_env())
    assert p.returncode == 0, p.stderr.decode()
    made = [d for d in tmp_path.iterdir() if d.name.startswith("gpustarve-")]
    assert len(made) == 1 and made[0].stat().st_mode & 0o777 == 0o700


def _future_default_dirs(where, seconds=120):
    """The default directory names the collector may pick in the next
    `seconds` (gpustarve-YYYYMMDD-HHMMSS, local time)."""
    import time
    now = time.time()
    return [os.path.join(where, time.strftime("gpustarve-%Y%m%d-%H%M%S", time.localtime(now + i)))
            for i in range(seconds)]


@pytest.mark.parametrize("trap", ["other user's", "group-writable"])
def test_default_directory_planted_by_someone_else_is_refused(built, tmp_path, trap):
    """Under a plain LD_PRELOAD the collector picks gpustarve-<time> in the
    working directory: if it already exists and is not private to the user,
    nothing is written there (one warning; the program runs as untraced)."""
    if trap == "other user's" and os.geteuid() != 0:
        pytest.skip("making a directory owned by someone else needs root")
    work = tmp_path / "shared"
    work.mkdir()
    planted = _future_default_dirs(str(work))
    for d in planted:
        os.mkdir(d)
        if trap == "other user's":
            os.chown(d, 65534, 65534)
            os.chmod(d, 0o777)
        else:
            os.chmod(d, 0o770)
    cmd = [PY, "-c", "import sys; print(len(open(sys.argv[0] if False else '/proc/self/cmdline','rb').read()) > 0); sys.exit(3)"]
    env = clean_env(LD_PRELOAD=PRELOAD)
    plain = run_plain(cmd, env=clean_env(), cwd=str(work))
    traced = run_plain(cmd, env=env, cwd=str(work))
    assert traced.returncode == plain.returncode == 3
    assert traced.stdout == plain.stdout
    assert len(warnings_of(traced.stderr)) == 1
    assert b"not private to this user" in traced.stderr
    for d in planted:
        assert os.listdir(d) == [], d


PERFMAP_TRAP = r"""
import os, sys
path = "/tmp/perf-%d.map" % os.getpid()
kind = sys.argv[1]
if kind == "fifo":
    os.mkfifo(path)
elif kind == "symlink":
    os.symlink(sys.argv[2], path)
elif kind == "foreign":
    with open(path, "w") as f:
        f.write("7f0000000000 10 py::secret_function\n")
    os.chown(path, 65534, 65534)
print("planted", kind)
"""


@pytest.mark.parametrize("kind", ["fifo", "symlink", "foreign"])
def test_perf_map_traps_are_not_followed(built, tmp_path, kind):
    """/tmp is everyone's: a FIFO at /tmp/perf-PID.map must not hang the exit,
    a symlink must not copy its target into the run, a file of another user
    is not ours to copy."""
    if kind == "foreign" and os.geteuid() != 0:
        pytest.skip("making a file owned by someone else needs root")
    secret = tmp_path / "secret"
    secret.write_text("root-only secret\n")
    os.chmod(secret, 0o600)
    try:
        p = subprocess.run([CLI, "run", "--stacks", "-o", str(tmp_path / "run"), "--", PY, "-c",
                            PERFMAP_TRAP, kind, str(secret)],
                           capture_output=True, env=clean_env(), timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        assert b"planted" in p.stdout
        copies = list((tmp_path / "run").glob("*.perfmap"))
        assert copies == [], [c.read_bytes() for c in copies]
    finally:
        for f in os.listdir("/tmp"):
            if f.startswith("perf-") and f.endswith(".map"):
                full = os.path.join("/tmp", f)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                import stat as st_mod
                if st_mod.S_ISFIFO(st.st_mode) or st_mod.S_ISLNK(st.st_mode) or st.st_uid == 65534:
                    os.unlink(full)


# ---- the trace descriptor is never the program's (docs/collector-safety.md) ----------

def noshare():
    """hk_noshare: runs a program where unshare(CLONE_FILES) is refused (as
    in some containers), so the trace file stays in the program's table."""
    path = os.path.join(gstest.BUILD, "tests", "hooks", "hk_noshare")
    gstest.require(path)
    return path


def table_wrap(table):
    """The command prefix for a test of the collector's descriptor table:
    "own" (unshare allowed) or "shared" (refused)."""
    return [noshare()] if table == "shared" else []


FORK_CLOSE_EXEC = r"""
import os, subprocess, sys
data = sys.argv[1]
with open(data, "rb") as f:
    f.read()
# preexec_fn makes subprocess fork (not vfork); the child closes every
# descriptor (close_fds) and execs
p = subprocess.run(["/bin/cat", data], stdout=subprocess.PIPE, preexec_fn=lambda: None)
assert p.stdout == open(data, "rb").read()
os.closerange(3, 4096)
fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(200)]
assert fds == list(range(3, 203)), fds[:5]
with open(data, "rb") as f:
    f.read()
print("done")
"""


@pytest.mark.parametrize("table", ["own", "shared"])
def test_child_that_closes_everything_and_execs(built, tmp_path, table):
    """A forked child that closes every descriptor and execs: no warning,
    tracing goes on in parent and child, and the parent's numbering is its
    own after it closes everything too — with the trace file in a table of
    its own, and in the program's table (unshare refused, as in containers)."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(5000))
    wrap = table_wrap(table)
    p = run_traced(wrap + [PY, "-c", FORK_CLOSE_EXEC, str(data)], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"done\n"
    assert warnings_of(p.stderr) == []
    recs, _, code = dump(tmp_path / "run")
    assert code == 0
    procs = [r for r in recs if r["kind"] == "process" and not r["argv"][0].endswith("hk_noshare")]
    assert len(procs) == 3  # python, the forked child, cat after its exec
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"] == "read"]
    assert {r["pid"] for r in reads} >= {procs[0]["pid"]}
    assert sum(max(r["ret"], 0) for r in reads if r["pid"] == procs[0]["pid"]) >= 2 * 5000
    assert len([r for r in recs if r["kind"] == "exit"]) >= 2


def _collector_tables(pid):
    """{tid: descriptor numbers} of the process's threads named gpustarve
    (the writer), and the numbers of its main thread's table."""
    writers = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
            fds = {int(x) for x in os.listdir("/proc/%d/task/%s/fd" % (pid, tid))}
        except OSError:
            continue  # the thread ended
        if comm == "gpustarve":
            writers[int(tid)] = fds
    return writers, {int(x) for x in os.listdir("/proc/%d/fd" % pid)}


def _wait_writer_in_own_table(pid, fd, deadline_s=60):
    """Wait until the writer thread of pid holds no copy of fd while the
    program's table still has it (the writer left the program's table)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        writers, program = _collector_tables(pid)
        if writers and fd in program and all(fd not in w for w in writers.values()):
            return writers
        time.sleep(0.01)
    raise AssertionError("the writer never left the program's descriptor table: %r"
                         % (_collector_tables(pid),))


PIPE_EOF = r"""
import os, sys
w = int(sys.argv[1])
sys.stdin.readline()          # the parent saw the writer thread in a table of its own
os.close(w)
print("closed", flush=True)
sys.stdin.readline()          # the parent saw end-of-file (or gave up)
print("done")
"""


def test_pipe_end_closed_by_the_program_reaches_eof(built, tmp_path):
    """A single-threaded traced program closes its end of a pipe and keeps
    running: the reader sees end-of-file at once, as untraced. The writer
    thread left the program's descriptor table (docs/collector-safety.md)
    and closed its copy of every descriptor, so no collector thread keeps
    the pipe open."""
    r, w = os.pipe()
    # the writer from the start: a program with one thread runs without it
    # until it needs it (docs/collector-safety.md, "Threads started late")
    env = clean_env(LD_PRELOAD=PRELOAD, GPUSTARVE_DIR=str(tmp_path / "run"),
                    GPUSTARVE_EAGER_THREADS="1")
    p = subprocess.Popen([PY, "-c", PIPE_EOF, str(w)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, pass_fds=(w,), env=env,
                         preexec_fn=gstest.default_signals)
    os.close(w)
    try:
        writers = _wait_writer_in_own_table(p.pid, w)
        assert all(fds <= {0, 1, 2} for fds in writers.values()), writers
        p.stdin.write(b"go\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"closed\n"
        ready, _, _ = select.select([r], [], [], 60)
        assert ready, "no end-of-file within 60 s of the program closing its end"
        assert os.read(r, 1) == b""
        assert p.poll() is None  # end-of-file came while the program ran on
        out, _ = p.communicate(b"end\n", timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(r)
    assert p.returncode == 0 and out == b"done\n"
    recs, _, code = dump(tmp_path / "run")
    assert code == 0
    assert [r["kind"] for r in recs if r["kind"] == "exit"] == ["exit"]


FD_TABLE = r"""
import ctypes, errno, os, stat, sys, time
data, traced = sys.argv[1], sys.argv[2] == "traced"
libc = ctypes.CDLL(None, use_errno=True)
def writer_fds():
    for t in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/comm" % t) as f:
            if f.read().strip() == "gpustarve":
                return sorted(int(x) for x in os.listdir("/proc/self/task/%s/fd" % t))
    return None
if traced and sys.argv[3] == "own":
    deadline = time.monotonic() + 60
    while writer_fds() != [] and time.monotonic() < deadline:  # the writer left our table
        time.sleep(0.01)
    print("writer", writer_fds(), file=sys.stderr)
run_dir = os.environ.get("GPUSTARVE_DIR")
def table():
    out = []
    for n in sorted(int(x) for x in os.listdir("/proc/self/fd")):
        try:
            st = os.fstat(n)
            if run_dir and os.readlink("/proc/self/fd/%d" % n).startswith(run_dir + "/"):
                continue  # the trace file, where unshare is refused (900 and above)
        except OSError:
            continue  # the listing's own descriptor
        out.append((n, stat.S_IFMT(st.st_mode), st.st_ino if stat.S_ISREG(st.st_mode) else 0))
    return out
def err(f, *a):
    try:
        return f(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
a = os.open(data, os.O_RDONLY)
print("open", a, "dup2", os.dup2(a, 100), os.dup2(a, 5), os.dup(a))
print("table", table())
print("dup2 high", err(os.dup2, a, 900), err(os.dup2, a, 901), "close", err(os.close, 950),
      err(os.dup, 951), err(os.close, 900))
print("close_range", libc.close_range(3, ctypes.c_uint(~0 & 0xffffffff), 0), ctypes.get_errno())
print("after", table())
fds = [os.open(data, os.O_RDONLY) for _ in range(10)]
print("reopened", fds, [len(os.pread(f, 4096, 0)) for f in fds])
r, w = os.pipe()
print("pipe", r, w, "table", table())
"""


@pytest.mark.parametrize("table", ["own", "shared"])
def test_descriptor_table_as_untraced(built, tmp_path, table):
    """With the writer thread in a descriptor table of its own (or, where
    unshare is refused, the trace file in the program's table at 900 and
    above), the program's open, dup, dup2 onto low and high numbers,
    close_range over everything and the numbers it gets afterwards are the
    same as untraced, call for call."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(8192))
    wrap = table_wrap(table)
    plain = run_plain(wrap + [PY, "-c", FD_TABLE, str(data), "plain", table])
    # the writer from the start, as above (test_pipe_end_...)
    traced = run_traced(wrap + [PY, "-c", FD_TABLE, str(data), "traced", table], tmp_path / "run",
                        env=clean_env(GPUSTARVE_EAGER_THREADS="1"))
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    assert traced.stdout == plain.stdout
    assert b"close_range 0 0" in plain.stdout and b"reopened [3, 4, 5," in plain.stdout
    if table == "own":
        assert b"writer []" in traced.stderr, traced.stderr.decode()
    recs, _, code = dump(tmp_path / "run")
    assert code == 0
    assert any(r["kind"] == "exit" for r in recs)


# ---- nothing lost when a process dies (docs/collector-safety.md) ---------------------

DIE_SCRIPT = r"""
import ctypes, os, signal, sys, threading
path, how, nthreads = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open(path, os.O_RDONLY)
def reads(k):
    for i in range(20000 // nthreads):
        os.pread(fd, 4096, 4096 * (i % 16))
ts = [threading.Thread(target=reads, args=(k,)) for k in range(nthreads)]
for t in ts: t.start()
for t in ts: t.join()
sys.stdout.write("read\n"); sys.stdout.flush()
if how == "segv":
    ctypes.string_at(0)
elif how == "abort":
    os.abort()
elif how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""

DEATHS = {"segv": (-signal.SIGSEGV, 139, "signal 11"), "abort": (-signal.SIGABRT, 134, "signal 6"),
          "kill": (-signal.SIGKILL, 137, "killed")}


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("how", sorted(DEATHS))
def test_events_survive_the_death_of_the_process(built, tmp_path, how, threads):
    """20,000 preads, then a crash, an abort or SIGKILL well inside the first
    flush period: every event is in the trace (recovered from the process's
    live file), and the trace says how the process ended."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(16 * 4096))
    # no periodic flush at all, and rings that hold every event (a writer
    # starved on a busy machine must not turn this into a test of drops)
    env = clean_env(GPUSTARVE_FLUSH_MS="60000", GPUSTARVE_RING_EVENTS="32768")
    plain = run_plain([PY, "-c", DIE_SCRIPT, str(data), how, str(threads)])
    traced = run_traced([PY, "-c", DIE_SCRIPT, str(data), how, str(threads)], tmp_path / "run",
                        env=env)
    want_rc, run_rc, words = DEATHS[how]
    assert plain.returncode == want_rc and traced.returncode == run_rc, traced.stderr.decode()
    assert traced.stdout == plain.stdout == b"read\n"
    recs, err, code = dump(tmp_path / "run")
    assert code == 0, err
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"].startswith("pread")]
    assert len(reads) == 20000  # target: >= 99%; all are there
    assert all(r["ret"] == 4096 and r["ts_ns"] > 0 for r in reads)
    assert len({r["tid"] for r in reads}) == threads
    notes = [r for r in recs if r["kind"] == "note" and r["code"] == 6]
    assert len(notes) == 1 and words in notes[0]["text"], notes
    exits = [r for r in recs if r["kind"] == "exit"]
    if how == "kill":
        assert exits == []
    else:
        assert [(e["status"], e["how"]) for e in exits] == [(-want_rc, "signal")]
    drops = [r for r in recs if r["kind"] == "drops"]
    assert all(d["dropped"] == 0 and d["lost"] == 0 for d in drops)


# The program counts each pread it completed in a file it maps (the count
# survives it); another thread of it dies at a count, while the writer is
# flushing every 10 ms: frames are being written, some torn, at the instant.
DIE_MIDWAY = r"""
import ctypes, mmap, os, signal, struct, sys, threading, time
path, counts, how, nthreads, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
fd = os.open(path, os.O_RDONLY)
cf = os.open(counts, os.O_RDWR)
m = mmap.mmap(cf, 4096)
def reads(k):
    i = 0
    while True:
        os.pread(fd, 4096, 4096 * (i % 16))
        i += 1
        struct.pack_into("Q", m, 8 * k, i)
for k in range(nthreads):
    threading.Thread(target=reads, args=(k,), daemon=True).start()
while sum(struct.unpack_from("%dQ" % nthreads, m)) < at:
    time.sleep(0.002)
if how == "segv":
    ctypes.string_at(0)
elif how == "abort":
    os.abort()
else:
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("how", sorted(DEATHS))
def test_death_while_flushing_loses_nothing_uncounted(built, tmp_path, how, threads):
    """Death at an arbitrary instant while frames are being written (flush
    every 10 ms, reads going on in every thread): every pread the program
    completed is in the trace or counted dropped, none twice — the trace
    file's frames and the live file's rings meet exactly — and the trace
    says how the process ended."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(16 * 4096))
    counts = tmp_path / "counts"
    counts.write_bytes(bytes(4096))
    at = 20000 + 7919 * threads
    env = clean_env(GPUSTARVE_FLUSH_MS="10")
    p = run_traced([PY, "-c", DIE_MIDWAY, str(data), str(counts), how, str(threads), str(at)],
                   tmp_path / "run", env=env)
    assert p.returncode == DEATHS[how][1], p.stderr.decode()
    made = sum(struct.unpack_from("%dQ" % threads, counts.read_bytes()))
    assert made >= at
    recs, err, code = dump(tmp_path / "run")
    assert code == 0, err
    kept = len([r for r in recs if r.get("path") == str(data) and r["kind"].startswith("pread")])
    drops = [r for r in recs if r["kind"] == "drops"]
    dropped = max([d["dropped"] for d in drops], default=0)  # cumulative
    lost = max([d["lost"] for d in drops], default=0)
    assert lost == 0
    # a thread may have been killed between its pread and its count
    assert made <= kept + dropped <= made + threads, (made, kept, dropped)
    notes = [r for r in recs if r["kind"] == "note" and r["code"] == 6]
    assert len(notes) == 1 and DEATHS[how][2] in notes[0]["text"], notes


AS_SCRIPT = r"""
import mmap, resource
limit = resource.getrlimit(resource.RLIMIT_AS)[0]
live = 0
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) > 5 and f[5].endswith(".live"):
        a, b = (int(x, 16) for x in f[0].split("-"))
        live += b - a
m = mmap.mmap(-1, 1400 << 20)   # fits in 2,000,000 KiB untraced, with ~500 MiB to spare
print("mapped", live <= limit // 32)
"""


def test_live_file_fits_in_an_address_space_limit(built, tmp_path):
    """Under `ulimit -v` the live file's mapping takes 1/32 of the limit at
    most: a program that maps 1.4 GiB of a 1.9 GiB limit does so traced as
    untraced (the full-size mapping, 1.1 GiB, once made it fail)."""
    if gstest.SAN_LIB:
        pytest.skip("AddressSanitizer's shadow memory needs an unlimited address space")
    cmd = ["bash", "-c", 'ulimit -v 2000000 && exec "$0" -c "$1"', PY, AS_SCRIPT]
    plain = run_plain(cmd)
    traced = run_traced(cmd, tmp_path / "run")
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    assert plain.stdout == traced.stdout == b"mapped True\n"


PEND_END = 160  # offset of gs_live_header.pend_end in a live file (trace/gs_live.h)


@pytest.mark.parametrize("in_flight", [True, False], ids=["in-flight", "other-damage"])
def test_frame_cut_short_by_death_is_recovered_not_damage(built, tmp_path, in_flight):
    """A process killed while its writer wrote a frame leaves that frame cut
    short at the end of its trace; its live file says a frame was in flight
    up to pend_end. The reader takes it as the death it is: exit 0, every
    event recovered from the rings, a note that says so. A cut frame the
    live file does not account for is still damage (exit 2).
    (A real SIGKILL lands in that window rarely; the window is made here from
    a crash whose records are all in the live file: the frame in flight is
    appended cut short, and pend_end set as the writer sets it.)"""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(16 * 4096))
    env = clean_env(GPUSTARVE_FLUSH_MS="60000", GPUSTARVE_RING_EVENTS="32768")
    # RATIONALE: the crash's last flush can itself be cut by the death on a
    # busy machine (the writer was still writing its frame when the signal
    # was raised again), and then the live file's pend_end is already set:
    # this test's window is made by hand from a death that left none, so a
    # run whose death left a frame in flight is run again (that case, the
    # real one, is test_events_survive_the_death_of_the_process's)
    for attempt in range(5):
        run_dir = tmp_path / ("run%d" % attempt)
        p = run_traced([PY, "-c", DIE_SCRIPT, str(data), "segv", "1"], run_dir, env=env)
        assert p.returncode == 139, p.stderr.decode()
        lives = [f for f in os.listdir(run_dir) if f.endswith(".live")]
        assert len(lives) == 1
        live = run_dir / lives[0]
        with open(live, "rb") as f:
            f.seek(PEND_END)
            (pend_end,) = struct.unpack("<Q", f.read(8))
        if pend_end == 0:
            break
    else:
        pytest.fail("5 deaths in a row left a frame in flight")
    trace = run_dir / (lives[0][:-len(".live")] + ".gst")
    size = trace.stat().st_size
    comp = 4000
    with open(trace, "ab") as f:  # GS_FRAME_MAGIC, comp_size, raw_size, nrec, then a part
        f.write(struct.pack("<IIII", 0x52465347, comp, 9000, 300) + os.urandom(1500))
    with open(live, "r+b") as f:
        f.seek(PEND_END)
        f.write(struct.pack("<Q", size + 16 + comp if in_flight else 0))
    recs, err, code = dump(run_dir, check=False)
    reads = [r for r in recs if r.get("path") == str(data) and r["kind"].startswith("pread")]
    assert len(reads) == 20000
    notes = [r["text"] for r in recs if r["kind"] == "note" and r["code"] == 6]
    if in_flight:
        assert code == 0 and "truncated" not in err, err
        assert len(notes) == 1 and "cut short" in notes[0], notes
    else:
        assert code == 2 and "truncated" in err, err
        assert all("cut short" not in n for n in notes), notes


# ---- counts that add up -------------------------------------------------------------

COUNTS = r"""
import os, resource, sys
import gpustarve
data, nreads = sys.argv[1], int(sys.argv[2])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    # "fsize": the worker's trace file stops growing at 64 KiB: every write
    # after that fails (EFBIG); "full": the run directory is on a small
    # file system, which the worker's reads fill (ENOSPC)
    if sys.argv[3] == "fsize":
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
    os.close(r)
    fd = os.open(data, os.O_RDONLY)
    for i in range(nreads):
        os.pread(fd, 512, 512 * (i % 64))
        if i % (nreads // 20) == 0:
            os.write(w, b"x")
    os._exit(0)
os.close(w)
for step in range(20):
    gpustarve.step_begin(step, 0)
    os.read(r, 1)
    gpustarve.step_end(step, 0)
os.waitpid(pid, 0)
print("done")
"""


def _totals_line(stderr):
    import re
    m = re.search(rb"traced (\d+) process(?:es)?(?: \(\d+ damaged\))?, (\d+) events, (\d+) "
                  rb"dropped, (\d+) lost", stderr)
    assert m, stderr.decode()
    return tuple(int(x) for x in m.groups())


@pytest.mark.parametrize("how", ["fsize", "full"])
def test_run_dump_and_report_count_the_same_and_account_for_everything(built, tmp_path, how,
                                                                       request):
    """A worker whose writes fail mid-run (a file size limit, or a file system
    that fills up): run, dump --summary and report all say the same events /
    dropped / lost, the loss is counted (it was 0 lost before: the count
    could not be written to the full file), and every pread the worker made
    is either in the trace or in that count."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(64 * 512))
    nreads = 200000
    run_dir = tmp_path / "run"
    if how == "full":
        run_dir = request.getfixturevalue("small_tmpfs") + "/run"
    p = run_traced([PY, "-c", COUNTS, str(data), str(nreads), how], run_dir)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"done\n"
    assert len(warnings_of(p.stderr)) == 1
    procs, events, dropped, lost = _totals_line(p.stderr)
    assert procs == 2 and lost > 0
    s = subprocess.run([CLI, "dump", "--summary", "--json", str(run_dir)],
                       capture_output=True)
    total = json.loads(s.stdout.decode().splitlines()[-1])
    assert (total["events"], total["dropped"], total["lost"]) == (events, dropped, lost)
    r = subprocess.run([CLI, "report", "--json", str(run_dir)], capture_output=True)
    # RATIONALE: on the full file system the parent's frames can be lost too,
    # step markers with them: report then has no steps (exit 2, said so)
    if how == "full" and r.returncode == 2:
        assert b"no training steps" in r.stderr, r.stderr.decode()
    else:
        assert r.returncode == 0, r.stderr.decode()
        rep = json.loads(r.stdout)["run"]
        assert (rep["events"], rep["dropped"], rep["lost"]) == (events, dropped, lost)
    recs, _, _ = dump(run_dir, check=False)
    worker = [pr for pr in recs if pr["kind"] == "process"][1]["pid"]
    preads = [x for x in recs if x.get("pid") == worker and x["kind"].startswith("pread")]
    assert len(preads) < nreads  # most of them could not be written
    assert len(preads) + dropped + lost >= nreads


def test_two_kinds_of_trouble_two_warnings_and_no_signal(built, dataset, tmp_path):
    """One process cannot keep its trace out of the program's descriptors
    (`ulimit -n 256` where unshare is refused), another reads a dataset
    under `ulimit -f 16`: each kind is warned once; the second is not killed
    by SIGXFSZ (the collector never grows a file past RLIMIT_FSIZE: its trace
    stops, counted lost); the first, never traced, is not reported as
    killed."""
    root, _ = dataset
    script = ('(ulimit -n 256; exec cat "$0" >/dev/null); '
              '(ulimit -f 16; exec "$1" "$2" --mode pread --chunk 512 --exit 5); echo "status $?"')
    cmd = [noshare(), "bash", "-c", script, "/etc/hostname", READ_DATASET, root]
    plain = run_plain(cmd)
    traced = run_traced(cmd, tmp_path / "run")
    assert plain.returncode == traced.returncode == 0, traced.stderr.decode()
    assert plain.stdout == traced.stdout and plain.stdout.endswith(b"status 5\n"), traced.stdout
    warns = warnings_of(traced.stderr)
    assert len(warns) == 2, traced.stderr.decode()
    assert "descriptor" in warns[0] and "File too large" in warns[1], warns
    procs, events, dropped, lost = _totals_line(traced.stderr)
    assert lost > 0 and b"ended abruptly" not in traced.stderr
    recs, _, _ = dump(tmp_path / "run", check=False)
    notes = [r for r in recs if r["kind"] == "note" and r["code"] == 6]
    assert all("killed" not in n["text"] and "signal" not in n["text"] for n in notes), notes


CLOSED_STDERR = r"""
import os, resource, sys
data, mine = sys.argv[1], sys.argv[2]
os.close(2)
fd = os.open(mine, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
assert fd == 2
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))   # the trace stops: a warning
src = os.open(data, os.O_RDONLY)
for i in range(100000):
    os.pread(src, 512, 512 * (i % 64))
os.write(2, b"mine\n")
print("done")
"""


def test_warning_never_lands_in_a_file_at_descriptor_2(built, tmp_path):
    """A program closes its stderr and opens a file of its own, which gets
    number 2; then tracing fails. The warning is not written into that file
    (it holds exactly what the program wrote)."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(64 * 512))
    mine = tmp_path / "mine.log"
    p = run_traced([PY, "-c", CLOSED_STDERR, str(data), str(mine)], tmp_path / "run")
    assert p.returncode == 0 and p.stdout == b"done\n", p.stderr.decode()
    assert mine.read_bytes() == b"mine\n"
    assert os.path.exists(tmp_path / "run" / ".warned-8")  # the trouble did happen


# ---- hostile traces cost bounded time and memory -------------------------------------

REGRESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "regress")
HOSTILE = sorted(f for f in os.listdir(REGRESS) if f.endswith(".gst"))


def _limited(cpu_s=10, mem=1 << 30):
    import resource

    def set_limits():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    return set_limits


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_trace_costs_bounded_time_and_memory(built, tmp_path, name):
    """Each file of tests/fuzz/regress (tests/fuzz/mk_hostile.c says what it
    once cost) goes through every command that loads traces within 10 CPU
    seconds and 1 GiB of address space — CPU time, so a busy machine does not
    matter — with exit status 0 (or 2: no training steps in it)."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(os.path.join(REGRESS, name), run / name)
    cmds = [["dump", "--json"], ["dump", "--summary"], ["dump", "--callsites"], ["report"],
            ["report", "--json"], ["report", "--perfetto", str(tmp_path / "p.json")],
            ["report", "--html", str(tmp_path / "p.html")], ["compare", str(run)]]
    for c in cmds:
        p = subprocess.run([CLI] + c + [str(run)], capture_output=True, timeout=300,
                           preexec_fn=_limited())
        assert p.returncode in (0, 2), (c, p.returncode, p.stderr.decode()[-500:])
        if p.returncode == 2:
            assert c[0] in ("report", "compare") and b"no training steps" in p.stderr, (c, p.stderr)
    if (tmp_path / "p.json").exists():
        json.loads((tmp_path / "p.json").read_text())


def test_kernels_named_far_away_are_counted_in_bounded_memory(built, tmp_path):
    """GPU kernels named by string ids near 2^30 and above it: each name is
    one entry of the report's GPU time per kernel, within 1 GiB of address
    space (the table was sized by the id: 4 GiB, or the kernel left out)."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(os.path.join(REGRESS, "kstrid.gst"), run)
    p = subprocess.run([CLI, "report", "--json", str(run)], capture_output=True, timeout=300,
                       preexec_fn=_limited())
    assert p.returncode == 0, p.stderr.decode()
    kernels = {k["mangled"]: (k["count"], k["class"]) for k in json.loads(p.stdout)["kernels"]}
    assert kernels == {"_Z21ncclKernel_AllReduceP11ncclDevComm": (6, "communication"),
                       "far_compute_kernel": (6, "compute")}


def test_threads_reading_sockets_do_not_starve_the_training_thread(built, tmp_path):
    """64 threads wait on sockets before the first step: the training thread
    (step markers) still gets its place on the timeline and its steps."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(os.path.join(REGRESS, "sockets.gst"), run)
    p = subprocess.run([CLI, "report", "--json", str(run)], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    rep = json.loads(p.stdout)
    assert rep["steps"]["count"] == 12 and rep["steps"]["source"] == "markers"
    assert rep["run"]["trainer"]["training_tid"] == 2005


def test_string_far_away_is_still_named(built, tmp_path):
    """A string id near 2^30 costs one entry, and is found."""
    recs, _, code = dump(os.path.join(REGRESS, "strid.gst"))
    assert code == 0
    assert [r["path"] for r in recs if r["kind"] == "read"] == ["/data/far.bin"]


# ---- the Python side is invisible too -------------------------------------------------

PY_SEEN = r"""
import inspect, json, os, pickle, sys, traceback, warnings
import torch
from torch.utils.data import DataLoader, Dataset

side = sys.argv[1]  # what a worker saw, for the trainer to print
out = {}

def seen(tag):
    # a stack as inspect, sys._getframe and traceback walk it
    f, frames = sys._getframe(1), []
    while f is not None:
        frames.append((f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return {tag: [[(s.filename, s.lineno, s.function) for s in inspect.stack()[1:]],
                  frames, [tuple(s)[:3] for s in traceback.extract_stack()[:-1]]]}

def from_worker(tag):
    with open(side, "a") as fp:
        fp.write(json.dumps(seen(tag)) + "\n")

class DS(Dataset):
    def __init__(self, bad=3):
        self.bad = bad
    def __len__(self):  # RandomSampler asks while DataLoader.__init__ runs
        if "len" not in out:
            out.update(seen("len"))
        return 4
    def __getitem__(self, i):
        if i == self.bad:
            raise KeyError("bad item")
        if i == 1:
            if torch.utils.data.get_worker_info() is None:
                out.update(seen("getitem"))
            else:
                from_worker("worker_getitem")
            for level in range(1, 7):
                warnings.warn("level %d" % level, stacklevel=level)
        return torch.zeros(2)

def init_fn(worker_id):
    from_worker("worker_init_fn")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    it = iter(DataLoader(DS(), batch_size=1, pin_memory=True))  # no accelerator: torch warns
    next(it)
    next(it)
out["warnings"] = [(w.category.__name__, w.filename, w.lineno, str(w.message)[:50]) for w in caught]
warnings.resetwarnings()
warnings.filterwarnings("error", category=UserWarning, module="torch.utils.data.dataloader")
try:
    iter(DataLoader(DS(), batch_size=1, pin_memory=True))
    out["filter"] = "not filtered"
except UserWarning:
    out["filter"] = "filtered by module"
warnings.resetwarnings()
warnings.simplefilter("ignore")
try:
    for b in DataLoader(DS(), batch_size=1, shuffle=True):
        pass
except KeyError:
    tb = traceback.extract_tb(sys.exc_info()[2])
    out["traceback"] = [(f.filename, f.lineno, f.name) for f in tb]
list(DataLoader(DS(bad=-1), batch_size=1, num_workers=1, worker_init_fn=init_fn))
with open(side) as fp:
    for line in fp:
        out.update(json.loads(line))
init = DataLoader.__init__
out["inspect"] = [inspect.getfile(init), inspect.getsourcefile(init), inspect.getsourcelines(init),
                  inspect.isfunction(init), str(inspect.signature(init)),
                  inspect.getmodule(init).__name__, init.__module__, init.__qualname__,
                  inspect.unwrap(init).__code__.co_filename,
                  inspect.getfile(DataLoader(DS()).__init__),
                  inspect.isfunction(type(iter(DataLoader(DS()))).__next__)]
dl = DataLoader(DS(bad=-1), batch_size=2)
again = pickle.loads(pickle.dumps(dl))
out["pickle"] = [type(again).__name__, [b.shape[0] for b in again],
                 pickle.loads(pickle.dumps(DataLoader.__init__)) is DataLoader.__init__]
try:
    pickle.dumps(iter(dl))
    out["pickle"].append("iterator pickled")
except Exception as e:
    out["pickle"].append(type(e).__name__)
print(json.dumps(out, indent=1, sort_keys=True))
"""

VENV_PY = os.path.join(os.path.dirname(CLI), "..", ".venv", "bin", "python")


@pytest.mark.parametrize("python", [PY, VENV_PY], ids=["debian-torch1", "venv-torch2"])
def test_warnings_tracebacks_and_inspect_see_no_gpustarve(built, tmp_path, python):
    """The DataLoader's own warnings keep torch's module, file and line (so
    module-based filters act as untraced), a dataset's exception keeps the
    untraced traceback, and inspect sees DataLoader's own source and
    signature."""
    if not os.path.exists(python):
        pytest.skip("%s is missing (make venv)" % python)
    script = tmp_path / "seen.py"
    script.write_text(PY_SEEN)
    plain = run_plain([python, str(script), str(tmp_path / "plain.side")])
    traced = run_traced([python, str(script), str(tmp_path / "traced.side")], tmp_path / "run")
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    seen = json.loads(plain.stdout)
    assert set(seen) >= {"len", "getitem", "worker_getitem", "worker_init_fn", "warnings",
                         "traceback", "inspect", "pickle"}, seen
    assert traced.stdout == plain.stdout
    # frame-free: no word about Python wrappers
    assert [l for l in traced.stderr.decode().splitlines() if "Python wrappers" in l] == []
    assert b"gpustarve" not in traced.stdout
    # the traced run did go through gpustarve's wrappers
    recs, _, _ = dump(tmp_path / "run")
    assert any(r["kind"] == "fetch_begin" for r in recs)


def test_without_the_extension_python_wrappers_hide_less(built, tmp_path):
    """Where gpustarve's extension is missing (here: a libgpustarve.so with
    no gpustarve_cwrap.abi3.so beside it) the Python wrappers stand in, said
    once: warnings, filters, tracebacks, signature and pickling stay as
    untraced; a stack walked inside a DataLoader and getfile show gpustarve's
    wrappers."""
    if gstest.SAN_LIB:
        pytest.skip("the sanitized run preloads its own library")
    lib = tmp_path / "lib" / "libgpustarve.so"
    lib.parent.mkdir()
    shutil.copy(gstest.LIB, lib)
    script = tmp_path / "seen.py"
    script.write_text(PY_SEEN)
    plain = run_plain([PY, str(script), str(tmp_path / "plain.side")])
    traced = run_traced([PY, str(script), str(tmp_path / "traced.side")], tmp_path / "run",
                        env=clean_env(GPUSTARVE_LIB=str(lib)))
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    said = [l for l in traced.stderr.decode().splitlines() if "Python wrappers" in l]
    assert len(said) == 1 and "gpustarve_cwrap.abi3.so is missing" in said[0], said
    a, b = json.loads(plain.stdout), json.loads(traced.stdout)
    stacks = ("len", "getitem", "worker_getitem", "worker_init_fn")
    assert {k: v for k, v in a.items() if k not in stacks + ("inspect",)} == \
        {k: v for k, v in b.items() if k not in stacks + ("inspect",)}
    # getfile and getsourcefile, of the function and of a bound method
    shown = [i for i, (x, y) in enumerate(zip(a["inspect"], b["inspect"])) if x != y]
    assert shown == [0, 1, 9], shown
    for k in stacks:  # inspect.stack(), f_back, extract_stack: the wrappers' frames more
        for untraced, fallback in zip(a[k], b[k]):
            assert len(fallback) > len(untraced), k
            assert [f for f in fallback if "gpustarve" not in f[0]] == untraced, k


WARNS = r"""
from torch.utils.data import DataLoader
it = iter(DataLoader(list(range(4)), batch_size=2, pin_memory=True))  # no accelerator: torch warns
print(next(it))
"""


@pytest.mark.parametrize("flags", [[], ["-W", "ignore::UserWarning:torch.utils.data.dataloader"],
                                   ["-W", "error::UserWarning:torch.utils.data.dataloader"]],
                         ids=["default", "ignore-by-module", "error-by-module"])
def test_command_line_warning_filters_act_as_untraced(built, tmp_path, flags):
    """Under torch 2.x, `python -W action::UserWarning:torch.utils.data.dataloader`
    does to the DataLoader's own warning traced what it does untraced: the
    same stderr (torch's file and line), the same exit status."""
    if not os.path.exists(VENV_PY):
        pytest.skip("%s is missing (make venv)" % VENV_PY)
    cmd = [VENV_PY] + flags + ["-c", WARNS]
    plain = run_plain(cmd)
    traced = run_traced(cmd, tmp_path / "run")
    ours = [l for l in traced.stderr.decode().splitlines() if l.startswith("gpustarve: ")]
    assert len(ours) == 2, traced.stderr.decode()  # "tracing to", "traced ... events"
    theirs = "".join(l + "\n" for l in traced.stderr.decode().splitlines() if l not in ours)
    assert (traced.returncode, traced.stdout, theirs) == (plain.returncode, plain.stdout,
                                                          plain.stderr.decode())
    assert ("dataloader.py" in theirs) == (flags == [] or flags[1].startswith("error"))
    if flags and flags[1].startswith("error"):
        assert plain.returncode == 1


def test_each_run_warns_for_itself(built, tmp_path):
    """A kind of warning is printed once per run; a second run into the same
    -o directory (--append) prints its own (the first run's mark is not this
    run's)."""
    data = tmp_path / "blob"
    data.write_bytes(os.urandom(64 * 512))
    # RATIONALE: enough reads that the worker's trace passes its 64 KiB limit
    # with room to spare: sequential reads take 1-2 bytes each since format
    # 1.3 (50,000 of them came to about 64 KiB and the warning came and went)
    for attempt in range(2):
        p = run_traced([PY, "-c", COUNTS, str(data), "200000", "fsize"], tmp_path / "run",
                       cli_args=["--append"] if attempt else [])
        assert p.returncode == 0, p.stderr.decode()
        assert len(warnings_of(p.stderr)) == 1, (attempt, p.stderr.decode())
