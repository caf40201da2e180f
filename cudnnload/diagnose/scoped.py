"""A change of the environment that other programs would feel, said for the program that needs it.

An ``LD_LIBRARY_PATH`` entry is shared by every program started from the same shell, profile or job script. When
the entry a fix removes is where a program that asks for a shim by name (``dlopen("libcudnn.so.9")``, a NEEDED
entry without an RPATH or RUNPATH of its own) gets a cuDNN that loads whole (`judge.installs.whole`), and without
the entry it would get another one or none, removing it for everyone changes what they all load to mend one. The
model says so, by resolving that name from a plain program with and without the entry. Where what they get there
does not load, taking the entry away is their fix too, and stays the first. Then the fix runs this program with the
variable changed for it alone (``env LD_LIBRARY_PATH=... PROGRAM``), and the removal for everyone stays as the
alternative, with why it is not the first.

The same holds where the shim they get lies on another entry (a link of it, whose ``$ORIGIN`` holds nothing else) but
what it loads beside it comes through the entry removed, and for an ``LD_PRELOAD`` entry taken away: a preloaded shim
answers every later request for its name, so programs by name may get a working cuDNN through it today and a broken
one without it (unless the fix opens a folder on their search path, closed to this user today, or puts a wheel
back into one: what it gives back there answers them after it, and a preload kept would be mixed with it). "Worse"
is what the model predicts for them: a cuDNN that no longer loads whole from one folder (a shim of a partial copy
with sub-libraries from another entry), or, as whole as before, the calls of cuDNN's catalog made in order failing
sooner without the change (short of a GPU on both sides).

The same holds for the frameworks of the shell's Python (``others``: the interpreter that ``VIRTUAL_ENV`` or
``PATH`` gives, whose PyTorch or JAX the same profile starts): a change of ``LD_LIBRARY_PATH``, ``LD_PRELOAD`` or
``PYTHONPATH`` after which the model says one of them would fare worse than today (fail where it works, or fail
sooner: at its version check where its calls run today; a preloaded shim of another release that the removed entry
used to complete) is made for this program alone, the change for everyone kept as the alternative with the
framework it would harm. A framework whose site the fix puts a cuDNN wheel back into gets that wheel after it:
what the model says it would get without it is no harm of the change; but where its Python's start-up maps a cuDNN
file behind a preloaded one of the same name (a sitecustomize line's 9.0 graph behind a preloaded 9.24 graph, which
answers the framework's shim today), a preload taken away hands it that file, and the change is made for the
program alone too (`Fared.masked`, read from the start-up observed: `doctor._masked`).

And a fix that sets ``LD_LIBRARY_PATH`` for a framework (the JIT wheel's folder, which torch's own search does not
reach) puts that folder first for every program: before a program's own RUNPATH too (a conda env's program linked
with ``$ORIGIN/../lib``). Where what a program asking for the shim by name would then get does not load whole (the
JIT wheel has no ops, cnn or adv), the setting is made for this program alone.

None of this while an ``LD_PRELOAD`` entry stops every program started with it: ``env`` would stop too, before it
changed anything for the program, and no program of the shell runs today to be harmed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from cudnnload.codes import ActionKind, Code, Severity
from cudnnload.diagnose.inventory import judged_install_of
from cudnnload.diagnose.remedy import World
from cudnnload.judge.installs import predict_install, whole
from cudnnload.judge.judged import Judged
from cudnnload.judge.routes import call_fails
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import GENERATIONS
from cudnnload.resolve.consumers import Pin
from cudnnload.resolve.discovery import Context, context, search_entry, wheel_site
from cudnnload.resolve.process import preload_entries
from cudnnload.resolve.versions import Release, parse_release
from cudnnload.verdicts import Action, Finding, Fix, run

_VARIABLE = "LD_LIBRARY_PATH"
_ENVIRONMENT = (ActionKind.ENV_REMOVE_ENTRY, ActionKind.ENV_UNSET, ActionKind.ENV_SET)



class Fared(NamedTuple):
    """How a framework of the shell's Python fares in a world: its first error there (None: it works), and how far
    it gets (`judge.routes.Served.fare`: the greater, the further)."""

    why: str | None
    fare: tuple[int, int]
    site: str | None = None  # the site-packages folder it is installed in
    # cuDNN files its Python's start-up lines map (a .pth line, sitecustomize) behind a file of the same name that
    # LD_PRELOAD maps first, which answers that name for it today: each as (name, its path, the line)
    masked: tuple[tuple[str, str, str], ...] = ()
    # what it accepts of a cuDNN wheel put back into its site: its pins on nvidia-cudnn-* (`consumers.Pin`), and the
    # release it was built with (none older of that major passes its version check)
    pins: tuple[Pin, ...] = ()
    build: Release | None = None


# The frameworks of the shell's Python judged in a world (an environment): each one's label, and how it fares there
Others = Callable[[Mapping[str, str]], Mapping[str, Fared]]


def scoped(findings: Iterable[Finding], environ: Mapping[str, str], ctx: Context | None = None,
           others: Others | None = None) -> tuple[Finding, ...]:
    """``findings`` with each fix that takes LD_LIBRARY_PATH entries away from every program, where others get a
    working cuDNN through them, said for the program alone (the module docstring). A fix's removals are judged
    together: two entries that each leave the others a cuDNN can, both gone, leave them none. ``others``: the
    shell's frameworks, judged in a world; a change of the environment after which one that works fails is made
    for the program alone too."""
    findings = tuple(findings)
    if any(f.code is Code.PRELOAD_CANNOT_LOAD and f.severity is Severity.ERROR for f in findings):
        # a preload that stops every program started with it stops `env` too, before it takes anything away for
        # the program it was to start (fix differential 3-6399: "env -u LD_PRELOAD app" exited 127), and every
        # program of the shell stops today, so none has anything to lose: each change is made for everyone
        return findings
    if others is not None:
        findings = _sparing(findings, environ, others)
    settings = any(a.do is ActionKind.ENV_SET and a.variable == _VARIABLE for f in findings for a in f.fix.actions)
    preloads = any(_unpreloads(a) for f in findings for a in f.fix.actions)
    if not settings and not preloads and not any(_removed(f.fix, environ) for f in findings):
        return findings
    # a program of no search paths of its own (as /usr/bin/env is): what LD_LIBRARY_PATH alone gives it
    plain = linker.Requester("/usr/bin/env", program=True)
    now = context(environ, executable=plain, cache=ctx.cache if ctx is not None else None,
                  verify=ctx.verify if ctx is not None else False)
    findings = _first_for_all(findings, environ, now) if settings else findings
    unkept = findings
    findings = _preloads_kept(findings, environ, now) if preloads else findings
    if not any(_removed(f.fix, environ) for f in findings):
        return findings
    serves: Serves = {}
    out = [_entries_for_the_program(finding, environ, now, serves) for finding in findings]
    # a preload kept for everyone must not meet what the fix puts back into an entry kept for everyone: the fix
    # differential's 3-16229, the venv's cuDNN 9.24 put back into a folder on LD_LIBRARY_PATH that the entries' own
    # judgement kept for everyone, and a preloaded 9.0 ops whose graph that folder answers first: every program's
    # start stops, `env -u LD_PRELOAD` too. Those go as the fix had them, the preload taken away for everyone
    return tuple(_entries_for_the_program(first, environ, now, serves)
                 if _preload_wrapped(kept.fix) and not _preload_wrapped(first.fix)
                 and _opens_for_them(kept.fix, now, environ) else kept
                 for first, kept in zip(unkept, out, strict=True))


def _preload_wrapped(repair: Fix) -> bool:
    """Whether ``repair`` runs the program with LD_PRELOAD changed for it alone (``env -u LD_PRELOAD``)."""
    return any(a.do is ActionKind.RUN and any(word == "LD_PRELOAD" or word.startswith("LD_PRELOAD=")
                                              for word in a.argv) for a in repair.actions)


# What taking LD_LIBRARY_PATH entries away leaves programs by name, per (entries taken, whether a setting replaces
# them, the environment after the fix): the reason to make it for the program alone, or None
Serves = dict[tuple[frozenset[str], bool, frozenset[tuple[str, str]]], "str | None"]


def _entries_for_the_program(finding: Finding, environ: Mapping[str, str], now: Context,
                             serves: Serves) -> Finding:
    """``finding`` with its fix's removals of LD_LIBRARY_PATH entries made for the program alone where programs by
    name get a working cuDNN through them (`scoped`)."""
    # an entry a setting leaves out is taken away as well, and put in its place what the setting gives: that
    # is harm only where programs by name are left no cuDNN at all (a setting that puts the full wheel where
    # the JIT wheel was is their fix too), and none where the setting names a folder the fix fills, which the
    # model cannot see yet
    removals = frozenset(entry for a in finding.fix.actions if a.do is ActionKind.ENV_REMOVE_ENTRY
                         for entry in _dropped(a, environ))
    replaced = not removals
    taken = removals or (frozenset() if _refilled(finding.fix) else _removed(finding.fix, environ))
    # an entry that names no folder gives no program anything, and where the fix only changes the environment
    # nothing will make it one: taking it away is no one's loss (5000 missing entries, each a finding whose removal
    # was judged by resolving every name again: minutes)
    only_environment = all(a.do in _ENVIRONMENT for a in finding.fix.actions)
    gone = frozenset(entry for entry in taken if not _inert(entry) and not (only_environment and _no_folder(entry)))
    if not gone:
        return finding
    # judged in the world the whole fix makes: a removal that a later setting of the variable writes over is
    # not what programs by name meet (seed 3's 3-19: an entry removed, then the variable set to the wheel's
    # folder and a link's, which gives them a whole cuDNN again)
    world = World(environ).after(*(a for a in finding.fix.actions if a.do in _ENVIRONMENT)).environ
    key = (gone, replaced, frozenset(world.items()))
    # a fix that takes a preload away from everyone (`_preloads_kept`: it would be mixed with what the fix gives
    # back) and gives back an entry that answers first once it is done (a wheel put back into it, a folder
    # opened): programs by name get that cuDNN, whole, whatever the preload and the entries taken gave them (the
    # fix differential's 3-8971: a folder of links before the venv's taken away, the venv's wheel put back)
    unloads = any(_unpreloads(a) for a in finding.fix.actions)
    gone = frozenset() if gone and unloads and _opens_for_them(finding.fix, now, environ) else gone
    if gone and key not in serves:
        serves[key] = _serves_others(gone, now, world, replaced)
    why = serves.get(key) if gone else None
    return _for_the_program(finding, environ, gone, why) if why else finding


def _inert(entry: str) -> bool:
    """Whether the ``LD_LIBRARY_PATH`` entry holds cuDNN's names but no program of this user can map one of them
    today (links into a folder closed to them, which the fix opens): taking it away changes nothing for anyone
    now, and keeps what the fix opens from answering them later through it. It goes for everyone."""
    names = [os.path.join(entry or ".", lib.soname) for gen in GENERATIONS.values() for lib in gen.libraries]
    return any(os.path.lexists(name) for name in names) and not any(os.access(name, os.R_OK) for name in names)


def _sparing(findings: tuple[Finding, ...], environ: Mapping[str, str], others: Others) -> tuple[Finding, ...]:
    """``findings`` with each fix whose changes of the environment would make a framework of the shell's Python
    fare worse than today (fail where it works; fail sooner where it fails already: stop at its version check
    where today it gets as far as a call), made for the program alone (``env VAR=... PROGRAM``); the change for
    everyone stays as the alternative, with the framework it would harm. A framework that cannot start today has
    nothing to lose."""
    today: Mapping[str, Fared] | None = None
    out = []
    for finding in findings:
        changes = [a for a in finding.fix.actions if a.do in _ENVIRONMENT]
        if not changes or any(a.do is ActionKind.RUN for a in finding.fix.actions) or \
                (len(changes) == len(finding.fix.actions) and all(map(_of_no_folder, changes))):
            out.append(finding)
            continue
        world = World(environ).after(*changes).environ
        today = others(environ) if today is None else today
        after = others(world) if any(now.fare > (0, 0) for now in today.values()) else {}
        # a framework whose site the fix puts a cuDNN wheel back into gets that wheel after it, which the model
        # cannot judge before it is there: what it would get without it is no harm of the change (fix
        # differential 8-11: torch's wheel put back, a preload of another release taken away with it)
        # unless the wheel put back is one it refuses (fix differential 3-16043: cuDNN 9.0's cu12 wheel reinstalled
        # over the cu13 9.24 one torch pins, a preloaded 9.28 shim it works through today taken away)
        refilled = _refilled(finding.fix)
        harmed = [(label, refused or then.why, today[label].why is None)
                  for label, then in after.items() if label in today and then.fare < today[label].fare
                  for refused in (_refuses(then, finding.fix),)
                  if os.path.normpath(then.site or "-") not in refilled or refused]
        unmasked = _unmasked(changes, environ, today)
        if not harmed and not unmasked:
            out.append(finding)
            continue
        said = "; ".join(f"{label} fail{'' if works else ' sooner than today'} ({why})" for label, why, works in harmed)
        said = "; ".join(filter(None, (said and f"the change would make the shell's {said}", unmasked)))
        out.append(_alone(finding, changes, run_in(environ, world), f"made for everyone, {said}"))
    return tuple(out)


def _of_no_folder(action: Action) -> bool:
    """Whether ``action`` takes away an LD_LIBRARY_PATH entry that names no folder: in a fix that only changes the
    environment (nothing it does makes the folder), it changes no program's loads."""
    return action.do is ActionKind.ENV_REMOVE_ENTRY and action.variable == _VARIABLE and _no_folder(action.entry)


