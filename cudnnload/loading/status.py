"""Typed errors for ``cudnnStatus_t`` codes, mapped per cuDNN generation.

cuDNN 9 renumbered every status (NOT_INITIALIZED 1 -> 1001, BAD_PARAM 3 -> 2000)
and groups them by category ``code // 1000``; cuDNN 7 and 8 use 0..14
(../shared/reference/cudnn-facts.md §4.3; names come from the catalog tables).
Each error names the call, the status, cuDNN's own reason when it gave one, and
the likely causes with a fix for each, those with evidence on this machine first.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from cudnnload.errors import LoadError, UsageError
from cudnnload.loading.capi import CudnnApi
from cudnnload.resolve.catalog import generation


@dataclass(frozen=True)
class Cause:
    """One way a status comes about, and what to do about it."""

    what: str
    fix: str
    seen: bool = False  # evidence on this machine points at it


class CudnnStatusError(LoadError):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS."""

    CAUSES: ClassVar[tuple[Cause, ...]] = ()

    def __init__(self, status: int, call: str, *, major: int, last_error: str | None = None,
                 detail: str | None = None, path: str | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.status_name = generation(major).status_name(status)
        self.call = call
        self.major = major
        self.last_error = last_error  # cuDNN's reason (cudnnGetLastErrorString or the error callback)
        self.detail = detail  # what cudnnload found out, e.g. the dlopen error of a sub-library
        self.causes = self.likely_causes(os.environ if environ is None else environ)
        reason = f"{call} returned {self.status_name} ({status})"
        reason += f": {last_error}" if last_error else ""
        reason += f"; {detail}" if detail else ""
        super().__init__(reason, path=path, fix=self.causes[0].fix if self.causes else None)

    def likely_causes(self, environ: Mapping[str, str]) -> tuple[Cause, ...]:
        return self.CAUSES

    def explain(self) -> str:
        """The message, then every likely cause with its fix, one per line."""
        lines = [self.message]
        for cause in self.causes:
            mark = " [seen here]" if cause.seen else ""
            lines.append(f"  - {cause.what}{mark}: {cause.fix}")
        return "\n".join(lines)


class NotInitialized(CudnnStatusError):
    """cudnnCreate could not reach a GPU: cuDNN's reason on a driver-less box is
    ``cudaGetDeviceCount(&count) != cudaSuccess`` (measured 8.9.7, 9.0, 9.28; §6.2)."""

    def likely_causes(self, environ: Mapping[str, str]) -> tuple[Cause, ...]:
        visible = environ.get("CUDA_VISIBLE_DEVICES")
        causes = (
            # The kernel module publishes this file, in containers too; without it no GPU can be reached.
            Cause("no NVIDIA driver is loaded (looked for /proc/driver/nvidia/version)",
                  "install the NVIDIA driver, or in a container run with --gpus all / the NVIDIA container toolkit",
                  seen=not os.path.exists("/proc/driver/nvidia/version")),
            Cause("CUDA_VISIBLE_DEVICES hides every GPU" + ("" if visible is None else f" (it is {visible!r})"),
                  "unset CUDA_VISIBLE_DEVICES or list a device index that exists",
                  seen=visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles")),
            Cause("the driver is older than the CUDA runtime cuDNN was built with (cudnnGetCudartVersion)",
                  "upgrade the driver, or use the cuDNN wheel for your CUDA major (-cu12 / -cu13)"),
            Cause("no CUDA context is current, or the device was reset",
                  "call cudaSetDevice (or create the framework's context) before cudnnCreate"),
            Cause("the handle is used from another thread or process (e.g. after fork)",
                  "create one cuDNN handle per thread, after any fork"),
        )
        return tuple(sorted(causes, key=lambda cause: not cause.seen))


class VersionMismatch(CudnnStatusError):
    """Sub-libraries from different releases (1002 v9 / 14 v8, §1.3)."""

    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("a sub-library missing beside the shim was taken from LD_LIBRARY_PATH or the system, "
              "from another release", "reinstall one complete cuDNN and remove the stray copy from the search path"),
        Cause("another framework loaded a cuDNN with the same SONAME first (the first copy loaded wins)",
              "load cudnnload's chosen set before importing other frameworks, or align their cuDNN pins"),
    )


class SublibraryLoadingFailed(CudnnStatusError):
    """An engine library failed to load at finalize time (1008, absent from 9.0; §1.2, §5)."""

    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("libcudnn_engines_runtime_compiled.so.9 needs libcuda.so.1 and no NVIDIA driver is installed",
              "install the NVIDIA driver (a CPU-only machine cannot finalize backend graphs)"),
        Cause("an engine or heuristic library is missing or from another release",
              "reinstall the cuDNN wheel so that every libcudnn_engines_*.so.9 sits beside libcudnn_graph.so.9"),
    )


class LicenseError(CudnnStatusError):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("this cuDNN build requires a licence the environment does not provide",
              "use an unrestricted cuDNN release"),
    )


class BadParam(CudnnStatusError):
    """An argument failed validation; last_error names the failed condition (§4.4)."""

    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("an argument is out of range, NULL or inconsistent with another",
              "fix the argument named in cuDNN's reason"),
    )


