"""Tracing must never change the traced program: a killed child keeps what it
flushed, a full disk or an unwritable directory leave output and exit code
unchanged with at most one warning line; damaged traces give clear errors."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import CLI, LIB, PY, READ_DATASET, clean_env, dump, run_plain, run_traced

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


@pytest.fixture
def small_tmpfs():
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where = tempfile.mkdtemp(prefix="gs_full_")
    if not _mount("size=96k", where):
        os.rmdir(where)
        pytest.skip("cannot mount tmpfs here")
    yield where
    subprocess.run(["umount", where])
    os.rmdir(where)


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


@pytest.mark.parametrize("how", ["preloaded by hand", "python"])
def test_unwritable_directory_changes_nothing(built, dataset, readonly_dir, how):
    root, _ = dataset
    if how == "python":
        cmd = [PY, "-c", "import sys; print(sum(len(open(sys.argv[1]+'/'+f,'rb').read()) "
                         "for f in __import__('os').listdir(sys.argv[1]))); sys.exit(4)", root]
    else:
        cmd = [READ_DATASET, root, "--workers", "2", "--exit", "4"]
    plain = run_plain(cmd)
    env = clean_env(LD_PRELOAD=LIB, GPUSTARVE_DIR=os.path.join(readonly_dir, "run"))
    traced = run_plain(cmd, env=env)
    assert traced.returncode == plain.returncode == 4
    assert traced.stdout == plain.stdout
    assert len(warnings_of(traced.stderr)) == 1
    other = [l for l in traced.stderr.decode().splitlines() if l not in
             plain.stderr.decode().splitlines()]
    assert other == warnings_of(traced.stderr)


def test_uncreatable_run_directory_runs_nothing(built, tmp_path):
    marker = tmp_path / "ran"
    p = subprocess.run([CLI, "run", "-o", str(tmp_path / "no" / "such" / "dir"), "--",
                        "touch", str(marker)], capture_output=True, env=clean_env())
    assert p.returncode == 2
    assert b"no/such" in p.stderr
    assert not marker.exists()


def _real_trace(tmp_path, dataset):
    root, _ = dataset
    run = tmp_path / "run"
    assert run_traced([READ_DATASET, root, "--chunk", "1024"], run).returncode == 0
    files = sorted(run.iterdir())
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
