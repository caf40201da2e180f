"""A fix that writes where the file system is mounted read-only (a container image's root, a squashfs, a Nix
store, a site-packages bind-mounted read-only): no tool can apply it there, and pip would stop at its first file
("[Errno 30] Read-only file system"). Such a fix is said in words instead, naming the folder and where the change
must be made (the file system remounted read-write, or the image or package it is built from), the fix as it was
kept in the words; its alternatives (a `cudnnload run` that pins another cuDNN) write nothing and stay."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace

from cudnnload.codes import ActionKind
from cudnnload.verdicts import Action, Finding, fix, manual

# The actions that write, and the field that names where
_AT_TARGET = frozenset({ActionKind.PIP_INSTALL, ActionKind.PIP_UNINSTALL})
_AT_PATH = frozenset({ActionKind.DELETE, ActionKind.RELINK, ActionKind.CHMOD, ActionKind.REMOVE_LINE})


def writable(findings: Iterable[Finding]) -> list[Finding]:
    """``findings``, each whose fix writes on a read-only file system said in words (the module's docstring)."""
    return [_said(finding) for finding in findings]


def _said(finding: Finding) -> Finding:
    blocked = next((where for action in finding.fix.actions if (where := _written(action)) and read_only(where)),
                   None)
    if blocked is None:
        return finding
    return replace(finding, fix=fix(manual(
        f"{blocked} is on a file system mounted read-only, where no tool can make this change: remount it "
        f"read-write (`findmnt -T {blocked}` names it; `mount -o remount,rw` it), or make the change where that file "
        f"system is built (the container image, the package), then: {finding.fix.text}"),
        alternatives=finding.fix.alternatives))


def _written(action: Action) -> str | None:
    if action.do in _AT_TARGET:
        return action.target
    return action.path if action.do in _AT_PATH else None


def read_only(path: str) -> bool:
    """Whether the file system that holds ``path`` (or would hold it: its nearest existing folder) is mounted
    read-only."""
    probe = os.path.abspath(path)
    while probe != "/" and not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    try:
        return bool(os.statvfs(probe).f_flag & getattr(os, "ST_RDONLY", 1))
    except OSError:
        return False
