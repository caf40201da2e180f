"""The NVIDIA driver and the GPUs it shows, and whether a cuDNN build can run on them.

`gpu_facts` asks the driver through cuda-python's ``cuda.bindings.driver``,
imported on first use (about 100 ms, ../shared/reference/cudnn-facts.md §8).
A machine without a driver, or without cuda-python, gives facts with a
reason, never an exception: on a driver-less machine ``cuInit`` raises
``cuda.pathfinder.DynamicLibNotFoundError`` instead of returning a CUresult.

The judgments on those facts are `cudnnload.judge.gpu`'s.
"""

from __future__ import annotations

import glob
import importlib
import os

from cudnnload.errors import DriverUnavailable, LoadError

TYPE_CHECKING = False  # type checkers treat this name as true
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType
    from typing import Any

    from cudnnload.resolve.hardware import Device, GpuFacts

# The judgments (fix texts) and the doctor's facts are imported where they are used: the dispatch path
# imports this module in a warm-up thread while the application imports its own modules, and every
# millisecond of import there holds the GIL against the application (cudnnload.dispatch.starting).

# Evidence that NVIDIA hardware and its kernel module are present. /proc/driver/nvidia is
# the kernel module's own folder and shows in containers too; /dev/nvidia* appear only
# where the GPUs were passed in (docker --gpus, the NVIDIA container toolkit).
_KERNEL_VERSION_FILE = "/proc/driver/nvidia/version"
_HARDWARE_GLOBS = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/proc/driver/nvidia")

# The oldest Linux x86_64 driver for each CUDA runtime (CUDA Toolkit release notes, "CUDA Toolkit and
# Corresponding Driver Versions"; CUDA 11 and later: the minor-version-compatible minimum of the major).
_MIN_DRIVER = {(9, 0): "384.81", (9, 1): "387.26", (9, 2): "396.26", (10, 0): "410.48", (10, 1): "418.39",
               (10, 2): "440.33", (11, None): "450.80.02", (12, None): "525.60.13", (13, None): "580.65.06"}


def minimum_driver(cudart_version: int) -> str | None:
    """The oldest driver that runs a build of ``cudnnGetCudartVersion()`` (10020: CUDA 10.2 -> 440.33)."""
    major, minor = cudart_version // 1000, cudart_version % 1000 // 10
    return _MIN_DRIVER.get((major, minor)) or _MIN_DRIVER.get((major, None))

class CudaError(LoadError):
    """A CUDA driver call returned something other than CUDA_SUCCESS."""

    def __init__(self, call: str, result: int, name: str, description: str) -> None:
        self.call = call
        self.result = result
        self.result_name = name  # "CUDA_ERROR_NO_DEVICE"
        super().__init__(f"{call} returned {name} ({result}): {description}", fix=_init_fix(name))


def driver_module() -> ModuleType:
    """``cuda.bindings.driver``; DriverUnavailable when cuda-python is not importable, or the libcuda.so.1 it
    would load is one someone else put on LD_LIBRARY_PATH (`cudadriver.refuse_planted_driver`)."""
    from cudnnload.loading.cudadriver import refuse_planted_driver

    refuse_planted_driver()
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
                             fix=_init_fix(code))


def _init_fix(code: str) -> str:
    from cudnnload.judge.gpu import GENERIC_INIT_FIX, INIT_FIXES

    return INIT_FIXES.get(code, GENERIC_INIT_FIX)


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


_models: dict[int, tuple[str, tuple[int, int]]] = {}


def device_model(index: int) -> tuple[str, tuple[int, int]]:
    """Device ``index``'s name and compute capability, through `cudnnload.loading.cudadriver`; asked once per
    process (they do not change), and needing ``cuInit`` only, not a context: a warm-up asks while the
    driver still makes the context (cudnnload.dispatch.warmup)."""
    model = _models.get(index)
    if model is None:
        driver = initialized_driver()
        handle = checked(driver, "cuDeviceGet", index)
        model = _models[index] = (_name(driver, handle), _capability(driver, handle))
    return model


def _kernel_module() -> str | None:
    from cudnnload.resolve.hardware import kernel_module_version

    try:
        with open(_KERNEL_VERSION_FILE) as handle:
            return kernel_module_version(handle.readline())
    except OSError:
        return None


def address_limit() -> int | None:
    """This process's address-space limit (RLIMIT_AS, `ulimit -v`; its children inherit it), in bytes; None where
    there is none."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def gpu_facts(environ: Mapping[str, str] | None = None) -> GpuFacts:
    """Driver version and every visible device; never raises for a missing driver or cuda-python.

    The driver reads CUDA_VISIBLE_DEVICES from this process's environment at
    its first ``cuInit``; ``environ`` is where the value is noted from, so
    pass this process's environment (the default) unless testing a report.
    """
    from cudnnload.resolve.hardware import GpuFacts

    env = os.environ if environ is None else environ
    hardware = tuple(sorted(path for pattern in _HARDWARE_GLOBS for path in glob.glob(pattern)))
    base: dict[str, Any] = {"visible_devices": env.get("CUDA_VISIBLE_DEVICES"), "kernel_module": _kernel_module(),
                            "hardware": hardware, "address_limit": address_limit()}
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
    return GpuFacts(bindings=bindings, driver_found=True, driver_version=version, devices=_with_memory(devices),
                    error=None, reason=None if devices else "the driver reports no CUDA device", **base)


def _with_memory(devices: tuple[Device, ...]) -> tuple[Device, ...]:
    """Each device with what NVML says of its memory now (`loading.nvml`); as it was where NVML gives no answer."""
    from dataclasses import replace

    from cudnnload.loading.nvml import memory_by_bus_id

    read = memory_by_bus_id([d.pci_bus_id for d in devices])
    return tuple(replace(d, free_memory=m.free, holders=m.holders, uuid=m.uuid, compute_mode=m.compute_mode)
                 if (m := read.get(d.pci_bus_id)) is not None else d for d in devices)


def _device(driver: ModuleType, index: int) -> Device:
    from cudnnload.resolve.hardware import Device

    handle = checked(driver, "cuDeviceGet", index)
    return Device(
        index=index,
        name=_name(driver, handle),
        capability=_capability(driver, handle),
        total_memory=int(checked(driver, "cuDeviceTotalMem", handle)),
        pci_bus_id=checked(driver, "cuDeviceGetPCIBusId", 32, handle).split(b"\0", 1)[0].decode(),
    )


def _name(driver: ModuleType, handle: Any) -> str:
    return str(checked(driver, "cuDeviceGetName", 256, handle).split(b"\0", 1)[0].decode(errors="replace"))


def _capability(driver: ModuleType, handle: Any) -> tuple[int, int]:
    attribute = driver.CUdevice_attribute
    return (int(checked(driver, "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                        handle)),
            int(checked(driver, "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                        handle)))
