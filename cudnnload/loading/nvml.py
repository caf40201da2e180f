"""What each GPU's memory holds now, from NVML (``libnvidia-ml.so.1``, the library nvidia-smi reads): the memory
free, and the processes holding it with how much each holds.

A CUDA context and a cuDNN handle need GPU memory of their own before a framework allocates a tensor: where
another process holds nearly all of it, the first cuDNN call fails (CUDNN_STATUS_NOT_INITIALIZED,
CUDNN_STATUS_ALLOC_FAILED, JAX's "DNN library initialization failed") with nothing wrong in what loads.
NVML answers without a context of its own, so asking costs no GPU memory.

NVML is loaded only from the folder of the libcuda.so.1 this process has already mapped (the driver's own
folder: the driver and NVML come from one package), never by a search another user could plant a file on, and
only where nobody but root and this user can change the file (`resolve.access`, issue 29).
Any failure gives no answer, never an exception.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from dataclasses import dataclass

from cudnnload.children import proc_stat
from cudnnload.resolve.hardware import Holder, holder_framework
from cudnnload.resolve.mapped import read_maps

_NVML_SUCCESS, _NVML_INSUFFICIENT_SIZE = 0, 7
_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE: usedGpuMemory a container cannot see
# nvmlComputeMode_t (NVML_COMPUTEMODE_EXCLUSIVE_THREAD, 1, is no longer supported by drivers)
_COMPUTE_MODES = {0: "default", 1: "exclusive-thread", 2: "prohibited", 3: "exclusive-process"}


class _Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Process(ctypes.Structure):  # nvmlProcessInfo_t (v2 and v3 calls)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint),
                ("computeInstanceId", ctypes.c_uint)]


@dataclass(frozen=True)
class Memory:
    """A GPU's memory as another process starting now meets it: free, with what this process and its children hold
    counted free (a probe `doctor` runs beside the reading holds a context), and the other processes holding it."""

    free: int
    total: int
    uuid: str | None
    holders: tuple[Holder, ...]
    compute_mode: str | None = None  # "default", "prohibited", "exclusive-process" (nvidia-smi -c)


def driver_folder(mapped: Iterable[str]) -> str | None:
    """The folder of the libcuda.so.1 among the files a process maps (`resolve.mapped.read_maps`), or None."""
    return next((os.path.dirname(path) for path in mapped if os.path.basename(path).startswith("libcuda.so")), None)


def memory_by_bus_id(bus_ids: list[str]) -> dict[str, Memory]:
    """NVML's memory facts for each PCI bus id (as ``cuDeviceGetPCIBusId`` gives it, "0000:18:00.0"); the ids it
    cannot answer for are left out, and all are when NVML cannot be loaded from the driver's folder."""
    try:
        folder = driver_folder(mapped.path for mapped in read_maps())
    except OSError:
        return {}
    path = os.path.join(folder, "libnvidia-ml.so.1") if folder else None
    if not bus_ids or path is None or not os.path.isfile(path):
        return {}
    from cudnnload.resolve.access import Access

    if Access().replaceable(path) is not None:  # someone other than root and this user can change it: not run
        return {}
    try:
        nvml = ctypes.CDLL(path)
        if nvml.nvmlInit_v2() != _NVML_SUCCESS:
            return {}
    except (OSError, AttributeError):
        return {}
    own = own_processes()
    try:
        return {bus: memory for bus in bus_ids if (memory := _memory(nvml, bus, own)) is not None}
    except (OSError, AttributeError, ValueError):
        return {}
    finally:
        nvml.nvmlShutdown()


def _memory(nvml: ctypes.CDLL, bus: str, own: set[int]) -> Memory | None:
    device = ctypes.c_void_p()
    memory = _Memory()
    if nvml.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(), ctypes.byref(device)) != _NVML_SUCCESS or \
            _mig(nvml, device) or nvml.nvmlDeviceGetMemoryInfo(device, ctypes.byref(memory)) != _NVML_SUCCESS:
        return None
    uuid = ctypes.create_string_buffer(96)
    named = nvml.nvmlDeviceGetUUID(device, uuid, len(uuid)) == _NVML_SUCCESS and uuid.value
    holders = _holders(nvml, device)
    mine = sum(h.held or 0 for h in holders if h.pid in own)
    mode = ctypes.c_int(-1)
    moded = nvml.nvmlDeviceGetComputeMode(device, ctypes.byref(mode)) == _NVML_SUCCESS
    return Memory(int(memory.free) + mine, int(memory.total), uuid.value.decode(errors="replace") if named else None,
                  tuple(h for h in holders if h.pid not in own), _COMPUTE_MODES.get(mode.value) if moded else None)


def _mig(nvml: ctypes.CDLL, device: ctypes.c_void_p) -> bool:
    """Whether the GPU is split into MIG instances: the whole GPU's memory then says nothing of the instance a
    program gets (a bus id names the whole GPU), so no answer is given for it."""
    current, pending = ctypes.c_uint(0), ctypes.c_uint(0)
    call = getattr(nvml, "nvmlDeviceGetMigMode", None)
    return call is not None and call(device, ctypes.byref(current), ctypes.byref(pending)) == _NVML_SUCCESS \
        and current.value == 1


def own_processes() -> set[int]:
    """This process and every process descended from it (their parents read by `children.proc_stat`)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {os.getpid()}
    parents = {int(name): stat.ppid for name in names if name.isdigit() and (stat := proc_stat(int(name)))}
    own = {os.getpid()}
    while True:
        more = {pid for pid, parent in parents.items() if parent in own} - own
        if not more:
            return own
        own |= more


def _holders(nvml: ctypes.CDLL, device: ctypes.c_void_p) -> tuple[Holder, ...]:
    for name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"):
        call = getattr(nvml, name, None)
        if call is None:
            continue
        count = ctypes.c_uint(0)
        result = call(device, ctypes.byref(count), None)
        if result not in (_NVML_SUCCESS, _NVML_INSUFFICIENT_SIZE):
            return ()
        infos = (_Process * (count.value + 8))()
        count = ctypes.c_uint(len(infos))
        if call(device, ctypes.byref(count), infos) != _NVML_SUCCESS:
            return ()
        return tuple(Holder(int(info.pid), None if info.usedGpuMemory == _NOT_AVAILABLE else int(info.usedGpuMemory),
                            command_line(int(info.pid)), holder_framework(maps_of(int(info.pid))))
                     for info in infos[:count.value])
    return ()


def command_line(pid: int) -> str | None:
    """The process's command line as ps shows it, where /proc lets this process read it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read(4096).split(b"\0")
    except OSError:
        return None
    text = " ".join(w.decode(errors="replace") for w in words if w)
    return text or None


_MAPS_LIMIT = 8 << 20  # a process with millions of mappings is read this far (a framework's libraries come early)


def maps_of(pid: int) -> str:
    """The files process ``pid`` maps, one text ("" where /proc does not let this process read them)."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            return handle.read(_MAPS_LIMIT)
    except OSError:
        return ""
