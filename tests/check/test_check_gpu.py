"""`gpustarve check`'s GPU lines on the simulated GPU (build/simcuda): the
simulator reports a configured card, link, MIG slice, vGPU, throttle
reasons, bandwidths and GEMM rates, so every verdict path of every GPU line
has a case here: to spec, each below-spec cause, and cannot tell (a library,
a device, a driver or a datasheet row missing).

The figures: copies and GEMMs are timed between CUDA events on the device's
timeline and queued behind work that is not timed, so on the simulator they
come out at the configured rates; the bounds below ask only that they are
not above them and not below half of them (docs/testing.md: no timing
bound a loaded machine could break). Every verdict case is configured far
from the rule's edge (docs/check.md, "GPU")."""
import os

import pytest

from conftest import GPU_ARGS, run_check

# An H100 SXM that gives what its datasheet row promises.
H100 = dict(SIMCUDA_DEVICE_NAME="NVIDIA H100 80GB HBM3", SIMCUDA_SMS=132, SIMCUDA_MEM_GIB=79.6,
            SIMCUDA_PCIE="5x16", SIMCUDA_PCIE_MAX="5x16", SIMCUDA_H2D_PINNED_GBPS=50,
            SIMCUDA_H2D_PAGEABLE_GBPS=20, SIMCUDA_D2H_GBPS=50, SIMCUDA_D2H_PAGEABLE_GBPS=20,
            SIMCUDA_D2D_GBPS=1450, SIMCUDA_GEMM_FP32_TFLOPS=52, SIMCUDA_GEMM_BF16_TFLOPS=760)
# An L40S (PCIe gen 4 x16 in its row).
L40S = dict(SIMCUDA_DEVICE_NAME="NVIDIA L40S", SIMCUDA_SMS=142, SIMCUDA_MEM_GIB=44.5,
            SIMCUDA_PCIE="4x16", SIMCUDA_PCIE_MAX="4x16", SIMCUDA_H2D_PINNED_GBPS=25,
            SIMCUDA_D2H_GBPS=25, SIMCUDA_D2D_GBPS=380, SIMCUDA_GEMM_FP32_TFLOPS=80,
            SIMCUDA_GEMM_BF16_TFLOPS=300)
GPU_LINES = ("gpu.card", "gpu.link", "gpu.h2d", "gpu.d2h", "gpu.d2d", "gpu.gemm_fp32",
             "gpu.gemm_16", "gpu.throttle")


def card(sim_env, *extra, **kw):
    cfg = dict(H100)
    cfg.update(kw)
    return run_check(*(GPU_ARGS + extra), env=sim_env(**cfg))


def near(v, want):
    """Not above the configured figure, not below half of it."""
    return want / 2 <= v <= want * 1.001


def test_to_spec(sim_env):
    c = card(sim_env)
    for id_ in GPU_LINES:
        assert c[id_]["verdict"] == "to_spec", c[id_]
        assert c[id_]["subject"] == "GPU 0"
    d = c["gpu.card"]["details"]
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d["datasheet_row"] == "NVIDIA H100 SXM"
    assert d["sms"] == 132 and d["pci_bus_id"] == "0000:10:00.0" and d["mig_profile"] is None
    assert c["gpu.card"]["measured"] == 132 and c["gpu.card"]["expected"] == 132
    link = c["gpu.link"]
    assert link["details"]["gen"] == 5 and link["details"]["width"] == 16
    assert "(nvml)" in link["text"]  # no sysfs for the simulated bus: NVML's answer
    assert near(c["gpu.h2d"]["details"]["pinned_GBps"], 50)
    assert near(c["gpu.h2d"]["details"]["pageable_GBps"], 20)
    assert c["gpu.h2d"]["expected"] == pytest.approx(63.008)
    assert near(c["gpu.d2h"]["details"]["pinned_GBps"], 50)
    assert near(c["gpu.d2d"]["measured"], 2 * 1450)  # read + write
    assert c["gpu.d2d"]["expected"] == 3350
    assert near(c["gpu.gemm_fp32"]["measured"], 52) and c["gpu.gemm_fp32"]["expected"] == 67
    assert near(c["gpu.gemm_16"]["measured"], 760) and c["gpu.gemm_16"]["expected"] == 989.5
    assert c["gpu.gemm_16"]["details"]["type"] == "BF16"
    assert c["gpu.throttle"]["details"]["reasons_mask"] == 0


def write_link(root, cur, cur_w, mx, mx_w, bus="0000:10:00.0"):
    d = root / "bus" / "pci" / "devices" / bus
    d.mkdir(parents=True)
    (d / "current_link_speed").write_text("%s GT/s PCIe\n" % cur)
    (d / "current_link_width").write_text("%d\n" % cur_w)
    (d / "max_link_speed").write_text("%s GT/s PCIe\n" % mx)
    (d / "max_link_width").write_text("%d\n" % mx_w)


