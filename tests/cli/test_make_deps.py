"""The Makefile installs what a goal needs from Debian before it compiles
anything (Makefile, "Debian packages first"): the README's targets on a
machine that has none of the packages. The real installer and compiler are
replaced by two scripts that log their calls (DEPS_SH, CC and the others),
in a build folder of the test's own; the compiler fails, so make stops at
the first compile, and the log says what came first. tools/deps.sh itself
runs against a dpkg-query that reports chosen packages missing and a sudo
that only logs. Nothing is installed or built.

Run with: /usr/bin/python3 -m pytest tests/cli/test_make_deps.py
"""
import os
import re
import subprocess

import pytest

from conftest import ROOT, clean_env

# goal(s) -> the package sets tools/deps.sh is asked for
GOALS = [
    ((), ["build"]),
    (("all",), ["build"]),
    (("demo",), ["demo"]),
    (("test",), ["test"]),
    (("check",), ["check"]),
    (("bench",), ["demo"]),
    (("fuzz",), ["fuzz"]),
    (("truth",), ["test"]),
    (("install",), ["build"]),
    (("test-cli",), ["test"]),
    (("demo", "test"), ["test", "demo"]),
]

FAKE_DEPS = """#!/bin/sh
echo "deps $*" >>"{log}"
[ "{fail}" = 1 ] && exit 1
# --stamp FILE: written when missing, as tools/deps.sh does
if [ "$1" = --stamp ] && [ ! -f "$2" ]; then mkdir -p "$(dirname "$2")"; echo '#' >"$2"; fi
exit 0
"""
FAKE_CC = """#!/bin/sh
echo "cc $*" >>"{log}"
exit 1
"""


def make(tmp_path, *goals, fail_deps=False, jobs="-j2", extra=()):
    """Run the Makefile with the logging installer and compiler; returns
    (make's exit status, the logged calls in order)."""
    log = tmp_path / "calls.log"
    log.write_text("")
    deps, cc = tmp_path / "deps.sh", tmp_path / "cc"
    deps.write_text(FAKE_DEPS.format(log=log, fail=int(fail_deps)))
    cc.write_text(FAKE_CC.format(log=log))
    deps.chmod(0o755)
    cc.chmod(0o755)
    # .venv and the CUDA wheels look installed, so that make never fetches them
    for stamp in ("venv/.gpustarve-installed", "wheels/cu12/.installed",
                  "wheels/cu13/.installed"):
        p = tmp_path / stamp
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    env = clean_env()
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKE_RESTARTS"):
        env.pop(k, None)  # this test may itself run under make
    args = ["make", "-C", ROOT, "--no-print-directory", jobs, "BUILD=%s" % (tmp_path / "build"),
            "DEPS_SH=%s" % deps, "CC=%s" % cc, "CXX=%s" % cc, "FUZZ_CC=%s" % cc,
            "FUZZ_CXX=%s" % cc, "NVCC=%s" % cc, "VENV=%s" % (tmp_path / "venv"),
            "GPU_WHEELS=%s" % (tmp_path / "wheels"), "PREFIX=%s" % (tmp_path / "prefix"),
            "PYCACHE=%s" % (tmp_path / "pycache")]
    r = subprocess.run(args + list(extra) + list(goals), env=env, capture_output=True,
                       text=True, timeout=300)
    return r, log.read_text().splitlines()


@pytest.mark.parametrize("goals,sets", GOALS, ids=[" ".join(g) or "default" for g, _ in GOALS])
def test_packages_come_before_any_compile(tmp_path, goals, sets):
    r, calls = make(tmp_path, *goals)
    assert r.returncode != 0, "the logging compiler fails, so make must stop"
    assert calls, r.stderr
    first = calls[0].split()
    assert first[:2] == ["deps", "--stamp"] and first[3:] == sets, calls[:3]
    compiles = [i for i, c in enumerate(calls) if c.startswith("cc ")]
    assert compiles, "no compile was reached:\n%s" % r.stderr[-2000:]
    assert all(not c.startswith("cc ") for c in calls[:compiles[0]])
    # once more, with the stamp there: still checked first, nothing reread
    r, calls = make(tmp_path, *goals)
    assert calls[0].startswith("deps ") and calls[1].startswith("cc ")


def test_single_job_too(tmp_path):
    r, calls = make(tmp_path, "demo", jobs="-j1")
    assert calls[0].startswith("deps --stamp") and calls[0].endswith(" demo")
    assert calls[1].startswith("cc ")


