"""Fuzzed ELF files: for any content, the readers give an answer or an ElfError, in bounded time and memory.

hypothesis mutates small real libraries (fixtures/fuzz/mutants.py: the 9.28, 9.0 and 8.9.7 shims, and
the big graph and ext libraries compacted to the tables the readers parse) and checks every mutant:
``read_elf`` returns an ElfInfo or raises ElfError, ``read_dynamic_symbols`` likewise, ``linker.opening``
returns an outcome, all three within 2 s and 64 MB above the file's size. The failures found so far are
replayed from fixtures/fuzz/*.json.

CUDNNLOAD_FUZZ_EXAMPLES sets the examples per base (default 50: 250 a run, a few seconds); the draws are
derandomized, so a CI failure repeats on every machine. bench/bench_fuzz.py runs the long version.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudnnload.errors import ElfError
from cudnnload.resolve import elf, linker
from fixtures.fuzz.mutants import BASES, Recipe, base, draw, examine, regressions
from tests.wheels import lib_folder

pytestmark = [pytest.mark.wheels, pytest.mark.slow]

EXAMPLES = int(os.environ.get("CUDNNLOAD_FUZZ_EXAMPLES", "50"))
CODES = {"ok", "truncated", "damaged-elf", "not-elf", "empty-file"}
OUTCOMES = set(typing.get_args(linker.Outcome))


def _mutant(tmp_path: Path, recipe: Recipe) -> str:
    path = tmp_path / recipe.base.partition("/")[2].partition("#")[0]
    path.write_bytes(recipe.build())
    return str(path)


@pytest.mark.parametrize("key", BASES)
def test_every_mutant_gets_an_answer_or_an_elf_error_within_time_and_memory(key: str, tmp_path: Path) -> None:
    base(key)  # skips, before hypothesis starts, when the wheels are not unpacked
    seen: set[str] = set()

    # deadline=None: hypothesis measures an example only once it has ended, and a hang never ends;
    # examine() bounds each mutant itself (a timer, 2 s). database=None: derandomized runs need none.
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def mutant_is_answered(data: st.DataObject) -> None:
        recipe = draw(key, lambda low, high: data.draw(st.integers(low, high)))
        verdict = examine(_mutant(tmp_path, recipe))
        assert verdict.failure is None, f"{verdict.failure}; keep it in fixtures/fuzz: {json.dumps(recipe.plain())}"
        assert verdict.code in CODES and verdict.opening in OUTCOMES, verdict
        seen.add(verdict.code)

    mutant_is_answered()
    # The mutants reach the parsers behind the header checks: some still read whole, some are refused.
    assert "ok" in seen and seen & {"truncated", "damaged-elf"}, seen


@pytest.mark.parametrize("name, content", regressions(), ids=[name for name, _content in regressions()])
def test_a_kept_failure_is_answered_as_recorded(name: str, content: dict[str, typing.Any], tmp_path: Path) -> None:
    verdict = examine(_mutant(tmp_path, Recipe.from_plain(content)))
    assert verdict.failure is None, f"{name}: {verdict.failure}"
    assert {"code": verdict.code, "opening": verdict.opening} == content["expect"], name


def test_kept_failures_exist_and_say_how_they_were_found() -> None:
    kept = regressions()
    assert len(kept) >= 4
    for name, content in kept:
        assert content["found"] and content["base"] in BASES and set(content["expect"]) == {"code", "opening"}, name


@pytest.mark.parametrize("key", [key for key in BASES if key.endswith("#compact")])
def test_a_compacted_base_reads_as_its_library(key: str, tmp_path: Path) -> None:
    tag, _, name = key.partition("#")[0].partition("/")
    whole = elf.read_elf(lib_folder(tag) / name)
    small = elf.read_elf(_mutant(tmp_path, Recipe(key, ())))
    assert small.size < whole.size // 20
    assert small._replace(path=whole.path, size=whole.size) == whole
    # what the base is for: the fatbin walk, or the constants read from the bytes of a symbol
    assert small.gpu_code is not None or (small.release is not None and small.cudart_version is not None)


def test_an_inspection_past_its_time_limit_is_an_elf_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elf, "INSPECTION_LIMIT_S", -1.0)
    with pytest.raises(ElfError, match="inspection took longer than"):
        elf.read_elf(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9")
