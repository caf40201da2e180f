"""``explain --here``: does this machine show a cause of the text? Each check reads what the rest of
cudnnload finds here (`find()`'s installs with their finding codes and dependency steps, `which()` for the
name the message asks for, the driver's facts) and answers "shows", "rules out" or "cannot tell", with
what it saw. Codes and fields are compared, never a finding's message. Nothing is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cudnnload.diagnose.explain.reading import Reading, cpu_build_package, version_of
from cudnnload.diagnose.inventory import find
from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.resolve.linker import split_ld_library_path
from cudnnload.verdicts import Code

SHOWS, RULES_OUT, CANNOT_TELL = "shows", "rules out", "cannot tell"


@dataclass(frozen=True)
class Here:
    verdict: str  # SHOWS, RULES_OUT or CANNOT_TELL
    detail: str


@dataclass
class Machine:
    """This machine's facts, each gathered once, when a check first needs it."""

    environ: Mapping[str, str]
    site_paths: Sequence[str] | None = None
    _inventory: JudgedInventory | None = field(default=None, repr=False)
    _gpu: object | None = field(default=None, repr=False)
    _which: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @property
    def inventory(self) -> JudgedInventory:
        if self._inventory is None:
            self._inventory = find(environ=self.environ, site_paths=self.site_paths)
        return self._inventory

    @property
    def gpu(self) -> object:
        if self._gpu is None:
            from cudnnload.loading.gpu import gpu_facts

            self._gpu = gpu_facts(self.environ)
        return self._gpu

    def installs(self, major: int | None) -> tuple[Judged, ...]:
        return tuple(i for i in self.inventory.installs if major is None or i.major == major)

    def codes(self, major: int | None, *codes: Code) -> list[tuple[Judged, str]]:
        """(install, the file or folder) of each finding with one of ``codes``."""
        return [(i, f.path or i.folder) for i in self.installs(major) for f in i.findings if f.code in codes]

    def which_codes(self, name: str) -> tuple[str, ...]:
        """The finding codes of `which(name)` from this Python: "not-found", "only-by-path", ..."""
        if name not in self._which:
            from cudnnload.diagnose.which import which

            result = which([name], environ=self.environ, site_paths=self.site_paths)
            self._which[name] = tuple(str(f.code) for f in result.findings)
        return self._which[name]


Check = Callable[[Machine, Reading], Here]


def _named(major: int | None) -> str:
    return f"cuDNN {major}" if major else "cuDNN"


