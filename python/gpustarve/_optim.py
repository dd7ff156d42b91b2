"""Steps of any training loop: what every loop does once per step, marked
where no DataLoader says where steps are (docs/python.md, "Steps without a
DataLoader").

Responsible for: wrapping, in modules gpustarve._hook hands in,
  torch.optim.optimizer      the step() of each optimizer class, when torch
                             puts its own profiling wrapper on it
                             (Optimizer._patch_step_function in 2.x,
                             _hook_for_profile in 1.13: at construction and
                             unpickling)
  torch.autograd             backward() (Tensor.backward calls it)
  torch.amp.grad_scaler,     GradScaler.step (it skips the optimizer's
  torch.cuda.amp.grad_scaler step when gradients overflowed)
and writing, when the outermost of them returns on a thread, a step_end
marker: class OPTIMIZER (its index counts the steps of the thread's lead
optimizer) or BACKWARD (every backward()), and arms gpustarve._forward
(the model's next forward ends the loop's own batch preparation). The analyzer cuts steps between
consecutive ones and prefers optimizer steps; a DataLoader's or the
program's own markers, and NVTX steps, come first (docs/report-schema.md,
"Steps").

The lead optimizer: the first one that steps on the thread; another one
becomes the lead only after it stepped twice with no step of the lead
between (a GAN's two optimizers alternate: the first stays the lead; a
program that replaced its optimizer moves on to the new one).

Must never: import torch (it receives the modules), change what a step or
backward returns or raises, or count a step inside a step (GradScaler.step
calls the optimizer's step; a subclass's step may call its base's).
"""
import threading

from . import _forward, _native
from ._frames import hide, wrap

_local = threading.local()


class _Thread(object):
    __slots__ = ("depth", "lead", "other", "other_n", "steps", "bdepth", "backwards")

    def __init__(self):
        self.depth = 0       # open optimizer / scaler steps
        self.lead = None     # id() of the lead optimizer
        self.other = None    # id() of another optimizer stepping
        self.other_n = 0     # its steps in a row without the lead's
        self.steps = 0       # lead steps so far = index of the next
        self.bdepth = 0      # open backward() calls
        self.backwards = 0


def _thread():
    t = getattr(_local, "t", None)
    if t is None:
        t = _local.t = _Thread()
    return t


def _is_lead(t, opt):
    oid = id(opt)
    if t.lead is None or t.lead == oid:
        t.lead = oid
        t.other_n = 0
        return True
    if t.other == oid:
        t.other_n += 1
    else:
        t.other, t.other_n = oid, 1
    if t.other_n < 2:
        return False
    t.lead, t.other, t.other_n = oid, None, 0
    return True


_OPT = _native.marks(_native.OPTIMIZER)
_BWD = _native.marks(_native.BACKWARD)


def _stepped(t, opt):
    if opt is None or not _is_lead(t, opt):
        return
    k = t.steps
    t.steps = k + 1
    _native.tag_trainer(0)
    _native.step_end(k, _OPT)
    _forward.arm()


def _wrap_step(orig, opt_arg):
    """step() of an optimizer (opt_arg 0: the optimizer is self) or of a
    GradScaler (opt_arg 1: the optimizer is its first argument)."""
    def before(args, kwargs):
        t = _thread()
        t.depth += 1
        opt = None
        if t.depth == 1:
            opt = args[opt_arg] if len(args) > opt_arg else (kwargs or {}).get("optimizer")
        return ((t, opt), None, None)

    def after(ctx, args, r=None):
        t, opt = ctx
        t.depth -= 1
        if t.depth == 0 and opt is not None:
            _stepped(t, opt)

    def on_error(ctx, args):
        ctx[0].depth -= 1
    return wrap(orig, hide(before), hide(after), hide(on_error))


def _patch_class_step(cls, opt_arg):
    f = getattr(cls, "step", None)
    if f is None or getattr(f, "_gpustarve_wrapper", False):
        return
    setattr(cls, "step", _wrap_step(f, opt_arg))


def instrument_optimizer(module):
    """After torch wraps an optimizer class's step for its profiler (once
    per class), wrap it again with the step marker."""
    opt = getattr(module, "Optimizer", None)
    if opt is None:
        return
    for name in ("_patch_step_function", "_hook_for_profile"):
        orig = opt.__dict__.get(name)
        if orig is None or getattr(orig, "_gpustarve_wrapper", False):
            continue

        def after(ctx, args, r=None):
            try:
                _patch_class_step(type(args[0]), 0)
            except Exception:
                pass
        setattr(opt, name, wrap(orig, after=hide(after)))
        return


def instrument_autograd(module):
    """torch.autograd.backward (Tensor.backward calls it through the
    module): a BACKWARD step marker when the outermost one returns."""
    orig = getattr(module, "backward", None)
    if orig is None or getattr(orig, "_gpustarve_wrapper", False):
        return

    def before(args, kwargs):
        t = _thread()
        t.bdepth += 1
        return (t, None, None)

    def after(t, args, r=None):
        t.bdepth -= 1
        if t.bdepth == 0:
            k = t.backwards
            t.backwards = k + 1
            _native.step_end(k, _BWD)
            _forward.arm()

    def on_error(t, args):
        t.bdepth -= 1
    module.backward = wrap(orig, hide(before), hide(after), hide(on_error))


def instrument_scaler(module):
    """GradScaler.step: one optimizer step, whether or not it calls the
    optimizer's (it skips it when the gradients overflowed)."""
    cls = getattr(module, "GradScaler", None)
    if cls is not None and "step" in cls.__dict__:
        _patch_class_step(cls, 1)
