"""Algorithm and engine choices remembered between processes.

A cuDNN backend's first call on a problem asks cuDNN's heuristics (the anchors measured
``cudnnGetConvolutionForwardAlgorithm_v7`` at ~200 ms on a first call) or, with
``autotune=True``, times the candidates. What it chose is written here, so a new process on
the same GPU model and cuDNN release skips the question. A choice is only valid for the
GPU that was asked and the cuDNN release that answered: both are part of the scope every
choice is filed under.

One JSON file, ``algos-v{FORMAT}.json`` in `cudnnload.cachedir.cache_dir`:
``{"format": FORMAT, "scopes": {scope: {backend: {problem: choice}}}}``, where a choice
is a small JSON object the backend defines, of ints and lists of lists of ints (an
algorithm number, an engine index and its knobs). Read and written through
`cudnnload.cachedir` (a folder only its owner can write; writers merge under a lock and
replace the file atomically). A file that cannot be read, is unsafe, is not JSON, or has
another format or layout is ignored with one warning line and rewritten by the next
choice, and so is a choice of another shape; an unwritable folder only costs the next
process the question again.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from cudnnload.cachedir import Layout, read_entries, revive_entry, write_entries

FORMAT = 1  # bump when the layout of the file or of a backend's choices changes
LAYOUT = Layout("algos", FORMAT, ("scopes",), depth=4, max_entries=4096)
_CHOICE = "dict[str, int | list[list[int]]]"  # what a choice may hold

Choice = dict[str, Any]


def scope_key(device_name: str, capability: tuple[int, int], release: str) -> str:
    """What a choice is valid for: ``"NVIDIA H200 sm_90 cuDNN 9.19.0"``."""
    return f"{device_name} sm_{capability[0]}{capability[1]} cuDNN {release}"


def problem_key(*parts: object) -> str:
    """A stable text for a problem: its parts (ints, strings, tuples of them) joined by ``|``."""
    return "|".join(str(part) for part in parts)


class ChoiceStore:
    """The choices of one scope (`scope_key`), read from disk once and written through on each new choice."""

    def __init__(self, scope: str, environ: Mapping[str, str] | None = None) -> None:
        self.scope = scope
        self.path = LAYOUT.path(environ)
        self._lock = threading.Lock()
        self._choices: dict[str, dict[str, Choice]] | None = None  # backend -> problem -> choice

    def get(self, backend: str, problem: str) -> Choice | None:
        """The remembered choice, or None."""
        with self._lock:
            choice = self._read().get(backend, {}).get(problem)
        return dict(choice) if choice is not None else None

    def put(self, backend: str, problem: str, choice: Mapping[str, Any]) -> None:
        """Remember ``choice``, merged into what other processes wrote since this one read the file."""
        with self._lock:
            self._read().setdefault(backend, {})[problem] = dict(choice)
            if self.path is not None:  # an unwritable folder only costs the next process the question
                write_entries(self.path, LAYOUT, {("scopes", self.scope, backend, problem): dict(choice)})

    def _read(self) -> dict[str, dict[str, Choice]]:
        """This scope's choices, read from the file on first use (with ``_lock`` held)."""
        if self._choices is None:
            self._choices = {} if self.path is None else _scope(self.path, self.scope)
        return self._choices


def _scope(path: str, scope: str) -> dict[str, dict[str, Choice]]:
    """The choices of ``scope`` the file at ``path`` holds, by backend and problem; one of another shape is left out."""
    choices: dict[str, dict[str, Choice]] = {}
    for (_, filed_under, backend, problem), stored in read_entries(path, LAYOUT).items():
        if filed_under == scope and (choice := revive_entry(path, stored, _CHOICE, {})) is not None:
            choices.setdefault(backend, {})[problem] = choice
    return choices
