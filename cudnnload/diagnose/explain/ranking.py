"""Rank the causes of a message by what the text shows: how often each cause is the real one for that kind of
message (`PRIORS`, counted on the corpus), then each piece of evidence in the text for or against it
(`RULES`). Pure: the text's `Reading` in, scores out; this machine plays no part.

A score is a log-odds: ``log`` of the cause's share among the tuning reports of the message kind (those of the
text's platform in full, the others in part) and the catalog's causes of the message, with one report added to
every cause it can have (so one never seen keeps a chance, and a few reports cannot outweigh the text: `_prior`),
plus the weight of every rule that holds. Weights are likelihood ratios in the same log scale: 3 decisive (the
text names the cause: the `Error:` part's library, "possibly insufficient driver version"; 4 where it says it in
words, "CUDA out of memory"), 2 strong, 1 a hint, negative against. A cause is tagged "confident" only when a
decisive rule holds for it on what the text shows and it leads the next by 2 or more, "likely" only when a strong
one does and it leads by 1, each lead both in score and in evidence alone: never from the prior (`confidence`).
"""

from __future__ import annotations

import math
import ntpath
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.diagnose.explain import catalog as messages
from cudnnload.diagnose.explain import gpus
from cudnnload.diagnose.explain.causes import ABOUT_LOADING
from cudnnload.diagnose.explain.reading import (
    CONSEQUENCES,
    CUDNN_CLASSES,
    NOT_STARTED,
    PROCEDURE_MISSING,
    Reading,
    Signal,
    dotted,
    lacks_not_needs,
    library_class,
    library_major,
    listed_by_torch,
    version_of,
)

# The causes each kind of message can have (fixtures/explain/FAMILIES.md ids), most common first: what the
# message says rules in (a library failed to load: loading causes; a status: the call and the GPU).
CANDIDATES: dict[str, tuple[str, ...]] = {
    "cudnn-not-found": ("cudnn-not-installed", "wheel-not-on-linker-path", "wrong-cudnn-major",
                        "installed-not-on-search-path", "torch-without-nvidia-deps", "platlib-purelib-split",
                        "conda-vs-pip", "preload-needs-missing"),
    # cuDNN 8's sub-libraries need zlibwapi.dll (Windows 8.3-8.9), libcuda.so and NVRTC themselves: the shim's
    # message then names the sub-library it could not load, without saying why
    "sublibrary-load": ("cudnn-not-installed", "wheel-not-on-linker-path", "wrong-cudnn-major", "sublibrary-missing",
                        "installed-not-on-search-path", "zlib-missing", "libcuda-missing", "nvrtc-missing",
                        "origin-through-symlink", "mixed-release", "preload-needs-missing"),
    "engine-load": ("sublibrary-missing", "missing-runpath", "origin-through-symlink", "mixed-release",
                    "no-gpu-or-driver", "version-mismatch-shadowed"),
    "dependency-load:nvrtc": ("nvrtc-missing", "torch-without-nvidia-deps", "nvrtc-wrong", "preload-needs-missing"),
    "dependency-symbol:nvrtc": ("nvrtc-wrong", "nvrtc-missing"),
    "dependency-load:libcuda": ("libcuda-missing", "no-gpu-or-driver"),
    "dependency-load:cublas": ("cublas-missing-or-wrong", "platlib-purelib-split", "torch-without-nvidia-deps",
                               "wrong-cudnn-major", "preload-needs-missing"),
    # cuFFT, cuRAND, cuSPARSE, cuSOLVER: the CUDA math libraries beside cuBLAS that a framework's GPU build needs
    "dependency-load:cuda-math": ("cublas-missing-or-wrong", "torch-without-nvidia-deps", "platlib-purelib-split",
                                  "preload-needs-missing"),
    "dependency-load:cudart": ("libcudart-missing-or-wrong", "multiple-cudart-or-frontend", "preload-needs-missing"),
    # cudnn-frontend's own loading of the CUDA runtime ("Unable to load any libcudart.so.* library"): a message of
    # its own, whose causes are not those of every libcudart that did not load
    "dependency-load:cudart-frontend": ("multiple-cudart-or-frontend", "libcudart-missing-or-wrong"),
    "dependency-load:zlib": ("zlib-missing",),
    "dependency-load:libstdc++": ("glibc-or-libstdcxx-too-old",),
    "dependency-load:glibc": ("glibc-or-libstdcxx-too-old",),
    # a program that links no cuDNN stopping at start on a symbol of one: an LD_PRELOAD entry bound to another
    # release's graph ("python3: symbol lookup error: .../libcudnn_engines_precompiled.so.9: undefined symbol")
    "symbol-mismatch": ("mixed-release", "two-frameworks-conflict", "version-mismatch-shadowed",
                        "preload-needs-missing"),
    "version-older": ("runtime-older-than-build", "version-mismatch-shadowed", "conda-vs-pip",
                      "two-frameworks-conflict"),
    "version-newer": ("minor-mismatch-strict", "version-mismatch-shadowed", "conda-vs-pip"),
    "version-other-major": ("wrong-cudnn-major", "version-mismatch-shadowed", "two-frameworks-conflict"),
    # a text that names cuDNN without a known message (reading._unknown_text): a cuDNN version that does not fit,
    # without saying which way; a cuDNN function that a library lacks at link or load time
    "version-unclear": ("runtime-older-than-build", "wrong-cudnn-major", "version-mismatch-shadowed",
                        "minor-mismatch-strict", "two-frameworks-conflict", "conda-vs-pip"),
    # a package adding, at import, a DLL folder that is not there (os.add_dll_directory): its own unchecked path,
    # else the install it was built to find is elsewhere or absent
    "dll-directory-missing": ("framework-bug", "installed-not-on-search-path", "cudnn-not-installed"),
    # a program that says it does not take the cuDNN version found: written for an older API, or another major
    "refused-version": ("removed-api", "wrong-cudnn-major", "framework-bug", "runtime-older-than-build"),
    "api-missing": ("runtime-older-than-build", "version-mismatch-shadowed", "mixed-release", "wrong-cudnn-major"),
    # a framework saying it could not load cuDNN, without the loader's reason: also a file that is there but is no
    # loadable library (JAX 0.11 on the H200 with the wheel's shim a text file: "cuDNN not found.", "Unable to load
    # cuDNN. Is it installed?")
    "framework-no-cudnn": ("runtime-older-than-build", "version-mismatch-shadowed", "cudnn-not-installed",
                           "wheel-not-on-linker-path", "wrong-cudnn-major", "out-of-memory", "unloadable-file"),
    # the driver installed but not ready to run CUDA (NVML's "Driver/library version mismatch", cudaErrorUnknown at
    # start, cudaErrorSystemNotReady): its state, not what is installed
    "driver-state": ("driver-not-ready", "no-gpu-or-driver"),
    # the GPU there, but its compute mode lets no new process use it (exclusive and held, or prohibited)
    "gpu-unavailable": ("gpu-unavailable", "gpu-hardware-fault", "no-gpu-or-driver"),
    # a framework built without CUDA asked for the GPU ("Torch not compiled with CUDA enabled"): nothing of CUDA's
    # was looked for, so nothing of it is at fault
    "cpu-build": ("cpu-only-build",),
    # a framework's own packages of releases that do not go together (jax and jaxlib, jaxlib and its CUDA plugin,
    # torch and torchvision): nothing of cuDNN's is at fault
    "parts-mismatch": ("framework-parts-mismatch",),
    # JAX's CUDA plugin raising while it starts, its exception cut off: a CUDA library older than JAX was built
    # with (its version check), no GPU or driver (cuInit), JAX's own packages of two releases, an old driver
    "gpu-plugin": ("runtime-older-than-build", "no-gpu-or-driver", "version-mismatch-shadowed",
                   "framework-parts-mismatch", "driver-too-old", "cublas-missing-or-wrong"),
    # a GPU index the process does not have: the program's choice of device, else what CUDA_VISIBLE_DEVICES hides
    "device-index": ("bad-param-usage", "no-gpu-or-driver"),
    "known-bad": ("known-bad-release",),
    # building a CUDA extension against the framework (torch's cpp_extension, DeepSpeed's op builder): the CUDA
    # toolkit it needs is absent, or of another CUDA than the framework's build; nothing at run time is at fault
    "toolkit-missing": ("cuda-toolkit-missing",),
    "toolkit-mismatch": ("cuda-toolkit-mismatch",),
    "no-engine": ("out-of-memory", "driver-too-old", "unsupported-configuration", "gpu-too-new", "gpu-too-old"),
    "conv-algorithm": ("out-of-memory", "runtime-older-than-build", "driver-too-old", "version-mismatch-shadowed"),
    "status:NOT_INITIALIZED": ("out-of-memory", "driver-too-old", "no-gpu-or-driver", "gpu-too-new"),
    "status:INTERNAL_ERROR": ("out-of-memory", "unsupported-configuration", "known-bad-release", "gpu-too-new",
                              "mixed-release", "execution-failed-kernel"),
    "status:EXECUTION_FAILED": ("gpu-too-new", "out-of-memory", "execution-failed-kernel", "driver-too-old"),
    "status:EXECUTION_FAILED_CUDA_DRIVER": ("driver-too-old", "out-of-memory", "execution-failed-kernel",
                                            "gpu-hardware-fault"),
    "status:INTERNAL_ERROR_COMPILATION_FAILED": ("gpu-too-new", "known-bad-release", "nvrtc-wrong"),
    "status:EXECUTION_FAILED_CUBLAS": ("gpu-too-new", "out-of-memory", "execution-failed-kernel",
                                       "cublas-missing-or-wrong"),
    "status:BAD_PARAM": ("bad-param-usage", "unsupported-configuration"),
    # a framework refusing a call as the program made it, before cuDNN runs (PyTorch's "cudnn RNN backward can only
    # be called in training mode"): the program's use of the API, else the framework's own check
    "misuse": ("bad-param-usage", "framework-bug"),
    "status:NOT_SUPPORTED": ("unsupported-configuration", "bad-param-usage", "gpu-too-old"),
    "status:ARCH_MISMATCH": ("gpu-too-old", "gpu-too-new"),
    "status:SUBLIBRARY_VERSION_MISMATCH": ("mixed-release", "version-mismatch-shadowed", "sublibrary-missing"),
    "status:SUBLIBRARY_LOADING_FAILED": ("sublibrary-missing", "no-gpu-or-driver", "missing-runpath",
                                         "origin-through-symlink", "mixed-release"),
    "status:ALLOC_FAILED": ("out-of-memory",),
    "status:MAPPING_ERROR": ("out-of-memory", "execution-failed-kernel"),
    "status:RUNTIME_PREREQUISITE_MISSING": ("nvrtc-missing", "libcuda-missing", "driver-too-old"),
    "status:INVALID_VALUE": ("bad-param-usage", "unsupported-configuration"),
    "status:OTHER": ("execution-failed-kernel",),
    # the CUDA runtime's words for a kernel that faulted (the catalog's "an illegal memory access was encountered",
    # ECC and Xid lines): a defect of the code, of the cuDNN release, or of the GPU itself
    "hardware": ("framework-bug", "known-bad-release", "execution-failed-kernel", "gpu-hardware-fault"),
}

# A table of priors: per message kind (and "kind@platform"), how many reports had each cause.
Priors = Mapping[str, Mapping[str, int]]

