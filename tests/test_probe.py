"""The child-process probe against the real wheels, including sets that abort or fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.loading import probe as probe_module
from cudnnload.loading.probe import probe
from cudnnload.resolve.catalog import Release, generation
from tests._wheels import ALL, CU12_90, CU12_897, CU12_928, Wheel, needs_no_driver


def _clean_environ() -> dict[str, str]:
    """This process's environment without LD_LIBRARY_PATH, so that a left-out sibling stays missing."""
    return {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}


@pytest.mark.parametrize("wheel", ALL, ids=str)
def test_every_version_check_of_the_generation_passes(wheel: Wheel) -> None:
    result = probe(wheel.files(), wheel.major)

    assert result.completed, result.verdict
    checks = [step for step in result.steps if step.name.endswith("VersionCheck")]
    assert len(checks) == wheel.version_checks
    assert [(step.name, step.status) for step in checks] == [(step.name, 0) for step in checks]
    assert {step.name for step in checks} | set(result.not_exported) >= {
        lib.version_check for lib in generation(wheel.major).libraries if lib.version_check}


@pytest.mark.parametrize("wheel", ALL, ids=str)
def test_version_getters_decode_to_the_wheels_release(wheel: Wheel) -> None:
    result = probe(wheel.files(), wheel.major)

    assert result.release == wheel.release
    assert result.step("cudnnGetCudartVersion").value == wheel.cudart
    assert result.step("cudnnGetMaxDeviceVersion").value == wheel.max_device
    kinds = ("MAJOR_VERSION", "MINOR_VERSION", "PATCH_LEVEL")
    parts = [result.step(f"cudnnGetProperty({kind})").value for kind in kinds]
    assert Release(*parts) == wheel.release


def test_9_0_lacks_only_the_subquadratic_check() -> None:
    result = probe(CU12_90.files(), 9)

    assert result.not_exported == ("cudnnSubquadraticOpsVersionCheck",)
    assert result.step("cudnnSubquadraticOpsVersionCheck") is None


def test_mapped_files_are_the_requested_ones_after_a_full_load() -> None:
    files = CU12_928.files()
    result = probe(files, 9)

    loaded = {os.path.realpath(path) for key, path in files if result.step(f"dlopen {key}").ok}
    assert {path for path in result.mapped if "libcudnn" in path} == loaded
    assert len(loaded) >= 9


@needs_no_driver
def test_runtime_compiled_engine_without_driver_is_an_expected_failure() -> None:
    result = probe(CU12_928.files(), 9)

    step = result.step("dlopen engines_runtime_compiled")
    assert (step.ok, step.expected, step.note) == (False, True, "no NVIDIA driver (libcuda.so.1)")
    assert "libcuda.so.1" in step.detail
    assert result.ok and result.failures == ()


@needs_no_driver
@pytest.mark.parametrize(("wheel", "code"), [(CU12_928, 1001), (CU12_897, 1)], ids=str)
def test_create_reports_not_initialized_with_cudas_reason(wheel: Wheel, code: int) -> None:
    result = probe(wheel.files(), wheel.major, create=True)

    step = result.step("cudnnCreate")
    assert (step.status, step.status_name) == (code, "CUDNN_STATUS_NOT_INITIALIZED")
    # 9.x: cudnnGetLastErrorString; 8.9.7 has none, the reason comes through the error callback.
    assert step.detail == "cudaGetDeviceCount(&count) != cudaSuccess"
    assert result.step("cudnnDestroy") is None


def test_cudnn8_abort_on_missing_sublibrary_becomes_a_verdict(tmp_path: Path) -> None:
    files = CU12_897.symlink_farm(tmp_path, without=("cnn_infer",))
    result = probe(files, 8, environ=_clean_environ())

    assert (result.outcome, result.signal) == ("signal", "SIGABRT")
    assert result.died_in == "cudnnCnnInferVersionCheck"
    assert "Could not load library libcudnn_cnn_infer.so.8" in result.stderr
    assert "Could not load library libcudnn_cnn_infer.so.8" in result.verdict
    # What ran before the abort is kept: cnn_train could not load (it NEEDs cnn_infer), the shim answered.
    assert "libcudnn_cnn_infer.so.8" in result.step("dlopen cnn_train").detail
    assert result.release == Release(8, 9, 7)
    assert result.step("cudnnOpsInferVersionCheck").status == 0


def test_cudnn9_missing_ops_returns_3009_and_the_probe_completes(tmp_path: Path) -> None:
    files = CU12_928.symlink_farm(tmp_path, without=("ops",))
    result = probe(files, 9, environ=_clean_environ())

    assert result.completed, result.verdict
    ops = result.step("cudnnOpsVersionCheck")
    assert (ops.status, ops.status_name) == (3009, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE")
    assert ops.stderr == "Invalid handle. Cannot load symbol cudnnOpsVersionCheck"
    assert result.step("cudnnGraphVersionCheck").status == 0
    # cnn NEEDs ops: its dlopen failure is recorded with dlerror's text, and loading went on.
    assert result.step("dlopen cnn").detail.startswith("libcudnn_ops.so.9: cannot open shared object file")
    assert result.step("dlopen shim").ok
    assert "cudnnOpsVersionCheck" in result.verdict and not result.ok


def test_unloadable_shim_is_recorded_and_no_call_is_made(tmp_path: Path) -> None:
    result = probe([("shim", str(tmp_path / "libcudnn.so.9"))], 9)

    assert result.completed
    assert "cannot open shared object file" in result.step("dlopen shim").detail
    assert [step.name for step in result.steps] == ["dlopen shim"]


def test_timeout_becomes_a_verdict() -> None:
    result = probe(CU12_928.files(), 9, timeout=0.001)

    assert result.outcome == "timeout"
    assert result.verdict.startswith("no answer within 0.001 s")
    assert result.returncode is not None  # the child was killed and reaped


def test_child_imports_nothing_beyond_stdlib_catalog_and_capi() -> None:
    package = os.path.dirname(os.path.dirname(probe_module.__file__))
    child = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", "-c", probe_module._BOOTSTRAP, package, str(os.getpid())],
        input=b'{"files": [], "major": 9, "create": false}', capture_output=True, check=True)

    imported = {line.split("|")[-1].strip() for line in child.stderr.decode().splitlines() if "|" in line}
    ours = {name for name in imported if name.startswith("cudnnload")}
    assert ours == {"cudnnload.loading", "cudnnload.loading.probe", "cudnnload.loading.capi", "cudnnload.errors",
                    "cudnnload.codes", "cudnnload.children",
                    "cudnnload.resolve", "cudnnload.resolve.catalog", "cudnnload.resolve.versions",
                    "cudnnload.resolve.records", "cudnnload.resolve.mapped"}
    assert not imported & {"numpy", "click", "elftools", "subprocess"}
    assert child.stdout.decode().strip() == '{"end": {"mapped": [], "not_exported": []}}'
