"""A PyTorch DataLoader script (Debian's torch) under `gpustarve run`: every
dataset byte in the dump, one process per worker, output unchanged."""
import os

import pytest

from conftest import PY, bytes_read_by_path, dump, run_plain, run_traced

SCRIPT = os.path.join(os.path.dirname(__file__), "dl_read.py")


@pytest.mark.parametrize("workers", [0, 3])
def test_dataloader_bytes_and_processes(built, dataset, tmp_path, workers):
    root, sizes = dataset
    cmd = [PY, SCRIPT, root, str(workers)]
    plain = run_plain(cmd)
    assert plain.returncode == 0, plain.stderr.decode()
    traced = run_traced(cmd, tmp_path / "run")
    assert traced.returncode == 0, traced.stderr.decode()
    assert traced.stdout == plain.stdout
    recs, _, _ = dump(tmp_path / "run")
    procs = [r for r in recs if r["kind"] == "process"]
    assert len(procs) == 1 + workers
    # forked workers share the trainer's argv: the trainer is the process
    # whose parent was not traced (the dump's order of processes is not
    # their order of birth)
    pids = {p["pid"] for p in procs}
    main = [p for p in procs if p["argv"][:2] == [PY, SCRIPT] and p["ppid"] not in pids]
    assert len(main) == 1, procs
    if workers:
        children = [p for p in procs if p["ppid"] == main[0]["pid"]]
        assert len(children) == workers
    assert bytes_read_by_path(recs, root) == sizes
    # with workers, dataset reads happen in the workers, not in the trainer
    reader_pids = {r["pid"] for r in recs if (r.get("path") or "").startswith(root)
                   and r["kind"] in ("read", "read_at")}
    if workers:
        assert main[0]["pid"] not in reader_pids
        # the trainer waits for batches on pipes/sockets: that wait is recorded
        waits = [r for r in recs if r["pid"] == main[0]["pid"] and
                 r["kind"] in ("poll", "ppoll", "select", "epoll_wait") and
                 r["fd_kind"] in ("pipe", "socket")]
        assert waits
    else:
        assert reader_pids == {main[0]["pid"]}
    assert not [r for r in recs if r["kind"] == "drops" and (r["dropped"] or r["lost"])]


def test_spawn_context_traces_exec_workers(built, tmp_path):
    """spawn workers exec a fresh interpreter: they are traced too."""
    root = tmp_path / "small"
    from conftest import make_files
    sizes = make_files(root, 24, seed=7, hi=5000)
    traced = run_traced([PY, SCRIPT, str(root), "2", "spawn"], tmp_path / "run")
    assert traced.returncode == 0, traced.stderr.decode()
    recs, _, _ = dump(tmp_path / "run")
    assert bytes_read_by_path(recs, str(root)) == sizes
    procs = [r for r in recs if r["kind"] == "process"]
    assert len(procs) >= 3
