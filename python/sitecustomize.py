"""gpustarve's sitecustomize: starts the Python side of gpustarve in programs
run under `gpustarve run` (which puts this folder first on PYTHONPATH), then
runs the sitecustomize that Python would have run without us, so a
sitecustomize of the user, of a virtual environment or of the distribution
keeps working.

Must never: raise because of gpustarve, import torch, print to stdout, or
hide the next sitecustomize's own errors (they surface exactly as Python's
site module would show them).
"""


def _gpustarve_start():
    import os
    import sys
    if os.environ.get("GPUSTARVE_PYTHON", "1") == "0":
        return
    try:
        import gpustarve  # noqa: F401  (installs the DataLoader hook when traced)
    except Exception as e:
        try:
            sys.stderr.write("gpustarve: Python side not loaded: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass


def _gpustarve_chain():
    """Find the next sitecustomize on sys.path after this file's folder and
    run it as the module `sitecustomize`."""
    import importlib.machinery
    import importlib.util
    import os
    import sys

    def real(p):
        try:
            return os.path.realpath(p or os.curdir)
        except Exception:
            return p

    me = real(__file__)
    here = os.path.dirname(me)
    entries = list(sys.path)
    rest = None
    for i, p in enumerate(entries):
        if real(p) == here:
            rest = entries[i + 1:]
            break
    if rest is None:  # imported some other way: every entry but ours
        rest = entries
    rest = [p for p in rest if real(p) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    if spec.origin and real(spec.origin) == me:
        return
    mod = importlib.util.module_from_spec(spec)
    # RATIONALE: importlib returns whatever sys.modules holds once this file
    # has run, so `import sitecustomize` gives the program its own module.
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_gpustarve_start()
_gpustarve_chain()
