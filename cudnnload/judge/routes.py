"""Each framework judged on the cuDNN it gets (`resolve.routes`), not on the one cudnnload would pick.

For one framework: the release its ``cudnnGetVersion`` returns (graph's, in cuDNN 9: the shim forwards it),
its own rules on that release (`frameworks.consumer_findings`), and the calls its first convolution makes,
predicted on the install its shim belongs to (`installs.predict_install`). What a framework never reaches
does not stop it: the findings of the files its calls do not load are then warnings for that environment
(`scope`), said so.

Which calls a framework makes, measured on an H100 (2026-11-24, torch 2.11 and the JAX CUDA 13 plugin over
the nvidia-cudnn-cu13 9.19 wheel, /proc/self/maps after a convolution): PyTorch maps the shim, graph,
heuristic and the two engine libraries, JAX those and ops; neither maps cnn or adv for a convolution, and
both ran with cnn, ops, heuristic or engines_precompiled removed, and failed with engines_runtime_compiled
removed. A framework whose calls were not measured is taken to make every call of the catalog's exercise.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.codes import ActionKind, Code, Effect, Severity, SubjectKind
from cudnnload.judge.consequences import Expectation
from cudnnload.judge.fixes import (
    bundled_sublibraries,
    dependency_into,
    dependency_manual,
    project_name,
    readable_again,
    reinstall,
)
from cudnnload.judge.frameworks import consumer_findings, gpu_turned_off, pinned_cudnn, rejects
from cudnnload.judge.gpu import jax_pool_findings
from cudnnload.judge.installs import predict_install
from cudnnload.judge.judged import Judged
from cudnnload.resolve.catalog import Release, cudnn_pin, decode_version, dependency_requirement, generation
from cudnnload.resolve.consumers import Consumer
from cudnnload.resolve.discovery import Context, Step
from cudnnload.resolve.hardware import Device
from cudnnload.resolve.routes import Closed, Route
from cudnnload.resolve.survey import releases_for_major
from cudnnload.verdicts import (
    ERROR,
    WARNING,
    Action,
    Finding,
    Fix,
    Subject,
    delete,
    fix,
    manual,
    pip_uninstall,
    remove_entry,
    remove_line,
    set_variable,
)

# The functions of the catalog's exercise that a framework's first convolution calls (cuDNN 9; see above).
_GRAPH_API = frozenset({"cudnnGetVersion", "cudnnCreate", "cudnnBackendFinalize", "cudnnBackendCreateDescriptor"})
FRAMEWORK_CALLS: dict[str, frozenset[str]] = {
    "torch": _GRAPH_API,
    "jax": _GRAPH_API | {"cudnnCreateTensorDescriptor"},
}
# Calls a framework makes whose failing status it goes on after: JAX maps ops, and its convolution ran with ops
# removed (3009) and with the system's 9.14 graph under the wheel's 9.19 ops, whose calls then return 1002
# (both measured on the GPU machine, 2026-11-24 and 2026-11-27); an abort there still stops it.
TOLERATED: dict[str, frozenset[str]] = {"jax": frozenset({"cudnnCreateTensorDescriptor"})}


@dataclass(frozen=True)
class Use:
    """One framework's cuDNN, as a report gives it."""

    framework: str
    distribution: str
    version: str
    release: Release | None  # what its cudnnGetVersion returns
    shim: str | None
    how: str
    works: bool


