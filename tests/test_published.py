"""Which cuDNN wheels PyPI has (cudnnload.resolve.published, the table bench/survey_cudnn_wheels.py generates), and
the requirements the fixes name: never one that pip cannot install on the machine it is for."""

from __future__ import annotations

import pytest

from cudnnload.judge.fixes import cudnn_install, cudnn_requirement
from cudnnload.resolve.published import installs_on, published
from cudnnload.resolve.versions import Release
from cudnnload.resolve.wheel_releases import RELEASES

X86 = ("x86_64", (2, 36))
ARM = ("aarch64", (2, 35))


@pytest.mark.parametrize(("cuda", "release", "major", "where", "expected"), [
    (11, Release(8, 9, 7), None, X86, False),  # nvidia-cudnn-cu11 stops at 8.9.6
    (12, Release(8, 9, 7), None, X86, True),
    (12, Release(9, 25, 0), None, X86, False),  # yanked
    (12, Release(9, 25, 1), None, X86, True),
    (13, Release(9, 11, 0), None, X86, False),  # cu13 begins at 9.12
    (13, Release(99, 0, 0), None, X86, None),  # after the table's newest: unknown, so taken to exist
    (11, None, 9, X86, True),
    (11, None, 9, ARM, False),  # no aarch64 wheel of cu11 at all
    (12, None, 8, ARM, False),  # cu12's aarch64 wheels begin at 9.0
    (12, Release(9, 0, 0), None, ARM, True),  # 9.0.0.312.post1
    (11, Release(9, 5, 1), None, ("x86_64", (2, 27)), False),  # manylinux_2_28 only
    (11, Release(9, 5, 1), None, ("x86_64", (2, 28)), True),
    (12, None, 9, ("x86_64", None), False),  # musl: no manylinux wheel installs
    (10, None, 8, X86, None),  # a distribution the table does not list
])
def test_published_says_whether_a_wheel_installs_where(cuda: int, release: Release | None, major: int | None,
                                                        where: tuple[str, tuple[int, int] | None],
                                                        expected: bool | None) -> None:
    assert published(cuda, release, major, where) is expected


def test_manylinux_tags_ask_for_the_glibc_pep_600_gives_them() -> None:
    assert installs_on("manylinux1_x86_64", "x86_64", (2, 5))
    assert installs_on("manylinux2014_x86_64", "x86_64", (2, 17))
    assert not installs_on("manylinux2014_x86_64", "x86_64", (2, 16))
    assert installs_on("manylinux_2_27_aarch64", "aarch64", (2, 27))
    assert not installs_on("manylinux_2_27_aarch64", "x86_64", (2, 39))
    assert not installs_on("win_amd64", "x86_64", (2, 39))


def test_the_table_lists_what_the_tests_install_and_nothing_pip_would_refuse() -> None:
    for family, release in (("nvidia-cudnn-cu12", "9.28.0"), ("nvidia-cudnn-cu13", "9.28.0"),
                            ("nvidia-cudnn-cu12", "9.0.0"), ("nvidia-cudnn-cu12", "8.9.7"),
                            ("nvidia-cudnn-cu11", "8.5.0"), ("nvidia-cudnn-cu13", "9.19.0")):
        assert release in RELEASES[family], (family, release)
    assert "9.25.0" not in RELEASES["nvidia-cudnn-cu12"]  # yanked
    assert all(text.count(".") == 2 for rows in RELEASES.values() for text in rows)


def test_a_fix_for_a_release_without_a_wheel_here_is_words_not_a_pip_install() -> None:
    if published(11, Release(8, 9, 7)) is not False:
        pytest.skip("this machine is not one the table answers for (architecture, glibc)")
    assert cudnn_requirement(8, 11, Release(8, 9, 7)) is None
    assert cudnn_requirement(8, 12, Release(8, 9, 7)) == "nvidia-cudnn-cu12==8.9.7.*"
    (action,) = cudnn_install(8, 11, "/v/bin/python", release=Release(8, 9, 7)).actions
    assert action.do.value == "manual" and "no pip wheel" in (action.text or "")
