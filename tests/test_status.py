"""cudnnStatus_t codes become typed errors, per generation, with cuDNN's reason and likely causes."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.errors import LoadError, UsageError
from cudnnload.loading.capi import DataType, TensorFormat
from cudnnload.loading.status import (
    AllocFailed,
    ArchMismatch,
    BadParam,
    CudnnStatusError,
    ExecutionFailed,
    InternalError,
    NotInitialized,
    NotSupported,
    SublibraryLoadingFailed,
    SublibraryUnavailable,
    VersionMismatch,
    check,
    error_class,
    error_for,
)
from tests._wheels import CU12_90, CU12_897, CU12_928, Wheel, in_process, needs_no_driver

# (v9 code, v8 code or None, class): the same meaning under both numberings (cudnn-facts §4.3).
SAME_MEANING = [
    (1001, 1, NotInitialized), (2000, 3, BadParam), (2001, 5, BadParam), (3000, 9, NotSupported),
    (3007, 6, ArchMismatch), (1002, 14, VersionMismatch), (4000, 4, InternalError), (4003, 2, AllocFailed),
    (4006, 7, InternalError), (5000, 8, ExecutionFailed),
    (3009, None, SublibraryUnavailable), (1008, None, SublibraryLoadingFailed),
]


@pytest.mark.parametrize(("v9", "v8", "kind"), SAME_MEANING, ids=lambda value: str(getattr(value, "__name__", value)))
def test_codes_map_to_the_same_class_under_each_numbering(v9: int, v8: int | None, kind: type) -> None:
    assert error_class(v9, 9) is kind
    if v8 is not None:
        assert error_class(v8, 8) is kind


@pytest.mark.parametrize(("code", "kind"), [(2005, BadParam), (3012, NotSupported), (4001, InternalError),
                                            (5002, ExecutionFailed), (1006, CudnnStatusError)])
def test_unlisted_v9_codes_fall_back_to_their_category(code: int, kind: type) -> None:
    assert error_class(code, 9) is kind


def test_one_number_means_different_things_in_8_and_9() -> None:
    assert error_class(3, 8) is BadParam and error_class(3, 9) is CudnnStatusError
    assert error_for(1, "cudnnCreate", major=7).status_name == "CUDNN_STATUS_NOT_INITIALIZED"
    assert error_for(1001, "cudnnCreate", major=8).status_name == "CUDNN_UNKNOWN_STATUS (1001)"


def test_hierarchy_roots_in_load_error() -> None:
    assert issubclass(SublibraryUnavailable, NotSupported) and issubclass(AllocFailed, InternalError)
    assert issubclass(CudnnStatusError, LoadError)


def test_success_is_not_an_error() -> None:
    check(0, "cudnnCreate", in_process(CU12_928))
    with pytest.raises(UsageError):
        error_class(0, 9)


def test_message_carries_call_status_reason_and_fix() -> None:
    error = error_for(2000, "cudnnSetTensor4dDescriptor", major=9, last_error="(n <= 0)", path="/x/libcudnn.so.9")

    assert str(error) == ("/x/libcudnn.so.9: cudnnSetTensor4dDescriptor returned CUDNN_STATUS_BAD_PARAM (2000): "
                          "(n <= 0) (fix: fix the argument named in cuDNN's reason)")
    assert (error.status, error.status_name, error.call, error.last_error) == (
        2000, "CUDNN_STATUS_BAD_PARAM", "cudnnSetTensor4dDescriptor", "(n <= 0)")


@pytest.mark.parametrize("value", ["", "-1"])
def test_hidden_devices_lead_the_not_initialized_causes(value: str) -> None:
    error = error_for(1001, "cudnnCreate", major=9, environ={"CUDA_VISIBLE_DEVICES": value})

    hidden = next(cause for cause in error.causes if "CUDA_VISIBLE_DEVICES" in cause.what)
    assert hidden.seen
    assert [cause.seen for cause in error.causes] == sorted((cause.seen for cause in error.causes), reverse=True)
    assert "[seen here]" in error.explain()


def test_not_initialized_without_cuda_visible_devices_does_not_blame_it() -> None:
    error = error_for(1001, "cudnnCreate", major=9, environ={})

    assert not next(cause for cause in error.causes if "CUDA_VISIBLE_DEVICES" in cause.what).seen
    assert error.fix  # the first cause's fix is the error's fix


@needs_no_driver
def test_no_driver_is_the_seen_not_initialized_cause_here() -> None:
    error = error_for(1001, "cudnnCreate", major=9, environ={})

    assert error.causes[0].seen and "no NVIDIA driver" in error.causes[0].what


@needs_no_driver
@pytest.mark.parametrize(("wheel", "code"), [(CU12_928, 1001), (CU12_897, 1)], ids=str)
def test_cudnn_create_raises_not_initialized_with_cudas_reason(wheel: Wheel, code: int) -> None:
    api = in_process(wheel)
    handle = ctypes.c_void_p()

    with api.record_errors(), pytest.raises(NotInitialized) as caught:
        check(api.cudnnCreate(ctypes.byref(handle)), "cudnnCreate", api)
    assert (caught.value.status, caught.value.status_name) == (code, "CUDNN_STATUS_NOT_INITIALIZED")
    assert caught.value.last_error == "cudaGetDeviceCount(&count) != cudaSuccess"
    assert caught.value.path == api.path


@pytest.mark.parametrize(("wheel", "code"), [(CU12_928, 2000), (CU12_897, 3)], ids=str)
def test_negative_dimension_raises_bad_param_with_cudnns_reason(wheel: Wheel, code: int) -> None:
    api = in_process(wheel)
    x = ctypes.c_void_p()
    check(api.cudnnCreateTensorDescriptor(ctypes.byref(x)), "cudnnCreateTensorDescriptor", api)

    with api.record_errors(), pytest.raises(BadParam) as caught:
        check(api.cudnnSetTensor4dDescriptor(x, TensorFormat.NCHW, DataType.FLOAT, -1, 3, 8, 8),
              "cudnnSetTensor4dDescriptor", api)
    assert caught.value.status == code
    assert caught.value.last_error == "(n <= 0) || (c <= 0) || (h <= 0) || (w <= 0)"
    api.cudnnDestroyTensorDescriptor(x)


# Run in a child: the test process already maps the real 9.28 set, and a shim reached
# through a symlink to the same file would be that already-loaded copy.
_CHECK_OPS = """
import json, sys
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.status import check
api = CudnnApi(sys.argv[1], 9)
try:
    check(api.cudnnOpsVersionCheck(), "cudnnOpsVersionCheck", api)
