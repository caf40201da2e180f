"""The whole repair of what a program gets, checked on the model (issue 31): every change that stands between it
and a working cuDNN, in order, as one fix a tool applies.

A broken environment is rarely broken once: an ``LD_PRELOAD`` entry of another release, a relative
``LD_LIBRARY_PATH`` entry and an unreadable sub-library together. Each finding's own fix addresses its own cause;
applied alone, the program still fails on the next. `plan` derives the whole repair from the model, round by
round: the first error finding not yet taken care of gives its fix's actions; an action that changes the process's
environment (an entry removed, a variable unset or set) or its start-up (a ``.pth`` line taken out) is applied to
the model, and the target judged again in the changed world (`Judge`), so that what the change reveals or cures
is known, not assumed; an uninstall or a delete takes files out of the model's world, judged again the same way
(what a name's opener tries next is then what it gets); an action on files (a distribution reinstalled whole, a
stray file deleted) takes care of the findings about the files it rewrites, and a mode changed of those about that
file's mode. The plan ends when the model finds no error
left, or says plainly what it cannot decide (a finding without actions: a `manual` step naming it).
"""

from __future__ import annotations

import itertools
import os
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.codes import ActionKind, Code, Severity
from cudnnload.judge.fixes import project_name
from cudnnload.verdicts import Action, Finding, Fix, fix, manual, remove_entry, set_variable, unset


@dataclass(frozen=True)
class World:
    """What a target is judged in, as a repair changes it: the process's environment, the start-up lines taken as
    gone (``.pth`` file, line text), and the files an uninstall (a distribution's RECORD) or a delete takes away."""

    environ: Mapping[str, str]
    unstarted: frozenset[tuple[str, str]] = frozenset()
    gone: frozenset[str] = frozenset()

    def after(self, *actions: Action) -> World:
        """This world once ``actions`` are made (`applied`); an action on files other than an uninstall or a delete
        changes nothing the model sees (a wheel installed: its files are not there yet)."""
        world = self
        for action in actions:
            world = applied(action, world)
        return world


# What judges the target again in a changed world -> its findings there.
Judge = Callable[[World], Sequence[Finding]]

ROUNDS = 8  # the most changes a plan chains (each judged again); a world that needs more is said as unfinished
ENVIRONMENT = (ActionKind.ENV_REMOVE_ENTRY, ActionKind.ENV_UNSET, ActionKind.ENV_SET, ActionKind.REMOVE_LINE)
# What a distribution rewritten whole takes care of, for its own files: what is wrong with one of them
_REWRITTEN = frozenset({Code.MISSING_FILE, Code.EMPTY_FILE, Code.TRUNCATED, Code.NOT_ELF, Code.DAMAGED_ELF,
                        Code.UNREADABLE, Code.BROKEN_SYMLINK, Code.NOT_A_REGULAR_FILE, Code.SYMLINK_LOOP,
                        Code.RECORD_MISMATCH, Code.MISSING_SUBLIBRARY, Code.MIXED_RELEASE,
                        Code.SUBLIBRARY_UNLOADABLE})


