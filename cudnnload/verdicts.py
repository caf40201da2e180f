"""A verdict as data: what it is about (`Subject`), what to do (`Fix`, made of `Action`s), what the user
will see (`Consequence`), put together in a `Finding` with its `Code` and `Severity` (`cudnnload.codes`).

At the bottom of the stage order: every stage reports in these terms and no code decides anything by
reading a message; the message is for people, rendered where the finding is made, and the JSON contract
(README "Fixes") is `Fix.json`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from cudnnload.codes import (  # noqa: F401  (the words of a verdict, re-exported)
    ERROR,
    INFO,
    WARNING,
    ActionKind,
    Code,
    Effect,
    Severity,
    SubjectKind,
)


@dataclass(frozen=True)
class Subject:
    """What a finding is about, as data: the file, install, distribution, variable (entry), consumer or
    program; ``library`` names the sub-library key (``"cnn"``) or dependency soname whose load it
    decides, where it decides one."""

    kind: SubjectKind
    path: str | None = None  # the file, the install's folder, the program, the interpreter
    library: str | None = None  # catalog key ("cnn") or a dependency's soname ("libcublasLt.so.12")
    variable: str | None = None  # "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES" ...
    entry: str | None = None  # the entry of that variable, as written
    name: str | None = None  # a distribution ("nvidia-cudnn-cu12 9.28.0.42"), a framework ("torch 2.11.0")


def file(path: str | None, library: str | None = None) -> Subject:
    return Subject(SubjectKind.FILE, path, library)


def install(folder: str | None, library: str | None = None) -> Subject:
    return Subject(SubjectKind.INSTALL, folder, library)


# The fields of each action kind in its JSON (README "Fixes": the contract other tools apply).
_FIELDS: dict[ActionKind, tuple[str, ...]] = {
    ActionKind.ENV_REMOVE_ENTRY: ("variable", "entry"), ActionKind.ENV_UNSET: ("variable",),
    ActionKind.ENV_SET: ("variable", "value"), ActionKind.DELETE: ("path", "names"),
    ActionKind.PIP_INSTALL: ("requirements", "options", "target", "python"),
    ActionKind.PIP_UNINSTALL: ("requirements", "target", "python"), ActionKind.RELINK: ("path", "target"),
    ActionKind.CHMOD: ("path", "mode", "owner"), ActionKind.REMOVE_LINE: ("path", "line"), ActionKind.RUN: ("argv",),
    ActionKind.RESTART: ("pid", "argv"), ActionKind.MANUAL: ("text",),
}


@dataclass(frozen=True)
class Action:
    """One step of a fix. Paths are absolute."""

    do: ActionKind
    variable: str | None = None
    entry: str | None = None
    value: str | None = None
    path: str | None = None
    requirements: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    target: str | None = None  # the site-packages folder of the distribution (pip's); what a link points to
    python: str | None = None  # the interpreter whose environment it is
    argv: tuple[str, ...] = ()
    text: str | None = None
    mode: str | None = None  # chmod's, in octal: "0644"
    line: str | None = None  # remove-line's, exactly as in the file
    owner: str | None = None  # chmod's: who must run it, when the path is not the user's (its owner, or root)
    pid: int | None = None  # restart's: the running process
    # pip-install's and pip-uninstall's: whose pip runs it: "pip" (``python -m pip``), or "uv" (``uv pip --python``)
    # for an environment uv made without pip in it (`diagnose.installer`)
    installer: str = "pip"
    # delete's, when given: the names in the folder ``path`` to delete where they are there (the folder stays)
    names: tuple[str, ...] = ()

    @property
    def target_folder(self) -> str | None:
        """A pip-install's ``--target`` folder: its ``target`` where that is not the interpreter's own site-packages
        (nor its user site); None otherwise."""
        if self.do is not ActionKind.PIP_INSTALL or not self.target or "--user" in self.options \
                or _owns(self.python, self.target):
            return None
        return self.target

    @property
    def deletes(self) -> tuple[str, ...]:
        """The paths a delete takes away (where they are there, for ``names``)."""
        if self.do is not ActionKind.DELETE or self.path is None:
            return ()
        return tuple(f"{self.path.rstrip('/')}/{name}" for name in self.names) if self.names else (self.path,)

    def json(self) -> dict[str, object]:
        """The contract's object: ``do`` and that kind's fields (README "Fixes")."""
        out: dict[str, object] = {"do": self.do.value}
        for name in _FIELDS[self.do]:
            value = getattr(self, name)
            if name == "names" and not value:  # a delete of ``path`` itself
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        if self.do in (ActionKind.PIP_INSTALL, ActionKind.PIP_UNINSTALL) and self.installer != "pip":
            out["installer"] = self.installer
        if self.do is ActionKind.PIP_UNINSTALL and self.options:  # pip's --break-system-packages (PEP 668)
            out["options"] = list(self.options)
        return out

    def __str__(self) -> str:
        if self.do is ActionKind.ENV_REMOVE_ENTRY:
            return f"remove {shlex.quote(self.entry) if self.entry else '(the empty entry)'} from {self.variable}"
        if self.do is ActionKind.ENV_UNSET:
            return f"unset {self.variable}"
        if self.do is ActionKind.ENV_SET:
            return f"export {self.variable}={shlex.quote(self.value or '')}"
        if self.do is ActionKind.DELETE:
            if self.names:
                return f"in {shlex.quote(self.path or '')}, delete whichever are there of {_names(self.names)}"
            return f"delete {shlex.quote(self.path or '')}"
        if self.do is ActionKind.PIP_INSTALL:
            # a target that is not the interpreter's own site-packages is pip's --target (README "Fixes")
            place = ["--target", self.target_folder] if self.target_folder else []
            if self.installer == "uv":
                return shlex.join(["uv", "pip", "install", "--python", self.python or "python",
                                   *dict.fromkeys(_UV_OPTIONS.get(o, o) for o in self.options), *place,
                                   *self.requirements])
            return shlex.join([self.python or "python", "-m", "pip", "install", *self.options, *place,
                               *self.requirements])
        if self.do is ActionKind.PIP_UNINSTALL:  # pip uninstall has no --target: the files of its RECORD go
            pip = ["uv", "pip", "uninstall", "--python", self.python or "python"] if self.installer == "uv" else \
                [self.python or "python", "-m", "pip", "uninstall", "-y", *self.options]
            return shlex.join([*pip, *self.requirements]) + (
                f" (from {shlex.quote(self.target)})" if self.target and not _owns(self.python, self.target) else "")
        if self.do is ActionKind.RELINK:
            return f"ln -sfn {shlex.quote(self.target or '')} {shlex.quote(self.path or '')}"
        if self.do is ActionKind.CHMOD:
            return f"chmod {self.mode} {shlex.quote(self.path or '')}" + (
                f" (as {self.owner}, its owner{', or root' if self.owner != 'root' else ''})" if self.owner else "")
        if self.do is ActionKind.REMOVE_LINE:
            return f"remove the line {self.line!r} from {shlex.quote(self.path or '')}"
        if self.do is ActionKind.RUN:
            return f"run the program as: {shlex.join(self.argv)} <program> [args...]"
        if self.do is ActionKind.RESTART:
            return f"restart process {self.pid} ({shlex.join(self.argv) or 'its command line'}): stop it and start " \
                "it again as it was started, in its folder and environment"
        return self.text or ""


def _names(names: tuple[str, ...]) -> str:
    """File names for people: ``libcudnn_{adv,ops}.so.9.28{.0,}`` where every stem has the same endings (the shell's
    braces), else each name."""
    split = [name.partition(".so.") for name in names]
    stems = list(dict.fromkeys(stem for stem, dot, _ in split if dot))
    ends = list(dict.fromkeys(end for _, dot, end in split if dot))
    if len(stems) < 2 or len(split) != len(stems) * len(ends) or any(not dot for _, dot, _ in split) or \
            {(stem, end) for stem, _, end in split} != {(stem, end) for stem in stems for end in ends}:
        return ", ".join(shlex.quote(name) for name in names)
    common = os.path.commonprefix(ends)
    endings = ends[0][len(common):] if len(ends) == 1 else "{" + ",".join(e[len(common):] for e in ends) + "}"
    prefix = os.path.commonprefix(stems)
    return f"{prefix}{{{','.join(stem[len(prefix):] for stem in stems)}}}.so.{common}{endings}"


# pip's options as uv's pip interface spells them: uv installs into the one environment it is given and sees no
# other site folder, so pip's --ignore-installed (install though another folder of sys.path has it) is its --reinstall
_UV_OPTIONS = {"--force-reinstall": "--reinstall", "--ignore-installed": "--reinstall"}


def _owns(python: str | None, site: str) -> bool:
    """Whether ``site`` lies in the prefix of the interpreter ``python`` (``PREFIX/bin/python``): its own."""
    if python is None or "/" not in python:
        return False
    prefix = python.rsplit("/", 2)[0]
    return site.startswith(prefix.rstrip("/") + "/")


def remove_entry(variable: str, entry: str) -> Action:
    return Action(ActionKind.ENV_REMOVE_ENTRY, variable=variable, entry=entry)


def unset(variable: str) -> Action:
    return Action(ActionKind.ENV_UNSET, variable=variable)


# Variables whose value is a list of folders searched in order: a folder named twice is searched once, at its first
_SEARCH_LISTS = frozenset({"LD_LIBRARY_PATH", "PYTHONPATH", "PATH"})


def set_variable(variable: str, value: str) -> Action:
    """``export VARIABLE=VALUE``; a search list's folder named twice is said once, where it is first (what the
    search meets later it has looked in already)."""
    if variable in _SEARCH_LISTS:
        value = ":".join(dict.fromkeys(value.split(":")))
    return Action(ActionKind.ENV_SET, variable=variable, value=value)


def delete(path: str, names: Iterable[str] = ()) -> Action:
    """``path`` deleted; with ``names``, those of them that are in the folder ``path`` (``rm -f``)."""
    return Action(ActionKind.DELETE, path=path, names=tuple(names))


def pip_install(requirements: Iterable[str], *, options: Iterable[str] = (), target: str | None = None,
                python: str | None = None) -> Action:
    return Action(ActionKind.PIP_INSTALL, requirements=tuple(requirements), options=tuple(options), target=target,
                  python=python)


def restart(pid: int, argv: Iterable[str]) -> Action:
    return Action(ActionKind.RESTART, pid=pid, argv=tuple(argv))


def pip_uninstall(names: Iterable[str], *, target: str | None = None, python: str | None = None) -> Action:
    return Action(ActionKind.PIP_UNINSTALL, requirements=tuple(names), target=target, python=python)


def relink(path: str, target: str) -> Action:
    return Action(ActionKind.RELINK, path=path, target=target)


def chmod(path: str, mode: int, owner: str | None = None) -> Action:
    return Action(ActionKind.CHMOD, path=path, mode=f"{mode:04o}", owner=owner)


def remove_line(path: str, line: str) -> Action:
    return Action(ActionKind.REMOVE_LINE, path=path, line=line)


def run(argv: Iterable[str]) -> Action:
    return Action(ActionKind.RUN, argv=tuple(argv))


def manual(text: str) -> Action:
    return Action(ActionKind.MANUAL, text=text)


@dataclass(frozen=True)
class Fix:
    """What makes the finding go away: actions to apply in order (the permanent fix), and ``alternatives``
    (each a way on its own, e.g. ``cudnnload run`` pinning the right cuDNN without changing anything).
    No actions: the fix is not known (``note`` may say what to look at); never a guess."""

    actions: tuple[Action, ...] = ()
    note: str | None = None  # said after the actions, for people
    alternatives: tuple[Action, ...] = ()

    @property
    def text(self) -> str | None:
        said = "; then ".join(str(action) for action in self.actions)
        if self.alternatives:
            said += ("; or " if said else "") + "; or ".join(str(action) for action in self.alternatives)
        if self.note:
            said = f"{said} ({self.note})" if said else self.note
        return said or None

    def json(self) -> dict[str, object]:
        """The contract (README "Fixes"): the text, the actions to apply in order, and where one exists the
        alternative ways, each complete on its own (not to be applied beside the actions)."""
        said: dict[str, object] = {"text": self.text, "actions": [a.json() for a in self.actions]}
        if self.alternatives:
            said["alternatives"] = [a.json() for a in self.alternatives]
        return said

    def __bool__(self) -> bool:
        return bool(self.actions or self.note or self.alternatives)


NO_FIX = Fix()


def fix(*actions: Action, note: str | None = None, alternatives: Iterable[Action] = ()) -> Fix:
    return Fix(tuple(actions), note, tuple(alternatives))


@dataclass(frozen=True)
class Consequence:
    """What the user will see because of a finding: which calls, what they do, and what is printed first."""

    calls: str  # "cudnnCnnVersionCheck and every convolution call (cudnnCreateConvolutionDescriptor, ...)"
    effect: Effect
    library: str  # what fails to load: a sub-library key ("cnn") or a dependency's soname
    status: int | None = None  # the cudnnStatus_t the calls return (STATUS)
    status_name: str | None = None
    message: str | None = None  # the first line cuDNN (or the dynamic linker) prints, as printed
    first_call: str | None = None  # the function that meets it first, in an application's usual order

    def __post_init__(self) -> None:
        object.__setattr__(self, "effect", Effect(self.effect))

    def __str__(self) -> str:
        said = f', after cuDNN prints "{self.message}"' if self.message and self.effect is Effect.STATUS else ""
        if self.effect is Effect.STATUS:
            return f"{self.calls}: each returns {self.status} {self.status_name}{said}; the process goes on"
        if self.effect is Effect.ABORT:
            return (f"{self.calls}: cuDNN prints \"{self.message}\" and calls abort(); the process dies of SIGABRT "
                    "(exit status 134, \"Aborted (core dumped)\")")
        if self.effect is Effect.SIGBUS:
            return f"{self.calls}: the process dies of SIGBUS inside dlopen ({self.message}), printing nothing"
        if self.effect is Effect.HANG:
            return f"{self.calls}: the process hangs inside dlopen ({self.message}), printing nothing"
        return f"{self.calls}: {self.message}"


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact): its code, what it is about, what the user will see, and the fix."""

    code: Code
    message: str  # for people; never read by code
    subject: Subject
    fix: Fix = field(default=NO_FIX)
    consequences: tuple[Consequence, ...] = ()
    severity: Severity = None  # type: ignore[assignment]  # default: the code's usual one

    def __post_init__(self) -> None:
        code = Code(self.code)  # type: ignore[call-arg]  # the value's member (Enum's own lookup)
        severity = code.severity if self.severity is None else Severity(self.severity)
        # an error that does not apply here (no framework present reaches the file; the run did not hit it) is
        # said as a warning, whatever its code (`judge.routes.scope`, `diagnose.observe`)
        demoted = severity is Severity.WARNING and Severity.ERROR in code.severities
        if severity not in code.severities and not demoted:
            raise ValueError(f"{code.value} is never {severity.value} (it is {', '.join(code.severities)})")
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "severity", severity)

    @property
    def path(self) -> str | None:
        return self.subject.path

    @property
    def blocks_load(self) -> bool:
        return self.code.blocks_load


def unique(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Each finding once (by code, subject and message, the first kept), errors first."""
    seen: dict[tuple[Code, Subject, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.code, f.subject, f.message), f)
    return tuple(sorted(seen.values(), key=lambda f: f.severity.rank))


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]
