"""Which shims abort, rather than return 3009, for a sub-library they cannot load (`judge.consequences`),
told from the real shims' exports: measured with the scenario app, the 9.0 shim aborts ("Invalid handle.
Cannot load symbol cudnnCnnVersionCheck", then abort()) and the 9.27 (JIT) and 9.28 shims return 3009, also
the 9.28 shim over 9.0's sub-libraries (tests/test_scenarios.py holds each against the real run)."""

from __future__ import annotations

import pytest

from cudnnload.judge.consequences import _shim_aborts
from cudnnload.resolve.catalog import Release
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
