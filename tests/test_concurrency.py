"""Concurrency and faults: processes sharing a cold cache while one dies mid-write, threads sharing one load
and one dispatcher, a backend plugin that is missing, and the watchdog that keeps every test from hanging.

Each test starts its threads or processes together (a barrier, or a file they wait for) and bounds every
wait, so that a regression fails in seconds, naming what it waited for, instead of hanging the suite.
The GPU variant (``-m gpu``) runs in a child process, as the other GPU tests do (tests/gpu.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cudnnload.dispatch.backends import ConvSpec, Registry
from cudnnload.dispatch.dispatcher import Dispatcher
from cudnnload.dispatch.errors import UnsupportedError
from cudnnload.dispatch.runtime import LockTimeout, PlanningLock
from cudnnload.dispatch.tensors import _make, contiguous_strides
from cudnnload.resolve.elf import read_elf
from cudnnload.resolve.elfcache import ElfCache, cache_file
from tests import gpu
from tests.test_starting import _QUICK as QUICK_PLAN_SCRIPT
from tests.wheels import lib_folder, python_path

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 30.0  # the longest any step here waits for a child or a thread; far under the watchdog's minute


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "CUDNNLOAD_CACHE": str(cache), "PYTHONPATH": python_path(REPO), **extra}


def _python(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=WAIT_S, check=False)


def _wait_for(paths: Callable[[], list[Path]], count: int, what: str, children: list[subprocess.Popen[str]]) -> None:
    """Until ``paths()`` lists ``count`` files: what the children create to say where they are."""
    deadline = time.monotonic() + WAIT_S
    while len(paths()) < count:
        ended = [child for child in children if child.poll() is not None]
        if ended:
            pytest.fail(f"a child ended before {what}: {ended[0].communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no child reached {what} in {WAIT_S:g} s")
        time.sleep(0.01)


# --- processes sharing a cold cache, one killed while it writes -------------------------------------------

# Says it is waiting (a file named after its pid), waits for the gate file, then runs `cudnnload inspect --json
# FOLDER` as the command line does. "killed": passes the gate at once, and its first write into the cache
# folder (cachedir.write_json's json.dump of the ELF memo) stops half-way, says so with a file, and sleeps
# until the test kills it.
_INSPECT = r"""
import json, os, runpy, sys, time
gate, mode, folder, cache = sys.argv[1:5]
if mode == "killed":
    whole_dump = json.dump
    def dump(content, handle, **options):
        if not os.readlink(f"/proc/self/fd/{handle.fileno()}").startswith(cache):
            return whole_dump(content, handle, **options)
        text = json.dumps(content, **options)
        handle.write(text[:len(text) // 2])
        handle.flush()
        os.fsync(handle.fileno())
        open(gate + ".half-written", "w").close()
        time.sleep(120)
    json.dump = dump
else:
    open(f"{gate}.{os.getpid()}.waiting", "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            sys.exit("the gate never opened")
        time.sleep(0.002)
sys.argv = ["cudnnload", "inspect", "--json", folder]
runpy.run_module("cudnnload", run_name="__main__", alter_sys=True)
"""


def test_eight_cold_inspections_with_one_killed_mid_write_leave_a_memo_that_gives_the_uncached_answer(
        tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    cache, gate = tmp_path / "cache", tmp_path / "gate"
    env = _env(cache)
    uncached = subprocess.run([sys.executable, "-m", "cudnnload", "inspect", "--json", "--no-cache", folder], env=env,
                              capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert uncached.stdout and not cache.exists()

    def start(mode: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", _INSPECT, str(gate), mode, folder, str(cache)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    killed = start("killed")  # cold: nobody has written yet
    try:
        _wait_for(lambda: list(tmp_path.glob("gate.half-written")), 1, "the half-written memo", [killed])
        others = [start("whole") for _ in range(7)]
        _wait_for(lambda: list(tmp_path.glob("gate.*.waiting")), 7, "the gate", [killed, *others])
        gate.touch()  # all eight alive at once: seven set off together, one stopped inside its write
        killed.send_signal(signal.SIGKILL)
        ends = [child.communicate(timeout=WAIT_S) for child in others]
    finally:
        killed.kill()
        killed.communicate(timeout=WAIT_S)

    assert killed.returncode == -signal.SIGKILL
    for child, (out, err) in zip(others, ends, strict=True):
        assert (child.returncode, out) == (uncached.returncode, uncached.stdout), err[-3000:]
    memo = cache_file({"CUDNNLOAD_CACHE": str(cache)})
    assert memo is not None and json.loads(Path(memo).read_text())["entries"]
    halves = list(cache.glob(".tmp-*"))  # the killed writer's temporary file:
    assert len(halves) == 1  # the proof that it died inside its write
    with pytest.raises(ValueError):
        json.loads(halves[0].read_text())
    remembered = ElfCache(memo)
    libraries = sorted(str(path) for path in Path(folder).glob("libcudnn*.so.9"))
    assert [remembered.inspect(path) for path in libraries] == [read_elf(path) for path in libraries]
    assert remembered.dirty is False  # every file came from the memo, none was read again

    again = subprocess.run([sys.executable, "-m", "cudnnload", "inspect", "--json", folder], env=env,
                           capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert (again.returncode, again.stdout, again.stderr) == (uncached.returncode, uncached.stdout, "")
    assert halves[0].exists()  # left there, and harmless: nothing reads a temporary name


# --- threads sharing one load --------------------------------------------------------------------------------

# Counts the child probes (probe.probe, which plans imports when it proves a set) and the dlopens of files in
# the folder (ctypes.CDLL), and collects the load's stages through an observer every thread passes: only the
# thread that loads calls it.
_THIRTY_TWO = r"""
import ctypes, json, sys, threading
import cudnnload
import cudnnload.loading.loader as loader
import cudnnload.loading.probe as prober
folder = sys.argv[1]
probes, opened, stages, errors = [], [], [], []
probe = prober.probe
def counted_probe(*args, **kwargs):
    probes.append(threading.current_thread().name)
    return probe(*args, **kwargs)
prober.probe = counted_probe
class CountedCDLL(ctypes.CDLL):
    def __init__(self, name, *args, **kwargs):
        if str(name).startswith(folder):
            opened.append(str(name))
        super().__init__(name, *args, **kwargs)
ctypes.CDLL = CountedCDLL
barrier = threading.Barrier(32, timeout=20)
results = [None] * 32
def load(index):
    try:
        barrier.wait()
        results[index] = cudnnload.load(folder, observer=stages.append)
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=load, args=(index,), name=f"loader-{index}", daemon=True) for index in range(32)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(20)
first = results[0]
print(json.dumps({"running": sum(thread.is_alive() for thread in threads), "errors": errors,
                  "distinct": len({id(result) for result in results}), "missing": results.count(None),
                  "all_loaded": all(result is loader.loaded() for result in results), "probes": probes,
                  "opened": opened, "stages": stages, "cached": first and first.verdict_cached,
                  "files": first and [path for _, path in first.files]}))
"""


def test_thirty_two_threads_loading_at_once_share_one_probe_and_one_set_of_dlopens(tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))

    child = _python(_THIRTY_TWO, folder, env=_env(tmp_path / "cache"))

    assert child.returncode == 0, child.stderr[-3000:]
    out = json.loads(child.stdout.strip().splitlines()[-1])
    assert (out["running"], out["errors"], out["missing"]) == (0, [], 0), out
    assert out["distinct"] == 1 and out["all_loaded"], out  # one Loaded object, the process's
    assert len(out["probes"]) == 1 and out["cached"] is False, out  # proven once, in one child (a cold cache)
    assert out["opened"] == out["files"], out  # each file opened once, in load order
    dlopens = [stage for stage in out["stages"] if stage.startswith("dlopen ")]
    assert len(dlopens) == len(out["files"]) == len(set(dlopens)), out
    assert out["stages"].count("resolve") == 1, out


# --- threads sharing one dispatcher -------------------------------------------------------------------------

def _problems() -> list[tuple[str, dict[str, Any], tuple[np.ndarray, ...]]]:
    """(name, keyword arguments, arrays) of convolutions and activations that differ in one thing each, so
    that a plan of one problem used for another gives another shape or other numbers."""
    rng = np.random.default_rng(7)

    def array(*shape: int, dtype: Any = np.float32) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    problems: list[tuple[str, dict[str, Any], tuple[np.ndarray, ...]]] = []
    for n, c, k, size in ((1, 3, 4, 9), (2, 4, 8, 8), (2, 8, 4, 7), (3, 2, 6, 5)):
        x, w = array(n, c, size, size), array(k, c, 3, 3)
        problems += [(f"conv {n}x{c}x{size}", {}, (x, w)),
                     (f"conv {n}x{c}x{size} padded", {"padding": 1}, (x, w)),
                     (f"conv {n}x{c}x{size} strided", {"stride": 2, "padding": 1}, (x, w)),
                     (f"conv {n}x{c}x{size} dilated", {"dilation": 2, "padding": 2}, (x, w)),
                     (f"conv {n}x{c}x{size} bias relu", {"padding": 1, "activation": "relu"}, (x, w, array(k))),
                     (f"conv {n}x{c}x{size} fp64", {"padding": 1}, (x.astype(np.float64), w.astype(np.float64)))]
    x = array(2, 6, 10, 10)
    problems += [("conv grouped", {"groups": 3, "padding": 1}, (x, array(6, 2, 3, 3))),
                 ("conv nhwc", {"layout": "NHWC", "padding": 1}, (array(2, 10, 10, 6), array(4, 3, 3, 6))),
                 ("conv 1-d", {"padding": 2}, (array(2, 3, 17), array(5, 3, 5))),
                 ("conv 3-d", {"padding": 1}, (array(1, 2, 5, 6, 7), array(3, 2, 3, 3, 3))),
                 ("conv fp16", {"padding": 1}, (array(2, 4, 8, 8, dtype=np.float16),
                                                array(4, 4, 3, 3, dtype=np.float16)))]
    problems += [(f"activation {mode}", {"mode": mode, "coef": coef}, (x,))
                 for mode, coef in (("sigmoid", None), ("tanh", None), ("clipped_relu", 0.5), ("elu", 0.3))]
    return problems


def _call(dispatcher: Dispatcher, kwargs: dict[str, Any], arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    if "mode" in kwargs:
        return dispatcher.activation(*arrays, **kwargs)  # type: ignore[no-any-return]
    return dispatcher.conv(*arrays, **kwargs)  # type: ignore[no-any-return]


def _in_threads(count: int, work: Callable[[int], None]) -> list[str]:
    """Run ``work(index)`` in ``count`` threads that start together; what each raised, as text."""
    barrier, errors = threading.Barrier(count, timeout=WAIT_S), []

    def run(index: int) -> None:
        try:
            barrier.wait()
            work(index)
        except BaseException as exc:  # reported by the test, with the thread's index
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(index,), name=f"worker-{index}", daemon=True)
               for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    running = [thread.name for thread in threads if thread.is_alive()]
    assert not running, f"still running after {WAIT_S:g} s: {running}"
    return errors


def test_sixteen_threads_calling_new_problems_at_once_get_what_one_thread_gets() -> None:
    problems = _problems()
    reference = Dispatcher(environ={"CUDNNLOAD_BACKENDS": "numpy"})
    want = [_call(reference, kwargs, arrays) for _, kwargs, arrays in problems]
    shared = Dispatcher(environ={"CUDNNLOAD_BACKENDS": "numpy"})  # its registry: made by whichever thread asks first
    got: dict[tuple[int, int, int], np.ndarray] = {}

    def work(index: int) -> None:
        order = np.random.default_rng(index).permutation(len(problems))  # each thread meets them in its own order
        for round_ in range(3):
            for number in order:
                got[(index, round_, int(number))] = _call(shared, problems[number][1], problems[number][2])

    errors = _in_threads(16, work)

    assert errors == []
    assert len(got) == 16 * 3 * len(problems)
    wrong = [f"{problems[number][0]} (thread {index}, round {round_})"
             for (index, round_, number), result in got.items()
             if result.shape != want[number].shape or result.dtype != want[number].dtype
             or not np.array_equal(result, want[number])]
    assert wrong == []
    assert len(shared._plans) == len(problems)  # each problem's plan remembered once: none lost, none mixed


class _Blocking:
    """A backend whose first supports() waits for ``go``: a plan stays half-made while the test acts."""

    def __init__(self, name: str, asked: threading.Event, go: threading.Event) -> None:
        self.name, self._asked, self._go = name, asked, go

    def availability(self) -> str | None:
        return None

    def supports(self, op: str, spec: Any, *tensors: Any) -> str | None:
        self._asked.set()
        assert self._go.wait(WAIT_S)
        return None

    def activation_forward(self, x: Any, y: Any, spec: Any, *, stream: int = 0) -> None:
        y.numpy()[...] = -1.0


def test_a_plan_made_across_a_reload_is_used_once_and_not_remembered() -> None:
    asked, go = threading.Event(), threading.Event()
    registry = Registry()
    registry.add("slow", lambda: _Blocking("slow", asked, go))
    dispatcher = Dispatcher(registry)
    x = np.ones((2, 3), np.float32)
    first: list[np.ndarray] = []
    planning = threading.Thread(target=lambda: first.append(dispatcher.activation(x, "relu")), daemon=True)
    planning.start()
    assert asked.wait(WAIT_S)

    dispatcher.reload({"CUDNNLOAD_BACKENDS": "numpy"})  # while that plan is being made on the old registry
    go.set()
    planning.join(WAIT_S)

    assert not planning.is_alive() and first[0].tolist() == [[-1.0] * 3] * 2  # the call in flight ends as planned
    assert dispatcher.activation(x, "relu").tolist() == [[1.0] * 3] * 2  # the next one plans on the new registry


# --- a missing plugin, a stuck lock holder: errors in seconds, not hangs -------------------------------------

@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site folder on sys.path with the distribution ``cl_gone``, whose entry point ``gone`` names a module
    that is not there (a plugin half uninstalled, or a package that failed to build its extension)."""
    folder = tmp_path / "site"
    info = folder / "cl_gone-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cl_gone\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cudnnload.backends]\ngone = cl_gone_missing:register\n")
    monkeypatch.syspath_prepend(str(folder))
    yield folder


def test_a_call_to_a_backend_whose_plugin_cannot_import_fails_at_once_naming_the_import_error(site: Path) -> None:
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    began = time.monotonic()

    with pytest.raises(UnsupportedError) as named:
        Dispatcher(environ={"CUDNNLOAD_BACKENDS": "numpy,gone"}).conv(x, w, backend="gone")
    with pytest.raises(UnsupportedError) as auto:
        Dispatcher(environ={"CUDNNLOAD_BACKENDS": "gone"}).conv(x, w)

    assert time.monotonic() - began < 5
    missing = "ModuleNotFoundError: No module named 'cl_gone_missing'"
    assert "the plugin 'gone' (cl_gone_missing:register (cl_gone 1.0)) failed to load" in named.value.message
    assert missing in named.value.message
    assert f"gone: its plugin failed to load: {missing}" in auto.value.message


def test_the_quick_plan_gpu_test_ends_at_once_naming_the_plugin_that_failed_to_import(tmp_path: Path) -> None:
    """The issue's bad case: tests/test_starting.py's quick-plan script holds the graph backend's planning lock on
    a thread, then calls that backend; with its plugin failing to import, it waited for 300 s (the child's
    timeout). Here, on the CPU: the plugin's package is shadowed by one whose import fails."""
    shadow = tmp_path / "shadow" / "cudnnload_cudnn_graph"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('libcudnn_graph.so.9 would need a GPU build here')\n")
    env = _env(tmp_path / "cache", PYTHONPATH=python_path(shadow.parent, REPO))
    began = time.monotonic()

    child = _python(QUICK_PLAN_SCRIPT, str(lib_folder("cu12-9.28.0.42")), env=env)

    assert time.monotonic() - began < 20  # a probe child, then the answer: no waiting on the lock
    assert child.returncode == 1, child.stderr[-3000:]
    assert "cudnn-graph cannot run here: the plugin 'cudnn-graph'" in child.stderr
    assert "ImportError: libcudnn_graph.so.9 would need a GPU build here" in child.stderr


@contextlib.contextmanager
def _held_by_another_thread(lock: PlanningLock, name: str, doing: str) -> Iterator[None]:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock.holding(doing):
            held.set()
            release.wait(WAIT_S)

    holder = threading.Thread(target=hold, name=name, daemon=True)
    holder.start()
    assert held.wait(WAIT_S)
    try:
        yield
    finally:
        release.set()
        holder.join(WAIT_S)


def test_a_wait_for_a_planning_lock_held_by_a_stuck_thread_ends_naming_that_thread() -> None:
    lock = PlanningLock("cudnn-graph plans", timeout=0.2)

    with _held_by_another_thread(lock, "cudnnload-warmup", "building the plan of conv_forward|x"):
        assert lock.try_acquire("another plan") is False
        began = time.monotonic()
        with pytest.raises(LockTimeout) as waited:
            lock.acquire("another plan")
        assert 0.15 < time.monotonic() - began < 5

    assert isinstance(waited.value, TimeoutError)
    assert "cudnn-graph plans: waited 0.2 s for the planning lock, held by thread 'cudnnload-warmup', building " \
           "the plan of conv_forward|x, for " in waited.value.message
    with lock.holding("mine"), lock.holding("again, re-entered"):  # free again, and re-entrant
        assert lock.holder().startswith("thread 'MainThread', mine, for ")
    assert lock.holder() == "nobody (it was released meanwhile)"


@pytest.mark.parametrize("quick_start", [True, False])
def test_a_graph_plan_behind_a_stuck_builder_is_refused_in_seconds_naming_the_builder(
        quick_start: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "plugins"))  # a checkout runs this without the plugins installed
    from cudnnload_cudnn_graph.backend import GraphBackend

    backend = GraphBackend(quick_start=quick_start)  # never made available: no cuDNN call is reached
    backend._lock.timeout = 0.2
    monkeypatch.setattr(backend, "_quick_plan", lambda *args: None)  # where no quick plan builds either
    x, w, y = (_make(0, shape, contiguous_strides(shape), "float32", 0, "test", None)
               for shape in ((2, 16, 12, 12), (8, 16, 3, 3), (2, 8, 12, 12)))
    began = time.monotonic()

    with _held_by_another_thread(backend._lock, "cudnnload-warmup", "building the plan of conv_forward|..."):
        why = backend.supports("conv_forward", ConvSpec((1, 1), (1, 1), (1, 1)), x, w, None, y)

    assert time.monotonic() - began < 5
    assert why is not None and why.startswith("cudnn-graph plans: waited 0.2 s for the planning lock, held by "
                                              "thread 'cudnnload-warmup', building the plan of conv_forward|..., for ")


