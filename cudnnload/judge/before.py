"""What a pip set would do, said before it is installed: findings from `resolve.planned`'s facts.

Each framework is judged on the cuDNN its own loader would get in the new environment, by the rules `doctor`
applies once it is installed (`frameworks.consumer_findings`: pins, the major its libraries NEED, its build
against the runtime); files two distributions write are the ``record-conflict`` `doctor` will report, and the
fix is derived by trying each of them as the last one installed (``outcomes``): where one leaves every framework
working, putting its files back last is the fix; where none does, the frameworks need environments of their own.
The driver is judged on the CUDA inside the cuDNN each framework gets and on each framework's own CUDA build.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.fixes import cudnn_requirement
from cudnnload.judge.frameworks import consumer_findings
from cudnnload.judge.gpu import MIN_DRIVER_BRANCH, driver_findings
from cudnnload.resolve.catalog import dependency_requirement
from cudnnload.resolve.consumers import FRAMEWORKS
from cudnnload.resolve.hardware import GpuFacts, cuda_text
from cudnnload.resolve.planned import CudnnSeen, Overwrite, Way
from cudnnload.resolve.rootview import Stale
from cudnnload.resolve.wheelfacts import CudnnBuild
from cudnnload.verdicts import ERROR, INFO, Finding, Fix, Subject, fix, manual, pip_install, set_variable


def way_findings(way: Way, *, python: str | None, library_path: str = "") -> tuple[Finding, ...]:
    """One framework's cuDNN before the install: found or not, whole, of one release, with its cuBLASLt, and
    accepted by the framework's own rules. ``library_path``: LD_LIBRARY_PATH as the program will have it."""
    consumer = way.consumer
    subject = Subject(SubjectKind.CONSUMER, consumer.site, name=consumer.label)
    found: list[Finding] = []
    if way.survey is not None and not way.survey.exact:
        found.append(Finding(Code.NOT_SURVEYED, f"{consumer.label} was not surveyed: its loader is judged by the "
                             f"nearest surveyed release, {way.survey.wheel.version} "
                             f"({way.survey.wheel.provenance.wheel})", subject))
    seen = way.cudnn
    if seen is None:
        if way.error is not None and way.survey is not None:
            found.append(Finding(Code.NOT_FOUND, f"{consumer.label} would find no cuDNN: {way.error} ({way.how})",
                                 subject, _reach(way, python, library_path)))
        elif way.survey is None:
            found.append(Finding(Code.NOT_SURVEYED, f"{way.error}: what it loads is not predicted", subject))
        return tuple(found)
    where = Subject(SubjectKind.INSTALL, seen.folder, name=seen.distribution)
    if seen.missing:
        found.append(Finding(Code.MISSING_SUBLIBRARY, f"{consumer.label} gets the cuDNN shim {seen.shim}, which would "
                             f"find no {', '.join(seen.missing)} (its folder, LD_LIBRARY_PATH, ld.so.cache and the "
                             "default folders hold none): its first call that needs one fails", where,
                             _whole(seen, way, python)))
    for name, other_dist, other in seen.other_releases:
        found.append(Finding(Code.MIXED_RELEASE, f"{posixpath.join(seen.folder, name)} would be {other_dist}'s "
                             f"(cuDNN {other}) beside cuDNN {seen.release} of {seen.distribution}", where,
                             fix(pip_install([_exact(seen.distribution)], options=("--force-reinstall", "--no-deps"),
                                             python=python)) if seen.distribution else fix()))
    if seen.cublaslt is not None and seen.cublaslt[1].path is None:
        soname = seen.cublaslt[0]
        requirement = dependency_requirement(soname)
        found.append(Finding(Code.MISSING_DEPENDENCY, f"cuDNN {seen.release} ({seen.distribution}) opens {soname} "
                             "for its engines; neither the set nor this machine would give one", where,
                             fix(pip_install([requirement], python=python)) if requirement else fix()))
    if consumer.framework in FRAMEWORKS and seen.release is not None:
        version = seen.distribution.split(" ", 1)[1] if seen.distribution else None
        found += consumer_findings(consumer, seen.release, seen.release.major, install_version=version, python=python)
    return tuple(found)


def _exact(label: str | None) -> str:
    name, _, version = (label or "").partition(" ")
    return f"{name}=={version}"


def _reach(way: Way, python: str | None, library_path: str) -> Fix:
    """What gives a framework that finds no cuDNN the one its set installs: the folder on its search path where
    the set writes one of its major; else its pin (or the cuDNN of its CUDA) installed."""
    consumer = way.consumer
    pinned = next((pin.requirement for pin in consumer.pins if pin.major == consumer.cudnn_major), None)
    installing = fix(pip_install([pinned], python=python)) if pinned else fix(manual(
        f"install cuDNN {consumer.cudnn_major} for CUDA {way.cuda_major}")) if cudnn_requirement(
        consumer.cudnn_major, way.cuda_major) is None else fix(pip_install(
            [str(cudnn_requirement(consumer.cudnn_major, way.cuda_major))], python=python))
    folder = way.installed_folder(consumer.cudnn_major)
    if folder is None:
        return installing
    value = folder + (f":{library_path}" if library_path else "")
    return fix(set_variable("LD_LIBRARY_PATH", value), note=f"the set installs cuDNN in {folder}, where "
               f"{consumer.framework}'s loader does not look")


