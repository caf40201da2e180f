"""The process model (`resolve.process`): what LD_PRELOAD puts in a process before the program asks for
cuDNN, checked against the real loader (/proc/self/maps of a child that loads the shim by path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code
from cudnnload.judge.inventory import find
from cudnnload.resolve.discovery import context
from cudnnload.resolve.process import preload_entries
from tests.wheels import lib_folder

_LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG", "LD_AUDIT")
BASE = {key: value for key, value in os.environ.items() if key not in _LOADER_VARIABLES}

# Loads the shim by path, asks its version (the shim loads graph), prints the libcudnn files mapped.
_CHILD = """
import ctypes, json, sys
shim = ctypes.CDLL(sys.argv[1])
version = shim.cudnnGetVersion()
maps = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcudnn" in line})
print(json.dumps({"version": version, "maps": maps}))
"""


def _real(shim: Path, environ: dict[str, str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(shim)], env=environ, capture_output=True, text=True,
                         timeout=60, check=True)
    answer: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return answer


def test_entries_split_like_ld_so() -> None:
    assert preload_entries({"LD_PRELOAD": " /a/x.so:libz.so.1  /b/y.so::"}) == ("/a/x.so", "libz.so.1", "/b/y.so")
    assert preload_entries({}) == ()


@pytest.mark.parametrize("preloaded", ["graph", "ops"])
def test_preloaded_sublibrary_of_another_release(preloaded: str) -> None:
    """9.0's graph (or ops) in LD_PRELOAD, a 9.28 shim loaded by path: the model says the 9.0 file answers
    the shim's dlopen, as the real loader does, and the fix removes the LD_PRELOAD entry."""
    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    preload = str(old / f"libcudnn_{preloaded}.so.9")
    environ = {**BASE, "LD_PRELOAD": preload}
    ctx = context(environ)
    assert [p.path for p in ctx.preloads][0] == preload
    install = next(i for i in find([str(new)], environ=environ, ctx=ctx).installs)
    step = next(s for s in install.plan if s.library == preloaded)
    assert (step.path, step.rule, step.variable, step.entry) == (preload, "already-loaded", "LD_PRELOAD", preload)
    mixed = [f for f in install.all_findings if f.code is Code.MIXED_RELEASE and f.subject.path == preload]
    assert mixed, [f.message for f in install.all_findings]
    actions = mixed[0].fix.actions if mixed[0].fix else ()
    assert [(a.do, a.variable, a.entry) for a in actions] == [(ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD", preload)]
    if preloaded == "graph":  # the real loader: the shim's graph is the preloaded one
        real = _real(new / "libcudnn.so.9", environ)
        assert os.path.realpath(preload) in real["maps"]
        assert str(real["version"]).startswith("900")


def test_preloaded_shim_brings_its_needed() -> None:
    """A preloaded file's NEEDED are mapped too (breadth first): 9.0's ops NEEDs its graph."""
    old = lib_folder("cu12-9.0.0.312")
    environ = {**BASE, "LD_PRELOAD": str(old / "libcudnn_ops.so.9")}
    ctx = context(environ)
    mapped = {os.path.basename(p.path or "") for p in ctx.preloads}
    assert {"libcudnn_ops.so.9", "libcudnn_graph.so.9"} <= mapped
    assert ctx.linker.loaded.get("libcudnn_graph.so.9") == str(old / "libcudnn_graph.so.9")


def test_missing_preload_is_ignored_like_ld_so(tmp_path: Path) -> None:
    ctx = context({**BASE, "LD_PRELOAD": str(tmp_path / "nothing.so")})
    assert ctx.preloads[0].path is None and "cannot be preloaded" in (ctx.preloads[0].error or "")
