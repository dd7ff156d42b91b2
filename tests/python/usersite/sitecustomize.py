"""A user's own sitecustomize, found on PYTHONPATH after gpustarve's: it must
still run under `gpustarve run` (tests/python/test_python_side.py)."""
import builtins
import os

builtins.GS_USER_SITECUSTOMIZE = os.path.abspath(__file__)
