"""The framework survey's data (``cudnnload/resolve/surveyed.py``, made by ``bench/survey_frameworks.py``) and its
reader: every row typed and traceable to a real PyPI wheel, the nearest-release answer, and the facts issue 33
states, each checked against what the survey read in the wheels."""

from __future__ import annotations

import datetime
import json
import re
import types
import typing
import urllib.request
from dataclasses import fields, is_dataclass

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from cudnnload.resolve import survey
from cudnnload.resolve.survey import Provenance, SurveyedWheel

ROWS = survey.surveyed()
PLATFORM = {"linux": re.compile(r"^((many)?linux.*_x86_64|any)$"), "windows": re.compile(r"^(win_amd64|any)$")}
PYPI_FILE = re.compile(r"^https://files\.pythonhosted\.org/packages/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{60}/(?P<name>[^/]+)$")


def _conforms(value: object, hint: object) -> bool:
    """``value`` is of the annotated type: plain classes, ``X | None``, ``tuple[X, ...]``, nested dataclasses."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, arm) for arm in typing.get_args(hint))
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return isinstance(value, tuple) and all(_conforms(v, item) for v in value)
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    assert isinstance(hint, type), hint
    if not isinstance(value, hint):
        return False
    return not is_dataclass(value) or all(
        _conforms(getattr(value, f.name), typing.get_type_hints(hint)[f.name]) for f in fields(value))


def test_the_survey_covers_at_least_40_wheels_of_every_framework_family() -> None:
    assert len(ROWS) >= 40
    families = {canonicalize_name(row.distribution).split("-")[0] for row in ROWS}
    assert {"torch", "jax", "onnxruntime", "tensorflow", "paddlepaddle", "ctranslate2", "cupy", "nvidia",
            "transformer"} <= families


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.provenance.wheel)
def test_every_field_of_every_row_has_its_declared_type(row: SurveyedWheel) -> None:
    assert _conforms(row, SurveyedWheel)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.provenance.wheel)
def test_each_row_names_the_pypi_wheel_it_was_read_from(row: SurveyedWheel) -> None:
    origin = row.provenance
    name, version, _, tags = parse_wheel_filename(origin.wheel)
    assert name == canonicalize_name(row.distribution)
    assert version == Version(row.version)
    assert any(PLATFORM[row.system].match(tag.platform) for tag in tags)
    assert re.fullmatch(r"[0-9a-f]{64}", origin.sha256)
    found = PYPI_FILE.match(origin.url)
    assert found and found.group("name") == origin.wheel
    assert origin.size > 0
    assert datetime.date.fromisoformat(origin.surveyed) <= datetime.date.today()


def test_no_two_rows_answer_for_the_same_release_variant_and_system() -> None:
    keys = [(canonicalize_name(r.distribution), r.release, r.variant, r.system) for r in ROWS]
    assert len(keys) == len(set(keys))


def test_a_row_names_cuda_in_its_variant_exactly_when_it_has_a_cuda_major() -> None:
    for row in ROWS:
        assert (row.variant == f"cu{row.cuda_major}") if row.cuda_major else row.variant in ("cuda", "cpu")
        assert (row.cuda_major is None) == (row.cuda_major_from == "none")


@pytest.mark.slow
def test_pypi_serves_the_surveyed_wheels_under_the_recorded_sha256() -> None:
    """Asks PyPI's JSON API for the two smallest surveyed wheels (needs the network; skipped without it)."""
    for row in sorted(ROWS, key=lambda r: r.provenance.size)[:2]:
        try:
            with urllib.request.urlopen(f"https://pypi.org/pypi/{row.distribution}/json", timeout=60) as answer:
                releases = json.load(answer)["releases"]
        except OSError as exc:
            pytest.skip(f"PyPI cannot be reached: {exc}")
        files = {entry["filename"]: entry["digests"]["sha256"] for entry in releases[row.version]}
        assert files[row.provenance.wheel] == row.provenance.sha256