def _where(found: list[tuple[Judged, str]]) -> str:
    return "; ".join(path for _, path in found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def findings(*codes: Code) -> Check:
    def check(machine: Machine, reading: Reading) -> Here:
        major = reading.cudnn_major
        found = machine.codes(major, *codes)
        if found:
            return Here(SHOWS, f"{' / '.join(code.value for code in codes)}: {_where(found)}")
        if not machine.installs(major):
            return Here(CANNOT_TELL, f"no {_named(major)} install here to look in")
        return Here(RULES_OUT, f"no {' or '.join(code.value for code in codes)} in the "
                               f"{len(machine.installs(major))} {_named(major)} install(s) here")
    return check


def not_installed(machine: Machine, reading: Reading) -> Here:
    major = reading.cudnn_major
    found = machine.installs(major)
    if found:
        return Here(RULES_OUT, f"{_named(major)} is installed here: {found[0].folder}")
    others = machine.installs(None)
    return Here(SHOWS, f"no {_named(major)} here" + (f"; cuDNN {others[0].major} is, in {others[0].folder}"
                                                      if others else ""))


def wrong_major(machine: Machine, reading: Reading) -> Here:
    major = reading.cudnn_major
    if major is None:
        return Here(CANNOT_TELL, "the text shows no cuDNN major")
    if machine.installs(major):
        return Here(RULES_OUT, f"cuDNN {major} is installed here: {machine.installs(major)[0].folder}")
    others = [i for i in machine.installs(None) if i.major != major]
    if others:
        return Here(SHOWS, f"no cuDNN {major} here, cuDNN {others[0].major} is: {others[0].folder}")
    return Here(RULES_OUT, "no cuDNN of any major here")


def only_by_path(machine: Machine, reading: Reading) -> Here:
    if reading.has("jax-cuda-plugin"):
        return Here(RULES_OUT, "the JAX CUDA plugin of the text opens the wheel's libraries by path "
                               "(jax_plugins/xla_cuda*), whatever the library search path")
    major = reading.cudnn_major or 9
    wheels = [i for i in machine.installs(major) if i.distribution]
    if not wheels:
        return Here(RULES_OUT, f"no pip cuDNN {major} wheel here")
    codes = machine.which_codes(f"libcudnn.so.{major}")
    if str(Code.ONLY_BY_PATH) in codes or str(Code.NOT_FOUND) in codes:
        return Here(SHOWS, f"{wheels[0].distribution} is in {wheels[0].folder}, which dlopen(\"libcudnn.so.{major}\") "
                           "from this Python does not search")
    return Here(RULES_OUT, f"dlopen(\"libcudnn.so.{major}\") from this Python finds a cuDNN {major}")


def not_on_search_path(machine: Machine, reading: Reading) -> Here:
    major = reading.cudnn_major or 9
    others = [i for i in machine.installs(major) if not i.distribution]
    if not others:
        return Here(RULES_OUT, f"no cuDNN {major} outside pip wheels here")
    if str(Code.NOT_FOUND) in machine.which_codes(f"libcudnn.so.{major}"):
        return Here(SHOWS, f"cuDNN {major} is in {others[0].folder}, on no search path of this Python")
    return Here(RULES_OUT, f"dlopen(\"libcudnn.so.{major}\") from this Python finds a cuDNN {major}")


def on_ld_library_path(machine: Machine, reading: Reading) -> Here:
    entries = [e for e in split_ld_library_path(machine.environ.get("LD_LIBRARY_PATH", "")) if e]
    found = [i for i in machine.installs(None) if i.folder in entries]
    if found:
        return Here(SHOWS, "LD_LIBRARY_PATH holds " + "; ".join(f"cuDNN {i.release} in {i.folder}" for i in found[:3]))
    return Here(RULES_OUT, "no cuDNN folder on LD_LIBRARY_PATH" if entries else "LD_LIBRARY_PATH is not set")


def conda_and_pip(machine: Machine, reading: Reading) -> Here:
    prefix = machine.environ.get("CONDA_PREFIX")
    installs = machine.installs(reading.cudnn_major)
    conda = [i for i in installs if prefix and i.folder.startswith(prefix) and not i.distribution]
    wheels = [i for i in installs if i.distribution]
    if conda and wheels:
        return Here(SHOWS, f"conda's {conda[0].folder} and the wheel's {wheels[0].folder}")
    return Here(RULES_OUT, "not both a conda and a pip cuDNN here")


def older_than_built(machine: Machine, reading: Reading) -> Here:
    built = next((version_of(s.built) for s in reading.signals if s.built), None)
    if not built:
        return Here(CANNOT_TELL, "the text shows no build version")
    installs = [i for i in machine.installs(built[0]) if i.release]
    if not installs:
        return Here(CANNOT_TELL, f"no cuDNN {built[0]} with a known release here")
    older = [i for i in installs if tuple(i.release)[:2] < built[:2]]  # type: ignore[arg-type]
    if older:
        return Here(SHOWS, f"cuDNN {older[0].release} in {older[0].folder} is older than the build's "
                           f"{'.'.join(map(str, built))}")
    return Here(RULES_OUT, f"every cuDNN {built[0]} here is at least {'.'.join(map(str, built[:2]))}")


def dependency(prefix: str) -> Check:
    """A library cuDNN needs (NVRTC, libcuda, cuBLAS) that no install here resolves."""
    def check(machine: Machine, reading: Reading) -> Here:
        steps = [(i, s) for i in machine.installs(reading.cudnn_major) for s in i.dependencies
                 if s.library.startswith(prefix)]
        if not steps:
            return Here(CANNOT_TELL, f"no cuDNN here that needs {prefix}")
        missing = [(i, s) for i, s in steps if s.path is None]
        if missing:
            return Here(SHOWS, f"{missing[0][1].library} is not found for {missing[0][0].folder}")
        return Here(RULES_OUT, f"{steps[0][1].library} resolves to {steps[0][1].path}")
    return check


def driver(want: str) -> Check:
    """``want``: "missing" (no driver or no GPU visible) or "old" (older than the CUDA the text names)."""
    def check(machine: Machine, reading: Reading) -> Here:
        facts = machine.gpu
        found, devices = getattr(facts, "driver_found", False), getattr(facts, "devices", ())
        if want == "missing":
            if not found:
                return Here(SHOWS, getattr(facts, "reason", None) or "no NVIDIA driver")
            if not devices:
                return Here(SHOWS, "the driver shows no GPU")
            from cudnnload.judge.gpu import unavailable

            shut = next(((d, why) for d in devices if (why := unavailable(d)) is not None), None)
            if shut is not None:  # a compute mode that lets no new process in: the programs get no GPU either
                return Here(SHOWS, f"{shut[0].label} {shut[1]}")
            return Here(RULES_OUT, f"the driver is there and shows {len(devices)} GPU(s)")
        driver_cuda = getattr(facts, "driver_cuda", None)
        if not found or not driver_cuda:
            return Here(CANNOT_TELL, "no driver here to compare")
        if reading.cuda and tuple(int(n) for n in str(driver_cuda).split("."))[:2] < reading.cuda[:2]:
            return Here(SHOWS, f"the driver supports CUDA {driver_cuda}, the text's build needs "
                               f"{'.'.join(map(str, reading.cuda))}")
        return Here(CANNOT_TELL if not reading.cuda else RULES_OUT, f"the driver supports CUDA {driver_cuda}")
    return check


def gpus(test: Callable[[tuple[int, int]], bool], says: str) -> Check:
    def check(machine: Machine, reading: Reading) -> Here:
        devices = getattr(machine.gpu, "devices", ())
        if not devices:
            return Here(CANNOT_TELL, "no GPU visible here")
        hit = [d for d in devices if test(d.capability)]
        if hit:
            return Here(SHOWS, f"{hit[0].name} (compute capability {hit[0].capability[0]}.{hit[0].capability[1]}) "
                               f"{says}")
        return Here(CANNOT_TELL, f"{len(devices)} GPU(s) of compute capability "
                                 + ", ".join(f"{d.capability[0]}.{d.capability[1]}" for d in devices))
    return check


def memory_held(machine: Machine, reading: Reading) -> Here:
    """A GPU whose memory other processes hold now (`judge.gpu.memory_findings`), or, for a JAX program, more of it
    than JAX's pool leaves them (`judge.gpu.jax_squeezed`, which `jax_pool_findings` reads); with room, the program's
    own allocations, gone with it, are not seen: that tells nothing."""
    from cudnnload.judge.gpu import ROOMY, held_words, jax_squeezed, memory_findings

    facts: Any = machine.gpu
    full = [f for f in memory_findings(facts) if f.code is Code.GPU_MEMORY_FULL] if getattr(facts, "devices", ()) \
        else []
    known = [d for d in getattr(machine.gpu, "devices", ()) if d.free_memory is not None]
    if full:
        return Here(SHOWS, held_words(next(d for d in known if d.label == full[0].subject.name)))
    squeezed = jax_squeezed(machine.environ, known) if "jax" in (reading.framework, *reading.frameworks) else None
    if squeezed is not None:
        device, fraction = squeezed
        return Here(SHOWS, f"{held_words(device)}: less than the {fraction * 100:g} % JAX takes as it starts")
    if not known:
        return Here(CANNOT_TELL, "no GPU memory reading here")
    return Here(CANNOT_TELL, "; ".join(f"GPU {d.index} has {d.free_memory / 2**30:.1f} GiB free now" for d in known)
                + f" (over {ROOMY >> 20} MiB): what the program itself allocated ended with it")


def mode_held(machine: Machine, reading: Reading) -> Here:
    """A GPU whose compute mode lets no new process use it now (`judge.gpu.memory_findings`' gpu-unavailable)."""
    from cudnnload.judge.gpu import memory_findings

    facts: Any = machine.gpu
    devices = getattr(facts, "devices", ())
    if not devices:
        return Here(CANNOT_TELL, "no GPU reading here")
    taken = [f for f in memory_findings(facts) if f.code is Code.GPU_UNAVAILABLE]
    if taken:
        return Here(SHOWS, taken[0].message)
    return Here(RULES_OUT, "every GPU here lets a new process use it (its compute mode, and who holds it)")


def address_limited(machine: Machine, reading: Reading) -> Here:
    """This process's address-space limit (``ulimit -v``), which the programs it starts inherit."""
    from cudnnload.loading.gpu import address_limit

    limit = address_limit()
    if limit is None:
        return Here(RULES_OUT, "no address-space limit here (ulimit -v: unlimited)")
    return Here(SHOWS, f"this shell's programs may use only {limit / 2**20:.0f} MiB of address space (ulimit -v)")


def cpu_build(machine: Machine, reading: Reading) -> Here:
    """The framework of the text installed here as its build without CUDA (`consumers.cpu_builds`, for the
    distributions it tells apart)."""
    from cudnnload.resolve.consumers import TOLD_APART, cpu_builds, installed_names

    distribution = cpu_build_package(reading.framework)
    if distribution not in TOLD_APART:
        return Here(CANNOT_TELL, f"cudnnload does not tell {reading.framework or 'the framework'}'s builds apart")
    paths = list(sys.path if machine.site_paths is None else machine.site_paths)
    build = next((b for b in cpu_builds(paths) if b.distribution == distribution), None)
    if build is not None:
        return Here(SHOWS, f"{build.label} in {build.site} is a build without CUDA: {build.why}")
    if distribution not in installed_names(paths):
        return Here(CANNOT_TELL, f"no {distribution} is installed for this Python")
    return Here(RULES_OUT, f"the {distribution} installed for this Python is a CUDA build")


def _release(version: str | None) -> tuple[int, ...] | None:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).release if version else None
    except InvalidVersion:
        return None


