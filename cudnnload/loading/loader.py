"""Load one coherent cuDNN into this process, after proving in a child that it loads.

``load()`` takes the set `plans` chooses (the best install found, or the one given, within an
optional version range, judged as this process will hold it) and proves in a child process (a cuDNN 8
``abort()`` there becomes a verdict), then opens the same files here by absolute path with
``RTLD_GLOBAL``, leaves first, and runs every ``cudnn*VersionCheck``. Later loads by soname (PyTorch,
JAX, ONNX Runtime, the shim's own dlopen of a sub-library) then get these files: the linker returns an
already-loaded soname before any search (loading-in-the-wild §4). So another release first on
``LD_LIBRARY_PATH`` does not matter; another cuDNN already mapped here, or put in by ``LD_PRELOAD``,
does, and is refused naming it (`plans.held`).

The second call in a process returns the first result; 32 threads calling at
once share one load. Once the verdict is remembered, a new process skips the
search and the probe: it checks that every file still has the size, mtime and
inode the verdict was made on, and loads.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.errors import LoadError
from cudnnload.loading import pending
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.plans import Plan, held, proven, refuse
from cudnnload.loading.status import check
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.mapped import mapped_libraries
from cudnnload.resolve.versions import VersionRange
from cudnnload.verdicts import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudnnload.resolve.discovery import Install


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


_lock = threading.Lock()
_loaded: Loaded | None = None


def _forked() -> None:
    """In the child of a fork(): a thread that was loading is not there, and the lock it held is copied held
    (issue 29: the child's load() waited for ever). What the parent had loaded, the child has mapped and keeps;
    a load that was under way, the child makes again."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


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
    for_: str | Sequence[str] = (),
) -> Loaded:
    """Load a coherent cuDNN into this process (see the module docstring). Idempotent, thread-safe.

    ``source``: an install folder, a shim path, an :class:`Install`, or None for the best one
    found on the machine: with no source, one that every framework installed accepts (PyTorch, JAX, ONNX
    Runtime, TensorFlow: their build rules and their pins, `judge.choose.choose_for`). ``for_``: the
    framework(s) to choose for (``"torch"``, ``["torch", "jax"]``), also with a source. ``version``: a range
    such as ``">=9.1,<10"``.
    Raises LoadError (naming the files and the reason) when nothing suitable loads, or when another
    cuDNN is already mapped in this process or put in by LD_PRELOAD (naming it, and the entry); another
    release on LD_LIBRARY_PATH or in ld.so.cache does not matter, as every file is mapped by path.
    ``observer`` is called with each stage's name as it ends ("resolve", "dlopen graph",
    "cudnnGraphVersionCheck", ...): the hook ``cudnnload trace`` times them with.
    `cudnnload.preload` (cudnnload.dispatch.warmup) is this plus a warm-up of the application's first
    calls.
    """
    global _loaded
    wanted = VersionRange.parse(version) if version else None
    frameworks = (for_,) if isinstance(for_, str) else tuple(for_)
    env = dict(os.environ if environ is None else environ)
    if _loaded is None and not pending.wait(timeout):  # start() loading on another thread: use its result
        raise LoadError(f"cudnnload.start()'s load on another thread did not end within {timeout:g} s",
                        fix="see where it waits: `python -X faulthandler`, or `cudnnload doctor` for the install")
    with _lock:
        if _loaded is not None:
            _check_same(_loaded, source, wanted)
            _check_fits(_loaded, frameworks, source is not None, env)
        else:
            start = time.perf_counter()
            from cudnnload.loading.cudadriver import prepare_context

            prepare_context()  # the context (~230 ms) grows while the files are found and opened
            plan, _, notes, cached = proven(source, wanted, env, lambda files, release, folder: _vet(
                files, release, folder, env), frameworks=frameworks,
                use_cache=use_cache, timeout=timeout, notes=True)
            if observer is not None:
                observer("resolve")
            stages, api = _load_here(plan, observer)
            _loaded = Loaded(plan.folder, plan.major, plan.release, plan.files, plan.skipped, plan.verdict,
                             cached, notes, stages, time.perf_counter() - start, api)
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
        given = os.fspath(source)
        if not os.path.lexists(given):
            raise LoadError("no such file or folder", path=given)
        folder = given if os.path.isdir(given) else os.path.dirname(os.path.abspath(given))
        if os.path.realpath(folder) != os.path.realpath(current.folder):
            raise LoadError(f"cuDNN {current.release} from {current.folder} is already loaded in this process; "
                            f"refusing to load a second one from {given}",
                            fix="load one cuDNN per process")


def _check_fits(current: Loaded, frameworks: Sequence[str], given: bool, env: Mapping[str, str]) -> None:
    """A request for frameworks (``for_``) after a load is answered as the first load answers it: a name it does not
    know, or a framework not installed, refused (UsageError); the cuDNN already loaded refused where a framework's
    own rule refuses it (LoadError naming what it needs)."""
    if not frameworks:
        return
    from cudnnload.judge.choose import need
    from cudnnload.judge.frameworks import consumer_findings
    from cudnnload.loading.plans import frameworks_named

    for consumer in frameworks_named(frameworks, given, env):
        refused = [f for f in consumer_findings(consumer, current.release, current.major)
                   if f.severity is Severity.ERROR]
        if refused:
            raise LoadError(f"cuDNN {current.release or current.major} from {current.folder} is already loaded in "
                            f"this process, and {need(consumer)}: {refused[0].message}",
                            fix="name the frameworks before anything loads cuDNN, or restart the process")


# --- loading here ---------------------------------------------------------------

def _vet(files: tuple[tuple[str, str], ...], release: Release | None, folder: str,
         env: dict[str, str]) -> dict[str, str]:
    """Refuse a set this process cannot hold as its own: another cuDNN is mapped here already (the
    linker would hand it to anyone asking for its soname), or LD_PRELOAD puts one in (it is mapped here,
    and in the child that proves the set)."""
    refuse(held(files, release, folder, env, mapped_libraries()))
    return env


def _load_here(plan: Plan, observer: Callable[[str], None] | None) -> tuple[tuple[Stage, ...], CudnnApi]:
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