def _whole(seen: CudnnSeen, way: Way, python: str | None) -> Fix:
    """The sub-libraries a bundled or stray shim cannot find: the folder of the set's cuDNN of its major on the
    search path, or that cuDNN installed."""
    major = int(seen.missing[0].rsplit(".so.", 1)[1])
    requirement = cudnn_requirement(major, way.cuda_major)
    folder = way.installed_folder(major)
    if folder is not None:
        return fix(set_variable("LD_LIBRARY_PATH", folder), note="the sub-libraries are there, where the shim does "
                   "not look")
    return fix(pip_install([requirement], python=python), note="then put its nvidia/cudnn/lib on LD_LIBRARY_PATH") \
        if requirement else fix(manual(f"install a whole cuDNN {major} where the shim looks"))


def overwrite_findings(overwrites: Sequence[Overwrite], outcomes: Mapping[str, bool], *, site: str,
                       python: str | None) -> tuple[Finding, ...]:
    """Files two distributions of the set write, as `doctor` will report them once installed; ``outcomes``: for
    each distribution of a pair, whether every framework works when it is installed last (its files stay)."""
    found = []
    for pair in overwrites:
        folders = sorted({posixpath.dirname(path) for path in pair.paths})
        first_name, last_name = pair.first.split(" ")[0], pair.last.split(" ")[0]
        said = f"{pair.first} and {pair.last} both write {len(pair.paths)} files with other bytes (in " \
               f"{', '.join(folders[:3])}{' ...' if len(folders) > 3 else ''}); pip installs {last_name} last, so " \
               f"its files stay" + (f" ({pair.same} more are the same bytes)" if pair.same else "")
        subject = Subject(SubjectKind.DISTRIBUTION, posixpath.join(site, pair.paths[0]),
                          name=f"{pair.first} and {pair.last}")
        if outcomes.get(last_name, True):
            repair = fix(note=f"every framework of the set works with {last_name}'s files; {first_name} is "
                              "overwritten: keep one cuDNN distribution per environment")
        elif outcomes.get(first_name):
            repair = fix(pip_install([_exact(pair.first)], options=("--force-reinstall", "--no-deps"), python=python),
                         note=f"after the install: {first_name}'s files back last, with which every framework of the "
                              "set works")
        else:
            repair = fix(manual(f"install the frameworks that need {first_name} and those that need {last_name} in "
                                "separate environments: neither one's files serve them all"))
        found.append(Finding(Code.RECORD_CONFLICT, said, subject, repair))
    return tuple(found)


def driver_needs(ways: Sequence[Way], staying: Sequence[tuple[str, CudnnBuild]], facts: GpuFacts | None, *,
                 given: bool, python: str | None) -> tuple[Finding, ...]:
    """The driver against the CUDA inside each cuDNN the set leaves (its cudnnGetCudartVersion) and each
    framework's own CUDA build; said as information when there is no driver to judge against."""
    builds = {(build.cudart_version, build.release, label) for label, build in staying if build.cudart_version}
    majors = {way.cuda_major: way.consumer.label for way in ways if way.cuda_major}
    need = max([cudart // 1000 for cudart, _, _ in builds] + list(majors), default=None)
    if need is None:
        return ()
    subject = Subject(SubjectKind.DRIVER, None, name="the NVIDIA driver")
    branch = MIN_DRIVER_BRANCH.get(need)
    if facts is None or facts.driver_version is None:
        return (Finding(Code.NO_DRIVER, f"no NVIDIA driver here to judge the set against: it needs one for CUDA "
                        f"{need} ({branch or '?'} or newer); give --driver VERSION", subject, fix(), severity=INFO),)
    found = [f for cudart, release, _ in sorted(builds, key=str)
             for f in driver_findings(facts, cudart, release=release, python=python)]
    have = facts.driver_version // 1000
    source = "given with --driver" if given else "this machine's"
    for major, label in sorted(majors.items()):
        if have < major:
            found.append(Finding(Code.DRIVER_TOO_OLD, f"{label} is built for CUDA {major}; the driver ({source}) "
                                 f"supports CUDA {cuda_text(facts.driver_version)}", subject,
                                 fix(manual(f"upgrade the NVIDIA driver to {MIN_DRIVER_BRANCH.get(major, '?')} or "
                                            "newer"), alternatives=[manual(f"install a build of {label.split()[0]} "
                                                                          f"for CUDA {have}")])))
    return tuple(found)


def failing(findings: Sequence[Finding]) -> bool:
    return any(f.severity is ERROR for f in findings)


def stale_findings(stale: Sequence[Stale], *, ldconfig_at_start: bool) -> tuple[Finding, ...]:
    """``ld.so.conf`` folders whose libraries the image's ``ld.so.cache`` lacks: found only once ``ldconfig``
    runs, which the NVIDIA container toolkit does at start (``ldconfig_at_start``) and a plain run does not."""
    when = "this judgement counts them, as the NVIDIA container toolkit runs ldconfig when the container starts" \
        if ldconfig_at_start else "a container started without the NVIDIA container toolkit finds none of them"
    return tuple(Finding(Code.LDCACHE_STALE, f"{s.named_by} names {s.folder}, whose {', '.join(s.sonames[:4])}"
                         f"{' ...' if len(s.sonames) > 4 else ''} the image's /etc/ld.so.cache does not list: {when}",
                         Subject(SubjectKind.INSTALL, s.folder),
                         fix(manual("run ldconfig when building the image (RUN ldconfig, after the files are in "
                                    "place)")))
                 for s in stale)