def _torchvision_for(torch: tuple[int, ...]) -> tuple[int, int] | None:
    """The torchvision release made for a torch release (pytorch/vision's table: torch 1.N with torchvision
    0.(N+1), torch 2.N with 0.(N+15))."""
    offset = {1: 1, 2: 15}.get(torch[0]) if len(torch) >= 2 else None
    return (0, torch[1] + offset) if offset is not None else None


def _parts_apart(versions: dict[str, str], framework: str | None) -> tuple[list[str], str] | None:
    """(the framework's packages installed at releases that do not fit, what was compared), or None where the
    framework's packages are not installed here."""
    if framework == "jax":
        jaxlib = _release(versions.get("jaxlib"))
        if jaxlib is None:
            return None
        jax = _release(versions.get("jax"))
        apart = [f"jaxlib {versions['jaxlib']} is newer than jax {versions['jax']}"] if jax and jaxlib > jax else []
        apart += [f"{name} {version} is not jaxlib's release ({versions['jaxlib']})"
                  for name, version in sorted(versions.items()) if name.startswith(("jax-cuda", "jax-rocm"))
                  and (_release(version) or ())[:3] != jaxlib[:3]]
        return apart, "jax, jaxlib and its CUDA plugin"
    if framework == "pytorch":
        torch, vision = _release(versions.get("torch")), _release(versions.get("torchvision"))
        if torch is None or vision is None:
            return None
        made_for = _torchvision_for(torch)
        apart = ([f"torchvision {versions['torchvision']} is not the one made for torch {versions['torch']} "
                  f"({made_for[0]}.{made_for[1]})"] if made_for and vision[:2] != made_for else [])
        builds = {name: versions[name].partition("+")[2] for name in ("torch", "torchvision")}
        if builds["torch"] != builds["torchvision"]:
            apart.append(f"torch {versions['torch']} and torchvision {versions['torchvision']} are different builds")
        return apart, "torch and torchvision"
    return None


