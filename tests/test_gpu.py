"""Driver and GPU facts, and the checks of a cuDNN build against them.

On this CPU machine the no-driver path is real; the device and driver checks
run on synthetic facts against the real GPU code of the 9.28, 9.0 and 8.9.7
wheels. The tests marked ``gpu`` need an NVIDIA GPU and an installed
nvidia-cudnn-cu13 (or -cu12) wheel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cudnnload.judge.gpu import device_findings, driver_findings, gpu_findings, memory_findings, presence_findings
from cudnnload.loading.gpu import gpu_facts
from cudnnload.loading.nvml import driver_folder, own_processes
from cudnnload.loading.probe import probe
from cudnnload.report import to_jsonable
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.elf import read_elf
from cudnnload.resolve.fatbin import GpuCode
from cudnnload.resolve.hardware import Device, GpuFacts, Holder, holder_framework, kernel_module_version
from cudnnload.verdicts import ERROR, INFO, WARNING
from tests._wheels import needs_no_driver
from tests.gpu import installed_cudnn, require_gpus, run_child
from tests.wheels import lib_folder

ROOT = Path(__file__).resolve().parents[1]
CUDNN_928 = Release(9, 28, 0)
CUDNN_90 = Release(9, 0, 0)
# The libraries whose kernels a convolution needs (legacy API: ops, cnn; engines for the backend API).
KERNEL_LIBRARIES = {9: ("libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_engines_precompiled.so.9"),
                    8: ("libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8")}


def gpu_code_of(folder: Path, major: int) -> dict[str, GpuCode | None]:
    return {name: read_elf(folder / name).gpu_code for name in KERNEL_LIBRARIES[major]}


def facts(*devices: tuple[int, int], driver: int | None = 13000, visible: str | None = None,
          hardware: tuple[str, ...] = ("/dev/nvidia0", "/dev/nvidiactl", "/proc/driver/nvidia"),
          error: str | None = None, reason: str | None = None) -> GpuFacts:
    """Facts of a machine whose GPUs have the given compute capabilities."""
    return GpuFacts(
        bindings="13.4.4", driver_found=driver is not None, driver_version=driver,
        devices=tuple(Device(i, f"GPU-{major}{minor}", (major, minor), 80 << 30, f"0000:{i:02x}:00.0")
                      for i, (major, minor) in enumerate(devices)),
        error=error, reason=reason, visible_devices=visible, kernel_module="580.65.06" if driver else None,
        hardware=hardware)


def codes(findings: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in findings]  # type: ignore[attr-defined]


# --- no driver, no cuda-python: a diagnosis, never a traceback ----------------------------------------


@needs_no_driver
def test_no_driver_gives_facts_with_a_reason_and_an_info_finding_here() -> None:
    found = gpu_facts()

    assert (found.driver_found, found.driver_version, found.devices) == (False, None, ())
    assert found.error == "DynamicLibNotFoundError" and "libcuda.so.1" in (found.reason or "")
    assert found.hardware == ()  # this machine has no NVIDIA hardware, so the absence is not a fault
    (finding,) = presence_findings(found, release=CUDNN_928, version_checks_passed=True)
    assert (finding.code, finding.severity) == ("no-driver", INFO)
    assert finding.message == ("cuDNN 9.28 loads and passes its version checks, but no NVIDIA driver was found "
                               "(libcuda.so.1): handles cannot be created")


def test_missing_cuda_python_is_a_warning_not_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)  # import now raises ImportError

    found = gpu_facts()

    assert (found.bindings, found.driver_found, found.error) == (None, False, "ImportError")
    (finding,) = presence_findings(found)
    assert (finding.code, finding.severity) == ("driver-unchecked", WARNING)
    assert "cuda-python is not importable" in finding.message
    assert "-m pip install cuda-python" in (finding.fix.text or "")


def test_no_driver_where_the_kernel_module_is_loaded_is_an_error_pointing_at_the_container() -> None:
    found = GpuFacts(bindings="13.4.4", driver_found=False, driver_version=None, devices=(),
                     error="DynamicLibNotFoundError", reason="no NVIDIA driver was found", visible_devices=None,
                     kernel_module="580.65.06", hardware=("/proc/driver/nvidia",))

    (finding,) = presence_findings(found)

    assert (finding.code, finding.severity) == ("no-driver", ERROR)
    assert "/proc/driver/nvidia" in finding.message and "580.65.06" in finding.message
    assert "--gpus all" in (finding.fix.text or "")


@pytest.mark.parametrize("visible", ["", "-1", "7"])
def test_cuda_visible_devices_hiding_every_gpu_is_named_in_the_error(visible: str) -> None:
    found = facts(visible=visible, error="CUDA_ERROR_NO_DEVICE")

    (finding,) = presence_findings(found)

    assert (finding.code, finding.severity) == ("no-gpu-visible", ERROR)
    assert f"CUDA_VISIBLE_DEVICES={visible!r}" in finding.message and "unset" in (finding.fix.text or "")


def test_driver_with_no_device_and_no_mask_points_at_the_machine() -> None:
    (finding,) = presence_findings(facts(error="CUDA_ERROR_NO_DEVICE"))

    assert (finding.code, finding.severity) == ("no-gpu-visible", ERROR)
    assert "CUDA_VISIBLE_DEVICES" not in finding.message and "nvidia-smi" in (finding.fix.text or "")


def test_cuinit_failure_other_than_no_device_is_a_driver_error_with_its_remedy() -> None:
    found = facts(error="CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
                  reason="cuInit returned CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803): system has unsupported display "
                         "driver / cuda driver combination")

    (finding,) = presence_findings(found)

    assert (finding.code, finding.severity) == ("driver-error", ERROR)
    assert "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in finding.message and "reboot" in (finding.fix.text or "")


@pytest.mark.parametrize(("error", "says"), [
    ("CUDA_ERROR_UNKNOWN", "modprobe nvidia_uvm"),  # a stale UVM module after a suspend
    ("CUDA_ERROR_SYSTEM_NOT_READY", "nvidia-fabricmanager"),  # an NVSwitch system's Fabric Manager not running
])
def test_a_driver_not_ready_to_run_cuda_gets_what_makes_it_ready(error: str, says: str) -> None:
    (finding,) = presence_findings(facts(error=error, reason=f"cuInit returned {error}"))

    assert (finding.code, finding.severity) == ("driver-error", ERROR) and says in (finding.fix.text or "")


def test_usable_gpus_raise_no_presence_finding() -> None:
    assert presence_findings(facts((9, 0))) == ()


def test_facts_give_the_drivers_cuda_and_each_devices_sm_and_serialize() -> None:
    found = facts((9, 0), driver=12090)

    assert (found.driver_cuda, found.devices[0].sm) == ("12.9", 90)
    assert to_jsonable(found)["devices"][0]["capability"] == [9, 0]


@pytest.mark.parametrize(("line", "version"), [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024", "535.183.01"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)  "
     "Thu Oct 30 2025", "580.159.04"),  # the open kernel module, as read on the GPU machine
    ("", None),
], ids=["proprietary", "open", "empty"])
def test_kernel_module_version_is_read_from_either_module_flavour(line: str, version: str | None) -> None:
    assert kernel_module_version(line + "\n") == version


# --- driver against the CUDA runtime inside cuDNN ---------------------------------------------------


@pytest.mark.parametrize(("driver", "cudart", "expected"), [
    (12020, 13050, [("driver-too-old", ERROR)]),  # a CUDA 12 driver cannot run a CUDA 13 build
    (13000, 13050, [("driver-minor-compat", INFO)]),  # same major: minor-version compatibility
    (13050, 13050, []),
    (13000, 12090, []),  # newer drivers run older builds
    (10010, 10020, [("driver-too-old", ERROR)]),  # no minor-version compatibility before CUDA 11
], ids=["12.2-vs-13.5", "13.0-vs-13.5", "13.5-vs-13.5", "13.0-vs-12.9", "10.1-vs-10.2"])
def test_driver_cuda_is_checked_against_cudnns_cudart(driver: int, cudart: int,
                                                       expected: list[tuple[str, str]]) -> None:
    assert codes(driver_findings(facts((9, 0), driver=driver), cudart, release=CUDNN_928)) == expected


def test_driver_too_old_names_both_versions_and_both_ways_out() -> None:
    (finding,) = driver_findings(facts((9, 0), driver=12020), 13050, release=CUDNN_928)

    assert "cuDNN 9.28 was built with CUDA 13.5 (cudnnGetCudartVersion 13050)" in finding.message
    assert "supports CUDA 12.2 (cuDriverGetVersion 12020)" in finding.message
    assert finding.fix.json() == {
        "text": "upgrade the NVIDIA driver to R580 or newer; or python -m pip install 'nvidia-cudnn-cu12>=9,<10'",
        "actions": [{"do": "manual", "text": "upgrade the NVIDIA driver to R580 or newer"}],
        "alternatives": [{"do": "pip-install", "requirements": ["nvidia-cudnn-cu12>=9,<10"], "options": [],
                          "target": None, "python": None}]}


# --- devices against the GPU code in the libraries ------------------------------------------------------


@pytest.fixture(scope="module")
def code_928() -> dict[str, GpuCode | None]:
    return gpu_code_of(lib_folder("cu13-9.28.0.42"), 9)


@pytest.fixture(scope="module")
def code_90() -> dict[str, GpuCode | None]:
    return gpu_code_of(lib_folder("cu12-9.0.0.312"), 9)


def test_volta_is_too_old_for_cudnn_9_28(code_928: dict[str, GpuCode | None]) -> None:
    findings = device_findings(facts((7, 0)), release=CUDNN_928, max_device_version=1210, gpu_code=code_928)

    assert codes(findings) == [("gpu-too-old", ERROR)]  # one finding, not one per library
    assert "needs compute capability 7.5 (Turing) or newer; GPU 0 (GPU-70, sm_70) is 7.0" in findings[0].message
    assert "nvidia-cudnn-cu12>=9,<9.11" in (findings[0].fix.text or "")


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (10, 3), (12, 0), (12, 1)],
                         ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_gpus_cudnn_9_28_was_built_for_raise_nothing(capability: tuple[int, int],
                                                    code_928: dict[str, GpuCode | None]) -> None:
    assert device_findings(facts(capability), release=CUDNN_928, max_device_version=1210,
                           gpu_code=code_928) == ()


def test_an_architecture_missing_from_every_library_is_reported_per_library(
        code_928: dict[str, GpuCode | None]) -> None:
    # sm_110 (Jetson Thor) is below cudnnGetMaxDeviceVersion, yet the x86-64 wheel carries nothing for it.
    findings = device_findings(facts((11, 0)), release=CUDNN_928, max_device_version=1210, gpu_code=code_928)

    assert codes(findings) == [("no-kernels-for-gpu", ERROR)] * 3
    assert findings[0].message.startswith("libcudnn_ops.so.9 has no code that runs on GPU 0 (GPU-110, sm_110): "
                                          "SASS sm_75 sm_80 sm_90a sm_100f sm_120f; PTX sm_120f")


def test_a_gpu_newer_than_the_build_without_usable_ptx_is_an_error(code_928: dict[str, GpuCode | None]) -> None:
    # 9.28 has PTX only for the sm_120 family, which cannot be JIT-compiled for a 13.x GPU.
    findings = device_findings(facts((13, 0)), release=CUDNN_928, max_device_version=1210, gpu_code=code_928,
                               cudart_version=13050)

    assert codes(findings) == [("gpu-too-new", ERROR)]
    assert "cudnnGetMaxDeviceVersion 1210, sm_121" in findings[0].message


def test_a_gpu_newer_than_the_build_with_ptx_runs_in_forward_compatibility_mode(
        code_90: dict[str, GpuCode | None]) -> None:
    findings = device_findings(facts((10, 0)), release=CUDNN_90, max_device_version=900, gpu_code=code_90,
                               cudart_version=12030)

    assert codes(findings) == [("gpu-too-new", WARNING)]
    assert "forward-compatibility mode" in findings[0].message
    assert "CUDNN_LIB_CONFIG=FULL" in (findings[0].fix.text or "")


def test_cudnn_8_has_no_forward_compatibility_even_with_ptx() -> None:
    code = gpu_code_of(lib_folder("cu12-8.9.7.29"), 8)

    findings = device_findings(facts((10, 0)), release=Release(8, 9, 7), max_device_version=900, gpu_code=code,
                               cudart_version=12020)

    assert codes(findings) == [("gpu-too-new", ERROR)]


def test_a_gpu_older_than_every_architecture_is_too_old(code_90: dict[str, GpuCode | None]) -> None:
    findings = device_findings(facts((3, 5)), release=CUDNN_90, max_device_version=900, gpu_code=code_90)

    assert codes(findings) == [("gpu-too-old", ERROR)]
    assert "the oldest is sm_50" in findings[0].message


def test_each_device_is_checked_on_its_own(code_928: dict[str, GpuCode | None]) -> None:
    findings = device_findings(facts((9, 0), (7, 0)), release=CUDNN_928, max_device_version=1210,
                               gpu_code=code_928)

    assert [(f.code, "GPU 1" in f.message) for f in findings] == [("gpu-too-old", True)]


def test_without_a_driver_only_the_presence_finding_is_reported(code_928: dict[str, GpuCode | None]) -> None:
    found = facts(driver=None, hardware=())

    findings = gpu_findings(found, release=CUDNN_928, cudart_version=13050, max_device_version=1210,
                            gpu_code=code_928)

    assert codes(findings) == [("no-driver", INFO)]


def test_all_checks_combine_driver_and_device_findings(code_928: dict[str, GpuCode | None]) -> None:
    findings = gpu_findings(facts((7, 0), driver=12020), release=CUDNN_928, cudart_version=13050,
                            max_device_version=1210, gpu_code=code_928)

    assert codes(findings) == [("driver-too-old", ERROR), ("gpu-too-old", ERROR)]


# --- on a GPU machine -------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_doctor_facts_are_all_green_on_this_gpu_machine() -> None:
    found = require_gpus(1)
    shim, major = installed_cudnn()
    result = probe([("shim", shim)], major)
    assert result.ok, result.verdict
    values = {step.name: step.value for step in result.steps}

    findings = gpu_findings(found, release=result.release, cudart_version=values["cudnnGetCudartVersion"],
                            max_device_version=values.get("cudnnGetMaxDeviceVersion"),
                            gpu_code=gpu_code_of(shim.parent, major), version_checks_passed=True)

    assert found.driver_version and found.driver_version >= 12000
    assert found.kernel_module is None or re.fullmatch(r"\d+\.\d+(\.\d+)*", found.kernel_module)
    assert all(device.name and device.total_memory > 0 and device.pci_bus_id for device in found.devices)
    assert [f for f in findings if f.severity != INFO] == []


_HIDDEN = """
import json
from cudnnload.judge.gpu import presence_findings
from cudnnload.loading.gpu import gpu_facts
facts = gpu_facts()
print(json.dumps({"devices": len(facts.devices), "error": facts.error,
                  "findings": [[f.code, f.severity, f.message] for f in presence_findings(facts)]}))
