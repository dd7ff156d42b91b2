"""A host copy's two witnesses in either order (analyzer/load/an_copies.h):
the hook's record of a cudaMemcpy and CUPTI's record of the same copy
carry one correlation id, and CUPTI's word on the host memory wins. The
writer may put CUPTI's record in a batch before the one holding the hook's
(on a busy machine the stress run saw 3 of 5 copies matched), so the
report must pair them whichever comes first in the file."""
from conftest import DEVICE, HTOD, MS, PAGEABLE, PINNED, Scenario, report_json

T0 = 1_000_000_000
STEPS = 8


def copies_run(gen, out, gpu_first):
    """STEPS steps of 20 ms, each a 2 ms host-to-device copy that the hooks
    call pageable and CUPTI pinned, then a kernel; the copies whose index
    is in gpu_first have CUPTI's record written a batch before the hook's."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    tr.ev(100, "thread", ts=T0 - 5 * MS, str="MainThread", aux=100)
    tr.ev(100, "gpu_device", ts=T0 - 3 * MS, dev=0, str="NVIDIA H200", bytes=141 << 30,
          aux=132, aux2=90)
    for n in range(STEPS):
        a = T0 + n * 20 * MS
        corr = n + 1
        host = dict(ts=a, dur=2 * MS, str="cudaMemcpy", bytes=8 << 20, ret=0,
                    aux=HTOD | PAGEABLE << 8, corr=corr)
        gpu = dict(ts=a + MS // 10, dur=MS, bytes=8 << 20, aux=HTOD | PINNED << 8 | DEVICE << 16,
                   dev=0, stream=7, corr=corr)
        tr.ev(100, "step_begin", ts=a, aux=n)
        if n in gpu_first:
            tr.ev(100, "gpu_memcpy", **gpu)
            tr.frame()
            tr.ev(100, "cuda_memcpy", **host)
        else:
            tr.ev(100, "cuda_memcpy", **host)
            tr.ev(100, "gpu_memcpy", **gpu)
        tr.ev(100, "gpu_kernel", ts=a + 3 * MS, dur=16 * MS, str="gemm_kernel", dev=0, stream=7)
        tr.ev(100, "step_end", ts=a + 20 * MS, aux=n)
        tr.frame()
    return sc.write(gen, out)


def test_either_order_pairs_every_copy(gs, gen, tmp_path):
    for name, first in (("host_first", ()), ("gpu_first", (1, 2, 5)),
                        ("all_gpu_first", tuple(range(STEPS)))):
        j = report_json(gs, copies_run(gen, str(tmp_path / name), first))
        kinds = j["host_copy_kinds"]
        assert kinds["matched"] == STEPS, (name, kinds)
        assert kinds["pageable_by_hooks_pinned_by_cupti"] == STEPS, (name, kinds)
        # CUPTI's word: pinned, so no step waits on a pageable copy
        assert j["share"]["idle_pageable_copy"] == 0, (name, j["share"])
