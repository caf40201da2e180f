"""What PyTorch, JAX, ONNX Runtime and TensorFlow installed here need from cuDNN, and whether an install gives it.

Read without importing any framework into this process, from three sources:

- the ``Requires-Dist`` pins on ``nvidia-cudnn-*`` in their metadata, read with
  ``packaging`` (pip's own reading of PEP 440 and PEP 508), with environment
  markers evaluated for this interpreter and ``extra == ...`` pins kept as
  conditional;
- the ``libcudnn*`` sonames their shared objects NEED (``elf.read_elf``
  through the on-disk memo), for the files their RECORD lists directly in the
  folders that hold CUDA libraries (``torch/lib``, ``onnxruntime/capi`` ...);
- the cuDNN version they were built with: PyTorch and JAX only expose it from
  compiled code, so it is read in a child process with a timeout, the children
  of all frameworks running side by side; TensorFlow writes it into
  ``tensorflow/python/platform/build_info.py``, read here as a literal; ONNX
  Runtime does not record it (its ``build_and_package_info.py`` has the CUDA
  version only), so only the NEEDED soname speaks for it.

`cudnnload.judge.frameworks` then applies each framework's own rule to the cuDNN that would load for it.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cudnnload.cachedir import stamp
from cudnnload.children import as_owner, end_group, owner_of_python, tails, untrusted
from cudnnload.errors import ElfError
from cudnnload.files import NotRegularFile, read_regular, record_digest
from cudnnload.resolve.catalog import (
    Release,
    classify_bundled,
    decode_version,
    dependency_requirement,
    distribution_cuda,
    parse_release,
)
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.elfcache import ElfCache, open_cache
from cudnnload.resolve.pythons import along_of, interpreter_of_site, sharing_in_target
from cudnnload.resolve.sources import wheel_lib_folders

# packaging (pip's reading of versions, specifiers and markers) costs ~26 ms to import: only the
# consumers check pays it, when it reads a framework's pins.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.markers import Marker
    from packaging.specifiers import Specifier


def _cut(spec: Specifier, parts: int) -> Specifier:
    """``spec`` compared on ``parts`` release components: ``==9.1.0.70`` cut to 3 is ``==9.1.0``."""
    from packaging.specifiers import Specifier
    from packaging.version import Version

    if spec.operator == "===" or spec.version.endswith(".*"):
        return spec
    release = Version(spec.version).release
    return spec if len(release) <= parts else Specifier(spec.operator + ".".join(map(str, release[:parts])))


def marker_applies(marker: Marker, environment: Mapping[str, str] | None = None) -> tuple[bool, tuple[str, ...]]:
    """(applies here, extras it names). Which extras were installed is recorded nowhere, so a pin
    behind ``extra == "x"`` applies when some extra it names makes the marker true, and is then
    conditional on those extras."""
    extras = tuple(dict.fromkeys(re.findall(r"""\bextra\s*==\s*['"]([^'"]*)['"]""", str(marker))))
    env = dict(environment or {})
    if marker.evaluate({**env, "extra": ""}):
        return True, ()
    chosen = tuple(extra for extra in extras if marker.evaluate({**env, "extra": extra}))
    return bool(chosen), chosen or extras


# --- what a consumer is -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """A consumer's ``Requires-Dist`` on an nvidia-cudnn-* distribution that applies on this platform."""

    distribution: str  # canonical name, "nvidia-cudnn-cu12"
    specifier: str  # PEP 440 specifier set as packaging writes it, "<10.0,>=9.8"
    extras: tuple[str, ...]  # the extras that bring it in (empty: always required)
    installed: str | None  # version of ``distribution`` installed on the same site paths

    @property
    def requirement(self) -> str:
        return self.distribution + self.specifier

    def allows(self, version: str | Release) -> bool:
        """Whether a wheel version ("9.1.0.70") or a cuDNN release (9.1.0, build number unknown) satisfies
        it. A release lacks the wheel's build number, so each clause is compared on the release's three
        parts: ``==9.1.0.70`` allows 9.1.0 (some build of 9.1.0 is 9.1.0.70)."""
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        specifiers = SpecifierSet(self.specifier)
        if isinstance(version, Release):
            release = Version(str(version))
            return all(_cut(spec, 3).contains(release, prereleases=True) for spec in specifiers)
        try:
            return specifiers.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False

    @property
    def major(self) -> int | None:
        """The cuDNN major the pin asks for, from its lower or exact bound (``>=9.8`` -> 9)."""
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        for spec in SpecifierSet(self.specifier):
            if spec.operator in ("==", "===", "~=", ">=", ">"):
                try:
                    return Version(spec.version.removesuffix(".*")).major
                except InvalidVersion:
                    continue
        return None


@dataclass(frozen=True)
class Need:
    """A libcudnn soname one of the consumer's shared objects has as DT_NEEDED."""

    soname: str
    path: str

    @property
    def major(self) -> int | None:
        lib = classify_bundled(self.soname)  # a copy its wheel bundles under auditwheel's name too
        return lib.major if lib else None


