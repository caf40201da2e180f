"""Every cuDNN on the machine, judged: `find` and `inspect` gather resolve's facts (`discovery.gather`)
and pass each install through `installs.judge_install`; the findings that belong to no install (a given
path that is no cuDNN, files of no known generation, two distributions claiming one file, the process's
own search path) are made here. The only module of the judge that calls the stage before it: the
judging itself stays in the pure functions it calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.fixes import reinstall
from cudnnload.judge.installs import judge_install
from cudnnload.judge.judged import JudgedInventory
from cudnnload.judge.policy import search_path_findings
from cudnnload.resolve.access import Access
from cudnnload.resolve.discovery import Context, Inventory
from cudnnload.resolve.sources import Distribution
from cudnnload.verdicts import Finding, Subject, fix, manual, pip_uninstall


def judge_inventory(facts: Inventory, ctx: Context, python: str | None, access: Access) -> JudgedInventory:
    installs = tuple(judge_install(install, ctx, access, python) for install in facts.installs)
    findings: list[Finding] = [Finding(given.code, given.reason, Subject(SubjectKind.TARGET, given.path),
                                       fix(manual("give a cuDNN library or the folder that holds one")))
                               for given in facts.given]
    findings += [Finding(Code.UNKNOWN_LIBRARY, "a libcudnn file of no known cuDNN generation (7, 8, 9)",
                         Subject(SubjectKind.FILE, path)) for path in facts.unknown]
    findings += _record_conflicts(facts.distributions, python, {i.distribution for i in installs if i.distribution})
    findings += search_path_findings(ctx.linker, access=access)
    return JudgedInventory.of(facts, installs, tuple(findings))


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
                          reinstall(keep.name, keep.version, keep.site, keep.pip_env, python, keep.along),
                          note="keep one cuDNN distribution per environment: the one your framework pins"))
