"""``cudnnload trace``: where a cold process spends its time before the first cuDNN result.

Two subjects:
- our own path: N cold child processes, each timing its stages (interpreter start, import, the
  loader's resolve / dlopen / VersionCheck stages, CUDA context, ``cudnnCreate``, first and
  second convolution, first activation) and noting which libraries became mapped during each;
  ``--lazy`` (open the shim only, as frameworks do) against ``--preload`` (``cudnnload.load()``),
  ``--warm`` (``load(warmup=...)`` first) and ``--start`` (``cudnnload.start(warmup=...)`` as the
  first statement: the program's own stages, with the load and the warm-up in threads meanwhile).
- any program (``cudnnload trace -- python app.py``): run unmodified with cuDNN's API log on
  (apilog.py), the parent sampling the child's /proc/PID/maps to see when each library arrived.
A stage that cannot run here (no driver: ``cudnnCreate`` fails) ends the trace with cuDNN's
diagnosis instead of a traceback.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudnnload.children import isolated
from cudnnload.diagnose.apilog import ApiSummary, summarize
from cudnnload.diagnose.family import Killed, Survivor

# --- results ---------------------------------------------------------------------

@dataclass(frozen=True)
class StageStats:
    name: str
    ms: tuple[float, ...]  # one per run
    libraries: tuple[str, ...]  # mapped during this stage (first run), file names

    @property
    def min(self) -> float:
        return min(self.ms)

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    @property
    def max(self) -> float:
        return max(self.ms)


@dataclass(frozen=True)
class LoaderTrace:
    mode: str  # "lazy", "preload", "warm" or "start"
    runs: int
    stages: tuple[StageStats, ...]
    stopped: str | None  # why the trace ended early (cuDNN's diagnosis), or None
    total_ms: tuple[float, ...]  # process start to the last stage, per run


@dataclass(frozen=True)
class LibraryArrival:
    name: str
    at_ms: float  # since the program started, as sampled


@dataclass(frozen=True)
class ProgramTrace:
    command: tuple[str, ...]
    returncode: int
    wall_ms: float
    apis: tuple[ApiSummary, ...]
    libraries: tuple[LibraryArrival, ...]
    log_lines: int  # API calls cuDNN logged
    interrupted: str | None = None  # the signal that interrupted cudnnload while the program ran
    killed: tuple[Killed, ...] = ()  # the program's processes cudnnload ended, so that none outlives the run
    survivors: tuple[Survivor, ...] = ()  # those it could not end
    logs_lost: str | None = None  # why cuDNN's API log may be cut short (its file system filled up)


# --- our own path: the child ---------------------------------------------------------

def _mapped(pid: str = "self") -> set[str]:
    """File names of the CUDA-family libraries mapped in a process."""
    from cudnnload.resolve.mapped import mapped_libraries

    return {os.path.basename(path) for path in mapped_libraries(pid)}


class _Emitter:
    """Writes one JSON line per finished stage: its name, end time and the libraries it mapped."""

    def __init__(self) -> None:
        self.seen = _mapped()

    def __call__(self, stage: str, error: str | None = None) -> None:
        now = time.monotonic()
        mapped = _mapped()
        new, self.seen = sorted(mapped - self.seen), mapped
        print(json.dumps({"stage": stage, "t": now, "libs": new, "error": error}), flush=True)


def child_main(started: float) -> None:
    """The traced process (``python -c``): ``started`` is its first monotonic reading."""
    request = json.loads(sys.argv[1])
    print(json.dumps({"stage": "interpreter start", "t": started, "libs": [], "error": None}), flush=True)
    emit = _Emitter()
    import ctypes

    from cudnnload.errors import CudnnloadError
    from cudnnload.loading import loader, status
    from cudnnload.loading.capi import CudnnApi

    emit("import")
    if request["mode"] == "start":
        _started(request, emit)
        return
    try:
        if request["mode"] in ("preload", "warm"):
            api = loader.load(request["folder"], observer=emit).api
            if request["mode"] == "warm" and request.get("conv"):
                _warm(request["conv"], emit)
        else:
            shim = os.path.join(request["folder"], f"libcudnn.so.{request['major']}")
            emit("resolve")
            api = CudnnApi(ctypes.CDLL(shim, mode=os.RTLD_NOW | os.RTLD_GLOBAL), request["major"])
            emit("dlopen shim")
            api.cudnnGetVersion()
            emit("cudnnGetVersion")
        reason = _context()
        emit("CUDA context", reason)
        handle = ctypes.c_void_p()
        status.check(api.cudnnCreate(ctypes.byref(handle)), "cudnnCreate", api)
        emit("cudnnCreate")
    except CudnnloadError as exc:
        emit("stopped", exc.message)
        return
    if request.get("conv"):
        _convolutions(request["conv"], emit)


def _warm(spec: Mapping[str, object], emit: _Emitter) -> None:
    """preload(warmup=...) of the traced problem: what the application's start-up would pay."""
    from cudnnload.dispatch.warmup import Problem, preload

    n, c, k, size = (int(spec[key]) for key in ("n", "c", "k", "size"))  # type: ignore[call-overload]
    problem = Problem((n, c, size, size), (k, c, 3, 3), str(spec["dtype"]), padding=1, backend=str(spec["backend"]))
    warmed = preload(warmup=[problem]).warmup
    emit("warm-up (the convolution)", getattr(warmed, "error", None))