# --- the reader: exact and nearest releases ---------------------------------------------------------------


def _row(distribution: str, version: str, variant: str = "cu12", system: str = "linux") -> SurveyedWheel:
    return SurveyedWheel(
        distribution=distribution, version=version, system=system, variant=variant,
        cuda_major=int(variant[2:]) if variant.startswith("cu") and variant[2:].isdigit() else None,
        cuda_major_from="needed", cudnn_requires=(), build_cudnn=None, build_cudnn_from=None, build_cuda=None,
        build_cuda_from=None, libraries=(), loaders=(),
        provenance=Provenance(wheel=f"{distribution}-{version}-py3-none-any.whl", sha256="0" * 64, url="", size=1,
                              surveyed="2026-11-28"))


@pytest.fixture
def small_survey(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = (_row("torch", "2.12.1"), _row("torch", "2.13.0"), _row("torch", "2.14.1", "cu13"),
            _row("torch", "2.14.1", "cpu", "windows"), _row("jax-cuda12-plugin", "0.9.2"))
    monkeypatch.setattr(survey, "_all", lambda: rows)


@pytest.mark.usefixtures("small_survey")
def test_a_surveyed_release_is_answered_exactly() -> None:
    match = survey.nearest("torch", "2.13.0")
    assert match and match.exact and match.wheel.version == "2.13.0"
    assert survey.lookup("torch", "2.13.0") == match.wheel


@pytest.mark.usefixtures("small_survey")
def test_an_unsurveyed_release_is_answered_by_its_own_series_first_and_says_it_is_not_exact() -> None:
    match = survey.nearest("torch", "2.14.0")
    assert match and not match.exact and match.wheel.version == "2.14.1" and match.asked == "2.14.0"
    assert survey.lookup("torch", "2.14.0") is None


@pytest.mark.usefixtures("small_survey")
def test_a_release_of_an_unsurveyed_series_is_answered_by_the_newest_surveyed_release_before_it() -> None:
    match = survey.nearest("torch", "2.13.5", variant="cu12")
    assert match and match.wheel.version == "2.13.0"
    match = survey.nearest("torch", "2.20.0", variant="cu12")
    assert match and match.wheel.version == "2.13.0" and not match.exact


@pytest.mark.usefixtures("small_survey")
def test_a_release_older_than_every_surveyed_one_is_answered_by_the_oldest() -> None:
    match = survey.nearest("torch", "1.13.1")
    assert match and match.wheel.version == "2.12.1" and not match.exact


@pytest.mark.usefixtures("small_survey")
def test_a_local_cuda_label_picks_the_variant_and_the_system_picks_the_build() -> None:
    assert survey.lookup("torch", "2.14.1+cu130") == _row("torch", "2.14.1", "cu13")
    assert survey.lookup("torch", "2.14.1+cu126") is None  # PyPI holds no cu12 build of 2.14.1
    windows = survey.lookup("torch", "2.14.1", system="windows")
    assert windows and windows.variant == "cpu"


@pytest.mark.usefixtures("small_survey")
def test_any_spelling_of_a_distribution_finds_it_and_an_unknown_one_or_version_finds_nothing() -> None:
    match = survey.nearest("jax_cuda12_plugin", "0.9.2")
    assert match and match.exact
    assert survey.nearest("not-a-framework", "1.0") is None
    assert survey.nearest("torch", "not a version") is None


def test_every_surveyed_row_is_found_by_its_own_release_variant_and_system() -> None:
    for row in ROWS:
        assert survey.lookup(row.distribution.upper(), row.version, row.variant, row.system) == row
    assert survey.surveyed("TORCH") == tuple(row for row in ROWS if row.distribution == "torch")


# --- what issue 33 states, against what the survey read in the wheels -----------------------------------


def _library(distribution: str, version: str, path_part: str, system: str = "linux") -> survey.SurveyedLibrary:
    rows = [r for r in survey.surveyed(distribution) if r.version == version and r.system == system]
    assert len(rows) == 1, (distribution, version, system)
    found = [lib for lib in rows[0].libraries if path_part in lib.path]
    assert len(found) == 1, (path_part, [lib.path for lib in rows[0].libraries])
    return found[0]


def test_onnxruntime_1_31_cuda_provider_needs_no_cudnn_and_has_no_search_path() -> None:
    provider = _library("onnxruntime-gpu", "1.31.1", "libonnxruntime_providers_cuda.so")
    assert provider.cudnn_needed == () and provider.rpath == () and provider.runpath == ()
    assert provider.cudnn_names == ()  # the name is built in code: no "libcudnn.so.9" string either
    older = _library("onnxruntime-gpu", "1.27.0", "libonnxruntime_providers_cuda.so")
    assert older.cudnn_needed == ("libcudnn.so.9",)


def test_ctranslate2_linux_libraries_stop_naming_cudnn_at_4_6_3() -> None:
    assert _library("ctranslate2", "4.6.2", "libctranslate2").cudnn_mentions == 58
    assert _library("ctranslate2", "4.6.2", "libctranslate2").cudnn_needed[0].startswith("libcudnn-")  # bundled
    for row in survey.surveyed("ctranslate2"):
        if row.system == "linux" and row.release >= Version("4.6.3"):
            assert all(lib.cudnn_mentions == 0 and "cudnn" not in lib.path for lib in row.libraries)


def test_ctranslate2_windows_wheels_ship_cudnn_9_10_2_but_no_longer_import_it_from_4_6_3() -> None:
    for version in ("4.6.3", "4.8.5"):
        assert _library("ctranslate2", version, "cudnn64_9.dll", "windows").file_version == "9.10.2.21"
        engine = _library("ctranslate2", version, "ctranslate2.dll", "windows")
        assert engine.cudnn_needed == () and engine.cudnn_mentions == 0
    assert _library("ctranslate2", "4.6.2", "ctranslate2.dll", "windows").cudnn_needed == ("cudnn64_9.dll",)


def test_torch_2_14_pins_the_cu13_cudnn_9_24_0_43_on_linux() -> None:
    row = survey.lookup("torch", "2.14.1")
    assert row and row.variant == "cu13"
    assert any(pin.startswith("nvidia-cudnn-cu13==9.24.0.43") for pin in row.cudnn_requires)


def _loader(distribution: str, version: str, function: str) -> survey.LoaderFunction:
    row = survey.lookup(distribution, version)
    assert row, (distribution, version)
    found = [code for code in row.loaders if code.function == function]
    assert len(found) == 1, [code.function for code in row.loaders]
    return found[0]


def test_jax_0_12_cuda13_plugin_opens_the_wheels_libcudnn_and_swallows_a_failure() -> None:
    code = _loader("jax-cuda13-pjrt", "0.12.0.1", "_load_nvidia_libraries")
    assert "libcudnn.so.9" in code.names and code.loads and not code.at_import  # run by initialize(), not import
    assert all(site.on_failure == ("ignore",) for site in code.load_sites + code.called_from)


def test_torch_2_14_preloads_cuda_libraries_best_effort_at_import() -> None:
    code = _loader("torch", "2.14.1", "_preload_cuda_deps")
    assert "libcudnn.so.*[0-9]" in code.names and code.at_import
    assert ("ignore",) in [site.on_failure for site in code.called_from]  # the try around it in _load_global_deps


def test_tensorflow_2_21_and_cuda_requires_the_cu12_cudnn_and_states_a_cudnn_9_build() -> None:
    row = survey.lookup("tensorflow", "2.21.0")
    assert row and row.variant == "cu12" and row.build_cudnn == "9"
    assert [pin.split("<")[0].split(">")[0] for pin in row.cudnn_requires] == ["nvidia-cudnn-cu12"]
    assert all('extra == "and-cuda"' in pin for pin in row.cudnn_requires)
    assert all(lib.cudnn_needed == () for lib in row.libraries)  # dlopened by name at run time
