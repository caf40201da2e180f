"""Every cuDNN on the machine, judged: `find` and `inspect` gather resolve's facts (`discovery.gather`)
and pass each install through `installs.judge_install`; the findings that belong to no install (a given
path that is no cuDNN, files of no known generation, two distributions claiming one file, the process's
own search path) are made here. The only module of the judge that calls the stage before it: the
judging itself stays in the pure functions it calls.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import replace

from cudnnload.codes import Code, SubjectKind
from cudnnload.errors import UsageError
from cudnnload.judge.fixes import reinstall
from cudnnload.judge.installs import judge_install
from cudnnload.judge.policy import search_path_findings
from cudnnload.resolve.access import Access
from cudnnload.resolve.discovery import Context, Install, Inventory, context, gather, install_of
from cudnnload.resolve.sources import Distribution
from cudnnload.verdicts import Finding, Subject, fix, manual, pip_uninstall


def find(paths: Sequence[str] = (), *, environ: Mapping[str, str] | None = None,
         site_paths: Sequence[str] | None = None, system: bool | None = None, use_cache: bool = True,
         ctx: Context | None = None, python: str | None = None, verify: bool = False) -> Inventory:
    """Every cuDNN install on the machine (or only under ``paths`` when given), with verdicts.

    ``system`` (default: True unless ``paths`` are given) adds the ld.so cache, the default linker folders
    and /usr/local/cuda*; ``site_paths`` (default ``sys.path``) is where pip distributions are looked for;
    ``ctx`` (default: this Python in ``environ``) is the process the loads are judged for; ``python`` the
    interpreter whose environment it is (pip fixes name it); ``verify``: check each RECORD-listed file's
    sha256 too. A given file stands for the install it belongs to. Nothing is loaded."""
    ctx = ctx or context(environ, use_cache=use_cache, verify=verify)
    facts = gather(paths, ctx=ctx, site_paths=site_paths, system=system)
    judged = judge_inventory(facts, ctx, python or sys.executable)
    ctx.cache.save()  # what judging read (the symbols two files of a load share), for the next process
    return judged


def inspect(paths: Sequence[str], *, environ: Mapping[str, str] | None = None, use_cache: bool = True,
            verify: bool = False) -> Inventory:
    """Inventory and verdicts for the given files and folders only."""
    if not paths:
        raise UsageError("inspect() needs at least one file or folder")
    return find(paths, environ=environ, system=False, use_cache=use_cache, verify=verify)


def judge_inventory(facts: Inventory, ctx: Context, python: str | None, access: Access | None = None) -> Inventory:
    access = access or Access()
    installs = tuple(judge_install(install, ctx, access, python) for install in facts.installs)
    findings: list[Finding] = [Finding(given.code, given.reason, Subject(SubjectKind.TARGET, given.path),
                                       fix(manual("give a cuDNN library or the folder that holds one")))
                               for given in facts.given]
    findings += [Finding(Code.UNKNOWN_LIBRARY, "a libcudnn file of no known cuDNN generation (7, 8, 9)",
                         Subject(SubjectKind.FILE, path)) for path in facts.unknown]
    findings += _record_conflicts(facts.distributions, python, {i.distribution for i in installs if i.distribution})
    findings += search_path_findings(ctx.linker, access=access)
    return replace(facts, installs=installs, findings=tuple(findings))


def judged_install_of(path: str, ctx: Context, found_via: str, dists: Sequence[Distribution] = (),
                      python: str | None = None, access: Access | None = None) -> Install | None:
    """`discovery.install_of`, judged."""
    install = install_of(path, ctx, found_via, dists)
    return None if install is None else judge_install(install, ctx, access or Access(), python)


def _record_conflicts(dists: Iterable[Distribution], python: str | None, on_disk: Set[str]) -> Iterable[Finding]:
    """Files two distributions claim (cu12 and cu13 in one environment both install nvidia/cudnn/lib): the one
    installed last overwrote the other's. The fix keeps that one (``on_disk``: the distributions whose files an
    install's folder holds, "name version"), else the newest, and puts its files back whole."""
    import os

    owners: dict[str, list[Distribution]] = {}
    for dist in dists:
        for path in dist.files:
            owners.setdefault(os.path.normpath(path), []).append(dist)
    said: set[tuple[str, ...]] = set()
    for path, claim in sorted(owners.items()):
        if len(claim) < 2:
            continue
        names = tuple(sorted(f"{d.name} {d.version}" for d in claim))
        if names in said:
            continue  # one finding for the pair, on its first file
        said.add(names)
        keep = max(claim, key=lambda d: (f"{d.name} {d.version}" in on_disk, d.version, d.name))
        # uninstalling after the reinstall would delete the shared files again: the other one goes first
        yield Finding(Code.RECORD_CONFLICT, f"claimed by {' and '.join(names)}: one overwrote the other's files (this "
                      f"and the others they share)", Subject(SubjectKind.DISTRIBUTION, path, name=" and ".join(names)),
                      fix(pip_uninstall([d.name for d in claim if d is not keep], target=keep.site,
                                        python=keep.pip_env[0] or python),
                          reinstall(keep.name, keep.version, keep.site, keep.pip_env, python),
                          note="keep one cuDNN distribution per environment: the one your framework pins"))
