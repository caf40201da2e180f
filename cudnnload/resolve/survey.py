"""The frameworks' wheels as surveyed: what each one says about cuDNN, read from the wheel itself.

Facts only, no verdicts. ``bench/survey_frameworks.py`` downloads each framework wheel from PyPI and reads,
without installing or importing it, its libraries' NEEDED, RPATH and RUNPATH and the cuDNN names among their
strings, its Python functions that name cuDNN (what they open, what a failed load does, whether they run at
import), its ``nvidia-cudnn-*`` pins and stated build versions; the rows, each with its provenance (wheel
file name, sha256, URL, date), are the generated module ``surveyed``. They are read on first use, once.

A release that was not surveyed is answered by the nearest one that was (``nearest``), and the answer says
it is not exact: the same series first (2.14.0 by 2.14.1), else the newest surveyed release before it (a
loader is inherited forward more often than back), else the oldest after it.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, is_dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudnnload.resolve.catalog import classify, classify_bundled


@dataclass(frozen=True)
class Provenance:
    """Where a row was read from: the wheel PyPI serves under this name, URL and sha256, on that day."""

    wheel: str
    sha256: str
    url: str
    size: int
    surveyed: str  # ISO date


@dataclass(frozen=True)
class SurveyedLibrary:
    """One shared library in a wheel (``format`` "elf", or "pe" for a Windows DLL or extension)."""

    path: str  # inside the wheel, as installed under site-packages
    format: str
    soname: str | None
    needed: tuple[str, ...]  # DT_NEEDED; PE: the import table's DLLs
    delay_needed: tuple[str, ...]  # PE: delay-loaded DLLs (ELF has none)
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    gpu_code: bool  # carries CUDA code (.nv_fatbin)
    cudnn_names: tuple[str, ...]  # cuDNN library names among its strings: what it can dlopen by name
    cudnn_mentions: int  # its strings that name cuDNN (``strings -a FILE | grep -ci cudnn``)
    cudnn_release: str | None  # a bundled cuDNN library's own release, from its exported version constant
    file_version: str | None  # PE version resource (cuDNN 9's DLLs: the cuDNN release)

    @property
    def cudnn_needed(self) -> tuple[str, ...]:
        """The cuDNN libraries the loader maps with this one, before any of its code runs."""
        return tuple(name for name in self.needed + self.delay_needed if "cudnn" in name.lower())


@dataclass(frozen=True)
class CallSite:
    """A call in a loader's module, and what a failed library load reached through it does there: "raise" (a
    handler raises again), "warn" (a handler warns, logs or prints), "ignore" (a handler swallows it),
    "propagate" (nothing catches it there). Several when the loads behind the call end differently."""

    call: str  # load sites: the function called (CDLL, or a loader of the module); callers: the calling function
    line: int
    on_failure: tuple[str, ...]

    @property
    def escapes(self) -> bool:
        """Whether a failed load leaves this call as an exception."""
        return bool({"raise", "propagate"} & set(self.on_failure))


@dataclass(frozen=True)
class LoaderFunction:
    """A Python function in the wheel that loads cuDNN or names its files."""

    module: str  # file inside the wheel
    function: str  # "<module>": the module's own statements, run at import
    names: tuple[str, ...]  # the one-word strings naming cuDNN it holds: file names, globs, folders, packages
    load_sites: tuple[CallSite, ...]  # where it opens a library, itself or through a function of its module
    called_from: tuple[CallSite, ...]  # where its own module calls it, and what a failure does there
    at_import: bool  # its module calls it when imported

    @property
    def loads(self) -> bool:
        return bool(self.load_sites)


@dataclass(frozen=True)
class SurveyedWheel:
    distribution: str
    version: str
    system: str  # "linux" or "windows"
    # "cu12", "cu13": built for that CUDA major; "cuda": carries CUDA code, no major readable (CTranslate2 links
    # CUDA in statically); "cpu": no CUDA code of its own (a CPU build, or a pure loader: cudnn-frontend)
    variant: str
    cuda_major: int | None
    cuda_major_from: str  # "needed", "build-info", "distribution", "requires" or "none"
    cudnn_requires: tuple[str, ...]  # Requires-Dist entries on nvidia-cudnn-*, markers kept
    build_cudnn: str | None  # the cuDNN version its build information states
    build_cudnn_from: str | None  # the file that states it
    build_cuda: str | None
    build_cuda_from: str | None
    libraries: tuple[SurveyedLibrary, ...]
    loaders: tuple[LoaderFunction, ...]
    provenance: Provenance

    @property
    def release(self) -> Version:
        return Version(self.version)


@dataclass(frozen=True)
class SurveyMatch:
    """The surveyed wheel that answers for ``asked``; ``exact`` is False when it is only the nearest release."""

    wheel: SurveyedWheel
    asked: str
    exact: bool


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _build(hint: object, value: object) -> object:
    """A generated row's plain value as the annotated type: lists to tuples, dicts to the dataclasses."""
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_build(item, inner) for inner in value)  # type: ignore[attr-defined]
    if isinstance(hint, type) and is_dataclass(hint):
        hints = _hints(hint)
        return hint(**{key: _build(hints[key], inner) for key, inner in value.items()})  # type: ignore[attr-defined]
    return value