def _no_folder(entry: str | None) -> bool:
    """Whether a search-path entry names no folder (an empty one is the current folder, which is one)."""
    return not os.path.isdir(entry or ".")


def _unmasked(changes: Sequence[Action], environ: Mapping[str, str], today: Mapping[str, Fared]) -> str | None:
    """Where ``changes`` take a preload away from everyone that answers, for a framework of the shell's Python, the
    name of a cuDNN file its start-up maps as well (`Fared.masked`): that file then answers it, a framework the
    model judges only once a wheel the fix puts back is there (fix differential 3-13081: a sitecustomize line maps
    cuDNN 9.0's graph, the preloaded 9.24 graph answers torch's shim today), in words; None where there is none."""
    taken = {os.path.basename(entry) for a in changes if _unpreloads(a)
             for entry in (preload_entries(environ) if a.do is ActionKind.ENV_UNSET else [a.entry or ""])}
    met = {(label, name, path, line) for label, now in today.items() for name, path, line in now.masked
           if name in taken}
    return "; ".join(f"the shell's {label} would get {path} (its start-up maps it: {line}) for {name}, which the "
                     f"preload answers for it today" for label, name, path, line in sorted(met)) or None


def _first_for_all(findings: tuple[Finding, ...], environ: Mapping[str, str], now: Context) -> tuple[Finding, ...]:
    """``findings`` with each fix that sets LD_LIBRARY_PATH so that a program asking for a shim by name would get a
    cuDNN that does not load whole (the JIT wheel's, which has no ops, cnn or adv; a partial copy) in place of what
    it gets today, made for the program alone. LD_LIBRARY_PATH comes before a program's own RUNPATH (a conda env's
    program linked with ``$ORIGIN/../lib``): what it gives by name, every such program gets too."""
    out = []
    for finding in findings:
        changes = [a for a in finding.fix.actions if a.do in _ENVIRONMENT]
        if not any(a.do is ActionKind.ENV_SET and a.variable == _VARIABLE for a in changes) or any(
                a.do is ActionKind.RUN for a in finding.fix.actions):
            out.append(finding)
            continue
        world = World(environ).after(*changes).environ
        why = _not_whole_by_name(world, now)
        out.append(_alone(finding, changes, run_in(environ, world), why) if why else finding)
    return tuple(out)