def plan(findings: Sequence[Finding], environ: Mapping[str, str], judge: Judge, keep: str | None = None) -> Fix | None:
    """The actions that make the target work, in order (see the module docstring), or None when the model
    finds nothing wrong. ``findings``: the target's findings as judged now; ``environ``: its environment;
    ``keep``: the folder of the install the target loads, whose own search-path entry no step takes away (that
    entry is how the target gets what it is meant to get: a finding whose fix would remove it is said, not
    planned)."""
    if any(f.severity is Severity.ERROR for f in findings):
        found = least_change(environ, judge, keep, findings)
        if found is not None:
            return found
    world = World(dict(environ))
    actions: list[Action] = []
    later: list[str] = []  # what only a person can do, after the automatic changes (said, not applied)
    handled: set[tuple[Code, str | None, str, tuple[Action, ...]]] = set()
    for _ in range(ROUNDS):
        pending = [f for f in findings if f.severity is Severity.ERROR and _key(f) not in handled
                   and not taken_care_of(f, actions) and not _about_gone(f, world.gone)]
        if not pending:
            return _said(actions, later)
        # what only sums up the others in words ("make one of them whole") comes after them: their changes take
        # care of it
        first = min(pending, key=lambda f: f.code in _SUMMARIES and all(
            a.do is ActionKind.MANUAL for a in f.fix.actions))
        handled.add(_key(first))
        steps = _new_steps(first.fix.actions, actions)
        if first.code is Code.STARTUP_FAILED and any(a.do not in ENVIRONMENT for a in actions):
            # the interpreter's start-up is observed on the files as they are, not as a step before rewrites them
            # (a reinstall): whether it still dies then is known only once that step is made
            later.append(first.message)
            continue
        if not first.fix.actions:  # the model knows no change for it: said, never guessed
            return fix(*actions, manual(f"{first.message} (no change is known for it: "
                                        f"{first.fix.note or 'see that finding'})"))
        if actions and keep is not None and _removes(first.fix.actions, keep):
            # the install the target is meant to load stays: the finding's alternative that keeps it (its missing
            # dependency installed), where it has one; else said, not planned
            kept = next((a for a in first.fix.alternatives if a.do is not ActionKind.MANUAL
                         and not _removes((a,), keep)), None)
            if kept is None:
                later.append(str(first.fix.text or first.message))
                continue
            steps = _new_steps((kept,), actions)
        if actions and all(a.do is ActionKind.MANUAL for a in first.fix.actions):
            # after automatic changes whose effect on files the model does not judge again (a wheel installed
            # with what it requires), a step only a person can take is said, not made part of the plan
            later += [str(a) for a in first.fix.actions]
            continue
        actions += steps
        changed = world.after(*steps)
        if changed != world:
            world = changed
            # judged again, with what an uninstall takes away gone from the model's world (a framework that found its
            # cuDNN there looks further, and may find none); once a step puts files in place (a wheel installed),
            # the model cannot see them, and what it finds about the files that step rewrites is taken care of by
            # it (`taken_care_of`)
            findings = judge(world)
    return fix(*kept_once(actions), manual("then run doctor again: the model stopped after "
                                f"{ROUNDS} changes with errors left"))


def _removes(actions: Sequence[Action], keep: str) -> bool:
    """Whether ``actions`` take the entry that leads to the folder ``keep`` out of LD_LIBRARY_PATH."""
    return any(a.do is ActionKind.ENV_REMOVE_ENTRY and a.variable == "LD_LIBRARY_PATH"
               and _same_entry(a.entry or "", keep) for a in actions)


def _said(actions: list[Action], later: list[str]) -> Fix | None:
    if not actions:
        return None
    return fix(*kept_once(actions), note=("then, if it still shows: " + "; ".join(later)) if later else None)


def kept_once(actions: Sequence[Action]) -> list[Action]:
    """``actions`` less a setting of a variable, or an entry taken out of it, that a later step sets or unsets again
    (two rounds that each set LD_LIBRARY_PATH: the second value holds the first's entries, and only it is said; an
    entry removed, then the variable set to a value without it), and with an entry a
    later step takes out of a variable set before taken out of that setting (one value said, not a value and then
    a change of it), and less a cuDNN wheel installed that a later step writes over whole (`_written_over`)."""
    kept = [a for i, a in enumerate(actions)
            if not (a.do in (ActionKind.ENV_SET, ActionKind.ENV_REMOVE_ENTRY)
                    and any(b.do in (ActionKind.ENV_SET, ActionKind.ENV_UNSET)
                            and b.variable == a.variable for b in actions[i + 1:]))
            and not any(_written_over(a, b) for b in actions[i + 1:])
            and not any(_swaps_back(b, a) for b in actions[:i])]
    out: list[Action] = []
    for action in kept:
        at = next((i for i, a in enumerate(out) if a.do is ActionKind.ENV_SET and a.variable == action.variable),
                  None) if action.do is ActionKind.ENV_REMOVE_ENTRY else None
        if at is None:
            out.append(action)
        else:
            out[at] = _without(out[at], action.entry or "")
    return one_install_per_target(out)


