"""The install's closure outside cuDNN (resolve.discovery.dependencies), held against the real loader.

What cuDNN and its dependencies NEED or dlopen (libstdc++, libgcc_s, libz, cuBLASLt, NVRTC and its builtins,
libcuda) is each looked up from the object that asks, by that object's own search, and its version needs are
checked against the copy found first: the real wheels laid out as pip lays them out, run by fixtures/glibc's
program under ld.so, and judged by cudnnload (`dependency-version`, its fix applied and proven).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudnnload.codes import Code
from cudnnload.diagnose.inventory import judged_install_of
from cudnnload.resolve.discovery import context, install_of
from cudnnload.verdicts import Finding
from fixtures.glibc.scene import Lib, Node, Program, Scene, build, check, observe
from tests.wheels import cache_root

CUDNN = "nvidia-cudnn-cu12-9.28.0.42/nvidia/cudnn/lib"
CUBLAS = "nvidia-cublas-cu12-12.9.1.4/nvidia/cublas/lib"
NVRTC = "nvidia-cuda-nvrtc-cu12-12.9.86/nvidia/cuda_nvrtc/lib"
NVRTC_INFO = "nvidia-cuda-nvrtc-cu12-12.9.86/nvidia_cuda_nvrtc_cu12-12.9.86.dist-info"


def _wheels() -> None:
    if not (cache_root() / "unpacked" / NVRTC).is_dir() or not (cache_root() / "unpacked" / CUDNN).is_dir():
        pytest.skip("the real cuDNN 9.28 cu12, cuBLAS and NVRTC wheels are not unpacked (make wheels)")


def _site(*extra: Lib | Node) -> tuple[Lib | Node, ...]:
    """cuDNN's graph and engines, cuBLAS and NVRTC as pip puts them in one site-packages folder."""
    files = [Node(f"site/nvidia/cudnn/lib/{name}", f"wheel:{CUDNN}/{name}")
             for name in ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9")]
    files += [Node(f"site/nvidia/cublas/lib/{name}", f"wheel:{CUBLAS}/{name}")
              for name in ("libcublas.so.12", "libcublasLt.so.12")]
    files += [Node(f"site/nvidia/cuda_nvrtc/lib/{name}", f"wheel:{NVRTC}/{name}")
              for name in ("libnvrtc.so.12", "libnvrtc-builtins.so.12.9")]
    files += [Node("site/nvidia_cuda_nvrtc_cu12-12.9.86.dist-info/METADATA", f"wheel:{NVRTC_INFO}/METADATA")]
    return (*files, *extra)


def _shadowing(scene: Scene, code: Code) -> tuple[Finding, Path]:
    """The scene, run under the real loader and agreeing with the model, then judged by cudnnload with its
    LD_LIBRARY_PATH: the finding of ``code``, and the scene's folder."""
    predicted, observed, found = check(scene)
    assert not found, "\n".join(found)
    assert "not found (required by" in observed.opens[0]
    folder = build(scene)
    environ = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(folder / "old")}
    judged = judged_install_of(str(folder / "site/nvidia/cudnn/lib/libcudnn.so.9"), context(environ, use_cache=False),
                               "test")
    assert judged is not None
    finding = next(f for f in judged.findings if f.code is code)
    action = finding.fix.actions[0]
    assert (action.do, action.variable, action.entry) == ("env-remove-entry", "LD_LIBRARY_PATH", str(folder / "old"))
    return finding, folder


def test_nvrtc_dlopens_the_builtins_of_its_own_release_through_its_runpath() -> None:
    """libnvrtc.so.12 (RUNPATH "$ORIGIN:") compiling a kernel dlopens libnvrtc-builtins.so.12.9: the closure names
    that file, asked for by NVRTC, and the real loader maps it (LD_DEBUG: dynamically loaded by libnvrtc)."""
    _wheels()
    scene = Scene("closure-nvrtc-builtins", files=_site(), program=Program(),
                  actions=("nvrtc:{scene}/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",))
    predicted, observed, found = check(scene)

    assert not found, "\n".join(found)
    builtins = [lookup for lookup in observed.lookups if lookup.name == "libnvrtc-builtins.so.12.9"]
    assert builtins and builtins[0].asker.endswith("/libnvrtc.so.12") and builtins[0].mapped is not None


