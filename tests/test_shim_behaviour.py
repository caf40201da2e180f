"""Which shims abort, rather than return 3009, for a sub-library they cannot load (`judge.consequences`),
told from the real shims' exports: measured with the scenario app, the 9.0 shim aborts ("Invalid handle.
Cannot load symbol cudnnCnnVersionCheck", then abort()) and the 9.27 (JIT) and 9.28 shims return 3009, also
the 9.28 shim over 9.0's sub-libraries (tests/test_scenarios.py holds each against the real run). Between them
the release decides, and what each release's graph needs of its engines: measured with every release's wheel from
9.2 to 9.26, one library taken away at a time (bench/cudnn9_releases.py, bench/results)."""

from __future__ import annotations

import pytest

from cudnnload.judge.consequences import Load, _shim_aborts, in_engine_chain, predict
from cudnnload.resolve.catalog import V9, Release
from cudnnload.resolve.discovery import Step, asked_for
from cudnnload.resolve.elf import read_elf
from fixtures.scenarios.layouts import JIT, library_folder
from tests.wheels import lib_folder


@pytest.mark.parametrize(("folder", "aborts"), [
    (lambda: lib_folder("cu12-9.0.0.312"), True),
    (lambda: lib_folder("cu12-9.28.0.42"), False),
    (lambda: lib_folder("cu13-9.28.0.42"), False),
    (lambda: library_folder(JIT), False),
], ids=["9.0", "9.28-cu12", "9.28-cu13", "9.27-jit"])
def test_the_shim_decides_by_what_it_exports(folder: object, aborts: bool) -> None:
    shim = read_elf(str(folder() / "libcudnn.so.9"))  # type: ignore[operator]
    exports = set(shim.cudnn_functions)
    # whatever release the install's folder says (a 9.28 shim over 9.0's sub-libraries returns 3009)
    assert _shim_aborts(Release(9, 0, 0), exports) is aborts
    assert _shim_aborts(Release(9, 28, 0), exports) is aborts


def test_without_the_shims_exports_the_installs_release_decides() -> None:
    assert _shim_aborts(Release(9, 0, 0), None) is True
    assert _shim_aborts(Release(9, 28, 0), None) is False
    assert _shim_aborts(None, None) is False


@pytest.mark.wheels
@pytest.mark.parametrize("name", ["healthy-9.28-cu12", "healthy-9.28-cu13", "healthy-9.0-folder",
                                  "missing-engines-precompiled-9.28", "jit-wheel-alone"])
def test_what_the_model_says_an_application_maps_is_what_the_real_loader_maps(name: str, tmp_path: object) -> None:
    """`Install.maps` (through `doctor --json`, as the differential test reads it) against the scenario app's
    LD_DEBUG log and /proc/self/maps after every call: graph's engine order (heuristic only once
    engines_precompiled loaded, tensor_ir only once runtime_compiled did; on this machine without libcuda.so.1
    runtime_compiled never loads), and the 9.0 shim that never opens ext."""
    import os

    from fixtures.scenarios.differential import compare, observed, predicted
    from fixtures.scenarios.layouts import W928, Layout, _with, by_name, ensure
    from fixtures.scenarios.truth import record

    if name == "missing-engines-precompiled-9.28":
        layout = Layout(name, "9.28 without its precompiled engines", 9,
                        _with(W928, lambda lib: (lib / "libcudnn_engines_precompiled.so.9").unlink()),
                        "site/nvidia/cudnn/lib/libcudnn.so.9", "site/nvidia/cudnn/lib/libcudnn.so.9",
                        family="test", healthy=True).moved(os.path.join(str(tmp_path), name))
    else:
        layout = by_name(name)
    ensure(layout)
    said = predicted(layout)
    assert said.note == "maps"
    assert compare(said, observed(record(layout)), preload=False) == []


@pytest.mark.parametrize(("release", "aborts"), [
    ((9, 5, 1), True), ((9, 10, 2), True), ((9, 13, 1), True), ((9, 16, 0), True),
    ((9, 17, 1), False), ((9, 19, 0), False), ((9, 21, 1), False), ((9, 26, 1), False)])