def _not_whole_by_name(world: Mapping[str, str], now: Context) -> str | None:
    """What a program asking for a shim by name gets in ``world`` that it does not get now and that does not load
    whole, in words; None when there is none."""
    after: Context | None = None
    for gen in GENERATIONS.values():
        today = linker.resolve(gen.shim.soname, None, now.linker).path
        after = after or context(world, executable=now.linker.executable, cache=now.cache, verify=now.verify)
        found = linker.resolve(gen.shim.soname, None, after.linker).path
        if found is None or found == today:
            continue
        install = judged_install_of(found, after, "as a program that asks for it by name")
        if install is not None and not whole(install):
            said = next((f.message for f in install.findings if f.severity is Severity.ERROR), "not whole")
            return (f"made for everyone, it would give programs that load {gen.shim.soname} by name (or through a "
                    f"RUNPATH of their own, which LD_LIBRARY_PATH precedes) {found}, which does not load whole for "
                    f"them: {said}")
    return None


def _alone(finding: Finding, changes: Iterable[Action], wrapper: Action, why: str) -> Finding:
    """``finding`` with its ``changes`` of the environment made for the program alone (``wrapper``: ``env VAR=...
    PROGRAM``), the change for everyone kept as the alternative, with ``why``."""
    changes = list(changes)
    kept = [a for a in finding.fix.actions if a not in changes]
    # an alternative is a way on its own (README "Fixes"): several changes that go together, or a change that needs
    # the fix's other steps too (a wheel put back), are said as one way, in words
    alone = changes if len(changes) == 1 and not kept else []
    together = "" if alone else f"; for every program instead: {' and '.join(map(str, changes))}" + (
        " (after the steps before it)" if kept else "")
    note = f"for this program only: {why}{together}" + (f"; {finding.fix.note}" if finding.fix.note else "")
    if any(a.do is ActionKind.RESTART for a in kept):  # a running program started again, with the wrapper's variables
        restarted = tuple(replace(a, argv=(*wrapper.argv, *a.argv)) if a.do is ActionKind.RESTART else a for a in kept)
        return replace(finding, fix=Fix(restarted, note, (*alone, *finding.fix.alternatives)))
    return replace(finding, fix=Fix((*kept, wrapper), note, (*alone, *finding.fix.alternatives)))