"""


@pytest.mark.gpu
def test_hiding_every_gpu_with_cuda_visible_devices_is_diagnosed() -> None:
    require_gpus(1)

    answer = run_child(_HIDDEN, environ={**os.environ, "CUDA_VISIBLE_DEVICES": ""})

    assert (answer["devices"], answer["error"]) == (0, "CUDA_ERROR_NO_DEVICE")
    assert [finding[:2] for finding in answer["findings"]] == [["no-gpu-visible", ERROR]]
    assert "CUDA_VISIBLE_DEVICES=''" in answer["findings"][0][2]


def test_cuinit_out_of_memory_under_an_address_space_limit_is_the_limits_fault() -> None:
    """cuInit's CUDA_ERROR_OUT_OF_MEMORY where the process's address space is limited (`ulimit -v`: measured on the
    H200, 8 GB fails and 32 GB works): no GPU memory is short, and the fix is the limit's, not nvidia-smi's. Without
    a limit the same error keeps the driver's generic fix."""
    reason = "cuInit returned CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
    limited = replace(facts(error="CUDA_ERROR_OUT_OF_MEMORY", reason=reason), address_limit=8 * 10**9)
    (finding,) = presence_findings(limited)
    assert (finding.code, finding.severity) == ("driver-error", ERROR)
    assert "7.5 GiB of address space" in finding.message and "ulimit -v unlimited" in (finding.fix.text or "")
    (generic,) = presence_findings(replace(limited, address_limit=None))
    assert "nvidia-smi" in (generic.fix.text or "") and "address space" not in generic.message