except Exception as error:
    print(json.dumps({"type": type(error).__name__, "status": error.status, "detail": error.detail}))
"""


def _check_ops_in_child(shim: Path) -> dict[str, object]:
    environ = {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}
    environ["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    child = subprocess.run([sys.executable, "-c", _CHECK_OPS, str(shim)], env=environ, capture_output=True,
                           check=True)
    return json.loads(child.stdout)


def test_missing_sublibrary_raises_sublibrary_unavailable_naming_the_folder(tmp_path: Path) -> None:
    CU12_928.symlink_farm(tmp_path, without=("ops",))

    error = _check_ops_in_child(tmp_path / "libcudnn.so.9")

    assert (error["type"], error["status"]) == ("SublibraryUnavailable", 3009)
    assert error["detail"] == (
        f"libcudnn_ops.so.9 is not beside the shim in {tmp_path} (nor found on the library search path)")


def test_sublibrary_from_another_release_raises_sublibrary_unavailable_with_dlerror(tmp_path: Path) -> None:
    CU12_928.symlink_farm(tmp_path, without=("ops",))
    (tmp_path / "libcudnn_ops.so.9").symlink_to(CU12_90.lib_dir / "libcudnn_ops.so.9")

    error = _check_ops_in_child(tmp_path / "libcudnn.so.9")

    assert (error["type"], error["status"]) == ("SublibraryUnavailable", 3009)
    # 9.0 ops binds to graph-internal C++ symbols that 9.28 graph no longer has (cudnn-facts §1.2).
    assert str(error["detail"]).startswith(f"dlopen {tmp_path}/libcudnn_ops.so.9: ")
    assert "undefined symbol" in str(error["detail"]) and "libcudnn_graph.so.9" in str(error["detail"])