def run_in(environ: Mapping[str, str], world: Mapping[str, str]) -> Action:
    """The program run with the variables ``world`` changes, for it alone (``env``)."""
    names = sorted({*environ, *world})
    unset = [item for name in names if name in environ and name not in world for item in ("-u", name)]
    changed = [f"{name}={world[name]}" for name in names if name in world and world[name] != environ.get(name)]
    return run(["env", *unset, *changed])


def _removed(repair: Fix, environ: Mapping[str, str]) -> frozenset[str]:
    """The LD_LIBRARY_PATH entries of ``environ`` the fix's actions take away from everyone (`_dropped`)."""
    return frozenset(entry for a in repair.actions for entry in _dropped(a, environ))


def _dropped(action: Action, environ: Mapping[str, str]) -> frozenset[str]:
    """The LD_LIBRARY_PATH entries of ``environ`` that ``action`` takes away: the entry it removes, or those a
    setting of the variable leaves out (fix differential 3-7265: "export LD_LIBRARY_PATH=<./lib made absolute>"
    dropped the wheel's folder, where programs by name got their cuDNN)."""
    if action.variable != _VARIABLE:
        return frozenset()
    if action.do is ActionKind.ENV_REMOVE_ENTRY and action.entry is not None:
        return frozenset({action.entry})
    if action.do is ActionKind.ENV_SET and _VARIABLE in environ:
        kept = set((action.value or "").split(":"))
        return frozenset(entry for entry in environ[_VARIABLE].split(":") if entry not in kept)
    return frozenset()


