"""load(): probe first, remember the verdict, load in order here; idempotent, thread-safe, never mixing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudnnload.errors import LoadError, UsageError
from cudnnload.loading.loader import VersionRange, load
from cudnnload.resolve.catalog import Release
from tests.wheels import lib_folder, python_path

pytestmark = pytest.mark.wheels
ROOT = Path(__file__).resolve().parent.parent


def _child(code: str, cache: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh Python (one cuDNN per process); it prints one JSON object last."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, "CUDNNLOAD_CACHE": str(cache), "PYTHONPATH": python_path(ROOT),
                               **(env or {})}, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


LOAD = """
import json, sys, cudnnload.loading.loader as L
got = L.load(sys.argv[1] if len(sys.argv) > 1 else {folder!r})
print(json.dumps({{"release": str(got.release), "files": [k for k, _ in got.files],
                  "skipped": [k for k, _, _ in got.skipped], "cached": got.verdict_cached,
                  "stages": [s.name for s in got.stages], "version": got.api.version()}}))
"""


def test_version_range_admits_by_the_parts_written() -> None:
    r = VersionRange.parse(">=9.1,<10")
    assert r.admits(Release(9, 28, 0)) and not r.admits(Release(9, 0, 0)) and not r.admits(Release(10, 0, 0))
    assert VersionRange.parse("9.28").admits(Release(9, 28, 3))
    assert not VersionRange.parse("!=8.9.7").admits(Release(8, 9, 7))


@pytest.mark.parametrize("text", ["", ">=nine", "9..1", ">=9,<"])
def test_bad_version_range_is_a_usage_error_naming_it(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        VersionRange.parse(text)
    assert repr(text) in caught.value.reason


def test_load_probes_then_loads_in_order_and_a_new_process_reuses_the_verdict(tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    first = _child(LOAD.format(folder=folder), tmp_path)
    assert first["release"] == "9.28.0" and first["version"] == 92800 and first["cached"] is False
    assert first["files"][0] == "graph" and first["files"][-1] == "shim"
    assert first["stages"][-5:] == ["cudnnGraphVersionCheck", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck",
                                    "cudnnAdvVersionCheck", "cudnnSubquadraticOpsVersionCheck"]
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        assert first["skipped"] == ["engines_runtime_compiled"]  # NEEDs libcuda.so.1: expected here
    second = _warm(LOAD.format(folder=folder), tmp_path)
    assert second["cached"] is True and second["files"] == first["files"]


def _warm(code: str, cache: Path, tries: int = 3) -> dict:
    """The child's answer once its verdict is remembered: a verdict holds a file's change time, which another
    test run sharing the wheels moves (a hard link made or removed anywhere), and then it is proven again."""
    for _ in range(tries):
        got = _child(code, cache)
        if got["cached"]:
            break
    return got


def test_changed_file_invalidates_the_remembered_verdict(tmp_path: Path) -> None:
    farm = tmp_path / "lib"
    farm.mkdir()
    for path in lib_folder("cu12-9.0.0.312").iterdir():
        if path.name == "libcudnn_cnn.so.9":
            (farm / path.name).write_bytes(path.read_bytes())  # 4.7 MB: a real file we may touch
        else:
            (farm / path.name).symlink_to(path)
    code = LOAD.format(folder=str(farm))
    assert _child(code, tmp_path / "cache")["cached"] is False
    assert _warm(code, tmp_path / "cache")["cached"] is True
    stat = (farm / "libcudnn_cnn.so.9").stat()
    os.utime(farm / "libcudnn_cnn.so.9", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _child(code, tmp_path / "cache")["cached"] is False


def test_thirty_two_threads_get_one_load_and_the_same_result(tmp_path: Path) -> None:
    code = f"""
    import json, threading, cudnnload.loading.loader as L
    results, barrier = [], threading.Barrier(32)
    def go():
        barrier.wait()
        results.append(L.load({str(lib_folder("cu12-9.28.0.42"))!r}))
    threads = [threading.Thread(target=go) for _ in range(32)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(json.dumps({{"n": len(results), "distinct": len({{id(r) for r in results}})}}))
    """
    assert _child(code, tmp_path) == {"n": 32, "distinct": 1}


def test_another_release_already_mapped_is_refused_naming_both(tmp_path: Path) -> None:
    old, new = lib_folder("cu12-9.0.0.312"), lib_folder("cu12-9.28.0.42")
    code = f"""
    import ctypes, json, os, cudnnload.loading.loader as L
    from cudnnload.errors import LoadError
    ctypes.CDLL({str(old / "libcudnn_graph.so.9")!r}, mode=os.RTLD_GLOBAL)
    try:
        L.load({str(new)!r})
        print(json.dumps({{"refused": False}}))
    except LoadError as exc:
        print(json.dumps({{"refused": True, "message": exc.message}}))
    """
    out = _child(code, tmp_path)
    assert out["refused"] and str(old / "libcudnn_graph.so.9") in out["message"] and str(new) in out["message"]


def test_another_release_first_on_ld_library_path_does_not_matter_to_the_set_load_maps(tmp_path: Path) -> None:
    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    code = f"""
    import json, cudnnload.loading.loader as L
    from cudnnload.resolve.mapped import mapped_libraries
    got = L.load({str(new)!r})
    print(json.dumps({{"version": got.api.version(), "checks": [s.status for s in got.stages if s.status is not None],
                      "mapped": [p for p in mapped_libraries() if "/libcudnn" in p],
                      "notes": [(str(f.code), f.path) for f in got.findings]}}))
    """
    out = _child(code, tmp_path, {"LD_LIBRARY_PATH": str(old)})
    assert out["version"] == 92800 and out["checks"] == [0] * 5  # every VersionCheck
    assert out["mapped"] and all(path.startswith(str(new)) for path in out["mapped"])
    # what the shim's own search would have done is kept as a note: graph would take 9.0's heuristic
    assert ["mixed-release", str(old / "libcudnn_heuristic.so.9")] in out["notes"]


def test_ld_preload_of_another_releases_graph_is_refused_naming_the_variable_and_the_file(tmp_path: Path) -> None:
    old_graph = str(lib_folder("cu12-9.0.0.312") / "libcudnn_graph.so.9")
    code = f"""
    import json, cudnnload.loading.loader as L
    from cudnnload.errors import LoadError
    try:
        L.load({str(lib_folder("cu12-9.28.0.42"))!r})
        print(json.dumps({{"refused": False}}))
    except LoadError as exc:
        print(json.dumps({{"refused": True, "message": exc.message}}))
    """
    out = _child(code, tmp_path, {"LD_PRELOAD": old_graph})
    assert out["refused"], out
    assert out["message"].startswith(f"LD_PRELOAD puts {old_graph} (cuDNN 9.0.0) in every process; cuDNN 9.28.0 ")
    assert f"needs its own graph (fix: remove {old_graph} from LD_PRELOAD)" in out["message"]


def test_an_incomplete_copy_is_refused_naming_the_missing_sublibrary_whatever_the_search_would_find(
        tmp_path: Path) -> None:
    farm = tmp_path / "lib"
    farm.mkdir()
    for path in lib_folder("cu12-9.28.0.42").iterdir():
        if path.name != "libcudnn_graph.so.9":
            (farm / path.name).symlink_to(path)
    with pytest.raises(LoadError) as caught:  # 9.0's graph on LD_LIBRARY_PATH is no stand-in for 9.28's
        load(farm, environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache"),
                            "LD_LIBRARY_PATH": str(lib_folder("cu12-9.0.0.312"))})
    assert f"{farm}: missing-sublibrary: libcudnn_graph.so.9 is missing" in caught.value.message


def test_cudnn8_layout_that_aborts_is_refused_and_this_process_survives(tmp_path: Path) -> None:
    farm = tmp_path / "lib"
    farm.mkdir()
    for path in lib_folder("cu12-8.9.7.29").iterdir():
        if path.name != "libcudnn_cnn_infer.so.8":
            (farm / path.name).symlink_to(path)
    with pytest.raises(LoadError) as caught:
        load(farm, environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache")})
    assert "libcudnn_cnn_infer.so.8" in caught.value.message


def test_nothing_in_range_lists_what_was_rejected(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as caught:
        load(lib_folder("cu12-8.9.7.29"), version=">=9", environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path)})
    assert "cuDNN 8.9.7 is outside >=9" in caught.value.message


def test_warmup_without_a_gpu_reports_why_and_the_load_stands(tmp_path: Path) -> None:
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        pytest.skip("this machine has an NVIDIA driver: the warm-up would run")
    code = f"""
    import json, cudnnload
    from cudnnload.dispatch.warmup import Problem
    got = cudnnload.preload({str(lib_folder("cu12-9.28.0.42"))!r},
                            warmup=[Problem((1, 8, 16, 16), (8, 8, 3, 3), "float32", padding=1)], background=True)
    warmed = got.warmup.wait(60)
    print(json.dumps({{"release": str(got.release), "done": len(warmed.problems), "error": warmed.error}}))
    """
    out = _child(code, tmp_path)
    assert out["release"] == "9.28.0" and out["done"] == 0 and "driver" in out["error"]


def test_start_returns_at_once_and_every_load_then_shares_its_result(tmp_path: Path) -> None:
    code = f"""
    import json, time, cudnnload
    began = time.perf_counter()
    starting = cudnnload.start({str(lib_folder("cu12-9.28.0.42"))!r})
    returned_ms = (time.perf_counter() - began) * 1000
    again = cudnnload.start() is starting
    got = cudnnload.load({str(lib_folder("cu12-9.28.0.42"))!r})  # waits for the started load
    waited = starting.wait(60)
    print(json.dumps({{"returned_ms": returned_ms, "load_ms": got.seconds * 1000, "again": again,
                      "same": got is waited or got == waited, "release": str(got.release), "done": starting.done()}}))
    """
    out = _child(code, tmp_path)
    # The first load of a process with no remembered verdict probes in a child: hundreds of ms.
    assert out["returned_ms"] < 50 < out["load_ms"], out
    assert (out["again"], out["same"], out["release"], out["done"]) == (True, True, "9.28.0", True)


def test_a_failed_start_is_raised_by_wait_and_a_later_load_still_works(tmp_path: Path) -> None:
    missing = tmp_path / "no-cudnn-here"
    code = f"""
    import json, cudnnload
    starting = cudnnload.start({str(missing)!r})
    try:
        starting.wait(60)
        error = None
    except cudnnload.LoadError as exc:
        error = exc.message
    got = cudnnload.load({str(lib_folder("cu12-9.28.0.42"))!r})
    print(json.dumps({{"error": error, "release": str(got.release)}}))
    """
    out = _child(code, tmp_path / "cache")
    assert str(missing) in out["error"] and out["release"] == "9.28.0"


def test_a_later_start_asking_for_another_source_or_range_is_answered_as_load_answers_it(tmp_path: Path) -> None:
    """start(version='<9') after a 9.28 start returned 9.28 silently, and a start that failed made every later start
    fail ("refusing to load a second one from /", naming no path asked for). Each is answered as load() answers."""
    folder = str(lib_folder("cu12-9.28.0.42"))
    code = f"""
    import json, cudnnload
    first = cudnnload.start({folder!r}).wait(60)
    def said(**asked):
        try:
            return str(cudnnload.start(**asked).wait(60).release)
        except cudnnload.LoadError as exc:
            return exc.message
    print(json.dumps({{"range": said(version="<9"), "missing": said(source="/nonexistent"),
                      "again": said(source={folder!r}), "plain": said()}}))
    """
    out = _child(code, tmp_path)
    assert "already loaded" in out["range"] and "<9" in out["range"], out
    assert out["missing"] == "/nonexistent: no such file or folder", out
    assert (out["again"], out["plain"]) == ("9.28.0", "9.28.0"), out


def test_a_later_load_for_frameworks_is_answered_as_the_first_load_answers_it(tmp_path: Path) -> None:
    """load(for_="nonexist") after a load returned the cuDNN loaded, as if it suited a framework nobody knows; a
    framework named after a load is held to its rules as the first load holds it: a name cudnnload does not know,
    or a framework not installed, is a UsageError naming it."""
    folder = str(lib_folder("cu12-9.28.0.42"))
    code = f"""
    import json, cudnnload
    cudnnload.load({folder!r})
    def said(**asked):
        try:
            return str(cudnnload.load(**asked).release)
        except Exception as exc:
            return type(exc).__name__ + ": " + exc.message
    print(json.dumps({{"unknown": said(for_="nonexist"), "absent": said(for_="tensorflow"), "none": said()}}))
    """
    out = _child(code, tmp_path)
    assert out["unknown"].startswith("UsageError: unknown framework 'nonexist'"), out
    assert out["absent"].startswith("UsageError: tensorflow is not installed"), out
    assert out["none"] == "9.28.0", out


def test_a_warmup_with_an_activation_without_a_gpu_reports_why(tmp_path: Path) -> None:
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        pytest.skip("this machine has an NVIDIA driver: the warm-up would run")
    code = f"""
    import json, cudnnload
    from cudnnload.dispatch.warmup import Activation, Problem
    starting = cudnnload.start({str(lib_folder("cu12-9.28.0.42"))!r}, warmup=[
        Problem((1, 8, 16, 16), (8, 8, 3, 3), "float32", padding=1), Activation((1, 8, 16, 16), "float32")])
    warmed = starting.wait(60).warmup
    print(json.dumps({{"done": len(warmed.problems), "error": warmed.error}}))
    """
    out = _child(code, tmp_path)
    assert out["done"] == 0 and "driver" in out["error"]


def test_a_program_that_ends_while_start_is_loading_exits_cleanly(tmp_path: Path) -> None:
    code = f"""
    import cudnnload
    from cudnnload import Activation, Problem
    cudnnload.start({str(lib_folder("cu12-9.28.0.42"))!r}, warmup=[
        Problem((1, 8, 16, 16), (8, 8, 3, 3), "float32", padding=1), Activation((1, 8, 16, 16), "float32")])
    print('{{"ended": true}}')
    """
    assert _child(code, tmp_path) == {"ended": True}


_OPENBLAS = """
import json, os, sys, cudnnload
{before}
starting = cudnnload.start({folder!r}, warmup=[cudnnload.Problem((1, 4, 8, 8), (4, 4, 3, 3), "float32")]{options})
during = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
import numpy
starting.thread.join(60)
print(json.dumps({{"during": during, "after": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}}))
"""


@pytest.mark.parametrize(("before", "options", "env", "during", "after"), [
    ("", "", {}, "4", None),  # numpy's idle BLAS threads sleep at once; no child inherits the variable
    ("", ", blas_idle_spin=True", {}, None, None),
    ("import numpy", "", {}, None, None),  # OpenBLAS started already: nothing to set
    ("", "", {"OPENBLAS_THREAD_TIMEOUT": "12"}, "12", "12"),  # the user's value stays
], ids=["set-then-removed", "asked-to-spin", "numpy-first", "users-value"])
def test_start_lets_openblas_threads_sleep_during_the_import_and_leaves_the_environment_as_it_was(
        tmp_path: Path, before: str, options: str, env: dict[str, str], during: str | None, after: str | None
) -> None:
    code = _OPENBLAS.format(before=before, options=options, folder=str(lib_folder("cu12-9.28.0.42")))
    out = _child(code, tmp_path, env)
    assert (out["during"], out["after"]) == (during, after), out


def test_start_sets_its_variable_before_the_contexts_thread_begins(tmp_path: Path) -> None:
    # setenv while another thread's cuInit reads the environment (getenv) may free the array it reads (glibc before
    # 2.40); cudnnload.dispatch.starting.start says what was measured
    code = f"""
    import json, os, cudnnload
    from cudnnload.loading import cudadriver
    seen = []
    cudadriver.prepare_context = lambda *args: seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    cudnnload.start({str(lib_folder("cu12-9.28.0.42"))!r}).thread.join(60)
    print(json.dumps({{"first": seen[0]}}))
    """
    assert _child(code, tmp_path) == {"first": "4"}  # start's call (the load may call it again)


def test_what_an_application_imports_before_start_begins_the_context_stays_light(tmp_path: Path) -> None:
    # Every module imported before start() reaches cuInit delays the first result by its import time
    # (cudnnload.dispatch.problems, cudnnload.loading.cudadriver say why).
    code = """
    import json, sys, cudnnload
    problem = cudnnload.Problem((1, 4, 8, 8), (4, 4, 3, 3), "float32", padding=1, activation="relu")
    start = cudnnload.start
    import cudnnload.loading.cudadriver
    heavy = ("typing", "dataclasses", "numpy", "cudnnload.errors", "cudnnload.dispatch.warmup", "logging")
    print(json.dumps({"imported": [name for name in heavy if name in sys.modules]}))
    """
    assert _child(code, tmp_path) == {"imported": []}


def test_device_buffer_copies_refuse_arrays_of_another_size_or_layout_before_any_driver_call() -> None:
    import numpy as np

    from cudnnload.dispatch.errors import ArgumentError
    from cudnnload.dispatch.warmup import DeviceBuffer

    buffer = object.__new__(DeviceBuffer)  # no GPU here: the checks come before the driver is asked anything
    buffer.nbytes, buffer.pointer, buffer._driver = 8, 1, None
    frozen = np.zeros(4, np.float16)
    frozen.flags.writeable = False
    for out, reason in ((np.zeros(3, np.float16), "holds 6 bytes where the device buffer has 8"),
                        (np.zeros((4, 2), np.uint8)[:, :1], "holds 4 bytes"), ([0.0] * 4, "must be a numpy array"),
                        (np.zeros((2, 4), np.uint8)[:, ::-1].T, "must be C-contiguous"), (frozen, "is read-only")):
        with pytest.raises(ArgumentError, match=reason):
            buffer.to_host(out)


def test_prepare_context_returns_while_another_thread_holds_the_contexts_lock(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    # A retain holds that lock ~120 ms: a load() that began meanwhile used to wait it out before its dlopens.
    import threading

    from cudnnload.loading import cudadriver

    node = tmp_path / "nvidiactl"
    node.touch()
    monkeypatch.setattr(cudadriver, "GPU_DEVICE_NODE", str(node))
    monkeypatch.setattr(cudadriver, "cuInit", lambda flags: (cudadriver.CUresult(100),))  # no device: no retain
    with cudadriver._contexts_lock:
        done = threading.Event()
        caller = threading.Thread(target=lambda: (cudadriver.prepare_context(97), done.set()))
        caller.start()
        assert done.wait(5), "prepare_context waited for the contexts lock"
    caller.join()
    cudadriver._prepared.pop(97).join(5)
