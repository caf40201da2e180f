"""What a cuDNN wheel a fix installs will meet when the program loads it, said with the install.

A fix that puts a cuDNN 9 wheel back (``pip install --force-reinstall`` of a damaged or uninstalled one) is judged
by the model only as far as its files go: they are not there yet. Its graph library opens the engine and heuristic
libraries by name, searching with its DT_RUNPATH ``$ORIGIN`` (every cuDNN 9 wheel's, cudnn-facts §1), which glibc
reads after ``LD_LIBRARY_PATH``; its shim opens graph, ops, cnn and adv by name with ``$ORIGIN`` as DT_RPATH in the
releases seen from 9.24 on (read before ``LD_LIBRARY_PATH``) but as DT_RUNPATH in 9.0 (read after it): the shim of a
release that is not on disk yet is taken as the weaker of the two. And whatever ``LD_PRELOAD`` maps is in the process
before the wheel's shim. So an ``LD_LIBRARY_PATH`` entry that answers those names, or an ``LD_PRELOAD`` entry of a
cuDNN library outside the wheel's folder, puts a second folder's cuDNN beside the reinstalled one: the model resolves
the names from the wheel's folder as its shim and graph there will, and the entries that would answer go with the
install, in the same fix (`scoped` then says an entry others need for this program alone).

Three more things the wheel meets go with it: a line of the interpreter's start-up (a ``.pth`` import line,
``sitecustomize``) that maps a cuDNN 9 library of another folder, which answers the name first as an
``LD_PRELOAD`` entry would; names in the wheel's folder that its shim or graph tries before their own files and that
no distribution ships (a link by hand ``X.so.9.28.0``: pip rewrites only what RECORD lists); and an
``LD_LIBRARY_PATH`` entry holding a link to the wheel's shim in a folder without its sub-libraries, which would give
programs asking by name that shim with another folder's sub-libraries once the wheel is back (its ``$ORIGIN`` is
the link's folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace

from cudnnload.codes import ActionKind
from cudnnload.diagnose.remedy import World, one_set_per_target
from cudnnload.judge.fixes import DEPENDENCY_OPTIONS, WHEEL_LIB, undo, unlisted_ahead
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import GENERATIONS, classify, distribution_cuda
from cudnnload.resolve.consumers import installed_names
from cudnnload.resolve.discovery import Context, context, search_entry
from cudnnload.resolve.process import preload_entries
from cudnnload.resolve.sources import cudnn_distributions
from cudnnload.verdicts import Action, Finding, pip_install, remove_entry


def ahead(findings: Iterable[Finding], environ: Mapping[str, str], ctx: Context | None = None) -> tuple[Finding, ...]:
    """``findings`` with each fix that installs a cuDNN 9 wheel into a named site also taking away the entries
    that would put another folder's cuDNN beside it (the module docstring), in the environment the fix's own
    changes of it leave."""
    added: dict[tuple[Action, ...], tuple[Action, ...]] = {}  # per fix: findings often share one reinstall
    out = []
    for finding in findings:
        actions = finding.fix.actions
        if any(_installs_cudnn9(a) for a in actions):
            if actions not in added:
                added[actions] = _added(actions, environ, ctx)
            finding = _with(finding, added[actions])
        out.append(finding)
    return tuple(one_set_per_target(out))


def _installs_cudnn9(action: Action) -> bool:
    return action.do is ActionKind.PIP_INSTALL and action.target is not None and any(
        r.startswith(("nvidia-cudnn-cu12", "nvidia-cudnn-cu13")) for r in action.requirements)


def _met(folder: str, ctx: Context) -> tuple[Action, ...]:
    """The removals of the entries that would answer the shim or graph in ``folder`` before its own folder, or put a
    cuDNN library of another folder in the process first."""
    gen = GENERATIONS[9]
    openers = {opener: linker.Requester(os.path.join(folder, gen.library(opener).soname), runpath=("$ORIGIN",))
               for opener in ("shim", "graph")}
    removals: dict[tuple[str, str], Action] = {}
    for lib in gen.libraries:
        if lib.opened_by not in openers:
            continue
        found = linker.resolve(lib.soname, linker.Chain((openers[lib.opened_by],)), ctx.linker)
        entry = search_entry(found.path, found.rule, ctx.linker) if found.path else None
        if entry is not None and os.path.realpath(os.path.dirname(found.path or "")) != os.path.realpath(folder):
            removals[("LD_LIBRARY_PATH", entry)] = remove_entry("LD_LIBRARY_PATH", entry)
    for entry in preload_entries(ctx.environ):
        if classify(os.path.basename(entry)) is not None and os.path.realpath(os.path.dirname(entry)) != \
                os.path.realpath(folder):
            removals[("LD_PRELOAD", entry)] = remove_entry("LD_PRELOAD", entry)
    link = _link_first(folder, ctx)
    if link is not None:
        removals[("LD_LIBRARY_PATH", link)] = remove_entry("LD_LIBRARY_PATH", link)
    return tuple(removals.values())


def _link_first(folder: str, ctx: Context) -> str | None:
    """The ``LD_LIBRARY_PATH`` entry whose link to the shim in ``folder`` answers a program that asks for the shim
    by name, where that shim would take a sub-library from elsewhere: its ``$ORIGIN`` is the link's folder (glibc's
    ``l_name`` as opened), and once the wheel is back (a folder this user cannot reach today opened by the fix, or
    rewritten by pip) the link leads to it. None when an earlier entry answers, or the link's folder completes it."""
    gen = GENERATIONS[9]
    real_folder = os.path.realpath(folder)
    for entry in ctx.linker.ld_library_path:
        name = os.path.join(entry or ".", gen.library("shim").soname)
        if not os.path.islink(name):
            if os.access(name, os.R_OK):
                return None  # an earlier entry's own shim answers the name
            continue
        if os.path.dirname(os.path.realpath(name)) != real_folder or os.path.realpath(entry or ".") == real_folder:
            continue
        opener = linker.Requester(name, runpath=("$ORIGIN",))
        for lib in gen.libraries:
            if lib.opened_by != "shim" or not lib.required:
                continue
            found = linker.resolve(lib.soname, linker.Chain((opener,)), ctx.linker)
            if found.path is None or os.path.dirname(os.path.realpath(found.path)) != real_folder:
                return entry
        return None
    return None


