"""The contract of gpustarve._frames.wrap() (python/gpustarve/_cwrap.c's
header), checked on one implementation: `c` (gpustarve._cwrap.Wrapper,
loaded from the file given) or `py` (the Python wrappers used without it).
Prints "ok"; any broken promise is an AssertionError.

Usage: wrap_contract.py c|py PYDIR [EXTENSION]
"""
import gc
import importlib.machinery
import importlib.util
import inspect
import pickle
import sys
import traceback
import weakref

impl, pydir = sys.argv[1], sys.argv[2]
sys.path.insert(0, pydir)
from gpustarve import _frames  # noqa: E402

if impl == "c":
    path = sys.argv[3]
    loader = importlib.machinery.ExtensionFileLoader("gpustarve._cwrap", path)
    mod = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location("gpustarve._cwrap", path, loader=loader))

    def wrap(orig, before=None, after=None, on_error=None, reduce=None, after_star=False):
        return mod.Wrapper(orig, before, after, on_error, reduce, after_star)
else:
    def wrap(orig, before=None, after=None, on_error=None, reduce=None, after_star=False):
        if reduce is not None:
            return _frames._PyCall(orig, before, after, on_error, reduce, after_star)
        return _frames._py_wrapper(orig, before, after, on_error, after_star)

log = []


def stack_names():
    return [f.function for f in inspect.stack()[1:]]


class Thing(object):
    def method(self, x, y=2):
        """the method's doc"""
        log.append(("orig", x, y, stack_names()[:2]))
        if x == "raise":
            raise KeyError("from orig")
        return [x, y]


def before(args, kwargs):
    log.append(("before", len(args), kwargs))
    return None


def after(ctx, args, res):
    log.append(("after", ctx, res))


def on_error(ctx, args):
    log.append(("on_error", ctx, sys.exc_info()[0]))


orig = Thing.method
Thing.method = wrap(orig, before, after, on_error)
t = Thing()

# order of the calls, the arguments, the result as it is
r = t.method(1, y=3)
assert r == [1, 3]
# no frame of the wrapper's while orig runs (the Python wrapper: its own)
caller = "<module>" if impl == "c" else "wrapper"
assert log == [("before", 2, {"y": 3}), ("orig", 1, 3, ["method", caller]),
               ("after", None, [1, 3])], log

# what inspect, pickle and attributes say: the original's
assert Thing.method.__wrapped__ is orig and inspect.unwrap(Thing.method) is orig
assert (Thing.method.__name__, Thing.method.__qualname__, Thing.method.__doc__) == \
    ("method", "Thing.method", "the method's doc")
assert str(inspect.signature(Thing.method)) == "(self, x, y=2)"
assert str(inspect.signature(t.method)) == "(x, y=2)"
assert inspect.ismethod(t.method) and t.method.__self__ is t
assert inspect.getsourcelines(Thing.method) == inspect.getsourcelines(orig)
assert pickle.loads(pickle.dumps(Thing.method)) is Thing.method
assert Thing.method._gpustarve_wrapper is True
assert weakref.ref(Thing.method)() is Thing.method
if impl == "c":
    assert inspect.isfunction(Thing.method)
    assert inspect.getfile(Thing.method) == inspect.getfile(orig) == __file__
    assert inspect.getsourcefile(t.method) == inspect.getsourcefile(orig)
    assert Thing.method.__code__ is orig.__code__
    assert Thing.method.__defaults__ == (2,)
    assert repr(Thing.method) == repr(orig)
    Thing.method.extra = 5  # its own attributes, not orig's
    assert Thing.method.extra == 5 and not hasattr(orig, "extra")
    del Thing.method.extra

# an exception from orig: on_error sees it, then it propagates untouched
log.clear()
try:
    t.method("raise")
    raise AssertionError("no exception")
except KeyError as e:
    tb = [f.name for f in traceback.extract_tb(e.__traceback__)]
    assert tb == ["<module>", "method"], tb
assert log[-1] == ("on_error", None, KeyError if impl == "py" else None), log

# a hook that raises while orig's exception is set aside: orig's wins
Thing.method = wrap(orig, on_error=lambda ctx, args: 1 / 0)
try:
    t.method("raise")
except KeyError:
    pass

# before can call orig with other arguments; ctx reaches after
Thing.method = wrap(orig, lambda args, kwargs: ("ctx", (args[0], "x"), {"y": "z"}), after)
assert t.method(1) == ["x", "z"] and log[-1] == ("after", "ctx", ["x", "z"])
Thing.method = wrap(orig, lambda args, kwargs: ("ctx2", None, None), after)
assert t.method(7) == [7, 2] and log[-1] == ("after", "ctx2", [7, 2])
# after_star: after(*ctx), nothing else (a marker function's two numbers)
Thing.method = wrap(orig, lambda args, kwargs: ((4, 5), None, None),
                    lambda a, b: log.append(("star", a, b)), after_star=True)
assert t.method(8) == [8, 2] and log[-1] == ("star", 4, 5)
Thing.method = wrap(orig, None, lambda a, b: log.append(("star", a, b)), after_star=True)
assert t.method(9) == [9, 2] and log[-1] == ("orig", 9, 2, log[-1][3])  # ctx None: no call

# a hook's own exception propagates (before: orig is not called)
Thing.method = wrap(orig, lambda args, kwargs: 1 / 0)
log.clear()
try:
    t.method(1)
    raise AssertionError("no exception")
except ZeroDivisionError:
    assert log == []
Thing.method = wrap(orig, after=lambda ctx, args, res: 1 / 0)
try:
    t.method(1)
    raise AssertionError("no exception")
except ZeroDivisionError:
    pass
if impl == "c":
    Thing.method = wrap(orig, lambda args, kwargs: 42)
    try:
        t.method(1)
        raise AssertionError("no exception")
    except TypeError as e:
        assert "before must return" in str(e)


# reduce: how a wrapper of a callable without a name pickles
def rebuild(v):
    return wrap(lambda w: w + v, reduce=(rebuild, (v,)))


w = pickle.loads(pickle.dumps(rebuild(10)))
assert w(1) == 11

# no reference leaks: many calls, many wrappers, then the counts come back
Thing.method = wrap(orig, before, after, on_error)
log.clear()
gc.collect()
n0 = sys.getrefcount(orig), sys.getrefcount(before), sys.getrefcount(t)
for i in range(2000):
    t.method(i, y=i)
    try:
        t.method("raise")
    except KeyError:
        pass
    wrap(orig, before, after)
log.clear()
gc.collect()
assert (sys.getrefcount(orig), sys.getrefcount(before), sys.getrefcount(t)) == n0
print("ok")
