"""The one way the real-GPU scripts of tests/gpu/ find torch with CUDA: the
torch module, or None after saying on stderr why not (the scripts then exit
3, which validate.sh reports as SKIP)."""
import sys


def torch_with_cuda(script):
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
        print("%s: torch not importable: %s" % (script, e), file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print("%s: torch %s has no usable CUDA device" % (script, torch.__version__),
              file=sys.stderr)
        return None
    return torch