# How often each cause was the established one, per message kind, and per kind on one platform ("kind@windows",
# "kind@linux"): counted on fixtures/explain/reports (the kind of each report's first message and the platform
# as `reading.read` gives them; `python bench/bench_explain.py --print-priors` prints this table from the
# corpus). `_prior` weighs the text's platform's reports in full and the kind's others in part; a kind absent
# here has no report yet, and the catalog and its CANDIDATES order decide.
PRIORS: dict[str, dict[str, int]] = {
    "api-missing": {"runtime-older-than-build": 1, "version-mismatch-shadowed": 1, "wrong-cudnn-major": 1},
    "api-missing@windows": {"runtime-older-than-build": 1},
    "catalog": {"out-of-memory": 2, "driver-too-old": 1, "gpu-too-old": 1, "minor-mismatch-strict": 1,
        "unsupported-configuration": 1},
    "catalog@linux": {"driver-too-old": 1},
    "catalog@windows": {"out-of-memory": 1},
    "compile-missing": {"removed-api": 6, "framework-bug": 1, "version-mismatch-shadowed": 1, "wrong-cudnn-major": 1},
    "compile-missing@linux": {"removed-api": 2},
    "conv-algorithm": {"out-of-memory": 4, "runtime-older-than-build": 2},
    "cudnn-mentioned": {"framework-bug": 6, "cublas-missing-or-wrong": 2, "harmless-warning": 2,
        "unsupported-configuration": 2, "wrong-cudnn-major": 2, "zlib-missing": 2, "gpu-too-new": 1,
        "known-bad-release": 1, "libcudart-missing-or-wrong": 1, "missing-runpath": 1, "runtime-older-than-build": 1,
        "version-mismatch-shadowed": 1},
    "cudnn-mentioned@linux": {"framework-bug": 2, "cublas-missing-or-wrong": 1, "gpu-too-new": 1,
        "libcudart-missing-or-wrong": 1, "missing-runpath": 1, "unsupported-configuration": 1},
    "cudnn-mentioned@windows": {"zlib-missing": 2, "cublas-missing-or-wrong": 1, "framework-bug": 1,
        "wrong-cudnn-major": 1},
    "cudnn-not-found": {"wrong-cudnn-major": 14, "cudnn-not-installed": 11, "installed-not-on-search-path": 7,
        "libcudart-missing-or-wrong": 3, "platlib-purelib-split": 2, "torch-without-nvidia-deps": 2,
        "wheel-not-on-linker-path": 2},
    "cudnn-not-found@linux": {"cudnn-not-installed": 6, "installed-not-on-search-path": 3, "platlib-purelib-split": 2,
        "torch-without-nvidia-deps": 2, "wrong-cudnn-major": 2, "wheel-not-on-linker-path": 1},
    "cudnn-not-found@windows": {"wrong-cudnn-major": 11, "libcudart-missing-or-wrong": 3, "cudnn-not-installed": 2,
        "installed-not-on-search-path": 2},
    "dependency-load:cublas": {"cublas-missing-or-wrong": 8, "platlib-purelib-split": 1, "two-frameworks-conflict": 1,
        "wrong-cudnn-major": 1},
    "dependency-load:cublas@linux": {"cublas-missing-or-wrong": 6, "platlib-purelib-split": 1},
    "dependency-load:cublas@windows": {"cublas-missing-or-wrong": 2, "two-frameworks-conflict": 1,
        "wrong-cudnn-major": 1},
    "dependency-load:cudart-frontend": {"multiple-cudart-or-frontend": 1},
    "dependency-load:cudart-frontend@linux": {"multiple-cudart-or-frontend": 1},
    "dependency-load:glibc": {"glibc-or-libstdcxx-too-old": 2},
    "dependency-load:glibc@linux": {"glibc-or-libstdcxx-too-old": 2},
    "dependency-load:libcuda": {"libcuda-missing": 2, "no-gpu-or-driver": 1},
    "dependency-load:libcuda@linux": {"libcuda-missing": 2, "no-gpu-or-driver": 1},
    "dependency-load:nvrtc": {"nvrtc-missing": 6},
    "dependency-load:nvrtc@linux": {"nvrtc-missing": 6},
    "dependency-load:zlib": {"zlib-missing": 5, "unloadable-file": 1},
    "dependency-load:zlib@windows": {"zlib-missing": 5, "unloadable-file": 1},
    "dependency-symbol:nvrtc": {"nvrtc-wrong": 1},
    "dependency-symbol:nvrtc@linux": {"nvrtc-wrong": 1},
    "dll-directory-missing": {"framework-bug": 1},
    "dll-directory-missing@windows": {"framework-bug": 1},
    "driver": {"driver-too-old": 2, "gpu-too-old": 1},
    "driver@linux": {"driver-too-old": 1, "gpu-too-old": 1},
    "engine-load": {"missing-runpath": 1, "origin-through-symlink": 1, "sublibrary-missing": 1},
    "engine-load@linux": {"missing-runpath": 1, "origin-through-symlink": 1},
    "engine-load@windows": {"sublibrary-missing": 1},
    "framework-no-cudnn": {"runtime-older-than-build": 2, "wheel-not-on-linker-path": 2, "driver-too-old": 1,
        "libcudart-missing-or-wrong": 1, "version-mismatch-shadowed": 1, "wrong-cudnn-major": 1},
    "framework-no-cudnn@linux": {"runtime-older-than-build": 2},
    "framework-no-cudnn@windows": {"libcudart-missing-or-wrong": 1},
    "gpu": {"gpu-too-old": 1},
    "gpu@linux": {"gpu-too-old": 1},
    "hardware": {"bad-param-usage": 1, "framework-bug": 1, "known-bad-release": 1},
    "hardware@windows": {"framework-bug": 1},
    "misuse": {"bad-param-usage": 1},
    "misuse@windows": {"bad-param-usage": 1},
    "no-engine": {"framework-bug": 4, "out-of-memory": 2, "driver-too-old": 1, "gpu-too-old": 1},
    "no-engine@linux": {"framework-bug": 2, "out-of-memory": 1},
    "oom": {"out-of-memory": 1},
    "oom@linux": {"out-of-memory": 1},
    "paging-file": {"paging-file-too-small": 1},
    "paging-file@windows": {"paging-file-too-small": 1},
    "refused-version": {"removed-api": 2},
    "refused-version@linux": {"removed-api": 2},
    "removed-api": {"removed-api": 6},
    "removed-api@linux": {"removed-api": 2},
    "rule: Windows error 1455: the commit limit (RAM + paging file) ran out": {"paging-file-too-small": 1},
    "rule: an NVRTC was found but lacks a function cuDNN needs: an older one": {"nvrtc-wrong": 1},
    "rule: no header of the newer cuDNN releases declares the name the code uses": {"removed-api": 6},
    "rule: the GPU is older than cuDNN supports": {"gpu-too-old": 4},
    "rule: the driver library itself (libcuda.so.1) is missing": {"no-gpu-or-driver": 1},
    "rule: the file was found but is not a loadable library for this machine (a build for "
    "another architecture or word size, a truncated or placeholder copy)": {"unloadable-file": 3},
    "rule: the library that failed is NVRTC, not cuDNN": {"nvrtc-missing": 6},
    "rule: the library that failed is zlib (zlibwapi.dll)": {"zlib-missing": 5, "unloadable-file": 1},
    "rule: the log says the driver is too old for the CUDA in use": {"driver-too-old": 4},
    "rule: the system's glibc/libstdc++ lacks the version cuDNN needs": {"glibc-or-libstdcxx-too-old": 2},
    "rule: the text says the GPU is out of memory": {"out-of-memory": 4, "unsupported-configuration": 1},
    "rule: the text says the GPU's compute capability is too old": {"gpu-too-old": 2},
    "rule: torch is in lib64/.../site-packages: the nvidia wheels went to lib/...": {"platlib-purelib-split": 2},
    "status:ARCH_MISMATCH": {"gpu-too-old": 6},
    "status:ARCH_MISMATCH@linux": {"gpu-too-old": 1},
    "status:ARCH_MISMATCH@windows": {"gpu-too-old": 1},
    "status:BAD_PARAM": {"framework-bug": 8, "bad-param-usage": 6, "known-bad-release": 2,
        "version-mismatch-shadowed": 2, "libcudart-missing-or-wrong": 1, "removed-api": 1},
    "status:BAD_PARAM@linux": {"framework-bug": 1, "known-bad-release": 1, "removed-api": 1},
    "status:BAD_PARAM@windows": {"framework-bug": 1},
    "status:EXECUTION_FAILED": {"gpu-too-new": 6, "bad-param-usage": 2, "framework-bug": 1, "gpu-too-old": 1,
        "known-bad-release": 1, "unsupported-configuration": 1},
    "status:EXECUTION_FAILED@linux": {"bad-param-usage": 2, "gpu-too-new": 2, "framework-bug": 1,
        "unsupported-configuration": 1},
    "status:INTERNAL_ERROR": {"out-of-memory": 10, "known-bad-release": 2, "no-gpu-or-driver": 2,
        "unsupported-configuration": 2, "cudnn-not-installed": 1, "runtime-older-than-build": 1},
    "status:INTERNAL_ERROR@linux": {"out-of-memory": 2, "cudnn-not-installed": 1},
    "status:INTERNAL_ERROR@windows": {"runtime-older-than-build": 1},
    "status:NOT_INITIALIZED": {"out-of-memory": 5, "gpu-too-old": 3, "driver-too-old": 2, "framework-bug": 1,
        "libcudart-missing-or-wrong": 1},
    "status:NOT_INITIALIZED@windows": {"libcudart-missing-or-wrong": 1, "out-of-memory": 1},
    "status:NOT_SUPPORTED": {"unsupported-configuration": 9, "harmless-warning": 5, "known-bad-release": 3,
        "framework-bug": 2, "gpu-too-new": 1, "version-mismatch-shadowed": 1},
    "status:NOT_SUPPORTED@linux": {"unsupported-configuration": 4, "harmless-warning": 2, "known-bad-release": 1},
    "status:NOT_SUPPORTED@windows": {"framework-bug": 1},
    "status:SUBLIBRARY_LOADING_FAILED": {"mixed-release": 1},
    "status:SUBLIBRARY_LOADING_FAILED@linux": {"mixed-release": 1},
    "status:SUBLIBRARY_VERSION_MISMATCH": {"mixed-release": 4, "version-mismatch-shadowed": 1},
    "status:SUBLIBRARY_VERSION_MISMATCH@linux": {"mixed-release": 2},
    "sublibrary-load": {"wrong-cudnn-major": 12, "cudnn-not-installed": 10, "wheel-not-on-linker-path": 7,
        "installed-not-on-search-path": 6, "sublibrary-missing": 3, "zlib-missing": 2, "libcuda-missing": 1,
        "missing-runpath": 1, "unloadable-file": 1},
    "sublibrary-load@linux": {"wheel-not-on-linker-path": 7, "wrong-cudnn-major": 5, "cudnn-not-installed": 4,
        "libcuda-missing": 1, "missing-runpath": 1},
    "sublibrary-load@windows": {"wrong-cudnn-major": 7, "cudnn-not-installed": 6, "installed-not-on-search-path": 6,
        "sublibrary-missing": 3, "zlib-missing": 2, "unloadable-file": 1},
    "symbol-mismatch": {"mixed-release": 4, "two-frameworks-conflict": 3},
    "symbol-mismatch@linux": {"mixed-release": 2},
    "symbol-mismatch@windows": {"two-frameworks-conflict": 3, "mixed-release": 2},
    "unloadable": {"unloadable-file": 1},
    "unloadable@windows": {"unloadable-file": 1},
    "version-newer": {"minor-mismatch-strict": 11},
    "version-newer@linux": {"minor-mismatch-strict": 1},
    "version-older": {"runtime-older-than-build": 18, "version-mismatch-shadowed": 8, "two-frameworks-conflict": 4,
        "conda-vs-pip": 1, "harmless-warning": 1},
    "version-older@linux": {"runtime-older-than-build": 6},
    "version-other-major": {"wrong-cudnn-major": 5, "version-mismatch-shadowed": 1},
    "version-other-major@linux": {"wrong-cudnn-major": 1},
    "version-unclear": {"wrong-cudnn-major": 1},
    "warning": {"harmless-warning": 1},
    "windows-load": {"cudnn-not-installed": 1},
    "windows-load@windows": {"cudnn-not-installed": 1},
}


def platform_group(reading: Reading) -> str | None:
    """The platform the priors are kept for: "windows", "linux" (WSL included), or None when unknown."""
    return {"windows": "windows", "linux": "linux", "wsl": "linux"}.get(reading.platform or "")


@dataclass(frozen=True)
class Rule:
    """Evidence in the text for (weight > 0) or against (< 0) a cause: ``holds`` returns the part of the text
    that shows it, or None; ``kinds`` (prefixes) limits it to those message kinds (empty: any). ``shown`` is
    False for a rule that holds on what the text lacks: it moves the score, but the text shows nothing for it, so it
    never makes a cause "likely" (`confidence`)."""

    family: str
    weight: float
    says: str
    holds: Callable[[Reading, Signal], str | None]
    kinds: tuple[str, ...] = ()
    shown: bool = True

    def quote(self, reading: Reading, signal: Signal) -> str | None:
        if self.kinds and not signal.kind.startswith(self.kinds):
            return None
        return self.holds(reading, signal)


Test = Callable[[Reading, Signal], str | None]


def clue(name: str) -> Test:
    return lambda reading, signal: reading.quote(name) or None


def on_windows(reading: Reading, signal: Signal) -> str | None:
    """The text's words for Windows, where its platform is Windows: a WSL text names Windows too ("nvidia-smi
    works in Windows"), and runs Linux's loader."""
    return reading.quote("windows") or None if reading.platform != "wsl" else None


def both(*tests: Test) -> Test:
    def test(reading: Reading, signal: Signal) -> str | None:
        quotes = [t(reading, signal) for t in tests]
        return "; ".join(q for q in quotes if q) if all(quotes) else None
    return test


def either(*tests: Test) -> Test:
    def test(reading: Reading, signal: Signal) -> str | None:
        return next((quote for t in tests if (quote := t(reading, signal))), None)
    return test


def failed(pattern: str) -> Test:
    return lambda reading, signal: signal.failed if signal.failed and re.search(pattern, signal.failed) else None


def line(reading: Reading, signal: Signal) -> str | None:
    return signal.line


def cuda_not_started(reading: Reading, signal: Signal) -> str | None:
    """The message is CUDA failing to start in this process (an initialisation error)."""
    return signal.line if NOT_STARTED.search(signal.line) else None


def pattern(*ids: str) -> Test:
    return lambda reading, signal: signal.line if signal.pattern in ids else None


def not_windows(reading: Reading, signal: Signal) -> str | None:
    return None if reading.has("windows") else "no Windows name or path in the text"


