"""`gpustarve check`'s CPU, memory, shared memory and storage lines on this
machine, against ground truth taken independently: the cgroup files the
test writes, os.sched_getaffinity and os.cpu_count (nproc), /proc/meminfo,
statvfs of a tmpfs the test mounts (df), and a file system on a loop device
whose reads a cgroup throttles to a known rate (dd with O_DIRECT beside
it). The test makes the cgroups and mounts as root; the check runs as it
would anywhere, and never needs root itself. Where cgroups or mounts cannot
be made here, the test skips with one line saying why.

Speeds are compared with a rate the kernel enforces (the throttle), or
with a measurement taken at the same time with a generous factor: never
with a fixed figure of this machine's."""
import contextlib
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import clean_env, run_check

HOST_ARGS = ("--quick", "--no-gpu")


def sh(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


# ---- cgroups ------------------------------------------------------------------------------

class Cgroup:
    """A cgroup of its own for each controller asked for: v2 where the
    unified hierarchy has the controller, else v1 (a hybrid host)."""

    def __init__(self, controllers):
        self.dirs = {}
        name = "gs-check-%d-%d" % (os.getpid(), time.monotonic_ns() % 1000000)
        v2 = "/sys/fs/cgroup"
        ctrls = ""
        if os.path.exists(v2 + "/cgroup.controllers"):
            ctrls = open(v2 + "/cgroup.controllers").read().split()
        for c in controllers:
            v2name = {"blkio": "io"}.get(c, c)
            if v2name in ctrls:
                path = os.path.join(v2, name)
                if not os.path.isdir(path):
                    os.mkdir(path)
                self.dirs[c] = (path, 2)
            elif os.path.isdir("/sys/fs/cgroup/" + c):
                path = "/sys/fs/cgroup/%s/%s" % (c, name)
                os.mkdir(path)
                self.dirs[c] = (path, 1)
            else:
                raise OSError("no %s controller" % c)

    def write(self, c, v1file, v2file, value):
        path, ver = self.dirs[c]
        with open(os.path.join(path, v2file if ver == 2 else v1file), "w") as f:
            f.write(value)
        return os.path.join(path, v2file if ver == 2 else v1file)

    def run(self, args, **kw):
        """Run args inside every cgroup of this one (the test's shell joins
        them, then execs)."""
        procs = " ".join('"%s/cgroup.procs"' % p for p, _ in set(self.dirs.values()))
        script = 'for f in %s; do echo $$ > "$f" || exit 99; done; exec "$@"' % procs
        return subprocess.run(["sh", "-c", script, "sh"] + list(args), capture_output=True,
                              text=True, **kw)

    def remove(self):
        for path, _ in set(self.dirs.values()):
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.1)  # the last process of the cgroup is being reaped


@contextlib.contextmanager
def cgroup(*controllers):
    try:
        cg = Cgroup(controllers)
    except OSError as e:
        pytest.skip("no cgroup can be made here (%s): needs root and a writable %s controller"
                    % (e, "/".join(controllers)))
    try:
        yield cg
    finally:
        cg.remove()


def check_in(cg, *args):
    import json
    import gstest
    p = cg.run([gstest.CLI, "check", "--json"] + list(args), env=clean_env())
    assert p.returncode == 0, p.stderr

    class R:
        doc = json.loads(p.stdout)

        def __getitem__(self, id_):
            (it,) = [i for i in self.doc["items"] if i["id"] == id_]
            return it
    return R()


# ---- CPU ----------------------------------------------------------------------------------

def test_cpus_shown_and_usable():
    c = run_check(*HOST_ARGS)
    cpu = c["cpu"]
    assert cpu["details"]["shown"] == os.cpu_count()
    assert cpu["details"]["affinity"] == len(os.sched_getaffinity(0))
    assert cpu["measured"] <= len(os.sched_getaffinity(0))
    assert cpu["expected"] == os.cpu_count()
    assert re.match(r"%d cores shown, [0-9.]+ usable" % os.cpu_count(), cpu["text"])


