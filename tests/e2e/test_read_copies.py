"""Workers that read the same bytes (docs/report-schema.md, "Reads of the
same bytes"): the skip regime of advice_regimes.py, whose every worker reads
every record and keeps its share, counts as many copies of each byte as it
has workers, and the report says so; the same records split among the
workers (REGIME_SPLIT=1) count one. Whether the records are read with
preadv (skip) or in order with readv (skip-stream: a loader worker's
reads of a file carry their position, docs/trace-format.md). Read through
the page cache (REGIME_CACHED=1), the storage reads about one copy and the
report says the cache served the others; with O_DIRECT it does not.
Behaviour only: no step time is compared."""
import pytest

from conftest import (CLI, REGIMES_INTERP, REGIMES_PY, clean_env, report_json, run_plain,
                      run_traced, skip_file)


def traced(tmp_path, workers, split, stream, cached=False):
    regime = "skip-stream" if stream else "skip"
    cmd = [REGIMES_INTERP, REGIMES_PY, regime, str(workers), "40", skip_file()]
    env = clean_env(REGIME_SPLIT="1" if split else "0", REGIME_CACHED="1" if cached else "0")
    p = run_traced(cmd, tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return tmp_path / "run"


@pytest.mark.parametrize("stream", [False, True], ids=["preadv", "readv-in-order"])
@pytest.mark.parametrize("split", [False, True], ids=["each-reads-all", "split"])
def test_read_copies(tmp_path, split, stream):
    run = traced(tmp_path, 3, split, stream)
    loader = report_json(run)["loader"]
    assert loader["read_positioned_share"] > 0.9, loader
    text = run_plain([CLI, "report", str(run)], env=clean_env()).stdout.decode()
    if split:
        assert loader["read_copies"] < 1.2, loader
        assert "read by" not in text
    else:
        assert 2.5 <= loader["read_copies"] <= 3.0 + 1e-9, loader
        assert "each byte of their positioned reads read by" in text, text
    assert "the page cache served" not in text, text  # O_DIRECT: every copy from the storage


def test_copies_from_the_page_cache(tmp_path):
    """Each of 3 workers reads every record through the page cache: the
    storage reads each at most once, and the report says the cache served
    the other copies."""
    run = traced(tmp_path, 3, False, True, cached=True)
    loader = report_json(run)["loader"]
    assert 2.5 <= loader["read_copies"] <= 3.0 + 1e-9, loader
    text = run_plain([CLI, "report", str(run)], env=clean_env()).stdout.decode()
    assert "the page cache served the other copies" in text, text