def majors_shown(reading: Reading) -> dict[int, str]:
    """The cuDNN majors the text shows on the machine, each with what shows it: a version the user states, the
    nvidia-cudnn wheel pip lists, a cuDNN file a listing or path shows."""
    shown: dict[int, str] = {}
    if reading.stated:
        shown.setdefault(reading.stated[0], f"the text has cuDNN {dotted(reading.stated)}")
    if reading.wheel:
        shown.setdefault(reading.wheel[0], f"pip shows the nvidia-cudnn wheel {dotted(reading.wheel)}")
    for name in reading.files:
        if (major := library_major(name)) is not None:
            shown.setdefault(major, f"the text shows {name}")
    return shown


def other_major_there(reading: Reading, signal: Signal) -> str | None:
    """The text shows a cuDNN of another major than the one the program wants, and none of the wanted major:
    brought by a torch release it names, said to be installed, listed by pip or shown as a file, against the major
    the messages want or the program's own release is built for (ONNX Runtime, CTranslate2, TensorFlow)."""
    want = reading.cudnn_major
    for build in reading.builds:
        if build.bundles and want and build.cudnn_major != want:
            return f"{build.framework} {build.release} brings cuDNN {build.cudnn_major}, cuDNN {want} is wanted"
    shown = majors_shown(reading)
    if not shown:
        return None
    for build in reading.builds:
        if not build.bundles and build.cudnn_major not in shown:
            said = next(iter(shown.values()))
            return f"{build.framework} {build.release} is built for cuDNN {build.cudnn_major}, {said}"
    if want and want not in shown and signal.kind in ("cudnn-not-found", "sublibrary-load", "framework-no-cudnn"):
        return f"{next(iter(shown.values()))}, cuDNN {want} is wanted"
    return None


def other_major_named(reading: Reading, signal: Signal) -> str | None:
    """The text names, in its own words or a listing, a cuDNN library of another major than the one the messages
    want ("I only have cudnn64_8.dll", "it asks for cudnn_8.dll instead of cudnn_9.dll"): weaker than a file it
    shows on the machine (`other_major_there`, which takes precedence), since a name in a sentence may be one
    the person looked for."""
    want = reading.wanted
    if not want or other_major_there(reading, signal) or want in majors_shown(reading):
        return None  # (a listing that shows the wanted major too: both are there)
    other = next((name for name in reading.named if library_major(name) not in (None, want)), None)
    return f"the text names {other}, cuDNN {want} is wanted" if other else None


# A pip wheel's folder: site-packages/nvidia/cudnn/lib (Linux), site-packages\nvidia\cudnn\bin (Windows)
_WHEEL_FOLDER = re.compile(r"(?i)(?:site|dist)-packages[/\\]nvidia[/\\]")


def wanted_wheel_shown(reading: Reading, signal: Signal) -> str | None:
    """pip lists the nvidia-cudnn wheel of the major the messages want, or the text shows a file of that major in a
    wheel's folder: it is installed, where no loader searches unless told (the wheel sets no search path)."""
    want = reading.wanted
    if not want:
        return None
    if reading.wheel and reading.wheel[0] == want:
        return f"pip shows the nvidia-cudnn wheel {dotted(reading.wheel)}"
    file = next((f for f in reading.files if _WHEEL_FOLDER.search(f) and library_major(f) == want), None)
    return f"the text shows {file}, a pip wheel's file" if file else None


def pip_wheel_not_of_another_major(reading: Reading, signal: Signal) -> str | None:
    """The text shows a pip cuDNN wheel, and not one of another major than the messages want (that one is
    other_major_there's evidence)."""
    if reading.wheel and reading.wanted and reading.wheel[0] != reading.wanted:
        return None
    return reading.quote("pip-wheel") or None


def _stem(name: str) -> str:
    """A cuDNN library's name without folder, prefix, major and suffixes: libcudnn_ops_infer.so.8.9.2 and
    cudnn_ops_infer64_8.dll are both cudnn_ops_infer."""
    base = ntpath.basename(posixpath.basename(name)).lower()
    return re.sub(r"(?:64_\d+)?\.(?:so|dll).*$", "", base).removeprefix("lib")


def failed_file_shown(reading: Reading, signal: Signal) -> str | None:
    """A listing or path in the text shows the very library that failed to load, of the major wanted: it is on
    the machine, in a folder the loader did not search."""
    failed = signal.failed or ""
    if library_class(failed) not in CUDNN_CLASSES:
        return None
    file = next((f for f in reading.files if _stem(f) == _stem(failed)
                 and library_major(f) == library_major(failed)), None)
    return f"the text shows {file}" if file else None


def sublibrary_not_listed(reading: Reading, signal: Signal) -> str | None:
    """The text lists cuDNN libraries of the failing sub-library's major on the machine, and not that one: the
    install is there without it. Not from a pip wheel's folder: every nvidia-cudnn wheel ships all the sub-libraries
    of its release (an `ldd` or /proc/PID/maps line shows the shim alone because the sub-libraries are dlopened)."""
    failed = signal.failed or ""
    if library_class(failed) != "cudnn-sub":
        return None
    same = [f for f in reading.files if library_major(f) == library_major(failed) and not _WHEEL_FOLDER.search(f)]
    if same and all(_stem(f) != _stem(failed) for f in same):
        return f"the text shows {', '.join(same[:3])}, and not {failed}"
    return None


def wanted_major_shown(reading: Reading, signal: Signal) -> str | None:
    """The text shows a cuDNN of the major the messages want on the machine (stated, listed by pip, a file)."""
    want = reading.wanted
    return majors_shown(reading).get(want) if want else None


def same_major_bundled(reading: Reading, signal: Signal) -> str | None:
    want = reading.cudnn_major
    build = next((b for b in reading.builds if b.bundles and b.cudnn_major == want), None)
    return f"{build.framework} {build.release} brings cuDNN {want} as a pip wheel" if build else None


def stated_newer_than_found(reading: Reading, signal: Signal) -> str | None:
    """The user says the build's cuDNN (or newer) is installed, yet an older one was found: another copy."""
    built, found = version_of(signal.built or ""), version_of(signal.found or "")
    if reading.stated and built and found and found[:2] < built[:2] <= reading.stated[:2]:
        return f"cuDNN {'.'.join(map(str, reading.stated))} is said to be installed, {signal.found} was loaded"
    return None


def stated_fits_build(reading: Reading, signal: Signal) -> str | None:
    """The user says a cuDNN is installed that is of the major and at least the minor the framework release they
    name was built with (reading.TENSORFLOW_CUDNN): that one would do, so the cuDNN the framework failed on (an older
    one loaded) is another copy, or that one is not where the framework looks."""
    stated = reading.stated
    for build in reading.builds:
        if build.cudnn and stated and len(stated) >= 2 and stated[0] == build.cudnn[0] and stated[:2] >= build.cudnn:
            return (f"cuDNN {dotted(stated)} is said to be installed; {build.framework} {build.release} was built "
                    f"with cuDNN {dotted(build.cudnn)}")
    return None


def second_copy(reading: Reading, signal: Signal) -> str | None:
    """A framework release that brings its own cuDNN (torch's pinned wheel, reading.TORCH_CUDNN) and a cuDNN of
    another release said to be installed beside it: two cuDNNs, and whichever the loader finds first serves both."""
    stated = reading.stated
    for build in reading.builds:
        if build.bundles and build.cudnn and stated and len(stated) >= 2 and stated[:2] != build.cudnn:
            return (f"{build.framework} {build.release} brings cuDNN {dotted(build.cudnn)}; cuDNN {dotted(stated)} is "
                    "said to be installed too")
    return None


def stated_installed(reading: Reading, signal: Signal) -> str | None:
    """The text says the cuDNN major the failing program wants is installed (the messages show the major wanted:
    a major read from the stated version itself says nothing about what is wanted)."""
    if reading.stated and reading.wanted and reading.stated[0] == reading.wanted:
        return f"the text says cuDNN {'.'.join(map(str, reading.stated))} is installed"
    return None


# What in a text shows a cuDNN somewhere on the machine (a wheel, an environment, a system or cluster install, a
# search-path entry, a framework release that brings or wants one, a version the user says is installed).
_INSTALLED_CLUES = ("pip-wheel", "pip-wheel-installed", "venv", "conda", "system-cuda", "program-files", "hpc-module",
                    "ld-library-path-cudnn")


def nothing_installed_shown(reading: Reading, signal: Signal) -> str | None:
    """The text shows no cuDNN anywhere on the machine: a cause that needs one there (another major, a wheel or
    folder the loader does not search) has nothing in the text behind it, the plain absence has."""
    if (reading.stated or reading.wheel or reading.files or reading.builds
            or any(reading.has(name) for name in _INSTALLED_CLUES)):
        return None
    return f"nothing in the text shows a cuDNN installed anywhere: {signal.quote or signal.line}"


def windows_cudnn9_installer(reading: Reading, signal: Signal) -> str | None:
    if reading.has("windows") and reading.cudnn_major == 9 and signal.pattern == "could-not-locate":
        return signal.line
    return None


def loader_is_not_torch(reading: Reading, signal: Signal) -> str | None:
    loader = reading.framework
    return f"the program that failed is {loader}, not torch" if loader and loader != "pytorch" else None


def loader_is_not_frontend(reading: Reading, signal: Signal) -> str | None:
    """The library that failed was loaded by a program's own loader that the text names (TensorFlow's dso_loader,
    ONNX Runtime's provider), not by cudnn-frontend, which the text does not name."""
    if signal.pattern == "unable-to-load-any" or re.search(r"(?i)cudnn[-_ ]frontend", signal.line):
        return None
    loader = reading.framework
    return f"the library that failed is {loader}'s to load, not cudnn-frontend's" if loader else None


# glibc's words for a failure before the program runs (rtld.c: the objects mapped at start, the preloads among them)
# or of a lazily bound symbol (dl-lookup.c), and its words for a preload it skipped
_START_WORDS = re.compile(r"error while loading shared libraries|symbol lookup error|LD_PRELOAD|ld\.so")


def ran_before_it_failed(reading: Reading, signal: Signal) -> str | None:
    """The program ran far enough to report the failure itself (a framework's loader, cuDNN's own, Python's import):
    none of the text's messages is glibc's at start. An LD_PRELOAD entry that cannot be completed stops every
    program before it runs."""
    if any(_START_WORDS.search(s.line or "") for s in reading.signals):
        return None
    return signal.quote or signal.line or None


def no_torch(reading: Reading, signal: Signal) -> str | None:
    return "no torch in the text" if not reading.frameworks else None


def located_not_loaded(reading: Reading, signal: Signal) -> str | None:
    """cuDNN 8 on Windows said "Could not locate X": X itself is on no PATH folder (not a DLL X needs)."""
    return signal.line if signal.pattern == "could-not-locate" and signal.kind != "dependency-load:zlib" else None


def listed_not_loaded(reading: Reading, signal: Signal) -> str | None:
    return listed_by_torch(signal)


def no_zlib_release(reading: Reading, signal: Signal) -> str | None:
    """The library that failed is a cuDNN library of a major other than 8: only cuDNN 8.3-8.9 need zlibwapi.dll."""
    major = library_major(signal.failed) if signal.failed else None
    return signal.failed if major is not None and major != 8 else None


def strict_check(reading: Reading, signal: Signal) -> str | None:
    return signal.line if re.search(r"compatibility version|cuDNN version mismatch", signal.line) else None


def two_frameworks(reading: Reading, signal: Signal) -> str | None:
    named = [name for name in reading.frameworks if name in ("pytorch", "tensorflow", "jax", "onnxruntime",
                                                             "ctranslate2")]
    return " and ".join(named) if len(named) > 1 else None


def package_dll_met_another_copy(reading: Reading, signal: Signal) -> str | None:
    """A package's own cuDNN DLL (one under site-packages: a framework's lib folder, an nvidia wheel's bin) failed
    with Windows error 127, a function missing from a DLL it binds to. A package folder holds one release of its
    DLLs; Windows hands every later load a DLL already loaded under the same name (the loaded-module list comes
    before any folder): what it bound to is the copy another package loaded first."""
    if signal.pattern != "windows-load" or not PROCEDURE_MISSING.search(signal.error or ""):
        return None
    shown = re.search(r"site-packages[\\/][^\s\"']*?\.dll", signal.line, re.IGNORECASE)
    return shown.group(0) if shown else None


def ended_in_windows_cudnn_8(reading: Reading, signal: Signal | None = None) -> str | None:
    """A Windows program with a cuDNN of 8.3 to 8.9 named, or a cuDNN 8 DLL named as the module it ended in, ended
    with no message of its own (exit status 0xC0000409, a debugger's "Fatal program exit requested", "crashes without
    any error"): cuDNN 8 ends the process where a library it opens at run time does not load (zlibwapi.dll, which
    8.3 to 8.9 load when a convolution first needs it; a sub-library, or the cuBLAS it needs), after a line on stderr
    that a GUI or an IDE does not show. A load that failed, shown by how the program ended rather than by a message."""
    return both(clue("windows"), either(clue("cudnn-8-zlib"), clue("cudnn-8-module")),  # type: ignore[arg-type]
                clue("silent-exit"))(reading, signal)  # type: ignore[arg-type]


