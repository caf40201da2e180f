"""Load one coherent cuDNN into this process, after proving in a child that it loads.

``load()`` picks an install (the best one found, or the one given, within an
optional version range), probes it in a child process (a cuDNN 8 ``abort()``
there becomes a verdict), remembers the verdict on disk, then opens the same
files here by absolute path with ``RTLD_GLOBAL``, leaves first, and runs every
``cudnn*VersionCheck``. Later loads by soname (PyTorch, JAX, ONNX Runtime) then
get these files: the linker returns an already-loaded soname before any search
(loading-in-the-wild §4).

The second call in a process returns the first result; 32 threads calling at
once share one load. Once the verdict is remembered, a new process skips the
search and the probe: it checks that every file still has the size, mtime and
inode the verdict was made on, and loads.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.cachedir import Layout, plain, read_entries, revive_entry, stamp, write_entries
from cudnnload.codes import ActionKind, Code, Effect, Severity, SubjectKind
from cudnnload.errors import LoadError
from cudnnload.loading import pending
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.probe import probe
from cudnnload.loading.status import check
from cudnnload.resolve.catalog import Release, generation
from cudnnload.resolve.mapped import mapped_libraries
from cudnnload.resolve.versions import VersionRange
from cudnnload.verdicts import Action, Consequence, Finding, Fix, Subject

# discovery (and the linker model behind it) is imported only when no verdict is remembered.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudnnload.resolve.discovery import Install

    Source = str | os.PathLike[str] | Install | None

PLAN_FORMAT = 5  # bump when _Plan's fields or the file layout change
PLANS = Layout("plans", PLAN_FORMAT, ("plans",), depth=2, max_entries=256)  # "plans": request key -> _Plan

@dataclass(frozen=True)
class Stage:
    """One timed step of the in-process load."""

    name: str  # "dlopen graph", "cudnnOpsVersionCheck"
    seconds: float
    status: int | None = None


@dataclass(frozen=True)
class Loaded:
    """The cuDNN now loaded in this process."""

    folder: str
    major: int
    release: Release
    files: tuple[tuple[str, str], ...]  # (catalog key, path), in load order
    skipped: tuple[tuple[str, str, str], ...]  # (key, path, why): expected failures on this machine
    verdict: str  # the child probe's one-line verdict
    verdict_cached: bool
    findings: tuple[Finding, ...]  # what discovery noted that does not stop the load (e.g. no cuBLASLt)
    stages: tuple[Stage, ...]
    seconds: float
    api: CudnnApi = field(compare=False, repr=False)
    # What `cudnnload.preload(warmup=...)` (cudnnload.dispatch.warmup) left: its `Warmed` result, or
    # the `Background` still running it. The loader only keeps it: warming up is dispatch's work.
    warmup: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Plan:
    """A remembered, probed choice: what to load, and what it was proven on."""

    folder: str
    major: int
    release: Release
    files: tuple[tuple[str, str], ...]
    skipped: tuple[tuple[str, str, str], ...]
    verdict: str
    findings: tuple[Finding, ...]
    stamps: tuple[tuple[int, int, int, int], ...]  # (size, mtime_ns, inode, device) of each file and skipped one


_lock = threading.Lock()
_loaded: Loaded | None = None


def loaded() -> Loaded | None:
    """What ``load()`` loaded in this process, if anything."""
    return _loaded


def load(
    source: str | os.PathLike[str] | Install | None = None,
    *,
    version: str | None = None,
    environ: Mapping[str, str] | None = None,
    use_cache: bool = True,
    timeout: float = 60.0,
    observer: Callable[[str], None] | None = None,
) -> Loaded:
    """Load a coherent cuDNN into this process (see the module docstring). Idempotent, thread-safe.

    ``source``: an install folder, a shim path, an :class:`Install`, or None for the best one
    found on the machine. ``version``: a range such as ``">=9.1,<10"``.
    Raises LoadError (naming the files and the reason) when nothing suitable loads, or when
    another cuDNN release is already mapped in this process. ``observer`` is called with each
    stage's name as it ends ("resolve", "dlopen graph", "cudnnGraphVersionCheck", ...): the hook
    ``cudnnload trace`` times them with. `cudnnload.preload` (cudnnload.dispatch.warmup) is this
    plus a warm-up of the application's first calls.
    """
    global _loaded
    wanted = VersionRange.parse(version) if version else None
    if _loaded is None and not pending.wait(timeout):  # start() loading on another thread: use its result
        raise LoadError(f"cudnnload.start()'s load on another thread did not end within {timeout:g} s",
                        fix="see where it waits: `python -X faulthandler`, or `cudnnload doctor` for the install")
    with _lock:
        if _loaded is not None:
            _check_same(_loaded, source, wanted)
        else:
            env = dict(os.environ if environ is None else environ)
            start = time.perf_counter()
            from cudnnload.loading.cudadriver import prepare_context

            prepare_context()  # the context (~230 ms) grows while the files are found and opened
            plan, cached = _plan(source, wanted, env, use_cache, timeout)
            _refuse_mixing(plan)
            if observer is not None:
                observer("resolve")
            stages, api = _load_here(plan, observer)
            _loaded = Loaded(plan.folder, plan.major, plan.release, plan.files, plan.skipped, plan.verdict,
                             cached, plan.findings, stages, time.perf_counter() - start, api)
        return _loaded


def with_warmup(result: object) -> Loaded:
    """The loaded cuDNN, now with its warm-up's result (set by cudnnload.dispatch.warmup and .starting)."""
    global _loaded
    with _lock:
        assert _loaded is not None
        _loaded = replace(_loaded, warmup=result)
        return _loaded


