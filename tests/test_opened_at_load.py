"""What a library dlopens as it loads, and the cuDNN 8 shim before 8.9 that reads the error one left behind.

cuBLAS 11.11's cuBLASLt (what cuDNN 8.5's libraries NEED, as TensorFlow 2.14 and PyTorch 2.1 cu118 pinned it) runs
``dlopen("libcuda.so.1")`` twice and ``dlopen("libnvrtc.so")`` in its initializer; the unversioned name is one only
a CUDA toolkit's development link answers (NVRTC 11's wheel ships libnvrtc.so.11.2 alone). The 8.5 shim reads
dlerror() after its dlopen of a sub-library succeeded: the error of the last of those dlopens, when it failed, makes
it print "Could not load library libcudnn_ops_infer.so.8. Error: libnvrtc.so: ..." and abort. With libnvrtc.so
found, the first calls work and cnn_infer's own dlopen of the unversioned libcuda.so (8.5's; 8.9.7's opens
libcuda.so.1) stops it at cudnnCnnInferVersionCheck on a machine without the driver. Each prediction is held
against the real shim, run here (before, doctor predicted cudnnGetVersion = 8500 and said it disagreed with its
own probe). Measured with LD_DEBUG=libs: tests below, and catalog.OPENS_AT_LOAD.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.resolve.catalog import Release, dlopens_at_load, opens_entry
from cudnnload.resolve.discovery import holds
from tests.wheels import cache_root, lib_folder

pytestmark = pytest.mark.wheels
EIGHT_FIVE = "cu11-8.5.0.96"
CALLS = ("cudnnGetVersion", "cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck")


def _unpacked(name: str, lib: str) -> Path:
    folder = cache_root() / "unpacked" / name
    if not (folder / ".unpacked").exists():
        pytest.skip(f"wheel {name} not unpacked under {folder.parent}: run `make wheels`")
    return folder / lib


@pytest.fixture
def cublas() -> Path:
    return _unpacked("nvidia-cublas-cu11-11.11.3.6", "nvidia/cublas/lib")


@pytest.fixture
def nvrtc_link(tmp_path: Path) -> Path:
    """A folder with libnvrtc.so linked to NVRTC 11's libnvrtc.so.11.2 (what a toolkit's -dev package does)."""
    real = _unpacked("nvidia-cuda-nvrtc-cu11-11.8.89", "nvidia/cuda_nvrtc/lib") / "libnvrtc.so.11.2"
    folder = tmp_path / "nvrtc"
    folder.mkdir()
    (folder / "libnvrtc.so").symlink_to(real)
    return folder


def _no_driver() -> None:
    if ctypes.util.find_library("cuda"):
        pytest.skip("the driver's libcuda is here: the abort these layouts show needs a machine without it")


def _real(ld_library_path: str) -> tuple[list[str], str]:
    """The real 8.5 shim in a child: each call's result until it dies, and what it printed."""
    code = ("import ctypes, sys\nshim = ctypes.CDLL(sys.argv[1])\nfor name in sys.argv[2:]:\n"
            "    print(name, getattr(shim, name)(), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code, str(lib_folder(EIGHT_FIVE) / "libcudnn.so.8"), *CALLS],
                          capture_output=True, text=True, env={**os.environ, "LD_LIBRARY_PATH": ld_library_path},
                          timeout=120, check=False)
    return done.stdout.split("\n")[:-1], done.stderr.strip()


def _doctor(ld_library_path: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", str(lib_folder(EIGHT_FIVE)),
                           "--env", f"LD_LIBRARY_PATH={ld_library_path}"], capture_output=True, text=True,
                          env={**os.environ, "CUDNNLOAD_NO_CACHE": "1"}, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)["result"]