# --- the watchdog (tests/conftest.py) ------------------------------------------------------------------------

_HANGS = '''
import ctypes, subprocess, sys, threading, time
import pytest

@pytest.mark.timeout_s(0.5)
def test_waits_for_a_lock_another_thread_never_releases():
    lock, held = threading.Lock(), threading.Event()
    def hold():
        lock.acquire(); held.set(); time.sleep(60)
    threading.Thread(target=hold, name="never-releases", daemon=True).start()
    held.wait()
    lock.acquire()

@pytest.mark.timeout_s(0.5)
def test_waits_for_a_child_that_never_ends():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(60)"])

def test_runs_after_them():
    pass
'''

_STUCK_IN_C = '''
import ctypes
import pytest

@pytest.mark.timeout_s(0.5)
def test_stuck_in_a_call_that_never_returns_to_python():
    libc = ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)  # all zeros: PTHREAD_MUTEX_INITIALIZER
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)  # a default mutex locked again by its owner: waits forever, deaf to signals
'''


def _pytest(tmp_path: Path, source: str) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "test_hangs.py").write_text(source)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q",
                           "-rA", str(tmp_path / "test_hangs.py")], cwd=REPO, env=_env(tmp_path / "cache"),
                          capture_output=True, text=True, timeout=WAIT_S, check=False)
    return done, time.monotonic() - began