def _started(request: Mapping[str, object], emit: _Emitter) -> None:
    """cudnnload.start(warmup=[the traced convolution and ReLU]) as the program's first statement: the
    stages are the program's own (its imports and data, its calls); the load and the warm-up run in
    threads meanwhile, and the last stage waits for them to finish."""
    from cudnnload.dispatch.starting import start  # what cudnnload.start is
    from cudnnload.dispatch.warmup import Activation, Problem
    from cudnnload.errors import CudnnloadError

    spec = request.get("conv")
    warmup: list[Problem | Activation] = []
    if isinstance(spec, Mapping):
        n, c, k, size = (int(spec[key]) for key in ("n", "c", "k", "size"))
        dtype, backend = str(spec["dtype"]), str(spec["backend"])
        warmup = [Problem((n, c, size, size), (k, c, 3, 3), dtype, padding=1, backend=backend),
                  Activation((n, k, size, size), dtype, "relu")]
    starting = start(str(request["folder"]), warmup=warmup)
    emit("start() returned")
    if isinstance(spec, Mapping):
        _convolutions(spec, emit)
    try:
        warmed = starting.wait().warmup
    except CudnnloadError as exc:
        emit("stopped", exc.message)
        return
    emit("background load + warm-up done", getattr(warmed, "error", None))


def _context() -> str | None:
    """Create device 0's primary context explicitly; the reason when it cannot be (no driver)."""
    from cudnnload.errors import CudnnloadError
    from cudnnload.loading.gpu import checked, initialized_driver

    try:
        driver = initialized_driver()
        device = checked(driver, "cuDeviceGet", 0)
        context = checked(driver, "cuDevicePrimaryCtxRetain", device)
        checked(driver, "cuCtxSetCurrent", context)
    except CudnnloadError as exc:  # no driver, no device: cudnnCreate then says why, in cuDNN's words
        return exc.message
    return None


def _convolutions(spec: Mapping[str, object], emit: _Emitter) -> None:
    """The dispatcher and its plugins, the backend made ready, first and second convolution (plan,
    i.e. descriptors and algorithm choice, then the kernels) and a ReLU."""
    import numpy as np

    from cudnnload.dispatch import dispatcher as dispatch
    from cudnnload.dispatch.backends import PREFERENCE
    from cudnnload.dispatch.warmup import DeviceBuffer
    from cudnnload.errors import CudnnloadError
    from cudnnload.loading.gpu import synchronize

    emit("import dispatch (numpy, plugins)")
    n, c, k, size = (int(spec[key]) for key in ("n", "c", "k", "size"))  # type: ignore[call-overload]
    dtype, backend = str(spec["dtype"]), str(spec["backend"])
    host = {"float32": np.float32, "float16": np.float16}[dtype]
    try:
        rng = np.random.default_rng(0)  # uniform float32 draws: ten times faster than normal ones
        x = DeviceBuffer((n, c, size, size), dtype, (rng.random((n, c, size, size), np.float32) - 0.5).astype(host))
        w = DeviceBuffer((k, c, 3, 3), dtype, ((rng.random((k, c, 3, 3), np.float32) - 0.5) * 0.1).astype(host))
        y = DeviceBuffer((n, k, size, size), dtype)
        emit("inputs on the GPU")
        names = PREFERENCE if backend == "auto" else (backend,)
        ready = next((name for name in names if dispatch.registry().get(name)[0] is not None), backend)
        emit(f"backend ready ({ready})")
        for stage in ("first convolution (plan + kernels)", "second convolution"):
            dispatch.conv(x, w, padding=1, out=y, backend=backend)
            synchronize()
            emit(stage)
        dispatch.activation(y, "relu", out=y, backend=backend)
        synchronize()
        emit("first activation")
    except CudnnloadError as exc:
        emit("stopped", exc.message)


