"""cuDNN's own messages, forwarded to Python ``logging``; and its logging variables, set in time.

cuDNN reports through ``cudnnSetCallback`` with no variable set (cudnn-facts
§4.2): each message is several lines, the first naming the API call. The
``CUDNN_LOG*`` variables are read once, when libcudnn_graph (9.x) or
libcudnn_ops_infer (8.x) loads (§6.1): setting them later does nothing, so
the helpers here warn when that has already happened.
"""

from __future__ import annotations

import ctypes
import logging
import os
import warnings
from collections.abc import MutableMapping
from typing import Any

from cudnnload.loading.capi import Callback, CudnnApi, Severity, message_lines

LOGGER = logging.getLogger("cudnn")

# cudnnSeverity_t -> logging level. INFO messages are one per API call: DEBUG in Python terms.
LEVELS: dict[int, int] = {Severity.FATAL: logging.CRITICAL, Severity.ERROR: logging.ERROR,
                          Severity.WARNING: logging.WARNING, Severity.INFO: logging.DEBUG}

_installed: dict[int, Any] = {}  # id(api) -> the ctypes callback object, kept alive while cuDNN holds it


def forward_to_logging(
    api: CudnnApi, logger: logging.Logger = LOGGER, severities: tuple[Severity, ...] = (
        Severity.ERROR, Severity.WARNING),
) -> None:
    """Send cuDNN's messages of ``severities`` to ``logger``, with the status and call as extras."""

    def on_message(severity: int, _user: int | None, debug: Any, msg: int | None) -> None:
        lines = message_lines(msg)
        status = debug.contents.cudnnStatus if debug else 0
        logger.log(LEVELS.get(severity, logging.INFO), "%s", "\n".join(lines),
                   extra={"cudnn_status": status, "cudnn_severity": severity})

    callback = Callback(on_message)
    _installed[id(api)] = callback
    api.set_callback(sum(s.mask for s in severities), None, ctypes.cast(callback, ctypes.c_void_p).value)


def _already_read(environ_is_process: bool) -> str | None:
    """The library that has already read the variables, when it is mapped in this process."""
    if not environ_is_process:
        return None
    from cudnnload.resolve.mapped import mapped_libraries

    return next((path for path in mapped_libraries()
                 if os.path.basename(path).startswith(("libcudnn_graph.so", "libcudnn_ops_infer.so"))), None)


def set_log_env(level: int, destination: str = "stderr", environ: MutableMapping[str, str] | None = None) -> None:
    """Set cuDNN's logging variables for both generations.

    ``level``: 0 off, 1 errors, 2 +warnings, 3 +info (``CUDNN_LOGLEVEL_DBG``, 9.x);
    the legacy switches ``CUDNN_LOGERR_DBG``/``LOGWARN``/``LOGINFO`` follow it
    (8.x reads only those; 9.28 honours both). ``destination``: ``stderr``,
    ``stdout`` or a file path (``%i`` becomes the process id). Warns when
    cuDNN in this process has already read them.
    """
    if level not in (0, 1, 2, 3):
        raise ValueError(f"cuDNN log level must be 0..3, not {level!r}")
    target = os.environ if environ is None else environ
    target["CUDNN_LOGLEVEL_DBG"] = str(level)
    target["CUDNN_LOGERR_DBG"] = "1" if level >= 1 else "0"
    target["CUDNN_LOGWARN_DBG"] = "1" if level >= 2 else "0"
    target["CUDNN_LOGINFO_DBG"] = "1" if level >= 3 else "0"
    target["CUDNN_LOGDEST_DBG"] = destination
    late = _already_read(environ is None)
    if late:
        warnings.warn(f"cuDNN logging variables set after {late} was loaded: they take effect only in new "
                      "processes (use cudnnload.forward_to_logging for this one)", RuntimeWarning, stacklevel=2)
