"""The judge's output types: a resolved install or inventory with its verdict. `cudnnload.resolve`'s
records stay facts only; these add what the judge says of them (`installs.judge_install`,
`inventory.judge_inventory`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from cudnnload.codes import Severity
from cudnnload.judge.consequences import Expectation
from cudnnload.resolve.discovery import Install, Inventory
from cudnnload.verdicts import Finding


@dataclass(frozen=True)
class Verdict:
    """What the judge says of an install: its findings (its files' included) and what an application would
    see, call by call, on a machine with a GPU when libcuda.so.1 was found, else without one."""

    findings: tuple[Finding, ...]
    expected: tuple[Expectation, ...] = ()
    # the cuDNN files an application making those calls maps, shim first (`consequences.mapped_files`); none
    # when its dlopen of the shim fails
    maps: tuple[str, ...] = ()
    # the planned loads outside its folder that an empty or relative search-path entry gave, placed from the
    # current folder of the judgement (`policy.lent_loads`): load() passes over such an install
    lent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged(Install):
    """An install with the judge's verdict."""

    verdict: Verdict = Verdict(())

    @classmethod
    def of(cls, install: Install, verdict: Verdict) -> Judged:
        return cls(**{f.name: getattr(install, f.name) for f in fields(Install)}, verdict=verdict)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.verdict.findings

    @property
    def expected(self) -> tuple[Expectation, ...]:
        return self.verdict.expected

    @property
    def maps(self) -> tuple[str, ...]:
        return self.verdict.maps

    @property
    def healthy(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)


@dataclass(frozen=True)
class JudgedInventory(Inventory):
    """An inventory whose installs are judged, with the findings that belong to no one install (a given path
    that is no cuDNN, files of no known generation, two distributions claiming a file, the search path)."""

    installs: tuple[Judged, ...] = ()
    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, inventory: Inventory, installs: tuple[Judged, ...], findings: tuple[Finding, ...]) -> JudgedInventory:
        facts = {f.name: getattr(inventory, f.name) for f in fields(Inventory)}
        return cls(**{**facts, "installs": installs}, findings=findings)

    @property
    def healthy(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings) and all(i.healthy for i in self.installs)