# The child imports nothing from the current folder and dies with its parent (argv[2]), SIGKILL included.
_BOOTSTRAP = isolated("import time\nt = time.monotonic()\nfrom cudnnload.children import die_with_parent\n"
                      "die_with_parent(int(sys.argv[2]))\nfrom cudnnload.diagnose.trace import child_main\n"
                      "child_main(t)\n")


# --- our own path: the parent ----------------------------------------------------------

def trace_loader(folder: str, major: int, *, mode: str = "preload", runs: int = 5,
                 conv: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None,
                 timeout: float = 300.0) -> LoaderTrace:
    """Run ``runs`` cold children through the stages; min/median/max per stage across them. Each child runs
    with no linker-variable entry that could give it a library someone else planted (as the probe's,
    `resolve.access.guarded_environment`)."""
    from cudnnload.resolve.access import guarded_environment

    env = guarded_environment(os.environ if environ is None else environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds cudnnload/
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    request = json.dumps({"mode": mode, "folder": folder, "major": major, "conv": dict(conv) if conv else None})
    per_run: list[list[_Record]] = []
    for _ in range(runs):
        spawned = time.monotonic()
        done = subprocess.run([sys.executable, "-c", _BOOTSTRAP, request, str(os.getpid())], env=env,
                              capture_output=True, text=True, timeout=timeout, cwd="/")
        records = _records(done.stdout, spawned)
        if not records:
            tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            return LoaderTrace(mode, 0, (), f"the traced process failed: {tail[0]}", ())
        per_run.append(records)
    first = per_run[0]
    stopped = next((r.error for r in first if r.stage == "stopped"), None)
    stages = tuple(
        StageStats(record.stage, tuple(r.ms for run in per_run for r in run if r.stage == record.stage),
                   record.libraries)
        for record in first if record.stage != "stopped")
    context_error = next((r.error for r in first if r.stage == "CUDA context" and r.error), None)
    if stopped and context_error:
        stopped = f"{stopped}; CUDA context: {context_error}"
    totals = tuple(sum(r.ms for r in run) for run in per_run)
    return LoaderTrace(mode, len(per_run), stages, stopped, totals)


@dataclass(frozen=True)
class _Record:
    stage: str
    ms: float  # since the previous stage ended (the first: since the process was spawned)
    libraries: tuple[str, ...]
    error: str | None


def _records(stdout: str, spawned: float) -> list[_Record]:
    records: list[_Record] = []
    previous = spawned
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue  # the program's own output
        raw = json.loads(line)
        records.append(_Record(str(raw["stage"]), (float(raw["t"]) - previous) * 1000, tuple(raw["libs"]),
                               raw["error"]))
        previous = float(raw["t"])
    return records


# --- any program ---------------------------------------------------------------------------

def trace_program(command: Sequence[str], *, environ: Mapping[str, str] | None = None,
                  sample_s: float = 0.01, json_out: bool = False) -> ProgramTrace:
    """Run ``command`` with cuDNN's API log on (every call, level 3: `observe.run`); per API, its first call
    against later ones, and when each library first showed in the process's maps. ``json_out``: the program's
    standard output onto standard error (the report is the JSON document on standard output)."""
    from cudnnload.diagnose.observe import run

    started_wall = time.time()
    ran = run(command, environ=environ, api_level=3, own_log=True, linker_log=False, sample_s=sample_s,
              json_out=json_out)
    calls = tuple(c for c in ran.api if c.process == ran.pid)
    arrivals: dict[str, float] = {}
    for path, ms in ran.arrivals.items():
        arrivals.setdefault(os.path.basename(path), ms)
    return ProgramTrace(tuple(command), ran.returncode if ran.returncode is not None else -9, ran.seconds * 1000,
                        summarize(calls, started_wall),
                        tuple(LibraryArrival(name, ms) for name, ms in sorted(arrivals.items(), key=lambda x: x[1])),
                        len(ran.api), ran.interrupted, ran.killed, ran.survivors, ran.logs_lost)


# --- text --------------------------------------------------------------------------------

def loader_text(traces: Sequence[LoaderTrace], width: int = 40) -> str:
    lines: list[str] = []
    for trace in traces:
        lines.append(f"{trace.mode}: {trace.runs} cold process(es); ms min / median / max; waterfall of medians")
        total = sum(s.median for s in trace.stages) or 1.0
        start = 0.0
        for stage in trace.stages:
            left = int(start / total * width)
            bar = max(1, int(stage.median / total * width))
            libs = ", ".join(stage.libraries)
            lines.append(f"  {stage.name:<32} {stage.min:8.1f} {stage.median:8.1f} {stage.max:8.1f}  "
                         f"{' ' * left}{'█' * bar}{' ' * max(0, width - left - bar)}  {libs}")
            start += stage.median
        if trace.total_ms:
            lines.append(f"  {'total (process start to last stage)':<32} {min(trace.total_ms):8.1f} "
                         f"{statistics.median(trace.total_ms):8.1f} {max(trace.total_ms):8.1f}")
        if trace.stopped:
            lines.append(f"  stopped: {trace.stopped}")
    return "\n".join(lines)


def program_text(trace: ProgramTrace) -> str:
    lines = [f"{shlex.join(trace.command)}: exit {trace.returncode}, {trace.wall_ms:.0f} ms, "
             f"{trace.log_lines} API calls logged"]
    if trace.apis:
        lines.append(f"  {'cuDNN API':<44} {'calls':>6} {'first at':>9} {'first ms':>9} {'later ms':>9}")
        for api in trace.apis:
            first = f"{api.first_ms:9.2f}" if api.first_ms is not None else f"{'-':>9}"
            later = f"{api.later_median_ms:9.3f}" if api.later_median_ms is not None else f"{'-':>9}"
            lines.append(f"  {api.function:<44} {api.calls:>6} {api.first_at_ms:9.1f} {first} {later}"
                         + (f"  ({api.errors} error)" if api.errors else ""))
    else:
        lines.append("  no cuDNN API call was logged (the program did not use cuDNN, or it was not loaded)")
    if trace.libraries:
        lines.append("  libraries, when first seen mapped (ms since start):")
        lines += [f"    {lib.at_ms:8.1f}  {lib.name}" for lib in trace.libraries]
    if trace.interrupted:
        lines.append(f"  interrupted by {trace.interrupted}: the trace covers the run until then")
    if trace.logs_lost:
        lines.append(f"  cuDNN's API log may be cut short: {trace.logs_lost}")
    lines += [f"  ended, so that it does not outlive the trace: pid {k.process.pid} ({k.process.command}): {k.why}, "
              f"{k.signal}" for k in trace.killed]
    lines += [f"  could not be ended, may still run: pid {s.process.pid} ({s.process.command}): {s.reason}"
              for s in trace.survivors]
    return "\n".join(lines)


PLOT_FORMATS = (".png", ".svg")


def plot(traces: Sequence[LoaderTrace], path: str) -> None:
    """A waterfall of median stage times to PNG or SVG (matplotlib, the ``plot`` extra), as the name of
    ``path`` says, written as a report is (`files.write_output`: whole or not at all, never through a link
    or onto a device). OutputError when it cannot be written."""
    import io

    from cudnnload.files import write_output

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from cudnnload.errors import CannotRun

        raise CannotRun("--plot needs matplotlib", fix="pip install 'cudnnload[plot]'") from None
    figure, axes = plt.subplots(len(traces), 1, figsize=(10, 0.35 * sum(len(t.stages) for t in traces) + 1.5),
                                squeeze=False)
    for ax, trace in zip(axes[:, 0], traces, strict=True):
        start = 0.0
        for row, stage in enumerate(trace.stages):
            ax.barh(row, stage.median, left=start)
            start += stage.median
        ax.set_yticks(range(len(trace.stages)), [s.name for s in trace.stages])
        ax.invert_yaxis()
        ax.set_xlabel("ms since process start (medians)")
        ax.set_title(f"cudnnload trace --{trace.mode}")
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format=os.path.splitext(path)[1].lower().lstrip("."))
    write_output(path, image.getvalue())
