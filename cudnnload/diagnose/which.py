"""Which file each cuDNN name resolves to for a given consumer, and by which rule.

The consumer is this Python process (default) or a shared object or program such as
``libtorch_cuda.so``. The shim is looked up as the consumer's ``dlopen`` (or DT_NEEDED entry)
would (resolve's linker); then the install that shim belongs to is gathered and judged by
`inventory.judged_install_of`, the code ``inspect`` uses, so ``which`` and ``inspect`` cannot disagree
about the same files: each sub-library as the shim's own run-time ``dlopen`` would get it (the part
``ldd`` cannot see). A consumer that is itself a cuDNN file (a shim or a sub-library, of any
generation) stands for the install it belongs to. What is said of the steps: `judge.which`.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from collections.abc import Mapping, Sequence

from cudnnload.diagnose.installer import by_installer
from cudnnload.diagnose.inventory import judged_install_of
from cudnnload.errors import UsageError
from cudnnload.judge.fixes import (
    WHEEL_LIB,
    cudnn_install,
    cudnn_requirement,
    pip_into,
    readable_again,
    reinstall,
    undo,
)
from cudnnload.judge.installs import whole
from cudnnload.judge.policy import Mapped, search_path_findings, untrusted_findings
from cudnnload.judge.which import Which, about, not_found, only_by_path, requested_names
from cudnnload.resolve import linker
from cudnnload.resolve.access import Access
from cudnnload.resolve.catalog import GENERATIONS, Generation, SubLibrary
from cudnnload.resolve.catalog import classify_bundled as classify
from cudnnload.resolve.consumers import bundled_folders
from cudnnload.resolve.discovery import (
    Context,
    Step,
    context,
    cudnn_wheel_site,
    make_step,
    requester,
    search_path_sites,
)
from cudnnload.resolve.mapped import mapped_libraries
from cudnnload.resolve.pythons import along_of, interpreter_of_site
from cudnnload.resolve.sources import Distribution, cudnn_distributions
from cudnnload.verdicts import Action, Finding, Fix, fix, pip_install, run, set_variable


def _unreadable(path: str, ctx: Context) -> str:
    """Why ``path`` cannot be read as a consumer: the file's problem, or the ELF reader's reason."""
    from cudnnload.errors import ElfError
    from cudnnload.files import path_problem

    problem = path_problem(path)
    if problem is not None:
        return problem[1]
    try:
        ctx.cache.inspect(os.path.realpath(path))
    except ElfError as exc:
        return f"not an ELF shared object or program: {exc.reason}"
    except OSError as exc:
        return exc.strerror or str(exc)
    return "cannot be read as an ELF shared object"


def consumer_generations(consumer: str, ctx: Context) -> tuple[int, ...]:
    """The cuDNN generations a consumer asks for: its own (a cuDNN file), or those it NEEDs, newest first;
    every generation when it NEEDs none (it may dlopen one by name)."""
    own = classify(os.path.basename(consumer))
    if own is not None:
        return (own.major,)
    try:
        needed = ctx.cache.inspect(os.path.realpath(consumer)).needed
    except (OSError, Exception):  # noqa: BLE001 (an unreadable consumer asks for every generation)
        needed = ()
    majors = sorted({lib.major for name in needed if (lib := classify(name))}, reverse=True)
    return tuple(majors) or (9, 8, 7)


def which(
    names: Sequence[str] = (),
    *,
    consumer: str | None = None,
    environ: Mapping[str, str] | None = None,
    site_paths: Sequence[str] | None = None,
    use_cache: bool = True,
    ctx: Context | None = None,
    python: str | None = None,
) -> Which:
    """Resolve cuDNN names (default: the newest generation's shim and every sub-library) as the consumer would.
    ``ctx``: the command's context, when it has one (`doctor`); else a process started now in ``environ`` that
    holds what this one has mapped of cuDNN (for no ``consumer``). ``python``: the interpreter whose environment a
    pip fix installs into (none: the fix names no interpreter). A ``consumer`` given relative is the file it names
    from the current folder (as `doctor` takes it): its $ORIGIN and its paths are that file's, not a search-path
    entry's."""
    if consumer is not None and "/" in consumer:
        consumer = os.path.abspath(consumer)
    if isinstance(names, str):  # one name, not its characters
        names = (names,)
    own = ctx is None  # a context made here is saved here; the command's own, by the command
    if ctx is None:
        mapped = mapped_libraries() if consumer is None else ()
        ctx = context(environ, use_cache=use_cache, loaded={os.path.basename(path): path for path in mapped
                                                            if os.path.basename(path).startswith("libcudnn")})
    loaded = {name: path for name, path in ctx.linker.loaded.items() if name.startswith("libcudnn")}
    consumer_path = consumer or sys.executable
    consumer_req = requester(consumer, ctx.cache) if consumer else None
    if consumer and consumer_req is None:
        raise UsageError(_unreadable(consumer, ctx), path=consumer,
                         fix="give a program or shared object (e.g. .../torch/lib/libtorch_cuda.so)")
    requested = requested_names(names)
    if requested:
        gens = sorted({lib.major for lib in requested}, reverse=True)
    else:
        gens = list(consumer_generations(consumer, ctx)) if consumer else [9, 8, 7]
    steps: list[Step] = []
    findings: list[Finding] = []
    for major in gens:
        gen = GENERATIONS[major]
        libs = tuple(lib for lib in requested if lib.major == major) if requested else gen.libraries
        shim_step = shim_for(gen, consumer, consumer_req, ctx, site_paths)
        if shim_step.path is None and not requested:
            continue  # this generation is not here; try the next older one
        steps += _resolve_generation(gen, libs, shim_step, ctx, findings, explicit=bool(requested),
                                     site_paths=site_paths, python=python)
        if not requested:
            break
    if not steps:
        gen = GENERATIONS[gens[0]] if gens else GENERATIONS[9]
        findings.append(not_found(gen, consumer_path, not_found_fix(gen, ctx, site_paths, python), generic=True))
    access = Access()
    findings += search_path_findings(ctx.linker, *([consumer_req] if consumer_req else []), access=access)
    # a name an empty or relative entry resolves is the current folder's file (install_of places the install)
    findings += untrusted_findings((Mapped(s.path, s.library, s.variable, s.entry) for s in steps
                                    if s.path is not None and not s.path.startswith("/")), access,
                                   ctx.linker.ld_library_path)
    if own:
        ctx.cache.save()
    return Which(consumer_path, tuple(sorted(loaded.values())), tuple(steps), tuple(by_installer(findings)))


def shim_for(gen: Generation, consumer: str | None, consumer_req: linker.Requester | None, ctx: Context,
             site_paths: Sequence[str] | None = None) -> Step:
    """The shim as the consumer's dlopen (or DT_NEEDED) would find it; None consumer: the executable asks.
    A consumer that is a cuDNN file of this generation stands for its own install's shim."""
    shim = gen.shim
    asker = consumer_req.path if consumer_req else sys.executable
    own = classify(os.path.basename(consumer)) if consumer else None
    if consumer and own is not None and own.major == gen.major:
        path = consumer if own.key == "shim" else os.path.join(os.path.dirname(consumer), shim.soname)
        res = linker.resolve(path, None, ctx.linker)
        return make_step("shim", asker, (shim.soname,), res, os.path.dirname(path), ctx)
    res = linker.resolve(shim.soname, linker.Chain((consumer_req,)) if consumer_req else None, ctx.linker)
    if res.path:
        return make_step("shim", asker, (shim.soname,), res, os.path.dirname(res.path), ctx)
    # Not on any linker path: frameworks (PyTorch, JAX) load the pip wheel's shim by absolute path, or reach the
    # copy their own wheel bundles through their RPATH (torch 1.x)
    sites = sys.path if site_paths is None else site_paths
    held = [(folder, f"pip wheel {dist.name} {dist.version}") for dist in cudnn_distributions(sites)
            for folder in dist.lib_folders]
    for folder, whose in [*held, *bundled_folders(sites)]:
        path = os.path.join(folder, shim.soname)
        if os.path.exists(path):
            return make_step("shim", asker, (shim.soname,), res, folder, ctx,
                             found=(path, f"by-path ({whose}; not on any linker path)"))
    return make_step("shim", asker, (shim.soname,), res, None, ctx)


def _resolve_generation(gen: Generation, libs: Sequence[SubLibrary], shim_step: Step, ctx: Context,
                        findings: list[Finding], explicit: bool, site_paths: Sequence[str] | None,
                        python: str | None = None) -> list[Step]:
    """Steps for ``libs`` from the install the shim belongs to; an optional library (ext, tensor_ir) that is
    nowhere is left out unless asked for. Findings: the install's, about these libraries."""
    if shim_step.path is None:
        findings.append(not_found(gen, shim_step.requested_by, not_found_fix(gen, ctx, site_paths, python)))
        return [shim_step] if any(lib.key == "shim" for lib in libs) else []
    if shim_step.rule.startswith("by-path"):
        findings.append(only_by_path(gen, shim_step))
    install = judged_install_of(shim_step.path, ctx,
                                f"as {os.path.basename(shim_step.requested_by or '?')} loads it")
    assert install is not None  # the shim's name is a cuDNN name
    steps = [shim_step] if gen.shim in libs else []
    keys = {lib.key for lib in libs}
    steps += [step for step in install.plan if step.library in keys]
    if explicit:
        planned = {step.library for step in install.plan}
        shim = install.file("shim")
        asked = shim.elf.names_release if shim is not None and shim.elf is not None else None
        steps += [make_step(lib.key, shim_step.path, lib.names_tried(asked or install.release),
                            linker.Resolution(lib.soname, None, "not-found"), None, ctx)
                  for lib in libs if lib.key not in planned and lib.key != "shim"]
    findings += about(install, keys)
    return steps


def beside_its_libraries(repair: Fix, path: str, gen: Generation, ctx: Context) -> Fix:
    """``repair`` of a shim this user cannot reach at ``path``, with what it will meet once reached, known without
    reaching it (the link and its folder, the process's preloads, are readable): where ``path`` is a symbolic link
    in a folder that holds none of its sub-libraries, the shim's ``$ORIGIN`` is the link's folder, so it would look
    for them there and not find them (the SIGABRT in cudnnGetVersion): the real folder goes first on
    LD_LIBRARY_PATH; a cuDNN sub-library of another folder that the process holds before it starts (LD_PRELOAD, a
    start-up file) would answer the shim's name for it (two folders' cuDNN in one process): it goes."""
    here = os.path.dirname(path)
    real = os.path.dirname(os.path.realpath(path))
    actions, notes = list(repair.actions), [repair.note] if repair.note else []
    if os.path.islink(path) and real != os.path.realpath(here) and not any(
            os.path.exists(os.path.join(here, lib.soname)) for lib in gen.sublibraries if lib.required):
        value = ":".join([real, *ctx.linker.ld_library_path]) if ctx.linker.ld_library_path else real
        actions.append(set_variable("LD_LIBRARY_PATH", value))
        notes.insert(0, f"{path} is a symbolic link: its $ORIGIN is {here}, which holds no sub-library, so {real} "
                        "goes first on LD_LIBRARY_PATH")
    strays = [p for p in ctx.preloads if p.path and (lib := classify(os.path.basename(p.path))) is not None
              and lib.major == gen.major and lib.key != "shim" and os.path.dirname(os.path.realpath(p.path)) != real]
    for stray in strays:
        if (gone := undo(stray)) is not None and gone not in actions:
            actions.append(gone)
            notes.append(f"{stray.path}, of another folder, is in the process before it starts and would answer "
                         f"the shim's {stray.soname or stray.name}")
    if actions == list(repair.actions):
        return repair
    return fix(*actions, note="; ".join(notes), alternatives=repair.alternatives)


def _hands_over(folder: str, value: str, gen: Generation, dists: Sequence[Distribution], ctx: Context) -> str | None:
    """Where ``LD_LIBRARY_PATH`` set to ``value`` (``folder`` first) for everyone would give the shim of another
    installed wheel of this generation, whole today when loaded by path, sub-libraries of ``folder`` (a shim's
    RUNPATH ``$ORIGIN`` comes after LD_LIBRARY_PATH: the fix differential's 13-7, torch's 9.24 wheel and a ``pip
    install --target`` 9.28 one, the app by path on the venv's shim broken by 9.28's folder put first for the app by
    name), that shim, in words; None where there is none. The model judges each such shim in both worlds."""
    world: Context | None = None
    for other in dists:
        for lib in other.lib_folders:
            shim = os.path.join(lib, gen.shim.soname)
            if os.path.realpath(lib) == os.path.realpath(folder) or not os.path.exists(shim):
                continue
            today = judged_install_of(shim, ctx, "loaded by path")
            if today is None or not whole(today):
                continue
            world = world or context({**ctx.environ, "LD_LIBRARY_PATH": value}, executable=ctx.linker.executable,
                                     cache=ctx.cache, verify=ctx.verify)
            then = judged_install_of(shim, world, "loaded by path")
            if then is not None and not whole(then):
                return (f"made for everyone, it would give programs that load {shim} ({other.name} {other.version}) "
                        f"by path sub-libraries from {folder} (LD_LIBRARY_PATH comes before its own folder)")
    return None


def not_found_fix(gen: Generation, ctx: Context, site_paths: Sequence[str] | None, python: str | None = None) -> Fix:
    """A shim no search finds. An installed wheel of this generation whose RECORD lists the shim but the file is
    gone (a partial uninstall, a deleted file) or is one the loader passes over (another machine's), on
    ``site_paths`` or under a search-path entry (an LD_LIBRARY_PATH entry that names a wheel's lib folder, or holds a
    link to its shim): that wheel put back, into the site that holds it, its folder put first where only a link
    reaches it;
    else the folder of an installed wheel that holds it on LD_LIBRARY_PATH (frameworks that load it by path find
    it anyway); else cuDNN installed (by ``python``'s pip, when given; for a program of no Python, into the site of
    a wheel folder on LD_LIBRARY_PATH whose wheel is gone, by that site's interpreter, else into the site of the
    shell's active Python environment with the wheel's folder put on LD_LIBRARY_PATH: a program asking by name
    finds a pip wheel only there)."""
    # a link to the shim on LD_LIBRARY_PATH leads to the wheel it is of (its folder itself on no search path)
    linked = [os.path.dirname(os.path.realpath(path)) for entry in ctx.linker.ld_library_path if entry.startswith("/")
              and os.path.islink(path := os.path.join(entry, gen.shim.soname))]
    sites = dict.fromkeys([*(sys.path if site_paths is None else site_paths),
                           *search_path_sites(ctx.linker.ld_library_path)])
    dists = cudnn_distributions(tuple(sites))
    access = Access()
    listed = [(dist, path) for dist in dists for path in dist.files if os.path.basename(path) == gen.shim.soname]
    entries = [os.path.join(entry, gen.shim.soname) for entry in ctx.linker.ld_library_path if entry.startswith("/")]
    beyond = [site for site in search_path_sites(linked) if site not in sites]  # the wheels the links lead to
    led = cudnn_distributions(tuple(beyond))
    for path in [*(path for _, path in listed), *entries]:
        if (stop := access.unreachable(path)) is not None:  # this user may not reach it; it may be there all the same
            # a link's distribution is its target's (the link itself is in no RECORD)
            owner = holder([*dists, *led], os.path.realpath(path))
            return beside_its_libraries(readable_again(stop, access.user, owner, gen.major), path, gen, ctx)
    listed += [(dist, path) for dist in led for path in dist.files if os.path.basename(path) == gen.shim.soname]
    if python is None:
        # a program of no Python searches its own folders, not the sites a Python sees: a wheel there put back does
        # not reach it while a wheel folder it is pointed at has lost its wheel (that one is put back, below), and
        # a wheel on its search path comes before one only a Python's sys.path holds (a PYTHONPATH folder's: fix
        # differential 3-8534, where the wheel on LD_LIBRARY_PATH held another machine's shim)
        # (and a wheel on no folder it searches is none of its business: put back, it would still not be found
        # there; fix differential 3-18637, no LD_LIBRARY_PATH, a --target folder whose shim another --target install
        # took: a whole wheel's folder is put on its path, below)
        searched = {os.path.realpath(folder) for folder in [*ctx.linker.ld_library_path, *linked]
                    if folder.startswith("/")}
        listed = [(dist, path) for dist, path in listed if os.path.realpath(os.path.dirname(path)) in searched]
    for dist, path in listed:
        why = f"{dist.name} {dist.version} lists {gen.shim.soname} in its RECORD, and it is gone" \
            if path in dist.missing else None
        if why is None and (passed := ctx.passed_over(path)) is not None:  # there, but not a file the loader maps
            why = f"{dist.name} {dist.version}'s {gen.shim.soname} is {passed}: the loader passes over it"
        if why is not None:
            return fix(reinstall(dist.name, dist.version, dist.site, dist.pip_env, along=dist.along),
                       *_folder_first(os.path.dirname(path), linked, ctx), note=why)
    # only a wheel that ships every sub-library its shim needs: the JIT wheel (no ops, cnn or adv) answers a program
    # by name with a cuDNN whose legacy calls all fail; the full wheel is then installed instead (below)
    needed = {lib.soname for lib in gen.sublibraries if lib.required}
    # (for a program of no Python, the wheels of the shell's Python too: it finds any only on its search path)
    shell = cudnn_distributions(tuple(site for site in (ctx.shell_site,) if site is not None and site not in sites))
    wheels = [*dists, *(shell if python is None else ())]
    for dist in (d for d in wheels if needed <= {os.path.basename(p) for p in d.files}):
        for folder in dist.lib_folders:
            if os.path.exists(os.path.join(folder, gen.shim.soname)):
                value = ":".join([folder, *ctx.linker.ld_library_path]) if ctx.linker.ld_library_path else folder
                note = f"the folder of {dist.name} {dist.version}, which no search reaches"
                # (the wheels of the shell's Python too: its programs load them by path)
                handed = _hands_over(folder, value, gen, [*dists, *shell], ctx)
                if handed is not None:  # for the program alone, the setting for everyone the alternative
                    return fix(run(["env", f"LD_LIBRARY_PATH={value}"]), note=f"{note}; for this program only: "
                               f"{handed}", alternatives=(set_variable("LD_LIBRARY_PATH", value),))
                return fix(set_variable("LD_LIBRARY_PATH", value), note=note)
    if python is None:  # a program of no Python: a wheel's folder it is pointed at is where its cuDNN goes back
        for entry in ctx.linker.ld_library_path:
            site = cudnn_wheel_site(entry) if entry.startswith("/") else None
            if site is not None and (put_back := wheel_put_back(
                    site, gen.major, f"{entry} is on LD_LIBRARY_PATH, and the cuDNN wheel it is the folder of is not "
                    "installed there")) is not None:
                return put_back
        requirement = cudnn_requirement(gen.major, None)
        if ctx.shell_site is not None and ctx.shell_pip[0] is not None and requirement is not None:
            folder = posixpath.join(ctx.shell_site, WHEEL_LIB)
            return fix(pip_install([requirement], target=ctx.shell_site, python=ctx.shell_pip[0]),
                       set_variable("LD_LIBRARY_PATH", ":".join([folder, *ctx.linker.ld_library_path])),
                       note=f"a program that asks for {gen.shim.soname} by name finds a pip wheel only on its "
                            "search path")
        # no Python environment of the user's to put it in: a folder of its own, by the python3 on PATH, and that
        # folder's library folder on the search path (the wheel's RUNPATH finds its cuBLAS and NVRTC beside it)
        own = _own_folder(gen, ctx.environ)
        if own is not None and requirement is not None:
            folder = posixpath.join(own[1], WHEEL_LIB)
            return fix(pip_install([requirement], target=own[1], python=own[0]),
                       set_variable("LD_LIBRARY_PATH", ":".join([folder, *ctx.linker.ld_library_path])),
                       note="a program that is no Python's finds a pip wheel only on its search path: the wheel "
                            "installed into a folder of its own, and its library folder put on LD_LIBRARY_PATH "
                            "for this program (or in the shell profile that starts it)")
    return cudnn_install(gen.major, None, python)


def wheel_put_back(site: str, major: int, note: str) -> Fix | None:
    """The cuDNN wheel of ``major`` installed again into the pip site ``site`` (its folder gone, or a program
    pointed at it), by whoever installs there, of the CUDA major the site's other NVIDIA wheels are built for (the
    cuBLAS beside it: `-cu12`, or `nvidia-cublas` 13), with --force-reinstall: the same wheel installed in another
    site this interpreter sees (the user's site) would make pip call it satisfied and put nothing here; None where no
    wheel or no interpreter is known."""
    if not os.path.isdir(site):
        return None
    requirement = cudnn_requirement(major, site_cuda(site))
    pip_env = interpreter_of_site(site)
    if requirement is None or pip_env[0] is None:
        return None
    return fix(pip_into([requirement], site, pip_env, options=("--force-reinstall",), along=along_of(site, pip_env)),
               note=note)


def site_cuda(site: str) -> int | None:
    """The CUDA major the NVIDIA wheels installed in the pip site ``site`` are built for (the newest where several:
    their dist-info names, ``nvidia_cudnn_cu12-...``, ``nvidia_cublas-13....``); None where none says."""
    try:
        names = os.listdir(site)
    except OSError:
        return None
    cudas = sorted({int(m.group(1)) for name in names if (m := re.match(r"nvidia_\w+?_cu(\d+)-", name))} |
                   {13 for name in names if re.match(r"nvidia_cublas-13\.", name)})
    return cudas[-1] if cudas else None


def _own_folder(gen: Generation, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(the python3 on PATH, ``~/.local/lib/nvidia-cudnn-MAJOR``): where pip puts a cuDNN wheel for a program of no
    Python; None without a home folder or a python3 (cudnnload's own environment's is never offered)."""
    from cudnnload.resolve.pythons import python_on_path, tool_environment

    home = environ.get("HOME", "")
    installer = python_on_path(environ, outside=tool_environment(environ))
    if not home.startswith("/") or installer is None:
        return None
    return installer, posixpath.join(home, ".local", "lib", f"nvidia-cudnn-{gen.major}")


def _folder_first(folder: str, linked: Sequence[str], ctx: Context) -> tuple[Action, ...]:
    """A wheel's ``folder`` put first on LD_LIBRARY_PATH where a program by name reaches its shim only through a
    link in another entry (``linked``: the folders such links lead to): the link's ``$ORIGIN`` is the link's folder,
    where the shim's sub-libraries are not. None where no link leads there, or the folder is on the path already."""
    real = os.path.realpath(folder)
    entries = ctx.linker.ld_library_path
    if real not in linked or any(os.path.realpath(e) == real for e in entries if e.startswith("/")):
        return ()
    return (set_variable("LD_LIBRARY_PATH", ":".join([folder, *entries])),)


def holder(dists: Sequence[Distribution], path: str) -> Distribution | None:
    """The distribution whose RECORD lists ``path``, or whose lib folder would hold it."""
    folder = os.path.dirname(path)
    return next((d for d in dists if path in d.files), None) or next((d for d in dists if folder in d.lib_folders),
                                                                   None)