def _serves_others(entries: frozenset[str], ctx: Context, without: Mapping[str, str], replaced: bool = False
                   ) -> str | None:
    """What a program asking for a shim by name gets through one of ``entries`` and would lose in ``without`` (the
    world the fix makes, with them all taken away): a cuDNN that loads whole there, and another file in that world;
    or any cuDNN there, and none in that world (a cuDNN the model doubts still beats none). ``replaced``: the
    entries are left out by a setting of the variable, which puts what it gives in their place: only none in that
    world is a loss. None when they lose nothing."""
    other: Context | None = None
    for gen in GENERATIONS.values():
        found = linker.resolve(gen.shim.soname, None, ctx.linker)
        if found.path is None or search_entry(found.path, found.rule, ctx.linker) not in entries:
            continue
        install = judged_install_of(found.path, ctx, "as a program that asks for it by name")
        if install is None:
            continue
        other = other or context(without, executable=ctx.linker.executable, cache=ctx.cache, verify=ctx.verify)
        instead = linker.resolve(gen.shim.soname, None, other.linker).path
        if instead == found.path:
            continue
        if replaced and (instead is not None or not whole(install)):
            continue  # the setting leaves them a cuDNN in its place, or what they get today does not load
        if not replaced and instead is not None and not whole(install):
            continue  # what they get there does not load: taking it away from them all is their fix too
        return (f"programs that load {gen.shim.soname} by name get cuDNN {install.release or gen.major} there; "
                f"without {'it' if len(entries) == 1 else 'them'} they would get {instead or 'none'}")
    # the shim they get lies elsewhere (a link of it on an earlier entry, whose $ORIGIN holds nothing else), but what
    # it loads beside it comes through the entries; or a preload (``LD_PRELOAD=libcudnn.so.9``) found it there by
    # name and answers them: without the entries, the shim that loads whole today would not, or another would answer
    if replaced:
        return None
    # and where what a preloaded shim loads beside it is mixed today and after (fix differential 3-14433: a 9.0
    # folder first on LD_LIBRARY_PATH kept a preloaded cu12 9.28 graph from the venv's cu13 engines, which loaded
    # once it was taken away), which is better the model cannot say: the entry stays for them, as a preload does
    return _loses_by_name(ctx, without, f"it, or what it loads beside it, comes through {', '.join(sorted(entries))}") \
        or _neither_whole(ctx, without, preloaded=True)


