"""The NVIDIA driver and GPUs as facts (`loading.gpu.gpu_facts` asks the driver; `judge.gpu` judges them).

Plain records and parsing only, so that the judge can read them without loading anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Holder:
    """A process holding memory on a GPU (NVML's compute processes): its id, the bytes it holds (None where NVML
    cannot say, as in a container), its command line and the framework whose allocator it runs (from the files it
    maps: `holder_framework`), where this process may read them."""

    pid: int
    held: int | None
    command: str | None = None
    framework: str | None = None

    @property
    def named(self) -> str:
        """"PID 1403 (python serve.py)": its command on one line (a ``-c`` script's too), cut at 80 characters."""
        return f"PID {self.pid}" + (f" ({' '.join(self.command.split())[:80]})" if self.command else "")

    @property
    def label(self) -> str:
        return self.named + (f" holds {self.held / 2**30:.1f} GiB" if self.held is not None else "")


@dataclass(frozen=True)
class Device:
    """One GPU as the driver numbers it (after CUDA_VISIBLE_DEVICES)."""

    index: int
    name: str
    capability: tuple[int, int]  # compute capability (major, minor)
    total_memory: int  # bytes
    pci_bus_id: str
    # what NVML says of its memory now, less what this process and its children hold (None: NVML gave no answer)
    free_memory: int | None = None
    holders: tuple[Holder, ...] = ()  # the other processes holding its memory
    uuid: str | None = None  # "GPU-8929...", as CUDA_VISIBLE_DEVICES takes it
    compute_mode: str | None = None  # NVML's: "default", "prohibited", "exclusive-process" (nvidia-smi -c)

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
    # the address space the asking process may use (RLIMIT_AS, `ulimit -v`), in bytes; None: unlimited
    address_limit: int | None = None

    @property
    def driver_cuda(self) -> str | None:
        """The newest CUDA the driver supports, "13.0"."""
        return None if self.driver_version is None else cuda_text(self.driver_version)


# A framework's allocator, from a file its process maps
_ALLOCATORS = (("JAX", ("xla_extension", "jax_cuda", "jaxlib", "libjax_common")), ("TensorFlow",
               ("libtensorflow_framework", "_pywrap_tensorflow")), ("PyTorch", ("libtorch_cuda", "libc10_cuda")))


def holder_framework(maps: str) -> str | None:
    """The framework a process holding GPU memory runs, from its /proc/PID/maps text: JAX and TensorFlow take most
    of a GPU as they start, PyTorch keeps what it freed; None for any other."""
    return next((name for name, marks in _ALLOCATORS if any(mark in maps for mark in marks)), None)


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


# The CUDA version each Linux driver branch supports (what its cuDriverGetVersion returns and nvidia-smi prints
# as "CUDA Version"; the CUDA Toolkit release notes' table of toolkit and minimum driver versions): a driver of
# a branch runs every toolkit up to that version, and newer minors of the same major under minor-version
# compatibility.
DRIVER_BRANCH_CUDA: tuple[tuple[int, int], ...] = (
    (450, 11000), (455, 11010), (460, 11020), (465, 11030), (470, 11040), (495, 11050), (510, 11060), (515, 11070),
    (520, 11080), (525, 12000), (530, 12010), (535, 12020), (545, 12030), (550, 12040), (555, 12050), (560, 12060),
    (565, 12070), (570, 12080), (575, 12090), (580, 13000), (590, 13010),
)


def driver_cuda_version(text: str) -> int | None:
    """``--driver`` as a CUDA version (``12.4``, what nvidia-smi prints as "CUDA Version") or a driver version
    (``535.104.05``) to ``cuDriverGetVersion``'s number (12040, 12020); None when it is neither."""
    parts = text.strip().split(".")
    if not parts or not all(part.isdigit() for part in parts):
        return None
    first = int(parts[0])
    if 9 <= first < 100 and len(parts) <= 2:
        return first * 1000 + (int(parts[1]) * 10 if len(parts) > 1 else 0)
    known = [cuda for branch, cuda in DRIVER_BRANCH_CUDA if branch <= first]
    return known[-1] if known and first >= 100 else None


def given_driver(text: str) -> GpuFacts | None:
    """The driver a ``--driver`` names (a driver or CUDA version, `driver_cuda_version`), as facts with no
    device; None when it is neither."""
    version = driver_cuda_version(text)
    if version is None:
        return None
    module = text if int(text.split(".")[0]) >= 100 else None
    return GpuFacts(bindings=None, driver_found=True, driver_version=version, devices=(), error=None, reason=None,
                    visible_devices=None, kernel_module=module, hardware=())
