"""Each framework judged on the cuDNN its own loader gives it (`resolve.routes`, `judge.routes`), on CPU.

A site-packages is built as pip leaves it for PyTorch: the real cuDNN and cuBLAS wheels (hard-linked), and a
``torch`` whose ``libtorch_cuda.so`` (gcc-built) NEEDs ``libcudnn.so.9`` with torch's DT_RPATH
(``$ORIGIN/../../nvidia/cudnn/lib``) and whose ``torch._C`` says it was built with cuDNN 9.28. Then the ways
users break it, each against what PyTorch itself does on the GPU machine (tests/test_frameworks_gpu.py, and
bench/results/2026-11-24-h100-frameworks.md): what torch gets, whether doctor calls it healthy, and the fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code
from cudnnload.diagnose.doctor import Report, doctor
from cudnnload.resolve.catalog import Release
from tests.wheels import lib_folder, site_folder

BASE = {key: value for key, value in os.environ.items() if key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
TORCH_C = """
class _cudnn:
    @staticmethod
    def getCompileVersion():
        return (9, 28, 0)
"""


@pytest.fixture(scope="module")
def libtorch_cuda(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object with torch's DT_RPATH and DT_NEEDED libcudnn.so.9 (linked against a stub)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in for libtorch_cuda.so")
    folder = tmp_path_factory.mktemp("libtorch")
    source = folder / "empty.c"
    source.write_text("int cudnnload_test_symbol;\n")
    stub = folder / "libcudnn.so.9"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", stub, source, "-Wl,-soname,libcudnn.so.9"], check=True)
    built = folder / "libtorch_cuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", built, source, "-Wl,--no-as-needed", "-Wl,--disable-new-dtags",
                    "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/cublas/lib",
                    f"-L{folder}", "-l:libcudnn.so.9"], check=True)
    return built


@pytest.fixture(scope="module")
def stub_libcuda(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path]:
    """A folder with a libcuda.so.1 of the six functions 9.28's runtime-compiled engines import (all returning
    100, CUDA_ERROR_NO_DEVICE): graph then loads its engines on a CPU machine (cudnn-facts §5)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the libcuda stub")
    folder = tmp_path_factory.mktemp("libcuda")
    source = folder / "cuda.c"
    source.write_text("".join(f"int {name}(void) {{ return 100; }}\n" for name in (
        "cuGetErrorString", "cuModuleGetFunction", "cuModuleLoadData", "cuModuleUnload", "cuTensorMapEncodeIm2col",
        "cuTensorMapEncodeTiled")))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", folder / "libcuda.so.1", source, "-Wl,-soname,libcuda.so.1"],
                   check=True)
    return lambda: folder


@pytest.fixture
def site(tmp_path: Path, libtorch_cuda: Path) -> Path:
    """site-packages with the 9.28 cu12 wheel, cuBLAS 12 and a torch built with 9.28 that pins that wheel."""
    out = tmp_path / "site"
    for tag in ("cu12-9.28.0.42", "cublas-cu12-12.9.1.4"):
        shutil.copytree(site_folder(tag), out, copy_function=os.link, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".unpacked"))
    (out / "torch" / "lib").mkdir(parents=True)
    shutil.copy(libtorch_cuda, out / "torch" / "lib" / "libtorch_cuda.so")
    (out / "torch" / "__init__.py").write_text("")
    (out / "torch" / "_C.py").write_text(TORCH_C)
    info = out / "torch-2.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n"
                                   'Requires-Dist: nvidia-cudnn-cu12==9.28.0.42; platform_system == "Linux"\n')
    (info / "RECORD").write_text("torch/__init__.py,,\ntorch/_C.py,,\ntorch/lib/libtorch_cuda.so,,\n"
                                 "torch-2.11.0.dist-info/METADATA,,\ntorch-2.11.0.dist-info/RECORD,,\n")
    return out


def run(site: Path, tmp_path: Path, **environ: str) -> Report:
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), **environ}
    return doctor(env, site_paths=[str(site)])


def torch_check(report: Report) -> str:
    return next(c.summary for c in report.checks if c.name == "torch")


