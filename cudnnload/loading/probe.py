"""Load a cuDNN set in a child process and report what happened, whatever happens.

The cuDNN 8 shim calls abort() when a sub-library cannot be loaded, and the v9
shim aborts when libcudnn_graph is missing (../shared/reference/cudnn-facts.md
§1.2); neither can be caught in Python, so every real load is tried here first.

Parent side: `probe` starts ``python -I -S -c <bootstrap>`` with a JSON request
on stdin and turns the child's answer, its death by a signal, or a timeout into
a `ProbeResult`; it never raises for what happens in the child. It runs nothing
someone other than root and the user could have put in its way (issue 29): a
requested file such a person can change is refused before any child starts
(outcome ``refused``), and the child runs in ``/`` with every linker-variable
entry that could give it such a file left out (`resolve.access.guarded_environment`:
an empty or relative LD_LIBRARY_PATH entry, a folder others can add to).

Child side (`child_main`): dlopen each file by absolute path, in the given
order (leaves first, shim last), with RTLD_GLOBAL, timing each; then through
the shim the version getters, cudnnGetProperty, every VersionCheck of the
generation the shim exports, and optionally cudnnCreate. Each step is written
as one JSON line on a private copy of stdout as soon as it ends, so a crash
loses only the step that crashed. Before each step the child writes a marker
on stderr, which attributes what cuDNN prints there ("Invalid handle. Cannot
load symbol ...", "Could not load library ...") to the step that printed it.
The child imports only the standard library and cudnnload's catalog, errors,
capi and children: the bootstrap skips cudnnload/__init__.py and what it
re-exports; and it dies with the thread that started it, SIGKILL included
(`children.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from cudnnload.loading.capi import CudnnApi, LibraryProperty
from cudnnload.resolve.catalog import Generation, Release, decode_version, generation
from cudnnload.resolve.mapped import mapped_libraries

if TYPE_CHECKING:
    from cudnnload.judge.consequences import Observed
    from cudnnload.resolve.elfcache import ElfCache

Outcome = Literal["completed", "signal", "timeout", "error", "refused"]

_MARKER = "\x1e"  # ASCII record separator: starts a step marker line on the child's stderr
_MARKERS = re.compile(_MARKER + r"([^\n]*)\n")
_NO_DRIVER = "no NVIDIA driver (libcuda.so.1)"
_TENSOR, _HEURISTIC = 17, 4  # CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR (cudnn_graph.h)

# Installs a bare `cudnnload` package object so that importing cudnnload.loading.probe
# does not run cudnnload/__init__.py and whatever it re-exports.
# It dies with the thread that started it, even of SIGKILL (`children.die_with_parent`: argv[2], the parent).
_BOOTSTRAP = """\
import sys, types
package = types.ModuleType("cudnnload")
package.__path__ = [sys.argv[1]]
sys.modules["cudnnload"] = package
from cudnnload.children import die_with_parent
die_with_parent(int(sys.argv[2]))
from cudnnload.loading.probe import child_main
sys.exit(child_main())
"""


@dataclass(frozen=True)
class ProbeStep:
    """One dlopen or one C call in the child."""

    name: str  # "dlopen graph", "cudnnGetVersion", "cudnnGetProperty(MAJOR_VERSION)", "cudnnOpsVersionCheck"
    ok: bool
    seconds: float
    status: int | None = None  # cudnnStatus_t, for calls that return one
    status_name: str | None = None  # from the catalog table of the probed generation
    value: int | None = None  # what a getter returned
    detail: str = ""  # dlerror text, or cuDNN's last error string
    expected: bool = False  # failed, but normal on this machine; `note` says why
    note: str = ""
    stderr: str = ""  # what the libraries printed on stderr during this step
    exported: bool = True  # False: the shim does not have this function, and it was not called


@dataclass(frozen=True)
class ProbeResult:
    major: int
    files: tuple[tuple[str, str], ...]  # (catalog key, path) as requested, in load order
    outcome: Outcome
    verdict: str  # one line for people
    steps: tuple[ProbeStep, ...]
    mapped: tuple[str, ...]  # mapped_libraries() of the child at the end
    not_exported: tuple[str, ...]  # optional functions of the generation the shim lacks
    died_in: str | None  # the step running when the child died or ran out of time
    returncode: int | None
    signal: str | None  # "SIGABRT", "SIGSEGV", ...
    stderr: str  # the child's whole stderr, markers removed
    seconds: float  # round trip, child start to answer
    remembered: bool = False  # the answer of an earlier run, its files, host, boot and environment unchanged

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"

    @property
    def failures(self) -> tuple[ProbeStep, ...]:
        """Steps that failed and are not expected to on this machine."""
        return _unexpected(self.steps)

    @property
    def ok(self) -> bool:
        return self.completed and not self.failures

    def step(self, name: str) -> ProbeStep | None:
        return next((step for step in self.steps if step.name == name), None)

    @property
    def release(self) -> Release | None:
        version = self.step("cudnnGetVersion")
        return None if version is None or not version.value else decode_version(version.value)

    def observed(self, gen: Generation) -> Observed:
        """This run of the application-mode probe, as the prediction's terms put it (str(call) -> result)."""
        from cudnnload.judge.consequences import CallResult, Observed  # the parent's only: the child stays lean

        calls = {call.function: str(call) for call in gen.exercise}
        results: dict[str, CallResult] = {}
        for step in self.steps:
            if step.name == "dlopen shim":
                results["dlopen"] = CallResult("ok") if step.ok else CallResult("error", text=step.detail)
            elif step.name in calls and not step.exported:
                results[calls[step.name]] = CallResult("missing-symbol")
            elif step.name in calls:
                results[calls[step.name]] = CallResult("status", step.status) if step.status is not None \
                    else CallResult("value", step.value)
        results.update({calls[name]: CallResult("missing-symbol") for name in self.not_exported if name in calls})
        died = calls.get(self.died_in or "") if self.signal else None
        printed = tuple(line for step in self.steps for line in step.stderr.splitlines()) + tuple(
            self.stderr.splitlines())
        return Observed(results, died, self.signal, tuple(line for line in printed if line.strip()))