def parts_apart(machine: Machine, reading: Reading) -> Here:
    """The framework's own packages installed here at releases that do not fit (`_parts_apart`)."""
    from cudnnload.resolve.consumers import installed_versions

    paths = list(sys.path if machine.site_paths is None else machine.site_paths)
    compared = _parts_apart(installed_versions(paths), reading.framework)
    if compared is None:
        return Here(CANNOT_TELL, f"{reading.framework or 'the framework'}'s packages are not installed for this "
                    "Python, or cudnnload does not know which go together")
    apart, parts = compared
    if apart:
        return Here(SHOWS, "; ".join(apart))
    return Here(RULES_OUT, f"{parts} installed for this Python are of releases that go together")


CHECKS: dict[str, Check] = {
    "cudnn-not-installed": not_installed,
    "wheel-not-on-linker-path": only_by_path,
    "installed-not-on-search-path": not_on_search_path,
    "sublibrary-missing": findings(Code.MISSING_SUBLIBRARY, Code.SUBLIBRARY_UNLOADABLE),
    "unloadable-file": findings(Code.NOT_ELF, Code.EMPTY_FILE, Code.TRUNCATED, Code.DAMAGED_ELF, Code.FOREIGN_ELF,
                                Code.NOT_A_REGULAR_FILE, Code.NOEXEC_MOUNT),
    "wrong-cudnn-major": wrong_major,
    "runtime-older-than-build": older_than_built,
    "version-mismatch-shadowed": on_ld_library_path,
    "conda-vs-pip": conda_and_pip,
    "mixed-release": findings(Code.MIXED_RELEASE, Code.SUBLIBRARY_ELSEWHERE),
    "origin-through-symlink": findings(Code.ORIGIN_THROUGH_SYMLINK),
    "nvrtc-missing": dependency("libnvrtc"),
    "libcuda-missing": dependency("libcuda"),
    "cublas-missing-or-wrong": dependency("libcublas"),
    "glibc-or-libstdcxx-too-old": findings(Code.GLIBC_TOO_OLD, Code.LIBSTDCXX_TOO_OLD),
    "driver-too-old": driver("old"),
    "no-gpu-or-driver": driver("missing"),
    "cpu-only-build": cpu_build,
    "framework-parts-mismatch": parts_apart,
    # cuDNN 9.0-9.10 supports compute capability 5.0 and newer, 9.11+ 7.5 (cudnn-facts; PyTorch's check too)
    "address-space-limit": address_limited,
    "out-of-memory": memory_held,
    "gpu-unavailable": mode_held,
    "gpu-too-old": gpus(lambda cc: cc < (5, 0), "is below every cuDNN 9's minimum (5.0; 7.5 from 9.11)"),
}


def check(family: str, machine: Machine, reading: Reading) -> Here:
    found = CHECKS.get(family)
    return found(machine, reading) if found else Here(CANNOT_TELL, "nothing on this machine tells this cause apart")


def machine(environ: Mapping[str, str] | None = None, site_paths: Sequence[str] | None = None) -> Machine:
    return Machine(dict(os.environ if environ is None else environ), site_paths)