def test_gpu_wheels_checks_python3_venv(tmp_path):
    """gpu-wheels and venv compile nothing: python3-venv is what they need."""
    r, calls = make(tmp_path, "gpu-wheels")
    assert r.returncode == 0, r.stderr
    assert calls == ["deps --stamp %s venv" % (tmp_path / "build" / ".deps" / "venv.mk")]


def test_failed_install_compiles_nothing(tmp_path):
    r, calls = make(tmp_path, "demo", fail_deps=True)
    assert r.returncode != 0
    assert calls and all(c.startswith("deps ") for c in calls), calls


@pytest.mark.parametrize("goals", [("help",), ("clean",), ("-n", "demo"), ("-q", "all"),
                                   ("DEPS_SH=", "demo")])
def test_nothing_installed_for(tmp_path, goals):
    """help and clean need no package; -n and -q only say what would run;
    DEPS_SH= asks for no installer."""
    cache = os.path.join(ROOT, "python", "gpustarve", "__pycache__")
    had = os.listdir(cache) if os.path.isdir(cache) else None
    r, calls = make(tmp_path, *goals)
    assert not [c for c in calls if c.startswith("deps ")], calls
    # the checkout's own bytecode is left alone (clean removes the PYCACHE named)
    left = set(os.listdir(cache)) if os.path.isdir(cache) else set()
    assert had is None or set(had) <= left, "make %s removed %s" % (" ".join(goals), cache)


def test_dry_run_says_the_install_first(tmp_path):
    """make -n demo prints the install step before any compile line, as a
    real run takes them (and runs neither)."""
    r, calls = make(tmp_path, "-n", "demo", jobs="-j1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first_deps = next(i for i, l in enumerate(lines) if "deps.sh --stamp" in l)
    first_cc = next(i for i, l in enumerate(lines) if " -c " in l)
    assert first_deps < first_cc, lines[:5]
    assert lines[first_deps].endswith(" demo"), lines[first_deps]
    assert not calls, calls


def test_sets_are_the_installers():
    """Every set the Makefile can ask for is one tools/deps.sh knows."""
    src = open(os.path.join(ROOT, "tools", "deps.sh")).read()
    known = set(re.findall(r"^\s*([a-z]+)\) want=", src, re.M))
    assert {s for _, sets in GOALS for s in sets} | {"venv"} <= known, known


FAKE_DPKG = """#!/bin/sh
# dpkg-query -W -f=... PKG...: every package installed but those in $MISSING
shift 2
for p in "$@"; do
    case " $MISSING " in
    *" $p "*) [ "$p" = zstd ] && echo "$p deinstall ok config-files" ;;
    *) echo "$p install ok installed" ;;
    esac
done
"""
FAKE_SUDO = """#!/bin/sh
echo "sudo $*" >>"{log}"
"""


def deps_sh(tmp_path, missing, *sets):
    """tools/deps.sh itself, as a user without root: dpkg-query reports
    MISSING missing and sudo logs what it is asked to do, doing nothing."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp_path / "sudo.log"
    for name, text in (("dpkg-query", FAKE_DPKG), ("sudo", FAKE_SUDO.format(log=log)),
                       ("id", "#!/bin/sh\necho 1000\n")):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    env = clean_env(PATH="%s:%s" % (bin_, os.environ["PATH"]), MISSING=" ".join(missing))
    r = subprocess.run([os.path.join(ROOT, "tools", "deps.sh"), "--stamp",
                        str(tmp_path / "stamp.mk")] + list(sets), env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return r.stderr, [c for c in calls if "apt-get install" in c]


def test_deps_sh_installs_what_is_missing(tmp_path):
    stamp = tmp_path / "stamp.mk"
    err, installs = deps_sh(tmp_path, ["libunwind-dev", "zstd", "python3-torch"], "build")
    # only the build set's missing ones (python3-torch is the demo's), once
    assert "installing Debian packages: libunwind-dev zstd" in err
    assert len(installs) == 1 and installs[0].endswith("--no-install-recommends libunwind-dev zstd")
    assert stamp.exists()
    # nothing missing: nothing asked of sudo, the stamp left as it was (make
    # reads itself again only when it changed)
    stamp.write_text("# old\n")
    err, installs = deps_sh(tmp_path, [], "build", "demo")
    assert installs == [] and err == "" and stamp.read_text() == "# old\n"
    # sets add up
    err, installs = deps_sh(tmp_path, ["python3-torch", "clang"], "demo", "fuzz")
    assert installs[0].endswith(" clang python3-torch") and stamp.read_text() != "# old\n"
