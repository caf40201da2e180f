"""Algorithm and engine choices remembered between processes.

A cuDNN backend's first call on a problem asks cuDNN's heuristics (the anchors measured
``cudnnGetConvolutionForwardAlgorithm_v7`` at ~200 ms on a first call) or, with
``autotune=True``, times the candidates. What it chose is written here, so a new process on
the same GPU model and cuDNN release skips the question. A choice is only valid for the
GPU that was asked and the cuDNN release that answered: both are part of the scope every
choice is filed under.

One JSON file, ``algos-v{FORMAT}.json`` in `cudnnload.cachedir.cache_dir`:
``{"format": FORMAT, "scopes": {scope: {backend: {problem: choice}}}}``, where a choice
is a small JSON object of ints the backend defines (an algorithm number, an engine index
and its knobs). Read and written through `cudnnload.cachedir` (a folder only its owner
can write, atomic replacement). A file that cannot be read, is unsafe, is not JSON, or
has another format is ignored and rewritten by the next choice; an unwritable folder
only costs the next process the question again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from cudnnload.cachedir import cache_dir, read_json, write_json

FORMAT = 1  # bump when the layout of the file or of a backend's choices changes

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
        root = cache_dir(environ)
        self.path = None if root is None else os.path.join(root, f"algos-v{FORMAT}.json")
        self._lock = threading.Lock()
        self._choices: dict[str, dict[str, Choice]] | None = None  # backend -> problem -> choice

    def get(self, backend: str, problem: str) -> Choice | None:
        """The remembered choice, or None."""
        with self._lock:
            if self._choices is None:
                self._choices = _scope(_read(self.path), self.scope)
            choice = self._choices.get(backend, {}).get(problem)
        return dict(choice) if isinstance(choice, dict) else None

    def put(self, backend: str, problem: str, choice: Mapping[str, Any]) -> None:
        """Remember ``choice``, merged into what other processes wrote since this one read the file."""
        with self._lock:
            if self._choices is None:
                self._choices = _scope(_read(self.path), self.scope)
            self._choices.setdefault(backend, {})[problem] = dict(choice)
            if self.path is None:
                return
            content = _read(self.path)
            mine = _scope(content, self.scope)
            mine.setdefault(backend, {})[problem] = dict(choice)
            content["scopes"][self.scope] = mine
            write_json(self.path, content)  # an unwritable folder only costs the next process the question


def _read(path: str | None) -> dict[str, Any]:
    """The file's content, or an empty one when it is missing, unreadable, unsafe, corrupt or of another format."""
    empty: dict[str, Any] = {"format": FORMAT, "scopes": {}}
    content = read_json(path) if path is not None else None
    if not isinstance(content, dict) or content.get("format") != FORMAT or not isinstance(content.get("scopes"), dict):
        return empty
    return content


def _scope(content: dict[str, Any], scope: str) -> dict[str, dict[str, Choice]]:
    found = content["scopes"].get(scope)
    if not isinstance(found, dict):
        return {}
    return {backend: dict(problems) for backend, problems in found.items() if isinstance(problems, dict)}