class NotSupported(CudnnStatusError):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("this combination of shapes, types, layout or algorithm has no implementation",
              "choose another algorithm, data type or layout"),
    )


class SublibraryUnavailable(NotSupported):
    """The shim could not load the sub-library behind the call (3009; stderr
    ``Invalid handle. Cannot load symbol <call>``; the process survives; §1.2)."""

    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("the sub-library is missing beside the shim (an incomplete install, or a symlink to the shim "
              "whose directory, $ORIGIN, lacks the siblings)",
              "install the complete cuDNN wheel, or point at the real directory instead of a symlink"),
        Cause("the sub-library is there but cannot be loaded (a missing dependency, a newer glibc/libstdc++ "
              "requirement, or a release different from libcudnn_graph)",
              "fix the dlopen error shown in the detail"),
    )


class ArchMismatch(NotSupported):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("the GPU's compute capability is not built into this cuDNN (cudnnGetMaxDeviceVersion)",
              "use a cuDNN release that supports this GPU"),
    )


class IncompatibleDriver(NotSupported):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("the driver is older than the CUDA runtime statically linked into cuDNN (cudnnGetCudartVersion)",
              "upgrade the NVIDIA driver, or install the cuDNN wheel for the CUDA major the driver supports"),
    )


class RuntimePrerequisiteMissing(NotSupported):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("a library cuDNN loads at run time (libnvrtc, libcublasLt) is missing",
              "install the cuDNN wheel's dependencies (nvidia-cublas*, nvidia-cuda-nvrtc*)"),
    )


class InternalError(CudnnStatusError):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("cuDNN hit an internal failure", "rerun with CUDNN_LOGLEVEL_DBG=2 and report the log"),
    )


class AllocFailed(InternalError):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("host or device memory ran out", "free memory or use a smaller workspace"),
    )


class ExecutionFailed(CudnnStatusError):
    CAUSES: ClassVar[tuple[Cause, ...]] = (
        Cause("a kernel, cuBLAS or CUDA runtime call failed on the GPU",
              "check the GPU with nvidia-smi and rerun with CUDA_LAUNCH_BLOCKING=1"),
    )


# Exact codes first, then v9's category (code // 1000) (§4.3).
_V9_CODES: dict[int, type[CudnnStatusError]] = {
    1001: NotInitialized, 1002: VersionMismatch, 1005: LicenseError, 1008: SublibraryLoadingFailed,
    3005: IncompatibleDriver, 3007: ArchMismatch, 3008: RuntimePrerequisiteMissing,
    3009: SublibraryUnavailable, 4003: AllocFailed, 4004: AllocFailed,
}
_V9_CATEGORIES: dict[int, type[CudnnStatusError]] = {
    2: BadParam, 3: NotSupported, 4: InternalError, 5: ExecutionFailed,
}
_V8_CODES: dict[int, type[CudnnStatusError]] = {
    1: NotInitialized, 2: AllocFailed, 3: BadParam, 4: InternalError, 5: BadParam,  # 5 INVALID_VALUE
    6: ArchMismatch, 7: InternalError, 8: ExecutionFailed, 9: NotSupported, 10: LicenseError,  # 7 MAPPING_ERROR
    11: RuntimePrerequisiteMissing, 14: VersionMismatch,
}


def error_class(status: int, major: int) -> type[CudnnStatusError]:
    """The error type for a status code of cuDNN ``major``."""
    if status == 0:
        raise UsageError("status 0 is CUDNN_STATUS_SUCCESS, not an error")
    if major >= 9:
        return _V9_CODES.get(status) or _V9_CATEGORIES.get(status // 1000, CudnnStatusError)
    return _V8_CODES.get(status, CudnnStatusError)


def error_for(status: int, call: str, *, major: int, last_error: str | None = None,
              detail: str | None = None, path: str | None = None,
              environ: Mapping[str, str] | None = None) -> CudnnStatusError:
    """The typed error for a failed call, e.g. from a probe step in another process."""
    return error_class(status, major)(status, call, major=major, last_error=last_error, detail=detail,
                                      path=path, environ=environ)


def check(status: int, call: str, api: CudnnApi, *, environ: Mapping[str, str] | None = None) -> None:
    """Raise the typed error for a non-zero status of ``call`` made through ``api``."""
    if status == 0:
        return
    kind = error_class(status, api.major)
    detail = sublibrary_reason(api, call) if kind is SublibraryUnavailable else None
    raise kind(status, call, major=api.major, last_error=api.last_error(), detail=detail, path=api.path,
               environ=environ)


def sublibrary_reason(api: CudnnApi, call: str) -> str | None:
    """Why the shim could not load the sub-library behind ``call`` (None when the call is unknown).

    The shim looks beside itself first ($ORIGIN of the path it was opened by,
    §1.2), so that is where the file is expected; when it is there, dlopen by
    absolute path reproduces the loader's error.
    """
    try:
        lib = api.owner(call)
    except UsageError:
        return None
    folder = os.path.dirname(api.path)
    path = os.path.join(folder, lib.soname)
    if not os.path.exists(path):
        return f"{lib.soname} is not beside the shim in {folder} (nor found on the library search path)"
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as exc:
        return f"dlopen {path}: {exc}"
    return f"{path} loads by itself, yet the shim could not use it (a release other than libcudnn_graph's?)"