@dataclass(frozen=True)
class Served:
    """What one framework gets: the route, the install its shim belongs to, the release it sees, and why it
    would stop (``findings`` with errors) or not."""

    route: Route
    install: Judged | None
    release: Release | None  # what its cudnnGetVersion returns
    failing: tuple[Expectation, ...]  # its calls that fail, as predicted
    findings: tuple[Finding, ...]
    reached: frozenset[str]  # files (and "folder/key" names) whose loads decide what it sees
    # how far its calls get, in the order it makes them: the first that fails (as many as it makes: none does)
    reach: int = 0

    @property
    def works(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def fare(self) -> tuple[int, int]:
        """How far it gets, for comparing two worlds: it works; else its calls run and the first that fails is the
        ``reach``-th; else it stops at its version check (a release its build rules refuse); else it finds no
        cuDNN or cannot start. The greater, the further."""
        if self.works:
            return (3, 0)
        errors = {f.code for f in self.findings if f.severity is Severity.ERROR}
        if self.install is None or Code.CONSUMER_BROKEN in errors:
            return (0, 0)
        return (1, 0) if errors & set(_RELEASE_CODES) else (2, self.reach)

    @property
    def use(self) -> Use:
        consumer = self.route.consumer
        return Use(consumer.framework, consumer.distribution, consumer.version, self.release, self.route.shim,
                   self.route.how, self.works)

    @property
    def summary(self) -> str:
        label = self.route.consumer.label
        judged = f"; {self.route.judged_by}" if self.route.judged_by else ""
        if self.route.consumer.broken:
            judged += f"; it is installed but broken: {self.route.consumer.broken}"
        if not self.route.uses_cudnn:
            return f"{label} uses no cuDNN ({self.route.how}{judged})"
        if self.route.shim is None and self.route.lazy:
            return f"{label}: no cuDNN when it first uses one ({self.route.how}: {self.route.error}{judged})"
        if self.route.shim is None:
            return f"{label}: no cuDNN ({self.route.error or self.route.how}{judged})"
        where = self.install.folder if self.install else posixpath.dirname(self.route.shim)
        release = f"cuDNN {self.release}" if self.release else "a cuDNN"
        blocked = next((f for f in self.findings if f.subject.kind is not SubjectKind.CONSUMER
                        and f.severity is ERROR), None)
        when = " when it first uses cuDNN" if self.route.lazy else ""
        return f"{label} gets {release} from {where}{when} ({self.route.how}{judged})" + (
            f"; it cannot run: {blocked.message}" if blocked else "")


def serve(route: Route, install: Judged | None, ctx: Context, *, gpu: bool, device_count: int | None,
          environ: Mapping[str, str], python: str | None, blockers: Sequence[Finding] = (),
          devices: Sequence[Device] = ()) -> Served:
    """Judge ``route``'s framework on ``install``, the judged install its shim belongs to. ``blockers``: what
    stops it whatever cuDNN it gets (no GPU visible, a driver that fails): its findings too. ``devices``: the
    visible GPUs, with what NVML says of their memory (JAX's pool beside other processes: `jax_pool_findings`)."""
    served = _serve(route, install, ctx, gpu=gpu, device_count=device_count, environ=environ, python=python)
    consumer = route.consumer
    # a CUDA library it NEEDs and nothing holds is why its import fails (said first: its reinstall would not help)
    broken = tuple(_unmet(consumer, need.soname, need.path, python, route.lazy) for need in consumer.unmet)
    if consumer.broken:
        broken += (Finding(Code.CONSUMER_BROKEN, f"{consumer.label} is installed but broken: {consumer.broken}",
                           Subject(SubjectKind.CONSUMER, consumer.site, name=consumer.label),
                           fix(reinstall(consumer.distribution, consumer.version, consumer.site, consumer.pip_env,
                                         python=python, along=consumer.sharing))),)
    off = gpu_turned_off(consumer, environ, gpu)
    broken += (off,) if off is not None else ()
    broken += jax_pool_findings(consumer.label, environ, devices) if consumer.framework == "jax" and off is None \
        else ()
    return replace(served, findings=broken + served.findings + tuple(blockers)) if broken or blockers else served


def _unmet(consumer: Consumer, soname: str, path: str, python: str | None, lazy: bool = False) -> Finding:
    """A CUDA library pip ships that the framework's own object NEEDs and nothing holds where it looks: that object
    cannot load (torch's libtorch_cuda at import; ONNX Runtime's CUDA provider when a session first asks for it,
    then a warning, as finding no cuDNN is for it). The distribution that has it, into the framework's own site."""
    requirement = dependency_requirement(soname)
    when = "when it is first used" if lazy else "at import"
    return Finding(Code.CONSUMER_BROKEN, f"{consumer.label}: {posixpath.basename(path)} cannot load {when}: it NEEDs "
                   f"{soname}, and no folder it looks in holds it (a wheel's nvidia/*/lib on its site paths, its own "
                   f"search): \"{soname}: cannot open shared object file\"",
                   Subject(SubjectKind.CONSUMER, consumer.site, name=consumer.label),
                   fix(dependency_into(requirement, consumer.site, consumer.pip_env, python=python,
                                       along=consumer.along))
                   if requirement is not None else fix(dependency_manual(soname)),
                   severity=WARNING if lazy else ERROR)


def _serve(route: Route, install: Judged | None, ctx: Context, *, gpu: bool, device_count: int | None,
           environ: Mapping[str, str], python: str | None) -> Served:
    consumer = route.consumer
    subject = Subject(SubjectKind.CONSUMER, consumer.site, name=consumer.label)
    if not route.uses_cudnn:  # its surveyed wheel has nothing to do with cuDNN: nothing to judge it on
        return Served(route, None, None, (), (), frozenset())
    if route.shim is None or install is None:
        # a loader by name on first use (`Route.lazy`) starts without one and fails only where it uses cuDNN
        first = " when it first uses cuDNN (it starts without one)" if route.lazy else ""
        finding = Finding(Code.CONSUMER_BROKEN, f"{consumer.label} finds no cuDNN{first}: {route.error or route.how}",
                          subject, _unreached(route, environ, python), severity=WARNING if route.lazy else ERROR)
        return Served(route, install, None, (), (finding,), frozenset())
    if route.stops is not None:  # its load by path ends the process there: the file's own fix is the framework's
        # (the file it opens by path, also where a shim already in the process answers its calls)
        killer = route.opened or route.shim
        about = next((f for f in install.findings if f.severity is ERROR and f.fix.actions
                      and posixpath.normpath(f.subject.path or "") == posixpath.normpath(killer)), None)
        opens = f"; its load by path opens {killer}" if killer != route.shim else ""
        holder = route.opened_holder  # set only where that file is not the shim
        finding = Finding(Code.CONSUMER_BROKEN, f"{consumer.label} stops as it starts: {route.how}{opens}, and "
                          f"{route.stops}", subject, about.fix if about is not None else
                          fix(reinstall(holder[0], holder[1], holder[2], consumer.pip_env, python=python))
                          if holder is not None else
                          fix(manual(f"put back {killer}: its distribution's file, whole")))
        return Served(route, install, None, (), (finding,), frozenset({posixpath.normpath(killer)}))
    # only the calls the framework makes, in their order: a call of the exercise it never makes neither loads what it
    # serves nor ends the process before the ones it does make (JAX on the H200 with the wheel's ops cut to 4 KiB died
    # of SIGBUS at its cudnnCreateTensorDescriptor; the exercise, killed at cudnnOpsVersionCheck before it, had JAX
    # working). The shim's own dlopen first, whatever else a framework calls: a shim that does not load (cut inside a
    # segment: SIGBUS) fails every framework that NEEDs it (the fix differential's 3-9362: torch judged to work on it)
    calls = FRAMEWORK_CALLS.get(consumer.framework) if install.major == 9 else None
    prediction = predict_install(install, ctx, gpu=gpu, calls=calls)
    made = list(prediction.expectations)
    # a call that fails for want of a driver or a GPU is the driver check's finding, not the framework's
    tolerated = TOLERATED.get(consumer.framework, frozenset())
    failing = tuple(e for e in made if call_fails(e) and e.cause != "libcuda.so.1" and (gpu or not e.call.needs_gpu)
                    and not (e.outcome == Effect.STATUS and e.call.function in tolerated))
    version = next((e for e in made if e.call.kind == "version"), None)
    release = decode_version(version.value) if version and version.value else install.release
    graph = _graph_step(install)
    rules = consumer_findings(consumer, release, install.major, environ=environ, device_count=device_count,
                              install_version=_wheel_version(install, graph), python=python)
    cure = _bundled_cure(route, install, environ, python) or _accepted(_cure(route, install, graph), consumer, python)
    # a loader by path that passed over its wheel's folder, closed to this user, and fell to another shim: the folder
    # opened, it finds its own first (the fix differential's 3-9269: torch as nobody, a lone shim in the working folder
    # through an empty LD_LIBRARY_PATH entry; that shim's install "put back whole" fixed nothing of torch's)
    opened = _opened(route.closed, consumer, python) if route.closed is not None else None
    source = _source(route, graph)
    findings = [replace(f, fix=opened or cure or f.fix, message=f.message + source)
                if f.code in _RELEASE_CODES and f.severity is ERROR else f for f in rules]
    loads = prediction.loads
    shim = install.file("shim")
    reached = {posixpath.normpath(shim.path)} if shim is not None else set()
    for expected in failing:
        load = loads.get(expected.cause or "")
        reached.add(f"{install.folder}/{expected.cause}")
        if load is not None and load.path:
            reached.add(posixpath.normpath(load.path))
        findings.append(_calls_fail(route, install, expected, cure, python, opened))
    if any(f.code in _RELEASE_CODES for f in rules) and graph is not None:  # the release seen is graph's
        reached |= {f"{install.folder}/graph"} | ({posixpath.normpath(graph.path)} if graph.path else set())
    if route.variable == "LD_PRELOAD" and any(f.severity is ERROR for f in findings):
        reached.add(posixpath.normpath(route.shim))
    if route.passed is not None and any(f.severity is ERROR for f in findings):
        # the shim its search would have loaded first
        reached |= {f"{route.passed}/shim", posixpath.join(route.passed, posixpath.basename(route.shim or ""))}
    if shim is not None and not any(f.severity is ERROR for f in findings):
        # a framework that works on its shim, whatever is wrong with the file (not the one pip installed: JAX on
        # a 9.14 shim copied over its wheel's 9.19, measured on the H200), is not failed by it
        reached.discard(posixpath.normpath(shim.path))
    reach = next((index for index, e in enumerate(made) if e in failing), len(made))
    return Served(route, install, release, failing, tuple(findings), frozenset(reached), reach)


def _unreached(route: Route, environ: Mapping[str, str], python: str | None) -> Fix:
    """What gives a framework that finds no cuDNN one: the shim folder on its sys.path that its search does not
    reach, put on LD_LIBRARY_PATH (or loaded by a function its package offers programs: ``preload_dlls()``);
    else the cuDNN it pins installed (`pinned_cudnn`), said in words when it pins none."""
    if route.unsearched is None and route.closed is not None:
        return _opened(route.closed, route.consumer, python)
    pinned = pinned_cudnn(route.consumer, python)
    if route.unsearched is None:
        return fix(pinned) if pinned is not None else fix(manual(f"install the cuDNN {route.consumer.label} needs"))
    value = route.unsearched + (f":{environ['LD_LIBRARY_PATH']}" if environ.get("LD_LIBRARY_PATH") else "")
    note = f"{route.unsearched} holds a cuDNN {route.consumer.framework}'s search does not reach"
    calls = [manual(f"call {call} in the program before its first use of cuDNN") for call in route.program_calls]
    other = _not_pinned(route.consumer, route.unsearched_holder)
    if pinned is not None and other is not None:
        # that copy is a wheel the framework's pin does not allow (cu12's in the user site for a cu13 torch: fix
        # differential 3-8695, whose plan then went on to install cuBLAS 12 beside it): the pinned wheel, in its
        # own site, and the copy as the alternative
        return fix(pinned, note=f"{note}, but it is {other}, which {route.consumer.label}'s pin does not allow",
                   alternatives=[set_variable("LD_LIBRARY_PATH", value), *calls])
    return fix(set_variable("LD_LIBRARY_PATH", value), note=note, alternatives=calls)


def _not_pinned(consumer: Consumer, holder: tuple[str, str] | None) -> str | None:
    """The distribution ``holder`` ("nvidia-cudnn-cu12 9.28.0.42"), when the consumer's pin does not allow it; None
    when it does, or none is known."""
    pin = next((pin for pin in consumer.pins if not pin.extras), None)
    if pin is None or holder is None:
        return None
    name, version = holder
    if project_name(name) == pin.distribution and pin.allows(version):
        return None
    return f"{name} {version}"


def _opened(closed: Closed, consumer: Consumer, python: str | None) -> Fix:
    """A wheel folder of the framework's search that this user cannot enter: the mode change, and its distribution
    put back whole (what it holds is unknown here: `readable_again`); when that distribution is not one the
    framework's pin allows, the pinned wheel instead of it."""
    pin = next((pin for pin in consumer.pins if not pin.extras), None)
    if pin is None or pin.allows(closed.holder.version):
        return readable_again(closed.stop, closed.user, closed.holder)
    pinned = pinned_cudnn(consumer, python)
    opened = readable_again(closed.stop, closed.user)
    return fix(*opened.actions, *((pinned,) if pinned is not None else ()), note=opened.note)


_RELEASE_CODES = (Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD, Code.CONSUMER_NEEDS_OTHER_MAJOR, Code.CONSUMER_PIN_UNMET,
                  Code.CONSUMER_KNOWN_BAD)


def call_fails(expected: Expectation) -> bool:
    """Whether the model predicts ``expected``'s call fails (a status other than success, an abort, a hang, no
    start); a value read, or a function absent, is no failure."""
    if expected.outcome in ("value", "absent"):
        return False
    if expected.outcome == Effect.STATUS:
        healthy = expected.call.healthy
        return expected.status not in (0, None) and not (healthy and expected.cause is None)
    return True


def _graph_step(install: Judged) -> Step | None:
    """The plan's step for graph (cuDNN 9): where cudnnGetVersion's answer comes from."""
    return next((s for s in install.plan if s.library == "graph"), None)


def _wheel_version(install: Judged, graph: Step | None) -> str | None:
    """The wheel version to check pins against exactly, when graph is the wheel's own."""
    if not install.distribution or (graph is not None and not graph.inside_install):
        return None
    return install.distribution.split()[-1]


def _source(route: Route, graph: Step | None) -> str:
    """Where the release it sees comes from, when not from the shim's own folder."""
    if route.variable == "LD_PRELOAD":
        return f" (the shim {route.shim}, put in the process by LD_PRELOAD)"
    if route.passed is not None and route.shim is not None:
        return (f" (from {route.shim}: the search tries {route.passed} first, and its "
                f"{posixpath.basename(route.shim)} {route.passed_why})")
    if graph is not None and not graph.inside_install and graph.path:
        by = "LD_PRELOAD" if graph.variable == "LD_PRELOAD" else graph.rule
        return f" (its graph {graph.path}, by {by})"
    return ""


def _cure(route: Route, install: Judged, graph: Step | None) -> Fix | None:
    """What gives the framework its own cuDNN back, when something put another in front of it: the
    LD_PRELOAD entry of a preloaded shim; the sys.path entry, before its own site-packages, whose copy its
    loader takes (`_earlier_entry`), with the LD_PRELOAD entry of a graph put in front of it (that stays in front
    of whatever the framework loads once the copy is gone); else the fix of the finding about the graph it gets."""
    if route.variable == "LD_PRELOAD" and route.entry:
        return fix(remove_entry("LD_PRELOAD", route.entry))
    earlier = _earlier_entry(route, install)
    about = None
    if graph is not None and not graph.inside_install:
        about = next((f for f in install.findings if f.subject.path == graph.path and f.fix and f.fix.actions),
                     None) or next((f for f in install.findings if f.subject.library == "graph" and f.fix
                                    and f.fix.actions), None)
    if earlier is not None:
        # the copy goes; a graph LD_PRELOAD puts in the process stays in front of whatever the framework loads then
        preloaded = [a for a in about.fix.actions if a.do is ActionKind.ENV_REMOVE_ENTRY
                     and a.variable == "LD_PRELOAD"] if about is not None else []
        return fix(earlier, *preloaded, note=_program_folder(route))
    return about.fix if about else None


def _bundled_cure(route: Route, install: Judged, environ: Mapping[str, str], python: str | None) -> Fix | None:
    """A shim the framework's wheel bundles alone (CTranslate2's auditwheel copy): it opens its sub-libraries by
    name, through LD_LIBRARY_PATH, the loader's cache and what the process has loaded already, never from a
    wheel's folder. The wheel folder on its sys.path that holds them (`Route.beside`), put on LD_LIBRARY_PATH;
    where none holds its major, in words: that major installed where it looks, or a release of the framework built
    for a major installed here (the survey's). None for any other route."""
    if route.kind != "bundled":
        return None
    consumer = route.consumer
    note = (f"{consumer.label} bundles cuDNN {install.release or install.major}'s shim alone; it finds its "
            "sub-libraries only by name")
    if route.beside is not None:
        value = route.beside + (f":{environ['LD_LIBRARY_PATH']}" if environ.get("LD_LIBRARY_PATH") else "")
        return fix(set_variable("LD_LIBRARY_PATH", value), note=f"{note}: {route.beside} holds cuDNN "
                   f"{install.major}'s")
    others = [f"{row.distribution} {row.version} (cuDNN {major})" for major in (9, 8) if major != install.major
              for row in releases_for_major(consumer.distribution, major)[:1]]
    instead = f", or install {' or '.join(others)} to use the cuDNN installed here" if others else ""
    cure = bundled_sublibraries(install, f"{consumer.framework}'s bundled shim", python, instead,
                                (install.bundler or (None, None))[1],
                                environ.get("HOME"), [e for e in environ.get("LD_LIBRARY_PATH", "").split(":") if e])
    return replace(cure, note=f"{note}; {cure.note}" if cure.note else note)


def _program_folder(route: Route) -> str | None:
    """Why the copy in the program's own folder is what the framework gets, when it is (``python -c`` run from a
    folder holding an unpacked nvidia/cudnn)."""
    if route.source is None or route.source.kind != "program":
        return None
    folder = "the current folder" if route.source.text in ("-c", "-m", "-") else "the script's folder"
    return (f"Python puts the program's own folder ({folder}) first on sys.path, and "
            f"{route.consumer.framework}'s loader takes the first cuDNN it finds there")


def _earlier_entry(route: Route, install: Judged) -> Action | None:
    """The change that takes away the sys.path entry a framework's loader found its cuDNN in, when that entry is
    not the framework's own site-packages and start-up put it there: the PYTHONPATH entry removed (a
    ``pip install --target`` folder), the user site's copy uninstalled, the ``.pth`` line removed."""
    source, entry, site = route.source, route.path_entry, route.consumer.site
    if source is None or entry is None or posixpath.normpath(entry) == posixpath.normpath(site):
        return None
    if source.kind == "pythonpath" and source.text is not None:
        return remove_entry("PYTHONPATH", source.text)
    if source.kind == "user-site" and install.distribution:  # the copy's own distribution, from that site
        return pip_uninstall([install.distribution.split()[0]], target=entry, python=install.pip_env[0])
    if source.kind in ("pth", "pth-import") and source.file is not None and source.text is not None:
        return remove_line(source.file, source.text)  # its path line, or the import line that put it there
    if source.kind in ("sitecustomize", "usercustomize") and source.file is not None:
        return manual(f"take out of {source.file} (run at every start of this Python) the code that puts {entry} "
                      "on sys.path")
    if source.kind == "program" and route.copy is not None:
        # the program's own folder, which Python puts first (the current folder for -c and -m, else the script's):
        # no setting takes that entry away without the program's own modules (PYTHONSAFEPATH), so the copy there
        # goes: its cuDNN files, or the link under the entry that leads to them (never the files of where it leads)
        path, names = route.copy
        return delete(path, names)
    return None


def _calls_fail(route: Route, install: Judged, expected: Expectation, cure: Fix | None,
                python: str | None = None, opened: Fix | None = None) -> Finding:
    consumer = route.consumer
    what = {"abort": "aborts", "sigbus": "kills the process (SIGBUS)", "hang": "hangs",
            "no-start": "cannot load the shim"}.get(str(expected.outcome), f"returns {expected.status}")
    gen = generation(install.major)
    if expected.outcome == Effect.STATUS and expected.status is not None:
        what = f"returns {expected.status} {gen.status_name(expected.status)}"
    cause = expected.cause or "?"
    about = next((f for f in install.findings if f.subject.library == cause and f.fix and f.fix.actions), None)
    said = f', after "{expected.message}"' if expected.message else ""
    own = about.fix if about and about.fix and route.kind != "bundled" else None  # a bundled shim's folder
    # never held its sub-libraries: nothing there is to put back
    if own is not None and _installs_refused(own, consumer):
        # the install put back as it was released would be a cuDNN the framework refuses: its own instead
        own = cure or _accepted(own, consumer, python)
    elif own is not None and not install.distribution and all(a.do is ActionKind.MANUAL for a in own.actions):
        own = _own_wheel_instead(consumer, own, python)
    return Finding(Code.FRAMEWORK_CALLS_FAIL, f"{consumer.label}: {expected.call.function} {what}{said} "
                   f"({cause} of cuDNN in {install.folder})",
                   Subject(SubjectKind.CONSUMER, consumer.site, name=consumer.label),
                   opened or own or cure or fix(manual("see the findings about " + cause)))


def _own_wheel_instead(consumer: Consumer, own: Fix, python: str | None) -> Fix:
    """A copy no package installed (cuDNN copied into torch/lib, reached by its RPATH's last entry ``$ORIGIN``)
    whose files only a person can make whole, met because the wheel the framework pins is not installed: that
    wheel, which its search finds first, with the copy made whole as the alternative (the fix differential's
    10-32: torch on a lone 9.28 shim in torch/lib after its cuDNN wheel was uninstalled)."""
    pin = next((pin for pin in consumer.pins if not pin.extras), None)
    pinned = pinned_cudnn(consumer, python) if pin is not None and pin.installed is None else None
    if pinned is None:
        return own
    return fix(pinned, note=f"{consumer.label}'s own cuDNN wheel ({pin.requirement}) is not installed" if pin else None,
               alternatives=own.actions)


def _accepted(repair: Fix | None, consumer: Consumer, python: str | None) -> Fix | None:
    """``repair`` where it installs no cuDNN release the framework's rules refuse; else with each such install
    replaced by the wheel the framework pins (`pinned_cudnn`: a folder holding a cuDNN 9.0 under the RECORD of
    the nvidia-cudnn-cu12 installed over torch's own cu13 wheel is put back as torch's wheel, not as 9.0); None
    where it pins none."""
    if repair is None or not _installs_refused(repair, consumer):
        return repair
    pinned = pinned_cudnn(consumer, python)
    if pinned is None:
        return None
    actions = list(dict.fromkeys(pinned if _installs_refused(Fix((a,)), consumer) else a for a in repair.actions))
    return Fix(tuple(actions), repair.note, repair.alternatives)


def _installs_refused(repair: Fix, consumer: Consumer) -> bool:
    """Whether ``repair`` installs a cuDNN release the framework's rules refuse (a distribution put back as it was
    released, ``nvidia-cudnn-cu12==9.0.0.312``, in the folder a torch built with 9.24 loads from); an exact pin
    names the release pip installs (`catalog.cudnn_pin`), a range's pip decides (the newest it finds)."""
    pins = (cudnn_pin(text) for action in repair.actions if action.do is ActionKind.PIP_INSTALL
            for text in action.requirements or ())
    return any(pin is not None and pin.release is not None and rejects(consumer, pin.release) for pin in pins)


def scope(findings: Sequence[Finding], served: Sequence[Served]) -> tuple[Finding, ...]:
    """The findings as they matter to the frameworks present: an error about a cuDNN file or install that no
    framework's calls reach becomes a warning, said so. Without frameworks, the findings as they are."""
    if not served:
        return tuple(findings)
    reached = frozenset().union(*(s.reached for s in served))
    names = ", ".join(s.route.consumer.label for s in served)
    working = frozenset(posixpath.normpath(s.route.shim) for s in served if s.route.shim and s.works)
    return tuple(_scoped(f, reached, names, working) for f in findings)


_FILE_KINDS = (SubjectKind.FILE, SubjectKind.INSTALL, SubjectKind.DISTRIBUTION)


def _scoped(finding: Finding, reached: frozenset[str], names: str, working: frozenset[str] = frozenset()) -> Finding:
    if finding.code is Code.NO_CUDNN and finding.severity is ERROR and (reached or working):
        return replace(finding, message=f"{finding.message}; {names} load their own", severity=WARNING)
    if finding.severity is not ERROR or finding.subject.kind not in _FILE_KINDS or not finding.subject.path:
        return finding
    path = finding.subject.path
    keys = _keys(finding)
    if posixpath.normpath(path) in reached or any(k in reached for k in keys):
        return finding
    if posixpath.normpath(path) in working:  # the shim a framework that works calls
        return replace(finding, message=f"{finding.message} ({names}: their calls load it and work)",
                       severity=WARNING)
    return replace(finding, message=f"{finding.message} (not reached by {names}: their calls do not load it)",
                   severity=WARNING)


def _keys(finding: Finding) -> Iterable[str]:
    library = finding.subject.library
    if library:
        folder = finding.subject.path if finding.subject.kind is SubjectKind.INSTALL else \
            posixpath.dirname(finding.subject.path or "")
        yield f"{folder}/{library}"
