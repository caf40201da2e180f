"""README.md is a tested manual: every ``python`` and ``sh`` block in it runs, as written, here.

A block runs as a user would run it: a ``python`` block in a fresh interpreter (the venv's), an ``sh``
block in bash with the venv's ``cudnnload`` on the PATH, each in an empty folder of its own. What a user
must supply is taken from the test wheels: ``/path/to/lib`` is the 9.28 cu12 wheel's ``nvidia/cudnn/lib``,
and that wheel is on the interpreter's path as if pip had installed it; ``/path/to/libtorch_cuda.so``, a
program or library that uses cuDNN, is this interpreter. A marker comment on the line
before a block says what else it needs:

    <!-- readme-test: gpu -->              skipped (with the reason) where no GPU is visible
    <!-- readme-test: skip WHY -->         never run here (it installs, or it is this suite itself)

Python blocks must exit 0. A shell block may find problems (exit 1: e.g. ``doctor`` on a machine without a
GPU driver), never a usage error (2), a failure of cudnnload's own (3), a traceback or a hang.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.wheels import lib_folder

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(\w+)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence
    language: str
    code: str
    marker: str | None  # "gpu", "skip"
    why: str

    def __str__(self) -> str:
        return f"README.md:{self.line}:{self.language}"


def blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text`` in ``python`` or ``sh``, with the marker on the line before each."""
    found: list[Block] = []
    lines = text.splitlines()
    at = 0
    while at < len(lines):
        fence = _FENCE.match(lines[at])
        if fence is None:
            at += 1
            continue
        end = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("```"))
        marker = _MARKER.match(lines[at - 1]) if at else None
        if fence.group(1) in ("python", "sh"):
            found.append(Block(at + 1, fence.group(1), "\n".join(lines[at + 1:end]) + "\n",
                               marker.group(1) if marker else None, marker.group(2) if marker else ""))
        at = end + 1
    return found


README_BLOCKS = blocks(README.read_text(encoding="utf-8"))


def test_every_block_is_found_and_every_marker_is_known() -> None:
    assert len(README_BLOCKS) >= 8, "the README's examples were not found"
    assert {b.marker for b in README_BLOCKS} <= {None, "gpu", "skip"}
    assert all(b.why for b in README_BLOCKS if b.marker == "skip"), "a skipped block says why"


def _wheel_site() -> Path:
    """The 9.28 cu12 wheel, unpacked: its site folder (``nvidia/cudnn/lib`` and the .dist-info)."""
    return lib_folder("cu12-9.28.0.42").parents[2]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    # `srun` for the Slurm example: this machine is a one-node cluster (runs the command once, here).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text('#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\nexec "$@"\n')
    (fake / "srun").chmod(0o755)
    env["PATH"] = os.pathsep.join([str(fake), venv_bin, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(_wheel_site()), str(REPO), env.get("PYTHONPATH", "")])
    return env


def _runnable(block: Block) -> str:
    """The block with what a user supplies filled in: a program for a framework's library (this
    interpreter: an ELF program as good as libtorch_cuda.so for resolving), the wheel's lib folder."""
    return block.code.replace("/path/to/libtorch_cuda.so", os.path.realpath(sys.executable)).replace(
        "/path/to/lib", str(_wheel_site() / "nvidia" / "cudnn" / "lib"))


@pytest.mark.timeout_s(240)
@pytest.mark.parametrize("block", README_BLOCKS, ids=str)
def test_the_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.marker == "skip":
        pytest.skip(f"{block}: {block.why}")
    if block.marker == "gpu":
        from tests.gpu import require_gpus

        require_gpus(1)
    work = tmp_path / "work"
    work.mkdir()
    if block.language == "python":
        command = [sys.executable, "-c", _runnable(block)]
    else:
        command = ["bash", "-c", "set -o pipefail\n" + _runnable(block)]
    done = subprocess.run(command, cwd=work, env=_environment(tmp_path), capture_output=True, text=True,
                          timeout=200, check=False)
    said = f"{block} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, said
    if block.language == "python":
        assert done.returncode == 0, said
    else:
        assert done.returncode in (0, 1), said
        assert "cudnnload: error:" not in done.stderr, said


def test_the_cache_files_named_are_those_of_todays_formats() -> None:
    """Each cache file the README names (`elf-vN.json`, ...) is at the format this code writes: a format bump
    renames the file, and the README's name of it would point at nothing."""
    from cudnnload import recall
    from cudnnload.dispatch import algos
    from cudnnload.loading import plans
    from cudnnload.resolve import elfcache

    formats = {"elf": elfcache.FORMAT, "plans": plans.PLAN_FORMAT, "algos": algos.FORMAT, "answers": recall.FORMAT}
    named = re.findall(r"\b(elf|plans|algos|answers)-v(\d+)\b", README.read_text(encoding="utf-8"))
    assert {name for name, _ in named} == set(formats)
    assert [(name, int(number)) for name, number in named if int(number) != formats[name]] == []