def _added(actions: tuple[Action, ...], environ: Mapping[str, str], ctx: Context | None) -> tuple[Action, ...]:
    """What ``actions`` need beside the cuDNN 9 wheels they install: the requirements a ``--no-deps`` reinstall
    leaves missing, and the removals of the entries that would put another folder's cuDNN beside them, in the
    environment they leave."""
    env = World(environ).after(*actions).environ  # the variables as the fix itself leaves them
    folders = [os.path.join(action.target, WHEEL_LIB) for action in actions
               if _installs_cudnn9(action) and action.target]
    wanted = [each for action in actions if _installs_cudnn9(action) for each in _requirements_left_out(action)]
    wanted += _started_before(folders, ctx)
    wanted += [each for action in actions if _installs_cudnn9(action) and action.target
               for each in _versioned_strays(action.target)]
    # each entry taken away reveals the next one that answers (a conda env's folder, then another build's after
    # it): judged again without those, until none answers from another folder
    for _ in range(len(environ.get("LD_LIBRARY_PATH", "").split(":")) + len(preload_entries(environ)) + 1):
        then = context(env, cache=ctx.cache if ctx is not None else None)
        more = [each for folder in folders for each in _met(folder, then) if each not in wanted]
        if not more:
            break
        wanted += more
        env = World(env).after(*more).environ
    return tuple(dict.fromkeys(each for each in wanted if each not in actions))


