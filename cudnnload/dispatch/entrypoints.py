"""Entry points of one group, read straight from the ``entry_points.txt`` of installed distributions.

importlib.metadata costs 20 to 45 ms to import (email, csv, zipfile, ...) before it reads a file,
on every process start that uses a backend; the files themselves are a handful of small reads.
The rules are importlib.metadata's: distributions on ``sys.path`` in order, the first one of a
name wins, ``*.dist-info`` and ``*.egg-info`` folders, INI sections ``[group]`` of
``name = module:attribute`` lines (packaging's entry-points specification).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_FOLDER = re.compile(r"^(?P<name>[^-]+)(?:-(?P<version>[^-]+))?(?:-[^-]*)*\.(?:dist|egg)-info$")


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str  # "module:attribute"
    distribution: str
    version: str

    def load(self) -> Any:
        module, _, attribute = self.value.partition(":")
        target: Any = importlib.import_module(module.strip())
        for part in filter(None, attribute.strip().split(".")):
            target = getattr(target, part)
        return target


def entry_points(group: str, paths: Sequence[str] | None = None) -> tuple[EntryPoint, ...]:
    """Every entry point of ``group`` on ``paths`` (default ``sys.path``)."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for path in sys.path if paths is None else paths:
        try:
            names = sorted(os.listdir(path or "."))
        except OSError:
            continue
        for folder in names:
            match = _FOLDER.match(folder)
            if match is None:
                continue
            key = match.group("name").lower().replace("-", "_").replace(".", "_")
            if key in seen:
                continue
            seen.add(key)
            found += _read(os.path.join(path or ".", folder), group, match.group("name"), match.group("version"))
    return tuple(found)


def _read(folder: str, group: str, name: str, version: str | None) -> list[EntryPoint]:
    try:
        with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return []
    points: list[EntryPoint] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            key, _, value = line.partition("=")
            points.append(EntryPoint(key.strip(), value.strip(), *_identity(folder, name, version)))
    return points


def _identity(folder: str, name: str, version: str | None) -> tuple[str, str]:
    """The distribution's own spelling of its name and version (METADATA), else the folder's."""
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, meta), encoding="utf-8", errors="replace") as handle:
                header = handle.read(4096).split("\n\n", 1)[0]
        except OSError:
            continue
        fields = dict(line.split(": ", 1) for line in header.splitlines() if ": " in line)
        return fields.get("Name", name), fields.get("Version", version or "?")
    return name, version or "?"