def test_cpu_quota():
    """A cgroup with a CPU quota of half a CPU: 0.50 usable, and the quota
    named as the cause (the file the test wrote)."""
    with cgroup("cpu") as cg:
        path, ver = cg.dirs["cpu"]
        if ver == 2:
            f = cg.write("cpu", "", "cpu.max", "50000 100000")
        else:
            cg.write("cpu", "cpu.cfs_period_us", "", "100000")
            f = cg.write("cpu", "cpu.cfs_quota_us", "", "50000")
        c = check_in(cg, *HOST_ARGS)
    cpu = c["cpu"]
    assert cpu["measured"] == 0.5 and cpu["details"]["cgroup_quota"] == 0.5
    assert cpu["verdict"] == "below_spec"
    assert "cgroup CPU quota of 0.50 CPUs (%s)" % f in cpu["cause"]
    assert cpu["details"]["quota_file"] == f
    assert "%d cores shown, 0.50 usable" % os.cpu_count() == cpu["text"]


def test_affinity():
    if len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"):
        pytest.skip("one CPU in the affinity mask, or no taskset: nothing to narrow")
    first = min(os.sched_getaffinity(0))
    import json
    import gstest
    p = sh("taskset", "-c", str(first), gstest.CLI, "check", "--json", *HOST_ARGS, env=clean_env())
    cpu = [i for i in json.loads(p.stdout)["items"] if i["id"] == "cpu"][0]
    assert cpu["details"]["affinity"] == 1 and cpu["measured"] == 1
    assert cpu["verdict"] == "below_spec"
    assert "the affinity mask holds 1 of the %d CPUs" % os.cpu_count() in cpu["cause"]


def test_cpus_paid_for():
    usable = run_check(*HOST_ARGS)["cpu"]["measured"]
    c = run_check(*HOST_ARGS, "--cpus", str(usable))
    assert c["cpu"]["verdict"] == "to_spec" and c["cpu"]["expected"] == usable
    c = run_check(*HOST_ARGS, "--cpus", str(usable + 4))
    assert c["cpu"]["verdict"] == "below_spec"
    assert "(%.2f paid for)" % (usable + 4) in c["cpu"]["text"]


@pytest.mark.parametrize("cur_khz,verdict", [(2900000, "to_spec"), (1000000, "below_spec")])
def test_cpu_frequency(tmp_path, cur_khz, verdict):
    """cpufreq of a fake sysfs (GPUSTARVE_SYSFS_ROOT, the check's test
    hook): the clock under load against cpuinfo_max_freq, the governor
    named when it stays low."""
    for cpu in range(os.cpu_count()):
        d = tmp_path / "devices" / "system" / "cpu" / ("cpu%d" % cpu) / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_cur_freq").write_text("%d\n" % cur_khz)
        (d / "cpuinfo_max_freq").write_text("3000000\n")
        (d / "scaling_governor").write_text("powersave\n")
    f = run_check(*HOST_ARGS, env=clean_env(GPUSTARVE_SYSFS_ROOT=str(tmp_path)))["cpu.freq"]
    assert f["verdict"] == verdict and f["expected"] == 3.0
    assert f["measured"] == cur_khz / 1e6 and f["details"]["governor"] == "powersave"
    if verdict == "below_spec":
        assert "governor powersave" in f["cause"]


def test_steal_is_measured():
    c = run_check(*HOST_ARGS)
    s = c["cpu.steal"]
    assert s["verdict"] in ("to_spec", "below_spec") and s["unit"] == "%"
    assert 0 <= s["measured"] <= 100 and s["details"]["seconds"] > 0


# ---- memory -------------------------------------------------------------------------------