def test_the_watchdog_fails_a_hanging_test_with_the_threads_stacks_and_the_run_goes_on(tmp_path: Path) -> None:
    done, seconds = _pytest(tmp_path, _HANGS)

    assert done.returncode == 1 and seconds < 15, done.stdout[-3000:]
    assert "2 failed, 1 passed" in done.stdout
    assert "test_waits_for_a_lock_another_thread_never_releases: its call is still running after 0.5 s" in done.stdout
    assert "thread 'never-releases':" in done.stdout and "lock.acquire(); held.set()" in done.stdout
    assert "test_waits_for_a_child_that_never_ends: its call is still running after 0.5 s" in done.stdout


def test_a_test_stuck_in_c_ends_the_run_with_every_threads_stack(tmp_path: Path) -> None:
    done, seconds = _pytest(tmp_path, _STUCK_IN_C)

    assert done.returncode != 0 and seconds < 15, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Timeout (0:00:01)!" in done.stderr
    assert "in test_stuck_in_a_call_that_never_returns_to_python" in done.stderr


def test_a_gpu_tests_child_that_hangs_is_stopped_showing_where_each_of_its_threads_waits() -> None:
    script = ("import threading\nlock = threading.Lock()\nlock.acquire()\n"
              "threading.Thread(target=lock.acquire, daemon=True).start()\nlock.acquire()\n")
    began = time.monotonic()

    with pytest.raises(pytest.fail.Exception) as failed:
        gpu.run_child(script, timeout=0.5)

    assert time.monotonic() - began < 10
    message = str(failed.value)
    assert message.startswith("child still running after 0.5 s; stopped with SIGABRT")
    assert "in _bootstrap_inner" in message  # the second thread's stack
    assert 'File "<string>", line 5 in <module>' in message  # the main thread's: the last lock.acquire()