def test_link_trained_down(sim_env):
    """sysfs says gen 3 x8 where the slot can do gen 5 x16: the link line and
    the copies it slows both say so."""
    write_link(sim_env.sysfs, "8.0", 8, "32.0", 16)
    c = card(sim_env, SIMCUDA_H2D_PINNED_GBPS=6.5)
    link = c["gpu.link"]
    assert link["verdict"] == "below_spec" and "(sysfs)" in link["text"]
    assert (link["details"]["gen"], link["details"]["width"]) == (3, 8)
    assert (link["details"]["max_gen"], link["details"]["max_width"]) == (5, 16)
    assert "gen3 x8" in link["cause"] and "trained down" in link["cause"]
    h2d = c["gpu.h2d"]
    assert h2d["verdict"] == "below_spec" and "the link runs at gen3 x8" in h2d["cause"]


def test_slot_short(sim_env):
    """An L40S (gen 4) in a gen 3 slot: the link is below spec; copies at what
    a gen 3 link carries are to spec against that."""
    write_link(sim_env.sysfs, "8.0", 16, "8.0", 16)
    c = card(sim_env, **dict(L40S, SIMCUDA_H2D_PINNED_GBPS=12))
    assert c["gpu.card"]["details"]["datasheet_row"] == "NVIDIA L40S"
    link = c["gpu.link"]
    assert link["verdict"] == "below_spec"
    assert "the slot gives gen3 x16, the card takes gen4 x16" in link["cause"]
    assert c["gpu.h2d"]["verdict"] == "to_spec"
    assert c["gpu.h2d"]["expected"] == pytest.approx(15.76)


def test_pinned_copies_slow_on_a_good_link(sim_env):
    c = card(sim_env, SIMCUDA_H2D_PINNED_GBPS=20)
    assert c["gpu.link"]["verdict"] == "to_spec"
    h2d = c["gpu.h2d"]
    assert h2d["verdict"] == "below_spec" and "IOMMU" in h2d["cause"] and "NUMA" in h2d["cause"]
    assert c["gpu.d2h"]["verdict"] == "to_spec"
    c = card(sim_env, SIMCUDA_D2H_GBPS=20)
    assert c["gpu.h2d"]["verdict"] == "to_spec"
    d2h = c["gpu.d2h"]
    assert d2h["verdict"] == "below_spec" and "IOMMU" in d2h["cause"] and near(d2h["measured"], 20)


def test_mig_slice(sim_env):
    """A MIG slice is not a full card; its rates are judged against the
    datasheet scaled to the SMs it has."""
    c = card(sim_env, SIMCUDA_MIG="3g.40gb", SIMCUDA_SMS=60, SIMCUDA_MEM_GIB=39.5,
             SIMCUDA_GEMM_BF16_TFLOPS=340, SIMCUDA_GEMM_FP32_TFLOPS=24, SIMCUDA_D2D_GBPS=700)
    k = c["gpu.card"]
    assert k["verdict"] == "below_spec" and k["details"]["mig_profile"] == "3g.40gb"
    assert "MIG slice 3g.40gb" in k["cause"] and "60 of 132 SMs" in k["cause"]
    assert k["details"]["datasheet_row"] == "NVIDIA H100 SXM"  # the " MIG ..." taken off
    g = c["gpu.gemm_16"]
    assert g["verdict"] == "to_spec" and "scaled to the slice" in g["text"]
    assert g["expected"] == pytest.approx(989.5 * 60 / 132)


def test_vgpu(sim_env):
    c = card(sim_env, SIMCUDA_VGPU=1)
    assert c["gpu.card"]["verdict"] == "below_spec" and "vGPU" in c["gpu.card"]["cause"]
    assert c["gpu.card"]["details"]["virtualization_mode"] == 2


def test_throttled(sim_env):
    c = card(sim_env, SIMCUDA_GEMM_BF16_TFLOPS=300, SIMCUDA_THROTTLE="power,hw_thermal",
             SIMCUDA_SM_CLOCK_MHZ=1200)
    g = c["gpu.gemm_16"]
    assert g["verdict"] == "below_spec"
    assert g["cause"] == "clocks held down while it ran: power cap, HW thermal slowdown"
    t = c["gpu.throttle"]
    assert t["verdict"] == "below_spec" and t["cause"] == "power cap, HW thermal slowdown"
    assert t["details"]["reasons_mask"] == 0x44 and t["details"]["sm_clock_MHz"] == 1200


