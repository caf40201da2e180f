"""start(): the context, the load and the warm-up in the background; the ctypes driver behind it (GPU).

The CPU side (start returns at once, a failed start, a warm-up without a GPU) is in test_loader.py.
"""

from __future__ import annotations

import pytest

from tests.gpu import installed_cudnn, require_gpus, run_child

pytestmark = pytest.mark.gpu

_STARTED = """
import json, sys, time
T0 = time.perf_counter()
import cudnnload
from cudnnload import Activation, Problem
starting = cudnnload.start(sys.argv[1], warmup=[Problem((2, 16, 12, 12), (8, 16, 3, 3), "float32", padding=1),
                                                Activation((2, 8, 12, 12), "float32", "relu")])
returned_ms = (time.perf_counter() - T0) * 1000
import numpy as np
from cudnnload.loading.gpu import checked, initialized_driver
import cudnnload.dispatch.dispatcher
rng = np.random.default_rng(5)
X = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
W = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
warmed = starting.wait(120).warmup
x, w = cudnnload.DeviceBuffer(X.shape, "float32", X), cudnnload.DeviceBuffer(W.shape, "float32", W)
y = cudnnload.DeviceBuffer((2, 8, 12, 12), "float32")
began = time.perf_counter()
cudnnload.conv(x, w, padding=1, out=y)
checked(initialized_driver(), "cuCtxSynchronize")
first_ms = (time.perf_counter() - began) * 1000
cudnnload.activation(y, "relu", out=y)
got = y.to_host(np.empty((2, 8, 12, 12), np.float32))
windows = np.lib.stride_tricks.sliding_window_view(np.pad(X.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1))),
                                                   (3, 3), axis=(2, 3))
want = np.maximum(np.einsum("nchwij,kcij->nkhw", windows, W.astype(np.float64)), 0)
graph = cudnnload.dispatch.dispatcher.registry().get("cudnn-graph")[0]
on_quick = any(run.provisional for run in graph._runs(graph._runtime.state()).values())
print(json.dumps({"returned_ms": returned_ms, "warmed": len(warmed.problems), "error": warmed.error,
                  "on_quick": on_quick, "first_ms": first_ms,
                  "error_rel": float(np.abs(got - want).max() / np.abs(want).max())}))
"""


def test_start_warms_the_convolution_and_the_activation_and_the_calls_are_right() -> None:
    require_gpus(1)
    shim, _ = installed_cudnn()

    out = run_child(_STARTED, str(shim.parent))

    assert out["error"] is None and out["warmed"] == 2 and out["on_quick"] is False, out
    assert out["returned_ms"] < 100 and out["first_ms"] < 15, out  # issue 5: first conv after warm-up <= 15 ms
    assert out["error_rel"] < 1e-3, out  # fp32 data; TF32 is off by default


_DRIVERS = """
import json
from cuda.bindings import driver as bindings
from cudnnload.loading import cudadriver
from cudnnload.loading.gpu import _device, checked, initialized_driver
ours = initialized_driver()
checked(bindings, "cuInit", 0)
count = checked(ours, "cuDeviceGetCount")
agree = [_device(ours, index) == _device(bindings, index) for index in range(count)]
checked(ours, "cuCtxSetCurrent", checked(ours, "cuDevicePrimaryCtxRetain", checked(ours, "cuDeviceGet", count - 1)))
pointer = checked(ours, "cuMemAlloc", 1 << 20)
ordinal = checked(ours, "cuPointerGetAttribute", ours.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer)
checked(ours, "cuMemFree", pointer)
print(json.dumps({"count": count, "bindings_count": checked(bindings, "cuDeviceGetCount"), "agree": agree,
                  "ordinal": ordinal, "name_100": cudadriver.CUresult(100).name,
                  "text_100": cudadriver.cuGetErrorString(100)[1].decode()}))
"""


_COPIES = """
import json
import numpy as np
from cudnnload.dispatch.warmup import REGISTER_FROM, DeviceBuffer
from cudnnload.loading.gpu import checked, initialized_driver
rng = np.random.default_rng(3)
results = {}
for name, count in (("small", 1000), ("large", REGISTER_FROM // 2 + 3)):  # float16: the large one is locked
    values = rng.standard_normal(count).astype(np.float16)
    buffer = DeviceBuffer((count,), "float16", values)
    results[name] = bool((buffer.to_host(np.empty(count, np.float16)) == values).all())
    owned = np.empty(count, np.float16)  # locked by its owner already: copied as it is, still locked after
    driver = initialized_driver()
    checked(driver, "cuMemHostRegister", owned.ctypes.data, owned.nbytes, 0)
    results[name + " owned"] = bool((buffer.to_host(owned) == values).all())
    results[name + " still locked"] = driver.cuMemHostUnregister(owned.ctypes.data)[0] == 0
    buffer.free()
print(json.dumps(results))
"""


def test_device_buffer_copies_are_exact_whether_or_not_the_host_array_is_locked() -> None:
    require_gpus(1)

    out = run_child(_COPIES)

    assert out == {"small": True, "small owned": True, "small still locked": True,
                   "large": True, "large owned": True, "large still locked": True}, out


_ENDS_EARLY = """
import sys
import cudnnload
from cudnnload import Activation, Problem
cudnnload.start(sys.argv[1], warmup=[Problem((32, 64, 56, 56), (64, 64, 3, 3), "float16", padding=1),
                                     Activation((32, 64, 56, 56), "float16")])
print('{"ended": true}')
"""


