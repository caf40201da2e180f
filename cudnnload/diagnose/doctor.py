"""``cudnnload doctor [TARGET]``: every check, one short report, a fix for each problem; and ``diff`` of two reports.

Thin: it reads the target (`targets`: this environment, a cuDNN library, a folder, a program or
shared object, a soname, another Python), runs the stages on the install that target would load
(discovery's plan and predicted consequences, the child probe doing what an application does,
the driver, the consumers) and arranges what they return. Nothing here decides a verdict that a
stage could decide; where the probe's run and the prediction disagree, that is a finding.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from cudnnload import __version__
from cudnnload.codes import ActionKind, Code, Effect, SubjectKind
from cudnnload.diagnose.finishing import finished
from cudnnload.diagnose.remedy import Judge, World, plan
from cudnnload.diagnose.scoped import Fared
from cudnnload.diagnose.targets import Resolved, Target, resolve_target
from cudnnload.diagnose.which import not_found_fix, which
from cudnnload.errors import UsageError
from cudnnload.judge.consequences import disagreements
from cudnnload.judge.fixes import cudnn_install
from cudnnload.judge.frameworks import links_gone as links_gone_finding
from cudnnload.judge.installs import aborts_without_driver, predict_install
from cudnnload.judge.installs import whole as whole_install
from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.judge.preload import preload_findings
from cudnnload.judge.routes import Served, Use, scope, serve
from cudnnload.judge.which import Which
from cudnnload.loading.probe import ProbeResult, probe
from cudnnload.resolve.catalog import decode_version, generation
from cudnnload.resolve.consumers import CpuBuild, cpu_builds, links_gone
from cudnnload.resolve.discovery import Context
from cudnnload.resolve.process import Preload, preload_entries
from cudnnload.verdicts import ERROR, INFO, WARNING, Finding, Subject, fix, manual, pip_install, pip_uninstall, unique

# Variables that change what loads or how cuDNN behaves; a report records them for `diff`.
RELEVANT_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDNN_PATH", "CUDNN_HOME", "CUDA_HOME", "CUDA_PATH",
                      "CONDA_PREFIX", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING", "CUDNN_LOGLEVEL_DBG",
                      "CUDNN_LOGDEST_DBG", "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK")


@dataclass(frozen=True)
class Check:
    name: str  # "installs", "coherent", "probe", "driver", "handle", "consumers"
    status: str  # "ok", "warn", "fail", "info" or "skip"
    summary: str


@dataclass(frozen=True)
class Report:
    cudnnload: str
    python: str
    machine: str
    environment: tuple[tuple[str, str], ...]
    target: Target
    chosen: str | None  # folder of the install the target would load
    release: str | None
    distribution: str | None
    inventory: JudgedInventory
    which: Which | None  # for this environment (no target): each name as this Python resolves it
    probe: ProbeResult | None  # the shim loaded in a child as an application loads it, and its calls
    gpu: Any  # gpu.GpuFacts
    consumers: tuple[Any, ...]  # consumers.Consumer
    checks: tuple[Check, ...]
    findings: tuple[Finding, ...]  # every finding, errors first, each once
    host: str = ""  # the machine's host name (`cudnnload fleet` names nodes by it)
    frameworks: tuple[Use, ...] = ()  # the cuDNN each framework present gets from its own loader

    @property
    def healthy(self) -> bool:
        return not any(f.severity is ERROR for f in self.findings)


def doctor(environ: Mapping[str, str] | None = None, *, target: str | None = None, python: str | None = None,
           site_paths: list[str] | None = None, timeout: float = 60.0, verify: bool = False,
           started: Callable[[], Any] | None = None) -> Report:
    """Run every check on ``target`` (default: this Python's environment) in ``environ``. UsageError
    (naming the target and the reason) when the target cannot be read as one. ``verify``: check the sha256 of
    each file a pip distribution's RECORD lists, not only its size."""
    env = dict(os.environ if environ is None else environ)
    # --timeout bounds every child, the observed start-up of --python too (its own limit: 20 s)
    resolved = resolve_target(target, python=python, environ=env, site_paths=site_paths, verify=verify,
                              observed=started, startup_timeout=min(timeout, 20.0), asked=True)
    return diagnose(resolved, env, site_paths=site_paths, timeout=timeout, asked=(target, python, verify))


def _preloads_as_resolved(env: Mapping[str, str], ctx: Context) -> Mapping[str, str]:
    """``env`` for the probe's child, with each LD_PRELOAD entry of a bare name replaced by the file the target's
    process maps for it: ld.so looks such an entry up with the program's own RPATH and RUNPATH first, which the
    child lacks (the fix differential's 3-17029: ``LD_PRELOAD=libcudnn_graph.so.9`` is a conda program's own 9.0
    graph through its ``$ORIGIN/../lib``, in the child the venv's 9.24 one on LD_LIBRARY_PATH, which died mixing
    it with the 9.0 shim; the program works)."""
    entries = preload_entries(env)
    found = {p.entry: p.path for p in ctx.preloads
             if p.source == "LD_PRELOAD" and p.entry is not None and p.name == p.entry and p.path}
    if not any("/" not in e and e in found for e in entries):
        return env
    return {**env, "LD_PRELOAD": " ".join(found.get(e, e) if "/" not in e else e for e in entries)}


def diagnose(resolved: Resolved, env: Mapping[str, str], *, site_paths: list[str] | None = None,
             timeout: float = 60.0, gpu: Any = None,
             asked: tuple[str | None, str | None, bool] | None = None) -> Report:
    """Every check on a target already read. ``gpu`` (`hardware.GpuFacts`): the driver the target will have, given
    instead of asked; then nothing is run at all (no probe, no child reading a framework's build): a target judged
    without running it (`doctor --root`). ``asked``: the target, ``--python`` and ``--verify`` it was read from, for
    the repair's judgement in a world its actions changed (`judge_again`); None: no such repair is planned."""
    from cudnnload.judge.gpu import driver_findings, gpu_findings, presence_findings
    from cudnnload.loading.gpu import gpu_facts

    running = gpu is None
    # An LD_PRELOAD entry that stops every program at start stops every child too: what a framework was built
    # with is read without it (it is the framework's own fact), and the probe is not tried (certain).
    stops = preload_findings(resolved.ctx.preloads)
    bare = {k: v for k, v in env.items() if k != "LD_PRELOAD"} if stops else env
    # The child processes overlap the rest: reading a framework's build version imports it (torch: ~2 s, until
    # remembered), the probe loads cuDNN and makes a context; the driver's facts are read meanwhile.
    pool = ThreadPoolExecutor(max_workers=2)
    pending = pool.submit(_consumers_of, resolved, bare, timeout, running)
    install, inventory = resolved.install, resolved.inventory
    shim = install.file("shim") if install is not None else None
    # a load the prediction says hangs (a FIFO on the search path) is not tried: the child would wait for
    # the whole timeout, and the prediction is certain (glibc's open() of a FIFO blocks)
    without_gpu = _expected(install, resolved, False) if install is not None else ()
    hangs = next((e for e in without_gpu if e.outcome == Effect.HANG), None)
    # a file someone else can change is never run (`judge.policy.untrusted_findings`): judged from its bytes alone
    planted = next((f for f in (*resolved.findings, *(install.findings if install else ()))
                    if f.code is Code.UNTRUSTED_LIBRARY), None)
    # the answer of an earlier run is given again while every file it mapped, the host, its boot and the environment
    # are as they were; --verify runs it again whatever is remembered
    memo = None if resolved.ctx.verify else resolved.ctx.cache
    probing = pool.submit(probe, [("shim", shim.path)], install.major, app=True,
                          environ=_preloads_as_resolved(env, resolved.ctx), timeout=timeout, memo=memo) \
        if install is not None and shim is not None and hangs is None and not stops and planted is None and running \
        else None
    resolved_which = which(site_paths=site_paths, ctx=resolved.ctx, python=resolved.target.python or sys.executable) \
        if resolved.target.kind == "environment" else None
    checks: list[Check] = [_installs_check(resolved)]
    # every install's problems: a framework may load any of them by path, whichever load() prefers
    findings: list[Finding] = list(stops) + list(inventory.findings) + list(resolved.findings)
    findings += list(resolved_which.findings) if resolved_which else []
    findings += [f for i in inventory.installs for f in i.findings]
    result: ProbeResult | None = None
    facts = gpu_facts(env) if running else gpu
    if install is not None:
        checks.append(_coherence_check(install))
        if hangs is not None:
            checks.append(Check("probe", "fail", f"not run: as predicted, {hangs.call.function} hangs "
                                f"({hangs.message})"))
        elif stops:
            checks.append(Check("probe", "fail", f"not run: no program starts with LD_PRELOAD as it is "
                                f"({stops[0].message})"))
        elif planted is not None:
            checks.append(Check("probe", "fail", f"not run: it would map {planted.subject.path}, which someone other "
                                "than root and you can change (judged from its bytes alone)"))
        elif not running:
            checks.append(Check("probe", "skip", "not run: judged without running anything (the findings are the "
                                "prediction's)"))
        if probing is not None:
            result = probing.result()
            expected = _expected(install, resolved, True) if facts.devices else without_gpu
            checks.append(_probe_check(result, install, expected))
            findings += _probe_findings(result, install, expected, facts.address_limit if facts.devices else None)
    release = install.release if install else None
    if release is None and result is not None and result.release is not None:
        release = result.release  # cuDNN 7 and 8 without a version constant or a full file name
    cudart = result.step("cudnnGetCudartVersion") if result else None
    max_sm = result.step("cudnnGetMaxDeviceVersion") if result else None
    checked = [s for s in result.steps if s.name.endswith("VersionCheck") or s.name == "cudnnGetVersion"] \
        if result else []
    passed = bool(result and result.completed and checked and all(s.ok and s.exported for s in checked))
    if running:
        gpu = gpu_findings(facts, release=release, cudart_version=cudart.value if cudart else None,
                           max_device_version=max_sm.value if max_sm else None,
                           gpu_code={c.library or "": c.elf.gpu_code for c in install.files if c.elf} if install
                           else {}, version_checks_passed=passed, python=resolved.target.python,
                           spans={c.path: c.elf.address_span for c in install.files if c.elf} if install else None)
    else:  # a driver named, not asked: its CUDA against the one read from cuDNN's graph; no device to judge
        read = next((c.elf.cudart_version for c in install.files if c.elf and c.elf.cudart_version), None) \
            if install else None
        gpu = (driver_findings(facts, read, release=release, python=resolved.target.python) if read else ()) \
            if facts.driver_found else presence_findings(facts, release=release, python=resolved.target.python)
    if any(f.code is Code.NO_DRIVER for f in gpu):  # said once, by the driver check
        gpu = tuple(_with_driver_consequences(f, findings) for f in gpu)
        findings = [f for f in findings if f.code is not Code.NO_DRIVER]
    findings += gpu
    checks.append(_driver_check(facts, gpu))
    checks.append(_handle_check(result, facts))
    consumers, consumer_summary = pending.result()
    pool.shutdown()
    # a Python environment's own folders: what its frameworks were built as, and how its distributions stand
    # (None: sys.path, this Python's own)
    environment = resolved.target.kind in ("environment", "python")
    sites = list(resolved.target.site_paths) if resolved.target.site_paths is not None else site_paths
    builds = cpu_builds(sites) if environment else ()
    findings += [_cpu_only(build, install, resolved.target.python) for build in builds]
    # distributions whose files are links into a cache that is gone: nothing else about them can be judged until
    # they are installed again, which comes first and alone (no repair is planned on files that are not there)
    gone_installs = links_gone(sites) if environment else ()
    gone = [links_gone_finding(each, resolved.target.python) for each in gone_installs]
    # a cuDNN wheel among them is installed, not missing: installing one would change nothing
    cudnn_gone = any(name.startswith("nvidia-cudnn") for each in gone_installs for name, _ in each.distributions)
    # a CUDA build whose files a build without CUDA wrote over (onnxruntime over onnxruntime-gpu) loads no cuDNN
    over = {(b.site, b.over_distribution) for b in builds if b.over}
    consumers = tuple(c for c in consumers if (c.site, c.distribution) not in over)
    if install is None and builds and not consumers:  # frameworks without CUDA only: nothing here wants a cuDNN
        findings = [f for f in findings if f.code not in (Code.NO_CUDNN, Code.NOT_FOUND)]
        checks[0] = Check("installs", "info", f"no cuDNN, and nothing here needs one: {builds[0].label} is a "
                          f"{builds[0].platform} build")
    elif install is None and not any(f.code in (Code.NO_CUDNN, Code.NOT_FOUND) for f in findings):
        findings.append(_no_cudnn(resolved))
    # an interpreter that dies in its own start-up runs no framework (`targets._past_the_step`): each is said to
    # fail for it; a world a repair tries observes its own start-up again (`judge_again`)
    dies = [f for f in resolved.findings if f.code is Code.STARTUP_FAILED]
    served = _serve(consumers, resolved, facts, env, site_paths,
                    [*stops, *dies, *(f for f in gpu if f.severity is ERROR)])
    findings += [f for s in served for f in s.findings]
    checks += [Check(s.route.consumer.framework, "fail" if not s.works else "info" if not s.route.uses_cudnn
                     else "warn" if s.route.shim is None else "ok", s.summary) for s in served]
    if install is None and served and not any(s.route.uses_cudnn for s in served):  # none of them uses a cuDNN
        findings = [f for f in findings if f.code not in (Code.NO_CUDNN, Code.NOT_FOUND)]
    elif install is None and (own := _served_by_their_own(served)):
        findings = [f for f in findings if f.code not in (Code.NO_CUDNN, Code.NOT_FOUND)]
        checks[0] = Check("installs", "info", "no cuDNN this Python finds by itself; "
                          + "; ".join(f"{s.route.consumer.label} uses the one in {s.install.folder}"
                                      for s in own if s.install is not None))
    if install is None and cudnn_gone:
        checks[0] = Check("installs", "fail", "the cuDNN wheel installed here is links to files that are gone "
                          "(links-gone)")
    checks += [Check(b.framework, "warn", f"{b.label} is a {b.platform} build without CUDA: it uses no cuDNN")
               for b in builds]
    checks += [] if served or builds else [Check("consumers", "skip", consumer_summary)]
    findings = list(scope(findings, served))
    blockers = [*stops, *(f for f in gpu if f.severity is ERROR)]
    whole = repair(unique(findings), install, env, judge_again(*asked[:2], site_paths, asked[2], consumers, facts,
                                                                blockers, today=(env, resolved)),
                   resolved.target.description,
                   resolved.target.path, keep=resolved.target.kind not in ("environment", "python") or not served,
                   served=served) \
        if asked is not None and running and not gone else ()
    findings = [*gone, *whole, *(f for f in findings if not cudnn_gone or f.code not in (Code.NO_CUDNN,
                                                                                      Code.NOT_FOUND))]
    # what a wheel put back will meet, with it; a shared entry's removal, for this target alone; a change that the
    # shell's frameworks would feel, for it alone
    others = shell_frameworks(bare, timeout, facts) \
        if running and resolved.target.kind not in ("environment", "python") else None
    findings = finished(findings, env, resolved.ctx, others)
    resolved.ctx.cache.save()  # once, what judging read (the symbols two files of a load share), for the next run
    return Report(
        cudnnload=__version__, python=sys.version.split()[0], machine=f"{platform.system()} {platform.machine()}",
        environment=tuple((name, env[name]) for name in RELEVANT_VARIABLES if name in env), target=resolved.target,
        chosen=install.folder if install else None, release=str(release) if release else None,
        distribution=install.distribution if install else None, inventory=inventory, which=resolved_which,
        probe=result, gpu=facts, consumers=consumers, checks=tuple(checks), findings=unique(findings),
        host=socket.gethostname(), frameworks=tuple(s.use for s in served),
    )


def repair(findings: Sequence[Finding], install: Judged | None, env: Mapping[str, str], judge: Judge,
           description: str, path: str | None, *, always: bool = False, keep: bool = True,
           served: Sequence[Served] = ()) -> tuple[Finding, ...]:
    """The whole repair (`remedy.plan`) of what concerns the target (the install it loads, its environment, its
    frameworks), said first when it is more than the first error's own fix (``always``: whenever there is one).
    ``keep``: the search-path entry that leads to ``install`` is what the target is meant to load and stays (not
    for a Python environment, whose frameworks load their own cuDNN by their own rules, not load()'s choice; nor for
    an install that is not whole and that no distribution owns, a copy only a person can complete: the entry that
    leads to it may go, for a whole cuDNN or one a fix installs)."""
    relevant = [f for f in findings if _concerns(f, install, served=served)]
    # (each changed world's findings are those about what the target loads there: `judge_again`)
    kept = install is not None and keep and (install.distribution is not None or install.site is not None
                                            or whole_install(install))
    whole = plan(relevant, env, judge, keep=install.folder if install is not None and kept else None)
    first = next((f for f in relevant if f.severity is ERROR), None)
    if whole is None or first is None or (whole.actions == first.fix.actions and not always):
        return ()
    return (Finding(Code.REPAIR, f"what makes {description} work: {len(whole.actions)} "
                    f"change{'s' if len(whole.actions) > 1 else ''}, each change of the "
                    "environment judged again on the model before the next (the errors below are why)",
                    Subject(SubjectKind.TARGET, path), whole),)


def _concerns(finding: Finding, install: Judged | None, preloads: Iterable[Preload] = (),
              served: Iterable[Served] = ()) -> bool:
    """Whether ``finding`` is about what the target gets: its environment, program or frameworks, the install
    it loads and the files that install maps, the install each of its frameworks gets its shim from (``served``:
    torch's wheel folder, where load()'s choice is another), or the folder of a cuDNN file ``preloads`` put in its
    process before it (a preloaded shim answers the target's calls by name: what it lacks beside it, the target
    lacks); not another install the machine holds."""
    if finding.subject.kind in (SubjectKind.CONSUMER, SubjectKind.PROGRAM, SubjectKind.TARGET, SubjectKind.VARIABLE):
        return True
    where = finding.subject.path
    if where is None or install is None or not where.startswith("/"):  # relative: found by the target's own search
        return True
    installs = [install, *(s.install for s in served if s.install is not None)]
    files = {path for i in installs
             for path in (i.folder, *i.maps, *(s.path for s in (*i.plan, *i.dependencies) if s.path))}
    folders = {*(i.folder for i in installs), *(os.path.dirname(p.path) for p in preloads
                                                if p.path and os.path.basename(p.path).startswith("libcudnn"))}
    return where in files or any(where.startswith(folder.rstrip("/") + "/") for folder in folders)


def judge_again(target: str | None, python: str | None, site_paths: list[str] | None, verify: bool,
                 consumers: Sequence[Any], facts: Any, blockers: Sequence[Finding], program: Any = None,
                 today: tuple[Mapping[str, str], Resolved] | None = None) -> Judge:
    """doctor's judgement without its child processes (the probe; the frameworks' build versions, read once):
    for `remedy.plan`, in a world changed by its actions. Its findings are those about what the target loads in
    that world (`_concerns`): the install it gets there, whose files may be other files than today's (a graph of
    another release asks for other versioned names)."""
    def judge(world: World) -> Sequence[Finding]:
        env = world.environ
        # today's world is the one the command judged already (``today``: its environment and what it resolved):
        # one context per world, never the machine read twice
        try:
            again = today[1] if today is not None and dict(env) == dict(today[0]) and not world.unstarted \
                and not world.gone else \
                resolve_target(target, python=python, environ=env, site_paths=site_paths, verify=verify,
                               unstarted=world.unstarted, program=program, gone=world.gone)
        except UsageError as exc:
            return (_unresolved(exc, python or target),)
        standing = [b for b in blockers if not _cleared(b, world)]
        served = _serve(consumers, again, facts, env, site_paths, standing)
        found = [f for f in (*preload_findings(again.ctx.preloads), *again.inventory.findings, *again.findings,
                             *(f for i in again.inventory.installs for f in i.findings))
                 if _concerns(f, again.install, again.ctx.preloads, served)]
        if again.install is None and not any(f.code in (Code.NO_CUDNN, Code.NOT_FOUND) for f in found):
            found.append(_no_cudnn(again))
        # a blocker a change of the environment clears stands in every world where that change is not made
        return unique(scope([*found, *(b for b in standing if _clearable(b)),
                             *(f for s in served for f in s.findings)], served))

    return judge


def _unresolved(exc: UsageError, target: str | None) -> Finding:
    """A world the target cannot be judged in: its interpreter does not start there (fix differential 3-11790:
    without two LD_LIBRARY_PATH entries, the cuDNN its sitecustomize loads found a graph cut short, and it died
    of SIGBUS), or its program is not there. Not a world where it works: a change that leads there is no fix."""
    return Finding(Code.STARTUP_FAILED, f"in that environment {exc.message}",
                   Subject(SubjectKind.TARGET, exc.path or target))


def _clearable(blocker: Finding) -> bool:
    """Whether a change of the environment alone clears ``blocker`` (CUDA_VISIBLE_DEVICES unset)."""
    from cudnnload.diagnose.remedy import ENVIRONMENT

    return bool(blocker.fix.actions) and all(a.do in ENVIRONMENT for a in blocker.fix.actions)


def _cleared(blocker: Finding, world: World) -> bool:
    """Whether ``world`` has ``blocker``'s own change made already (making it again changes nothing)."""
    return _clearable(blocker) and world.after(*blocker.fix.actions) == world


def _served_by_their_own(served: Sequence[Served]) -> tuple[Served, ...]:
    """The frameworks that use cuDNN, when each of them finds one (a copy its own wheel bundles and reaches by its
    RPATH, as torch 1.x's did): that this Python finds no cuDNN by itself is then no fault, and a cuDNN installed
    for it no fix (what fails on a framework's copy, its own findings say); () when any of them finds none."""
    own = tuple(s for s in served if s.route.uses_cudnn)
    return own if all(s.route.shim is not None and s.install is not None for s in own) else ()


def _no_cudnn(resolved: Resolved) -> Finding:
    """A target that loads no cuDNN: an error, whatever else is found (a report without one is no report
    of a working cuDNN)."""
    installs = resolved.inventory.installs
    found = f"{len(installs)} found, none loadable: {'; '.join(resolved.rejected)}" if installs and resolved.rejected \
        else f"{len(installs)} found, none loadable" if installs else "none found"
    python = resolved.target.python or (sys.executable if resolved.target.kind == "environment" else None)
    # a wheel whose folder this user cannot search, or whose RECORD lists files that are gone: that, not a new one
    sites = list(resolved.target.site_paths) if resolved.target.site_paths is not None else None
    repair = (not_found_fix(generation(9), resolved.ctx, sites, python) if sites is not None
              else cudnn_install(9, None, python)) \
        if resolved.target.kind in ("environment", "python") and not installs \
        else fix(manual("make one of them whole (their findings say how), or install cuDNN where this target looks"))
    return Finding(Code.NO_CUDNN, f"{resolved.target.description} loads no cuDNN ({found})",
                   Subject(SubjectKind.TARGET, resolved.target.path), repair)


def _cpu_only(build: CpuBuild, install: Judged | None, python: str | None = None) -> Finding:
    """A framework built without CUDA: said, with what would put it on the GPU, never a cuDNN to install. Where its
    CUDA build is installed too and pip wrote the CPU one over it (``build.over``): both out, the CUDA one back."""
    beside = f"; the cuDNN {install.release or install.major} here is of no use to it" if install else ""
    repair = fix(manual(f"for the GPU, install a CUDA build of {build.framework} (it brings its cuDNN); nothing needs "
                        "fixing to run on the CPU"))
    if build.over is not None and build.over_distribution is not None:
        repair = fix(pip_uninstall([build.distribution, build.over_distribution], python=python),
                     pip_install([build.over], python=python))
    return Finding(Code.CPU_ONLY_BUILD, f"{build.label} is a {build.platform} build ({build.why}): it uses no cuDNN "
                   f"and runs on no NVIDIA GPU{beside}", Subject(SubjectKind.CONSUMER, build.site, name=build.label),
                   repair)


def _expected(install: Judged, resolved: Resolved, gpu: bool) -> tuple[Any, ...]:
    """The install's predicted calls, for a machine with or without a usable GPU as the driver says."""
    return predict_install(install, resolved.ctx, gpu=gpu).expectations


def _with_driver_consequences(finding: Finding, others: Iterable[Finding]) -> Finding:
    """The driver check's no-driver finding, with what discovery's said a machine without one shows."""
    if finding.code is not Code.NO_DRIVER:
        return finding
    worse = next((f for f in others if aborts_without_driver(f)), None)  # the install's own, an abort: it is
    if worse is not None:
        return worse
    said = next((f.consequences for f in others if f.code is Code.NO_DRIVER and f.consequences), ())
    return replace(finding, consequences=finding.consequences or said)


def shell_frameworks(env: Mapping[str, str], timeout: float, facts: Any = None,
                     besides: str | None = None) -> Callable[[Mapping[str, str]], dict[str, Fared]]:
    """The frameworks of the shell's Python (``VIRTUAL_ENV``'s interpreter, else the first ``python3`` on PATH
    outside cudnnload's own environment; not ``besides``, the program's own), each judged on what its own loader
    gets in a world: its label, and how it fares there (`scoped.Fared`: its first error, how far it gets). The
    frameworks are read once, on first use (a child imports them to read their build versions); none where that
    Python has none or does not answer.
    ``facts``: the driver's (read on first use when not given)."""
    import shutil

    from cudnnload.errors import CudnnloadError
    from cudnnload.loading.gpu import gpu_facts
    from cudnnload.resolve.pythons import environment_of, interpreter_of_process, python_on_path, tool_environment

    found: list[Any] = []  # the shell's Python (None: none to judge), its frameworks, the driver's facts
    judged: dict[tuple[str | None, ...], dict[str, Fared]] = {}

    def shell() -> str | None:
        python = interpreter_of_process("", [], env) or python_on_path(env, outside=tool_environment(env))
        own = shutil.which(besides, path=env.get("PATH", "")) if besides else None
        return None if python is None or (own and environment_of(own) == environment_of(python)) else python

    def frameworks(world: Mapping[str, str]) -> dict[str, Fared]:
        key = tuple(world.get(name) for name in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH"))
        found[:] = found or [shell()]
        if found[0] is None or key in judged:
            return judged.get(key, {})
        try:
            resolved = resolve_target(None, python=found[0], environ=world)
            if len(found) == 1:
                found.extend([_consumers_of(resolved, env, timeout)[0], facts or gpu_facts(env)])
            served = _serve(found[1], resolved, found[2], world, None, ())
            masked = _masked(resolved.started)
        except CudnnloadError:
            served, masked = (), ()
        judged[key] = {s.route.consumer.label: Fared(None if s.works else next(
            (f.message for f in s.findings if f.severity is ERROR), ""), s.fare, s.route.consumer.site, masked,
            s.route.consumer.pins, s.route.consumer.build)
            for s in served}
        return judged[key]

    return frameworks


def _masked(started: Any) -> tuple[tuple[str, str, str], ...]:
    """The cuDNN files a start-up line of the Python observed maps (a ``.pth`` line, sitecustomize) behind a file
    of the same name the loader mapped first (LD_PRELOAD's), which answers that name in the process: each as (the
    name, its path, the line)."""
    if started is None:
        return ()
    first = {os.path.basename(m.path) for m in started.mapped if m.source.kind == "loader"}
    return tuple((name, m.path, f"{m.source.file}" + (f" line {m.source.line}" if m.source.line else ""))
                 for m in started.mapped if m.source.kind != "loader" and m.source.file
                 and (name := os.path.basename(m.path)).startswith("libcudnn") and name in first)


def _consumers_of(resolved: Resolved, env: Mapping[str, str], timeout: float,
                  running: bool = True) -> tuple[tuple[Any, ...], str]:
    """The frameworks the target concerns, and a summary; without ``running``, none is imported in a child."""
    target = resolved.target
    if target.kind in ("environment", "python"):
        from cudnnload.resolve.consumers import find_consumers

        found = find_consumers(list(target.site_paths) if target.site_paths is not None else None, environ=env,
                               timeout=timeout, interpreter=target.python, run=running)
        where = "this Python" if target.kind == "environment" else target.python or target.description
        none = f"no framework that uses cuDNN (PyTorch, JAX, ONNX Runtime, TensorFlow, or one surveyed) in {where}"
        return found, ", ".join(c.label for c in found) or none
    if target.kind in ("program", "shared-object") and target.path:
        from cudnnload.resolve.consumers import owner_of

        owner = owner_of(target.path, environ=env, timeout=timeout)
        return owner, ", ".join(c.label for c in owner) or \
            f"{os.path.basename(target.path)} is not part of a PyTorch, JAX, ONNX Runtime or TensorFlow install"
    return (), f"{target.description} is not a framework: point doctor at one (its library, or --python)"


def _serve(consumers: Sequence[Any], resolved: Resolved, facts: Any, env: Mapping[str, str],
           site_paths: Sequence[str] | None, blockers: Sequence[Finding]) -> tuple[Served, ...]:
    """Each framework judged on the cuDNN its own loader gives it (`resolve.routes`, `judge.routes`), and on
    ``blockers``: what stops any of them (no GPU visible)."""
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.routes import route

    target, ctx = resolved.target, resolved.ctx
    python = target.python or (sys.executable if target.kind == "environment" else None)
    by_folder = {os.path.realpath(i.folder): i for i in resolved.inventory.installs}
    served = []
    for consumer in consumers:
        paths = target.site_paths if target.site_paths is not None else site_paths if site_paths is not None \
            else sys.path if target.kind == "environment" else (consumer.site,)
        way = route(consumer, ctx, list(paths), sources={e.path: e.source for e in resolved.started.path}
                    if resolved.started is not None else None)
        install = None
        if way.shim is not None:
            folder = os.path.realpath(os.path.dirname(way.shim))
            install = by_folder.get(folder) or judged_install_of(way.shim, ctx, f"{consumer.framework}'s loader",
                                                                 python=python)
        judged = serve(way, install, ctx, gpu=bool(facts.devices), device_count=len(facts.devices), environ=env,
                       python=python, blockers=blockers, devices=facts.devices)
        served.append(_with_pin(judged, resolved, env) if not judged.works and not blockers else judged)
    return tuple(served)


def _with_pin(served: Served, resolved: Resolved, env: Mapping[str, str]) -> Served:
    """A framework that fails with the cuDNN it gets, where another install on the machine is whole once its
    set is mapped and satisfies the framework's rules: its errors' fixes carry `cudnnload run --for` (with
    --replace-preload where LD_PRELOAD holds cuDNN) as an alternative."""
    from cudnnload.judge.choose import choose_for
    from cudnnload.judge.fixes import pin_for
    from cudnnload.loading.plans import as_mapped
    from cudnnload.resolve.discovery import without_preload

    preloaded = bool(resolved.ctx.preloads)
    clean = without_preload(env, resolved.ctx) if preloaded else resolved.ctx
    candidates = [as_mapped(i, clean, resolved.inventory.distributions) for i in resolved.inventory.installs]
    consumer = served.route.consumer
    if choose_for(candidates, consumers=(consumer,)).install is None:
        return served
    alternative = pin_for(consumer.framework, preloaded)
    return replace(served, findings=tuple(
        replace(f, fix=replace(f.fix, alternatives=(*f.fix.alternatives, alternative)))
        if f.severity is ERROR and f.subject.kind is SubjectKind.CONSUMER
        and not any(a.do is ActionKind.RUN for a in f.fix.alternatives) else f for f in served.findings))


def _installs_check(resolved: Resolved) -> Check:
    target, install, rejected = resolved.target, resolved.install, resolved.rejected
    found = ", ".join(f"{i.release or '?'} in {i.folder}" for i in resolved.inventory.installs) or "none"
    passed = f"; passed over: {'; '.join(rejected)}" if rejected else ""
    if target.kind in ("environment", "python"):
        if install is None:
            return Check("installs", "fail", f"no loadable cuDNN ({found}){passed}")
        where = install.distribution or install.found_via
        return Check("installs", "warn" if rejected else "ok",
                     f"{len(resolved.inventory.installs)} found; will load cuDNN {install.release} ({where}){passed}")
    if install is None:
        return Check("installs", "fail", f"{target.description}: no cuDNN it would load")
    how = f" (found by {target.how})" if target.how else ""
    release = install.release or f"{install.major}.x"
    return Check("installs", "ok" if install.healthy else "fail",
                 f"{target.description}: cuDNN {release} in {install.folder}{how}")


def _coherence_check(install: Judged) -> Check:
    if install.expected and install.expected[0].call.kind == "dlopen":
        return Check("coherent", "skip", f"the shim itself does not load: {install.expected[0].message}")
    # a step's own file, or the one its opener's later names get when that one fails to load (mapped instead);
    # a library not found only where a finding says so (the JIT wheel's graph asks for tensor_ir and goes on)
    said = {f.subject.library for f in install.findings}
    outside = [(s.library, s.path) for s in install.plan if not s.inside_install
               and (s.path is not None or s.library in said)] + [
        (s.library, s.fallback.path) for s in install.plan
        if s.inside_install and s.fallback is not None and s.fallback.path in install.maps]
    if not install.plan:
        return Check("coherent", "ok", "one library: nothing to keep together")
    if not outside:
        found = sum(1 for step in install.plan if step.path is not None)
        return Check("coherent", "ok", f"the shim loads all {found} sub-libraries from its own folder")
    names = ", ".join(f"{library} ({path or 'not found'})" for library, path in outside)
    return Check("coherent", "fail", f"the shim would not get these from its folder: {names}")


def _probe_check(result: ProbeResult, install: Judged, expected: tuple[Any, ...]) -> Check:
    """The shim loaded as an application loads it, and the catalog's calls made: against the prediction.
    cudnnCreate has its own check ("handle")."""
    from cudnnload.loading.gpu import minimum_driver

    gen = generation(install.major)
    wrong = disagreements(expected, result.observed(gen))
    took = f"{result.seconds * 1000:.0f} ms in a child process" + (
        ", remembered: its files, host, boot and environment unchanged; --verify runs it again" if result.remembered
        else "")
    failing = [e for e in expected if e.cause and e.cause != "libcuda.so.1"]
    if wrong:
        return Check("probe", "fail" if result.signal else "warn",
                     f"the run disagrees with the prediction: {wrong[0]} ({took})")
    if failing:
        first = failing[0]
        what = {Effect.ABORT: "aborts (SIGABRT)", Effect.SIGBUS: "dies of SIGBUS", Effect.HANG: "hangs",
                Effect.NO_START: "fails"}.get(
            first.outcome, f"returns {first.status} {gen.status_name(first.status) if first.status else ''}")
        return Check("probe", "fail", f"as predicted: {first.call.function} {what}" +
                     (f" ({len(failing)} calls fail)" if len(failing) > 1 else "") + f" ({took})")
    version = result.step("cudnnGetVersion")
    if version is not None and not version.exported:  # another library under the shim's name
        return Check("probe", "fail", f"the shim exports no cudnnGetVersion: it is no cuDNN shim ({took})")
    checks = [s for s in result.steps if s.name.endswith("VersionCheck") and s.exported]
    cudart = result.step("cudnnGetCudartVersion")
    built = ""
    if cudart and cudart.value:
        cuda = f"{cudart.value // 1000}.{cudart.value % 1000 // 10}"
        driver = minimum_driver(cudart.value)
        built = f", built for CUDA {cuda}" + (f" (driver {driver} or newer)" if driver else "")
    release = f"cuDNN {decode_version(version.value)}" if version and version.value else "cuDNN"
    return Check("probe", "ok", f"{release} loads as an application loads it; {len(checks)} VersionChecks pass"
                 f"{built} ({took})")


def _probe_findings(result: ProbeResult, install: Judged, expected: tuple[Any, ...],
                    limit: int | None = None) -> list[Finding]:
    """What the run showed that the prediction did not: never hidden. ``limit``: the address-space limit the child
    ran under (``ulimit -v``), on a machine whose driver started in doctor's own process."""
    from cudnnload.judge.gpu import address_limit_fix

    wrong = disagreements(expected, result.observed(generation(install.major)))
    findings: list[Finding] = []
    create = result.step("cudnnCreate")
    if limit is not None and create is not None and create.exported and not create.ok \
            and any(w.startswith("create:") for w in wrong):
        # the driver started in doctor's process, and cuDNN's own CUDA runtime did not in the child under the limit:
        # how much address space a start reserves is the process's (measured on the H200: the probe's cudnnCreate
        # failed NOT_INITIALIZED under 16 and 64 GB; PyTorch's first CUDA call failed under 16 GB, worked under 64)
        wrong = [w for w in wrong if not w.startswith("create:")]
        size = f"{limit / 2**30:.1f} GiB"
        findings.append(Finding(Code.ADDRESS_SPACE_LIMIT, f"cudnnCreate failed ({create.status_name}) in a process of "
                                f"cuDNN {install.release or install.major} alone under this address-space limit of "
                                f"{size} (ulimit -v, RLIMIT_AS), where the driver started in doctor's own: the CUDA "
                                "runtime reserves address space for the GPUs' memory and the host's as it starts, and "
                                "how much a process may still reserve depends on what it maps besides; a program that "
                                "uses cuDNN directly fails there, a framework's process may too",
                                Subject(SubjectKind.INSTALL, install.folder), address_limit_fix(), severity=WARNING))
    if not wrong:
        return findings
    findings += [Finding(Code.PREDICTION_DISAGREES, f"the child process and cudnnload's prediction disagree: "
                        f"{'; '.join(wrong)}", Subject(SubjectKind.INSTALL, install.folder),
                        fix(note="the findings above may be incomplete: run `cudnnload doctor -- YOUR-PROGRAM` for "
                                 "the linker's own account, and report the layout to cudnnload"), severity=WARNING)]
    if not result.completed:
        findings.append(Finding(Code.PROBE_CRASHED, f"loading cuDNN {install.release} kills the process: "
                                f"{result.verdict}", Subject(SubjectKind.INSTALL, install.folder),
                                fix(note="the findings above say what to fix")))
    return findings


def _driver_check(facts: Any, findings: tuple[Finding, ...]) -> Check:
    if not facts.driver_found:
        worst = min((f.severity for f in findings), key=lambda severity: severity.rank, default=INFO)
        return Check("driver", "fail" if worst is ERROR else "info", facts.reason or "no NVIDIA driver")
    gpus = ", ".join(d.label for d in facts.devices) or "no GPU visible"
    bad = any(f.severity is ERROR for f in findings)
    return Check("driver", "fail" if bad else "ok", f"driver for CUDA {facts.driver_cuda}; {gpus}")


def _handle_check(result: ProbeResult | None, facts: Any) -> Check:
    create = result.step("cudnnCreate") if result else None
    if create is None:
        return Check("handle", "skip", "cuDNN did not load far enough to try cudnnCreate")
    if not create.exported:
        return Check("handle", "fail", "the shim exports no cudnnCreate: it is no cuDNN shim")
    if create.ok:
        return Check("handle", "ok", "cudnnCreate succeeded in the child process")
    reason = f"{create.status_name} ({create.detail})" if create.detail else str(create.status_name)
    status = "skip" if not facts.driver_found and not facts.hardware else "fail"
    return Check("handle", status, f"cudnnCreate: {reason}")


# --- diff ------------------------------------------------------------------------
# A saved report is untrusted input (issue 29): anyone who can write to a reports folder writes one. Before
# `decisive_facts` reads it, `report_problem` checks every field it reads (and `fleet` shows) against
# `REPORT_SCHEMA`, the shape `report.to_jsonable` gives those fields; a report that fails is that node's
# unreadable report, naming the field and why, never a crash of the whole summary.

Shape = Callable[[object, str], "str | None"]  # (value, where it is) -> what is wrong with it, or None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "an int", float: "a float", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__)


def _typed(kind: type, name: str, pattern: str | None = None) -> Shape:
    import re

    full = re.compile(pattern) if pattern else None

    def check(value: object, where: str) -> str | None:
        if type(value) is not kind:
            return f"{where}: {_kind(value)} where {name} belongs"
        if full is not None and not full.fullmatch(str(value)):
            return f"{where}: {json.dumps(value)[:80]} is not {name}"
        return None

    return check


def _either(*shapes: Shape) -> Shape:
    """One of ``shapes``; what is wrong is said in the first one's terms (the one meant, null the other)."""
    def check(value: object, where: str) -> str | None:
        problems = [shape(value, where) for shape in shapes]
        return None if None in problems else problems[0]

    return check


def _null(value: object, where: str) -> str | None:
    return None if value is None else f"{where}: {_kind(value)} where null belongs"


def _list(item: Shape) -> Shape:
    def check(value: object, where: str) -> str | None:
        if type(value) is not list:
            return f"{where}: {_kind(value)} where a list belongs"
        return next((problem for index, each in enumerate(value) if (problem := item(each, f"{where}[{index}]"))),
                    None)

    return check


def _pair(first: Shape, second: Shape) -> Shape:
    def check(value: object, where: str) -> str | None:
        if type(value) is not list or len(value) != 2:
            return f"{where}: {_kind(value)}{'' if type(value) is not list else f' of {len(value)}'} where a pair " \
                "belongs"
        return first(value[0], f"{where}[0]") or second(value[1], f"{where}[1]")

    return check


def _object(required: Mapping[str, Shape], optional: Mapping[str, Shape] | None = None) -> Shape:
    fields = {**required, **(optional or {})}

    def check(value: object, where: str) -> str | None:
        if type(value) is not dict:
            return f"{where}: {_kind(value)} where an object belongs"
        missing = next((name for name in required if name not in value), None)
        if missing is not None:
            return f"{where}.{missing}: missing"
        return next((problem for name, shape in fields.items() if name in value
                     and (problem := shape(value[name], f"{where}.{name}"))), None)

    return check


_TEXT, _INT, _BOOL = _typed(str, "a string"), _typed(int, "an int"), _typed(bool, "a boolean")
_MAYBE_TEXT = _either(_TEXT, _null)
_STEP = _object({"library": _TEXT}, {"path": _MAYBE_TEXT, "rule": _TEXT})
# The fields of a `doctor --json` document that `decisive_facts` and `fleet` read, as `report.to_jsonable`
# writes them; the words a fix may be built from (a release, a variable's name) are held to their form.
REPORT_SCHEMA = _object({"schema": _INT, "kind": _TEXT, "result": _object({"findings": _list(_object(
    {"code": _TEXT, "severity": _typed(str, "a severity (error, warning, info)", "error|warning|info")},
    {"message": _TEXT, "path": _MAYBE_TEXT, "fix": _either(_object({}, {
        "text": _MAYBE_TEXT, "actions": _list(_object({"do": _TEXT}))}), _null)}))}, {
    "python": _MAYBE_TEXT, "machine": _MAYBE_TEXT, "chosen": _MAYBE_TEXT, "distribution": _MAYBE_TEXT,
    "release": _either(_typed(str, "a release (N.N.N)", r"\d+(\.\d+){1,3}"), _null), "healthy": _BOOL,
    "host": _TEXT, "environment": _list(_pair(_typed(str, "a variable's name", r"[A-Za-z_][A-Za-z0-9_]*"), _TEXT)),
    "inventory": _either(_object({}, {
        "host": _either(_object({}, {"glibc": _either(_list(_INT), _null)}), _null),
        "installs": _list(_object({}, {"folder": _MAYBE_TEXT, "plan": _list(_STEP), "dependencies": _list(_STEP)}))}),
        _null),
    "probe": _either(_object({}, {"verdict": _MAYBE_TEXT, "outcome": _MAYBE_TEXT, "signal": _either(_TEXT, _INT, _null),
                                  "returncode": _either(_INT, _null), "steps": _list(_object(
        {"name": _TEXT}, {"ok": _BOOL, "value": _either(_INT, _null), "status_name": _MAYBE_TEXT}))}), _null),
    "gpu": _either(_object({}, {"driver_version": _either(_INT, _null), "devices": _list(_object(
        {"index": _INT, "name": _TEXT, "capability": _pair(_INT, _INT)}))}), _null),
    "consumers": _list(_object({"distribution": _TEXT}, {"version": _MAYBE_TEXT, "build": _MAYBE_TEXT})),
})})


def report_problem(doc: object) -> str | None:
    """Which field of a saved report is not of `REPORT_SCHEMA`'s shape, and why ("result.findings[0].code:
    an int where a string belongs"), or None."""
    problem = REPORT_SCHEMA(doc, "")
    return None if problem is None else problem.removeprefix(".")


@dataclass(frozen=True)
class Fact:
    """Which decisive fact of a report: its ``kind`` (one of `FACT_LABELS`) and, for the kinds there are many of,
    its ``name`` (a variable's, a library key, a probe step's, a GPU index, a distribution, a finding's code and
    path). Code decides on these fields; ``label`` is what people read."""

    kind: str
    name: str = ""

    @property
    def label(self) -> str:
        return FACT_LABELS[self.kind].format(name=self.name).rstrip()


FACT_LABELS = {  # in the order differences are shown
    "variable": "${name}", "chosen": "cuDNN chosen", "distribution": "distribution", "loads": "loads {name}",
    "found-by": "{name} found by", "python": "python", "machine": "machine", "glibc": "glibc", "driver": "driver",
    "gpu": "GPU {name}", "consumer": "consumer {name}", "probe": "probe {name}", "probe-verdict": "probe verdict",
    "probe-outcome": "probe outcome", "finding": "finding {name}", "healthy": "healthy",
}


def decisive_facts(doc: Mapping[str, Any]) -> dict[Fact, str]:
    """The facts of a saved report (``doctor --json``) that decide whether cuDNN works, flattened; ``doc`` is
    of `REPORT_SCHEMA` (`report_problem`). A library's load is two facts: the path, and the rule that found it."""
    result = doc.get("result", doc)
    out: dict[Fact, str] = {
        Fact("python"): _said(result.get("python")), Fact("machine"): _said(result.get("machine")),
        Fact("chosen"): f"{result.get('release')} in {result.get('chosen')}" if result.get("chosen") else "none",
        Fact("distribution"): _said(result.get("distribution")),
    }
    for name, value in result.get("environment", []):
        out[Fact("variable", name)] = value
    host = (result.get("inventory") or {}).get("host") or {}
    out[Fact("glibc")] = ".".join(map(str, host.get("glibc") or [])) or "?"
    for step in loads(result):
        out[Fact("loads", step["library"])] = _said(step.get("path"), "not found")
        out[Fact("found-by", step["library"])] = _said(step.get("rule"))
    for step in (result.get("probe") or {}).get("steps", []):
        value = step.get("value") if step.get("value") is not None else step.get("status_name") or step.get("ok")
        out[Fact("probe", step["name"])] = str(value)
    if result.get("probe"):
        probe = result["probe"]
        out[Fact("probe-verdict")] = _said(probe.get("verdict"))
        # how the probe's child ended: its verdict says so in words, which a report may not agree with
        signal, code = probe.get("signal"), probe.get("returncode")
        out[Fact("probe-outcome")] = _said(probe.get("outcome")) + (
            f" {signal}" if signal is not None else f", exit {code}" if code is not None else "")
    gpu = result.get("gpu") or {}
    out[Fact("driver")] = _said(gpu.get("driver_version"))
    for device in gpu.get("devices", []):
        major, minor = device["capability"]
        out[Fact("gpu", str(device["index"]))] = f"{device['name']} sm_{major}{minor}"
    for consumer in result.get("consumers", []):
        out[Fact("consumer", consumer["distribution"])] = \
            f"{consumer.get('version')} (built with cuDNN {consumer.get('build')})"
    for f in result.get("findings", []):
        out[Fact("finding", f"{f['code']} {f.get('path') or ''}".rstrip())] = f["severity"]
    if "healthy" in result:
        out[Fact("healthy")] = "yes" if result["healthy"] else "no"
    return out


def _said(value: object, none: str = "none") -> str:
    """A fact's value in words: ``none`` where the report holds null (never Python's "None")."""
    return none if value is None else str(value)


def loads(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The chosen install's planned loads and dependencies in a report's result (`REPORT_SCHEMA`'s steps)."""
    return [step for install in (result.get("inventory") or {}).get("installs", [])
            if install.get("folder") == result.get("chosen")
            for step in install.get("plan", []) + install.get("dependencies", [])]


@dataclass(frozen=True)
class Difference:
    fact: Fact
    left: str | None
    right: str | None

    @property
    def what(self) -> str:
        return self.fact.label


def diff_reports(left: Mapping[str, Any], right: Mapping[str, Any]) -> tuple[Difference, ...]:
    """What differs between two ``doctor --json`` reports, among the facts that matter."""
    a, b = decisive_facts(left), decisive_facts(right)
    order = list(FACT_LABELS)
    return tuple(Difference(key, a.get(key), b.get(key))
                 for key in sorted(set(a) | set(b), key=lambda fact: (order.index(fact.kind), fact.name))
                 if a.get(key) != b.get(key))