def _check_same(current: Loaded, source: object, wanted: VersionRange | None) -> None:
    if wanted is not None and not wanted.admits(current.release):
        raise LoadError(f"cuDNN {current.release} from {current.folder} is already loaded in this process, "
                        f"outside the requested range {wanted.text}",
                        fix="request the range before anything loads cuDNN, or restart the process")
    if isinstance(source, (str, os.PathLike)):
        folder = os.fspath(source)
        folder = folder if os.path.isdir(folder) else os.path.dirname(folder)
        if os.path.realpath(folder) != os.path.realpath(current.folder):
            raise LoadError(f"cuDNN {current.release} from {current.folder} is already loaded in this process; "
                            f"refusing to load a second one from {folder}",
                            fix="load one cuDNN per process")


# --- choosing and proving -------------------------------------------------------

def _plan(source: Source, wanted: VersionRange | None, env: dict[str, str], use_cache: bool,
          timeout: float) -> tuple[_Plan, bool]:
    store = _plan_file(env) if use_cache else None
    key = _request_key(source, wanted, env)
    plan = _remembered(store, key)
    if plan is not None:
        return plan, True
    install = _choose(source, wanted, env)
    plan = _prove(install, env, timeout)
    if store is not None:
        _remember(store, key, plan)
    return plan, False


def _request_key(source: Source, wanted: VersionRange | None, env: Mapping[str, str]) -> str:
    folder = getattr(source, "folder", None)  # an Install
    where = folder if isinstance(folder, str) else os.fspath(source) if source is not None else ""  # type: ignore[arg-type]
    relevant = [env.get(name, "") for name in ("LD_LIBRARY_PATH", "CUDNN_PATH", "CUDNN_HOME", "CUDA_HOME",
                                               "CUDA_PATH", "CONDA_PREFIX")]
    # The text itself, not a digest of it: hashlib's OpenSSL binding costs ~5 ms to import.
    return "\0".join([where, wanted.text if wanted else "", sys.executable, *relevant, *sys.path])


def _choose(source: Source, wanted: VersionRange | None, env: Mapping[str, str]) -> Install:
    from cudnnload.judge.choose import choose_install, through_relative_entry
    from cudnnload.judge.inventory import find
    from cudnnload.resolve.discovery import Install

    if isinstance(source, Install):
        installs: Sequence[Install] = (source,)
    else:
        where = os.fspath(source) if source is not None else None
        paths = [where if os.path.isdir(where) else os.path.dirname(where)] if where else []
        installs = find(paths, environ=env).installs
    best, rejected = choose_install(installs, wanted, given=source is not None)
    if best is None:
        where = f" in {os.fspath(source)}" if isinstance(source, (str, os.PathLike)) else ""
        raise LoadError(f"no loadable cuDNN{where}" + (f" matching {wanted.text}" if wanted else "") +
                        ("; rejected: " + "; ".join(rejected) if rejected else ": none installed"),
                        fix="pip install nvidia-cudnn-cu12 (or -cu13), or run `cudnnload doctor`")
    # an install passed over for a relative search path is said with the load too (Loaded.findings)
    passed = tuple(found for install in installs
                   if (found := through_relative_entry(install, source is not None)))
    if not passed or best.verdict is None:
        return best
    return replace(best, verdict=replace(best.verdict, findings=best.findings + passed))


def probe_files(install: Install) -> tuple[tuple[str, str], ...]:
    """(key, path) of the install's readable files, in load order: leaves first, shim last."""
    gen = generation(install.major)
    return tuple((lib.key, cand.path) for lib in gen.libraries
                 if (cand := install.file(lib.key)) is not None and cand.elf is not None)


