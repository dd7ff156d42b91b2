"""gpustarve import and the files around it: only regular files are read (a
FIFO cannot hang it), what it writes is private as `run`'s traces are, and a
failed import takes back what it made and nothing else."""
import os
import stat
import subprocess
import threading

import pytest

import gstest
from conftest import imp, mk, run


def test_fifo_input_is_refused_without_blocking(gs, tmp_path):
    """A FIFO no one writes into: refused at once (open would wait for a
    writer for ever), exit 2, no output directory made."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    out = tmp_path / "run"
    try:
        r = gstest.run([gs, "import", "-o", out, fifo], text=True, timeout=60)
    except subprocess.TimeoutExpired:
        # unblock the open the import is stuck in, so the test ends
        threading.Thread(target=lambda: open(fifo, "w").close(), daemon=True).start()
        pytest.fail("import blocked on the FIFO")
    assert r.returncode == 2, r.stderr
    assert "is a FIFO (named pipe), not a trace file" in r.stderr and r.stdout == ""
    assert not out.exists()


@pytest.mark.parametrize("path,what", [("/dev/null", "a character device"),
                                       (".", "a directory")])
def test_other_non_regular_inputs_are_refused(gs, tmp_path, path, what):
    r = run(gs, "import", "-o", str(tmp_path / "run"), path, check=False)
    assert r.returncode == 2, r.stderr
    assert "is %s, not a trace file" % what in r.stderr
    assert not (tmp_path / "run").exists()


def test_imported_run_is_private(gs, tmp_path):
    """Under umask 000 the directory is 0700 and its files 0600, the modes
    `run` gives its own (docs/collector-safety.md, "Private by default")."""
    src = mk(tmp_path / "t.json")
    out = tmp_path / "run"

    def open_umask():
        gstest.default_signals()
        os.umask(0)
    r = gstest.run([gs, "import", "-q", "-o", out, src], text=True, preexec_fn=open_umask)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700
    files = os.listdir(out)
    assert files and all(stat.S_IMODE(os.stat(out / f).st_mode) == 0o600 for f in files)


def test_failed_import_removes_what_it_made(gs, tmp_path):
    """The first file imports, the second is not a trace: the first one's
    output goes, and the directory the import made."""
    good = mk(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"hello")
    out = tmp_path / "run"
    r = run(gs, "import", "-o", str(out), good, str(bad), check=False)
    assert r.returncode == 2 and "not a trace-event JSON document" in r.stderr
    assert not out.exists()


def test_failed_import_leaves_what_was_there(gs, tmp_path):
    """Into an existing directory (no run in it): after the failure it holds
    exactly what it held before."""
    good = mk(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schemaVersion": 1}')
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = run(gs, "import", "-o", str(out), good, str(bad), check=False)
    assert r.returncode == 2 and "no traceEvents" in r.stderr
    assert os.listdir(out) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    imp(gs, out, good)  # still usable
    assert sorted(f.endswith(".gst") for f in os.listdir(out)) == [False, True]
