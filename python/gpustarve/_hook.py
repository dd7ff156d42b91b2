"""The import hook: wait for the program to import torch's DataLoader module,
then let gpustarve._torch instrument it.

Responsible for: a meta path finder that recognises one module name
(torch.utils.data.dataloader), lets the other finders find it, and wraps the
loader so the module is instrumented right after it has executed; or, when
the module is already imported, instrumenting it at once.

Must never: import torch (a program that never imports torch must run exactly
as before), change how any other module is found or loaded, or leave the
module with a foreign __loader__ (inspect and torch.jit read it).
"""
import sys

from ._frames import hide, wrap

TARGET = "torch.utils.data.dataloader"


class _PatchingLoader:
    """Delegates to the real loader; instruments the module after exec. Its
    exec_module is gpustarve._frames.wrap() of the real one (the module's
    own code runs under it: with the extension no gpustarve frame is on the
    stack then, else warnings and tracebacks skip the Python wrapper's)."""

    def __init__(self, inner):
        self._inner = inner

        def restore(ctx, args, r=None):
            # the module keeps the loader it would have had without us
            module = args[0]
            try:
                module.__loader__ = inner
                if getattr(module, "__spec__", None) is not None:
                    module.__spec__.loader = inner
            except Exception:
                pass

        def loaded(ctx, args, r):
            restore(ctx, args)
            _instrument(args[0])
        self.exec_module = wrap(inner.exec_module, after=hide(loaded), on_error=hide(restore))

    def create_module(self, spec):
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def __getattr__(self, name):  # get_source, get_filename, is_package, ...
        return getattr(self._inner, name)


# create_module stays a (hidden) Python method: it runs none of the module's
# code (a source module's is the default, None), and the inner loader may
# have none to wrap
_PatchingLoader.create_module = hide(_PatchingLoader.create_module)


class _Finder:
    """One-shot meta path finder for TARGET."""

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET or self._busy:
            return None
        self._busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or \
                    not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = _PatchingLoader(spec.loader)
            return spec
        finally:
            self._busy = False

    # Python < 3.4 style API, for finders that still call it.
    def find_module(self, fullname, path=None):
        return None

    def invalidate_caches(self):
        pass


_finder = None


def _instrument(module):
    global _finder
    if _finder is not None:
        try:
            sys.meta_path.remove(_finder)
        except ValueError:
            pass
        _finder = None
    try:
        from . import _torch
        _torch.instrument(module)
    except Exception as e:  # never break the program's import of torch
        try:
            sys.stderr.write("gpustarve: cannot instrument DataLoader: %s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


def install():
    """Instrument now when the module is loaded, else when it gets imported."""
    global _finder
    mod = sys.modules.get(TARGET)
    if mod is not None and getattr(mod, "DataLoader", None) is not None:
        _instrument(mod)
        return
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