def errors(report: Report) -> list[str]:
    return [f.code.value for f in report.findings if f.severity == "error" and f.code not in (Code.NO_DRIVER,)]


def test_torch_gets_its_wheel_by_path_and_is_healthy(site: Path, tmp_path: Path) -> None:
    report = run(site, tmp_path)
    said = torch_check(report)
    assert said.startswith(f"torch 2.11.0 gets cuDNN 9.28.0 from {site}/nvidia/cudnn/lib (by path"), said
    assert "_preload_cuda_deps" in said
    assert errors(report) == []


OLD = "cu12-9.0.0.312"


@pytest.mark.parametrize("preloaded", ["libcudnn.so.9", "libcudnn_graph.so.9"])
def test_ld_preload_of_another_release_is_what_torch_gets_and_its_entry_the_fix(site: Path, tmp_path: Path,
                                                                                 preloaded: str) -> None:
    """GPU machine: torch stops with "cuDNN version incompatibility ... found runtime version (9, 14, 0)"
    whether the system's shim or its graph is preloaded."""
    entry = str(lib_folder(OLD) / preloaded)
    report = run(site, tmp_path, LD_PRELOAD=entry)
    assert "gets cuDNN 9.0.0" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert older.severity == "error"
    assert older.fix is not None
    assert [(a.do, a.variable, a.entry) for a in older.fix.actions] == [(ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD",
                                                                         entry)]
    assert not report.healthy


@pytest.mark.parametrize("removed", ["libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_adv.so.9",
                                     "libcudnn_engines_precompiled.so.9", "libcudnn_heuristic.so.9"])
def test_a_sublibrary_torch_never_loads_is_a_warning_not_its_failure(site: Path, tmp_path: Path,
                                                                     removed: str) -> None:
    """GPU machine: torch's convolution runs with any of these removed from its wheel."""
    (site / "nvidia" / "cudnn" / "lib" / removed).unlink()
    report = run(site, tmp_path)
    assert "gets cuDNN 9.28.0" in torch_check(report)
    assert errors(report) == [], [f.message for f in report.findings if f.severity == "error"]
    about = [f for f in report.findings if removed in (f.subject.path or "")]
    assert about and all(f.severity == "warning" for f in about)


def test_the_runtime_compiled_engines_missing_stop_torchs_convolution(site: Path, tmp_path: Path,
                                                                      stub_libcuda: Callable[[], Path]) -> None:
    """GPU machine: "cudnnFinalize failed ... CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"."""
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_engines_runtime_compiled.so.9").unlink()
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(stub_libcuda()))
    fails = next(f for f in report.findings if f.code is Code.FRAMEWORK_CALLS_FAIL)
    assert "cudnnBackendFinalize returns 1008" in fails.message
    assert fails.fix is not None and fails.fix.actions[0].do is ActionKind.PIP_INSTALL
    assert not report.healthy


def test_the_wheel_gone_torch_takes_what_the_search_finds_and_the_pin_is_the_fix(site: Path, tmp_path: Path) -> None:
    shutil.rmtree(site / "nvidia" / "cudnn")
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(lib_folder(OLD)))
    said = torch_check(report)
    assert "gets cuDNN 9.0.0" in said and "ld-library-path" in said, said
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert older.fix is not None and older.fix.actions[0].requirements == ("nvidia-cudnn-cu12==9.28.0.42",)


def test_the_wheels_graph_missing_torch_gets_the_searched_one_and_the_wheel_is_put_back(site: Path,
                                                                                         tmp_path: Path) -> None:
    """GPU machine: the wheel's graph removed, the shim loads the system's 9.14 graph from ld.so.cache."""
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9").unlink()
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(lib_folder(OLD)))
    assert "gets cuDNN 9.0.0" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert older.fix is not None
    assert older.fix.actions[0].do is ActionKind.PIP_INSTALL and "--force-reinstall" in older.fix.actions[0].options
    assert Release(9, 0, 0) == next(f for f in report.frameworks if f.framework == "torch").release
