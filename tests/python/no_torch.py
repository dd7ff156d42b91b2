"""A program that never imports torch: under `gpustarve run` it must run
exactly as without it (same output, same exit status), and gpustarve's
Python side must not import torch into it."""
import builtins
import json
import sys

loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
site = sys.modules.get("sitecustomize")
print(json.dumps({
    "torch_modules": loaded,
    "args": sys.argv[1:],
    "user_sitecustomize": getattr(builtins, "GS_USER_SITECUSTOMIZE", None),
    "sitecustomize_file": getattr(site, "__file__", None),
}))
print("gpustarve_loaded=%s" % ("gpustarve" in sys.modules), file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