@functools.lru_cache(maxsize=1)
def _all() -> tuple[SurveyedWheel, ...]:
    from cudnnload.resolve.surveyed import ROWS  # the generated data: imported on first use only

    return tuple(typing.cast(SurveyedWheel, _build(SurveyedWheel, row)) for row in ROWS)


def surveyed(distribution: str | None = None) -> tuple[SurveyedWheel, ...]:
    """Every surveyed wheel, or those of one distribution (any spelling: ``jax_cuda12_plugin``)."""
    if distribution is None:
        return _all()
    name = canonicalize_name(distribution)
    return tuple(wheel for wheel in _all() if canonicalize_name(wheel.distribution) == name)


def _variant_of(version: Version) -> str | None:
    """The variant a local version label names: torch's ``2.14.1+cu130`` is cu13, ``+cpu`` cpu."""
    local = version.local or ""
    if local.startswith("cu") and local[2:].isdigit() and len(local) >= 4:
        return f"cu{int(local[2:]) // 10}"
    return "cpu" if local == "cpu" else None


def _candidates(distribution: str, version: str, variant: str | None,
                system: str) -> tuple[Version, list[SurveyedWheel]] | None:
    try:
        asked = Version(version)
    except InvalidVersion:
        return None
    wanted = variant or _variant_of(asked)
    rows = [wheel for wheel in surveyed(distribution)
            if wheel.system == system and (wanted is None or wheel.variant == wanted)]
    return Version(asked.public), rows


def lookup(distribution: str, version: str, variant: str | None = None,
           system: str = "linux") -> SurveyedWheel | None:
    """The surveyed wheel of exactly this release (a local label such as ``+cu130`` picks the variant)."""
    found = _candidates(distribution, version, variant, system)
    if found is None:
        return None
    asked, rows = found
    return next((wheel for wheel in rows if wheel.release == asked), None)


def nearest(distribution: str, version: str, variant: str | None = None, system: str = "linux") -> SurveyMatch | None:
    """The surveyed wheel that answers for this release: the exact one, else the nearest (module docstring);
    None when the distribution (in that variant, on that system) was not surveyed or the version is not one."""
    found = _candidates(distribution, version, variant, system)
    if found is None or not found[1]:
        return None
    asked, rows = found
    series = [wheel for wheel in rows if wheel.release.release[:2] == asked.release[:2]]
    before = [wheel for wheel in (series or rows) if wheel.release <= asked]
    after = [wheel for wheel in (series or rows) if wheel.release > asked]
    chosen = max(before, key=lambda wheel: wheel.release) if before else min(after, key=lambda wheel: wheel.release)
    return SurveyMatch(wheel=chosen, asked=version, exact=chosen.release == asked)


