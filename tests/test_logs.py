"""cuDNN's own messages reach Python logging; its log variables are set for both generations, warned when late."""

from __future__ import annotations

import ctypes
import logging
import warnings

import pytest

from cudnnload.loading.capi import Severity
from cudnnload.loading.logs import forward_to_logging, set_log_env
from tests._wheels import CU12_928, in_process

pytestmark = pytest.mark.wheels


def test_a_failed_call_is_logged_with_its_reason_and_status(caplog: pytest.LogCaptureFixture) -> None:
    api = in_process(CU12_928)
    previous = api.callback()
    try:
        forward_to_logging(api, severities=(Severity.ERROR,))
        descriptor = ctypes.c_void_p()
        assert api.cudnnCreateTensorDescriptor(ctypes.byref(descriptor)) == 0
        with caplog.at_level(logging.ERROR, logger="cudnn"):
            status = api.cudnnSetTensor4dDescriptor(descriptor, 0, 0, -1, 3, 8, 8)  # n = -1
        api.cudnnDestroyTensorDescriptor(descriptor)
    finally:
        api.set_callback(*previous)
    assert status == 2000  # CUDNN_STATUS_BAD_PARAM
    record = next(r for r in caplog.records if "(n <= 0)" in r.getMessage())
    assert record.levelno == logging.ERROR and record.cudnn_status == 2000  # type: ignore[attr-defined]
    assert "cudnnSetTensor4dDescriptor" in record.getMessage()


def test_log_env_sets_the_v9_level_and_the_v8_switches() -> None:
    env: dict[str, str] = {}
    set_log_env(2, "/tmp/cudnn-%i.log", environ=env)
    assert env == {"CUDNN_LOGLEVEL_DBG": "2", "CUDNN_LOGERR_DBG": "1", "CUDNN_LOGWARN_DBG": "1",
                   "CUDNN_LOGINFO_DBG": "0", "CUDNN_LOGDEST_DBG": "/tmp/cudnn-%i.log"}


def test_setting_log_env_after_cudnn_loaded_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    in_process(CU12_928)  # libcudnn_graph is now mapped: it has read the variables already
    for name in ("CUDNN_LOGLEVEL_DBG", "CUDNN_LOGERR_DBG", "CUDNN_LOGWARN_DBG", "CUDNN_LOGINFO_DBG",
                 "CUDNN_LOGDEST_DBG"):
        monkeypatch.setenv(name, "")  # recorded, so that what set_log_env sets is undone after the test
        monkeypatch.delenv(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        set_log_env(1)
    assert any("take effect only in new processes" in str(w.message) for w in caught)


def test_bad_log_level_is_refused() -> None:
    with pytest.raises(ValueError, match="0..3"):
        set_log_env(7, environ={})