# abort's status as Windows reports it (STATUS_STACK_BUFFER_OVERRUN, which abort() raises there): an IDE's "Process
# finished with exit code -1073740791 (0xC0000409)", a shell's 3221226505
_WINDOWS_ABORT = re.compile(r"(?i:0xC0000409)|-1073740791|\b3221226505\b")


def ctranslate2_ended(reading: Reading, signal: Signal | None = None) -> str | None:
    """CTranslate2 (faster-whisper, WhisperX) ended with abort's status on Windows and no message of its own:
    cuDNN, whose shim CTranslate2 loads when a model first runs on the GPU, aborts where a sub-library DLL does not
    load, after its "Could not locate cudnn_ops64_9.dll" on a console a GUI or an IDE does not show (CTranslate2's
    own failure to load cuBLAS is a Python exception, with its message). Not where the text tells more: a cuDNN 8
    named, or the DLL it ended in (`ended_in_windows_cudnn_8`)."""
    if "ctranslate2" not in reading.frameworks or ended_in_windows_cudnn_8(reading, signal):
        return None
    quote = reading.quote("silent-exit")
    return quote if quote and (_WINDOWS_ABORT.search(quote) or reading.has("windows")) else None


def ended_at_a_load(reading: Reading, signal: Signal | None = None) -> str | None:
    """A program that ended at a load, shown by how it ended rather than by a message: a Windows cuDNN 8
    (`ended_in_windows_cudnn_8`), or CTranslate2 on Windows (`ctranslate2_ended`)."""
    return ended_in_windows_cudnn_8(reading, signal) or ctranslate2_ended(reading, signal)


# ...in a cuDNN 8 DLL, which the crash report names as the module it ended in
ended_in_cudnn_8 = both(ended_in_windows_cudnn_8, clue("cudnn-8-module"))


def windows_126_cnn_infer(reading: Reading, signal: Signal) -> str | None:
    """cudnn_cnn_infer64_8.dll itself was found (error 126 is a missing dependency, not "could not locate")."""
    library = signal.failed or ""
    if re.search(r"cudnn_cnn_infer64_8\.dll", library, re.IGNORECASE) and signal.error and re.search(
            r"126|module could not be found", signal.error):
        return f"{library}: {signal.error}"
    return None


# Programs that link no cuDNN: one of them failing at start on a cuDNN (or cuDNN dependency) library can only
# have been made to map it before its own libraries: LD_PRELOAD, /etc/ld.so.preload. glibc's rtld.c prints
# "error while loading shared libraries" only for the objects mapped at start; "symbol lookup error"
# (elf/dl-lookup.c through _dl_signal_error) is printed for a lazily bound symbol at any time, in a library the
# program dlopened itself as well (Python importing a framework): there it shows no preload.
_NO_CUDNN_PROGRAM = re.compile(r"(?:^|[\s/])(?P<program>(?:python|pypy)[0-9.]*|bash|sh|dash|zsh|env|true|ls|cat|sleep"
                               r"|echo|pip[0-9.]*|conda|nvidia-smi|ldd|ldconfig|git|uname|id): (?P<how>error while "
                               r"loading shared libraries|symbol lookup error): (?P<library>[^\s:]+)")


def preloaded_into_any_program(at_start: bool) -> Test:
    """A test: the program that stopped is one that links no cuDNN (Python, a shell tool), on a library mapped at
    start (``at_start``: "error while loading shared libraries") or on a symbol looked up later."""
    def test(reading: Reading, signal: Signal) -> str | None:
        found = _NO_CUDNN_PROGRAM.search(signal.line or "")
        if found is None or (found.group("how") == "error while loading shared libraries") != at_start:
            return None
        return f"{found.group('program')} links no cuDNN, yet stopped on {found.group('library')}"
    return test


# The loader found the file but could not load it: Windows error 5 (ERROR_ACCESS_DENIED, "Access is denied": a
# file without read or execute permission), glibc's EACCES ("Permission denied"); Windows error 193
# (ERROR_BAD_EXE_FORMAT, "%1 is not a valid Win32 application": a 32-bit or foreign build), glibc's "wrong ELF
# class", "invalid ELF header", "file too short" (elf/dl-load.c), GNU ld's "file in wrong format" / "file format not
# recognized" (bfd/bfd.c).
_UNLOADABLE = re.compile(r"(?i)(?:error|code)\s*193\b|\[WinError 193\]|not a valid Win32 application|wrong ELF class"
                         r"|invalid ELF header|file too short|file in wrong format|file format not recognized"
                         r"|\[WinError 5\]|Access is denied|Permission denied")
# glibc's "failed to map segment from shared object" (elf/dl-map-segments.h): mmap of a found file refused. The file
# is there, but the errno glibc appends (older releases) or the process's limits decide why: ENOMEM ("Cannot
# allocate memory": a memory or address-space limit, ulimit -v, a cgroup) is not the file's fault; EPERM/EACCES (a
# noexec mount) is where the file is kept.
_MAP_SEGMENT = re.compile(r"(?i)failed to map segment from shared object(?P<errno>:? *[A-Z][\w ]+)?")


def found_not_loadable(reading: Reading, signal: Signal) -> str | None:
    """The file was found but could not be loaded (its format, its permissions, a segment that could not be
    mapped)."""
    said = f"{signal.error or ''} {signal.line}"
    found = _UNLOADABLE.search(said) or _MAP_SEGMENT.search(said)
    return f"{signal.failed or signal.library or 'the library'}: {found.group(0)}" if found else None


def file_not_loadable(reading: Reading, signal: Signal) -> str | None:
    """What the loader says of the file itself: its format, its permissions."""
    found = _UNLOADABLE.search(f"{signal.error or ''} {signal.line}")
    return f"{signal.failed or signal.library or 'the library'}: {found.group(0)}" if found else None


def sibling_not_found(reading: Reading, signal: Signal) -> str | None:
    """dlerror names another cuDNN library of the same major than the one that could not be loaded, which it could
    not open: the first was found and opened, and its own DT_NEEDED sibling was not. cuDNN's packages ship the two
    side by side (the wheels with ``RUNPATH $ORIGIN``): the sibling is absent from that folder, or the folder was
    reached by a way the found library's own search does not take (no ``$ORIGIN``, a symlink elsewhere)."""
    if not signal.library or not signal.failed or not signal.error or "cannot open" not in signal.error:
        return None
    mine, other = posixpath.basename(signal.library), posixpath.basename(signal.failed)
    if _stem(mine) == _stem(other) or library_major(mine) is None or library_major(mine) != library_major(other):
        return None
    return f"{mine} was found, the {other} it needs beside it was not: {signal.quote or signal.line}"


def segment_not_mapped(reading: Reading, signal: Signal) -> str | None:
    """A segment of the found file could not be mapped, and glibc does not say it was for want of memory."""
    mapped = _MAP_SEGMENT.search(f"{signal.error or ''} {signal.line}")
    if mapped is None or re.search(r"(?i)cannot allocate memory", mapped.group("errno") or ""):
        return None
    return f"{signal.failed or signal.library or 'the library'}: {mapped.group(0)}"


def windows_runtime(reading: Reading, signal: Signal) -> str | None:
    """A Windows DLL that failed as a C++ runtime missing or too old shows it: its initialisation failed (error
    1114), or a DLL of PyTorch's own that needs no CUDA found no runtime DLL (error 126, read as libstdc++'s load by
    `reading._windows_load`). Its line."""
    shows = signal.error == "error 1114" or (signal.pattern == "windows-load"
                                              and signal.kind == "dependency-load:libstdc++")
    return signal.line if shows else None


def large_dll_init_failed(reading: Reading, signal: Signal) -> str | None:
    """Windows error 1114 (a DLL's initialisation failed) in one of CUDA's or cuDNN's DLLs."""
    big = signal.error == "error 1114" and signal.failed_class in (*CUDNN_CLASSES, "cublas", "cuda-math", "nvrtc")
    return f"{signal.failed}: error 1114" if big else None


def segment_without_memory(reading: Reading, signal: Signal) -> str | None:
    """A segment of the found file could not be mapped, and glibc says it was for want of memory (ENOMEM: an
    address-space limit; the file is whole)."""
    mapped = _MAP_SEGMENT.search(f"{signal.error or ''} {signal.line}")
    if mapped is None or not re.search(r"(?i)cannot allocate memory", mapped.group("errno") or ""):
        return None
    return f"{signal.failed or signal.library or 'the library'}: {mapped.group(0)}"


# A public cuDNN function (cudnnXxx, not cuDNN 8's internal symbols with their ", version libcudnn_*" tag) that a
# program, not a cuDNN library, needs and the cuDNN loaded lacks (glibc names the library that needs the symbol;
# Windows the DLL that lacks the entry point): a cuDNN of the same major but an older release than the program
# was built with. A cuDNN library lacking one of another's is two releases mixed (mixed-release).
_PUBLIC_MISSING = re.compile(r"(?<![^\s:'\"`()])(?P<needs>[^\s:'\"`()]+): undefined symbol: cudnn[A-Z]\w*"
                             r"|entry point cudnn[A-Z]\w*")


# The oldest GPU each cuDNN major runs on, from cuDNN's support matrices: 7.x "Kepler (3.x)" and later; 8.x "SM 3.0
# and later" (CUDA 10.2 builds; SM 3.5 for CUDA 11); 9.0 "5.0" (Maxwell) and later. No cuDNN ran below 3.0.
OLDEST_CAPABILITY = {7: (3, 0), 8: (3, 0), 9: (5, 0)}


def capability_too_old(reading: Reading, signal: Signal) -> str | None:
    """The text shows a compute capability below the oldest the text's cuDNN major (any cuDNN, when it shows no
    major) supports."""
    have, major = reading.capability, reading.cudnn_major
    oldest = OLDEST_CAPABILITY.get(major or 0, (3, 0))
    if have is None or have >= oldest:
        return None
    return (f"compute capability {have[0]}.{have[1]}, below the {oldest[0]}.{oldest[1]} that "
            f"{f'cuDNN {major}' if major else 'every cuDNN'} needs")


def kernels_only_for(older: bool) -> Test:
    """A test: the text shows the GPU's capability and the architectures the build has kernels for (reading's
    "arch-list"), and every one of them is older (``older``) or newer than the GPU."""
    def test(reading: Reading, signal: Signal) -> str | None:
        listed, have = reading.quote("arch-list"), reading.capability
        after = re.split(r"(?i)capabilities|list:?", listed, maxsplit=1)[-1]
        built = sorted({(int(n[:-1]), int(n[-1])) for n in re.findall(r"_(\d{2,3})\b", after)})
        if have is None or not built or not (have > built[-1] if older else have < built[0]):
            return None
        return f"compute capability {have[0]}.{have[1]}; {listed}"
    return test


# The CUDA a build is for, as the text names it: torch's local version ("+cu113"), collect_env's "CUDA used to build
# PyTorch: 11.3", conda's "cudatoolkit=11.3" / "pytorch-cuda=11.8"
_BUILD_CUDA = re.compile(r"\+cu(?P<tag>\d{2,3})\b|CUDA used to build PyTorch: (?P<used>\d+\.\d+)|"
                         r"(?:cudatoolkit|pytorch-cuda)[= ]+(?P<conda>\d+\.\d+)")


def gpu_newer_than_cuda(reading: Reading, signal: Signal) -> str | None:
    """The text names a GPU of a generation that the CUDA its build is for predates (a build has no kernels for a
    newer GPU), or a GPU of Ampere or later beside a CUDA of 10 or older, or of Turing beside one of 9 or older."""
    newest = reading.quote("gpu-new") or reading.quote("gpu-turing")
    if not newest:
        return None
    if reading.has("gpu-new") and reading.has("cuda-old"):
        return f"{newest}; {reading.quote('cuda-old')}"
    if not reading.has("gpu-new") and reading.has("cuda-before-10"):
        return f"{newest} needs CUDA 10.0 or newer; {reading.quote('cuda-before-10')}"
    found = _BUILD_CUDA.search(reading.quote("build-cuda"))
    release = next((b for b in reading.builds if b.cuda), None)
    if found is not None:
        tag = found.group("tag")
        built = (int(tag[:-1]), int(tag[-1])) if tag else tuple(
            int(n) for n in (found.group("used") or found.group("conda") or "0.0").split("."))
        said = found.group(0)
    elif release is not None and release.cuda:
        built, said = release.cuda, f"{release.framework} {release.release}, built for CUDA {dotted(release.cuda)}"
    else:
        return None
    needs = gpus.first_cuda(newest)
    if needs is None or built >= needs[1]:
        return None
    return f"{needs[0]} needs CUDA {needs[1][0]}.{needs[1][1]} or newer; the build is for {said}"


def public_function_missing(reading: Reading, signal: Signal) -> str | None:
    if signal.kind == "api-missing":
        return signal.quote
    found = _PUBLIC_MISSING.search(f"{signal.error or ''} {signal.line}")
    if found is None:
        return None
    needs = found.group("needs")
    if needs and library_class(needs) in CUDNN_CLASSES and not lacks_not_needs(needs):
        return None
    return found.group(0)


def only_warnings(reading: Reading, signal: Signal) -> str | None:
    """Every message the text holds is only a warning or information (the catalog says so): nothing failed."""
    if reading.signals and all(s.warning for s in reading.signals):
        return signal.quote or signal.line
    return None