def _loses_by_name(ctx: Context, world: Mapping[str, str], how: str) -> str | None:
    """Whether a program asking for a shim by name would fare worse in ``world`` than in ``ctx`` (`_fares`): no cuDNN
    where it gets one today, one that no longer loads whole from its own folder, or the calls of cuDNN's catalog,
    made in order, failing sooner there than today (both judged short of a GPU, so that what no machine without one
    can do is the same on both sides); in words (``how``: what of today's the change takes), else None. Where a
    preload stops every program today, they have nothing to lose. Getting no cuDNN where one loads today is worse
    for a preload too: one that is the only cuDNN programs by name are given, and that the failing program's fix
    takes away, is taken away for that program alone (a program by name that works through it today would fail
    without it: the fix differential's 1-695)."""
    for name, found, today, instead, then in _by_name(ctx, world, lambda today: True):
        if then is not None and then.rank >= today.rank:
            continue
        worse = f"{instead}, {then.said}" if then is not None else \
            f"{instead}, which the model cannot judge" if instead else "none"
        return f"programs that load {name} by name get {found} ({how}); after it they would get {worse}"
    return None


def _neither_whole(ctx: Context, world: Mapping[str, str], preloaded: bool = False) -> str | None:
    """Whether a program asking for a shim by name gets a cuDNN that does not load whole from one folder today,
    through a preload, and another that does not either in ``world`` (every change of the environment a fix makes
    for everyone): which is better, the model cannot say for certain (a mixed set whose calls fail later, against a
    partial copy's one release from two folders: the fix differential's 7-41), and the preload is the user's own
    setting, so it is taken away for the failing program alone; in words, else None. Not where the preload stops
    every program today: the program's own wrapper (``env``) would not start either (seed 2's 2-220). ``preloaded``:
    only a shim that a preload maps answers them today."""
    mapped = {p.path for p in ctx.preloads if p.path}
    for name, found, today, instead, then in _by_name(ctx, world, lambda today: not today.whole):
        if preloaded and found not in mapped:
            continue
        if then is not None and not then.whole:
            return (f"programs that load {name} by name get {found} today, which does not load whole "
                    f"({today.broken}), and after it {instead}, which does not either ({then.broken}): which is "
                    f"better, the model cannot say")
    return None


def _by_name(ctx: Context, world: Mapping[str, str], wanted: Callable[[_Fare], bool]
             ) -> Iterator[tuple[str, str, _Fare, str | None, _Fare | None]]:
    """For each shim name a program asking by name gets a cuDNN through today, with a fare ``wanted`` takes: the
    name, the file, how it fares (`_fares`), and what it would get in ``world`` and how it would fare there (None:
    no cuDNN, or none the model can judge); ``world``'s context made once, on first need. None where a preload
    stops every program today: they have nothing to lose, and a wrapper of their own would not start either."""
    if any(p.stops_start for p in ctx.preloads):
        return
    other: Context | None = None
    for gen in GENERATIONS.values():
        found = linker.resolve(gen.shim.soname, None, ctx.linker).path
        today = _fares(judged_install_of(found, ctx, "as a program that asks for it by name"), ctx) if found else None
        if found is None or today is None or not wanted(today):
            continue
        other = other or context(world, executable=ctx.linker.executable, cache=ctx.cache, verify=ctx.verify)
        instead = linker.resolve(gen.shim.soname, None, other.linker).path
        then = _fares(judged_install_of(instead, other, "as a program that asks for it by name"), other) \
            if instead else None
        yield gen.shim.soname, found, today, instead, then


@dataclass(frozen=True)
class _Fare:
    """How a program asking for a shim by name fares with an install: whether it loads whole from its own folder
    (`installs.whole`: one release, nothing taken from elsewhere), then where the calls of cuDNN's catalog, made in
    order short of a GPU, first fail (past the last when none does). ``rank`` orders fares: a whole load beats one
    that is not, whatever its calls; among equals, the later first failure."""

    whole: bool
    failing: int
    function: str
    broken: str  # the first error that keeps it from loading whole ("" when whole)

    @property
    def rank(self) -> tuple[bool, int]:
        return (self.whole, self.failing)

    @property
    def said(self) -> str:
        if not self.whole:
            return f"which does not load whole: {self.broken}"
        return f"where {self.function} would fail" if self.function else "which loads whole"


def _fares(install: Judged | None, ctx: Context) -> _Fare | None:
    """How a program asking for the shim by name fares with ``install`` (`_Fare`); None for no install."""
    if install is None:
        return None
    calls = [e for e in predict_install(install, ctx, gpu=False).expectations if not e.call.needs_gpu]
    failing, function = next(((index, e.call.function) for index, e in enumerate(calls) if call_fails(e)),
                             (len(calls), ""))
    loads_whole = whole(install)
    broken = "" if loads_whole else next((f.message for f in install.findings if f.severity is Severity.ERROR),
                                         "parts of it come from elsewhere")
    return _Fare(loads_whole, failing, function, broken)


