"""Whose pip a fix runs, and what it must be told: an environment made by uv holds no pip (``uv venv`` installs
none), and there ``python -m pip install ...`` stops at once ("No module named pip"); uv's own pip interface installs
into it (``uv pip install --python PREFIX/bin/python ...``). A Python marked externally managed (PEP 668: Debian's
and Ubuntu's own) refuses pip's installs and uninstalls into its site folders and its user site
("error: externally-managed-environment") unless told ``--break-system-packages``; the distributions a fix puts back
there were put there that way before (by pip, with that option or ``PIP_BREAK_SYSTEM_PACKAGES``), since no
system package ships them. The judge says what to install where (a pip action naming the interpreter); this stage
reads which installer that environment has and whether it is so marked (`resolve.pythons.installer_of`,
`externally_managed`) and says the action accordingly. A venv made without pip by another tool (``python -m venv
--without-pip``) is given uv's where ``uv`` is on PATH, else its fix says to put pip in first (``ensurepip``). An
environment a project's tool made beside its lock file (``uv.lock``, ``poetry.lock``, ``pdm.lock``, ``pixi.lock``)
gets its version changes said with the tool's own command too: that tool's sync would undo them.
"""

from __future__ import annotations

import shlex
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
    # a venv without pip where no uv is at hand: pip is put in first (the standard library's ensurepip)
    bare = next((a.python for a in actions if a.do in _PIP and a.installer == "pip" and _lacks_pip(a.python)), None)
    note = finding.fix.note
    if bare is not None:
        version = _without_ensurepip(bare)
        first = f"{bare} has no pip: run {shlex.join([bare, '-m', 'ensurepip'])} first" if version is None else \
            f"{bare} has no pip, and its Python's standard library has no ensurepip (Debian and Ubuntu ship it in " \
            f"the python{version}-venv package): install that, then run {shlex.join([bare, '-m', 'ensurepip'])} first"
        note = f"{first}; {note}" if note else first
    kept = _locked(actions)
    if kept is not None:
        note = f"{note}; {kept}" if note else kept
    if actions == finding.fix.actions and alternatives == finding.fix.alternatives and note == finding.fix.note:
        return finding
    return replace(finding, fix=replace(finding.fix, actions=actions, alternatives=alternatives, note=note))


_BREAK = "--break-system-packages"
# a project's lock file beside the environment its tool made for it, and how that tool pins a requirement: its sync
# puts back what the lock says, undoing a version pip or uv's pip put in (a reinstall of the same version stays)
_LOCKS = (("uv.lock", ".venv", "uv add"), ("poetry.lock", ".venv", "poetry add"), ("pdm.lock", ".venv", "pdm add"),
          ("pixi.lock", ".pixi/envs/*", "pixi add --pypi"))
_SAME_VERSION = frozenset({"--force-reinstall", "--ignore-installed", "--reinstall"})


def _locked(actions: tuple[Action, ...]) -> str | None:
    """What to say where an install changes what a project's lock pins (`_LOCKS`): the environment is that
    project's, and its tool's sync would undo the change; None where no install of ``actions`` is such."""
    import fnmatch
    import os

    for action in actions:
        if action.do is not ActionKind.PIP_INSTALL or _SAME_VERSION & set(action.options) or not action.python or \
                action.target_folder is not None or not os.path.isabs(action.python):
            continue
        prefix = os.path.dirname(os.path.dirname(action.python))
        for lock, environment, add in _LOCKS:
            project = prefix
            for _ in environment.split("/"):  # the project folder holds the environment's folders
                project = os.path.dirname(project)
            if fnmatch.fnmatch(os.path.relpath(prefix, project), environment) and \
                    os.path.isfile(os.path.join(project, lock)):
                return (f"{prefix} is the environment of the project {project} ({lock}): its sync puts back what "
                        f"{lock} pins; to keep the change, run {add} {shlex.join(action.requirements)} there")
    return None


def _with(action: Action) -> Action:
    if action.do not in _PIP:
        return action
    if _managed(action.python) and _BREAK not in action.options and (
            action.do is ActionKind.PIP_UNINSTALL or action.target_folder is None):  # all but a --target install
        return replace(action, options=(*action.options, _BREAK))
    if "--user" in action.options:  # uv's pip has no user site
        return action
    installer = _installer(action.python)
    return action if installer == action.installer else replace(action, installer=installer)


@lru_cache(maxsize=64)
def _installer(python: str | None) -> str:
    from cudnnload.resolve.pythons import installer_of

    return installer_of(python)


@lru_cache(maxsize=64)
def _managed(python: str | None) -> bool:
    from cudnnload.resolve.pythons import externally_managed

    return externally_managed(python)


@lru_cache(maxsize=64)
def _lacks_pip(python: str | None) -> bool:
    from cudnnload.resolve.pythons import lacks_pip

    return lacks_pip(python)


@lru_cache(maxsize=64)
def _without_ensurepip(python: str) -> str | None:
    from cudnnload.resolve.pythons import without_ensurepip

    return without_ensurepip(python)