def removed_from_headers(at_run_time: bool) -> Test:
    """A test: the name the code uses is one no header of the newer cuDNN releases declares, found missing when the
    code was built (a compiler's or linker's words: the code calls an API the cuDNN it is built against removed) or
    at run time (glibc's "undefined symbol": a binary built against an older cuDNN, which had it, meets a newer
    one: the API removed, or a binary of another major than the cuDNN installed, alike)."""
    def test(reading: Reading, signal: Signal) -> str | None:
        if signal.kind != "removed-api" or (signal.pattern == "undefined-symbol") != at_run_time:
            return None
        return signal.quote
    return test


def engines_runtime_compiled(reading: Reading, signal: Signal) -> str | None:
    return signal.failed if signal.failed and "engines_runtime_compiled" in signal.failed else None


# The CUDA releases each cuDNN major was built for, oldest and newest (major, minor), from NVIDIA's cuDNN support
# matrices and release notes: v4 for 7.0-7.5, v5 and v6 for 7.5-8.0, 7.x for 8.0-10.2, 8.x for 10.1 (8.0.x) to 12.x
# (8.9.7), 9.x for 11.8 (9.0-9.10's cu11 builds) to 13.x (the cu13 builds).
CUDNN_FOR_CUDA: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {
    4: ((7, 0), (7, 5)), 5: ((7, 5), (8, 0)), 6: ((7, 5), (8, 0)), 7: ((8, 0), (10, 2)), 8: ((10, 1), (12, 9)),
    9: ((11, 8), (13, 9))}


def no_build_for_cuda(reading: Reading, signal: Signal) -> str | None:
    """The CUDA the text names (not nvidia-smi's header: the driver's newest) is one no release of the cuDNN major
    the program wants was built for: a cuDNN installed beside that CUDA is of another major."""
    want, cuda = reading.wanted, reading.toolkit
    if want not in CUDNN_FOR_CUDA or not cuda:
        return None
    (low, high), release = CUDNN_FOR_CUDA[want], cuda[:2]
    if low[0] <= release[0] <= high[0] if len(release) == 1 else low <= release <= high:
        return None
    return (f"no cuDNN {want} was built for the CUDA {dotted(cuda)} the text names (cuDNN {want}: CUDA "
            f"{dotted(low)} to {dotted(high)})")


def program_regression(reading: Reading, signal: Signal) -> str | None:
    """The text says it worked with one release and fails with another, and the releases are not cuDNN's."""
    return None if reading.has("cudnn-regression") else reading.quote("regression") or None


LOADING = ("sublibrary-load", "cudnn-not-found")
# The kinds of a library that failed to load, cuDNN's or one it needs: where what the text shows of how the files
# were installed (a lib64 site-packages, poetry, a bundle of symlinks) can be the cause; in a failing call or a
# version check it is only the machine's layout
FAILED_LOADS = (*LOADING, "engine-load", "dependency-load:", "status:SUBLIBRARY_LOADING_FAILED")
# The kinds of a call that fails once cuDNN is loaded (a status, no engine or algorithm, a GPU fault, a build that
# lacks a name) and of a text that only talks of a version
RUNTIME_KINDS = ("status:", "no-engine", "conv-algorithm", "hardware", "catalog", "compile-missing", "refused-version",
                 "version-unclear", "cudnn-mentioned", "cublas-status:")
VERSIONS = ("version-",)

# The clues of a failure in words that no library failing to load brings about (reading._CLUES).
WORDS_OF_ANOTHER_FAILURE = ("out-of-memory", "hardware", "driver-too-old", "no-device", "no-kernel-image")