def test_slow_gemm_low_clock(sim_env):
    c = card(sim_env, SIMCUDA_GEMM_FP32_TFLOPS=20, SIMCUDA_SM_CLOCK_MHZ=1000)
    g = c["gpu.gemm_fp32"]
    assert g["verdict"] == "below_spec" and "the SM clock was 1000 MHz of 1980" in g["cause"]
    assert c["gpu.throttle"]["verdict"] == "to_spec"


def test_slow_gemm_no_reason(sim_env):
    c = card(sim_env, SIMCUDA_GEMM_BF16_TFLOPS=300)
    g = c["gpu.gemm_16"]
    assert g["verdict"] == "below_spec" and "another process on the GPU" in g["cause"]


def test_slow_memory(sim_env):
    c = card(sim_env, SIMCUDA_D2D_GBPS=600)
    d = c["gpu.d2d"]
    assert d["verdict"] == "below_spec" and near(d["measured"], 1200)
    assert "memory slower than the card's" in d["cause"]


def test_unknown_card(sim_env):
    """No datasheet row: measured values only, except the copies, judged
    against the link NVML reports."""
    c = run_check(*GPU_ARGS, env=sim_env())
    assert c["gpu.card"]["verdict"] == "cannot_tell"
    assert "not in the datasheet table" in c["gpu.card"]["cause"]
    for id_ in ("gpu.d2d", "gpu.gemm_fp32", "gpu.gemm_16"):
        assert c[id_]["verdict"] == "cannot_tell" and c[id_]["text"], c[id_]
        assert "measured value only" in c[id_]["cause"]
    assert c["gpu.h2d"]["verdict"] == "to_spec"  # 25 GB/s on the default gen 4 x16
    k = run_check(*(GPU_ARGS + ("--price", "2")), env=sim_env())["cost"]
    assert k["verdict"] == "cannot_tell" and "no GEMM rate measured against a datasheet" in k["cause"]
    assert k["details"]["per_hour"] == 2


def test_datasheet_file(sim_env, tmp_path):
    """--datasheet: another table, in the format of analyzer/machine/gpus.tsv."""
    t = tmp_path / "cards.tsv"
    t.write_text("# mine\nSim Card\tgpustarve simulated*\t132\t80\t2000\t60\t800\tbf16\t4\t16\t"
                 "a test row, https://example.invalid/sheet\n")
    c = run_check(*GPU_ARGS, "--datasheet", str(t), env=sim_env())
    assert c["gpu.card"]["verdict"] == "to_spec"
    assert c["gpu.card"]["details"]["datasheet_row"] == "Sim Card"
    assert c.doc["datasheet"] == str(t)
    assert c["gpu.gemm_16"]["expected"] == 800
    t.write_text("Sim Card\tx\tnot a number\n")
    p = run_check("--no-gpu", "--datasheet", str(t), rc=2)
    assert "line 1" in p.stderr


def test_no_cublas(sim_env):
    c = card(sim_env, GPUSTARVE_CUBLAS_LIB="/nonexistent/libcublas.so.13")
    for id_ in ("gpu.gemm_fp32", "gpu.gemm_16"):
        assert c[id_]["verdict"] == "cannot_tell"
        assert "no cuBLAS" in c[id_]["cause"] and "GPUSTARVE_CUBLAS_LIB" in c[id_]["cause"]
    assert c["gpu.h2d"]["verdict"] == "to_spec"  # the rest still measured


def test_no_nvml(sim_env):
    c = card(sim_env, GPUSTARVE_NVML_LIB="/nonexistent/libnvidia-ml.so.1")
    assert c["gpu.throttle"]["verdict"] == "cannot_tell" and "no NVML" in c["gpu.throttle"]["cause"]
    assert c["gpu.link"]["verdict"] == "cannot_tell"
    assert "neither sysfs" in c["gpu.link"]["cause"]
    # the card's row still says what its link should carry
    assert c["gpu.h2d"]["verdict"] == "to_spec" and c["gpu.h2d"]["expected"] == pytest.approx(63.008)
    c = run_check(*GPU_ARGS, env=sim_env(GPUSTARVE_NVML_LIB="/nonexistent"))
    assert c["gpu.h2d"]["verdict"] == "cannot_tell" and "link is unknown" in c["gpu.h2d"]["cause"]


@pytest.mark.parametrize("case,env,want", [
    ("no device", dict(SIMCUDA_DEVICES=0), "no CUDA device"),
    ("no runtime", dict(GPUSTARVE_CUDART_LIB="/nonexistent/libcudart.so.13"), "no CUDA runtime"),
])
def test_no_gpu(sim_env, case, env, want):
    c = run_check("--quick", env=sim_env(**env))
    g = c["gpu"]
    assert g["verdict"] == "cannot_tell" and want in g["cause"], (case, g)
    assert not c.items("gpu.card")


