"""The handle pool: cuDNN's own error where no driver exists, streams read from any framework's object,
and on a GPU machine one handle per (thread, device), bound to the caller's stream."""

from __future__ import annotations

import ctypes
import threading
from types import SimpleNamespace

import pytest

from cudnnload.errors import DriverUnavailable, UsageError
from cudnnload.loading.handles import HandlePool, stream_address
from cudnnload.loading.status import NotInitialized
from tests._wheels import CU12_897, CU12_928, Wheel, in_process, needs_no_driver
from tests.gpu import installed_cudnn, require_gpus, run_child

NO_DEVICE_REASON = "cudaGetDeviceCount(&count) != cudaSuccess"  # cudnn-facts §6.2


class _CudaStreamProtocol:
    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, 0x5000)


@pytest.mark.parametrize(("stream", "address"), [
    (None, 0),
    (0x1000, 0x1000),
    (_CudaStreamProtocol(), 0x5000),  # cuda.core, cuda.bindings CUstream
    (SimpleNamespace(cuda_stream=0x2000), 0x2000),  # torch.cuda.Stream
    (SimpleNamespace(ptr=0x3000), 0x3000),  # cupy.cuda.Stream
    (SimpleNamespace(handle=ctypes.c_void_p(0x4000)), 0x4000),  # numba's stream
    (SimpleNamespace(handle=ctypes.c_void_p()), 0),
], ids=["none", "int", "protocol", "torch", "cupy", "numba", "null-handle"])
def test_stream_address_reads_each_frameworks_stream(stream: object, address: int) -> None:
    assert stream_address(stream) == address


def test_stream_address_reads_a_cuda_bindings_custream() -> None:
    driver = pytest.importorskip("cuda.bindings.driver")

    assert stream_address(driver.CUstream(0x6000)) == 0x6000


@pytest.mark.parametrize("stream", ["0x1000", SimpleNamespace(cuda_stream="s")], ids=["text", "bad-attribute"])
def test_something_that_is_not_a_stream_is_a_usage_error(stream: object) -> None:
    with pytest.raises(UsageError, match="stream"):
        stream_address(stream)


@needs_no_driver
@pytest.mark.parametrize(("wheel", "code"), [(CU12_928, 1001), (CU12_897, 1)], ids=str)
def test_without_a_driver_get_raises_cudnns_not_initialized_with_both_reasons(wheel: Wheel, code: int) -> None:
    pool = HandlePool(in_process(wheel))

    with pytest.raises(NotInitialized) as caught:
        pool.get()
    pool.close()

    error = caught.value
    assert (error.status, error.call) == (code, "cudnnCreate")
    assert error.last_error == NO_DEVICE_REASON  # cuDNN 8 says it through the callback, 9 through GetLastErrorString
    assert error.detail == "no NVIDIA driver was found (libcuda.so.1 cannot be loaded)"
    assert error.causes[0].seen and "no NVIDIA driver" in error.causes[0].what
    assert pool.size == 0


@needs_no_driver
def test_concurrent_failures_each_keep_cudnns_reason() -> None:
    # cudnnGetLastErrorString is read once; creation and reading under one lock keep reasons apart.
    pool = HandlePool(in_process(CU12_928))
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            pool.get()
        except NotInitialized as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]  # a deadlock fails, it does not hang
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    pool.close()

    assert [getattr(error, "last_error", None) for error in errors] == [NO_DEVICE_REASON] * 8


@needs_no_driver
def test_without_a_driver_a_device_other_than_0_cannot_be_selected() -> None:
    pool = HandlePool(in_process(CU12_928))

    with pytest.raises(DriverUnavailable, match="cannot select CUDA device 1: no NVIDIA driver was found"):
        pool.get(1)
    pool.close()


def test_a_closed_pool_refuses_new_handles_and_closes_once() -> None:
    pool = HandlePool(in_process(CU12_928))
    pool.close()
    pool.close()

    with pytest.raises(UsageError, match="closed"):
        pool.get()


# --- on a GPU machine: each check in a child that loads the installed cuDNN ------------------------------