@dataclass(frozen=True)
class Consumer:
    """One installed framework distribution that uses cuDNN."""

    framework: str  # "torch", "jax", "onnxruntime", "tensorflow"
    distribution: str  # "torch", "jax-cuda12-plugin", "onnxruntime-gpu", ...
    version: str
    site: str  # the folder holding its .dist-info
    pins: tuple[Pin, ...]
    needs: tuple[Need, ...]
    build: Release | None  # the cuDNN it was compiled against, when recorded in full
    build_major: int | None  # its major, also when only the major is recorded (TensorFlow)
    build_source: str  # where build came from, or why it is unknown
    # who installs into its site-packages with pip, and how (`pythons.interpreter_of_site`)
    pip_env: tuple[str | None, tuple[str, ...]] = (None, ())
    # (distribution, version) of what it requires installed beside it: the JAX CUDA plugin's PJRT wheel, which
    # holds its loader (`routes.consumer_load` reads their surveyed rows with its own)
    beside: tuple[tuple[str, str], ...] = ()
    # why it is installed but cannot be read or run as installed (its METADATA missing, a wheel of another
    # platform, its import failing in a child); None: nothing seen wrong
    broken: str | None = None
    # CUDA libraries pip ships (cuBLAS, NVRTC, the runtime) that its own objects NEED and nothing holds where it
    # looks (a wheel's nvidia/*/lib folder on its site paths, the object's own search): its import fails
    unmet: tuple[Need, ...] = ()
    # with --target: the distributions a pip install there must install along (`pythons.along_in_target`)
    along: tuple[str, ...] | None = ()
    # with --target: the distributions a reinstall of its own there must install along, whose files share its
    # top-level folders (`pythons.sharing_in_target`)
    sharing: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.distribution} {self.version}"

    @property
    def cudnn_major(self) -> int:
        """The cuDNN major it asks for: what its libraries NEED, else its build's, else its pins', else 9."""
        for need in self.needs:
            if need.major is not None:
                return need.major
        if self.build_major is not None:
            return self.build_major
        return next((m for pin in self.pins if (m := pin.major) is not None), 9)

    @property
    def pinned_cuda(self) -> int | None:
        """The CUDA major the cuDNN wheel it pins says (``nvidia-cudnn-cu12``: 12); None where no pin says one."""
        return next((c for pin in self.pins if (c := distribution_cuda(pin.distribution)) is not None), None)


@dataclass(frozen=True)
class Framework:
    """A framework's own compatibility rule for the cuDNN it finds at run time."""

    name: str
    # "minor": same major, runtime minor >= build minor (PyTorch torch/backends/cudnn/__init__.py;
    #   TensorFlow/XLA stream_executor cuda_dnn.cc "needs to have matching major version and equal or
    #   higher minor version"); "release": runtime major.minor >= build major.minor, patch ignored
    #   (JAX jax_plugins/cuda/__init__.py, scale_for_comparison=100, and its message "must be at least as
    #   new as the version against which JAX was built"; that check now divides only the build version by
    #   100, so JAX itself no longer stops an older cuDNN); None: no build version to compare.
    rule: Literal["minor", "release"] | None
    skip_variable: str | None  # set, the framework's own check does not stop a mismatch
    # whether the framework itself stops on a runtime older than its build. JAX does not: measured 2026-11-24
    # on an H100, the CUDA 13 plugin ran its convolution on cuDNN 9.14 though built with 9.19.
    enforced: bool = True
    # when its check runs, where not at start-up
    checked_at: str | None = None


