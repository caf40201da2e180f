"""The catalog's facts agree with each other and with the encodings in versions.py."""

from __future__ import annotations

import pickle

import pytest

from cudnnload.report import to_jsonable
from cudnnload.resolve.catalog import GENERATIONS, Release, classify, cudnn_pin, decode_version, parse_release
from cudnnload.resolve.versions import VERSION_SYMBOLS, decode_packed_version


def test_version_symbols_are_those_the_catalog_names() -> None:
    named = {lib.version_symbol for gen in GENERATIONS.values() for lib in gen.libraries if lib.version_symbol}
    assert named == VERSION_SYMBOLS


@pytest.mark.parametrize("number, release", [(7605, Release(7, 6, 5)), (8907, Release(8, 9, 7)),
                                             (90000, Release(9, 0, 0)), (92800, Release(9, 28, 0))])
def test_get_version_numbers_decode_both_ways(number: int, release: Release) -> None:
    assert decode_version(number) == release and release.number == number


def test_packed_constant_and_text_decode() -> None:
    assert decode_packed_version(0x091C00) == Release(9, 28, 0) == parse_release(" 9.28.0.42 ")
    assert parse_release("8") == Release(8, 0, 0) and str(Release(9, 1, 2)) == "9.1.2"
    for bad in ("", "nine", "9..1", "9.-1", "v9"):
        with pytest.raises(ValueError, match="not a cuDNN version"):
            parse_release(bad)


def test_releases_order_hash_pickle_and_serialise_like_values() -> None:
    assert Release(9, 0, 0) < Release(9, 1, 0) < Release(10, 0, 0) and len({Release(9, 1, 0), Release(9, 1, 0)}) == 1
    assert pickle.loads(pickle.dumps(Release(9, 28, 0))) == Release(9, 28, 0)
    with pytest.raises(AttributeError):
        Release(9, 28, 0).major = 8  # type: ignore[misc]
    assert to_jsonable({"r": Release(9, 28, 0)}) == {"r": "9.28.0"}


def test_file_names_are_classified_by_generation() -> None:
    assert classify("libcudnn_ops.so.9.28.0").key == "ops"  # type: ignore[union-attr]
    assert classify("libcudnn_cnn_infer.so.8").major == 8  # type: ignore[union-attr]
    assert classify("libcudnn.so.7").key == "shim" and classify("libcudnn_foo.so.9") is None  # type: ignore[union-attr]


def test_a_record_with_a_default_before_a_required_field_is_refused() -> None:
    from cudnnload.resolve.records import record

    with pytest.raises(TypeError, match="defaults must come last"):
        @record
        class Bad:
            a: int = 0
            b: int


@pytest.mark.parametrize(("requirement", "major", "release"), [
    ("nvidia-cudnn-cu12==9.0.0.312", 9, Release(9, 0, 0)),
    ("nvidia_cudnn_cu12===9.28.0.42", 9, Release(9, 28, 0)),
    ("nvidia-cudnn-cu13>=9,<10", 9, None),
    ("nvidia-cudnn-cu12>=9.0,<10.0", 9, None),
    ("nvidia-cudnn-cu12>=9,<10.1", None, None),
    ("nvidia-cudnn-cu12==9.1.*", 9, None),  # a wildcard is a range: pip decides the release
    ("nvidia-cudnn-cu12", None, None),
    ("nvidia-cudnn-jit-cu13==9.27.0.42", 9, Release(9, 27, 0)),
])
def test_a_cudnn_wheel_requirement_is_read_once_for_its_major_and_release(requirement: str, major: int | None,
                                                                          release: Release | None) -> None:
    pin = cudnn_pin(requirement)
    assert pin is not None and (pin.major, pin.release) == (major, release)


@pytest.mark.parametrize("requirement", ["nvidia-cublas>=13,<14", "torch==2.11.0", "not a requirement ==", ""])
def test_a_requirement_of_anything_else_is_no_cudnn_pin(requirement: str) -> None:
    assert cudnn_pin(requirement) is None
