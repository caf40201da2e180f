"""Backend plugins found through real entry points: small distributions written into a temporary site folder
(a dist-info with METADATA and entry_points.txt, and the plugin module) that cudnnload.dispatch.entrypoints reads from
sys.path, as it reads any installed package; restriction by CUDNNLOAD_BACKENDS; broken plugins reported
and skipped while the others load."""

from __future__ import annotations

import importlib.metadata
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cudnnload.dispatch.backends import BackendStatus, Registry, list_backends, load_registry
from cudnnload.dispatch.dispatcher import Dispatcher
from cudnnload.report import backends_text, dumps

WORKS = '''
class Backend:
    name = "{name}"
    def availability(self):
        return {reason!r}
    def supports(self, op, spec, *tensors):
        return None
    def activation_forward(self, x, y, spec, *, stream=0):
        y.numpy()[...] = 7.0

def register(registry):
    registry.add("{name}", Backend)
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """``site(module, source)`` installs a distribution whose module ``module`` declares the entry point
    ``module.replace("_", "-") = module:register``; modules imported by the test are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    def install(module: str, source: str) -> None:
        (tmp_path / f"{module}.py").write_text(source)
        info = tmp_path / f"{module}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(
            f"[cudnnload.backends]\n{module.replace('_', '-')} = {module}:register\n")

    yield install
    for name in set(sys.modules) - before:
        del sys.modules[name]


def status(statuses: tuple[BackendStatus, ...], name: str) -> BackendStatus:
    return next(s for s in statuses if s.name == name)


def test_a_plugin_is_found_through_its_entry_point(site: Callable[[str, str], None]) -> None:
    site("cl_fast", WORKS.format(name="cl-fast", reason=None))

    found = status(list_backends({}), "cl-fast")

    assert found == BackendStatus("cl-fast", "cl_fast:register (cl_fast 1.0)", True, None, False)


def test_an_unavailable_backend_says_why(site: Callable[[str, str], None]) -> None:
    site("cl_gpu", WORKS.format(name="cl-gpu", reason="no GPU visible"))

    found = status(list_backends({}), "cl-gpu")

    assert (found.available, found.reason, found.broken) == (False, "no GPU visible", False)


def test_a_plugin_that_raises_on_import_is_reported_and_the_others_load(site: Callable[[str, str], None]) -> None:
    site("cl_broken", "raise ImportError('needs libfoo.so.3')\n")
    site("cl_fine", WORKS.format(name="cl-fine", reason=None))

    statuses = list_backends({})

    broken = status(statuses, "cl-broken")
    assert (broken.broken, broken.available, broken.reason) == (True, False, "ImportError: needs libfoo.so.3")
    assert status(statuses, "cl-fine").available


def test_a_register_that_raises_leaves_nothing_half_registered(site: Callable[[str, str], None]) -> None:
    site("cl_half", 'def register(registry):\n    registry.add("cl-half-a", object)\n    raise RuntimeError("oops")\n')

    registry = load_registry({})

    assert "cl-half-a" not in registry.names
    assert status(registry.statuses(), "cl-half").reason == "RuntimeError: oops"


def test_a_backend_whose_factory_or_availability_raises_is_broken_not_raised(site: Callable[[str, str], None]) -> None:
    site("cl_factory", 'def register(registry):\n    registry.add("cl-factory", lambda: 1 / 0)\n')
    site("cl_avail", WORKS.format(name="cl-avail", reason=None).replace("return None\n    def supports",
                                                                       "raise OSError(5, 'EIO')\n    def supports"))

    statuses = list_backends({})

    assert status(statuses, "cl-factory").reason == "ZeroDivisionError: division by zero"
    assert status(statuses, "cl-avail").broken and "OSError" in str(status(statuses, "cl-avail").reason)


def test_two_plugins_cannot_take_one_name(site: Callable[[str, str], None]) -> None:
    site("cl_first", WORKS.format(name="cl-same", reason=None))
    site("cl_second", WORKS.format(name="cl-same", reason=None))

    statuses = list_backends({})

    assert status(statuses, "cl-same").source.startswith("cl_first:register")
    assert "already registered by cl_first:register" in str(status(statuses, "cl-second").reason)


def test_cudnnload_backends_loads_only_the_plugins_named(site: Callable[[str, str], None]) -> None:
    site("cl_wanted", WORKS.format(name="cl-wanted", reason=None))
    site("cl_unwanted", "raise ImportError('must not be imported')\n")

    statuses = list_backends({"CUDNNLOAD_BACKENDS": "cl-wanted, cl-other"})

    assert status(statuses, "cl-wanted").available
    skipped = status(statuses, "cl-unwanted")
    assert (skipped.broken, skipped.reason) == (False, "not loaded: CUDNNLOAD_BACKENDS=cl-other,cl-wanted")
    assert "cl_unwanted" not in sys.modules


def test_cudnnload_backends_set_but_empty_loads_none(site: Callable[[str, str], None]) -> None:
    site("cl_any", WORKS.format(name="cl-any", reason=None))

    registry = load_registry({"CUDNNLOAD_BACKENDS": ""})

    assert registry.names == ()
    assert "none (CUDNNLOAD_BACKENDS=)" in str(registry.get("cl-any")[1])


def test_a_restricted_backend_name_is_dropped_even_from_an_allowed_plugin() -> None:
    registry = Registry(frozenset({"kept"}))

    registry.add("kept", object)  # type: ignore[arg-type]
    registry.add("dropped", object)  # type: ignore[arg-type]

    assert registry.names == ("kept",)


def test_a_dispatcher_runs_a_plugin_found_through_entry_points(site: Callable[[str, str], None]) -> None:
    numpy = pytest.importorskip("numpy")
    site("cl_seven", WORKS.format(name="cl-seven", reason=None))

    y = Dispatcher(environ={"CUDNNLOAD_BACKENDS": "cl-seven"}).activation(numpy.zeros(3), "relu", backend="cl-seven")

    assert y.tolist() == [7.0, 7.0, 7.0]


def test_cudnnloads_own_numpy_backend_is_an_ordinary_entry_point() -> None:
    try:
        importlib.metadata.distribution("cudnnload")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("cudnnload is not installed (pip install -e .), so its entry points are not either")

    found = status(list_backends({}), "numpy")

    assert found.available and found.source.startswith("cudnnload_numpy:register (cudnnload ")


def test_the_listing_as_text_and_json(site: Callable[[str, str], None]) -> None:
    statuses = (BackendStatus("numpy", "cudnnload_numpy:register (cudnnload 0.1.0)", True, None, False),
                BackendStatus("cudnn-graph", "x:register (x 1.0)", False, "no GPU visible", False),
                BackendStatus("bad", "bad:register (bad 1.0)", False, "ImportError: no", True))

    text = backends_text(statuses)

    assert text.splitlines() == [
        "numpy        available    cudnnload_numpy:register (cudnnload 0.1.0)",
        "cudnn-graph  unavailable  x:register (x 1.0)",
        "                          no GPU visible",
        "bad          BROKEN       bad:register (bad 1.0)",
        "                          ImportError: no",
    ]
    assert '"kind": "backends"' in dumps("backends", statuses) and '"broken": true' in dumps("backends", statuses)


def test_threads_asking_at_once_get_one_backend_object() -> None:
    made: list[object] = []

    class Slow:
        name = "slow"

        def __init__(self) -> None:
            made.append(self)
            time.sleep(0.05)  # every thread arrives while the first is still making it

        def availability(self) -> str | None:
            return None

    registry = Registry()
    registry.add("slow", Slow)  # type: ignore[arg-type]
    barrier, got = threading.Barrier(8, timeout=30), []  # bounded waits: a deadlock fails, it does not hang

    def ask() -> None:
        barrier.wait()
        got.append(registry.get("slow"))

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(made) == 1 and got == [(made[0], None)] * 8