def test_the_address_space_limit_is_read_as_the_child_inherits_it() -> None:
    code = "from cudnnload.loading.gpu import address_limit; print(address_limit())"
    limited = subprocess.run(["sh", "-c", f"ulimit -v 8000000 && {sys.executable} -c '{code}'"], capture_output=True,
                             text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert limited.stdout.split() == [str(8000000 * 1024)], limited.stderr
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert free.stdout.split() == ["None"] or int(free.stdout) > 8000000 * 1024


def test_an_address_space_limit_under_the_libraries_spans_is_an_error_naming_the_largest() -> None:
    """`judge.gpu.limit_findings` is data in, findings out: the spans add up past the limit, or they do not."""
    from cudnnload.codes import Code
    from cudnnload.judge.gpu import limit_findings

    spans = {"/x/libcudnn.so.9": 2 << 20, "/x/libcudnn_engines_precompiled.so.9": 540 << 20,
             "/x/libcudnn_graph.so.9": 116 << 20, "/x/unread.so": None}
    [said] = limit_findings(600 << 20, spans, None)
    assert said.code is Code.ADDRESS_SPACE_LIMIT and said.subject.path == "/x/libcudnn_engines_precompiled.so.9"
    assert "658 MiB" in said.message and "600 MiB" in said.message, said.message
    assert limit_findings(None, spans, None) == () and limit_findings(1 << 30, spans, None) == ()
    assert limit_findings(1, {"/x/unread.so": None}, None) == ()


# --- GPU memory other processes hold (`judge.gpu.memory_findings`, `loading.nvml`) -------------------------------

def _held(free_mib: int, *holders: Holder, index: int = 0, uuid: str | None = None) -> Device:
    return Device(index, "NVIDIA H100 80GB HBM3", (9, 0), 81559 << 20, f"0000:{index:02x}:00.0",
                  free_memory=free_mib << 20, holders=holders, uuid=uuid)


def test_a_gpu_whose_memory_another_process_holds_is_an_error_naming_it_and_what_keeps_it() -> None:
    """Measured on an H100 (bench/gpu_memory_held.py): with 512 MiB free PyTorch's first convolution and JAX's start
    fail, from 640 MiB both ran. The JAX holder's own setting is the way out the fix names."""
    jax = Holder(2098, 80560 << 20, "python serve.py", "JAX")
    (finding,) = memory_findings(replace(facts((9, 0)), devices=(_held(511, jax),)))
    assert (finding.code, finding.severity) == ("gpu-memory-full", ERROR)
    assert "511 MiB free" in finding.message and "PID 2098 (python serve.py) holds 78.7 GiB" in finding.message
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in (finding.fix.text or "")
    assert [a.do for a in finding.fix.actions] == ["manual"]


def test_a_full_gpu_beside_one_with_room_is_fixed_by_pointing_programs_at_that_one() -> None:
    full, roomy = _held(300, Holder(7, None)), _held(70000, index=1, uuid="GPU-89292303")
    (finding,) = memory_findings(replace(facts((9, 0), (9, 0)), devices=(full, roomy)))
    assert finding.severity == ERROR and "another container" in finding.message
    assert [a.json() for a in finding.fix.actions] == [
        {"do": "env-set", "variable": "CUDA_VISIBLE_DEVICES", "value": "GPU-89292303"}]
    assert finding.fix.alternatives and "end the processes" in str(finding.fix.alternatives[0])


@pytest.mark.parametrize("free_mib, index, expected", [(700, 0, [("gpu-memory-full", WARNING)]),
                                                       (300, 1, [("gpu-memory-full", WARNING)]),
                                                       (700, 1, []), (4096, 0, [])])
def test_little_room_is_a_warning_and_a_gpu_programs_do_not_start_on_only_warns(
        free_mib: int, index: int, expected: list[tuple[str, str]]) -> None:
    devices = (_held(80000), _held(free_mib, index=1)) if index else (_held(free_mib),)
    assert codes(memory_findings(replace(facts((9, 0)), devices=devices))) == expected


@pytest.mark.parametrize("free_mib, environ, expected", [
    (4096, {}, [("gpu-memory-shared", WARNING)]),  # JAX failed so on an H100 (bench/frameworks_more.py)
    (30000, {}, [("gpu-memory-shared", WARNING)]),
    (70000, {}, []),  # its 75 % (59.7 GiB) fits beside its context
    (4096, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, []),
    (4096, {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}, []),
    (4096, {"XLA_PYTHON_CLIENT_MEM_FRACTION": ".02"}, []),  # 1.6 GiB: it fits
    (30000, {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.3"}, []),
    (30000, {"XLA_PYTHON_CLIENT_MEM_FRACTION": "bad"}, [("gpu-memory-shared", WARNING)]),
    *((30000, {"XLA_PYTHON_CLIENT_MEM_FRACTION": value}, [("gpu-memory-shared", WARNING)])
      for value in ("inf", "nan", "-1", "5", "1e999")),  # taken as the default, never a crash
    (300, {}, []),  # too full for any program: gpu-memory-full says it
])
def test_jax_beside_processes_holding_more_than_its_pool_leaves_is_warned_with_its_pool_taken_as_needed(
        free_mib: int, environ: dict[str, str], expected: list[tuple[str, str]]) -> None:
    """JAX takes XLA_PYTHON_CLIENT_MEM_FRACTION (75 %) of each visible GPU as it starts; where that much is not free,
    tsl's BFC allocator backs off by tenths to nearly all that is, and cuDNN's handle and the kernels it loads have
    little room. On an H100 with all but 4 GiB held by another process JAX's convolution failed (out of memory) while
    doctor said it would work."""
    from cudnnload.judge.gpu import jax_pool_findings

    holder = Holder(7, (81559 - free_mib) << 20, "python serve.py", "PyTorch")
    found = jax_pool_findings("jax 0.7.2", environ, (_held(free_mib, holder),))
    assert codes(found) == expected
    if found:
        assert "PID 7 (python serve.py)" in found[0].message and "jax 0.7.2 takes 75 %" in found[0].message
        assert [a.json() for a in found[0].fix.actions] == [
            {"do": "env-set", "variable": "XLA_PYTHON_CLIENT_PREALLOCATE", "value": "false"}]


@pytest.mark.parametrize("mode, holders, expected", [
    ("prohibited", (), [("gpu-unavailable", ERROR)]),
    ("exclusive-process", (Holder(4242, 300 << 20, "python train.py"),), [("gpu-unavailable", ERROR)]),
    ("exclusive-process", (), []), ("default", (Holder(4242, 300 << 20),), [])])
def test_a_compute_mode_that_lets_no_new_process_in_is_said_with_the_mode_set_back(
        mode: str, holders: tuple[Holder, ...], expected: list[tuple[str, str]]) -> None:
    """nvidia-smi -c PROHIBITED lets no process create a context; EXCLUSIVE_PROCESS one at a time: another process
    holding the GPU then gives a new one "CUDA-capable device(s) is/are busy or unavailable"."""
    device = replace(_held(70000, *holders), compute_mode=mode)
    found = memory_findings(replace(facts((9, 0)), devices=(device,)))
    assert codes(found) == expected
    if found:
        assert "busy or unavailable" in found[0].message and "-c DEFAULT" in (found[0].fix.text or "")
        assert all(f"PID {h.pid}" in found[0].message for h in holders)
    # a second GPU with room is where programs go
    other = _held(70000, index=1, uuid="GPU-1")
    (moved,) = memory_findings(replace(facts((9, 0), (9, 0)), devices=(replace(device, compute_mode="prohibited"),
                                                                       other)))
    assert moved.fix.actions[0].json() == {"do": "env-set", "variable": "CUDA_VISIBLE_DEVICES", "value": "GPU-1"}


def test_without_a_memory_reading_nothing_is_said() -> None:
    assert memory_findings(facts((9, 0))) == ()


@pytest.mark.parametrize("maps, framework", [
    ("7f00 r-xp 0 0 0 /venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so\n"
     "7f01 r-xp 0 0 0 /venv/lib/python3.12/site-packages/jaxlib/_jax.so", "JAX"),
    ("7f00 r-xp 0 0 0 /venv/site-packages/tensorflow/libtensorflow_framework.so.2", "TensorFlow"),
    ("7f00 r-xp 0 0 0 /venv/site-packages/torch/lib/libtorch_cuda.so", "PyTorch"),
    ("7f00 r-xp 0 0 0 /usr/bin/ffmpeg", None)])
def test_the_framework_holding_memory_is_read_from_what_its_process_maps(maps: str, framework: str | None) -> None:
    assert holder_framework(maps) == framework


def test_nvml_is_taken_only_from_the_folder_of_the_driver_this_process_maps() -> None:
    mapped = ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/nvidia/lib64/libcuda.so.580.159.04"]
    assert driver_folder(mapped) == "/usr/local/nvidia/lib64"
    assert driver_folder(["/usr/lib/x86_64-linux-gnu/libc.so.6"]) is None


def test_this_process_and_its_children_are_its_own_not_holders() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert {os.getpid(), child.pid} <= own_processes()
        assert os.getppid() not in own_processes()
    finally:
        child.kill()
        child.wait()


def test_explain_here_shows_a_gpu_held_now_and_cannot_tell_from_a_gpu_with_room() -> None:
    from cudnnload.diagnose.explain.here import CANNOT_TELL, SHOWS, Machine, memory_held
    from cudnnload.diagnose.explain.reading import read

    held = Machine({}, _gpu=replace(facts((9, 0)), devices=(_held(200, Holder(9, 80 << 30, "python a.py")),)))
    room = Machine({}, _gpu=replace(facts((9, 0)), devices=(_held(70000),)))
    torch = read("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\ntorch 2.11.0")
    assert memory_held(held, torch).verdict == SHOWS
    assert memory_held(room, torch).verdict == CANNOT_TELL
    # half the GPU held: room for a PyTorch program, less than the 75 % JAX takes as it starts
    half = Machine({}, _gpu=replace(facts((9, 0)), devices=(_held(40000, Holder(9, 40 << 30, "python a.py")),)))
    jax = read("jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed.\n"
               "import jax")
    assert "jax" in (jax.framework, *jax.frameworks), jax
    said = memory_held(half, jax)
    assert said.verdict == SHOWS and "75 % JAX takes" in said.detail, said
    assert memory_held(half, torch).verdict == CANNOT_TELL
    assert memory_held(Machine({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, _gpu=half.gpu), jax).verdict == CANNOT_TELL


_HOLDER = """
import ctypes, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
keep, context, free, total = int(sys.argv[1]), ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
assert cuda.cuInit(0) == 0 and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0) == 0
cuda.cuCtxSetCurrent(context)
while cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0 and free.value - keep >= 2**21:
    if cuda.cuMemAlloc_v2(ctypes.byref(ctypes.c_uint64()), ctypes.c_size_t(min(free.value - keep, 2**30))) != 0:
        break
print("ready", flush=True)
time.sleep(600)
"""


_READ_MEMORY = """
import json
from cudnnload.judge.gpu import memory_findings
from cudnnload.loading.gpu import gpu_facts
facts = gpu_facts()
print(json.dumps({"free": facts.devices[0].free_memory, "holders": [h.pid for h in facts.devices[0].holders],
                  "findings": [[f.code, f.severity, f.message] for f in memory_findings(facts)]}))
"""


@pytest.mark.gpu
def test_another_process_holding_the_gpus_memory_is_seen_and_cudnn_meets_it() -> None:
    """A process holding all but 256 MiB of GPU 0 (plain cuMemAlloc): NVML's reading, in a process that is not the
    holder's parent (a process's own children count as free), names it, the judge says the error, and the truth
    agrees: cudnnCreate fails in a fresh process. With the holder gone, nothing is said."""
    require_gpus(1)
    shim, major = installed_cudnn()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(256 << 20)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        held = run_child(_READ_MEMORY)
        own = memory_findings(gpu_facts())  # the holder is this process's child: its memory is counted free
        truth = probe([("shim", shim)], major, create=True)
    finally:
        holder.kill()
        holder.wait()
    assert held["free"] is not None and held["free"] < 600 << 20, held
    assert holder.pid in held["holders"] and own == ()
    assert [f[:2] for f in held["findings"]] == [["gpu-memory-full", ERROR]]
    assert f"PID {holder.pid}" in held["findings"][0][2]
    create = truth.step("cudnnCreate")
    assert create is not None and not create.ok, truth.verdict
    assert run_child(_READ_MEMORY)["findings"] == []


def test_explain_here_reads_a_gpu_no_new_process_may_use_as_no_gpu_for_the_program() -> None:
    from cudnnload.diagnose.explain.here import RULES_OUT, SHOWS, Machine, driver

    prohibited = replace(facts((9, 0)), devices=(replace(_held(70000), compute_mode="prohibited"),))
    assert driver("missing")(Machine({}, _gpu=prohibited), None).verdict == SHOWS  # type: ignore[arg-type]
    shared = replace(facts((9, 0)), devices=(_held(70000),))
    assert driver("missing")(Machine({}, _gpu=shared), None).verdict == RULES_OUT  # type: ignore[arg-type]


def test_nvml_that_someone_else_can_change_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's folder as this process mapped it, with a libnvidia-ml.so.1 anyone may write: not run (issue 29);
    a file that is no library at all gives no answer, never an exception."""
    import cudnnload.loading.nvml as nvml

    planted = tmp_path / "libnvidia-ml.so.1"
    planted.write_bytes(b"not a library")
    monkeypatch.setattr(nvml, "driver_folder", lambda mapped: str(tmp_path))
    loaded: list[str] = []
    monkeypatch.setattr(nvml.ctypes, "CDLL", lambda path: loaded.append(path))
    planted.chmod(0o666)
    tmp_path.chmod(0o755)
    assert nvml.memory_by_bus_id(["0000:00:06.0"]) == {} and loaded == []
    planted.chmod(0o644)
    monkeypatch.undo()
    monkeypatch.setattr(nvml, "driver_folder", lambda mapped: str(tmp_path))
    assert nvml.memory_by_bus_id(["0000:00:06.0"]) == {}  # dlopen refuses it: no answer


def test_a_gpu_split_into_mig_instances_gets_no_memory_answer() -> None:
    """The whole GPU's memory says nothing of the MIG instance a program gets: no reading, so no finding."""
    from cudnnload.loading.nvml import _mig

    class Nvml:
        def __init__(self, mode: int | None) -> None:
            self.mode = mode

        def nvmlDeviceGetMigMode(self, device: object, current: Any, pending: Any) -> int:  # noqa: N802
            if self.mode is None:
                return 3  # NVML_ERROR_NOT_SUPPORTED: a GPU without MIG
            current._obj.value = self.mode
            return 0

    assert [_mig(Nvml(mode), None) for mode in (1, 0, None)] == [True, False, False]  # type: ignore[arg-type]