# --- how a surveyed wheel comes to its cuDNN ------------------------------------------------------------------

# Entry points a framework calls itself, where a surveyed loader runs from (the survey records who calls a
# loader inside its module; what the framework calls from outside is this): JAX calls initialize() on each
# plugin it discovers (jax/_src/xla_bridge.py, discover_pjrt_plugins / the jax_plugins entry point).
FRAMEWORK_CALLED = frozenset({"initialize"})

LoadKind = typing.Literal["by-path", "needed", "bundled", "by-name", "none"]


@dataclass(frozen=True)
class PathLoader:
    """A Python loader that opens a cuDNN by path before the framework calls cuDNN: the globs it tries, relative
    to each ``sys.path`` entry (``nvidia/cudnn/lib/libcudnn.so.*[0-9]``)."""

    loader: LoaderFunction
    globs: tuple[str, ...]


@dataclass(frozen=True)
class CudnnLoad:
    """How a framework's wheels (its own row, and those of the distributions it requires that were surveyed:
    the JAX CUDA plugin and its PJRT wheel) put a cuDNN in its process, in the order its loader tries:

    - ``by-path``: a Python loader opens ``nvidia/<folder>/lib/<name>`` by path (``by_path``), then the
      library that calls cuDNN is left to its NEEDED or its own dlopen;
    - ``needed``: the library that calls cuDNN (``caller``) NEEDs ``needed``, searched from it at load time;
    - ``bundled``: that NEEDED names a cuDNN the wheel ships under another name (``bundled``, auditwheel's
      ``libcudnn-<hash>.so.8.9.7``);
    - ``by-name``: ``caller`` has no cuDNN NEEDED and dlopens one by name when it first needs it (ONNX
      Runtime's CUDA provider from 1.28, TensorFlow's dso_loader): lazy, a program that never reaches cuDNN
      never maps one;
    - ``none``: nothing of the wheel names, NEEDs, pins or loads cuDNN (CTranslate2 from 4.6.3 on Linux).
    """

    kind: LoadKind
    rows: tuple[SurveyedWheel, ...]
    by_path: tuple[PathLoader, ...]
    caller: SurveyedLibrary | None
    needed: str | None  # the cuDNN name (or a bundled copy's SONAME) ``caller`` NEEDs
    bundled: SurveyedLibrary | None
    # loaders by path only the program runs, by calling them ("onnxruntime.preload_dlls()"): nothing of the
    # framework calls them, so they are not its way, but a way a program can take
    program_calls: tuple[str, ...] = ()


def decides_cudnn(row: SurveyedWheel) -> bool:
    """Whether a wheel has to do with a cuDNN at all: loads one, NEEDs or names one, pins one or states its build."""
    return bool(row.cudnn_requires or row.build_cudnn or any(
        lib.cudnn_needed or lib.cudnn_names for lib in row.libraries) or any(
        loader.loads and loader.names for loader in row.loaders))


def _path_loaders(rows: typing.Iterable[SurveyedWheel]) -> tuple[PathLoader, ...]:
    """The Python loaders that open a cuDNN by path and run before cuDNN is called: at import, or from an entry
    point the framework calls (`FRAMEWORK_CALLED`); their globs from the names they hold, a folder
    (``cudnn``) joined with a file name or glob (``libcudnn.so.*[0-9]``), or a relative path as written."""
    found = []
    for row in rows:
        for loader in row.loaders:
            runs = loader.at_import or any(site.call in FRAMEWORK_CALLED for site in loader.called_from) or \
                loader.function in FRAMEWORK_CALLED
            if not (loader.loads and runs):
                continue
            folders = [name for name in loader.names if "/" not in name and "." not in name]
            files = [name for name in loader.names if name.startswith("libcudnn") and ".so" in name]
            written = [name for name in loader.names if "/" in name and not name.startswith("/")
                       and name.rpartition("/")[2].startswith("libcudnn") and ".so" in name]
            globs = tuple(dict.fromkeys([*(f"nvidia/{folder}/lib/{name}" for folder in folders for name in files),
                                         *written]))
            if globs:
                found.append(PathLoader(loader, globs))
    return tuple(found)