RULES: tuple[Rule, ...] = (
    # the library that failed decides first: the Error: part names it
    Rule("nvrtc-missing", 3, "the library that failed is NVRTC, not cuDNN", failed("nvrtc"),
         ("dependency-load:nvrtc",)),
    Rule("nvrtc-wrong", 3, "an NVRTC was found but lacks a function cuDNN needs: an older one", failed("nvrtc"),
         ("dependency-symbol:nvrtc",)),
    Rule("zlib-missing", 3, "the library that failed is zlib (zlibwapi.dll)", failed("zlib|libz"),
         ("dependency-load:zlib",)),
    Rule("glibc-or-libstdcxx-too-old", 3, "the system's glibc/libstdc++ lacks the version cuDNN needs",
         lambda reading, signal: None if windows_runtime(reading, signal) else line(reading, signal),
         ("dependency-load:glibc", "dependency-load:libstdc++")),
    Rule("glibc-or-libstdcxx-too-old", 3, "a DLL of PyTorch's own that needs no CUDA library is there, and a DLL it "
         "needs from the system is not: the C++ runtime's", windows_runtime, ("dependency-load:libstdc++",)),
    Rule("cublas-missing-or-wrong", 3, "the library that failed is one of CUDA's other libraries (cuFFT, cuRAND, "
         "cuSPARSE, cuSOLVER, nvJitLink, cuPTI), not cuDNN", failed("cufft|curand|cusparse|cusolver|nvjitlink|cupti"),
         ("dependency-load:cuda-math",)),
    Rule("cublas-missing-or-wrong", 1, "the library that failed is cuBLAS", failed("cublas"),
         ("dependency-load:cublas",)),
    Rule("no-gpu-or-driver", 3, "the driver library itself (libcuda.so.1) is missing", clue("no-driver")),
    Rule("no-gpu-or-driver", 3, "no NVIDIA kernel driver runs here (no /dev/nvidia0, no /proc/driver/nvidia)",
         clue("no-kernel-driver")),
    # strong, not decisive: the driver sees no GPU that this process may use (none, or CUDA_VISIBLE_DEVICES hides it)
    Rule("no-gpu-or-driver", 2.5, "the CUDA driver found no GPU this process can use", clue("no-device")),
    Rule("no-gpu-or-driver", 2, "libcudnn_engines_runtime_compiled NEEDs libcuda.so.1 (the driver)",
         engines_runtime_compiled),
    Rule("libcuda-missing", 2, "the unversioned libcuda.so (not the driver's libcuda.so.1) is what failed",
         failed(r"libcuda\.so$")),
    Rule("libcuda-missing", 2, "WSL: the driver's libcuda.so is in /usr/lib/wsl/lib, which ldconfig skips",
         clue("wsl"), ("sublibrary-load", "dependency-load:libcuda")),
    # ...and its libcuda.so.1 too: WSL's driver is Windows', its Linux libraries only in /usr/lib/wsl/lib, which a
    # process reaches through ld.so.conf.d/ld.wsl.conf or LD_LIBRARY_PATH (a container, a chroot, a cleared cache)
    Rule("libcuda-missing", 2, "WSL: the driver's libcuda.so.1 is in /usr/lib/wsl/lib, which this process's search "
         "did not reach", both(clue("wsl"), failed(r"libcuda\.so\.1$"))),
    Rule("zlib-missing", 2.5, "cudnn_cnn_infer64_8.dll was found but a DLL it needs was not: cuDNN 8.3-8.9 on "
         "Windows needs zlibwapi.dll", windows_126_cnn_infer),
    # cuDNN 8.3-8.9 loads zlibwapi.dll when a convolution first needs it; where it is missing, the process ends there
    # (after cuDNN's "Could not locate zlibwapi.dll", which a GUI or an IDE does not show): a Windows program that
    # ended with no message of its own (exit status 0xC0000409), with one of those releases named
    Rule("zlib-missing", 2.5, "a Windows program with cuDNN 8.3-8.9 ended with no message of its own: those releases "
         "end the process when zlibwapi.dll is missing", ended_in_windows_cudnn_8),
    # ...or CTranslate2 on Windows, whose cuDNN sub-library DLLs are what its users most often lack: those of the
    # major its release was built for (4.5 moved from cuDNN 8 to 9) where the other is installed, else none
    Rule("wrong-cudnn-major", 2.5, "CTranslate2 ended on Windows with abort's status and no message of its own: cuDNN "
         "aborts when a sub-library DLL of the major CTranslate2 was built for does not load", ctranslate2_ended),
    Rule("cudnn-not-installed", 2.25, "CTranslate2 ended on Windows with abort's status and no message of its own: "
         "cuDNN aborts when its sub-library DLLs are on no PATH folder", ctranslate2_ended),
    Rule("installed-not-on-search-path", 2, "CTranslate2 ended on Windows with abort's status and no message of its "
         "own: cuDNN aborts when its sub-library DLLs are on no PATH folder", ctranslate2_ended),
    # ...and the cuDNN 8 DLL the process ended in: the shim ends it when a sub-library does not load, and those
    # import cuBLAS and cuBLASLt (a missing or other-CUDA cuBLAS: Windows error 126 or 127 for the sub-library)
    Rule("cublas-missing-or-wrong", 1.5, "a Windows program ended in a cuDNN 8 DLL with no message of its own: cuDNN 8 "
         "ends the process when a sub-library does not load, and the sub-libraries import cuBLAS", ended_in_cudnn_8),
    Rule("sublibrary-missing", 1, "a Windows program ended in a cuDNN 8 DLL with no message of its own: cuDNN 8 ends "
         "the process when a sub-library does not load", ended_in_cudnn_8),
    Rule("unloadable-file", 3.5, "the file was found but is not a loadable library for this machine (a build for "
         "another architecture or word size, a truncated or placeholder copy)", file_not_loadable),
    Rule("unloadable-file", 1.5, "the file was found but a segment of it could not be mapped (a noexec mount; or a "
         "memory limit, where glibc does not say which)", segment_not_mapped),
    # a cause whose file is absent from where the loader looks (or of another major) cannot have found it
    *(Rule(family, -3, "the file was found: it is there, but not loadable", found_not_loadable)
      for family in ("zlib-missing", "cudnn-not-installed", "wheel-not-on-linker-path", "installed-not-on-search-path",
                     "sublibrary-missing", "wrong-cudnn-major")),
    # a cuDNN library found, its sibling of the same major not: the search reached the folder, the file or the
    # found library's own way to it is what is missing
    Rule("sublibrary-missing", 1.5, "one cuDNN library was found and the sibling it needs was not: that one is not "
         "in the folder", sibling_not_found),
    Rule("missing-runpath", 1.5, "one cuDNN library was found and the sibling it needs beside it was not: it "
         "carries no $ORIGIN to find it by", sibling_not_found),
    Rule("origin-through-symlink", 1, "one cuDNN library was found and the sibling it needs was not: reached "
         "through a link in another folder, its $ORIGIN is that folder", sibling_not_found),
    *(Rule(family, -2, "one cuDNN library of the major wanted was found: cuDNN is installed, and the search "
           "reached its folder", sibling_not_found)
      for family in ("cudnn-not-installed", "wrong-cudnn-major", "wheel-not-on-linker-path",
                     "installed-not-on-search-path")),
    Rule("runtime-older-than-build", 2.5, "a program needs a public cuDNN function that the cuDNN loaded lacks: an "
         "older release than the program was built with", public_function_missing,
         ("symbol-mismatch", "api-missing")),
    Rule("version-mismatch-shadowed", 1, "a program needs a public cuDNN function that the cuDNN loaded lacks: "
         "perhaps an older copy found first", public_function_missing, ("symbol-mismatch", "api-missing")),
    Rule("multiple-cudart-or-frontend", 2, "cudnn-frontend loads the CUDA runtime itself",
         pattern("unable-to-load-any"), ("dependency-load:cudart",)),
    Rule("preload-needs-missing", 4, "a program that links no cuDNN stopped at start on one of its libraries: "
         "only LD_PRELOAD (or /etc/ld.so.preload) puts one there", preloaded_into_any_program(at_start=True)),
    Rule("preload-needs-missing", 1.5, "a program that links no cuDNN stopped on a symbol of a cuDNN library: "
         "LD_PRELOAD puts one there, and so does a library the program imported", preloaded_into_any_program(
             at_start=False)),
    # which install: the path, the versions, the program, the package manager
    Rule("wrong-cudnn-major", 2.5, "the text shows a cuDNN of another major than the program wants",
         other_major_there, (*LOADING, "framework-no-cudnn")),
    Rule("wrong-cudnn-major", 1.5, "the text names a cuDNN library of another major than the program wants",
         other_major_named, (*LOADING, "framework-no-cudnn")),
    Rule("wrong-cudnn-major", 3, "the file under the cuDNN name lacks that name's version node, which every release "
         "of the major defines: it is another major's", pattern("cudnn-version-node")),
    Rule("wrong-cudnn-major", 1.5, "the CUDA the text names has no cuDNN of the major the program wants",
         no_build_for_cuda, (*LOADING, "framework-no-cudnn")),
    Rule("wheel-not-on-linker-path", 1.5, "the cuDNN of that major is there as torch's pip wheel, which the "
         "program does not search", same_major_bundled, LOADING),
    Rule("wheel-not-on-linker-path", 1, "a virtual environment: its cuDNN can only be a pip wheel", clue("venv"),
         LOADING),
    Rule("wheel-not-on-linker-path", 1.5, "the text shows a pip cuDNN wheel", pip_wheel_not_of_another_major,
         (*LOADING, "framework-no-cudnn")),
    Rule("wheel-not-on-linker-path", 2, "the cuDNN of the major wanted is installed as a pip wheel, which the "
         "loader does not search unless told", wanted_wheel_shown, LOADING),
    Rule("installed-not-on-search-path", 1.5, "the library that failed is on the machine: the loader did not look "
         "where it is", failed_file_shown, LOADING),
    *(Rule(family, -2, "the library that failed is on the machine", failed_file_shown, LOADING)
      for family in ("cudnn-not-installed", "sublibrary-missing", "wrong-cudnn-major")),
    Rule("sublibrary-missing", 2, "the text lists that cuDNN's other libraries on the machine, without the one that "
         "failed", sublibrary_not_listed, LOADING),
    Rule("sublibrary-missing", -1.5, "the cuDNN of the major wanted is a pip wheel's, and every nvidia-cudnn wheel "
         "ships all the sub-libraries of its release", wanted_wheel_shown, LOADING),
    Rule("cudnn-not-installed", -1, "the text shows a cuDNN of the major wanted on the machine", wanted_major_shown,
         LOADING),
    # a CUDA library the program asked for beside a framework built without CUDA: that build brought none (a CPU
    # torch has no nvidia-* wheels); the CUDA build is the fix, not the library
    Rule("cpu-only-build", 3, "the text shows a framework build without CUDA", clue("cpu-wheel"), FAILED_LOADS),
    # poetry named is a way torch comes without its nvidia-* wheels (torch 2.0.1's metadata), not proof that it did
    Rule("torch-without-nvidia-deps", 2, "poetry resolves some torch releases without their nvidia-* dependencies",
         clue("poetry"), FAILED_LOADS),
    Rule("torch-without-nvidia-deps", 1, "torch looked for its nvidia-* wheels on sys.path and found none",
         pattern("torch-preload", "torch-preload-frame")),
    Rule("platlib-purelib-split", 3, "torch is in lib64/.../site-packages: the nvidia wheels went to lib/...",
         clue("lib64-site-packages"), FAILED_LOADS),
    Rule("origin-through-symlink", 2.5, "a bundle of symlinks (PyInstaller, Bazel, Nix): $ORIGIN is the link's "
         "folder", clue("bundled-symlink"), FAILED_LOADS),
    Rule("missing-runpath", 2, "arm64 cuDNN 9.1 wheels shipped libcudnn_graph without RUNPATH", clue("arm64"),
         ("engine-load",)),
    Rule("installed-not-on-search-path", 1.5, "the program looked in one fixed folder (the loader's default) and "
         "not where cuDNN is", pattern("paddle-dynload")),
    Rule("installed-not-on-search-path", 1.5, "the text says that cuDNN is installed, yet it was not found",
         stated_installed, LOADING),
    # what the text lacks is weaker than a hint it shows (a paste cut short lacks as much)
    Rule("cudnn-not-installed", 0.5, "the library was not found and the text shows no cuDNN installed anywhere",
         nothing_installed_shown, LOADING, shown=False),
    Rule("installed-not-on-search-path", 1, "NVIDIA's cuDNN 9 Windows installer puts the DLLs in bin\\<CUDA "
         "version>, a subfolder PATH does not reach", windows_cudnn9_installer),
    Rule("installed-not-on-search-path", 1, "Windows: a DLL the module needs is in no PATH folder",
         pattern("dll-load-failed")),
    # versions
    Rule("version-mismatch-shadowed", 2, "PyTorch bundles its own cuDNN: an older one found first is another copy",
         pattern("pytorch-version"), ("version-older", "version-other-major")),
    Rule("version-mismatch-shadowed", 2, "the build's cuDNN is said to be installed, yet an older one loaded",
         stated_newer_than_found, VERSIONS),
    Rule("version-mismatch-shadowed", 1.5, "the cuDNN said to be installed is one the framework's release accepts",
         stated_fits_build, ("framework-no-cudnn", "conv-algorithm")),
    Rule("runtime-older-than-build", -1.5, "the cuDNN said to be installed is not older than the framework's "
         "release was built with", stated_fits_build, ("framework-no-cudnn", "conv-algorithm")),
    Rule("version-mismatch-shadowed", 2, "the text shows a cuDNN or CUDA folder on LD_LIBRARY_PATH",
         clue("ld-library-path-cudnn"), (*VERSIONS, "framework-no-cudnn", "symbol-mismatch")),
    Rule("version-mismatch-shadowed", 1, "a framework that brings its own cuDNN, and another cuDNN release said to be "
         "installed beside it: two copies", second_copy,
         (*VERSIONS, "symbol-mismatch", "status:SUBLIBRARY_VERSION_MISMATCH")),
    Rule("version-mismatch-shadowed", 1, "the text shows a cluster module or system CUDA folder",
         clue("hpc-module"), (*VERSIONS, "framework-no-cudnn")),
    Rule("minor-mismatch-strict", 2.5, "the framework's check demands the same major.minor", strict_check,
         ("version-newer",)),
    Rule("conda-vs-pip", 1.5, "the text shows a conda environment and a pip cuDNN", both(clue("conda"),
                                                                                      clue("pip-wheel")),
         (*VERSIONS, "cudnn-not-found", "framework-no-cudnn")),
    Rule("two-frameworks-conflict", 2, "two frameworks are in the text, each with its own cuDNN", two_frameworks,
         VERSIONS),
    Rule("two-frameworks-conflict", 0.7, "two frameworks are in the text", two_frameworks, ("symbol-mismatch",)),
    Rule("two-frameworks-conflict", 1.5, "a package's own cuDNN DLL met a function missing (Windows error 127): "
         "Windows binds it to a DLL of the same name already loaded, a copy another package loaded first",
         package_dll_met_another_copy),
    Rule("known-bad-release", 3, "the framework names the cuDNN release as broken", clue("known-bad")),
    # a regression between two releases, in a failure that is not a load: of cuDNN's releases where the text says
    # they are cuDNN's, else of the program's own
    Rule("known-bad-release", 2, "it worked with an earlier cuDNN release and fails with a later one",
         clue("cudnn-regression"), RUNTIME_KINDS),
    # a call that failed only now and then, or after the same calls ran for a while: what fails on every call (a
    # configuration cuDNN has no engine for, a parameter, a GPU the build has no code for) failed the first time; a
    # defect of the release, the GPU itself, or memory that ran out as it filled, did not
    Rule("known-bad-release", 1.5, "the call failed only now and then, or after running a while: not on every call",
         clue("intermittent"), RUNTIME_KINDS),
    Rule("gpu-hardware-fault", 1, "the call failed only now and then, or after running a while: not on every call",
         clue("intermittent"), RUNTIME_KINDS),
    *(Rule(family, -1.5, "the call failed only now and then, or after running a while, and this cause fails every "
           "call", clue("intermittent"), RUNTIME_KINDS)
      for family in ("unsupported-configuration", "bad-param-usage", "gpu-too-new", "gpu-too-old")),
    # the same call runs with cuDNN turned off (cuDNN disabled, another engine): the inputs are valid, and what
    # fails is cuDNN's handling of them, a bug of the release (fixed in a later one) more often than a limit
    Rule("known-bad-release", 2, "the same call runs with cuDNN turned off: cuDNN's handling of it fails, not the "
         "inputs", clue("runs-without-cudnn"), RUNTIME_KINDS),
    Rule("bad-param-usage", -1.5, "the same call runs with cuDNN turned off: its inputs are valid",
         clue("runs-without-cudnn"), RUNTIME_KINDS),
    Rule("framework-bug", 2, "it worked with an earlier release of the program and fails with a later one",
         program_regression, RUNTIME_KINDS),
    Rule("framework-bug", 1, "the program is a development build (a nightly, a build of its main branch): code not "
         "yet released", clue("prerelease"), RUNTIME_KINDS),
    Rule("framework-bug", 1, "the call failed in the framework's cuDNN attention path (PyTorch's scaled dot product "
         "attention on cuDNN: new code, the default in torch 2.5.0 and taken back in 2.5.1)", clue("attention"),
         RUNTIME_KINDS),
    Rule("removed-api", 3, "no header of the newer cuDNN releases declares the name the code uses",
         removed_from_headers(at_run_time=False)),
    Rule("removed-api", 2, "no header of the newer cuDNN releases declares the name the binary needs",
         removed_from_headers(at_run_time=True)),
    Rule("wrong-cudnn-major", 1, "a binary built against an older cuDNN, which had the name, meets a newer one",
         removed_from_headers(at_run_time=True)),
    # it holds on what the text lacks (an error line), which a paste cut short lacks too: it never makes the warning
    # "likely" the whole story
    Rule("harmless-warning", 3, "every message of the text is only a warning or information", only_warnings,
         shown=False),
    # ...but a program that stopped (a traceback, a fatal signal) failed on something: the warning is not the whole
    # story, whatever the text lost of the error (a paste cut short, an error no catalog knows)
    Rule("harmless-warning", -2, "the program stopped (a traceback, an abort, a fatal signal): something failed "
         "beside the warning", both(only_warnings, either(clue("stopped"), clue("aborted")))),
    Rule("gpu-hardware-fault", 3, "the text shows an uncorrectable ECC error, or a GPU that fell off the bus",
         clue("hardware")),
    Rule("gpu-hardware-fault", 1.5, "the text shows an Xid error (the GPU's, or a program's bad access)", clue("xid")),
    Rule("paging-file-too-small", 3, "Windows error 1455: the commit limit (RAM + paging file) ran out",
         clue("paging-file")),
    # DllMain failing (error 1114) in one of CUDA's or cuDNN's own large DLLs, whose sections commit hundreds of MB;
    # in a framework's small core DLL (c10.dll) it is the C++ runtime it was built for (the catalog's first cause)
    Rule("paging-file-too-small", 2, "Windows error 1114 in a large CUDA or cuDNN DLL, whose initialisation commits "
         "its sections", large_dll_init_failed),
    Rule("address-space-limit", 3, "mapping a found library failed for want of memory (glibc's \"failed to map "
         "segment\" with ENOMEM): an address-space limit, not the file", segment_without_memory),
    Rule("address-space-limit", 2, "the text names an address-space limit (ulimit -v, RLIMIT_AS, a virtual-memory "
         "limit)", clue("address-limit")),
    # the CUDA driver reserves far more address space than it uses: under a limit, cuInit fails with out of memory
    Rule("address-space-limit", 3, "out of memory under an address-space limit the text names: the CUDA driver "
         "reserves more address space than it uses as it starts", both(clue("address-limit"), clue("out-of-memory"))),
    # ...and then no GPU memory is short (on the H200 under `ulimit -v`, cuInit's out of memory came first of all)
    Rule("out-of-memory", -3, "the out of memory comes under an address-space limit the text names: the address "
         "space ran out, not the GPU's memory", both(clue("address-limit"), clue("out-of-memory"))),
    # what cannot be on the text's platform: $ORIGIN, RUNPATH, ldconfig and glibc are Linux's; zlibwapi.dll is
    # Windows's; a file that was not located is not missing a dependency; torch's layouts need torch
    Rule("missing-runpath", -3, "Windows has no RUNPATH", on_windows),
    Rule("origin-through-symlink", -3, "Windows has no $ORIGIN", on_windows),
    Rule("platlib-purelib-split", -3, "a Windows text (the lib/lib64 split is Red Hat's)", on_windows),
    Rule("libcuda-missing", -3, "a Windows text (libcuda.so is Linux's)", on_windows),
    Rule("glibc-or-libstdcxx-too-old", -3, "a Windows text, and no DLL shows a Visual C++ runtime missing or too old "
         "(error 1114; error 126 at a DLL of PyTorch's that needs no CUDA)",
         both(on_windows, lambda reading, signal: None if windows_runtime(reading, signal) else "Windows")),
    Rule("preload-needs-missing", -3, "Windows has no LD_PRELOAD", on_windows),
    Rule("preload-needs-missing", -3, "the program ran far enough to report the failure itself: a preload that "
         "cannot be completed stops every program before it runs", ran_before_it_failed),
    Rule("zlib-missing", -2, "zlibwapi.dll is a Windows dependency", not_windows, ("sublibrary-load",)),
    Rule("zlib-missing", -2, "the DLL itself was not located, so no DLL it needs is to blame", located_not_loaded),
    Rule("zlib-missing", -3, "the library that failed is of a cuDNN major that needs no zlibwapi.dll (only 8.3-8.9 do)",
         no_zlib_release),
    *(Rule(family, -4, "PyTorch found the DLL in its own torch\\lib folder (it loads the DLLs the folder holds): "
           "the file is there, a DLL it needs is what was not found", listed_not_loaded, LOADING)
      for family in ("cudnn-not-installed", "wheel-not-on-linker-path", "installed-not-on-search-path",
                     "wrong-cudnn-major", "torch-without-nvidia-deps", "conda-vs-pip")),
    Rule("torch-without-nvidia-deps", -2, "torch's nvidia-* wheels matter only to torch", loader_is_not_torch),
    Rule("multiple-cudart-or-frontend", -2, "cudnn-frontend's own loading of the CUDA runtime matters only where it "
         "is what loads it", loader_is_not_frontend, ("dependency-load:cudart",)),
    Rule("platlib-purelib-split", -2, "torch's lib64/lib split matters only to torch", loader_is_not_torch),
    Rule("torch-without-nvidia-deps", -1, "the text names no program", no_torch),
    Rule("platlib-purelib-split", -1, "the text names no program", no_torch),
    # the log shows cuDNN itself loaded: a framework that then has no usable cuDNN failed its check or its
    # initialisation, not the search for the file
    *(Rule(family, -2, "the log shows that cuDNN itself was loaded", clue("cudnn-opened"),
           ("framework-no-cudnn", "conv-algorithm", "status:"))
      for family in ("cudnn-not-installed", "wheel-not-on-linker-path", "installed-not-on-search-path")),
    # the log says a GPU library did not open (TensorFlow skipped the GPU): a version check runs only on a cuDNN that
    # opened, so an older or a shadowing copy of the right major is not what failed (it would have opened)
    *(Rule(family, -3, "the log says a GPU library did not open: a version check runs only on a cuDNN that opened",
           clue("gpu-libraries-not-opened"), ("framework-no-cudnn",))
      for family in ("runtime-older-than-build", "version-mismatch-shadowed", "minor-mismatch-strict")),
    # a failure the text names in words that no missing or wrong library brings about (the GPU out of memory, a GPU
    # fault, a driver older than the CUDA in use, no GPU the process may use, no kernel image for the GPU): a load
    # message beside it is not what failed (TensorFlow logs a library it could not open and goes on; the error the
    # program stopped on is the other), so a cause about loading loses its lead to the cause the words name
    *(Rule(family, -3, "the text names a failure no missing or wrong library brings about (out of memory, a GPU "
           "fault, a driver too old, no usable GPU, no kernel image): the load message is not what stopped the "
           "program", either(*(clue(name) for name in WORDS_OF_ANOTHER_FAILURE)), FAILED_LOADS)
      for family in sorted(ABOUT_LOADING)),
    # a load that failed, then a traceback ending in an exception of the program's own (a shape, a key, a name) that
    # names no GPU, CUDA or library: the program went on past the load (TensorFlow logs it and runs on the CPU) and
    # stopped on something else; the load message is beside the failure, not its cause
    *(Rule(family, -2, "after the load message the program went on and stopped on an error of its own, which no "
           "missing library brings about", clue("stopped-on-its-own-error"), FAILED_LOADS)
      for family in sorted(ABOUT_LOADING)),
    Rule("harmless-warning", 2.5, "the program went on past the load message and stopped on an error of its own: "
         "the load message is beside the failure", clue("stopped-on-its-own-error"), FAILED_LOADS),
    # memory, driver, GPU: what a runtime error's lines around it show
    Rule("out-of-memory", 4, "the text says the GPU is out of memory", clue("out-of-memory")),
    Rule("out-of-memory", 1.5, "the text talks of GPU memory", clue("memory-hint")),
    # a batch talked of is as often one larger than the call supports (a size past which it fails) as one the
    # memory cannot hold: 2 and 4 of the tuning reports that talk of it
    Rule("out-of-memory", 0.75, "the text talks of the batch size: one the memory may not hold", clue("batch-size")),
    Rule("unsupported-configuration", 0.75, "the text talks of the batch size: one past what the call supports",
         clue("batch-size"), RUNTIME_KINDS),
    Rule("out-of-memory", 3, "the GPU had almost no memory free when cuDNN failed to start", clue("memory-exhausted")),
    # a request larger than the whole GPU: out of memory in words (their 4 taken back), but no smaller batch fits it,
    # which a GPU that filled up would hardly show (2 against): the size asked for is the defect
    Rule("out-of-memory", -6, "the program asked for more memory than the GPU has in all",
         clue("allocation-beyond-gpu")),
    Rule("framework-bug", 1.5, "the program asked for more memory than the GPU has in all: a size computed wrong",
         clue("allocation-beyond-gpu")),
    Rule("unsupported-configuration", 1, "the program asked for more memory than the GPU has in all: a workspace "
         "for a configuration no engine runs well", clue("allocation-beyond-gpu")),
    Rule("out-of-memory", -2, "the GPU had much of its memory free when cuDNN failed to start", clue("memory-free")),
    Rule("driver-too-old", 3, "the log says the driver is too old for the CUDA in use", clue("driver-too-old")),
    Rule("driver-too-old", 2, "before cuDNN's handle the CUDA runtime found no function it needs in the driver "
         "(cudaErrorSymbolNotFound): a driver older than the runtime", clue("runtime-symbol-missing")),
    Rule("gpu-too-old", 3, "the text says the GPU's compute capability is too old", clue("gpu-too-old")),
    Rule("gpu-too-old", 3, "the GPU is older than cuDNN supports", capability_too_old),
    Rule("gpu-too-old", 1.5, "the text names an old GPU", clue("gpu-old-name")),
    # "no kernel image" is a build without code for this GPU: newer than the build's newest architecture, or older
    # than its oldest (torch 1.13+ dropped Kepler); only the GPU's capability against the build's list tells which
    Rule("gpu-too-new", 3, "the GPU is newer than every architecture the build has kernels for",
         kernels_only_for(older=True)),
    Rule("gpu-too-old", 3, "the GPU is older than every architecture the build has kernels for",
         kernels_only_for(older=False)),
    Rule("gpu-too-new", 2, "the build has no kernel image for this GPU", clue("no-kernel-image")),
    # a build drops the oldest architectures first: no kernels for a Kepler, Maxwell or Pascal GPU it names is that
    Rule("gpu-too-old", 2.5, "the build has no kernel image for a GPU of an old generation",
         both(clue("no-kernel-image"), either(clue("gpu-old-name"), clue("gpu-before-volta")))),
    Rule("gpu-too-new", -2, "the GPU without a kernel image is of an old generation",
         both(clue("no-kernel-image"), either(clue("gpu-old-name"), clue("gpu-before-volta")))),
    Rule("gpu-too-new", -3, "the GPU is older than every architecture the build has kernels for",
         kernels_only_for(older=False)),
    Rule("gpu-too-old", -3, "the GPU is newer than every architecture the build has kernels for",
         kernels_only_for(older=True)),
    Rule("gpu-too-new", 2.5, "a GPU newer than the CUDA version the text names", gpu_newer_than_cuda),
    Rule("unsupported-configuration", 2, "the text shows a tensor near 2**31 elements or a batch that fails only "
         "above a size", clue("large-tensor")),
    Rule("unsupported-configuration", 1.5, "grouped (depthwise) convolutions with many groups", clue("groups")),
    Rule("unsupported-configuration", 1, "bfloat16, which older GPUs' cuDNN engines lack", clue("bf16")),
    Rule("unsupported-configuration", 1.5, "the text names a limit on what the call was given (a dimension, a size, "
         "an alignment)", clue("limit")),
    Rule("bad-param-usage", 2.5, "a tensor with a zero-sized dimension", clue("zero-size")),
    # CUDA could not start in a child process forked after the parent started it: its initialisation error is the
    # program's use of fork, not the driver (CuPy, numba and TensorFlow print only the runtime's "initialization
    # error"; PyTorch says so itself)
    Rule("bad-param-usage", 3, "CUDA failed to start in a child process made by fork()",
         both(clue("forked-child"), cuda_not_started)),
    *(Rule(family, -1.5, "CUDA failed to start in a forked child, where the driver is not what failed",
           both(clue("forked-child"), cuda_not_started)) for family in ("no-gpu-or-driver", "driver-not-ready",
                                                                         "driver-too-old")),
    # a kernel's assertion (CUDA's cudaErrorAssert): values out of range (labels, indices) that the caller passed, or
    # the program computed; a cuDNN status after it is its consequence, not a GPU out of memory
    Rule("bad-param-usage", 2, "a kernel's own assertion failed: values out of range (labels, indices)",
         clue("device-assert")),
    Rule("framework-bug", 1, "a kernel's own assertion failed: the program's values out of range",
         clue("device-assert")),
    Rule("out-of-memory", -1.5, "a kernel's own assertion failed first: the errors after it follow from it",
         clue("device-assert")),
    # cudnnCreate(cudnnHandle_t *handle) takes no tensor, descriptor or size: its failures are the CUDA runtime's
    # initialisation (NOT_INITIALIZED), a GPU too old (ARCH_MISMATCH) and allocations (ALLOC_FAILED, INTERNAL_ERROR:
    # "CUDA resource allocation failed"; cuDNN API reference, cudnnCreate, Returns), so no configuration or value the
    # caller asks for is the cause of a handle that could not be made
    *(Rule(family, -2, "cuDNN failed while making its handle, before any tensor or configuration is given to it",
           clue("handle-create"), RUNTIME_KINDS)
      for family in ("unsupported-configuration", "bad-param-usage")),
)


