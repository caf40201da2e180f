"""The NVIDIA driver and the GPUs it shows, and whether a cuDNN build can run on them.

`gpu_facts` asks the driver through cuda-python's ``cuda.bindings.driver``,
imported on first use (about 100 ms, ../shared/reference/cudnn-facts.md §8).
A machine without a driver, or without cuda-python, gives facts with a
reason, never an exception: on a driver-less machine ``cuInit`` raises
``cuda.pathfinder.DynamicLibNotFoundError`` instead of returning a CUresult.

The checks are pure functions of those facts and of what cuDNN reports about
itself (``cudnnGetCudartVersion``, ``cudnnGetMaxDeviceVersion``, the SASS/PTX
inventory from ``elf.read_elf(...).gpu_code``); each returns `Finding`s with
the codes the doctor documents.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cudnnload.errors import DriverUnavailable, LoadError
from cudnnload.findings import ERROR, INFO, WARNING, Finding
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.fatbin import GpuCode

# Evidence that NVIDIA hardware and its kernel module are present. /proc/driver/nvidia is
# the kernel module's own folder and shows in containers too; /dev/nvidia* appear only
# where the GPUs were passed in (docker --gpus, the NVIDIA container toolkit).
_KERNEL_VERSION_FILE = "/proc/driver/nvidia/version"
_HARDWARE_GLOBS = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/proc/driver/nvidia")

# Oldest driver branch per CUDA major under minor-version compatibility
# (CUDA Compatibility guide, "Minor Version Compatibility", table 1).
MIN_DRIVER_BRANCH = {13: "R580", 12: "R525", 11: "R450"}

# The oldest Linux x86_64 driver for each CUDA runtime (CUDA Toolkit release notes, "CUDA Toolkit and
# Corresponding Driver Versions"; CUDA 11 and later: the minor-version-compatible minimum of the major).
_MIN_DRIVER = {(9, 0): "384.81", (9, 1): "387.26", (9, 2): "396.26", (10, 0): "410.48", (10, 1): "418.39",
               (10, 2): "440.33", (11, None): "450.80.02", (12, None): "525.60.13", (13, None): "580.65.06"}


def minimum_driver(cudart_version: int) -> str | None:
    """The oldest driver that runs a build of ``cudnnGetCudartVersion()`` (10020: CUDA 10.2 -> 440.33)."""
    major, minor = cudart_version // 1000, cudart_version % 1000 // 10
    return _MIN_DRIVER.get((major, minor)) or _MIN_DRIVER.get((major, None))

# cuDNN 9.11 dropped compute capabilities below 7.5: PyTorch refuses it on such GPUs
# (torch/backends/cudnn/__init__.py: ``__cudnn_version >= 91100 and min_cc < (7, 5)``),
# and the 9.28 wheels' ops/cnn/adv carry no SASS below sm_75 (cudnn-facts §3.2).
TURING_ONLY_SINCE = Release(9, 11, 0)

# cuInit results with a specific remedy; others get the generic one.
_INIT_FIXES = {
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "libcuda.so.1 and the loaded kernel module come from different driver "
    "versions (typically after a driver upgrade without a reboot): reboot, or reload the nvidia kernel modules",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "a CUDA forward-compatibility libcuda (cuda-compat) is in use on a "
    "GPU that does not support it: remove its folder from LD_LIBRARY_PATH or /etc/ld.so.conf.d",
    "FunctionNotFoundError": "install the cuda-python built for this driver's CUDA major "
    "(cuda-python<13 for drivers older than R580)",
}
_GENERIC_INIT_FIX = "run nvidia-smi and check `dmesg` for NVRM errors"


class CudaError(LoadError):
    """A CUDA driver call returned something other than CUDA_SUCCESS."""

    def __init__(self, call: str, result: int, name: str, description: str) -> None:
        self.call = call
        self.result = result
        self.result_name = name  # "CUDA_ERROR_NO_DEVICE"
        super().__init__(f"{call} returned {name} ({result}): {description}",
                         fix=_INIT_FIXES.get(name, _GENERIC_INIT_FIX))


def driver_module() -> ModuleType:
    """``cuda.bindings.driver``; DriverUnavailable when cuda-python is not importable."""
    try:
        return importlib.import_module("cuda.bindings.driver")
    except ImportError as exc:
        raise DriverUnavailable("ImportError", f"cuda-python is not importable ({exc})",
                                fix="pip install cuda-python (cuda-python<13 for drivers older than R580)") from None


def checked(driver: ModuleType, call: str, *args: Any) -> Any:
    """Call ``driver.<call>(*args)``; CudaError unless CUDA_SUCCESS. Returns the single output, if any.

    cuda.bindings returns ``(CUresult, outputs...)`` from every driver function.
    """
    result, *outputs = getattr(driver, call)(*args)
    if result != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(result)
        raise CudaError(call, int(result), result.name, (text or b"").decode(errors="replace"))
    return outputs[0] if outputs else None


def _unreachable(exc: RuntimeError) -> DriverUnavailable:
    """What a RuntimeError from cuda.bindings means: no libcuda.so.1, or a driver the bindings cannot use."""
    code = type(exc).__name__
    if code == "DynamicLibNotFoundError":  # cuda.pathfinder found no libcuda.so.1 (cudnn-facts §8)
        return DriverUnavailable(code, "no NVIDIA driver was found (libcuda.so.1 cannot be loaded)",
                                 fix="install the NVIDIA driver, or in a container run with --gpus all")
    return DriverUnavailable(code, f"cuda-python cannot use this driver ({code}: {exc})",
                             fix=_INIT_FIXES.get(code, _GENERIC_INIT_FIX))


def initialized_driver() -> ModuleType:
    """The driver after ``cuInit(0)``, as `cudnnload.loading.cudadriver` (ctypes; cuda.bindings' calling
    convention, without its import cost); DriverUnavailable says why not."""
    from cudnnload.loading import cudadriver

    try:
        checked(cudadriver, "cuInit", 0)  # type: ignore[arg-type]
    except CudaError as exc:
        raise DriverUnavailable(exc.result_name, exc.reason, fix=exc.fix) from None
    return cudadriver  # type: ignore[return-value]


def synchronize() -> None:
    """Wait for the work queued in this thread's current context (``cuCtxSynchronize``); CudaError if it failed."""
    checked(initialized_driver(), "cuCtxSynchronize")