def test_a_shim_with_the_cuda_graph_functions_aborts_up_to_9_16_as_measured(release: tuple[int, int, int],
                                                                          aborts: bool) -> None:
    """9.5's shim exports what 9.28's does and aborts all the same; 9.16's and 9.21's hold the same strings."""
    exports = set(read_elf(str(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9")).cudnn_functions)
    assert _shim_aborts(Release(*release), exports) is aborts


@pytest.mark.parametrize(("release", "needed"), [((9, 0, 0), True), ((9, 2, 1), True), ((9, 10, 2), True),
                                                 ((9, 12, 0), True), ((9, 13, 1), False), ((9, 28, 0), False)])
def test_the_precompiled_engines_and_their_heuristic_are_needed_up_to_9_12(release: tuple[int, int, int],
                                                                          needed: bool) -> None:
    """cudnnBackendFinalize returns 1008 without either up to 9.12 (1001 in 9.0), 2000 from 9.13 on."""
    for key in ("engines_precompiled", "heuristic"):
        assert in_engine_chain(V9.library(key), Release(*release)) is needed


@pytest.mark.parametrize(("release", "needed"), [((9, 20, 0), False), ((9, 21, 1), True), ((9, 28, 0), True)])
def test_the_tensor_ir_engines_are_needed_from_9_21(release: tuple[int, int, int], needed: bool) -> None:
    """9.20's graph asks for engines_tensor_ir by all four names and finalizes without it; 9.21's returns 1008."""
    graph = Step("graph", "/x/libcudnn.so.9", ("libcudnn_graph.so.9",), "/x/libcudnn_graph.so.9", "runpath", True,
                 Release(*release))
    assert asked_for(V9.library("engines_tensor_ir"), None, graph) is needed


def test_cnn_and_adv_beside_an_ops_of_another_release_fail_their_checks_and_adv_its_descriptors() -> None:
    """The shim found ops elsewhere (the system's 9.14 through ld.so.cache, under torch's 9.19 wheel; measured on
    the H200, and with the 9.16, 9.21 and 9.26 wheels here): cnn's and adv's checks return 1002, adv's descriptors
    too, cnn's are made."""
    own, other = Release(9, 26, 1), Release(9, 21, 1)
    releases = {"graph": own, "ops": other, "cnn": own, "adv": own}
    loads = {key: Load(key, f"/x/libcudnn_{key}.so.9", release, None, None, None) for key, release in releases.items()}
    prediction = predict(V9, Release(9, 26, 1), loads)
    said = {e.call.function: e.status for e in prediction.expectations if e.call.kind in ("check", "create")}
    assert said["cudnnOpsVersionCheck"] == 1002  # ops of another release than graph's
    assert said["cudnnCnnVersionCheck"] == 1002 and said["cudnnAdvVersionCheck"] == 1002
    assert said["cudnnCreateConvolutionDescriptor"] == 0 and said["cudnnCreateRNNDataDescriptor"] == 1002


def _loads(release: Release, absent: tuple[str, ...] = ()) -> dict[str, Load]:
    keys = ("graph", "engines_precompiled", "heuristic", "engines_runtime_compiled", "engines_tensor_ir", "ops", "cnn",
            "adv")
    loads = {key: Load(key, f"/x/libcudnn_{key}.so.9", release, None, None, None) for key in keys}
    for key in absent:
        loads[key] = Load(key, None, None, "missing", "not found", key)
    return loads


@pytest.mark.parametrize(("absent", "status"), [
    ((), 1008), (("heuristic",), 2000), (("engines_precompiled",), 2000)],
    ids=["beside-heuristic", "without-heuristic", "without-precompiled"])
def test_tensor_ir_missing_fails_finalize_only_once_heuristic_loaded(absent: tuple[str, ...], status: int) -> None:
    """engines_tensor_ir is missing from 9.28 and from every JIT wheel: graph asks for it by all four names either
    way (LD_DEBUG), and cudnnBackendFinalize returns 1008 only where heuristic loaded; without heuristic or
    precompiled it returns what it does with it (2000 on a machine without a GPU: bench/cudnn9_releases.py
    --engine-pairs, 9.21 and 9.27 JIT cu12 and cu13, 9.28.0 and 9.28.1 cu13)."""
    release = Release(9, 28, 0)
    loads = _loads(release, ("engines_tensor_ir", *absent))
    if "engines_precompiled" in absent:  # heuristic is asked for only once precompiled loaded
        loads["heuristic"] = Load("heuristic", "/x/libcudnn_heuristic.so.9", release, None, None, None, asked=False)
    prediction = predict(V9, release, loads)
    finalize = next(e for e in prediction.expectations if e.call.function == "cudnnBackendFinalize")
    assert finalize.status == status
    assert ("engines_tensor_ir" in prediction.consequences) is (status == 1008)


@pytest.mark.wheels
@pytest.mark.timeout_s(300)
def test_the_jit_wheel_and_9_28_with_engines_taken_away_agree_with_the_real_shim() -> None:
    """bench/cudnn9_releases.py on the test cache's JIT wheel (no ops, cnn, adv, precompiled, heuristic or
    tensor_ir) and 9.28 cu13, whole, each library taken away, and every two engine libraries taken away together,
    with a stand-in libcuda.so.1 (so that the runtime-compiled engines load, as on a GPU machine): every probe
    verdict agrees with the model, and every failing layout gets an error. Before, the JIT wheel alone got a
    missing engines_tensor_ir error (and a 1008 the real finalize does not return)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from fixtures.wheels import cache_root

    unpacked = cache_root() / "unpacked"
    wheels = [unpacked / "nvidia-cudnn-jit-cu13-9.27.0.42", unpacked / "nvidia-cudnn-cu13-9.28.0.42"]
    if not all((wheel / ".unpacked").exists() for wheel in wheels):
        pytest.skip(f"the test wheels are not unpacked in {unpacked}: run `make wheels`")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in libcuda.so.1")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "bench" / "cudnn9_releases.py"), *map(str, wheels),
                           "--engine-pairs"], capture_output=True, text=True, timeout=280, check=False,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "agrees with the model 19/19" in done.stdout and "19/19 said" in done.stdout, done.stdout[-2000:]
    jit = [line for line in done.stdout.splitlines() if line.startswith("9.27.0.42 jit-cu13 (whole)")]
    assert jit and "cudnnOpsVersionCheck returns 3009" in jit[0], jit


@pytest.mark.parametrize(("release", "absent", "aborts"), [
    ((9, 0, 0), (), False), ((9, 2, 1), (), False), ((9, 13, 1), (), False), ((9, 14, 0), (), False),
    ((9, 15, 0), (), True), ((9, 19, 0), (), True), ((9, 28, 0), (), True), ((9, 28, 0), ("heuristic",), True),
    ((9, 28, 0), ("engines_precompiled",), False)])
def test_an_engine_heuristic_without_cublaslt_aborts_from_9_15_once_the_precompiled_engines_loaded(
        release: tuple[int, int, int], absent: tuple[str, ...], aborts: bool) -> None:
    """No libcublasLt anywhere (bench/cudnn9_releases.py's layouts with it taken away, a stand-in libcuda.so.1):
    creating an engine heuristic returns 0 in 9.0 to 9.14 (9.1.1, 9.2.1, 9.7.1, 9.8, 9.10.2, 9.13.1 and 9.14
    measured) and aborts ("Invalid handle. Cannot load symbol cublasLtGetVersion") from 9.15 (9.15.0, 9.15.1, 9.16,
    9.17.1, 9.19, 9.25.1, 9.27, 9.28), only where engines_precompiled loaded (the JIT wheels, 9.28 without it: 0)."""
    version = Release(*release)
    missing = {"libcublasLt.so.12": "not found"}
    prediction = predict(V9, version, _loads(version, absent), missing_dependencies=missing)
    heuristic = next((e for e in prediction.expectations if e.call.kind == "heuristic"), None)
    assert heuristic is not None and (heuristic.outcome == "abort") is aborts, heuristic


@pytest.mark.parametrize(("release", "status"), [((9, 0, 0), 1001), ((9, 1, 1), 1001), ((9, 2, 1), 1008)])
def test_an_engine_missing_returns_1001_up_to_9_1(release: tuple[int, int, int], status: int) -> None:
    """9.1.1's graph (a cu11 wheel) answers as 9.0's: cudnnBackendFinalize returns 1001 without an engine of its
    chain; 9.2 returns 1008 (bench/cudnn9_releases.py --engine-pairs on 9.1.1 cu11 and 9.2.1 cu12)."""
    version = Release(*release)
    prediction = predict(V9, version, _loads(version, ("engines_precompiled",)))
    finalize = next(e for e in prediction.expectations if e.call.function == "cudnnBackendFinalize")
    assert finalize.status == status