def _versioned_strays(site: str) -> tuple[Action, ...]:
    """The names in the wheel's folder that a cuDNN 9 shim or graph tries before its own files that no
    distribution of the site ships (`fixes.unlisted_ahead`, of any release: the wheel put back may be another):
    they go, with the install."""
    folder = os.path.join(site, WHEEL_LIB)
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    return unlisted_ahead(folder, sorted(names), (path for dist in cudnn_distributions((site,)) for path in dist.files))


def _started_before(folders: list[str], ctx: Context | None) -> list[Action]:
    """The start-up code that maps a cuDNN 9 library of another folder before the program runs (a ``.pth`` import
    line, ``sitecustomize``: `Preload.cause`): the name it answers to is taken before the wheel's shim asks for
    it, so it goes with the install (`fixes.undo`: the line taken out, or said in words)."""
    out: list[Action] = []
    for preload in ctx.preloads if ctx is not None else ():
        lib = classify(os.path.basename(preload.path)) if preload.path and preload.cause is not None else None
        if lib is None or lib.major != 9 or preload.path is None:
            continue
        if all(os.path.realpath(os.path.dirname(preload.path)) != os.path.realpath(folder) for folder in folders) \
                and (gone := undo(preload)) is not None and gone not in out:
            out.append(gone)
    return out


def _requirements_left_out(action: Action) -> tuple[Action, ...]:
    """A reinstall with ``--no-deps`` puts the wheel back but not what it requires (nvidia-cublas for its engines):
    the requirements its installed metadata names that its site lacks, installed there by the same interpreter, as
    a CUDA library is (`fixes.DEPENDENCY_OPTIONS`: pip finding one elsewhere on ``sys.path``, a ``PYTHONPATH``
    folder, would say "already satisfied" and put nothing there), and of the wheel's CUDA major where the name does
    not say it (CUDA 13's ``nvidia-cublas``, unpinned in its metadata). Nothing when the wheel's metadata is gone
    too (pip, without ``--no-deps``, would bring them)."""
    if "--no-deps" not in action.options or action.target is None:
        return ()
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = {canonicalize_name(Requirement(r).name) for r in action.requirements}
    present = installed_names([action.target])
    missing: list[str] = []
    for dist in cudnn_distributions((action.target,)):
        if canonicalize_name(dist.name) not in wanted:
            continue
        for text in dist.requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if (requirement.marker is None or requirement.marker.evaluate({"extra": ""})) and \
                    canonicalize_name(requirement.name) not in present | wanted:
                missing.append(_of_cuda(str(requirement).split(";")[0].strip(), dist.name))
    if not missing:
        return ()
    if "--upgrade" in action.options:  # pip --target replacing the nvidia folder whole (`fixes.pip_into`): again,
        return (replace(action, requirements=(*action.requirements, *dict.fromkeys(missing))),)  # with them in it
    return (pip_install(list(dict.fromkeys(missing)), options=DEPENDENCY_OPTIONS, target=action.target,
                        python=action.python),)


def _of_cuda(requirement: str, distribution: str) -> str:
    """``requirement`` bounded to the CUDA major of the cuDNN ``distribution`` (``nvidia-cudnn-cu13``) where it has
    no version and its name no ``-cuNN`` of its own: ``nvidia-cublas`` -> ``nvidia-cublas>=13,<14``."""
    cuda = distribution_cuda(distribution)
    if cuda is None or any(sign in requirement for sign in "<>=~!") or distribution_cuda(requirement) is not None:
        return requirement
    return f"{requirement}>={cuda},<{cuda + 1}"


def _with(finding: Finding, added: tuple[Action, ...]) -> Finding:
    """``finding`` with ``added`` after its actions, but before a restart among them: a running program is started
    again once its environment and its files are as the fix leaves them."""
    if not added:
        return finding
    actions = finding.fix.actions
    at = next((i for i, a in enumerate(actions) if a.do is ActionKind.RESTART), len(actions))
    return replace(finding, fix=replace(finding.fix, actions=(*actions[:at], *added, *actions[at:])))