# --- threads sharing the cuDNN backends (GPU) ----------------------------------------------------------------

# Sixteen threads run the same problems (so that plans are shared, built by one thread while others wait or run
# a quick plan) on both cuDNN backends, each on device buffers of its own, for four rounds (runs are recorded
# into CUDA graphs after two); every result, written into a NaN-filled output, is compared with the numpy
# backend's on the host.
_GPU_THREADS = r"""
import json, sys, threading
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/plugins"]
import numpy as np
import cudnnload
import cudnnload_cudnn_graph, cudnnload_cudnn_legacy, cudnnload_numpy
from cudnnload.dispatch.backends import Registry
from cudnnload.dispatch.dispatcher import Dispatcher
from cudnnload.loading.gpu import initialized_driver
cudnnload.load(sys.argv[2])
registry = Registry()
for plugin in (cudnnload_numpy, cudnnload_cudnn_legacy, cudnnload_cudnn_graph):
    plugin.register(registry)
for name in ("cudnn-legacy", "cudnn-graph"):
    backend, why = registry.get(name)
    if backend is None:
        sys.exit(f"{name} cannot run here: {why}")
dispatcher = Dispatcher(registry)
rng = np.random.default_rng(11)
PROBLEMS = []  # (name, x, w, bias or None, keyword arguments)
for n, c, k, size, dtype in ((1, 3, 8, 9, "float32"), (2, 16, 8, 12, "float32"), (2, 8, 16, 7, "float32"),
                             (4, 32, 32, 14, "float32"), (2, 16, 16, 10, "float16")):
    x = rng.standard_normal((n, c, size, size)).astype(dtype)
    w = rng.standard_normal((k, c, 3, 3)).astype(dtype)
    bias = rng.standard_normal(k).astype(dtype)
    PROBLEMS += [(f"{n}x{c}x{size} {dtype}", x, w, None, {"padding": 1}),
                 (f"{n}x{c}x{size} {dtype} strided", x, w, None, {"padding": 1, "stride": 2}),
                 (f"{n}x{c}x{size} {dtype} bias relu", x, w, bias, {"padding": 1, "activation": "relu"})]
PROBLEMS.append(("autotuned", PROBLEMS[3][1], PROBLEMS[3][2], None, {"padding": 1, "autotune": True}))
WANT = []
for name, x, w, bias, kwargs in PROBLEMS:
    host = {key: value for key, value in kwargs.items() if key != "autotune"}
    WANT.append(dispatcher.conv(x.astype(np.float64), w.astype(np.float64),
                                None if bias is None else bias.astype(np.float64), backend="numpy", **host))
TOLERANCE = {"float32": 1e-4, "float16": 1e-2}  # relative L2 error; TF32 is off by default
driver = initialized_driver()
failures, errors, calls = [], [], [0]
barrier = threading.Barrier(16, timeout=60)
def work(index):
    try:
        buffers = []
        for name, x, w, bias, kwargs in PROBLEMS:
            want = WANT[len(buffers)]
            device = [None if a is None else cudnnload.DeviceBuffer(a.shape, str(a.dtype), a) for a in (x, w, bias)]
            buffers.append((*device, cudnnload.DeviceBuffer(want.shape, str(x.dtype))))
        barrier.wait()
        order = np.random.default_rng(index).permutation(len(PROBLEMS))
        for round_ in range(4):
            for number in order:
                name, x, w, bias, kwargs = PROBLEMS[number]
                for backend in (("cudnn-legacy", "cudnn-graph") if index % 2 else ("cudnn-graph", "cudnn-legacy")):
                    dx, dw, db, dy = buffers[number]
                    dispatcher.conv(dx, dw, db, out=dy, backend=backend, poison=True, **kwargs)
                    # to_host's copy waits for the call on the same (legacy default) stream; a context-wide
                    # synchronize would fail while another thread records a CUDA graph
                    got = dy.to_host(np.empty(WANT[number].shape, x.dtype)).astype(np.float64)
                    error = float(np.linalg.norm(got - WANT[number]) / np.linalg.norm(WANT[number]))
                    calls[0] += 1
                    if not error < TOLERANCE[str(x.dtype)]:
                        failures.append(f"{backend} {name}, thread {index}, round {round_}: relative error {error}")
    except BaseException as exc:
        errors.append(f"thread {index}: {type(exc).__name__}: {exc}")
threads = [threading.Thread(target=work, args=(index,), name=f"worker-{index}", daemon=True) for index in range(16)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(90)
print(json.dumps({"running": [thread.name for thread in threads if thread.is_alive()], "errors": errors[:10],
                  "failures": failures[:20], "calls": calls[0], "expected": 16 * 4 * 2 * len(PROBLEMS)}))
"""


@pytest.mark.gpu
@pytest.mark.timeout_s(90)  # a cold process: the CUDA context, cuDNN's lazy loading, ~30 plans, one autotuned
def test_sixteen_threads_on_both_cudnn_backends_get_what_numpy_gets(tmp_path: Path) -> None:
    gpu.require_gpus(1)
    shim, _ = gpu.installed_cudnn()
    environ = dict(os.environ, CUDNNLOAD_CACHE=str(tmp_path / "cache"))

    out = gpu.run_child(_GPU_THREADS, str(REPO), str(shim.parent), environ=environ, timeout=80)

    assert out["running"] == [] and out["errors"] == [], out
    assert out["failures"] == [], out
    assert out["calls"] == out["expected"], out