@dataclass(frozen=True)
class Scored:
    family: str
    score: float
    prior: str  # how often the corpus saw it for this kind of message
    evidence: tuple[str, ...]  # what in the text moved it, quoted
    heaviest: float = 0.0  # the weight of the heaviest rule for it that holds on what the text shows (0: none)
    weight: float = 0.0  # the weights of every rule that holds for it, summed: its score less its prior
    proven: bool = False  # a decisive rule for it holds that was right wherever it held on the tuning part


def candidates(signal: Signal) -> tuple[str, ...]:
    """The causes a message can have: its catalog entry's first (what its source means by it, in its order), then
    its kind's that the entry leaves out (an entry lists the likeliest few, not every cause the kind can have)."""
    return tuple(dict.fromkeys((*signal.families, *CANDIDATES.get(signal.kind, ()))))


# The second corpus of the priors: the catalog's meaning of the message (what the code that prints it means by
# it). Its n-th cause counts as CATALOG_WEIGHT / n reports, so the catalog's first cause weighs as much as a few
# reports of the tuning corpus, and the corpus's counts decide where it has many reports. 5 (from 3, session 18):
# the tuning part cross-validated by program (bench/bench_explain_cv.py) puts 165 of 251 right first against 161,
# 142 against 137 on the first lines alone, the top 3 unchanged (205, 192); 4, 7, 10 and 15 did no better.
CATALOG_WEIGHT = 5.0
# Laplace's rule of succession: every cause the message can have starts with one report. Two causes whose counts
# differ by n reports are then at most log(n + 1 + catalog) apart, so a prior counted on few reports cannot outweigh
# what the text shows: a strong rule (2) outweighs a lead of up to 6 reports, a decisive one (3) of up to 19.
PSEUDO_REPORTS = 1.0
# The reports of the message's kind seen on another platform (or on none the text showed) count for this share of
# a report of the text's own platform: backing off to the kind's counts rather than switching to them.
OTHER_PLATFORM = 0.5


def _prior(signal: Signal, platform: str | None, family: str,
           priors: Priors = PRIORS) -> tuple[float, str, int]:
    """(log prior, how it was counted, how many tuning reports had ``family`` as their cause) of ``family`` for
    ``signal``: the reports of its message kind in ``priors`` (those of the text's platform in full, the others
    at OTHER_PLATFORM), the catalog's meaning of the message, and PSEUDO_REPORTS for every cause it can have."""
    listed = candidates(signal)
    kind = priors.get(signal.kind, {})
    here = priors.get(f"{signal.kind}@{platform}", {}) if platform else {}
    counts = {name: here.get(name, 0) + OTHER_PLATFORM * (number - here.get(name, 0)) if platform else number
              for name, number in kind.items()}
    book = messages.load()
    catalog = (book.weights(signal.families, CATALOG_WEIGHT) if signal.families else
               book.kind_weights(signal.kind, CATALOG_WEIGHT))
    causes = set(listed) | set(counts) | set(catalog)
    mass = sum(counts.values()) + sum(catalog.values()) + PSEUDO_REPORTS * len(causes)
    behind = kind.get(family, 0)
    if family not in causes:
        return (math.log(PSEUDO_REPORTS / (mass + PSEUDO_REPORTS)) - 1, "not a usual cause of this message",
                behind)
    share = (counts.get(family, 0.0) + catalog.get(family, 0.0) + PSEUDO_REPORTS) / mass
    # within equal counts, the order of the candidates (most likely first) breaks the tie
    tie = -0.01 * (listed.index(family) if family in listed else len(listed))
    total = sum(kind.values())
    said = [f"{behind} of {total} tuning reports of this kind of message" if total else
            "no tuning report of this kind of message"]
    if total and platform and here:
        said[0] += f" ({here.get(family, 0)} of {sum(here.values())} on {platform.capitalize()})"
    if family in catalog and family in signal.families:
        said.append(f"the catalog lists it {_ordinal(signal.families.index(family) + 1)} of "
                    f"{len(signal.families)} causes of this message")
    elif family in catalog:
        said.append(f"the catalog's messages of this kind count it {catalog[family]:.1f}")
    return math.log(share) + tie, "; ".join(said), behind