def _preloads_kept(findings: tuple[Finding, ...], environ: Mapping[str, str], now: Context) -> tuple[Finding, ...]:
    """``findings`` with each fix that takes an LD_PRELOAD entry (or LD_PRELOAD) away from everyone, where a program
    asking for a shim by name gets its cuDNN through it today (the preloaded shim answers the name, its folder
    completes it) and would fare worse without it (`_loses_by_name`), made for the program alone; not where the fix
    opens a folder they search or puts a wheel back into one (`_opens_for_them`)."""
    out = []
    for finding in findings:
        changes = [a for a in finding.fix.actions if _unpreloads(a)]
        if not changes or any(a.do is ActionKind.RUN for a in finding.fix.actions):
            out.append(finding)
            continue
        if _opens_for_them(finding.fix, now, environ):
            out.append(finding)
            continue
        world = World(environ).after(*changes).environ
        rest = [a for a in finding.fix.actions if a.do in _ENVIRONMENT and a not in changes]
        why = _loses_by_name(now, world, "the preloaded shim answers the name")
        if why is None and (why := _neither_whole(now, World(environ).after(*changes, *rest).environ)) is not None \
                and rest:
            # how programs by name would fare after the change, the model cannot say: none of it is made for them
            # (the fix differential's 3-9265: the preload kept, an LD_LIBRARY_PATH entry of another release taken
            # from everyone let a cu12 graph map the venv's cu13 engines, which that entry had kept out)
            changes, rest = [*changes, *rest], []
            world = World(environ).after(*changes).environ
        if why is None:
            out.append(finding)
            continue
        stops = _stops_start(World(environ).after(*rest).environ, now) if rest else None
        if stops is not None:  # what stays for everyone must not meet the preload kept for them: it goes with it
            changes, why = [*changes, *rest], f"{why}; and the preload kept, the rest of the change would stop " \
                f"every program's start: {stops}"
            world = World(environ).after(*changes).environ
        out.append(_alone(finding, changes, run_in(environ, world), f"made for everyone, {why}"))
    return tuple(out)


def _unpreloads(action: Action) -> bool:
    """Whether ``action`` takes an LD_PRELOAD entry, or the variable, away."""
    return action.do in (ActionKind.ENV_REMOVE_ENTRY, ActionKind.ENV_UNSET) and action.variable == "LD_PRELOAD"