def device_count() -> tuple[int, str | None]:
    """How many CUDA devices the driver shows, and why none when it shows none: the backends' cheap
    check (`gpu_facts` imports cuda-python for the doctor's fuller report)."""
    try:
        count = int(checked(initialized_driver(), "cuDeviceGetCount"))
    except (DriverUnavailable, CudaError) as exc:
        return 0, exc.reason
    return count, None if count else "the driver reports no CUDA device"


def device_model(index: int) -> tuple[str, tuple[int, int]]:
    """Device ``index``'s name and compute capability, through `cudnnload.loading.cudadriver`."""
    found = _device(initialized_driver(), index)
    return found.name, found.capability


@dataclass(frozen=True)
class Device:
    """One GPU as the driver numbers it (after CUDA_VISIBLE_DEVICES)."""

    index: int
    name: str
    capability: tuple[int, int]  # compute capability (major, minor)
    total_memory: int  # bytes
    pci_bus_id: str

    @property
    def sm(self) -> int:
        """``sm_90`` -> 90; ten times this is the scale of ``cudnnGetMaxDeviceVersion``."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.name}, sm_{self.sm})"


@dataclass(frozen=True)
class GpuFacts:
    """What the driver says, or why it could not be asked."""

    bindings: str | None  # cuda-bindings version; None when cuda-python is not importable
    driver_found: bool  # libcuda.so.1 loaded and reported its version
    driver_version: int | None  # cuDriverGetVersion: 13000 is CUDA 13.0
    devices: tuple[Device, ...]
    error: str | None  # what stopped the query: a CUresult name, or the exception type
    reason: str | None  # the same for people
    visible_devices: str | None  # CUDA_VISIBLE_DEVICES as set (None: unset)
    kernel_module: str | None  # NVIDIA kernel module version from /proc/driver/nvidia/version
    hardware: tuple[str, ...]  # /dev/nvidia* and /proc/driver/nvidia paths that exist

    @property
    def driver_cuda(self) -> str | None:
        """The newest CUDA the driver supports, "13.0"."""
        return None if self.driver_version is None else _cuda_text(self.driver_version)


def _cuda_text(version: int) -> str:
    """CUDA's ``major*1000 + minor*10`` encoding to "13.0"."""
    return f"{version // 1000}.{version % 1000 // 10}"


# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  <date>" (proprietary module) or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." (open module).
_KERNEL_VERSION = re.compile(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)*)\s")


def kernel_module_version(nvrm_line: str) -> str | None:
    """The NVIDIA kernel module's version, "580.159.04", from the first line of /proc/driver/nvidia/version."""
    match = _KERNEL_VERSION.search(nvrm_line)
    return match.group(1) if match else None


def _kernel_module() -> str | None:
    try:
        with open(_KERNEL_VERSION_FILE) as handle:
            return kernel_module_version(handle.readline())
    except OSError:
        return None


def gpu_facts(environ: Mapping[str, str] | None = None) -> GpuFacts:
    """Driver version and every visible device; never raises for a missing driver or cuda-python.

    The driver reads CUDA_VISIBLE_DEVICES from this process's environment at
    its first ``cuInit``; ``environ`` is where the value is noted from, so
    pass this process's environment (the default) unless testing a report.
    """
    env = os.environ if environ is None else environ
    hardware = tuple(sorted(path for pattern in _HARDWARE_GLOBS for path in glob.glob(pattern)))
    base: dict[str, Any] = {"visible_devices": env.get("CUDA_VISIBLE_DEVICES"), "kernel_module": _kernel_module(),
                            "hardware": hardware}
    try:
        driver = driver_module()
    except DriverUnavailable as exc:
        return GpuFacts(bindings=None, driver_found=False, driver_version=None, devices=(), error=exc.code,
                        reason=exc.reason, **base)
    bindings = getattr(importlib.import_module("cuda.bindings"), "__version__", "unknown")
    version: int | None = None
    try:
        version = int(checked(driver, "cuDriverGetVersion"))  # the first call that loads libcuda.so.1
        checked(driver, "cuInit", 0)
        devices = tuple(_device(driver, index) for index in range(checked(driver, "cuDeviceGetCount")))
    except RuntimeError as exc:
        missing = _unreachable(exc)
        return GpuFacts(bindings=bindings, driver_found=missing.code != "DynamicLibNotFoundError",
                        driver_version=version, devices=(), error=missing.code, reason=missing.reason, **base)
    except CudaError as exc:
        return GpuFacts(bindings=bindings, driver_found=True, driver_version=version, devices=(),
                        error=exc.result_name, reason=exc.reason, **base)
    return GpuFacts(bindings=bindings, driver_found=True, driver_version=version, devices=devices, error=None,
                    reason=None if devices else "the driver reports no CUDA device", **base)