def meminfo(field):
    for line in open("/proc/meminfo"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


def test_memory_shown():
    m = run_check(*HOST_ARGS)["memory"]
    assert m["details"]["shown_bytes"] == meminfo("MemTotal")
    assert m["details"]["swap_bytes"] == meminfo("SwapTotal")
    if m["details"]["cgroup_limit_bytes"] is None:
        assert m["verdict"] == "to_spec"
        assert m["measured"] == pytest.approx(meminfo("MemTotal") / 2 ** 30, rel=1e-12)
    paid = meminfo("MemTotal") / 2 ** 30 * 2
    m = run_check(*HOST_ARGS, "--memory", str(paid))["memory"]
    assert m["verdict"] == "below_spec" and m["expected"] == pytest.approx(paid)
    assert "less memory than was paid for" in m["cause"] or "cgroup memory limit" in m["cause"]


def test_memory_cgroup_limit():
    with cgroup("memory") as cg:
        _, ver = cg.dirs["memory"]
        f = cg.write("memory", "memory.limit_in_bytes", "memory.max", str(1 << 30))
        c = check_in(cg, *HOST_ARGS)
    m = c["memory"]
    assert m["details"]["cgroup_limit_bytes"] == 1 << 30
    assert m["measured"] == 1.0 and m["verdict"] == "below_spec"
    assert m["details"]["limit_file"] == f and "cgroup memory limit (%s)" % f in m["cause"]


# ---- shared memory ------------------------------------------------------------------------

@contextlib.contextmanager
def tmpfs(path, size):
    path.mkdir()
    p = sh("mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", str(path))
    if p.returncode != 0:
        pytest.skip("no tmpfs can be mounted here: %s" % p.stderr.strip())
    try:
        yield str(path)
    finally:
        sh("umount", str(path))


def df(path):
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def test_shm_docker_default(tmp_path):
    with tmpfs(tmp_path / "shm", "64m") as d:
        c = run_check(*HOST_ARGS, "--shm", d)
        size, free = df(d)
    s = c["shm"]
    assert s["subject"] == d and s["details"]["size_bytes"] == size
    assert s["verdict"] == "below_spec" and s["measured"] == pytest.approx(64, rel=0.01)
    assert "the container default of 64 MB" in s["cause"] and '"bus error"' in s["cause"]
    assert "--shm-size=" in s["cause"] and s["details"]["need_from"] == "the rule"


def test_shm_enough_and_full(tmp_path):
    with tmpfs(tmp_path / "shm", "512m") as d:
        c = run_check(*HOST_ARGS, "--shm", d, "--workers", "2", "--batch-mb", "60")
        s = c["shm"]
        assert s["verdict"] == "to_spec" and s["details"]["need_bytes"] == 2 * 2 * 60e6
        assert s["details"]["size_bytes"] == df(d)[0]
        with open(os.path.join(d, "held"), "wb") as f:  # someone else's 300 MB
            f.write(b"\1" * (300 << 20))
        c = run_check(*HOST_ARGS, "--shm", d, "--workers", "2", "--batch-mb", "60")
        size, free = df(d)
    s = c["shm"]
    assert s["details"]["free_bytes"] == free
    assert s["verdict"] == "below_spec" and "only" in s["cause"] and "free" in s["cause"]


def test_shm_missing(tmp_path):
    s = run_check(*HOST_ARGS, "--shm", str(tmp_path / "none"))["shm"]
    assert s["verdict"] == "below_spec" and "no shared memory file system" in s["cause"]


# ---- storage ------------------------------------------------------------------------------

@contextlib.contextmanager
def loop_fs(tmp_path, big_mib=48, small=0, small_kib=8):
    """An ext4 file system on a loop device, with one big file of random
    bytes and `small` small ones; yields (mount point, "maj:min", name)."""
    img, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate((big_mib + 64 + small * small_kib // 1024) << 20)
    p = sh("losetup", "--find", "--show", str(img))
    if p.returncode != 0:
        pytest.skip("no loop device can be made here: %s" % p.stderr.strip())
    dev = p.stdout.strip()
    try:
        if sh("mkfs.ext4", "-q", dev).returncode != 0 or sh("mount", dev, str(mnt)).returncode != 0:
            pytest.skip("no ext4 on %s can be made and mounted here" % dev)
        try:
            with open(mnt / "big", "wb") as f:
                for _ in range(big_mib):
                    f.write(os.urandom(1 << 20))
            sub = mnt / "small"
            sub.mkdir()
            for i in range(small):
                (sub / ("f%04d" % i)).write_bytes(os.urandom(small_kib << 10))
            os.sync()
            st = os.stat(dev)
            yield str(mnt), "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)), os.path.basename(dev)
        finally:
            sh("umount", str(mnt))
    finally:
        sh("losetup", "-d", dev)


def dd_MBps(cg, path):
    p = cg.run(["dd", "if=" + path, "of=/dev/null", "bs=8M", "iflag=direct"])
    m = re.search(r"copied, ([0-9.]+) s", p.stderr)
    size = os.path.getsize(path)
    return size / 1e6 / float(m.group(1))


def test_throttled_sequential_read(tmp_path):
    """Reads from the loop device throttled to 16 MiB/s by a cgroup: the
    check measures the rate the kernel enforces (within 10%), as dd with
    O_DIRECT does in the same cgroup, and names the throttle."""
    limit = 16 << 20
    with loop_fs(tmp_path) as (mnt, majmin, name), cgroup("blkio") as cg:
        _, ver = cg.dirs["blkio"]
        if ver == 2:
            f = cg.write("blkio", "", "io.max", "%s rbps=%d" % (majmin, limit))
        else:
            f = cg.write("blkio", "blkio.throttle.read_bps_device", "", "%s %d" % (majmin, limit))
        c = check_in(cg, "--no-gpu", "--max-bytes", "48M", "--files", "50", mnt)
        dd = dd_MBps(cg, os.path.join(mnt, "big"))
    seq = c["storage.seq_read"]
    assert seq["details"]["method"] == "o_direct"
    assert seq["measured"] == pytest.approx(limit / 1e6, rel=0.10), seq
    assert dd == pytest.approx(limit / 1e6, rel=0.10)  # the witness agrees with the throttle
    assert seq["verdict"] == "below_spec" and seq["expected"] == 200
    assert "the cgroup limits reads from %s to 16.8 MB/s (%s)" % (name, f) in seq["cause"]
    fs = c["storage.fs"]
    assert fs["verdict"] == "below_spec" and "the platform throttles I/O" in fs["cause"]
    assert fs["details"]["fstype"] == "ext4" and fs["details"]["device"] == name
    assert fs["details"]["limit_read_Bps"] == limit


def test_throttled_small_files(tmp_path):
    """Reads per second throttled to 100: each small file (dropped from the
    cache first) needs at least one, so at most 100 files a second, and the
    per-file latency says so."""
    with loop_fs(tmp_path, big_mib=4, small=150) as (mnt, majmin, name), cgroup("blkio") as cg:
        _, ver = cg.dirs["blkio"]
        if ver == 2:
            cg.write("blkio", "", "io.max", "%s riops=100" % majmin)
        else:
            cg.write("blkio", "blkio.throttle.read_iops_device", "", "%s 100" % majmin)
        c = check_in(cg, "--no-gpu", "--files", "150", "--threads", "4", mnt)
    sm = c["storage.small_files"]
    assert sm["details"]["files"] >= 50
    assert 40 <= sm["details"]["files_per_s"] <= 110, sm
    assert sm["verdict"] == "below_spec" and sm["details"]["mean_ms"] > 2
    assert "the cgroup limits reads from %s to 100 per second" % name in sm["cause"]
    assert "pack small files into shards" in sm["cause"]


def test_unthrottled_read_agrees_with_dd(tmp_path):
    """No throttle: the verdict is the one dd's figure, taken before and
    after, gives; the figure within a factor 3 of dd's (the same device,
    a shared machine)."""
    with loop_fs(tmp_path, big_mib=48, small=40) as (mnt, majmin, name), cgroup("blkio") as cg:
        before = dd_MBps(cg, os.path.join(mnt, "big"))
        c = check_in(cg, "--no-gpu", "--max-bytes", "48M", mnt)
        after = dd_MBps(cg, os.path.join(mnt, "big"))
    seq = c["storage.seq_read"]
    lo, hi = min(before, after), max(before, after)
    assert lo / 3 <= seq["measured"] <= hi * 3, (seq["measured"], before, after)
    if lo >= 400:
        assert seq["verdict"] == "to_spec"
    elif hi < 100:
        assert seq["verdict"] == "below_spec"
    fs = c["storage.fs"]
    assert fs["verdict"] == "to_spec" and fs["details"]["kind"] == "local disk"
    assert "loop" in fs["text"] and "fs.img" in fs["text"]  # the loop device's backing file
    assert c["storage.small_files"]["details"]["files"] == 40


def test_memory_file_system(tmp_path):
    with tmpfs(tmp_path / "t", "64m") as d:
        with open(os.path.join(d, "x"), "wb") as f:
            f.write(os.urandom(4 << 20))
        c = run_check(*HOST_ARGS, d)
    fs = c["storage.fs"]
    assert fs["details"]["fstype"] == "tmpfs" and fs["details"]["kind"] == "memory file system"
    seq = c["storage.seq_read"]
    assert seq["verdict"] == "cannot_tell" and "memory bandwidth, not storage" in seq["cause"]
    assert c["storage.small_files"]["verdict"] == "cannot_tell"


def test_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    c = run_check(*HOST_ARGS, str(tmp_path / "empty"))
    assert c["storage.seq_read"]["verdict"] == "cannot_tell"
    assert "no regular file with data" in c["storage.seq_read"]["cause"]
    assert "no file of" in c["storage.small_files"]["cause"]