def probe(files: Sequence[tuple[str, str | os.PathLike[str]]], major: int, *, create: bool = False,
          app: bool = False, timeout: float = 60.0, environ: Mapping[str, str] | None = None,
          memo: ElfCache | None = None) -> ProbeResult:
    """Load ``files`` (catalog key, path) in order in a child process and call through the ``shim`` entry.

    Two requests: load()'s proof (every file by absolute path, leaves first; the getters, every
    VersionCheck, and with ``create`` cudnnCreate), or with ``app`` what an application does: the
    shim alone (``files`` is just it), whose own dlopen then gets each sub-library, and the catalog's
    exercise of the generation, call by call (`cudnnload.judge.consequences` predicts each).
    ``environ`` is the child's whole environment (default: this process's); LD_LIBRARY_PATH in it
    decides where the shim's own dlopen calls look. ``memo``: the answer is remembered there and given again,
    without a child, while every file the child mapped, the host and its boot, glibc, the linker's cache and
    folders (`cachedir.proven_under`) and the environment the child ran in are as they were (`remembered` says so).
    """
    import subprocess  # here rather than at the top: the child imports this module and never needs it

    from cudnnload.resolve.access import Access, guarded_environment

    requested = tuple((key, os.path.abspath(path)) for key, path in files)  # the child runs in /
    access = Access()
    refused = next(((path, why) for _, path in requested if (why := access.replaceable(path)) is not None), None)
    if refused is not None:
        return ProbeResult(major, requested, "refused", f"not run: {refused[1].why}; cudnnload maps no library "
                           "someone other than root and you can change", (), (), (), None, None, None, "", 0.0)
    request = json.dumps({"files": requested, "major": major, "create": create, "app": app}).encode()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cudnnload/
    command = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, package, str(os.getpid())]
    env = guarded_environment(os.environ if environ is None else environ, access)
    key = _memo_key(request, env) if memo is not None else None
    known = _recalled(memo, key, major, requested, timeout) if memo is not None and key is not None else None
    if known is not None:
        return known
    start = time.perf_counter()
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=env, cwd="/")
    except OSError as exc:
        return _result(major, requested, b"", f"could not start {sys.executable}: {exc}".encode(), None, False,
                       timeout, 0.0)
    try:
        out, err = child.communicate(request, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        child.kill()
        try:
            out, err = child.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # something the child started still holds its pipes
            out, err = b"", b""
        timed_out = True
    result = _result(major, requested, out, err, child.returncode, timed_out, timeout, time.perf_counter() - start)
    if memo is not None and key is not None and not timed_out:
        _remember(memo, key, result, out, err)
    return result


# What the child's answer depends on in its environment besides its files: the linker's and CUDA's variables.
_DECIDING = ("LD_", "CUDA", "CUDNN", "NVIDIA", "__NV", "__GL")


def _memo_key(request: bytes, env: Mapping[str, str]) -> tuple[str, ...]:
    from cudnnload.cachedir import proven_under

    deciding = sorted((k, v) for k, v in env.items() if k.startswith(_DECIDING))
    return ("probe", sys.executable, request.decode(), json.dumps(deciding), *proven_under(env))


def _stamps(paths: Sequence[str]) -> list[list[object]] | None:
    from cudnnload.cachedir import stamp

    try:
        return [[path, *stamp(path)] for path in dict.fromkeys(paths)]
    except OSError:
        return None


def searched_folders(paths: Sequence[str], memo: ElfCache | None = None) -> list[str]:
    """The folders where a file that the libraries at ``paths`` look for by name could appear and change what
    loading them does: each one's folder and the folders its RUNPATH or RPATH names (expanded as the linker expands
    them, from the file as given and as resolved), and the system's library folders, which the linker searches after
    those, without ldconfig. A file added there moves the folder's change time; a folder that comes into being (a
    wheel installed since) is one that was absent (`cachedir.stamped`)."""
    from cudnnload.errors import ElfError
    from cudnnload.resolve.discovery import SYSTEM_LIBRARY_FOLDERS
    from cudnnload.resolve.elfcache import ElfCache
    from cudnnload.resolve.linker import LinkerDefaults, Requester, expand_all

    reader = memo if memo is not None else ElfCache(None)
    folders: list[str] = []
    for path in paths:
        opened = dict.fromkeys((path, os.path.realpath(path)))
        folders += [os.path.dirname(name) for name in opened]
        try:
            info = reader.inspect(os.path.realpath(path))
        except (OSError, ElfError):
            continue
        folders += [os.path.normpath(folder) for name in opened
                    for folder in expand_all(info.runpath or info.rpath, Requester.from_elf(name, info),
                                             LinkerDefaults()) if folder]
    return list(dict.fromkeys((*folders, *SYSTEM_LIBRARY_FOLDERS)))


def _siblings(paths: Iterable[str]) -> list[str]:
    """The cuDNN libraries beside each requested file: the sub-libraries its shim dlopens by name, which a load that
    failed unmaps again (their RUNPATH says where what they need is looked for)."""
    from cudnnload.resolve.catalog import classify_bundled

    found: list[str] = []
    for folder in dict.fromkeys(os.path.dirname(path) for path in paths):
        with contextlib.suppress(OSError):
            found += sorted(os.path.join(folder, name) for name in os.listdir(folder) if classify_bundled(name))
    return found


def _folder_stamps(folders: Sequence[str]) -> list[list[str]]:
    from cudnnload.cachedir import stamped

    return [[folder, stamped(folder)] for folder in folders]


def _remember(memo: ElfCache, key: tuple[str, ...], result: ProbeResult, out: bytes, err: bytes) -> None:
    stamps = _stamps([path for _, path in result.files] + list(result.mapped))
    if stamps is not None:
        folders = _folder_stamps(searched_folders([path for _, path in result.files] + list(result.mapped)
                                           + _siblings(path for _, path in result.files), memo))
        memo.remember(key, json.dumps({"out": out.decode("latin-1"), "err": err.decode("latin-1"),
                                       "rc": result.returncode, "seconds": result.seconds, "stamps": stamps,
                                       "folders": folders}))


def _recalled(memo: ElfCache, key: tuple[str, ...], major: int, files: tuple[tuple[str, str], ...],
              timeout: float) -> ProbeResult | None:
    """The remembered answer to the same request, while every file it mapped is unchanged (`cachedir.stamp`), and
    every folder where a file it looked for could appear (`searched_folders`): a fix that puts the missing library there
    (a link beside cuBLASLt, a wheel installed) is seen at once, never the crash remembered from before it."""
    text = memo.recall(key, "str")
    try:
        known = json.loads(text) if isinstance(text, str) else None
        if not isinstance(known, dict) or _stamps([str(row[0]) for row in known["stamps"]]) != known["stamps"] or \
                _folder_stamps([str(row[0]) for row in known["folders"]]) != known["folders"]:
            return None  # a file it mapped changed, or one it may have looked for came or went
        result = _result(major, files, known["out"].encode("latin-1"), known["err"].encode("latin-1"), known["rc"],
                         False, timeout, float(known["seconds"]))
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return replace(result, remembered=True)


def _result(major: int, files: tuple[tuple[str, str], ...], out: bytes, err: bytes, returncode: int | None,
            timed_out: bool, timeout: float, seconds: float) -> ProbeResult:
    """Read the child's two streams and its exit into a result."""
    records = _records(out)
    pieces = _MARKERS.split(err.decode(errors="replace"))
    # pieces = [before the first marker, name 1, text 1, name 2, text 2, ...]; marker i begins step i.
    began, printed = pieces[1::2], [text.strip() for text in pieces[2::2]]
    steps = tuple(ProbeStep(**{**record["step"], "stderr": printed[i]})
                  for i, record in enumerate(record for record in records if "step" in record))
    end = next((record["end"] for record in records if "end" in record), None)
    died_in = began[len(steps)] if len(began) > len(steps) else None
    sig = signal.Signals(-returncode).name if returncode is not None and returncode < 0 and not timed_out else None
    stderr = "".join(pieces[0::2]).strip()
    outcome: Outcome
    if timed_out:
        outcome, verdict = "timeout", f"no answer within {timeout:g} s; stuck in {died_in or 'start-up'}"
    elif sig:
        # The dying step's last words, e.g. the v8 shim's "Could not load library ..." (§1.2).
        last_words = printed[len(steps)].splitlines()[-1:] if died_in else []
        outcome, verdict = "signal", f"child killed by {sig} during {died_in or 'start-up'}" + "".join(
            f": {line}" for line in last_words)
    elif end is not None and returncode == 0:
        outcome, verdict = "completed", _completed_verdict(steps)
    else:
        outcome = "error"
        verdict = f"child failed (exit status {returncode})" + "".join(f": {line}" for line in stderr.splitlines()[-1:])
    return ProbeResult(
        major=major, files=files, outcome=outcome, verdict=verdict, steps=steps,
        mapped=tuple(end["mapped"]) if end else (), not_exported=tuple(end["not_exported"]) if end else (),
        died_in=died_in, returncode=returncode, signal=sig, stderr=stderr, seconds=seconds)


def _records(out: bytes) -> list[dict[str, Any]]:
    """The child's JSON lines; a line cut short by a kill is dropped."""
    records = []
    for line in out.decode(errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _unexpected(steps: tuple[ProbeStep, ...]) -> tuple[ProbeStep, ...]:
    return tuple(step for step in steps if not step.ok and not step.expected)


def _completed_verdict(steps: tuple[ProbeStep, ...]) -> str:
    failed = _unexpected(steps)
    expected = [step for step in steps if step.expected]
    text = f"completed, {len(failed)} failure(s)"
    if failed:
        text += ": " + "; ".join(_describe(step) for step in failed)
    if expected:
        text += f" ({len(expected)} expected here: " + "; ".join(f"{step.name}: {step.note}" for step in expected) + ")"
    return text


def _describe(step: ProbeStep) -> str:
    what = step.status_name and f"{step.status_name} ({step.status})"
    return f"{step.name}: " + ", ".join(part for part in (what, step.detail) if part)


# ---- child side -------------------------------------------------------------------------------------------


class _Child:
    """Runs one request: each step writes its marker, does its work, then emits one JSON line."""

    def __init__(self, major: int) -> None:
        self.generation = generation(major)
        self.results = os.dup(1)
        os.dup2(2, 1)  # anything cuDNN prints on stdout (CUDNN_LOGDEST_DBG=stdout) joins the captured stderr

    def begin(self, name: str) -> float:
        os.write(2, f"{_MARKER}{name}\n".encode())
        return time.perf_counter()

    def emit(self, record: dict[str, object]) -> None:
        os.write(self.results, (json.dumps(record) + "\n").encode())

    def finish(self, step: ProbeStep) -> None:
        self.emit({"step": asdict(step)})

    def dlopen(self, key: str, path: str) -> ctypes.CDLL | None:
        name = f"dlopen {key}"
        started = self.begin(name)
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as exc:
            seconds = time.perf_counter() - started
            note = _expected_failure(str(exc))
            self.finish(ProbeStep(name, False, seconds, detail=str(exc), expected=bool(note), note=note))
            return None
        self.finish(ProbeStep(name, True, time.perf_counter() - started))
        return handle

    def getter(self, api: CudnnApi, name: str) -> None:
        """A ``size_t f(void)`` version getter."""
        started = self.begin(name)
        value = int(api.symbol(name)())
        self.finish(ProbeStep(name, True, time.perf_counter() - started, value=value))

    def call(self, api: CudnnApi, name: str, function: str, *args: object, out: ctypes.c_int | None = None) -> int:
        """A call returning cudnnStatus_t; ``out`` is an int it writes through a pointer.
        On failure the detail is cuDNN's last error string."""
        started = self.begin(name)
        status = int(api.symbol(function)(*args))
        seconds = time.perf_counter() - started
        self.finish(ProbeStep(name, status == 0, seconds, status=status,
                              status_name=self.generation.status_name(status), value=None if out is None else out.value,
                              detail="" if status == 0 else api.last_error() or ""))
        return status

    def run(self, files: list[tuple[str, str]], create: bool, app: bool) -> None:
        if create or app:  # cudnnCreate will need the driver: it starts while cuDNN loads (they overlap)
            import threading

            threading.Thread(target=_start_driver, daemon=True).start()
        shim = None
        for key, path in files:
            handle = self.dlopen(key, path)
            if key == "shim":
                shim = handle
        not_exported: list[str] = []
        if shim is not None:
            api = CudnnApi(shim, self.generation)
            not_exported = self.exercise(api) if app else self.calls(api, create)
        self.emit({"end": {"mapped": mapped_libraries(), "not_exported": not_exported}})

    def exercise(self, api: CudnnApi) -> list[str]:
        """What an application does (the catalog's `Generation.exercise`), through the shim alone: it opens
        its sub-libraries itself, as it would for a framework; returns the calls the shim lacks."""
        missing: list[str] = []
        for call in self.generation.exercise:
            try:
                function = api.library[call.function]
            except AttributeError:
                missing.append(call.function)
                self.begin(call.function)  # every step has its marker: stderr is attributed by their order
                self.finish(ProbeStep(call.function, True, 0.0, exported=False))
                continue
            started = self.begin(call.function)
            value, status = self.run_call(api, call.kind, call.function, function)
            seconds = time.perf_counter() - started
            if status is None:
                self.finish(ProbeStep(call.function, True, seconds, value=value))
            else:
                healthy = self.generation.status_code(call.healthy) if call.healthy else 0
                detail = api.last_error() or "" if status not in (0, healthy) and self.generation.major == 9 else ""
                self.finish(ProbeStep(call.function, status in (0, healthy), seconds, status=status,
                                      status_name=self.generation.status_name(status), detail=detail))
            if call.kind == "version":  # the other getters, while graph (ops_infer) is loaded
                for name in ("cudnnGetCudartVersion", "cudnnGetMaxDeviceVersion"):
                    if api.exports(name):
                        self.getter(api, name)
        return missing

    @staticmethod
    def run_call(api: CudnnApi, kind: str, name: str, function: Any) -> tuple[int | None, int | None]:
        """(value, status) of one exercise call; descriptors and handles made are destroyed."""
        pointer = ctypes.c_void_p()
        if kind == "version":
            function.restype, function.argtypes = ctypes.c_size_t, ()
            return int(function()), None
        function.restype = ctypes.c_int
        if kind == "check":
            function.argtypes = ()
            return None, int(function())
        if kind == "create":
            function.argtypes = (ctypes.POINTER(ctypes.c_void_p),)
            status = int(function(ctypes.byref(pointer)))
            if status == 0 and name == "cudnnCreate":
                api.symbol("cudnnDestroy")(pointer)
            return None, status
        # finalize, heuristic: the graph API's descriptors
        create = api.library["cudnnBackendCreateDescriptor"]
        create.restype, create.argtypes = ctypes.c_int, (ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
        status = int(create(_HEURISTIC if kind == "heuristic" else _TENSOR, ctypes.byref(pointer)))
        if status == 0 and kind == "finalize":
            function.argtypes = (ctypes.c_void_p,)
            status = int(function(pointer))
        if pointer.value:
            destroy = api.library["cudnnBackendDestroyDescriptor"]
            destroy.restype, destroy.argtypes = ctypes.c_int, (ctypes.c_void_p,)
            destroy(pointer)
        return None, status

    def calls(self, api: CudnnApi, create: bool) -> list[str]:
        """Every call of the request, in order; returns the optional functions the shim lacks."""
        missing = [name for name in ("cudnnGetMaxDeviceVersion", *api.version_checks()) if not api.exports(name)]
        for name in ("cudnnGetVersion", "cudnnGetCudartVersion", "cudnnGetMaxDeviceVersion"):
            if name not in missing:
                self.getter(api, name)
        for kind in LibraryProperty:
            value = ctypes.c_int(-1)
            self.call(api, f"cudnnGetProperty({kind.name})", "cudnnGetProperty", kind, ctypes.byref(value), out=value)
        for name in api.version_checks():
            if name not in missing:
                self.call(api, name, name)
        if create:
            handle = ctypes.c_void_p()
            # cuDNN 8 has no cudnnGetLastErrorString: its reason comes through the error callback (capi).
            with api.record_errors():
                if self.call(api, "cudnnCreate", "cudnnCreate", ctypes.byref(handle)) == 0:
                    self.call(api, "cudnnDestroy", "cudnnDestroy", handle)
        return missing


def _start_driver() -> None:
    """``cuInit`` and device 0's primary context, as cudnnCreate's first act would make them (~200 ms on an
    H200): begun in a thread at the child's start, they overlap the shim's loads and version checks, which
    need no driver. The same driver library the process's own search gives cuDNN (by name, libcuda.so.1);
    nothing when there is none: cudnnCreate then meets that itself."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        device, context = ctypes.c_int(), ctypes.c_void_p()
        if driver.cuInit(0) == 0 and driver.cuDeviceGet(ctypes.byref(device), 0) == 0:
            driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    except (OSError, AttributeError):
        return


def _expected_failure(error: str) -> str:
    """Why a dlopen failure is normal here, or "" when it is not.

    9.28's libcudnn_engines_runtime_compiled.so.9 DT_NEEDs libcuda.so.1, which
    only the NVIDIA driver provides (§1 notes, §6): on a machine without one
    that library cannot load, and that says nothing about the install.
    """
    if not error.startswith("libcuda.so.1: cannot open shared object file"):
        return ""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return _NO_DRIVER
    return ""


def child_main() -> int:
    """Entry point of the child: a JSON request on stdin, JSON lines out (see the module docstring)."""
    request = json.load(sys.stdin)
    _Child(request["major"]).run([(key, path) for key, path in request["files"]], bool(request["create"]),
                                 bool(request.get("app")))
    return 0


if __name__ == "__main__":  # python -m cudnnload.loading.probe < request.json
    sys.exit(child_main())