_PREAMBLE = """
import ctypes, json, sys, threading
from cuda.bindings import driver
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.handles import HandlePool
api = CudnnApi(sys.argv[1], int(sys.argv[2]))
pool = HandlePool(api)

def bound_stream(handle):
    stream = ctypes.c_void_p()
    assert api.cudnnGetStream(handle, ctypes.byref(stream)) == 0
    return stream.value or 0

def current_device():
    result, device = driver.cuCtxGetDevice()
    return int(device)
"""


def _in_child(body: str) -> dict[str, object]:
    require_gpus(1)
    shim, major = installed_cudnn()
    return run_child(_PREAMBLE + body, str(shim), str(major))  # type: ignore[no-any-return]


@pytest.mark.gpu
def test_each_thread_gets_its_own_handle_and_keeps_it() -> None:
    answer = _in_child("""
first, again = pool.get(0), pool.get(0)
other = []
thread = threading.Thread(target=lambda: other.extend([pool.get(0), pool.get(0)]))
thread.start(); thread.join()
print(json.dumps({"main": [first, again], "other": other, "size": pool.size}))
pool.close()
""")

    main, other = answer["main"], answer["other"]
    assert isinstance(main, list) and isinstance(other, list)
    assert main[0] and main[0] == main[1]
    assert other[0] and other[0] == other[1] and other[0] != main[0]
    assert answer["size"] == 2


@pytest.mark.gpu
def test_a_spare_handle_goes_to_the_next_thread_without_one_and_is_destroyed_with_the_pool() -> None:
    answer = _in_child("""
pool.make_spare(0)
pool.make_spare(0)  # one spare at most
spare = pool._spares[0][0]
other = []
thread = threading.Thread(target=lambda: other.append(pool.get(0)))
thread.start(); thread.join()
left = len(pool._spares.get(0, []))
mine = pool.get(0)  # none spare left: a handle of its own
pool.make_spare(0)
pool.close()  # the unused spare too: a second close finds nothing to destroy
print(json.dumps({"spare": spare, "other": other[0], "left": left, "mine": mine, "size_after": pool.size,
                  "spares_after": len(pool._spares)}))
""")

    assert answer["other"] == answer["spare"] and answer["left"] == 0
    assert answer["mine"] and answer["mine"] != answer["spare"]
    assert answer["size_after"] == 0 and answer["spares_after"] == 0


@pytest.mark.gpu
def test_each_device_gets_its_own_handle_and_becomes_current() -> None:
    require_gpus(2)

    answer = _in_child("""
zero = pool.get(0)
one = pool.get(1)
device_after = current_device()
print(json.dumps({"zero": zero, "one": one, "current": device_after, "default": pool.get(), "size": pool.size}))
pool.close()
""")

    assert answer["zero"] and answer["one"] and answer["zero"] != answer["one"]
    assert answer["current"] == 1
    assert answer["default"] == answer["one"]  # device=None is the current context's device
    assert answer["size"] == 2


@pytest.mark.gpu
def test_handle_is_bound_to_the_callers_stream() -> None:
    answer = _in_child("""
handle = pool.get(0)
result, stream = driver.cuStreamCreate(0)
assert result == driver.CUresult.CUDA_SUCCESS
print(json.dumps({
    "created": int(stream),
    "protocol": bound_stream(pool.get(0, stream)),
    "integer": bound_stream(pool.get(0, int(stream))),
    "default": bound_stream(pool.get(0)),
    "same_handle": pool.get(0, stream) == handle,
}))
driver.cuStreamDestroy(stream)
pool.close()
""")

    assert answer["created"] and answer["protocol"] == answer["created"] == answer["integer"]
    assert answer["default"] == 0
    assert answer["same_handle"] is True


@pytest.mark.gpu
def test_close_destroys_every_handle_and_releases_the_contexts() -> None:
    answer = _in_child("""
handles = [pool.get(0)]
worker = threading.Thread(target=lambda: handles.append(pool.get(0)))
worker.start(); worker.join()
pool.close()
result, current = driver.cuCtxGetCurrent()
try:
    pool.get(0)
    refused = False
except Exception as error:
    refused = type(error).__name__ == "UsageError"
print(json.dumps({"handles": len(set(handles)), "size": pool.size, "current": int(current), "refused": refused}))
""")

    assert answer == {"handles": 2, "size": 0, "current": 0, "refused": True}
