"""The NVIDIA driver and GPUs as facts (`loading.gpu.gpu_facts` asks the driver; `judge.gpu` judges them).

Plain records and parsing only, so that the judge can read them without loading anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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
        return None if self.driver_version is None else cuda_text(self.driver_version)


# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  <date>" (proprietary module) or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." (open module).
_KERNEL_VERSION = re.compile(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)*)\s")


def kernel_module_version(nvrm_line: str) -> str | None:
    """The NVIDIA kernel module's version, "580.159.04", from the first line of /proc/driver/nvidia/version."""
    match = _KERNEL_VERSION.search(nvrm_line)
    return match.group(1) if match else None


def cuda_text(version: int) -> str:
    """CUDA's ``major*1000 + minor*10`` encoding to "13.0"."""
    return f"{version // 1000}.{version % 1000 // 10}"
