"""Whose pip a fix runs: an environment made by uv holds no pip (``uv venv`` installs none), and there ``python -m
pip install ...`` stops at once ("No module named pip"); uv's own pip interface installs into it (``uv pip install
--python PREFIX/bin/python ...``). The judge says what to install where (a pip action naming the interpreter);
this stage reads which installer that environment has (`resolve.pythons.installer_of`) and says the action with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from cudnnload.codes import ActionKind
from cudnnload.verdicts import Action, Finding

_PIP = frozenset({ActionKind.PIP_INSTALL, ActionKind.PIP_UNINSTALL})


def by_installer(findings: Iterable[Finding]) -> list[Finding]:
    """``findings``, each pip action of their fixes (and of the fixes' alternatives) said with the installer of the
    environment it names."""
    return [_said(finding) for finding in findings]


def _said(finding: Finding) -> Finding:
    actions, alternatives = tuple(map(_with, finding.fix.actions)), tuple(map(_with, finding.fix.alternatives))
    if actions == finding.fix.actions and alternatives == finding.fix.alternatives:
        return finding
    return replace(finding, fix=replace(finding.fix, actions=actions, alternatives=alternatives))


def _with(action: Action) -> Action:
    if action.do not in _PIP or "--user" in action.options:  # uv's pip has no user site
        return action
    installer = _installer(action.python)
    return action if installer == action.installer else replace(action, installer=installer)


@lru_cache(maxsize=64)
def _installer(python: str | None) -> str:
    from cudnnload.resolve.pythons import installer_of

    return installer_of(python)