FRAMEWORKS: dict[str, Framework] = {
    # torch/backends/cudnn/__init__.py runs its check in _init(), from version() and is_acceptable(): measured on
    # an H100 (2026-11-24), a program that only runs a convolution got through on 9.14 (torch built with 9.19)
    "torch": Framework("torch", "minor", "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK",
                       checked_at="at its first torch.backends.cudnn.version() or is_acceptable() call"),
    "jax": Framework("jax", "release", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK", enforced=False),
    "tensorflow": Framework("tensorflow", "minor", None),
    "onnxruntime": Framework("onnxruntime", None, None),
}


@dataclass(frozen=True)
class _Source:
    """Where to look in one distribution."""

    framework: str
    folders: tuple[str, ...]  # RECORD folders whose shared objects may NEED libcudnn (direct children only)
    build_module: str | None = None  # imported in a child, where ``build_function`` returns the build version
    build_function: str | None = None  # dotted attribute of the module: (major, minor, patch) or 91000
    build_marker: str | None = None  # RECORD path prefix that shows the child has something to read
    build_file: str | None = None  # RECORD path of a Python literal build record (TensorFlow)
    # the cuDNN release an exact ``==`` pin names is the one it was built with (no child is started)
    build_is_pin: bool = False


def _jax(package: str) -> _Source:
    # jax_plugins/cuda/__init__.py imports `<package>._versions` as `cuda_versions` (jax-ml/jax).
    return _Source("jax", (package.replace(".", "/"),), f"{package}._versions", "cudnn_build_version",
                   f"{package.replace('.', '/')}/_versions")


_TENSORFLOW = _Source("tensorflow", ("tensorflow",), build_file="tensorflow/python/platform/build_info.py")
_ONNXRUNTIME = _Source("onnxruntime", ("onnxruntime/capi",))

SOURCES: dict[str, _Source] = {
    # torch/backends/cudnn/__init__.py compares torch._C._cudnn.getCompileVersion() with the runtime. Its release
    # wheels pin exactly the cuDNN they were compiled against (.ci/docker/common/install_cuda.sh installs the
    # version .github/scripts/generate_binary_build_matrix.py pins; measured on torch 2.11.0+cu130: pin
    # nvidia-cudnn-cu13==9.19.0.56, getCompileVersion() (9, 19, 0)): such a pin is read instead of importing
    # torch in a child (1.7 s on the GPU machine); a torch without one (a source or conda build) is asked.
    "torch": _Source("torch", ("torch/lib",), "torch._C", "_cudnn.getCompileVersion", "torch/lib/libtorch_cuda",
                     build_is_pin=True),
    "jax-cuda13-plugin": _jax("jax_cuda13_plugin"),
    "jax-cuda12-plugin": _jax("jax_cuda12_plugin"),
    "jaxlib": _jax("jaxlib.cuda"),  # jaxlib's own CUDA builds, from before the jax-cuda*-plugin wheels
    "onnxruntime-gpu": _ONNXRUNTIME,
    "onnxruntime": _ONNXRUNTIME,
    "tensorflow": _TENSORFLOW,
    "tf-nightly": _TENSORFLOW,
}

# The child puts the site paths first, calls the function, and answers on one line after this mark.
_RECORD_BYTES = 64 << 20  # torch's RECORD is ~3 MB
_ANSWER = "cudnnload-build-answer:"
_CHILD = f"""\
import importlib, json, sys
sys.path[:0] = json.loads(sys.argv[1])
try:
    target = importlib.import_module(sys.argv[2])
    for name in sys.argv[3].split("."):
        target = getattr(target, name)
    value = target()
    answer = {{"value": list(value) if isinstance(value, tuple) else int(value)}}
except BaseException as error:
    answer = {{"error": f"{{type(error).__name__}}: {{error}}"}}
print({_ANSWER!r} + json.dumps(answer), flush=True)
"""


def find_consumers(site_paths: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None,
                   timeout: float = 60.0, interpreter: str | None = None, run: bool = True) -> tuple[Consumer, ...]:
    """Every installed cuDNN consumer on ``site_paths`` (default ``sys.path``).

    A known framework distribution counts when it pins nvidia-cudnn-*, NEEDs
    a libcudnn, or records a cuDNN build version (a CPU-only torch does none).
    ``environ`` is the build-reading children's environment; ``timeout`` bounds
    them all together; ``interpreter`` (default: this one) runs them; without ``run`` none is started (an image
    judged without running it) and such a build version is said to be unread.

    What a distribution says (its requirements, the sonames its libraries NEED,
    its build version) is remembered in the ELF memo under its RECORD's identity:
    with torch and JAX installed, reading them again costs ~2 s (RECORDs of 25,000
    files, a child importing torch), recalling them milliseconds.
    """
    paths = list(sys.path if site_paths is None else site_paths)
    env = dict(os.environ if environ is None else environ)
    interpreter = interpreter or sys.executable
    installed = _installed(paths)
    versions: dict[str, str] = {}
    for dist in installed:
        versions.setdefault(dist.name, dist.version)
    found: dict[tuple[str, str], _Installed] = {}
    for dist in installed:
        if dist.name in SOURCES or _surveyed_source(dist) is not None:
            found.setdefault((os.path.realpath(dist.site), dist.name), dist)
    cache = open_cache(env)
    facts = _facts(list(found.values()), paths, env, timeout, interpreter, cache, run)
    cache.save()
    required = {name for _, (requires, _, _) in facts for name in _names(requires)}
    consumers = []
    for dist, (requires, needs, (build, build_major, source)) in facts:
        pins = _pins(requires, versions)
        surveyed = dist.name not in SOURCES
        if surveyed and dist.name in required:
            continue  # a wheel another framework requires (the JAX PJRT wheel): judged with it
        if pins or needs or build_major is not None or surveyed:
            beside = tuple((name, versions[name]) for name in _names(requires) if name in versions)
            pip_env = interpreter_of_site(dist.site)
            consumers.append(Consumer(_source_of(dist).framework, dist.name, dist.version, dist.site, pins, needs,
                                      build, build_major, source, pip_env, beside, _broken(dist, source),
                                      _unmet(dist, paths, env, cache), along_of(dist.site, pip_env),
                                      sharing_in_target(dist.site, dist.name) if pip_env == (None, ()) else ()))
    return tuple(consumers)


def _unmet(dist: _Installed, paths: Sequence[str], env: Mapping[str, str], cache: ElfCache) -> tuple[Need, ...]:
    """The CUDA libraries pip ships that the objects of ``dist``'s library folders NEED and that neither a wheel's
    ``nvidia/*/lib`` folder on ``paths`` (where torch's and JAX's loaders take them from, by path) nor the object's
    own search (its RPATH or RUNPATH, LD_LIBRARY_PATH, the ld.so cache) holds: importing it fails with
    "libcublas.so.13: cannot open shared object file"."""
    from cudnnload.resolve import linker
    from cudnnload.resolve.elfcache import linker_defaults

    wanted: dict[str, tuple[str, ElfInfo]] = {}
    for folder in _source_of(dist).folders:
        where = os.path.join(dist.site, folder)
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        for name in names:
            if ".so" not in name:
                continue
            try:
                info = cache.inspect(os.path.join(where, name))
            except (OSError, ElfError):
                continue
            for soname in info.needed:
                if dependency_requirement(soname) is not None:  # pip ships it (torch's libcublas.so.13)
                    wanted.setdefault(soname, (os.path.join(where, name), info))
    if not wanted:
        return ()
    held: set[str] = set()
    for folder in wheel_lib_folders(paths):
        with contextlib.suppress(OSError):
            held.update(os.listdir(folder))
    unmet = []
    search: linker.LinkerEnv | None = None
    for soname, (path, info) in wanted.items():
        if soname in held:
            continue
        search = search or linker.LinkerEnv.from_environ(env, defaults=linker_defaults(cache, env))
        found = linker.resolve(soname, linker.Chain((linker.Requester.from_elf(path, info),)), search, how="needed")
        if found.path is None:
            unmet.append(Need(soname, path))
    return tuple(unmet)


def _surveyed_source(dist: _Installed | Consumer) -> _Source | None:
    """Where to look in a distribution `SOURCES` does not name but the framework survey does, when some surveyed
    release of it has to do with cuDNN (CTranslate2, CuPy, PaddlePaddle, TransformerEngine, cudnn-frontend): the
    folders its surveyed libraries lie in. A release of it that uses none is still one (judged as using none)."""
    from cudnnload.resolve.survey import decides_cudnn, nearest, surveyed

    name = dist.name if isinstance(dist, _Installed) else dist.distribution
    if not any(decides_cudnn(row) for row in surveyed(name)):
        return None
    match = nearest(name, dist.version)
    folders = tuple(sorted({lib.path.rpartition("/")[0] for lib in match.wheel.libraries})) if match else ()
    return _Source(name, folders)


_SHIM_NAME = re.compile(r"libcudnn\.so\.\d+(?:\.\d+)*")


def bundled_folders(paths: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The library folders of the frameworks installed on ``paths`` that hold a cuDNN shim under its own name,
    each with the distribution that put it there (torch 1.x's wheels bundled cuDNN 8 in torch/lib, beside
    libtorch_cuda.so's RPATH ``$ORIGIN``). A copy under auditwheel's hashed name (CTranslate2's) is no such
    folder: its framework's route finds it. Only the known frameworks' folders are listed (a few stat calls a
    site: `cudnnload.find()` stays ~20 ms)."""
    found: dict[str, str] = {}
    for site in paths:
        for name, source in SOURCES.items():
            for part in source.folders:
                folder = os.path.join(site or ".", part)
                try:
                    names = os.listdir(folder)
                except OSError:
                    continue
                if folder not in found and any(_SHIM_NAME.fullmatch(each) for each in names):
                    dist = next((d for d in _installed([site]) if d.name == name), None)
                    if dist is not None:
                        found[folder] = f"bundled with {dist.name} {dist.version}"
    return tuple(found.items())


def _source_of(dist: _Installed | Consumer) -> _Source:
    name = dist.name if isinstance(dist, _Installed) else dist.distribution
    return SOURCES.get(name) or _surveyed_source(dist) or _Source(name, ())


def _names(requires: Sequence[str]) -> list[str]:
    """The canonical names of the distributions ``requires`` names (markers not evaluated: a name is a name)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = []
    for text in requires:
        try:
            names.append(str(canonicalize_name(Requirement(text).name)))
        except InvalidRequirement:
            continue
    return names


def _broken(dist: _Installed, build_source: str) -> str | None:
    """Why an installed framework cannot be read or run as installed: no METADATA (pip writes one for every
    wheel), a wheel built for another platform (its WHEEL file's tags), or the child that imports it to read its
    build failing on the import of one of its own modules."""
    import platform

    if not os.path.isfile(os.path.join(dist.info, "METADATA")) and dist.info.endswith(".dist-info"):
        return f"{os.path.basename(dist.info)} has no METADATA"
    try:
        wheel = read_regular(os.path.join(dist.info, "WHEEL"), 1 << 16).decode("utf-8", "replace")
    except (OSError, NotRegularFile):
        wheel = ""
    tags = [line.partition(":")[2].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    machine = platform.machine()
    if tags and not any(tag.endswith("-any") or (sys.platform in tag.rpartition("-")[2] and machine in tag)
                        or (sys.platform == "linux" and "manylinux" in tag and machine in tag) for tag in tags):
        return f"its wheel is for {', '.join(tag.rpartition('-')[2] for tag in tags)}, not {sys.platform} {machine}"
    # an import that fails on a missing shared object is the loading that doctor judges (libcudnn.so.9 not found),
    # not a broken distribution
    failed = build_source.partition(" in a child process failed: ")[2]
    if failed.startswith(("ImportError", "ModuleNotFoundError")) and "shared object" not in failed:
        return f"its import fails ({failed})"
    return None


def owner_of(path: str, *, environ: Mapping[str, str] | None = None, timeout: float = 60.0) -> tuple[Consumer, ...]:
    """The framework a file belongs to (``.../torch/lib/libtorch_cuda.so`` -> torch), read from the site
    folder above it; () when none of the known frameworks holds it."""
    real = os.path.realpath(path)
    site = site_of(path)
    if site is None:
        return ()
    return tuple(c for c in find_consumers([site], environ=environ, timeout=timeout)
                 if any(real.startswith(os.path.realpath(os.path.join(c.site, part)) + os.sep)
                        for part in _source_of(c).folders))


@dataclass(frozen=True)
class CpuBuild:
    """A framework installed as a build without CUDA: it uses no cuDNN, whatever is installed beside it."""

    framework: str  # "torch", "jax", "onnxruntime", "tensorflow"
    distribution: str
    version: str
    site: str
    why: str  # what shows it, for people: "torch/lib holds no libtorch_cuda.so"
    platform: str = "CPU"  # "CPU", or "ROCm" for PyTorch's AMD builds
    # the CUDA build installed beside it into the same folder, whose shared files are this one's (pip wrote this
    # one last): "onnxruntime-gpu==1.20.1"
    over: str | None = None

    @property
    def label(self) -> str:
        return f"{self.distribution} {self.version}"

    @property
    def over_distribution(self) -> str | None:
        """The name of the CUDA build ``over`` names."""
        return self.over.partition("==")[0] if self.over else None


# (framework, distribution, the file a CUDA build of it has, the distributions that make it one instead): a
# distribution without that file, and without any of those beside it, is a build without CUDA. Read in the
# wheels: torch's CUDA builds ship torch/lib/libtorch_cuda.so (ROCm ones libtorch_hip.so, CPU ones neither);
# jaxlib runs on the GPU only through a jax-cuda*-plugin (jaxlib >= 0.4.30) or its own jaxlib/cuda (older);
# onnxruntime's CUDA provider is onnxruntime/capi/libonnxruntime_providers_cuda.so (only onnxruntime-gpu has
# it); tensorflow-cpu is TensorFlow without CUDA.
_CUDA_MARKS: tuple[tuple[str, str, str | None, tuple[str, ...]], ...] = (
    ("torch", "torch", "torch/lib/libtorch_cuda.so", ()),
    ("jax", "jaxlib", "jaxlib/cuda", ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt")),
    ("onnxruntime", "onnxruntime", "onnxruntime/capi/libonnxruntime_providers_cuda.so", ("onnxruntime-gpu",)),
    ("tensorflow", "tensorflow-cpu", None, ("tensorflow",)),
)


# The distributions `cpu_builds` tells a build without CUDA of apart
TOLD_APART = frozenset(name for _, name, _, _ in _CUDA_MARKS)


def cpu_builds(site_paths: Sequence[str] | None = None) -> tuple[CpuBuild, ...]:
    """The frameworks on ``site_paths`` (default ``sys.path``) installed as builds without CUDA (`_CUDA_MARKS`):
    nothing of cuDNN concerns them, and installing cuDNN does not put them on the GPU."""
    installed = _installed(list(sys.path if site_paths is None else site_paths))
    present = {dist.name for dist in installed}
    found: dict[str, CpuBuild] = {}
    for framework, name, mark, instead in _CUDA_MARKS:
        dist = next((d for d in installed if d.name == name), None)
        if dist is None or framework in found:
            continue
        cuda = next((d for d in installed if d.name in instead and d.site == dist.site), None)
        shared = _written_last(dist, cuda) if cuda is not None else None
        if shared is not None and cuda is not None:
            found[framework] = CpuBuild(framework, name, dist.version, dist.site,
                                        f"{cuda.name} {cuda.version} is installed too, into the same folder, but its "
                                        f"{shared} is {name}'s: pip wrote {name} last, over it", over=
                                        f"{cuda.name}=={cuda.version}")
            continue
        if any(other in present for other in instead):
            continue
        # a CUDA build's file that is a link to nothing is still there (its installer's cache cleaned: `LinksGone`)
        if mark is not None and os.path.lexists(os.path.join(dist.site, mark)):
            continue
        rocm = framework == "torch" and os.path.lexists(os.path.join(dist.site, "torch/lib/libtorch_hip.so"))
        why = (f"the distribution {name} is TensorFlow without CUDA" if mark is None else
               f"{os.path.dirname(mark)} holds no {os.path.basename(mark)}"
               + (f", and none of {', '.join(instead)} is installed" if instead else ""))
        found[framework] = CpuBuild(framework, name, dist.version, dist.site, why, "ROCm" if rocm else "CPU")
    return tuple(found.values())


@dataclass(frozen=True)
class LinksGone:
    """Distributions installed as symbolic links into a folder that is gone: an installer that links its cache's
    files into the environment (``uv pip install --link-mode=symlink``, ``UV_LINK_MODE=symlink``), then its cache
    cleaned (``uv cache clean``, ``uv cache prune``): every file of theirs, their metadata too, points at nothing."""

    site: str
    into: str  # the folder the links point into (their targets' common folder)
    distributions: tuple[tuple[str, str], ...]  # (name, version) from an index: each can be installed again
    by_url: tuple[str, ...]  # "name version" of those installed from a path or a URL (direct_url.json): no index has
    installer: str  # who installed them (their INSTALLER file: "uv", "pip")
    pip_env: tuple[str | None, tuple[str, ...]] = (None, ())  # who installs into ``site`` (`interpreter_of_site`)
    into_gone: bool = True  # ``into`` itself is not there (else only the files it should hold are not)

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(f"{name}=={version}" for name, version in self.distributions)


def links_gone(site_paths: Sequence[str] | None = None) -> tuple[LinksGone, ...]:
    """Per folder of ``site_paths`` (default ``sys.path``), its distributions whose METADATA is a symbolic link to a
    file that is not there (`LinksGone`); none where no distribution's is."""
    from packaging.utils import canonicalize_name

    by_site: dict[str, list[tuple[_Installed, str]]] = {}
    for dist in _installed(list(sys.path if site_paths is None else site_paths)):
        metadata = os.path.join(dist.info, "METADATA")
        if os.path.islink(metadata) and not os.path.exists(metadata):
            try:
                target = os.path.abspath(os.path.join(dist.info, os.readlink(metadata)))
                by_site.setdefault(dist.site, []).append((dist, target))
            except OSError:
                continue
    found = []
    for site, gone in by_site.items():
        into = os.path.commonpath([os.path.dirname(os.path.dirname(os.path.normpath(target))) for _, target in gone])
        from_index = [d for d, _ in gone if not os.path.isfile(os.path.join(d.info, "direct_url.json"))]
        installers = {_installer_file(d) for d, _ in gone} - {""}
        # the frameworks and the cuDNN first (what the message names), then the other NVIDIA wheels, then the rest
        from_index.sort(key=lambda d: (d.name not in FRAMEWORKS, not d.name.startswith("nvidia-cudnn"),
                                       not d.name.startswith("nvidia-"), d.name))
        found.append(LinksGone(site, into, tuple((str(canonicalize_name(d.name)), d.version) for d in from_index),
                               tuple(f"{d.name} {d.version}" for d, _ in gone if d not in from_index),
                               installers.pop() if len(installers) == 1 else "pip", interpreter_of_site(site),
                               not os.path.lexists(into)))
    return tuple(found)


def _installer_file(dist: _Installed) -> str:
    try:
        return read_regular(os.path.join(dist.info, "INSTALLER"), 256).decode("utf-8", "replace").strip()
    except (OSError, NotRegularFile):
        return ""


def _written_last(dist: _Installed, other: _Installed) -> str | None:
    """A compiled file both distributions' RECORDs list with different hashes (the CPU and the CUDA build of one
    package, which install into the same folder), where the file on disk is ``dist``'s: its path, relative to the
    site; None where there is none, or the file is ``other``'s or neither's."""
    mine, theirs = _record_hashes(dist), _record_hashes(other)
    shared = sorted(path for path, digest in mine.items() if path.endswith((".so", ".pyd"))
                    and theirs.get(path) not in (None, digest))
    return next((path for path in shared[:1] if record_digest(os.path.join(dist.site, path)) == mine[path]), None)


def _record_hashes(dist: _Installed) -> dict[str, str]:
    """RECORD's sha256 of each file it lists (PEP 376/627: "sha256=<urlsafe base64, unpadded>"), by path."""
    return {row[0]: row[1].removeprefix("sha256=") for row in _record_rows(dist)
            if len(row) > 1 and row[1].startswith("sha256=")}


# Files whose presence in a process shows the framework runs there (a program's mapped files, `doctor --`).
_MAPPED_MARKS = (("torch", "/torch/lib/libtorch_cuda"), ("jax", "/jax_plugins/xla_cuda"),
                 ("onnxruntime", "/onnxruntime/capi/libonnxruntime_providers_cuda"),
                 ("tensorflow", "/tensorflow/libtensorflow_framework"))


def consumers_mapped(paths: Sequence[str], *, environ: Mapping[str, str] | None = None,
                     timeout: float = 60.0) -> tuple[Consumer, ...]:
    """The frameworks a process runs, from the files it mapped: each one's distribution in the site folder
    above its library."""
    wanted: dict[str, set[str]] = {}
    for path in paths:
        for framework, mark in _MAPPED_MARKS:
            site = site_of(path) if mark in path else None
            if site is not None:
                wanted.setdefault(site, set()).add(framework)
    return tuple(c for site, frameworks in wanted.items()
                 for c in find_consumers([site], environ=environ, timeout=timeout) if c.framework in frameworks)


def site_of(path: str) -> str | None:
    """The nearest folder above ``path`` that holds a ``.dist-info``: its site-packages."""
    folder = os.path.dirname(os.path.abspath(path))
    while folder != os.path.dirname(folder):
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        if any(name.endswith(".dist-info") for name in names):
            return folder
        folder = os.path.dirname(folder)
    return None


@dataclass(frozen=True)
class _Installed:
    """A distribution's metadata folder, named as installers name it: ``{name}-{version}.dist-info``."""

    name: str  # canonical
    version: str
    info: str  # the .dist-info (or .egg-info) folder
    site: str  # the folder that holds it

    @property
    def record(self) -> str:
        return os.path.join(self.info, "RECORD")


def _installed(paths: Sequence[str]) -> list[_Installed]:
    """Every distribution on ``paths``, in path order, from the folder names alone: reading each METADATA
    instead (importlib.metadata) costs ~0.8 s for the ~400 distributions beside torch and JAX. The first
    '-' separates name and version (a name's own dashes are written '_', PEP 427)."""
    from packaging.utils import canonicalize_name

    found = []
    for site in paths:
        try:
            names = sorted(os.listdir(site or "."))
        except OSError:
            continue
        for entry in names:
            stem, dot, suffix = entry.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            name, dash, version = stem.partition("-")
            if suffix == "egg-info" or not dash:  # setuptools' own names carry the Python version, or none
                name, version = _egg_info(os.path.join(site, entry)) or (name, "")
            found.append(_Installed(str(canonicalize_name(name)), version, os.path.join(site, entry), site))
    return found


def installed_names(paths: Sequence[str]) -> frozenset[str]:
    """The canonical names of the distributions installed on ``paths`` (their metadata folders' names)."""
    return frozenset(each.name for each in _installed(paths))


def installed_versions(paths: Sequence[str]) -> dict[str, str]:
    """Each distribution's version installed on ``paths``: the first path's, as an import finds it."""
    found: dict[str, str] = {}
    for each in _installed(paths):
        found.setdefault(each.name, each.version)
    return found


def site_pins(site: str) -> tuple[Pin, ...]:
    """The cuDNN wheels the distributions installed in ``site`` always require (Requires-Dist on nvidia-cudnn-*
    without an extra, on this platform), each once, in name order: what that environment's frameworks expect in
    its ``nvidia/cudnn/lib`` folder."""
    dists = _installed([site])
    versions = {dist.name: dist.version for dist in dists}
    pins = (pin for dist in dists if not dist.name.startswith("nvidia-")
            for pin in _pins(_requires(dist), versions) if not pin.extras)
    return tuple(dict.fromkeys(pins))


def _egg_info(folder: str) -> tuple[str, str] | None:
    from importlib import metadata

    try:
        meta = metadata.PathDistribution(Path(folder)).metadata
        return meta["Name"] or "", meta["Version"] or ""
    except (OSError, ValueError, TypeError):
        return None


_Build = tuple[Release | None, int | None, str]
_Facts = tuple[tuple[str, ...], tuple[Need, ...], _Build]  # requirements, needs, build


def _facts(dists: Sequence[_Installed], paths: Sequence[str], env: Mapping[str, str], timeout: float,
           interpreter: str, cache: ElfCache, run: bool = True) -> list[tuple[_Installed, _Facts]]:
    """What each distribution says, recalled from the memo or read: static files here, compiled build
    versions in children run side by side (importing torch takes ~2 s). Remembered for each installed
    copy of a distribution (its version, where it is, its RECORD's size, mtime and inode: a reinstall is
    read again) and the interpreter that read it; a child that timed out or failed is asked again."""
    pending: dict[int, tuple[subprocess.Popen[bytes], str]] = {}
    results: list[tuple[_Installed, _Facts]] = []
    keys: list[tuple[object, ...] | None] = []
    with contextlib.ExitStack() as guard:  # the frameworks' imports run untrusted (`children.untrusted`)
        child_env: dict[str, str] | None = None
        owner: dict[str, object] | None = None  # whose code the imports run (`owner_of_python`), asked once
        for index, dist in enumerate(dists):
            key = _key(dist, interpreter)
            keys.append(key)
            remembered = _recall(cache, key) if key else None
            if remembered is not None:
                results.append((dist, remembered))
                continue
            files = _record_files(dist)
            requires = _requires(dist)
            source = _source_of(dist)
            build: _Build = (None, None, f"{dist.name} does not record the cuDNN it was built with")
            if source.build_file and source.build_file in files:
                build = _tensorflow_build(os.path.join(dist.site, source.build_file), source.build_file)
            elif source.build_marker and any(f.startswith(source.build_marker) for f in files) \
                    and (pinned := _exact_pin(requires)) is not None and source.build_is_pin:
                build = (pinned[0], pinned[0].major, f"its exact pin {pinned[1]} (its release builds are compiled "
                         "against the cuDNN they pin)")
            elif source.build_module and source.build_function and source.build_marker \
                    and any(f.startswith(source.build_marker) for f in files) and not run:
                build = (None, None, f"{source.build_module}.{source.build_function}() not asked: nothing is run")
            elif source.build_module and source.build_function and source.build_marker \
                    and any(f.startswith(source.build_marker) for f in files):
                command = [interpreter, "-I", "-c", _CHILD, json.dumps(list(paths)), source.build_module,
                           source.build_function]
                child_env = child_env or guard.enter_context(untrusted(env))[0]
                owner = as_owner(owner_of_python(interpreter, paths)) if owner is None else owner
                child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # type: ignore[call-overload]
                                         stdin=subprocess.DEVNULL, env=child_env, start_new_session=True,
                                         **owner)
                pending[index] = (child, f"{source.build_module}.{source.build_function}()")
            results.append((dist, (requires, _needs(dist, files, source.folders, cache), build)))
        deadline = time.monotonic() + timeout
        try:
            for index, (child, what) in pending.items():
                dist, (requires, needs, _) = results[index]
                results[index] = (dist, (requires, needs, _answer(child, what, deadline, timeout)))
        finally:  # interrupted: those not read yet (`tails` ends each it reads)
            for child, _ in pending.values():
                if child.returncode is None:
                    end_group(child)
    for index, (key, (_, facts)) in enumerate(zip(keys, results, strict=True)):
        # not a timeout, a failed import, or a child not started
        answered = run and (index not in pending or facts[2][1] is not None)
        if key is not None and answered and _recall(cache, key) is None:
            cache.remember(key, facts)
    return results


def _recall(cache: ElfCache, key: tuple[object, ...]) -> _Facts | None:
    facts: _Facts | None = cache.recall(key, "tuple[tuple[str, ...], tuple[Need, ...], tuple[Release | None, "
                                        "int | None, str]]", {"Need": Need, "Release": Release})
    return facts


def _key(dist: _Installed, interpreter: str) -> tuple[object, ...] | None:
    """What remembered facts depend on: this copy of the distribution, and who read it."""
    try:
        identity = stamp(dist.record)
    except OSError:
        return None
    return ("consumer", dist.name, dist.version, os.path.realpath(dist.record), *identity, interpreter)


def _record_files(dist: _Installed) -> list[str]:
    """The paths RECORD lists (relative to the site folder), read directly: importlib.metadata's
    ``files`` stats each of them (25,000 for torch, ~1 s)."""
    return [row[0] for row in _record_rows(dist)]


def _record_rows(dist: _Installed) -> list[list[str]]:
    """RECORD's rows (path, hash, size: PEP 376/627), none where it cannot be read."""
    try:
        text = read_regular(dist.record, _RECORD_BYTES).decode("utf-8")
        return [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except (OSError, NotRegularFile, csv.Error, UnicodeDecodeError):
        return []


def _requires(dist: _Installed) -> tuple[str, ...]:
    from importlib import metadata

    try:
        return tuple(metadata.PathDistribution(Path(dist.info)).requires or ())
    except (OSError, ValueError, TypeError):
        return ()


def stated_consumer(framework: str, distribution: str, version: str, site: str, requires: Sequence[str],
                    versions: Mapping[str, str], needs: Sequence[Need], *, environment: Mapping[str, str] | None = None,
                    stated_build: str | None = None, stated_from: str = "") -> Consumer:
    """A framework known from its metadata and its surveyed wheel, before it is installed: its pins against the
    ``versions`` that will be beside it (markers evaluated in ``environment``, pip's), its build from its exact pin
    where its release builds are compiled against it (`SOURCES`), else as its wheel states it (``stated_build``:
    TensorFlow's "9")."""
    pins = _pins(requires, versions, environment)
    source = SOURCES.get(distribution)
    pinned = _exact_pin(requires, environment) if source is not None and source.build_is_pin else None
    if pinned is not None:
        return Consumer(framework, distribution, version, site, pins, tuple(needs), pinned[0], pinned[0].major,
                        f"its exact pin {pinned[1]} (its release builds are compiled against the cuDNN they pin)")
    try:
        build = parse_release(stated_build) if stated_build else None
    except ValueError:
        build = None
    full = build if stated_build and stated_build.count(".") >= 2 else None
    return Consumer(framework, distribution, version, site, pins, tuple(needs), full, build.major if build else None,
                    stated_from if build else f"{distribution} {version} states no cuDNN build version")


def _pins(requires: Sequence[str], installed: Mapping[str, str],
          environment: Mapping[str, str] | None = None) -> tuple[Pin, ...]:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    pins = []
    for text in requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue  # not PEP 508: pip would refuse it too
        name = str(canonicalize_name(requirement.name))
        if not name.startswith("nvidia-cudnn-") or requirement.url:
            continue  # another package, or a direct reference: no version to check
        applies, extras = marker_applies(requirement.marker, environment) if requirement.marker else (True, ())
        if applies:
            pins.append(Pin(name, str(requirement.specifier), extras, installed.get(name)))
    return tuple(pins)


def _exact_pin(requires: Sequence[str], environment: Mapping[str, str] | None = None) -> tuple[Release, str] | None:
    """The cuDNN release of an exact ``nvidia-cudnn-*==X.Y.Z[.B]`` requirement that applies here, and the
    requirement as written; None when there is none (or a range)."""
    for pin in _pins(requires, {}, environment):
        exact = pin.specifier.removeprefix("==")
        if pin.specifier.startswith("==") and "," not in exact and "*" not in exact:
            try:
                return parse_release(".".join(exact.split(".")[:3])), pin.requirement
            except ValueError:
                continue
    return None


def _needs(dist: _Installed, files: Sequence[str], folders: tuple[str, ...], cache: ElfCache) -> tuple[Need, ...]:
    needs: list[Need] = []
    for file in files:
        folder, _, name = file.rpartition("/")
        if folder not in folders or ".so" not in name:
            continue
        path = os.path.normpath(os.path.join(dist.site, file))
        try:
            info = cache.inspect(path)
        except (OSError, ElfError):
            continue  # a missing or damaged file is discovery's business, not a cuDNN need
        needs.extend(Need(soname, path) for soname in info.needed if soname.startswith("libcudnn"))
    return tuple(needs)


def _answer(child: subprocess.Popen[bytes], what: str, deadline: float, timeout: float) -> _Build:
    """What the child says the framework was built with. The framework's import runs code of its own, which may
    say anything on the child's stdout (`_release_said` takes only a release), write without end, or leave
    processes behind (`children.tails`)."""
    where = f"{what} in a child process"
    out, err, ended = tails(child, deadline)
    if not ended:
        return None, None, f"{where}: no answer within {timeout:g} s"
    lines = [line for line in out.decode(errors="replace").splitlines() if line.startswith(_ANSWER)]
    if not lines:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
        return None, None, f"{where} failed: {last[0][-300:]}"
    try:
        answer = json.loads(lines[-1][len(_ANSWER):])
    except (ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        return None, None, f"{where} failed: {answer['error'][-300:]}"
    value = answer.get("value") if isinstance(answer, dict) else None
    if type(value) is int and value == 0:
        return None, None, where  # no cuDNN release to say, as before
    release = _release_said(value)
    if release is None:
        return None, None, f"{where} failed: its answer is no cuDNN version: {lines[-1][len(_ANSWER):][:100]!r}"
    return release, release.major, where


def _release_said(value: object) -> Release | None:
    """A release from the child's answer: (major, minor, patch) or a ``cudnnGetVersion()`` number, each part a
    32-bit count; None for anything else."""
    def count(part: object) -> bool:
        return type(part) is int and 0 <= part < 1 << 31

    if isinstance(value, list) and len(value) == 3 and all(map(count, value)):
        return Release(*value)
    return decode_version(value) if count(value) and value else None  # type: ignore[arg-type]


def _tensorflow_build(path: str, name: str) -> _Build:
    """TensorFlow's generated ``build_info = collections.OrderedDict([...])`` (or a dict literal)."""
    try:
        tree = ast.parse(read_regular(path, 1 << 20).decode("utf-8", "replace"))
        value = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "build_info" for t in node.targets))
        literal = value.args[0] if isinstance(value, ast.Call) and value.args else value
        info = dict(ast.literal_eval(literal))
    except (OSError, NotRegularFile, SyntaxError, ValueError, StopIteration, TypeError, RecursionError) as exc:
        return None, None, f"{name} could not be read: {exc}"
    if not info.get("is_cuda_build"):
        return None, None, f"{name}: not a CUDA build"
    # "9" on Linux, "64_8" (cudnn64_8.dll) on Windows; possibly a full version.
    text = str(info.get("cudnn_version", "")).rpartition("_")[2]
    try:
        release = parse_release(text)
    except ValueError:
        return None, None, f"{name}: no cuDNN version in it"
    return (release if "." in text else None), release.major, name