def test_no_driver(sim, tmp_path):
    """The runtime alone, no driver: what a machine without a GPU has."""
    d = tmp_path / "rt"
    d.mkdir()
    os.symlink(os.path.join(sim, "libcudart.so.13"), d / "libcudart.so.13")
    from conftest import clean_env
    c = run_check("--quick", env=clean_env(LD_LIBRARY_PATH=str(d)))
    assert c["gpu"]["verdict"] == "cannot_tell"
    assert "no CUDA device" in c["gpu"]["cause"] and "driver" in c["gpu"]["cause"]
    c = run_check("--quick", "--no-gpu", env=clean_env(LD_LIBRARY_PATH=str(d)))
    assert c["gpu"]["cause"] == "not checked (--no-gpu)"


def test_cost(sim_env):
    c = card(sim_env, "--price", "2.5")
    k = c["cost"]
    assert k["verdict"] == "to_spec" and k["details"]["per_hour"] == 2.5
    c = card(sim_env, "--price", "2.5", SIMCUDA_GEMM_BF16_TFLOPS=300)
    k = c["cost"]
    assert k["verdict"] == "below_spec"
    share = k["details"]["datasheet_share"]
    assert 300 / 989.5 / 2 <= share <= 300 / 989.5 * 1.001
    assert k["details"]["price_at_datasheet_rate"] == pytest.approx(2.5 / share)
    assert "you pay for" in k["cause"]
    assert not card(sim_env).items("cost")  # no --price, no cost line


# ---- several GPUs ------------------------------------------------------------------------

FOUR = dict(L40S, SIMCUDA_DEVICES=4, SIMCUDA_P2P=1, SIMCUDA_P2P_GBPS="*=40",
            SIMCUDA_NCCL_BUSBW_GBPS=200)


def four(sim_env, *extra, **kw):
    cfg = dict(FOUR)
    cfg.update(kw)
    return run_check(*(GPU_ARGS + extra), env=sim_env(**cfg))


def test_four_gpus_to_spec(sim_env):
    c = four(sim_env)
    assert [i["subject"] for i in c.items("gpu.card")] == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]
    p = c["gpus.p2p"]
    assert p["verdict"] == "to_spec" and near(p["measured"], 40)
    assert p["details"]["pairs_GBps"].count("-") == 6
    a = c["gpus.allreduce"]
    assert a["verdict"] == "to_spec" and near(a["details"]["busbw_GBps"], 200)
    s = c["gpus.scaling"]
    assert s["verdict"] == "to_spec" and s["expected"] == 4
    assert 3.6 <= s["measured"] <= 4.001 and s["text"].startswith("4 cards, ")


def test_slow_pair(sim_env):
    c = four(sim_env, SIMCUDA_P2P_GBPS="*=40,0-3=10")
    p = c["gpus.p2p"]
    assert p["verdict"] == "below_spec" and "pairs 0-3 " in p["cause"]
    assert near(p["measured"], 10) and "cross CPU sockets" in p["cause"]
    c = four(sim_env, SIMCUDA_P2P=0, SIMCUDA_P2P_GBPS="*=40,1-2=5")
    p = c["gpus.p2p"]
    assert "(no P2P)" in p["details"]["pairs_GBps"] and "no peer access" in p["cause"]


def test_slow_allreduce_limits_scaling(sim_env):
    c = four(sim_env, SIMCUDA_NCCL_BUSBW_GBPS=10)
    a = c["gpus.allreduce"]
    assert a["verdict"] == "below_spec" and "less than half the peer-to-peer rate" in a["cause"]
    s = c["gpus.scaling"]
    assert s["verdict"] == "below_spec" and "the gradient all-reduce" in s["cause"]
    assert s["measured"] < 3.6
    env = dict(FOUR, SIMCUDA_NCCL_BUSBW_GBPS=10, NCCL_P2P_DISABLE=1)
    c = run_check(*GPU_ARGS, env=sim_env(**env))
    assert "NCCL_P2P_DISABLE is set" in c["gpus.allreduce"]["cause"]


def test_no_nccl(sim_env):
    c = four(sim_env, GPUSTARVE_NCCL_LIB="/nonexistent/libnccl.so.2")
    assert c["gpus.p2p"]["verdict"] == "to_spec"
    for id_ in ("gpus.allreduce", "gpus.scaling"):
        assert c[id_]["verdict"] == "cannot_tell" and "no NCCL" in c[id_]["cause"]


def test_one_gpu_has_no_multi_lines(sim_env):
    c = card(sim_env)
    assert not c.items("gpus.p2p") and not c.items("gpus.scaling")