def _abort_said(report: dict) -> tuple[str, str]:
    """(the finding's subject library, the message of its abort) of the finding that carries the abort."""
    for finding in report["findings"]:
        for consequence in finding.get("consequences") or ():
            if consequence.get("effect") == "abort":
                return finding["subject"]["library"], consequence["message"]
    raise AssertionError([f["message"] for f in report["findings"]])


def test_cublaslt_11_11_is_told_from_11_10_by_the_name_it_holds(cublas: Path) -> None:
    lt = cublas / "libcublasLt.so.11"
    assert holds(str(lt), b"libnvrtc.so")
    assert dlopens_at_load("libcublasLt.so.11", None, lambda name: holds(str(lt), name)) == ("libcuda.so.1",
                                                                                            "libnvrtc.so")
    # LD_DEBUG=libs, the library dlopened alone: what its initializer asks for
    log = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(lt)],
                         capture_output=True, text=True, env={**os.environ, "LD_DEBUG": "libs"}, timeout=60,
                         check=False).stderr
    asked = [line.split("find library=")[1].split()[0] for line in log.splitlines() if "find library=lib" in line]
    assert [name for name in asked if name.startswith(("libcuda", "libnvrtc"))][-1] == "libnvrtc.so", asked
    assert dlopens_at_load("libcudnn_cnn_infer.so.8", Release(8, 5, 0)) == ("libcuda.so",)
    assert dlopens_at_load("libcudnn_cnn_infer.so.8", Release(8, 9, 7)) == ("libcuda.so.1",)
    # 8.7.0's cnn_infer opens the driver, then libnvrtc.so, whose error its shim aborts on when cuBLASLt was already
    # in the process; 8.8.1's opens libnvrtc.so first and leaves no error (measured with those wheels, which the
    # test wheels do not hold: bench/cudnn8_differential.py)
    seven = opens_entry("libcudnn_cnn_infer.so.8", Release(8, 7, 0))
    assert seven is not None and seven.names == ("libcuda.so.1", "libnvrtc.so") and seven.leaves_error
    eight = opens_entry("libcudnn_cnn_infer.so.8", Release(8, 8, 1))
    assert eight is not None and eight.names == ("libnvrtc.so", "libcuda.so.1") and not eight.leaves_error


def test_the_shim_aborts_at_its_first_call_on_cublaslts_libnvrtc_so_as_predicted(cublas: Path) -> None:
    results, said = _real(str(cublas))
    assert results == [] and said == "Could not load library libcudnn_ops_infer.so.8. Error: libnvrtc.so: cannot " \
        "open shared object file: No such file or directory", (results, said)
    report = _doctor(str(cublas))
    probe = next(check for check in report["checks"] if check["name"] == "probe")
    assert probe["summary"].startswith("as predicted: cudnnGetVersion aborts"), probe
    library, message = _abort_said(report)
    assert (library, message) == ("libnvrtc.so", said)
    first = next(f for f in report["findings"] if f["severity"] == "error")
    # no NVRTC here to link to: the NVRTC wheel of its CUDA installed into the cuDNN wheel's site (the unpacked
    # wheel, a folder of no interpreter: with the wheel it holds, --upgrade) and the link made to the file it ships
    install, link = first["fix"]["actions"]
    assert first["subject"]["library"] == "libnvrtc.so" and install["do"] == "pip-install", first
    assert install["requirements"][-1] == "nvidia-cuda-nvrtc-cu11" and "--upgrade" in install["options"], first
    assert link["do"] == "relink" and link["path"].endswith("/libnvrtc.so") \
        and link["target"].endswith("/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2"), first
    assert not any(f["code"] == "prediction-disagrees" for f in report["findings"])


