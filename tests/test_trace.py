"""trace: cold-process stages of our own path, and any program's cuDNN calls from cuDNN's own log."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudnnload.cli import make_cli
from cudnnload.diagnose.apilog import parse, summarize
from cudnnload.diagnose.trace import trace_loader, trace_program
from tests.wheels import lib_folder

pytestmark = pytest.mark.wheels

# Verbatim from 9.28 cu12 with CUDNN_LOGLEVEL_DBG=3 (cudnn-facts §6.2), plus a second cudnnCreate.
LOG = """\
I! CuDNN (v92800 42) function cudnnCreate() called:
i!     handle: location=host; addr=0x7f186149cbe0;
i! Time: 2026-11-21T23:21:48.929469 (0d+0h+0m+0s since start)
i! Process=10395; Thread=10395; GPU=NULL; Handle=NULL; StreamId=NULL.

E! CuDNN (v92800 42) function cudnnCreate() called:
e!     Info: Traceback contains 1 message(s)
e!         Error: CUDNN_STATUS_NOT_INITIALIZED; Reason: cudaGetDeviceCount(&count) != cudaSuccess
e! Time: 2026-11-21T23:21:48.929596 (0d+0h+0m+0s since start)
e! Process=10395; Thread=10395; GPU=NULL; Handle=NULL; StreamId=NULL.

I! CuDNN (v8907) function cudnnGetVersion() called:
i! Time: 2026-11-21T23:21:48.939469 (0d+0h+0m+0s since start)
i! Process=10395; Thread=10395; GPU=NULL; Handle=NULL; StreamId=NULL.

I! CuDNN (v92800 42) function cudnnGetVersion() called:
i! Time: 2026-11-21T23:21:48.939969 (0d+0h+0m+0s since start)
i! Process=10395; Thread=10395; GPU=NULL; Handle=NULL; StreamId=NULL.
"""


def test_api_log_blocks_of_both_generations_are_parsed() -> None:
    calls = parse(LOG.splitlines())
    assert [(c.function, c.level) for c in calls] == [("cudnnCreate", "I"), ("cudnnCreate", "E"),
                                                      ("cudnnGetVersion", "I"), ("cudnnGetVersion", "I")]
    assert calls[0].process == 10395 and calls[0].thread == 10395


def test_first_call_is_timed_to_the_next_call_of_its_thread() -> None:
    calls = parse(LOG.splitlines())
    summary = {s.function: s for s in summarize(calls, calls[0].at)}
    assert summary["cudnnCreate"].first_ms == pytest.approx(10.0, abs=1e-3) and summary["cudnnCreate"].errors == 1
    assert summary["cudnnGetVersion"].calls == 2 and summary["cudnnGetVersion"].first_ms == pytest.approx(0.5, 1e-3)
    assert summary["cudnnGetVersion"].first_at_ms == pytest.approx(10.0, abs=1e-3)


def test_preload_trace_times_each_library_and_stops_at_cudnn_create_without_a_gpu(tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    trace = trace_loader(folder, 9, mode="preload", runs=1,
                         environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path)})
    stages = {s.name: s for s in trace.stages}
    assert list(stages)[:3] == ["interpreter start", "import", "resolve"]
    assert stages["dlopen graph"].libraries == ("libcudnn_graph.so.9",)
    assert "cudnnSubquadraticOpsVersionCheck" in stages and all(s.median >= 0 for s in trace.stages)
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        assert trace.stopped and "CUDNN_STATUS_NOT_INITIALIZED" in trace.stopped
        assert "cudaGetDeviceCount" in trace.stopped


def test_lazy_trace_sees_graph_arrive_with_the_first_call(tmp_path: Path) -> None:
    trace = trace_loader(str(lib_folder("cu12-9.28.0.42")), 9, mode="lazy", runs=2,
                         environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path)})
    stages = {s.name: s for s in trace.stages}
    assert stages["dlopen shim"].libraries == ("libcudnn.so.9",)
    assert stages["cudnnGetVersion"].libraries == ("libcudnn_graph.so.9",)
    assert len(stages["import"].ms) == 2 and len(trace.total_ms) == 2


def test_any_program_is_traced_from_cudnns_own_log() -> None:
    shim = lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"
    code = textwrap.dedent(f"""
        import ctypes
        lib = ctypes.CDLL({str(shim)!r})
        for _ in range(3):
            lib.cudnnGetVersion()
        lib.cudnnOpsVersionCheck()
        import time
        time.sleep(0.3)  # the maps are sampled every 10 ms: seen before the exit on a loaded machine too
    """)
    trace = trace_program([sys.executable, "-c", code])
    apis = {a.function: a for a in trace.apis}
    assert trace.returncode == 0 and apis["cudnnGetVersion"].calls == 3
    assert apis["cudnnGetVersion"].first_ms is not None and apis["cudnnGetVersion"].later_median_ms is not None
    assert {"libcudnn.so.9", "libcudnn_graph.so.9"} <= {lib.name for lib in trace.libraries}


def test_trace_command_json_and_a_bad_shape(tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    runner = CliRunner()
    result = runner.invoke(make_cli(), ["trace", "--json", "--runs", "1", "--preload", "--no-conv", "--folder",
                                        folder], env={"CUDNNLOAD_CACHE": str(tmp_path)})
    doc = json.loads(result.stdout)
    assert doc["kind"] == "trace" and doc["result"][0]["mode"] == "preload"
    assert {"name", "ms", "libraries", "median"} <= set(doc["result"][0]["stages"][0])
    bad = runner.invoke(make_cli(), ["trace", "--shape", "1,2,3", "--folder", folder])
    assert bad.exit_code == 2 and "--shape wants N,C,K,HW" in bad.stderr


def test_start_trace_shows_the_programs_own_stages_and_waits_for_the_background(tmp_path: Path) -> None:
    trace = trace_loader(str(lib_folder("cu12-9.28.0.42")), 9, mode="start", runs=1,
                         conv={"n": 1, "c": 8, "k": 8, "size": 8, "dtype": "float32", "backend": "auto"},
                         environ={**os.environ, "CUDNNLOAD_CACHE": str(tmp_path)})
    names = [s.name for s in trace.stages]
    assert names[:3] == ["interpreter start", "import", "start() returned"]
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        assert trace.stopped and "driver" in trace.stopped  # the inputs cannot reach a GPU: said, not raised