def test_the_closure_asks_each_library_from_the_object_that_loads_it() -> None:
    _wheels()
    scene = Scene("closure-whole", files=_site(), program=Program())
    folder = build(scene)
    lib = folder / "site/nvidia/cudnn/lib"
    ctx = context({"PATH": "/usr/bin:/bin"}, use_cache=False)

    install = install_of(str(lib / "libcudnn.so.9"), ctx, "test")
    assert install is not None
    steps = {step.library: step for step in install.dependencies}

    assert steps["libcublasLt.so.12"].path == str(lib / "../../cublas/lib/libcublasLt.so.12")
    assert steps["libcublasLt.so.12"].requested_by == str(lib / "libcudnn_engines_precompiled.so.9")
    assert steps["libnvrtc-builtins.so.12.9"].requested_by == str(lib / "../../cuda_nvrtc/lib/libnvrtc.so.12")
    assert steps["libnvrtc-builtins.so.12.9"].rule == "runpath"
    assert steps["libstdc++.so.6"].path is not None and not steps["libstdc++.so.6"].lacks


def test_an_older_libstdcxx_found_first_is_said_with_the_copy_and_its_entry_goes() -> None:
    """A libstdc++.so.6 without GLIBCXX_3.4.21 first on LD_LIBRARY_PATH: the real loader refuses cuDNN's graph
    ("version `CXXABI_1.3.8' not found (required by libcudnn_graph.so.9)"); cudnnload says which copy, which
    versions, and removes the entry; with it removed the real dlopen succeeds."""
    _wheels()
    old = Lib("old/libstdc++.so.6", defines=("GLIBCXX_3.4", "CXXABI_1.3"))
    scene = Scene("closure-old-libstdcxx", files=_site(old), program=Program(),
                  environ={"LD_LIBRARY_PATH": "{scene}/old"},
                  actions=("open:{scene}/site/nvidia/cudnn/lib/libcudnn_graph.so.9",))
    finding, folder = _shadowing(scene, Code.LIBSTDCXX_TOO_OLD)
    assert finding.subject.path == str(folder / "site/nvidia/cudnn/lib/libcudnn_graph.so.9")
    assert f"{folder}/old/libstdc++.so.6, through the LD_LIBRARY_PATH entry" in finding.message

    fixed = observe(Scene(scene.name, files=scene.files, program=scene.program, actions=scene.actions), folder)
    assert fixed.opens == (f"open {folder}/site/nvidia/cudnn/lib/libcudnn_graph.so.9 ok",)
    assert os.path.realpath(folder / "old/libstdc++.so.6") not in fixed.maps


def test_a_dependency_found_first_without_a_version_node_is_dependency_version_and_its_entry_goes() -> None:
    """A libgcc_s.so.1 defining only GCC_3.0 first on LD_LIBRARY_PATH: cuDNN's graph needs GCC_3.4 of it; the
    real dlopen fails on a version need and cudnnload names the copy, the versions and the entry to remove."""
    _wheels()
    scene = Scene("closure-old-libgcc", files=_site(Lib("old/libgcc_s.so.1", defines=("GCC_3.0",))),
                  program=Program(), environ={"LD_LIBRARY_PATH": "{scene}/old"},
                  actions=("open:{scene}/site/nvidia/cudnn/lib/libcudnn_graph.so.9",))
    finding, folder = _shadowing(scene, Code.DEPENDENCY_VERSION)
    assert finding.subject.path == str(folder / "old/libgcc_s.so.1") and "GCC_3.4" in finding.message