def _caller(rows: typing.Sequence[SurveyedWheel]) -> SurveyedLibrary | None:
    """The library that calls cuDNN: among the ELF libraries of the wheels that have to do with cuDNN
    (`decides_cudnn`), those with CUDA code or a cuDNN NEEDED (not a cuDNN the wheel bundles), the one whose strings
    name cuDNN most (ONNX Runtime's CUDA provider over its TensorRT one, which NEEDs cuDNN but carries no CUDA
    code of its own and loads only for TensorRT)."""
    bundled = {soname for row in rows for lib in row.libraries for soname in lib.cudnn_needed}
    libraries = [lib for row in rows if decides_cudnn(row) for lib in row.libraries
                 if lib.format == "elf" and lib.soname not in bundled and (lib.gpu_code or lib.cudnn_needed)
                 and lib.cudnn_mentions]
    return max(libraries, key=lambda lib: lib.cudnn_mentions, default=None)


def cudnn_load(rows: typing.Sequence[SurveyedWheel]) -> CudnnLoad:
    """How ``rows`` (a framework's wheel first, then those it requires) come to their cuDNN (`CudnnLoad`)."""
    rows = tuple(rows)
    by_path = _path_loaders(rows)
    caller = _caller(rows)
    needed = next(iter(caller.cudnn_needed), None) if caller is not None else None
    bundled = next((lib for row in rows for lib in row.libraries if needed and lib.soname == needed
                    and classify(needed) is None), None)
    kind: LoadKind = "by-path" if by_path else "none" if caller is None else \
        "bundled" if bundled is not None else "needed" if needed is not None else "by-name"
    return CudnnLoad(kind, rows, by_path, caller, needed, bundled, _program_calls(rows))


def _program_calls(rows: typing.Sequence[SurveyedWheel]) -> tuple[str, ...]:
    """The public functions that load libraries, run neither at import nor by the framework, that call (or are) a
    function naming cuDNN: ONNX Runtime's ``preload_dlls()``, whose ``_get_nvidia_dll_paths()`` names
    ``nvidia/cudnn/lib/libcudnn.so.9``. Said as ``package.function()``."""
    found = []
    for row in rows:
        naming = {loader.function for loader in row.loaders if loader.names}
        for loader in row.loaders:
            callers = {site.call for other in row.loaders if other.names for site in other.called_from}
            runs = loader.at_import or loader.function in FRAMEWORK_CALLED or any(
                site.call in FRAMEWORK_CALLED for site in loader.called_from)
            if loader.loads and not runs and not loader.function.startswith("_") and loader.module.endswith(
                    "__init__.py") and (loader.function in naming or loader.function in callers):
                found.append(f"{loader.module.removesuffix('/__init__.py').replace('/', '.')}.{loader.function}()")
    return tuple(dict.fromkeys(found))


def releases_for_major(distribution: str, major: int, system: str = "linux") -> tuple[SurveyedWheel, ...]:
    """The surveyed wheels of ``distribution`` on ``system`` whose library that calls cuDNN NEEDs one of
    ``major`` (its own name or a bundled copy's), oldest first: the releases of it built for that major."""
    rows = [row for row in surveyed(distribution) if row.system == system]
    found = []
    for row in rows:
        needed = cudnn_load([row]).needed
        lib = classify_bundled(needed) if needed else None
        if lib is not None and lib.major == major:
            found.append(row)
    return tuple(sorted(found, key=lambda row: row.release))

