"""Where cudnnload keeps what it remembers between processes (ELF facts, load verdicts)."""

from __future__ import annotations

import os
from collections.abc import Mapping


def cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """``$CUDNNLOAD_CACHE``, else ``$XDG_CACHE_HOME/cudnnload`` or ``~/.cache/cudnnload``;
    None when ``CUDNNLOAD_NO_CACHE`` is set (nothing is read or written then)."""
    env = os.environ if environ is None else environ
    if env.get("CUDNNLOAD_NO_CACHE"):
        return None
    return env.get("CUDNNLOAD_CACHE") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "cudnnload")
