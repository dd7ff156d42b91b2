"""A C data-loading program under `gpustarve run`: every dataset byte in the
dump, one process record per process, stdout and exit code unchanged."""
import pytest

from conftest import (READ_DATASET, bytes_read_by_path, clean_env, dump, run_plain,
                      run_traced)

MODES = ["read", "pread", "readv", "fread", "mmap", "mixed"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("threads,workers", [(1, 0), (4, 0), (2, 3)])
def test_every_byte_accounted(built, dataset, tmp_path, mode, threads, workers):
    root, sizes = dataset
    cmd = [READ_DATASET, root, "--mode", mode, "--threads", str(threads),
           "--workers", str(workers), "--chunk", "65536"]
    plain = run_plain(cmd)
    traced = run_traced(cmd, tmp_path / "run")
    assert plain.returncode == 0, plain.stderr
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    recs, _, _ = dump(tmp_path / "run")
    procs = [r for r in recs if r["kind"] == "process"]
    assert len(procs) == 1 + workers
    assert len({p["pid"] for p in procs}) == 1 + workers
    if mode == "mmap":
        maps = [r for r in recs if r["kind"] in ("mmap", "mmap64") and
                (r.get("path") or "").startswith(root)]
        mapped = {}
        for r in maps:
            mapped[r["path"]] = mapped.get(r["path"], 0) + r["bytes"]
        assert mapped == {p: s for p, s in sizes.items() if s > 0}
        unmaps = [r for r in recs if r["kind"] == "munmap" and
                  (r.get("path") or "").startswith(root)]
        assert len(unmaps) == len(maps)
    elif mode == "mixed":
        got = bytes_read_by_path(recs, root)
        mapped = {r["path"]: r["bytes"] for r in recs if r["kind"] in ("mmap", "mmap64")
                  and (r.get("path") or "").startswith(root)}
        for p, s in sizes.items():
            assert got.get(p, 0) + mapped.get(p, 0) == s, p
    else:
        assert bytes_read_by_path(recs, root) == sizes
    # every open of a dataset file is seen, with the path, and closed again
    opens = [r for r in recs if r["kind"] in ("open", "open64", "openat", "openat64",
                                              "fopen", "fopen64")
             and (r.get("path") or "").startswith(root)]
    assert len(opens) == len(sizes)
    assert all(r["fd"] >= 0 and r["fd_kind"] == "file" for r in opens)


@pytest.mark.parametrize("code", [0, 3, 77])
def test_exit_code_passes_through(built, dataset, tmp_path, code):
    root, _ = dataset
    cmd = [READ_DATASET, root, "--exit", str(code)]
    assert run_traced(cmd, tmp_path / "run").returncode == code


def test_threads_are_named_and_distinct(built, dataset, tmp_path):
    root, _ = dataset
    run_traced([READ_DATASET, root, "--threads", "4"], tmp_path / "run")
    recs, _, _ = dump(tmp_path / "run")
    reader_tids = {r["tid"] for r in recs if r["kind"] == "pread64" or r["kind"] == "pread"
                   if (r.get("path") or "").startswith(root)}
    assert len(reader_tids) == 4
    named = {r["tid"] for r in recs if r["kind"] == "thread"}
    assert reader_tids <= named


def test_untraced_environment_untouched(built, tmp_path):
    """The traced program sees LD_PRELOAD, GPUSTARVE_DIR, the two injection
    paths (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH) and PYTHONPATH
    (the Python side), and nothing else new."""
    env = clean_env(KEEP_ME="1")
    p = run_traced(["/usr/bin/env"], tmp_path / "run", env=env)
    assert p.returncode == 0
    lines = p.stdout.decode().splitlines()
    new = {l.split("=", 1)[0] for l in lines} - set(env)
    assert new <= {"LD_PRELOAD", "GPUSTARVE_DIR", "CUDA_INJECTION64_PATH",
                   "NVTX_INJECTION64_PATH", "PYTHONPATH"}
    assert "KEEP_ME=1" in lines