def test_with_libnvrtc_so_linked_cnn_infers_own_libcuda_so_stops_it_later_as_predicted(
        cublas: Path, nvrtc_link: Path) -> None:
    _no_driver()
    path = f"{cublas}:{nvrtc_link}"
    results, said = _real(path)
    assert [line.split()[0] for line in results] == ["cudnnGetVersion", "cudnnOpsInferVersionCheck"], results
    assert said == "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object " \
        "file: No such file or directory", said
    report = _doctor(path)
    probe = next(check for check in report["checks"] if check["name"] == "probe")
    assert probe["summary"].startswith("as predicted: cudnnCnnInferVersionCheck aborts"), probe
    assert _abort_said(report)[1] == said
    assert not any(f["code"] == "prediction-disagrees" for f in report["findings"])


def test_the_link_the_fix_names_makes_the_first_calls_work(tmp_path: Path) -> None:
    """A site-packages as pip lays out cuDNN 8.5, cuBLAS 11.11 and NVRTC 11 (each file linked in): the fix names the
    NVRTC installed and the folder cuBLASLt searches first ($ORIGIN), as a relink; made, the shim's first calls
    return."""
    site = tmp_path / "site"
    for name, lib in (("nvidia-cudnn-cu11-8.5.0.96", "nvidia/cudnn/lib"),
                      ("nvidia-cublas-cu11-11.11.3.6", "nvidia/cublas/lib"),
                      ("nvidia-cuda-nvrtc-cu11-11.8.89", "nvidia/cuda_nvrtc/lib")):
        folder = site / lib
        folder.mkdir(parents=True)
        for file in _unpacked(name, lib).glob("lib*.so*"):
            (folder / file.name).symlink_to(file)
    shim = site / "nvidia/cudnn/lib/libcudnn.so.8"
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", str(shim)], capture_output=True,
                          text=True, env={**os.environ, "CUDNNLOAD_NO_CACHE": "1"}, timeout=300, check=False)
    report = json.loads(done.stdout)["result"]
    first = next(f for f in report["findings"] if f["severity"] == "error")
    assert first["subject"]["library"] == "libnvrtc.so", first
    [link] = first["fix"]["actions"]  # a relink a tool makes (``ln -sfn TARGET PATH``)
    assert (link["do"], link["target"], link["path"]) == (
        "relink", str(site / "nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2"),
        str(site / "nvidia/cudnn/lib/../../cublas/lib/libnvrtc.so")), first["fix"]
    os.symlink(link["target"], link["path"])
    code = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cudnnGetVersion())"
    ran = subprocess.run([sys.executable, "-c", code, str(shim)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert ran.stdout.strip() == "8500", ran


def test_cublaslt_already_in_the_process_runs_no_initializer_in_the_shims_dlopen(cublas: Path) -> None:
    """cuBLASLt preloaded (as a framework that links cuBLAS has it before its first cuDNN call): its dlopens ran at
    the start, the shim's dlopen of ops_infer leaves no error, and only cnn_infer's own libcuda.so stops it."""
    _no_driver()
    preload = f"{cublas}/libcublasLt.so.11"
    code = ("import ctypes, sys\nshim = ctypes.CDLL(sys.argv[1])\nfor name in sys.argv[2:]:\n"
            "    print(name, getattr(shim, name)(), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code, str(lib_folder(EIGHT_FIVE) / "libcudnn.so.8"), *CALLS],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "LD_LIBRARY_PATH": str(cublas), "LD_PRELOAD": preload})
    assert [line.split()[0] for line in done.stdout.split("\n")[:-1]] == list(CALLS[:2]), done
    run = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", str(lib_folder(EIGHT_FIVE)), "--env",
                          f"LD_LIBRARY_PATH={cublas}", "--env", f"LD_PRELOAD={preload}"], capture_output=True,
                         text=True, env={**os.environ, "CUDNNLOAD_NO_CACHE": "1"}, timeout=300, check=False)
    report = json.loads(run.stdout)["result"]
    probe = next(check for check in report["checks"] if check["name"] == "probe")
    assert probe["summary"].startswith("as predicted: cudnnCnnInferVersionCheck aborts"), probe
    assert _abort_said(report)[1] == done.stderr.strip()
