"""The explain corpus (fixtures/explain): its real reports load and follow the format, and `cudnnload explain`
meets issue 20's goals on them, ranked by the text alone: the established cause first in 80 % or more, in the
top 3 in 95 % or more, never a wrong first cause tagged "confident", and the same ranking whatever the
machine's environment. The priors kept in the code are the corpus's counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudnnload.diagnose.explain import ranking
from fixtures.explain.corpus import CorpusError, families, load_reports
from fixtures.explain.scoring import GOALS, measure, priors, rates, same_ranking, split, table


@pytest.fixture(scope="module")
def reports() -> list[dict[str, object]]:
    return load_reports()


def test_the_corpus_loads_with_every_family_listed(reports: list[dict[str, object]]) -> None:
    assert len(reports) >= 60
    assert {report["family"] for report in reports} <= families()
    assert len({report["id"] for report in reports}) == len(reports)


def test_a_bad_report_is_one_line_naming_the_file(tmp_path: Path) -> None:
    good = load_reports()[0]
    (tmp_path / f"{good['id']}.json").write_text(json.dumps({**good, "family": "no-such-family"}))
    with pytest.raises(CorpusError, match=r"no-such-family.*FAMILIES\.md") as raised:
        load_reports(tmp_path)
    assert str(tmp_path) in str(raised.value) and "\n" not in str(raised.value)


def test_explain_meets_the_goals_on_the_corpus(reports: list[dict[str, object]]) -> None:
    row = table(measure(reports, environ={}))["all"]
    got = rates(row)
    assert got["recognized"] == 1.0
    assert got["right first"] >= GOALS["right first"], got
    assert got["top 3"] >= GOALS["top 3"], got
    assert row["wrong confident"] == 0


def test_the_corpus_ranks_the_same_with_an_empty_environment_and_this_machines(
        reports: list[dict[str, object]]) -> None:
    assert same_ranking(measure(reports, environ={}), measure(reports, environ=os.environ)) == []


def test_the_priors_in_the_code_are_the_corpus_counts(reports: list[dict[str, object]]) -> None:
    assert priors(reports) == ranking.PRIORS, "run `python bench/bench_explain.py --print-priors` and paste it"


def test_the_held_out_third_is_fixed_by_the_report_ids(reports: list[dict[str, object]]) -> None:
    train, held = split(reports)
    assert len(held) + len(train) == len(reports) and 0.2 < len(held) / len(reports) < 0.45
    assert [r["id"] for r in split(reports[::-1])[1]] == [r["id"] for r in held][::-1]
