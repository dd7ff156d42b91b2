"""CLI tests of gpustarve.

1. Golden cases in the manner of zstd's tests/cli-tests: cases/NAME.sh is run
   with /bin/sh in an empty directory, with `gpustarve` and `gs_mktrace` on
   PATH and GPUSTARVE_LIB pointing at a no-op library; its stdout, stderr and
   exit code must equal NAME.sh.stdout.exact, NAME.sh.stderr.exact (missing =
   empty) and NAME.sh.exit (missing = 0). GS_UPDATE_GOLDEN=1 rewrites them.
2. `dump --json` checked field by field against what gs_mktrace says it
   wrote (its --expect file), with the per-kind field meanings taken from
   trace/gs_format.h and the collector's contract, not from the analyzer.
3. `run`: exit status, stdout, environment, run directory, signals.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import (GS, HERE, REAL_LIB, ROOT, clean_env, default_signals, run, wait_for,
                      wait_for_file)

CASES_DIR = os.path.join(HERE, "cases")
CASES = sorted(f for f in os.listdir(CASES_DIR) if f.endswith(".sh"))
UPDATE = os.environ.get("GS_UPDATE_GOLDEN") == "1"


# ---- 1. golden cases -------------------------------------------------------------

def _golden_env(gs, mktrace, noop_lib):
    path = os.pathsep.join([os.path.dirname(gs), os.path.dirname(mktrace), "/usr/bin", "/bin"])
    return clean_env(PATH=path, GPUSTARVE_LIB=noop_lib)


@pytest.mark.parametrize("case", CASES)
def test_golden(case, gs, mktrace, noop_lib, tmp_path):
    script = os.path.join(CASES_DIR, case)
    p = run(["/bin/sh", script], cwd=tmp_path, env=_golden_env(gs, mktrace, noop_lib))
    got = {"stdout.exact": p.stdout, "stderr.exact": p.stderr,
           "exit": b"%d\n" % p.returncode}
    for suffix, actual in got.items():
        path = script + "." + suffix
        empty = b"0\n" if suffix == "exit" else b""
        if UPDATE:
            if actual != empty:
                with open(path, "wb") as f:
                    f.write(actual)
            elif os.path.exists(path):
                os.unlink(path)
            continue
        expected = empty
        if os.path.exists(path):
            with open(path, "rb") as f:
                expected = f.read()
        assert actual.decode(errors="replace") == expected.decode(errors="replace"), \
            "%s: %s differs" % (case, suffix)


# ---- 2. dump --json field by field -------------------------------------------------

def _kind_table():
    """{name: field mask} from trace/gs_format.h (the format's contract)."""
    text = open(os.path.join(ROOT, "trace", "gs_format.h")).read()
    consts = {m.group(1): 1 << int(m.group(2))
              for m in re.finditer(r"(GS_F_\w+) = 1u << (\d+)", text)}
    for name in ("GS_IO_FIELDS", "GS_IOO_FIELDS", "GS_GPU_FIELDS", "GS_CUDA_FIELDS"):
        m = re.search(r"#define %s \(([^)]*)\)" % name, text)
        consts[name] = eval(m.group(1).replace("|", " | "), {}, consts)
    table = {}
    for m in re.finditer(r'X\((\w+), (\d+), "([^"]+)", ([^),]*), (\w+)\)', text):
        table[m.group(3)] = eval(m.group(4), {}, consts) if m.group(4) != "0" else 0
    return table, consts


KINDS, F = _kind_table()
FDKIND = {0: "unknown", 1: "file", 2: "pipe", 3: "socket", 4: "dir", 5: "other"}
READ_KINDS = {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2",
              "preadv64v2", "__read_chk", "__pread_chk", "__pread64_chk", "read_at", "readv_at",
              "__read_chk_at", "fgets"}
OPEN_KINDS = {"open", "open64", "openat", "openat64", "creat", "fopen", "fopen64"}
WAIT_KINDS = {"poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait"}


def _s(hexstr):
    """A string of the expect file as dump must print it: invalid UTF-8
    replaced by U+FFFD per maximal subpart (Python's own 'replace')."""
    return None if hexstr is None else bytes.fromhex(hexstr).decode("utf-8", "replace")


def _dir(d):
    return ["unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"][d] if d < 6 else "unknown"


def _mem(m):
    return (["unknown", "pageable", "pinned", "device", "managed", "array"][m]
            if m < 6 else "unknown")


def _sync(t):
    return (["unknown", "event_synchronize", "stream_wait_event", "stream_synchronize",
             "context_synchronize"][t] if t < 5 else "unknown")


RANGE_KINDS = {"nvtx_push", "nvtx_pop", "nvtx_start", "nvtx_end"}


def pair_ranges(events, strings):
    """What dump prints for one process's events (in dump order): NVTX
    push/pop (per thread and domain) and start/end (by id) become one
    "range" line at the closing record; unclosed ones follow at the end,
    by start time, with dur_ns None. strings: id -> text of the process."""
    out, pushes, starts = [], [], []

    def rng(o, end):
        return {"pid": o["pid"], "tid": o["tid"], "kind": "range", "ts_ns": o["ts"],
                "dur_ns": None if end is None else end - o["ts"], "name": _s(o["str"]),
                "domain": strings.get(o["aux"]) if o["aux"] else None}

    for e in events:
        k = e["kind"]
        if k == "nvtx_push":
            pushes.append(e)
        elif k == "nvtx_start":
            starts.append(e)
        elif k == "nvtx_pop":
            for i in range(len(pushes) - 1, -1, -1):
                if pushes[i]["tid"] == e["tid"] and pushes[i]["aux"] == e["aux"]:
                    out.append(rng(pushes.pop(i), e["ts"]))
                    break
        elif k == "nvtx_end":
            for i, o in enumerate(starts):
                if o["aux2"] == e["aux2"]:
                    out.append(rng(starts.pop(i), e["ts"]))
                    break
        else:
            x = expected_json_event(e)
            if k == "mark":
                x["domain"] = strings.get(e["aux"]) if e["aux"] else None
            out.append(x)
    rest = sorted(pushes + starts, key=lambda o: o["ts"])
    out.extend(rng(o, None) for o in rest)
    return out


def _extras(e):
    k, aux, aux2 = e["kind"], e["aux"], e["aux2"]
    if k in ("open", "open64", "creat", "dup3", "fstatat", "fstatat64", "__fxstatat",
             "__fxstatat64"):
        return {"flags": aux}
    if k in ("openat", "openat64"):
        return {"flags": aux, "mode": aux2}
    if k == "statx":
        return {"flags": aux, "mask": aux2}
    if k in ("readv", "readv_at", "preadv", "preadv64"):
        return {"iovcnt": aux}
    if k in ("preadv2", "preadv64v2"):
        return {"iovcnt": aux, "flags": aux2}
    if k in ("fopen", "fopen64"):
        return {"mode": aux.to_bytes(8, "little").split(b"\0")[0].decode()}
    if k in ("fread", "fread_unlocked"):
        return {"size": aux}
    if k in ("mmap", "mmap64"):
        return {"prot": aux, "flags": aux2}
    if k == "munmap":
        return {"addr": aux}
    if k in WAIT_KINDS:
        return {"timeout_ms": None if aux == 0 else aux - 1}
    if k == "thread":
        return {"target_tid": aux, "name": _s(e["str"])}
    if k == "host_cpu":
        return {"busy_ns": e["bytes"], "idle_ns": aux, "cpus": aux2}
    if k == "cpu_limits":
        return {"affinity_cpus": aux, "quota_millicpus": aux2, "online_cpus": e["bytes"]}
    if k == "faults":
        return {"target_tid": aux, "faults": aux2}
    if k == "cpu":
        has, src = (aux >> 40) & 0xff, (aux >> 32) & 0xff
        return {"target_tid": aux & 0xffffffff,
                "source": {0: "periodic", 1: "marker"}.get(src, "unknown"),
                "cpu_ns": e["bytes"], "runq_ns": aux2 if has & 1 else None,
                "majflt": e.get("dev", 0) if has & 2 else None,
                "nvcsw": e.get("stream", 0) if has & 4 else None,
                "nivcsw": e.get("corr", 0) if has & 4 else None,
                "storage_read_bytes": e["ret"] if has & 8 else None}
    if k == "drops":
        return {"dropped": aux, "lost": aux2}
    if k == "note":
        return {"code": aux, "text": _s(e["str"])}
    if k == "exec":
        return {"path": _s(e["str"])}
    if k == "exit":
        return {"status": aux, "how": ["exit", "_exit", "signal"][aux2]}
    gpu_where = {"device": e.get("dev", 0), "stream": e.get("stream", 0),
                 "correlation": e.get("corr", 0)}
    if k == "gpu_kernel":
        return dict(name=_s(e["str"]), **gpu_where)
    if k == "gpu_memcpy":
        return dict(direction=_dir(aux & 0xff), bytes=e["bytes"], src_mem=_mem((aux >> 8) & 0xff),
                    dst_mem=_mem((aux >> 16) & 0xff), **gpu_where)
    if k == "gpu_memset":
        return dict(bytes=e["bytes"], mem=_mem(aux & 0xff), **gpu_where)
    if k == "gpu_sync":
        return dict(sync=_sync(aux), **gpu_where)
    if k == "gpu_device":
        return {"device": e.get("dev", 0), "name": _s(e["str"]), "bytes": e["bytes"],
                "sms": aux, "compute_capability": "%d.%d" % (aux2 // 10, aux2 % 10)}
    if k == "gpu_drops":
        return {"dropped": aux}
    if k == "cuda_memcpy":
        return dict(api=_s(e["str"]), direction=_dir(aux & 0xff), bytes=e["bytes"],
                    host_mem=_mem((aux >> 8) & 0xff), **gpu_where)
    if k == "cuda_sync":
        return dict(api=_s(e["str"]), event=aux2, **gpu_where)
    if k == "cuda_host_mem":
        return {"api": _s(e["str"]), "addr": aux, "bytes": e["bytes"], "flags": aux2}
    if k == "mark":
        return {"name": _s(e["str"]), "domain": None}  # domain: resolved in pair_ranges
    if k == "mapping":
        return {"path": _s(e["str"]), "start": aux, "end": (aux + e["bytes"]) % (1 << 64),
                "file_offset": e["offset"] % (1 << 64), "build_id": None}
    out = {}
    if KINDS[k] & F["GS_F_AUX"]:
        out["aux"] = aux
    if KINDS[k] & F["GS_F_AUX2"]:
        out["aux2"] = aux2
    return out


def expected_json_event(e):
    f = KINDS[e["kind"]]
    out = {"pid": e["pid"], "tid": e["tid"], "kind": e["kind"], "ts_ns": e["ts"],
           "dur_ns": e["dur"]}
    if f & F["GS_F_FD"]:
        out.update(fd=e["fd"], fd_kind=FDKIND[e["fd_kind"]], path=_s(e["str"]),
                   bytes=e["bytes"], ret=e["ret"])
        if f & F["GS_F_OFFSET"]:
            out["offset"] = e["offset"]
    elif f & F["GS_F_RET"] and e["kind"] != "cpu":
        out["ret"] = e["ret"]
    out.update(_extras(e))
    return out


def _format_version():
    with open(os.path.join(ROOT, "trace", "gs_format.h")) as f:
        text = f.read()
    return "%s.%s" % (re.search(r"#define GS_VERSION_MAJOR (\d+)", text).group(1),
                      re.search(r"#define GS_VERSION_MINOR (\d+)", text).group(1))


# the version the fixtures' writer stamps (trace/gs_format.h)
FORMAT_VERSION = _format_version()


def expected_json_process(p):
    nul = lambda v: None if v < 0 else v
    return {"kind": "process", "pid": p["pid"], "ppid": p["ppid"], "host": _s(p["host"]),
            "argv": [_s(a) for a in p["argv"]], "mono_ns": p["mono_ns"],
            "real_ns": p["real_ns"], "rank": nul(p["rank"]), "local_rank": nul(p["local_rank"]),
            "world_size": nul(p["world_size"]), "exec_seq": p["exec_seq"],
            "forked": bool(p["flags"] & 1), "version": FORMAT_VERSION, "file": p["file"]}


def load_expect(path):
    """Per process (in file-name order): (process record, events in dump
    order, damage record or None)."""
    procs, cur = [], None
    for line in open(path):
        r = json.loads(line)
        if r["type"] == "process":
            cur = [r, [], None]
            procs.append(cur)
        elif r["type"] == "event":
            cur[1].append(r)
        else:
            cur[2] = r
    for p in procs:  # dump sorts each frame by ts, stably
        frames = {}
        for e in p[1]:
            frames.setdefault(e["frame"], []).append(e)
        p[1] = [e for fi in sorted(frames) for e in sorted(frames[fi], key=lambda e: e["ts"])]
    procs.sort(key=lambda p: os.path.basename(p[0]["file"]))
    return procs


def make_trace(mktrace, tmp_path, *args, name="run"):
    """Writes tmp_path/name with gs_mktrace (file paths relative to tmp_path,
    as dump will be run there); returns (name, load_expect(...))."""
    expect = str(tmp_path / (name + ".expect"))
    subprocess.run([mktrace, "--expect", expect] + list(args) + [name], check=True,
                   cwd=tmp_path)
    return name, load_expect(expect)


def dump_json(gs, path, *opts, cwd=None):
    p = run([gs, "dump", "--json"] + list(opts) + [path], cwd=cwd)
    return [json.loads(l) for l in p.stdout.decode().splitlines()], p


def check_json_dump(gs, out, procs, cwd):
    recs, p = dump_json(gs, out, cwd=cwd)
    want = []
    for proc, events, damage in procs:
        if damage is not None and damage["offset"] == 0:
            continue  # header unreadable: nothing printed for this file
        want.append(expected_json_process(proc))
        want.extend(pair_ranges(events, {}))
        if damage is not None:
            # the reader's closing record: the records of damaged frames it
            # could still count (by their headers) are lost
            want.append("closing drops")
    at = 0
    for i, exp in enumerate(want):
        if exp == "closing drops":
            if at < len(recs) and recs[at]["kind"] == "drops" and recs[at].get("pid") is not None \
                    and recs[at]["lost"] > 0 and (at + 1 == len(recs) or "file" in recs[at + 1]):
                want[i] = recs[at]
                at += 1
            continue
        at += 1
    want = [w for w in want if w != "closing drops"]
    assert len(recs) == len(want)
    for i, (got, exp) in enumerate(zip(recs, want)):
        assert got == exp, "record %d" % i
    return p


@pytest.mark.parametrize("args", [
    ["-e", "300", "-F", "32"],
    ["-p", "3", "-t", "3", "-e", "500", "-F", "17", "--kinds", "all"],
    ["-e", "400", "-F", "25", "--unsorted", "--kinds", "all"],
    ["-p", "2", "-e", "200", "--nasty", "--kinds", "all", "-F", "50"],
], ids=["mix", "all-kinds-3procs", "unsorted", "nasty-strings"])
def test_dump_json_fields(gs, mktrace, tmp_path, args):
    out, procs = make_trace(mktrace, tmp_path, *args)
    p = check_json_dump(gs, "run", procs, cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == b""


def test_every_kind_is_covered(gs, mktrace, tmp_path):
    """--kinds all really emits every event kind of gs_format.h, so the field
    test above sees each of them."""
    _, procs = make_trace(mktrace, tmp_path, "-e", "2000", "--kinds", "all")
    seen = {e["kind"] for e in procs[0][1]}
    assert seen == {k for k, f in KINDS.items() if f}


@pytest.mark.parametrize("damage", [
    ["--truncate"], ["--corrupt", "1"], ["--garbage", "7"], ["--garbage", "100"],
    ["--version", "2.0"], ["--bad-magic"],
    ["--truncate", "--damage-proc", "0"], ["--corrupt", "0", "--damage-proc", "1"],
], ids=lambda a: "_".join(a).replace("--", ""))
def test_damaged_dump_is_partial_then_exit_2(gs, mktrace, tmp_path, damage):
    out, procs = make_trace(mktrace, tmp_path, "-p", "3", "-e", "200", "-F", "20", *damage)
    p = check_json_dump(gs, "run", procs, cwd=tmp_path)
    assert p.returncode == 2
    bad = [(proc, dmg) for proc, _, dmg in procs if dmg]
    assert len(bad) == 1
    proc, dmg = bad[0]
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert re.fullmatch(r"gpustarve: %s: .+ at offset %d \(%d bytes unread\)" %
                        (re.escape(proc["file"]), dmg["offset"], dmg["unread"]), lines[0]), lines


def test_summary_json_matches_events(gs, mktrace, tmp_path):
    out, procs = make_trace(mktrace, tmp_path, "-p", "2", "-t", "2", "-e", "700",
                            "--kinds", "all")
    recs, p = dump_json(gs, "run", "--summary", cwd=tmp_path)
    assert p.returncode == 0
    assert [r["kind"] for r in recs] == ["summary", "summary", "total"]
    for r, (proc, events, _) in zip(recs, procs):
        by_kind = {}
        for e in events:
            by_kind[e["kind"]] = by_kind.get(e["kind"], 0) + 1
        got_bytes = 0
        for e in events:
            if e["kind"] in READ_KINDS:
                got_bytes += max(e["ret"], 0)
            elif e["kind"] in ("fread", "fread_unlocked"):
                got_bytes += max(e["ret"], 0) * e["aux"]
        io = sum(e["dur"] for e in events
                 if KINDS[e["kind"]] & F["GS_F_FD"] and e["kind"] not in WAIT_KINDS)
        assert r["pid"] == proc["pid"]
        assert r["events"] == len(events)
        assert r["by_kind"] == by_kind
        assert r["bytes_read"] == got_bytes
        assert r["files_opened"] == sum(1 for e in events
                                        if e["kind"] in OPEN_KINDS and e["ret"] >= 0)
        assert r["paths_read"] == len({e["str"] for e in events
                                       if e["str"] and (e["kind"] in READ_KINDS or
                                                        e["kind"].startswith("fread"))})
        assert r["io_ns"] == io
        assert r["wait_ns"] == sum(e["dur"] for e in events if e["kind"] in WAIT_KINDS)
        drops = [e for e in events if e["kind"] == "drops"]
        assert r["dropped"] == max((e["aux"] for e in drops), default=0)
        assert r["lost"] == max((e["aux2"] for e in drops), default=0)
        assert r["threads"] == 2
        assert r["role"] == ("main, rank 0" if proc["ppid"] == 999 else
                             "fork of %d" % proc["ppid"])
    total = recs[-1]
    assert total["processes"] == 2
    assert total["events"] == recs[0]["events"] + recs[1]["events"]


def test_json_escaper_against_python(gs, mktrace, tmp_path):
    """Every nasty string comes back as Python decodes the same bytes with
    errors='replace' (control characters escaped, invalid UTF-8 -> U+FFFD)."""
    out, procs = make_trace(mktrace, tmp_path, "-e", "200", "--nasty", "--kinds", "read")
    raw = run([gs, "dump", "--json", "run"], cwd=tmp_path).stdout
    for line in raw.splitlines():
        assert all(b >= 0x20 for b in line)  # no raw control byte inside a line
        line.decode("utf-8")  # valid UTF-8 throughout
    recs = [json.loads(l) for l in raw.splitlines()]
    paths = {r["path"] for r in recs if r.get("path")}
    want = {_s(e["str"]) for e in procs[0][1] if e["str"] and e["kind"] == "read"}
    assert paths == want
    assert "/data/bad\ufffd\ufffd" in paths and "/data/surrogate\ufffd\ufffd\ufffd" in paths
    assert "/data/cut\ufffd" in paths and "/data/ok-\u00e9\u20ac\U0001F600" in paths


def test_text_dump_one_line_per_event(gs, mktrace, tmp_path):
    out, procs = make_trace(mktrace, tmp_path, "-p", "2", "-e", "300", "--nasty",
                            "--kinds", "all")
    p = run([gs, "dump", "run"], cwd=tmp_path)
    assert p.returncode == 0
    lines = [l for l in p.stdout.decode("utf-8").splitlines() if not l.startswith("#")]
    assert len(lines) == sum(len(pair_ranges(ev, {})) for _, ev, _ in procs)


def test_help_cmd_equals_cmd_help(gs):
    for cmd in ("run", "dump"):
        a = run([gs, "help", cmd])
        b = run([gs, cmd, "--help"])
        assert a.returncode == b.returncode == 0
        assert a.stdout == b.stdout and a.stdout.startswith(b"usage: gpustarve " + cmd.encode())
        assert a.stderr == b.stderr == b""


def test_closed_stdout_is_a_failure(gs, mktrace, tmp_path):
    make_trace(mktrace, tmp_path, "-e", "1000")
    with open("/dev/full", "wb") as full:
        p = run([gs, "dump", "run"], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE)
    assert p.returncode == 1
    assert b"error writing standard output" in p.stderr


def test_dump_a_million_events(gs, mktrace, tmp_path):
    """1M events dump completely in text, JSON and summary form. (How fast:
    `make bench`, bench/bench_report.py; a test asserts behaviour, not
    speed.)"""
    subprocess.run([mktrace, "-e", "1000000", "-F", "4096", "--file", "big.gst"],
                   cwd=tmp_path, check=True)
    for mode in ([], ["--json"]):
        with open(str(tmp_path / "out"), "wb") as out:
            p = run([gs, "dump"] + mode + ["big.gst"], cwd=tmp_path, stdout=out)
        assert p.returncode == 0, p.stderr
        with open(str(tmp_path / "out"), "rb") as f:
            lines = sum(1 for l in f if not l.startswith(b"#"))
        assert lines >= 1000000, (mode, lines)
    p = run([gs, "dump", "--summary", "big.gst"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert re.search(rb"^  events +1000000 ", p.stdout, re.M), p.stdout


# ---- 3. run -----------------------------------------------------------------------

def run_gs(args, lib, tmp_path, env_extra=None, **kw):
    env = clean_env(GPUSTARVE_LIB=lib, **(env_extra or {}))
    return run([GS, "run"] + args, env=env, cwd=tmp_path, **kw)


@pytest.mark.parametrize("script,code", [("exit 0", 0), ("exit 3", 3), ("exit 255", 255),
                                         ("kill -TERM $$", 143), ("kill -KILL $$", 137)])
def test_run_exit_status(gs, lib, tmp_path, script, code):
    p = run_gs(["-o", "d", "--", "sh", "-c", script], lib, tmp_path)
    assert p.returncode == code, p.stderr
    assert p.stdout == b""


def test_run_stdout_identical(gs, lib, tmp_path):
    cmd = ["sh", "-c", r'printf "a\0b\n%s\n" "x  y"; printf "no newline"; seq 1 20000; '
                       r'echo err >&2']
    plain = run(cmd, env=clean_env(), cwd=tmp_path)
    traced = run_gs(["-o", "d", "--"] + cmd, lib, tmp_path)
    assert traced.stdout == plain.stdout
    assert traced.returncode == 0
    err = traced.stderr.decode().splitlines()
    assert err[0] == "gpustarve: tracing to d"
    assert "err" in err


def test_run_quiet_prints_nothing(gs, lib, tmp_path):
    p = run_gs(["-q", "-o", "d", "--", "true"], lib, tmp_path)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b""


def test_run_environment(gs, noop_lib, tmp_path):
    other = str(tmp_path / "other.so")
    subprocess.run(["cp", noop_lib, other], check=True)
    cmd = ["sh", "-c", 'printf "%s\\n" "$LD_PRELOAD" "$GPUSTARVE_DIR" "$KEEP"']
    p = run_gs(["-o", "d", "--"] + cmd, noop_lib, tmp_path,
               env_extra={"LD_PRELOAD": other, "KEEP": "kept"})
    assert p.returncode == 0, p.stderr
    preload, gdir, keep = p.stdout.decode().splitlines()
    assert preload == other + ":" + os.path.realpath(noop_lib)
    assert gdir == os.path.realpath(str(tmp_path / "d")) and os.path.isabs(gdir)
    assert keep == "kept"
    # no LD_PRELOAD before: just the library
    p = run_gs(["-o", "d", "--"] + cmd, noop_lib, tmp_path)
    assert p.stdout.decode().splitlines()[0] == os.path.realpath(noop_lib)


@pytest.mark.parametrize("how", ["--stacks", "GPUSTARVE_STACKS=1"])
def test_run_stacks_preload_the_unwinder_after_the_library(gs, noop_lib, tmp_path, how):
    """The library is not linked with libunwind: with stacks, libgcc_s and
    libunwind are preloaded after it (static TLS; libgcc_s's _Unwind_* first)."""
    other = str(tmp_path / "other.so")
    subprocess.run(["cp", noop_lib, other], check=True)
    cmd = ["sh", "-c", 'printf "%s\\n" "$LD_PRELOAD" "$GPUSTARVE_STACKS"']
    extra = {"LD_PRELOAD": other}
    args = ["-o", "d"] + (["--stacks"] if how == "--stacks" else []) + ["--"] + cmd
    if how != "--stacks":
        extra["GPUSTARVE_STACKS"] = "1"
    p = run_gs(args, noop_lib, tmp_path, env_extra=extra)
    assert p.returncode == 0, p.stderr
    preload, stacks = p.stdout.decode().splitlines()
    assert preload == other + ":" + os.path.realpath(noop_lib) + ":libgcc_s.so.1:libunwind.so.8"
    assert stacks == "1"
    # without stacks: the library alone
    p = run_gs(["-o", "d2", "--"] + cmd, noop_lib, tmp_path)
    assert p.stdout.decode().splitlines()[0] == os.path.realpath(noop_lib)


def test_run_default_directory_names(gs, lib, tmp_path):
    p = run_gs(["--", "true"], lib, tmp_path)
    assert p.returncode == 0
    made = os.listdir(tmp_path)
    assert len(made) == 1 and re.fullmatch(r"gpustarve-\d{8}-\d{6}", made[0]), made
    # the name of this second (and of the next minute: a loaded machine may
    # take seconds to start the next run) taken: a -2 suffix
    now = time.time()
    taken = {time.strftime("gpustarve-%Y%m%d-%H%M%S", time.localtime(now + i))
             for i in range(0, 60)}
    for t in taken:
        os.makedirs(str(tmp_path / t), exist_ok=True)
    p = run_gs(["--", "true"], lib, tmp_path)
    assert p.returncode == 0
    new = set(os.listdir(tmp_path)) - taken - set(made)
    assert len(new) == 1 and re.fullmatch(r"gpustarve-\d{8}-\d{6}-2", new.pop()), new
    assert re.search(r"^gpustarve: tracing to gpustarve-\d{8}-\d{6}-2$", p.stderr.decode(), re.M)


def test_run_existing_output_dir_is_used(gs, mktrace, noop_lib, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    p = run_gs(["-o", "d", "--", "true"], noop_lib, tmp_path)
    assert p.returncode == 0
    assert (tmp_path / "d" / "keep").read_text() == "x"


def test_run_output_dir_with_traces_needs_append(gs, mktrace, noop_lib, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    subprocess.run([mktrace, "-e", "10", "--file", "d/old.gst"], cwd=tmp_path, check=True)
    old = (tmp_path / "d" / "old.gst").read_bytes()
    p = run_gs(["-o", "d", "--", "touch", "marker"], noop_lib, tmp_path)
    assert p.returncode == 2
    assert "'d' already holds 1 trace file" in p.stderr.decode()
    assert "--append" in p.stderr.decode()
    assert not (tmp_path / "marker").exists()
    assert sorted(os.listdir(str(tmp_path / "d"))) == ["keep", "old.gst"]
    assert (tmp_path / "d" / "old.gst").read_bytes() == old
    p = run_gs(["--append", "-o", "d", "--", "touch", "marker"], noop_lib, tmp_path)
    assert p.returncode == 0
    assert (tmp_path / "marker").exists()
    assert (tmp_path / "d" / "old.gst").read_bytes() == old
    # the closing line counts only what this run wrote, not old.gst
    assert p.stderr.decode().splitlines()[-1].startswith(
        "gpustarve: no trace files were written to d ")


@pytest.mark.parametrize("out,why", [("file/sub/dir", "Not a directory"),
                                     ("file", "exists and is not a directory")])
def test_run_uncreatable_dir_runs_nothing(gs, lib, tmp_path, out, why):
    (tmp_path / "file").write_text("")
    p = run_gs(["-o", out, "--", "touch", "marker"], lib, tmp_path)
    assert p.returncode == 2
    assert out in p.stderr.decode() and why in p.stderr.decode()
    assert not (tmp_path / "marker").exists()


def test_run_command_not_found(gs, lib, tmp_path):
    p = run_gs(["-o", "d", "--", "no-such-command-xyz"], lib, tmp_path)
    assert p.returncode == 127
    assert p.stderr.decode().splitlines()[-1] == \
        "gpustarve: no-such-command-xyz: command not found"
    assert not (tmp_path / "d").exists()  # created for nothing: removed again
    p = run_gs(["-o", "d", "--", "./missing"], lib, tmp_path)
    assert p.returncode == 127
    assert "./missing: No such file or directory" in p.stderr.decode()


def test_run_command_not_executable(gs, lib, tmp_path):
    (tmp_path / "script").write_text("#!/bin/sh\necho hi\n")
    os.chmod(str(tmp_path / "script"), 0o644)
    p = run_gs(["-o", "d", "--", "./script"], lib, tmp_path)
    assert p.returncode == 126
    assert "./script: Permission denied" in p.stderr.decode()


def test_run_program_exit_127_is_its_own(gs, lib, tmp_path):
    p = run_gs(["-o", "d", "--", "sh", "-c", "exit 127"], lib, tmp_path)
    assert p.returncode == 127
    assert "command not found" not in p.stderr.decode()


def test_run_library_not_found(gs, tmp_path):
    p = run([GS, "run", "-o", "d", "--", "touch", "marker"], cwd=tmp_path,
            env=clean_env(GPUSTARVE_LIB=str(tmp_path / "nope.so")))
    assert p.returncode == 2
    assert "GPUSTARVE_LIB=" in p.stderr.decode() and "nope.so" in p.stderr.decode()
    assert not (tmp_path / "marker").exists() and not (tmp_path / "d").exists()


def test_run_finds_library_next_to_executable(gs, noop_lib, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    subprocess.run(["cp", GS, str(bindir / "gpustarve")], check=True)
    subprocess.run(["cp", noop_lib, str(bindir / "libgpustarve.so")], check=True)
    cmd = ["sh", "-c", 'echo "$LD_PRELOAD"']
    p = run([str(bindir / "gpustarve"), "run", "-o", "d", "--"] + cmd, cwd=tmp_path,
            env=clean_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().strip() == os.path.realpath(str(bindir / "libgpustarve.so"))
    # installed layout: PREFIX/bin/gpustarve + PREFIX/lib/gpustarve/libgpustarve.so
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "gpustarve").mkdir(parents=True)
    subprocess.run(["cp", GS, str(prefix / "bin" / "gpustarve")], check=True)
    subprocess.run(["cp", noop_lib, str(prefix / "lib" / "gpustarve" / "libgpustarve.so")],
                   check=True)
    p = run([str(prefix / "bin" / "gpustarve"), "run", "-o", "d", "--"] + cmd, cwd=tmp_path,
            env=clean_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().strip().endswith("/prefix/lib/gpustarve/libgpustarve.so")
    os.unlink(str(prefix / "lib" / "gpustarve" / "libgpustarve.so"))
    p = run([str(prefix / "bin" / "gpustarve"), "run", "-o", "d2", "--", "true"], cwd=tmp_path,
            env=clean_env())
    assert p.returncode == 2 and b"cannot find libgpustarve.so" in p.stderr


def _start_and_wait_ready(lib, tmp_path, script):
    ready = tmp_path / "ready"
    env = clean_env(GPUSTARVE_LIB=lib)
    proc = subprocess.Popen([GS, "run", "-q", "-o", "d", "--", "sh", "-c", script],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_signals)
    def started():
        assert proc.poll() is None, proc.communicate()
        return ready.exists()

    wait_for(started, "child never started")
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                                 signal.SIGUSR1])
def test_run_forwards_signals(gs, lib, tmp_path, sig):
    name = signal.Signals(sig).name[3:]
    script = ('trap "echo got > got; exit 7" %s; touch ready; '
              'while :; do sleep 0.05; done' % name)
    proc = _start_and_wait_ready(lib, tmp_path, script)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7, err
    assert (tmp_path / "got").read_text() == "got\n"


def _child_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        kids = f.read().split()
    return int(kids[0]) if kids else None


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except (OSError, TypeError):
        return None


def test_run_forwarded_sigterm_kills_plain_child(gs, lib, tmp_path):
    proc = _start_and_wait_ready(lib, tmp_path, "touch ready; exec sleep 30")
    # the signal must reach sleep, not the shell before its exec
    wait_for(lambda: _comm(_child_of(proc.pid)) == "sleep", "the command never exec'd sleep")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    assert proc.returncode == 143


def test_run_usage_errors(gs, lib, tmp_path):
    for args in (["run"], ["run", "--"], ["run", "-o"], ["run", "--bogus", "--", "true"]):
        p = run([GS] + args, cwd=tmp_path, env=clean_env(GPUSTARVE_LIB=lib))
        assert p.returncode == 2, args
        assert b"Try 'gpustarve help run'." in p.stderr


@pytest.mark.skipif(not os.path.exists(REAL_LIB),
                    reason="build/libgpustarve.so not built yet (preload in progress)")
def test_run_with_real_collector_round_trip(gs, tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(100000))
    p = run([GS, "run", "-o", "d", "--", "cat", str(data)], cwd=tmp_path,
            env=clean_env(GPUSTARVE_LIB=REAL_LIB))
    assert p.returncode == 0, p.stderr
    assert p.stdout == data.read_bytes()
    last = p.stderr.decode().splitlines()[-1]
    assert re.fullmatch(r"gpustarve: traced 1 process, \d+ events, 0 dropped, 0 lost; "
                        r"see: gpustarve dump d", last), last
    recs, d = dump_json(gs, "d", cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    assert recs[0]["kind"] == "process" and recs[0]["argv"][0] == "cat"
    got = sum(max(r["ret"], 0) for r in recs
              if r.get("path") == str(data) and r["kind"] in READ_KINDS)
    assert got == 100000, "the collector saw %d of the 100000 bytes cat read" % got


# The command counts the SIGINTs it receives until a SIGUSR1 that the test
# sends to gpustarve after the command saw the first SIGINT: gpustarve
# forwards the SIGUSR1, and a forwarded SIGINT (signal 2, handled before
# signal 10) would have arrived before it. No time window involved.
COUNT_SIGINT = r"""
import signal
both = {signal.SIGINT, signal.SIGUSR1}
signal.pthread_sigmask(signal.SIG_BLOCK, both)
open("ready", "w").close()
got = []
while True:
    info = signal.sigtimedwait(both, 60)
    if info is None or info.si_signo == signal.SIGUSR1:
        break
    got.append((info.si_code, info.si_pid))
    if len(got) == 1:
        open("first", "w").close()
open("got", "w").write(repr(got))
"""


def test_run_does_not_forward_terminal_signals(gs, lib, tmp_path):
    """^C on the terminal reaches the command through the process group
    (si_code SI_KERNEL); gpustarve must not send it a second time."""
    import pty
    pid, master = pty.fork()
    if pid == 0:  # child: session leader on the pty, becomes gpustarve
        os.chdir(str(tmp_path))
        default_signals()
        os.execve(GS, [GS, "run", "-q", "-o", "d", "--", "/usr/bin/python3", "-c",
                       COUNT_SIGINT], clean_env(GPUSTARVE_LIB=lib))
    try:
        wait_for_file(tmp_path / "ready", "child never started")
        os.write(master, b"\x03")  # the terminal's interrupt character
        wait_for_file(tmp_path / "first", "the terminal's SIGINT did not arrive")
        os.kill(pid, signal.SIGUSR1)  # gpustarve passes it on: the end marker
        wait_for_file(tmp_path / "got", "child never finished")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    got = eval((tmp_path / "got").read_text())
    assert got, "the terminal's SIGINT did not arrive"
    assert all(code == 0x80 for code, _ in got), got  # SI_KERNEL only, nothing from gpustarve
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