def _device(driver: ModuleType, index: int) -> Device:
    handle = checked(driver, "cuDeviceGet", index)
    attribute = driver.CUdevice_attribute
    return Device(
        index=index,
        name=checked(driver, "cuDeviceGetName", 256, handle).split(b"\0", 1)[0].decode(errors="replace"),
        capability=(checked(driver, "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                            handle),
                    checked(driver, "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                            handle)),
        total_memory=int(checked(driver, "cuDeviceTotalMem", handle)),
        pci_bus_id=checked(driver, "cuDeviceGetPCIBusId", 32, handle).split(b"\0", 1)[0].decode(),
    )


# --- checks ---------------------------------------------------------------------------------------


def _cudnn(release: Release | None) -> str:
    """"cuDNN 9.28" (the patch only when it is not 0), as NVIDIA names releases."""
    if release is None:
        return "this cuDNN"
    return f"cuDNN {release.major}.{release.minor}" + (f".{release.patch}" if release.patch else "")


def presence_findings(facts: GpuFacts, *, release: Release | None = None,
                      version_checks_passed: bool = False) -> tuple[Finding, ...]:
    """``no-driver``, ``no-gpu-visible``, ``driver-error`` or ``driver-unchecked``; () when GPUs are usable.

    ``version_checks_passed``: the caller's probe loaded ``release`` and its
    VersionChecks passed, which the message then says.
    """
    if facts.bindings is None:
        return (Finding("driver-unchecked", WARNING, f"the NVIDIA driver and GPUs were not checked: {facts.reason}",
                        fix="pip install cuda-python (cuda-python<13 for drivers older than R580)"),)
    if not facts.driver_found:
        lead = f"{_cudnn(release)} loads and passes its version checks, but no" if version_checks_passed else "no"
        message = f"{lead} NVIDIA driver was found (libcuda.so.1): handles cannot be created"
        if not facts.hardware:
            return (Finding("no-driver", INFO, message,
                            fix="nothing to do on a machine without an NVIDIA GPU; on a GPU machine install the "
                                "NVIDIA driver"),)
        module = f" {facts.kernel_module}" if facts.kernel_module else ""
        return (Finding("no-driver", ERROR, f"{message}, although {', '.join(facts.hardware)} show an NVIDIA GPU "
                        f"and kernel module{module}",
                        fix=f"install the driver's user-space libraries matching kernel module{module}, or in a "
                            "container run with --gpus all (NVIDIA container toolkit)"),)
    if facts.devices:
        return ()
    if facts.error not in (None, "CUDA_ERROR_NO_DEVICE"):
        return (Finding("driver-error", ERROR, f"the NVIDIA driver is installed but cannot be used: {facts.reason}",
                        fix=_INIT_FIXES.get(facts.error or "", _GENERIC_INIT_FIX)),)
    visible = facts.visible_devices
    if visible is not None:
        # The driver drops every entry from the first invalid one (CUDA programming guide,
        # "CUDA Environment Variables"), so "", "-1" or an index that does not exist hide all GPUs.
        return (Finding("no-gpu-visible", ERROR, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU: the driver "
                        "reports no CUDA device", fix="unset CUDA_VISIBLE_DEVICES, or list indexes or UUIDs that "
                        "exist (nvidia-smi -L)"),)
    return (Finding("no-gpu-visible", ERROR, "the NVIDIA driver is loaded but reports no CUDA device",
                    fix="check nvidia-smi; in a container pass the GPUs in (--gpus all)"),)


def driver_findings(facts: GpuFacts, cudart_version: int, *, release: Release | None = None) -> tuple[Finding, ...]:
    """The driver's CUDA against the CUDA runtime linked into cuDNN (``cudnnGetCudartVersion``, e.g. 13050).

    cuDNN links cudart statically (cudnn-facts §1), so this is a property of
    the build. Since CUDA 11 a driver of the same major runs newer minors
    ("minor version compatibility"), except that PTX from a newer toolkit
    cannot be JIT-compiled by it; across majors, or before CUDA 11, the
    driver must be at least the runtime's version.
    """
    if facts.driver_version is None or cudart_version <= 0:
        return ()
    need_major, have_major = cudart_version // 1000, facts.driver_version // 1000
    built = f"{_cudnn(release)} was built with CUDA {_cuda_text(cudart_version)} (cudnnGetCudartVersion " \
            f"{cudart_version})"
    module = f" {facts.kernel_module}" if facts.kernel_module else ""
    driver = f"the driver{module} supports CUDA {_cuda_text(facts.driver_version)} (cuDriverGetVersion " \
             f"{facts.driver_version})"
    if have_major < need_major or (need_major < 11 and facts.driver_version < cudart_version):
        branch = MIN_DRIVER_BRANCH.get(need_major)
        upgrade = f"upgrade the NVIDIA driver to {branch} or newer" if branch else \
            f"upgrade the NVIDIA driver to one that supports CUDA {_cuda_text(cudart_version)}"
        other = f", or install the cuDNN build for CUDA {have_major} (pip install nvidia-cudnn-cu{have_major})" \
            if have_major >= 11 else ""
        return (Finding("driver-too-old", ERROR, f"{built}; {driver}: the CUDA runtime inside cuDNN will fail with "
                        "cudaErrorInsufficientDriver", fix=upgrade + other),)
    if have_major == need_major and facts.driver_version < cudart_version:
        return (Finding("driver-minor-compat", INFO, f"{built}; {driver}: it runs under CUDA minor-version "
                        "compatibility, but PTX from the newer toolkit cannot be JIT-compiled by this driver",
                        fix=f"to JIT-compile PTX (GPUs newer than the build), upgrade the driver to one that "
                            f"supports CUDA {_cuda_text(cudart_version)}"),)
    return ()


def _arch_sm(arch: str) -> int:
    """``sm_90a`` / ``sm_120f`` -> 90 / 120 (fatbin.py names)."""
    return int(arch[3:].rstrip("af"))


def _code_text(code: GpuCode) -> str:
    return f"SASS {' '.join(code.sass_archs) or '-'}; PTX {' '.join(code.ptx_archs) or '-'}"


def device_findings(facts: GpuFacts, *, release: Release | None, max_device_version: int | None,
                    gpu_code: Mapping[str, GpuCode | None], cudart_version: int | None = None) -> tuple[Finding, ...]:
    """Each device's compute capability against what the libraries carry.

    ``gpu_code`` maps a library name ("libcudnn_ops.so.9") to its ``.nv_fatbin``
    inventory (None for libraries without GPU code). Per device, the first
    matching rule wins:

    - ``gpu-too-old``: cuDNN >= 9.11 on compute capability < 7.5, or a device
      older than every architecture the libraries carry;
    - ``gpu-too-new``: SM x 10 above ``cudnnGetMaxDeviceVersion``. cuDNN >= 9.0
      built with CUDA >= 12 then runs in forward-compatibility mode by PTX JIT
      (cuDNN docs, "Hardware Forward Compatibility"): a warning when some
      library has PTX that can compile for the device, else an error;
    - ``no-kernels-for-gpu``: a library with neither SASS nor PTX for it.
    """
    codes = {name: code for name, code in gpu_code.items() if code is not None}
    findings: list[Finding] = []
    for device in facts.devices:
        runs = {name: code.runs_on(device.capability) for name, code in codes.items()}
        oldest = min((_arch_sm(arch) for code in codes.values() for arch in (*code.sass_archs, *code.ptx_archs)),
                     default=None)
        if release is not None and release >= TURING_ONLY_SINCE and device.capability < (7, 5):
            findings.append(Finding(
                "gpu-too-old", ERROR, f"{_cudnn(release)} needs compute capability 7.5 (Turing) or newer; "
                f"{device.label} is {device.capability[0]}.{device.capability[1]}",
                fix="install cuDNN 9.10 or older (pip install \"nvidia-cudnn-cu12<9.11\"; the cu13 builds have no "
                    "kernels below sm_75), or use a GPU of compute capability 7.5 or newer"))
        elif runs and not any(runs.values()) and oldest is not None and device.sm < oldest:
            findings.append(Finding(
                "gpu-too-old", ERROR, f"{device.label} is older than every architecture {_cudnn(release)} carries "
                f"(the oldest is sm_{oldest})", fix="use an older cuDNN release built for this GPU, or a newer GPU"))
        elif max_device_version and device.sm * 10 > max_device_version:
            forward = (release is None or release.major >= 9) and (cudart_version is None or cudart_version >= 12000)
            jit = forward and any(runs.values())
            message = f"{device.label} is newer than the newest GPU {_cudnn(release)} supports natively " \
                      f"(cudnnGetMaxDeviceVersion {max_device_version}, sm_{max_device_version // 10})"
            message += ": it runs in forward-compatibility mode, JIT-compiling PTX (slow first calls, some " \
                       "operations unsupported)" if jit else ": no library has code that can run on it"
            findings.append(Finding("gpu-too-new", WARNING if jit else ERROR, message,
                                    fix="install a cuDNN release whose cudnnGetMaxDeviceVersion covers "
                                        f"sm_{device.sm}" + ("; forward-compatibility mode may need "
                                                             "CUDNN_LIB_CONFIG=FULL" if jit else "")))
        else:
            findings.extend(Finding(
                "no-kernels-for-gpu", ERROR, f"{name} has no code that runs on {device.label}: "
                f"{_code_text(codes[name])}", fix="install a cuDNN release built for this GPU's architecture")
                for name, ok in runs.items() if not ok)
    return tuple(findings)


def gpu_findings(facts: GpuFacts, *, release: Release | None, cudart_version: int | None,
                 max_device_version: int | None, gpu_code: Mapping[str, GpuCode | None],
                 version_checks_passed: bool = False) -> tuple[Finding, ...]:
    """Every check that the facts allow: presence first, then the driver, then each device."""
    presence = presence_findings(facts, release=release, version_checks_passed=version_checks_passed)
    if not facts.driver_found:
        return presence
    driver = driver_findings(facts, cudart_version, release=release) if cudart_version else ()
    return presence + driver + device_findings(facts, release=release, max_device_version=max_device_version,
                                               gpu_code=gpu_code, cudart_version=cudart_version)