def test_a_program_that_ends_during_the_warm_up_exits_cleanly() -> None:
    require_gpus(1)
    shim, _ = installed_cudnn()

    for _ in range(3):  # the exit lands at another point of the warm-up each time
        assert run_child(_ENDS_EARLY, str(shim.parent)) == {"ended": True}


def test_the_ctypes_driver_agrees_with_cuda_bindings() -> None:
    require_gpus(1)

    out = run_child(_DRIVERS)

    assert out["count"] == out["bindings_count"] >= 1 and all(out["agree"]), out
    assert out["ordinal"] == out["count"] - 1
    assert out["name_100"] == "CUDA_ERROR_NO_DEVICE" and "no CUDA-capable device" in out["text_100"]


# The float64 reference of a 3x3 convolution with padding 1 of X by W, and a result's relative error against it.
_REFERENCE = """
windows = np.lib.stride_tricks.sliding_window_view(np.pad(X.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1))),
                                                   (3, 3), axis=(2, 3))
want = np.einsum("nchwij,kcij->nkhw", windows, W.astype(np.float64))
error = lambda got: float(np.abs(got - want).max() / np.abs(want).max())
"""

_QUICK = """
import json, sys, threading
import numpy as np
import cudnnload
from cudnnload.dispatch import dispatcher as dispatch
from cudnnload.loading.gpu import checked, initialized_driver
cudnnload.load(sys.argv[1])
graph, why = dispatch.registry().get("cudnn-graph")
if graph is None:  # at once, with the reason (a plugin that failed to import names its error)
    sys.exit(f"cudnn-graph cannot run here: {why}")
rng = np.random.default_rng(3)
X = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
W = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
x, w = cudnnload.DeviceBuffer(X.shape, "float32", X), cudnnload.DeviceBuffer(W.shape, "float32", W)
y = cudnnload.DeviceBuffer((2, 8, 12, 12), "float32")
def run_once():
    cudnnload.conv(x, w, padding=1, out=y, backend="cudnn-graph")
    checked(initialized_driver(), "cuCtxSynchronize")
    return y.to_host(np.empty((2, 8, 12, 12), np.float32)), next(iter(graph._runs(graph._runtime.state()).values()))
held, release = threading.Event(), threading.Event()
def builder():  # another thread building a plan (a warm-up) holds the backend's planning lock
    with graph._lock:
        held.set(); release.wait(30)
# A daemon, released in any case: a failing call must end this process, not leave it waiting for the holder.
other = threading.Thread(target=builder, name="holds the planning lock", daemon=True); other.start()
if not held.wait(30):
    sys.exit("the builder thread never took the planning lock")
try:
    first, run = run_once()
    provisional = run.provisional
finally:
    release.set()
other.join(30)
second, run = run_once()
""" + _REFERENCE + """
print(json.dumps({"provisional_first": provisional, "provisional_then": run.provisional,
                  "error_first": error(first), "error_then": error(second)}))
"""


def test_a_call_whose_plan_another_thread_builds_runs_on_a_quick_plan_then_moves_on() -> None:
    require_gpus(1)
    shim, _ = installed_cudnn()

    out = run_child(_QUICK, str(shim.parent))

    assert out["provisional_first"] is True and out["provisional_then"] is False, out
    assert out["error_first"] < 1e-3 and out["error_then"] < 1e-3, out


_BEFORE_THE_WARM_UP = """
import json, sys, time
import numpy as np
import cudnnload
import cudnnload.dispatch.warmup as warmup
from cudnnload import Problem
from cudnnload.dispatch import dispatcher as dispatch
from cudnnload.loading.gpu import checked, initialized_driver
own_run = warmup._run
def late(problems, start, **kwargs):  # a warm-up still importing, or busy, when the application calls
    time.sleep(3)
    return own_run(problems, start, **kwargs)
warmup._run = late
starting = cudnnload.start(sys.argv[1], warmup=[Problem((2, 16, 12, 12), (8, 16, 3, 3), "float32", padding=1)])
rng = np.random.default_rng(7)
X = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
W = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
x, w = cudnnload.DeviceBuffer(X.shape, "float32", X), cudnnload.DeviceBuffer(W.shape, "float32", W)
y = cudnnload.DeviceBuffer((2, 8, 12, 12), "float32")
graph = dispatch.registry().get("cudnn-graph")[0]
def run_once():
    cudnnload.conv(x, w, padding=1, out=y)
    checked(initialized_driver(), "cuCtxSynchronize")
    runs = list(graph._runs(graph._runtime.state()).values())
    return y.to_host(np.empty((2, 8, 12, 12), np.float32)), runs
began = time.perf_counter()
first, runs = run_once()
first_ms = (time.perf_counter() - began) * 1000
on_quick = bool(runs) and all(run.provisional for run in runs)
warming = not starting.done()
starting.wait(120)
later, runs = run_once()
""" + _REFERENCE + """
print(json.dumps({"on_quick": on_quick, "warming": warming, "first_ms": first_ms, "later_own": any(not r.provisional
                  for r in runs), "first_error": error(first), "later_error": error(later)}))
"""


def test_a_call_before_the_warm_up_reaches_its_problem_runs_on_a_quick_plan_then_on_its_own() -> None:
    require_gpus(1)
    shim, _ = installed_cudnn()

    out = run_child(_BEFORE_THE_WARM_UP, str(shim.parent))

    # the application's thread does not build the problem's own plan (70-90 ms of cuDNN's lazy start) while a
    # warm-up is on its way to it; once the warm-up is over, the call runs on the problem's own plan
    assert out["warming"] and out["on_quick"] and out["later_own"], out
    assert out["first_error"] < 1e-3 and out["later_error"] < 1e-3, out