def _prove(install: Install, env: Mapping[str, str], timeout: float) -> _Plan:
    files = probe_files(install)
    result = probe(files, install.major, environ=env, timeout=timeout)
    if not result.ok:
        raise LoadError(f"cuDNN {install.release} in {install.folder} fails in a child process: {result.verdict}",
                        path=install.folder, fix="run `cudnnload doctor` for the cause and the fix")
    skipped = tuple((key, path, step.note) for key, path in files
                    if (step := result.step(f"dlopen {key}")) is not None and not step.ok and step.expected)
    kept = tuple(f for f in files if f[0] not in {s[0] for s in skipped})
    release = result.release or install.release
    assert release is not None
    notes = tuple(f for f in install.all_findings if f.severity != "info")
    return _Plan(install.folder, install.major, release, kept, skipped, result.verdict, notes,
                 tuple(stamp(path) for _, path in kept) + tuple(stamp(path) for _, path, _ in skipped))


# --- the remembered verdicts ----------------------------------------------------
# JSON data in the cache folder (cudnnload.cachedir): a verdict is trusted only while it has the types
# _Plan declares, names a shim of a known generation, and every file it was proven on still has the same
# size, mtime, inode and device.

_PLAN_KINDS = {kind.__name__: kind for kind in (_Plan, Release, Finding, Consequence, Subject, Fix, Action, Code,
                                                Severity, SubjectKind, ActionKind, Effect)}


def _plan_file(env: Mapping[str, str]) -> str | None:
    return PLANS.path(env)


def _remembered(store: str | None, key: str) -> _Plan | None:
    if store is None:
        return None
    stored = read_entries(store, PLANS).get(("plans", key))
    plan: _Plan | None = None if stored is None else revive_entry(store, stored, "_Plan", _PLAN_KINDS, _unloadable)
    if plan is None:
        return None
    paths = [path for _, path in plan.files] + [path for _, path, _ in plan.skipped]
    try:
        if tuple(stamp(path) for path in paths) != plan.stamps:
            return None  # a file changed since it was proven
    except OSError:
        return None
    return plan


def _unloadable(plan: _Plan) -> str | None:
    """Why a verdict of the right types still cannot be what _prove made, or None."""
    try:
        known = {lib.key for lib in generation(plan.major).libraries}
    except ValueError as exc:
        return str(exc)
    keys = [key for key, _ in plan.files]
    if "shim" not in keys or not known.issuperset(keys):
        return f"a verdict for cuDNN {plan.major} that loads {', '.join(keys) or 'nothing'}"
    return None


def _remember(store: str, key: str, plan: _Plan) -> None:
    # merged with what other processes remembered; unwritable: the next process probes again
    write_entries(store, PLANS, {("plans", key): plain(plan)})


# --- loading here ---------------------------------------------------------------

def _refuse_mixing(plan: _Plan) -> None:
    """Refuse when a cuDNN from elsewhere is already mapped: its sonames would win over ours."""
    ours = {os.path.realpath(path) for _, path in plan.files}
    for mapped in mapped_libraries():
        name = os.path.basename(mapped)
        if name.startswith("libcudnn") and os.path.realpath(mapped) not in ours:
            raise LoadError(f"{mapped} is already loaded in this process (by another library), and cuDNN "
                            f"{plan.release} from {plan.folder} would mix with it: the linker hands the loaded "
                            f"copy to anyone asking for {name.split('.so')[0]}.so.{plan.major}",
                            path=mapped, fix="call cudnnload.load() before importing the framework that loaded "
                            "it, or load that same cuDNN")


def _load_here(plan: _Plan, observer: Callable[[str], None] | None) -> tuple[tuple[Stage, ...], CudnnApi]:
    stages: list[Stage] = []
    handles: dict[str, ctypes.CDLL] = {}
    mode = os.RTLD_NOW | os.RTLD_GLOBAL
    for key, path in plan.files:
        start = time.perf_counter()
        try:
            handles[key] = ctypes.CDLL(path, mode=mode)
        except OSError as exc:
            raise LoadError(f"dlopen failed in this process although it worked in the probe: {exc}", path=path,
                            fix="something changed the process environment; run `cudnnload doctor`") from None
        stages.append(Stage(f"dlopen {key}", time.perf_counter() - start))
        if observer is not None:
            observer(stages[-1].name)
    api = CudnnApi(handles["shim"], plan.major)
    for name in api.version_checks():
        function = api.optional(name)
        if function is None:
            continue
        start = time.perf_counter()
        status = function()
        stages.append(Stage(name, time.perf_counter() - start, status))
        if observer is not None:
            observer(name)
        check(status, name, api)
    return tuple(stages), api
