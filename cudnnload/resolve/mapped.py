"""What a running process has mapped: the files ``/proc/PID/maps`` lists.

The linker model's "already loaded" rule starts from this (a soname mapped in the process wins
over any search), the child probe reports it, and ``trace`` samples it while a program runs.
"""

from __future__ import annotations

import os

# Libraries worth reporting ("libcuda" also covers a dynamic libcudart).
_MAPPED_PREFIXES = ("libcudnn", "libcublas", "libnvrtc", "libcuda")


def mapped_libraries(pid: str = "self") -> tuple[str, ...]:
    """The CUDA-family files (libcudnn*, libcublas*, libnvrtc*, libcuda*) mapped into a process
    (default: this one), sorted; () when the process is gone.

    /proc/PID/maps shows the real path of each file: a library opened through
    a symlink appears under its target.
    """
    paths: set[str] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and os.path.basename(fields[5].rstrip()).startswith(_MAPPED_PREFIXES):
                    paths.add(fields[5].rstrip())
    except OSError:
        return ()
    return tuple(sorted(paths))