def _opens_for_them(repair: Fix, now: Context, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``repair`` gives back what programs asking for a shim by name search on ``LD_LIBRARY_PATH``: opens
    (``chmod``) a file or folder on an entry, or a folder above one; or puts a cuDNN wheel back (``pip install``)
    into the site whose ``nvidia/cudnn/lib`` is an entry; where no entry before it holds a shim. What they get
    there after the fix, the model cannot see today (the folder is closed to this user, or empty: the wheel was
    uninstalled), so today's judgement of how
    they fare without the preload does not hold. What the fix gives back answers them after it, whole, and a
    preload kept for them would only be mixed with it (its sub-libraries come from LD_LIBRARY_PATH before its own
    RUNPATH): it goes for everyone, as an entry that nobody can map today does (`_inert`; the fix differential's
    1-3074, opened; 8-10, a cuDNN 12 wheel put back under a preloaded CUDA 13 shim)."""
    # the entries left after the fix's own changes (``environ``: today's variables): one it takes away answers no
    # one after it (the fix differential's 3-8971: a link's folder before the venv's, removed by the same fix)
    dropped = {os.path.normpath(e) for e in _removed(repair, environ)} if environ is not None else set()
    entries = [os.path.normpath(e) for e in now.linker.ld_library_path
               if os.path.isabs(e) and os.path.normpath(e) not in dropped]
    for action in repair.actions:
        # (what it opens answers them only where no entry before it holds a shim: the fix differential's 3-17083,
        # the venv's ops opened behind an app's partial copy of the shim first on the path)
        if action.do is ActionKind.CHMOD and action.path:
            opened = os.path.normpath(action.path)
            if any((opened == e or e.startswith(opened + os.sep) or opened.startswith(e + os.sep))
                   and not _answered_before(entries[:index], now) for index, e in enumerate(entries)):
                return True
        if os.path.normpath(action.target or "-") in _refilled(Fix((action,))) and any(
                _filled(e, action.requirements, os.path.normpath(action.target or ""))
                and not _answered_before(entries[:index], now) for index, e in enumerate(entries)):
            return True
    return False


def _answered_before(earlier: Sequence[str], now: Context) -> bool:
    """Whether one of the ``earlier`` LD_LIBRARY_PATH entries holds a cuDNN shim: a program asking by name gets
    that one, whatever a fix puts back into an entry after them (the fix differential's 3-7948: a partial copy in an
    app's lib/ first, the venv's folder refilled after it; the preload taken away for everyone, the app by soname
    met the copy)."""
    names = [gen.shim.soname for gen in GENERATIONS.values()]
    return any(os.path.lexists(path) and not now.linker.is_gone(path)
               for entry in earlier for path in (os.path.join(entry, name) for name in names))


def _refilled(repair: Fix) -> frozenset[str]:
    """The site-packages folders ``repair`` puts a cuDNN wheel back into (``pip install nvidia-cudnn-...``)."""
    return frozenset(os.path.normpath(a.target) for a in repair.actions if a.do is ActionKind.PIP_INSTALL
                     and a.target and any(r.startswith("nvidia-cudnn") for r in a.requirements))


def _refuses(fared: Fared, repair: Fix) -> str | None:
    """What a framework (``fared``) would refuse of a cuDNN wheel ``repair`` puts back into its site, an exact release
    (``nvidia-cudnn-cu12==9.0.0.312``): one of another major or older than the release it was built with (its version
    check: a newer minor passes, whatever its pin says); where that release is unknown, one its pins exclude; in
    words. None where it takes each, or the release is not exact (the model cannot tell)."""
    site = os.path.normpath(fared.site or "-")
    for action in repair.actions:
        if action.do is not ActionKind.PIP_INSTALL or not action.target or os.path.normpath(action.target) != site:
            continue
        for requirement in action.requirements:
            name, _, version = requirement.partition("==")
            if not name.startswith("nvidia-cudnn") or "-jit" in name or not version:
                continue
            try:
                release = parse_release(".".join(version.split(".")[:3]))
            except ValueError:
                continue
            built = fared.build
            if built is not None and (release.major != built.major or release.minor < built.minor):
                return (f"it would get the {requirement} the fix installs, and it was built with cuDNN {built}: its "
                        "version check refuses it")
            excluded = next((pin for pin in fared.pins if not pin.allows(release)), None) if built is None else None
            if excluded is not None:
                return f"it would get the {requirement} the fix installs, which its pin {excluded.requirement} excludes"
    return None


def _filled(entry: str, requirements: Iterable[str], site: str) -> bool:
    """Whether installing ``requirements`` into ``site`` writes cuDNN's libraries into the folder ``entry`` (the
    cuDNN wheels': ``SITE/nvidia/cudnn/lib``; the JIT wheel's: ``cudnn_jit``)."""
    owner = os.path.basename(os.path.dirname(entry))
    written = {"cudnn_jit" if "-jit" in r else "cudnn" for r in requirements if r.startswith("nvidia-cudnn")}
    found = wheel_site(entry)
    return owner in written and found is not None and os.path.normpath(found) == site


def _stops_start(world: Mapping[str, str], now: Context) -> str | None:
    """What ld.so prints when every program started in ``world`` stops before its own code (a library a preload
    NEEDs that cannot be loaded there, or lacks a symbol it binds: `process.Preload.stops_start`), where none stops
    today; None otherwise."""
    if any(p.stops_start for p in now.preloads):
        return None
    after = context(world, executable=now.linker.executable, cache=now.cache, verify=now.verify)
    return next((p.printed for p in after.preloads if p.stops_start), None)


def _for_the_program(finding: Finding, environ: Mapping[str, str], gone: frozenset[str], why: str) -> Finding:
    """``finding`` with the removals of ``gone`` made for the program alone; its other changes of the environment
    (the removals of inert entries, `_inert`; a variable set) stay for everyone, and the program is run with the
    difference between the world they make and the one the whole fix makes: its wrapper starts from what the
    steps before it changed, never from today's environment (seed 3's 3-19: a wrapper written from today's value
    brought back, for the program, a link the step before it had taken away)."""
    removed = [a for a in finding.fix.actions if _dropped(a, environ) & gone]
    changes = [a for a in finding.fix.actions if a.do in _ENVIRONMENT]
    before = World(environ).after(*(a for a in changes if a not in removed)).environ
    return _alone(finding, removed, run_in(before, World(environ).after(*changes).environ), why)


def run_without(entries: Iterable[str], gone: Iterable[str | None]) -> Action:
    """The program run with LD_LIBRARY_PATH's ``entries`` less ``gone``, for it alone (``env``)."""
    left_out = set(gone)
    written = list(entries)
    rest = [text for text in written if text not in left_out]
    return run_in({_VARIABLE: ":".join(written)}, {_VARIABLE: ":".join(rest)} if rest else {})