def one_install_per_target(actions: list[Action]) -> list[Action]:
    """The pip installs into one ``--target`` folder that replace its ``nvidia`` folder whole (``--upgrade``:
    `fixes.pip_into`) made one, where the first was: a second would replace what the first put there with what it
    holds alone. Its requirements are all of theirs (a distribution named twice, as first named); ``--no-deps``
    only where each had it."""
    out: list[Action] = []
    for action in actions:
        at = next((i for i, a in enumerate(out) if _replaces_whole(a) and _replaces_whole(action)
                   and (a.target, a.python) == (action.target, action.python)), None)
        if at is None:
            out.append(action)
            continue
        first = out[at]
        named = {project_name(text) for text in first.requirements}
        options = [o for o in dict.fromkeys((*first.options, *action.options))
                   if o != "--no-deps" or ("--no-deps" in first.options and "--no-deps" in action.options)]
        out[at] = replace(first, requirements=(*first.requirements,
                                               *(t for t in action.requirements if project_name(t) not in named)),
                          options=tuple(options))
    return out


def one_set_per_target(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with every pip install into a ``--target`` folder that replaces its ``nvidia`` folder whole
    (`fixes.pip_into`) holding what all of theirs into that folder hold: each, applied after another (every fix of
    a report, in order), would replace what the other put there; one install of all of it leaves each in place,
    and applied again it changes nothing. Then one such install per fix (`one_install_per_target`)."""
    every = [a for f in findings for a in (*f.fix.actions, *f.fix.alternatives) if _replaces_whole(a)]
    if not every:
        return list(findings)
    union: dict[tuple[str | None, str | None], Action] = {}
    for key in dict.fromkeys((a.target, a.python) for a in every):
        [union[key]] = one_install_per_target([a for a in every if (a.target, a.python) == key])

    def whole(action: Action) -> Action:
        return union[(action.target, action.python)] if _replaces_whole(action) else action

    return [replace(f, fix=replace(f.fix, actions=tuple(one_install_per_target([whole(a) for a in f.fix.actions])),
                                   alternatives=tuple(whole(a) for a in f.fix.alternatives))) for f in findings]


def _replaces_whole(action: Action) -> bool:
    return action.do is ActionKind.PIP_INSTALL and action.target is not None and "--upgrade" in action.options


# How many worlds `least_change` judges at most (each a judgement without child processes, ~50-150 ms)
CANDIDATES = 24
_VARIABLES = ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH")


def least_change(environ: Mapping[str, str], judge: Judge, keep: str | None = None,
                 findings: Sequence[Finding] = ()) -> Fix | None:
    """The smallest change of the environment after which the model finds no error for the target: each entry of
    LD_PRELOAD, LD_LIBRARY_PATH and PYTHONPATH taken away alone; then each error finding's own setting of a
    variable (``findings``: a symlinked shim's folder put first), alone and with each entry taken away; then two
    entries taken away; judged on the model (at most `CANDIDATES` worlds); None when none does. An entry that leads
    to ``keep`` (the folder of what the target is meant to load) is never taken away. Synthesised and checked,
    never read off one finding."""
    entries = [(variable, entry) for variable in _VARIABLES
               for entry in dict.fromkeys(re.split(r"[ :]" if variable == "LD_PRELOAD" else r":",
                                                   environ.get(variable, "")))
               if variable in environ and not (keep is not None and _same_entry(entry, keep))
               and _may_matter(variable, entry)]
    # made as they are judged: the pairs of 20 000 PYTHONPATH entries are 200 million (doctor made a million of
    # them for 1 000 entries, 8 s, to judge 24)
    single = ([remove_entry(*one)] for one in entries)
    settings = list(dict.fromkeys(a for f in findings if f.severity is Severity.ERROR for a in f.fix.actions
                                  if a.do is ActionKind.ENV_SET and a.variable in _VARIABLES))
    set_then = ([_without(setting, one[1])] for setting in settings for one in entries
                if one[0] == setting.variable and one[1] in (setting.value or "").split(":"))
    pairs = ([remove_entry(*a), remove_entry(*b)] for index, a in enumerate(entries) for b in entries[index + 1:])
    today = World(environ)
    # a model that finds nothing wrong today cannot show that a change mends anything: the errors are the run's
    # alone (cuInit's out of memory under an address-space limit, on the H200: "remove /usr/local/nvidia/lib64 from
    # LD_LIBRARY_PATH" was the first change tried, and so the "repair")
    if not any(f.severity is Severity.ERROR for f in judge(today)):
        return None
    for actions in itertools.islice(itertools.chain(single, ([s] for s in settings), set_then, pairs), CANDIDATES):
        world = today.after(*actions)
        # a change that leaves the environment as it is (a setting to the value it has) mends nothing the model
        # missed today (fix differential 3-6756: "export LD_LIBRARY_PATH=<its own value>" was torch's repair)
        if world == today:
            continue
        if any(f.severity is Severity.ERROR for f in judge(world)):
            continue
        return fix(*actions, note="the model finds nothing wrong once this is done")
    return None


def _may_matter(variable: str, entry: str) -> bool:
    """Whether taking ``entry`` out of ``variable`` can change what the model sees: not for a folder (or zip) path
    that names nothing on disk, which no search finds anything in (an LD_PRELOAD name is searched for; an empty or
    relative entry is the current folder's)."""
    if variable == "LD_PRELOAD" or not entry.startswith("/"):
        return True
    try:
        return os.path.lexists(entry)
    except (OSError, ValueError):
        return True


def goes_further(steps: Sequence[Action], own: Sequence[Action]) -> bool:
    """Whether ``steps`` make every change of ``own`` (or write over it: `_written_over`; or set the same variable,
    to the value the plan judged on the model: `_set_again`) and more besides."""
    return all(a in steps or any(_written_over(a, b) or _set_again(a, b) for b in steps) for a in own) and any(
        b not in own and not any(_set_again(a, b) for a in own) for b in steps)


def _set_again(earlier: Action, later: Action) -> bool:
    """Whether both set one variable (``later`` to its own value: the order of entries a plan judged)."""
    return earlier.do is later.do is ActionKind.ENV_SET and earlier.variable == later.variable


def _written_over(earlier: Action, later: Action) -> bool:
    """Whether ``later`` rewrites every file ``earlier`` installs: both put cuDNN wheels of one major into the same
    folder, and ``later`` with ``--force-reinstall``. The nvidia-cudnn-cu12 and -cu13 wheels of a major write the
    same files (``nvidia/cudnn/lib/libcudnn*.so.<major>``), and pip's installer replaces each file it writes, so
    the earlier install leaves nothing the later one does not replace: it is a download and a step for nothing
    (a repair that first put back the program's 9.0, then torch's 9.24 over it)."""
    if (earlier.do is not ActionKind.PIP_INSTALL or later.do is not ActionKind.PIP_INSTALL
            or "--force-reinstall" not in later.options or earlier.target != later.target
            or earlier.python != later.python
            or ("--no-deps" in later.options and "--no-deps" not in earlier.options)):  # (its dependencies stay)
        return False
    majors = {_wheel_major(text) for text in earlier.requirements}
    return len(majors) == 1 and None not in majors and majors <= {_wheel_major(text) for text in later.requirements}


def _swaps_back(earlier: Action, later: Action) -> bool:
    """Whether ``later`` would put another cuDNN major of the same distribution into the site ``earlier`` installs it
    into: pip keeps one version of a project in a site, so it would uninstall what ``earlier`` put there (cuDNN 9
    put back for the program, then 8.9.7 of the same nvidia-cudnn-cu12 reinstalled for a finding about its own
    files, which the first install takes away anyway). The earlier one serves the first error; the later goes."""
    if earlier.do is not ActionKind.PIP_INSTALL or later.do is not ActionKind.PIP_INSTALL \
            or earlier.target != later.target or earlier.python != later.python:
        return False
    from cudnnload.resolve.catalog import cudnn_pin

    pins = [(pin.project, pin.major) for pin in map(cudnn_pin, earlier.requirements) if pin is not None]
    return any((pin.project, pin.major) not in pins and any(project == pin.project for project, _ in pins)
               for pin in map(cudnn_pin, later.requirements) if pin is not None)


def _wheel_major(requirement: str) -> int | None:
    """The cuDNN major a requirement of an ``nvidia-cudnn-cuNN`` wheel installs (`catalog.cudnn_pin`: an exact pin,
    or a range within one major); None for anything else (the JIT wheel, whose folder is another), or where pip
    would decide it."""
    from cudnnload.resolve.catalog import cudnn_pin

    pin = cudnn_pin(requirement)
    return pin.major if pin is not None and re.fullmatch(r"nvidia-cudnn-cu\d+", pin.project) else None


def _without(setting: Action, entry: str) -> Action:
    """``setting`` (a variable set) with ``entry`` taken out of its value: one setting, said once."""
    variable = setting.variable or ""
    left = World({variable: setting.value or ""}).after(remove_entry(variable, entry)).environ
    return set_variable(variable, left[variable]) if variable in left else unset(variable)


def applied(action: Action, world: World) -> World:
    """``action`` applied to the model's world: the environment, the start-up lines taken as gone, the files an
    uninstall or a delete takes away."""
    if action.do is ActionKind.REMOVE_LINE and action.path and action.line is not None:
        return replace(world, unstarted=world.unstarted | {(action.path, action.line)})
    if action.do is ActionKind.PIP_UNINSTALL:
        return replace(world, gone=world.gone | uninstalled(action))
    if action.do is ActionKind.DELETE:  # a name taken away: what its opener tries next is what it gets then
        return replace(world, gone=world.gone | frozenset(os.path.normpath(path) for path in action.deletes))
    changed = dict(world.environ)
    variable = action.variable or ""
    if action.do is ActionKind.ENV_UNSET:
        changed.pop(variable, None)
    elif action.do is ActionKind.ENV_SET:
        changed[variable] = action.value or ""
    elif action.do is ActionKind.ENV_REMOVE_ENTRY:
        # LD_PRELOAD is split on spaces and colons (rtld.c), the others on colons
        parts = re.split(r"[ :]" if variable == "LD_PRELOAD" else r":", changed.get(variable, ""))
        kept = [part for part in parts if not _same_entry(part, action.entry or "")]
        if any(kept) or (kept and variable != "LD_PRELOAD"):
            changed[variable] = (" " if variable == "LD_PRELOAD" else ":").join(kept)
        else:
            changed.pop(variable, None)
    return replace(world, environ=changed) if changed != world.environ else world


def uninstalled(action: Action) -> frozenset[str]:
    """The shared objects a ``pip uninstall`` takes away: those the RECORD of each distribution it names lists, in
    the folder it uninstalls from (its ``target``); none when that is not known."""
    from packaging.utils import canonicalize_name

    from cudnnload.resolve.sources import cudnn_distributions

    if action.do is not ActionKind.PIP_UNINSTALL or not action.target:
        return frozenset()
    names = {canonicalize_name(name) for name in action.requirements}
    return frozenset(posixpath.normpath(path) for dist in cudnn_distributions([action.target])
                     if canonicalize_name(dist.name) in names for path in dist.files)


def _about_gone(finding: Finding, gone: frozenset[str]) -> bool:
    """Whether ``finding`` is about a file an uninstall of the plan takes away, or the folder of such files."""
    path = finding.subject.path
    if not gone or path is None:
        return False
    where = posixpath.normpath(path)
    return where in gone or any(posixpath.dirname(file) == where for file in gone)


def _same_entry(a: str, b: str) -> bool:
    return a == b or (bool(a) and bool(b) and posixpath.normpath(a) == posixpath.normpath(b))


def _key(finding: Finding) -> tuple[Code, str | None, str, tuple[Action, ...]]:
    """A problem, for the plan: the same words about the same file with another fix are another problem (torch
    that meets cuDNN 9.0 from a .pth line's folder, then, with that line gone, 9.0 from a PYTHONPATH folder: fix
    differential 3-8313)."""
    return finding.code, finding.subject.path, finding.message, tuple(finding.fix.actions)


# Findings that sum up others ("loads no cuDNN": none of them is whole): the plan's changes take care of them
_SUMMARIES = frozenset({Code.NO_CUDNN})


def taken_care_of(finding: Finding, actions: Sequence[Action]) -> bool:
    """Whether the plan's actions so far already do what ``finding`` needs: its own actions are all in it, or a
    reinstall rewrites the file it is about, or a delete is about that very file, or a mode change is about that
    very file and the finding about its mode, or it only sums up the others (`_SUMMARIES`)."""
    if finding.fix.actions and all(action in actions for action in finding.fix.actions):
        return True
    if finding.code in _SUMMARIES and actions:
        return True
    if finding.code is Code.MISSING_DEPENDENCY and any(_brings_dependencies(action) for action in actions):
        return True  # pip installs cuDNN's own Requires-Dist (its cuBLAS, NVRTC) with it
    if any(a.do is ActionKind.PIP_INSTALL for a in finding.fix.actions) and all(
            a in actions or _installed_by(a, actions) for a in finding.fix.actions):
        # what a wheel the plan installs already brings (judged again, the model cannot see its files), where the
        # finding asks for nothing more the plan has not done (a start-up line that maps another release, taken out)
        return True
    path = finding.subject.path
    if path is None:
        return False
    for action in actions:
        if path in action.deletes or (action.do is ActionKind.CHMOD and action.path == path and (
                finding.code is Code.UNREADABLE or all(a.do is ActionKind.CHMOD for a in finding.fix.actions))):
            return True  # a mode change mends a mode, not what the file holds (cut short, another release's)
        if action.do is ActionKind.PIP_INSTALL and "--force-reinstall" in action.options and action.target \
                and finding.code in _REWRITTEN and _under(path, action.target):
            return True
    return False


def _installed_by(action: Action, actions: Sequence[Action]) -> bool:
    """Whether ``action`` is a pip install of nothing the pip installs among ``actions`` do not install already."""
    installed = {r for a in actions if a.do is ActionKind.PIP_INSTALL for r in a.requirements}
    return action.do is ActionKind.PIP_INSTALL and set(action.requirements) <= installed


def _new_steps(asked: Sequence[Action], actions: Sequence[Action]) -> list[Action]:
    """The actions of ``asked`` the plan does not hold yet, less pip installs of what it installs already
    (`_installed_by`); each entry of a setting under the folder such a dropped install was to install into is moved
    to the folder the plan installs the same into: a setting of LD_LIBRARY_PATH to
    ``~/.local/lib/nvidia-cudnn-9/nvidia/cudnn/lib``, whose install the wheel the plan puts into a venv made needless,
    names the venv's ``nvidia/cudnn/lib``, which holds the files once the plan is done, not a folder nothing makes."""
    steps: list[Action] = []
    moved: dict[str, str] = {}
    for action in asked:
        if action in actions:
            continue
        if not _installed_by(action, actions):
            steps.append(action)
            continue
        into = next((a.target for a in actions if a.do is ActionKind.PIP_INSTALL and a.target
                     and set(action.requirements) & set(a.requirements)), None)
        if action.target and into is not None and into != action.target:
            moved[posixpath.normpath(action.target)] = into

    def move(value: str) -> str:
        return ":".join(next((to + entry[len(gone):] for gone, to in moved.items()
                              if entry == gone or _under(entry, gone)), entry) for entry in value.split(":"))

    return [replace(a, value=move(a.value)) if moved and a.do is ActionKind.ENV_SET and a.value else a
            for a in steps]


def _brings_dependencies(action: Action) -> bool:
    """A pip install of a cuDNN wheel that installs what that wheel requires too (no ``--no-deps``)."""
    return action.do is ActionKind.PIP_INSTALL and "--no-deps" not in action.options and any(
        requirement.startswith("nvidia-cudnn") for requirement in action.requirements)


def _under(path: str, folder: str) -> bool:
    return posixpath.normpath(path).startswith(posixpath.normpath(folder).rstrip("/") + "/")
