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