def _ordinal(number: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(number, f"{number}th")


# The causes of a cuDNN call failing on the GPU: those of the runtime message kinds (a status, no engine, no
# convolution algorithm, a GPU fault).
RUNTIME_PREFIXES = ("status:", "no-engine", "conv-algorithm", "hardware")
RUNTIME_CAUSES = frozenset(family for kind, listed in CANDIDATES.items() if kind.startswith(RUNTIME_PREFIXES)
                           for family in listed)


# The causes of a failing call that are not about loading: a text with no known message gets only these from the
# catalog's nearest messages (a cause about loading needs a message of a load that failed).
CALL_CAUSES = RUNTIME_CAUSES - frozenset(
    family for kind, listed in CANDIDATES.items()
    if kind.startswith(("cudnn-not-found", "sublibrary-load", "engine-load", "dependency-", "symbol-mismatch",
                        "version-"))
    for family in listed) | {"harmless-warning"}


# How alike (difflib's ratio) a known message must be to a line of the text for its causes to be offered: the nearest
# messages are shown from 0.5 (catalog.nearest), their causes only from a closer likeness.
NEAR_ENOUGH = 0.6


def _from_nearest(nearest: Sequence[messages.Near]) -> tuple[Scored, ...]:
    """The causes of a failing call that the catalog's messages nearest to a text without a known message list
    (CALL_CAUSES), weighed as `_prior` weighs an entry's causes and by how alike each message is: never a match,
    and the evidence says so."""
    weights: dict[str, float] = {}
    said: dict[str, str] = {}
    for near in nearest:
        if near.score < NEAR_ENOUGH:
            continue
        listed = tuple(f for f in near.entry.families if f in CALL_CAUSES)
        for family, weight in messages.load().weights(listed, CATALOG_WEIGHT * near.score).items():
            weights[family] = weights.get(family, 0.0) + weight
            said.setdefault(family, f"the nearest known message, \"{near.entry.template[:120]}\" "
                                    f"({near.entry.source}), lists it: not a match, {near.score:.0%} alike to "
                                    f"\"{near.line[:120]}\"")
    mass = sum(weights.values()) + PSEUDO_REPORTS * len(weights)
    return tuple(Scored(family, math.log((weight + PSEUDO_REPORTS) / mass), "no known message in the text: the "
                        "nearest known messages' causes", (said[family],))
                 for family, weight in sorted(weights.items(), key=lambda item: -item[1]))


# How much a report of a runtime message kind (a status, no engine, a GPU fault) counts, beside one of a text that
# only names cuDNN (the "cudnn-mentioned" row), among the usual causes of a text without a message: those kinds'
# causes are what their messages name (a status that means out of memory), which a text without one does not show.
RUNTIME_BACK_OFF = 0.25


def _usual_call_causes(priors: Priors) -> tuple[Scored, ...]:
    """The causes of a failing cuDNN call (CALL_CAUSES) as often as the reports of texts that only name cuDNN had
    them (``priors``'s "cudnn-mentioned" row), and the reports of the runtime message kinds at RUNTIME_BACK_OFF: for
    a text that names cuDNN with no message and no words of a failure cudnnload can read, and no known message near
    it; never a cause about loading."""
    counts: dict[str, float] = {}
    named: dict[str, int] = {}  # the reports of texts that only name cuDNN
    calls: dict[str, int] = {}  # the reports of a failing cuDNN call
    for kind, found in priors.items():
        if "@" in kind or not (kind == "cudnn-mentioned" or kind.startswith(RUNTIME_PREFIXES)):
            continue
        share, tally = (1.0, named) if kind == "cudnn-mentioned" else (RUNTIME_BACK_OFF, calls)
        for family, number in found.items():
            if family in CALL_CAUSES:
                counts[family] = counts.get(family, 0.0) + share * number
                tally[family] = tally.get(family, 0) + number
    total = sum(counts.values()) + PSEUDO_REPORTS * len(counts)
    return tuple(Scored(family, math.log((number + PSEUDO_REPORTS) / total),
                        f"{named.get(family, 0)} of {sum(named.values())} tuning reports of a text naming cuDNN "
                        f"without a message, and {calls.get(family, 0)} of {sum(calls.values())} of a failing cuDNN "
                        f"call (each counted as {RUNTIME_BACK_OFF:g} of one)",
                        ("the text names cuDNN, but holds no message and no words of a failure cudnnload can read: "
                         "the usual causes of a failing cuDNN call",))
                 for family, number in sorted(counts.items(), key=lambda item: -item[1]))


def _without_a_message(reading: Reading, signal: Signal, least: float) -> tuple[Scored, ...]:
    """The causes of a text that holds no message cudnnload knows and no words of a failure it can read: only
    causes of a failing call, or a harmless warning (a cause about loading needs a message of a load that failed, or
    a program that ended at one: `ended_at_a_load`),
    each with the rules of weight ``least`` or more that find it in the text (for a text that does not even name
    cuDNN, only what its words name strongly: "CUDA out of memory", an Xid, "insufficient driver version", "no
    kernel image")."""
    scored = []
    # a text of warnings only: perhaps no failure; a program that ended at a load: a cause about loading
    loads = ABOUT_LOADING if ended_at_a_load(reading) else frozenset()
    for family in sorted(RUNTIME_CAUSES | {"harmless-warning"} | loads):
        rules = [(rule, quote) for rule in RULES if rule.family == family and rule.weight >= least
                 and (quote := rule.quote(reading, signal))]
        score = sum(rule.weight for rule, _ in rules)
        if score > 0:
            evidence = tuple(f"{rule.says}: \"{quote[:160]}\"" for rule, quote in rules)
            scored.append(Scored(family, score, "no known message in the text: only what its words name", evidence,
                                 _heaviest(rule for rule, _ in rules), score))
    return tuple(sorted(scored, key=lambda s: -s.score))


# The kinds of a program's own check of the cuDNN version it found: one that refuses it says a cuDNN other than
# the one it was written for was loaded, whatever the likeliest reason
VERSION_CHECKS = (*VERSIONS, "refused-version")


def shows_a_load(signal: Signal) -> bool:
    """Whether ``signal`` is a load that failed or loaded the wrong library: a library that could not be loaded
    (its kind, `FAILED_LOADS`, read from the loader's or the framework's words), a version check that refused the
    cuDNN found (`VERSION_CHECKS`), or a message whose most likely cause, as its catalog entry means it (else its
    kind's), is about loading (`causes.ABOUT_LOADING`): an undefined symbol, a sub-library version mismatch, "was
    compiled against". A status the catalog reads first as something else (NOT_INITIALIZED: out of memory first)
    is not one, nor a warning whose first cause is that it is harmless."""
    if signal.kind.startswith((*FAILED_LOADS, *VERSION_CHECKS)):
        return True
    listed = candidates(signal)
    return bool(listed) and listed[0] in ABOUT_LOADING


# Said of a cause about loading that `loads_last` put after the others.
NO_LOAD_SHOWN = ("the text shows no library that failed to load and no wrong one loaded (no loader error, no version "
                 "check): a cause about loading comes after the causes of what it does show")


def loads_last(reading: Reading, ranked: Iterable[Scored]) -> tuple[Scored, ...]:
    """``ranked`` as it is where a message of the text shows a load that failed or loaded the wrong library
    (`shows_a_load`); else with the causes about loading after the others, each saying why, each part in its
    order. A failing call, a GPU fault or a refused configuration is never blamed on loading first when nothing
    in the text says that anything failed to load (issue 32: "a loading cause first for a non-loading error: 0")."""
    ranked = tuple(ranked)
    if any(shows_a_load(signal) for signal in reading.signals) or ended_at_a_load(reading):
        return ranked
    return (tuple(s for s in ranked if s.family not in ABOUT_LOADING)
            + tuple(s if NO_LOAD_SHOWN in s.evidence else replace(s, evidence=(*s.evidence, NO_LOAD_SHOWN))
                    for s in ranked if s.family in ABOUT_LOADING))


def rank(reading: Reading, priors: Priors | None = None,
         nearest: Sequence[messages.Near] = ()) -> tuple[Scored, ...]:
    """The causes of the text's first message, best first; the other messages' causes follow, scored the same
    way, where they add families; causes about loading after the others where the text shows no load that failed
    (`loads_last`). A text without a message gets only what its words name (`_without_a_message`), else the
    causes of a failing call that the catalog's ``nearest`` messages to it list (`_from_nearest`).
    ``priors``: the counts per message kind to weigh causes by (default `PRIORS`, counted on the tuning part; the
    cross-validation bench passes counts of the other folds)."""
    return loads_last(reading, by_score(reading, PRIORS if priors is None else priors, nearest))


def by_score(reading: Reading, priors: Priors, nearest: Sequence[messages.Near]) -> tuple[Scored, ...]:
    """The causes as `rank` scores them, best first, before `loads_last` orders them by what the text shows."""
    primary = reading.primary
    if primary is None:
        return (_without_a_message(reading, Signal("none", "none", "", "the text", "no message"), LIKELY)
                or _from_nearest(nearest))
    if primary.kind == "cudnn-mentioned":  # what its words name first, then the usual causes, below any of those
        named = _without_a_message(reading, primary, -math.inf)
        usual = _from_nearest(nearest) or _usual_call_causes(priors)
        return named + tuple(scored for scored in usual if scored.family not in {s.family for s in named})
    families = list(candidates(primary))
    # the causes the tuning reports of this kind of message had, where the catalog's meaning of it leaves them out
    families += [f for f in priors.get(primary.kind, {}) if f not in families]
    for signal in reading.signals[1:]:  # a framework's words for the primary's consequence add no cause
        if signal.kind not in CONSEQUENCES:
            families += [f for f in candidates(signal) if f not in families]
    for rule in RULES:  # evidence in the text brings its cause in, whatever the message
        if rule.weight > 0 and rule.family not in families and rule.quote(reading, primary):
            families.append(rule.family)
    scored = []
    for family in families:
        base, said, _ = _prior(primary, platform_group(reading), family, priors)
        holding = [(rule, quote) for rule in RULES if rule.family == family and (quote := rule.quote(reading, primary))]
        weight = sum(rule.weight for rule, _ in holding)
        said += "".join(f"; its rule \"{rule.says[:60]}\" held on {_held(rule, priors)}"
                        for rule, _ in holding if rule.weight >= CONFIDENT and rule.shown)
        scored.append(Scored(family, base + weight, said,
                             tuple(f"{rule.says}: \"{quote[:160]}\"" for rule, quote in holding),
                             _heaviest(rule for rule, _ in holding), weight,
                             any(proven(rule, priors) for rule, _ in holding)))
    return tuple(sorted(scored, key=lambda s: -s.score))


def _heaviest(rules: Iterable[Rule]) -> float:
    """The weight of the heaviest of ``rules`` for a cause that holds on what the text shows (0: none does)."""
    return max((rule.weight for rule in rules if rule.shown and rule.weight > 0), default=0.0)


# The row of the priors that counts, for a decisive rule, the established causes of the tuning reports it held on.
RULE_ROW = "rule: "
# How many tuning reports a decisive rule must have been right on, and wrong on none, before a cause it holds for is
# "confident" (issue 32: confidence reflects how many reports stand behind it; a rule written for one report, or
# one that held on a report of another cause, makes a cause at most "likely"). 5: by Laplace's rule of succession a
# rule right on n reports of n is right on the next with odds (n + 1) / (n + 2), above 0.85 from n = 5 on (3, before
# session 31, gave 0.8: the held-out parts had two wrong answers tagged "confident").
PROVEN_BY = 5


def rule_row(rule: Rule) -> str:
    return RULE_ROW + rule.says


def proven(rule: Rule, priors: Priors) -> bool:
    """Whether ``rule`` is decisive, shows what it quotes, and held on PROVEN_BY or more tuning reports (``priors``'s
    `rule_row`), each of its cause."""
    if rule.weight < CONFIDENT or not rule.shown:
        return False
    row = priors.get(rule_row(rule), {})
    return row.get(rule.family, 0) >= PROVEN_BY and sum(row.values()) == row.get(rule.family, 0)


def _held(rule: Rule, priors: Priors) -> str:
    """How often a decisive rule held on the tuning reports, and was right, in words."""
    row = priors.get(rule_row(rule), {})
    return f"{sum(row.values())} tuning reports, of this cause in {row.get(rule.family, 0)}"


# What a first cause needs for each tag: the heaviest rule for it that holds on what the text shows, and its lead
# over the next cause, in its whole score and in the evidence alone (a lead its prior gives is no evidence: issue
# 32, "wrong answers tagged likely from priors alone").
CONFIDENT = 3.0  # the text names the cause (a decisive rule)
LIKELY = 2.0  # the text shows strong evidence for it


def confidence(ranked: tuple[Scored, ...], index: int) -> str:
    """"confident", "likely", "possible" or "unlikely" for the cause at ``index`` of a ranking: "confident" only
    where the text names the cause (a decisive rule, `proven` on the tuning reports) and it leads the next by 2 or
    more, "likely" where the text
    shows strong evidence for it (a rule of weight 2 or more) and it leads by 1, both in its score and in what the
    text shows alone: never from how many reports had it (its prior) or from what the text lacks."""
    this = ranked[index]
    if index == 0:
        second = ranked[1] if len(ranked) > 1 else None
        margin = min(this.score - second.score, this.weight - second.weight) if second else math.inf
        if this.heaviest >= CONFIDENT and this.proven and margin >= 2:
            return "confident"
        return "likely" if this.heaviest >= LIKELY and margin >= 1 else "possible"
    return "possible" if ranked[0].score - this.score < 2 else "unlikely"
