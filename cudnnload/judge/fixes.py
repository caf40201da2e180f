"""Fixes as actions, derived from the facts of the case: which package provides what, for which cuDNN
generation and CUDA major; which distribution owns a damaged file and where it lives; which entry of which
variable gave the wrong file. Pure: every decision reads facts handed in, never the disk.

What PyPI has (checked 2026-11-24 with ``pip index versions``): cuDNN 8 as nvidia-cudnn-cu11 (8.5 - 8.9.6)
and nvidia-cudnn-cu12 (8.9.x); cuDNN 9 as nvidia-cudnn-cu11 (9.0 - 9.10), -cu12 and -cu13; no cuDNN 7 and
nothing for CUDA 10. cuBLAS as nvidia-cublas-cu11, -cu12 and (CUDA 13) nvidia-cublas; NVRTC as
nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvrtc; the CUDA runtime as nvidia-cuda-runtime-cu11/-cu12 and
nvidia-cuda-runtime.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Iterable, Sequence

from cudnnload.resolve.access import Unreachable
from cudnnload.resolve.catalog import (
    DEPENDENCY_SOURCES,
    Release,
    classify,
    dependency_folder,
    dependency_requirement,
    distribution_cuda,
    nvrtc_soname,
    parse_release,
)
from cudnnload.resolve.discovery import Install
from cudnnload.resolve.process import Preload
from cudnnload.resolve.published import THIS_MACHINE, published
from cudnnload.resolve.sources import Distribution
from cudnnload.verdicts import (
    Action,
    Fix,
    chmod,
    delete,
    fix,
    manual,
    pip_install,
    relink,
    remove_entry,
    remove_line,
    run,
    set_variable,
)

# cuDNN generation -> CUDA majors it has pip wheels for
_CUDNN_WHEELS = {8: (11, 12), 9: (11, 12, 13)}
_NEWEST_CUDA = 13


def bundled_sublibraries(install: Install, looks: str = "the bundled shim", python: str | None = None,
                         instead: str = "", cuda: int | None = None, home: str | None = None,
                         search_path: Sequence[str] = ()) -> Fix:
    """The sub-libraries of ``install``'s release, for a shim a wheel bundles alone (auditwheel's copy), installed
    where ``looks`` (that shim) finds them: by name, through LD_LIBRARY_PATH. Their wheel is of the CUDA the copy was
    built for, read from it (cuDNN's own CUDART_VERSION constant), else ``cuda`` (the CUDA the program that bundles it
    was built for). With a home folder and the environment's interpreter (``python``), as actions: that wheel, with
    the cuBLAS and NVRTC it requires, into ``~/.local/lib/nvidia-cudnn-RELEASE`` (the recipe of faster-whisper's
    README, in a folder of its own), and its cuDNN and cuBLAS folders first on LD_LIBRARY_PATH (``search_path``: the
    entries there now, kept after them); else in words, the CUDA major the user's NN where nothing says it."""
    cudart = next((c.elf.cudart_version for c in install.files if c.elf and c.elf.cudart_version), None)
    cuda = cudart // 1000 if cudart else cuda
    release = install.release or install.major
    requirement = cudnn_requirement(install.major, cuda, install.release) if cuda is not None else None
    if cuda is not None and requirement is None:  # no wheel of that release for that CUDA installs here
        return fix(manual(f"no pip wheel of cuDNN {release} for CUDA {cuda} installs on this machine: take its "
                          f"sub-libraries from NVIDIA's archive of it for CUDA {cuda} (cudnn-linux-{THIS_MACHINE[0]}-"
                          f"{release}.*_cuda{cuda}-archive.tar.xz, developer.download.nvidia.com/compute/cudnn/redist/"
                          f"cudnn/) and put its lib folder on LD_LIBRARY_PATH where {looks} looks{instead}; or use a "
                          "release of the program built for a cuDNN that has wheels"))
    if cuda is not None and requirement is not None and home and home.startswith("/") and python:
        folder = posixpath.join(home, ".local", "lib", f"nvidia-cudnn-{release}")
        # the folders pip puts cuDNN and what it requires in (cuBLAS and NVRTC: CUDA 13's share nvidia/cu13/lib)
        needed = (dependency_requirement(f"libcublasLt.so.{cuda}"), dependency_requirement(nvrtc_soname(cuda)))
        libs = [posixpath.join(folder, WHEEL_LIB), *(dependency_folder(r, folder) for r in needed if r)]
        value = ":".join(dict.fromkeys([*libs, *search_path]))
        return fix(pip_install([requirement], options=("--upgrade",), target=folder,
                               python=python), set_variable("LD_LIBRARY_PATH", value),
                   note=f"the sub-libraries of cuDNN {release} for CUDA {cuda}, with the cuBLAS and NVRTC they need, "
                        f"in a folder of their own on LD_LIBRARY_PATH, where {looks} looks{instead}")
    wheel = f"nvidia-cudnn-cu{cuda}" if cuda else "nvidia-cudnn-cuNN"
    built = "" if cuda else " (NN: the CUDA major of the program's build)"
    return fix(manual(f"install cuDNN {install.major}'s sub-libraries where {looks} looks: `{python or 'python'} -m "
                      f"pip install --no-deps --target DIR '{wheel}=={release}.*'`{built} and put DIR/nvidia/cudnn/lib "
                      f"on LD_LIBRARY_PATH{instead}"))


def cudnn_requirement(major: int, cuda: int | None, release: Release | None = None) -> str | None:
    """The pip requirement for cuDNN ``major`` built for CUDA ``cuda`` (the newest CUDA with wheels when
    unknown), exactly ``release`` when given; None when no wheel exists (cuDNN 7, CUDA 10) or none that installs on
    this machine (`resolve.published`: nvidia-cudnn-cu11 has no 8.9.7, no aarch64 wheels; 9.25.0 was yanked)."""
    majors = _CUDNN_WHEELS.get(major)
    if majors is None:
        return None
    cuda = cuda if cuda is not None else (_NEWEST_CUDA if major >= 9 else 12)
    if cuda not in majors or published(cuda, release, major) is False:
        return None  # none was made, or none installs here (its architecture, its glibc; yanked)
    name = f"nvidia-cudnn-cu{cuda}"
    if release is not None:  # a wheel's version has a fourth part, its build: 9.28.0.42 is a 9.28.0
        return f"{name}=={release}.*"
    return f"{name}>={major},<{major + 1}"


def unversioned_link(soname: str, beside: str, versioned: str | None, cuda: int | None = None,
                     site: str | None = None, pip_env: PipEnv = (None, ()),
                     along: tuple[str, ...] | None = None) -> Fix:
    """A library opens ``soname``, a development link's unversioned name, from ``beside`` (its own folder, which
    its search reaches first): the link to make there, to ``versioned`` (the driver's libcuda.so.1, the NVRTC of
    that CUDA found elsewhere), as a ``relink`` a tool can make. Where no NVRTC is found: the NVRTC wheel of that
    CUDA installed into the install's ``site`` by its own interpreter (``pip_env``; pip merges the ``nvidia``
    folder there), or with ``--target`` along with the distributions its ``nvidia`` folder holds (``along``:
    `pip_into`), and the link made to the file pip puts there; else in words."""
    where = posixpath.join(beside, soname)
    if soname == "libcuda.so":
        return fix(relink(where, versioned) if versioned else manual(f"link {where} to the driver's libcuda.so.1"),
                   note="or install the driver's development package, which puts libcuda.so beside libcuda.so.1")
    toolkit = "or install the CUDA toolkit, whose development package puts libnvrtc.so on the search path"
    if versioned:
        return fix(relink(where, versioned), note=toolkit)
    requirement = dependency_requirement(f"libnvrtc.so.{cuda}") if cuda else None
    into_site = pip_env[0] is not None and not pip_env[1] or pip_env == (None, ()) and along is not None
    if requirement is not None and site is not None and into_site:
        installed = posixpath.join(dependency_folder(requirement, site), nvrtc_soname(cuda or 0))
        return fix(pip_into([requirement], site, pip_env, options=DEPENDENCY_OPTIONS, along=along),
                   relink(where, installed), note=toolkit)
    major = str(cuda) if cuda else "XX"
    return fix(manual(f"install NVRTC of this CUDA (pip install nvidia-cuda-nvrtc-cu{major}) and link it: ln -s "
                      f"<site-packages>/nvidia/cuda_nvrtc/lib/libnvrtc.so.{major}.* {where}"), note=toolkit)


def dependency_manual(soname: str, requirement: str | None = None) -> Action:
    """A dependency no pip action can provide where it is needed: what to do, in words. ``requirement``: the
    pip distribution that has it, for a cuDNN pip does not own (found on its own search path only)."""
    if soname.startswith("libcuda.so"):
        return manual("install the NVIDIA driver (libcuda.so.1 comes only with it)")
    if requirement is not None:
        return manual(f"install {soname} where this cuDNN finds it: pip install {requirement} and add the folder "
                      f"that holds {soname} to LD_LIBRARY_PATH, or the CUDA toolkit that has it")
    known = DEPENDENCY_SOURCES.get(soname)
    if known is not None:
        return manual(f"install {known}")
    return manual(f"install the package that provides {soname} (for a CUDA library: the CUDA toolkit of that "
                  "version), or add the folder that holds it to LD_LIBRARY_PATH")


# Where every nvidia-cudnn-cuNN wheel (8.5 to 9.28, cu11 to cu13) puts its libraries, under site-packages
# (their RECORDs; cudnn-facts, the wheel table); the JIT wheel uses nvidia/cudnn_jit/lib instead.
WHEEL_LIB = "nvidia/cudnn/lib"


# who installs into a site-packages folder: (its interpreter, the pip options choosing the folder), as
# `resolve.pythons.interpreter_of_site` finds it
PipEnv = tuple[str | None, tuple[str, ...]]


def removal(source: str, entry: str, line: str | None = None) -> Action:
    """Taking a preload away: its LD_PRELOAD entry, or the line of /etc/ld.so.preload (root's file, rule
    ld-so-preload) that holds that entry alone (``line``), taken out; said in words where the line holds more."""
    if source == "LD_PRELOAD":
        return remove_entry("LD_PRELOAD", entry)
    if line is not None:
        return remove_line(source, line)
    return manual(f"remove {entry} from {source} (as root): every program on this machine preloads it")


def undo(preload: Preload) -> Action | None:
    """What takes an object out of the process before the program starts: its LD_PRELOAD entry removed, the
    ``.pth`` line that loaded it at Python's start-up removed, the line of sitecustomize or usercustomize whose
    call loaded it removed (when start-up's observation found one that can go alone), or else that code said in
    words; None for what nothing named put there."""
    if preload.entry is not None:
        return removal(preload.source, preload.entry, preload.line)
    cause = preload.cause
    if cause is None or cause.file is None:
        return None
    if cause.kind in ("pth-import", "sitecustomize", "usercustomize") and cause.text:
        return remove_line(cause.file, cause.text)
    return manual(f"take out of {cause.file} ({cause.kind}, run at every start of this Python) the code that "
                  f"loads {preload.path}")


def pip_into(requirements: list[str], site: str | None, pip_env: PipEnv, *, options: tuple[str, ...] = (),
             python: str | None = None, along: tuple[str, ...] | None = (),
             elsewhere: Collection[str] = ()) -> Action:
    """pip's install of ``requirements`` into the site-packages folder ``site`` by whoever installs there (the
    venv's interpreter, ``pythonX.Y --user``, ``--target``); ``python`` only where the folder has no interpreter
    of its own and the caller knows the program's. An NVIDIA wheel into a ``--target`` folder whose ``nvidia``
    folder the distributions ``along`` hold (`pythons.along_in_target`): those too, with ``--upgrade``, the one way
    pip --target puts a wheel's files into a folder that is already there (it replaces it whole); in words where
    that folder holds what no distribution lists (None). Any other distribution into a ``--target`` folder: with
    ``--upgrade`` too, and the distributions ``along`` whose files share its top-level folders
    (`pythons.sharing_in_target`). A requirement the interpreter counts as installed from another of its folders
    (``elsewhere``: `Install.elsewhere`, a wheel in its user site) gets ``--ignore-installed``: pip would otherwise
    say it is satisfied and put nothing into ``site`` (fix differential 3-14662)."""
    own, how = pip_env
    if "--ignore-installed" not in options and any(project_name(r) in elsewhere for r in requirements):
        options = (*options, "--ignore-installed")
    target = own is None and not how and site is not None
    # an NVIDIA wheel into a --target folder (the names are parsed only there)
    nvidia = target and any(project_name(requirement).startswith("nvidia-") for requirement in requirements)
    if (nvidia and along) or (target and not nvidia):
        # another distribution (a framework put back) replaces its own top-level folders whole, with the
        # distributions ``along`` whose files are in them too (`pythons.sharing_in_target`)
        named = {project_name(requirement) for requirement in requirements}
        requirements = [*(a for a in along or () if project_name(a) not in named), *requirements]
        options = (*options, "--upgrade")
    elif nvidia and along is None:
        return manual(f"pip install --target {site} would keep its nvidia folder, which holds files no installed "
                      f"distribution lists, and put nothing into it: install {' '.join(requirements)} with --target "
                      f"into an empty folder and move what it puts under nvidia/ into {site}/nvidia")
    return pip_install(requirements, options=(*options, *how), target=site, python=own or python)


def project_name(requirement: str) -> str:
    """The distribution a requirement names, as pip compares names (``nvidia_cudnn_cu12>=9``: nvidia-cudnn-cu12);
    a text pip could not read as one, lowercased (it names no distribution another can match)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return str(canonicalize_name(Requirement(requirement).name))
    except InvalidRequirement:
        return requirement.lower()


# pip counts a distribution on any sys.path entry of its interpreter as installed (a PYTHONPATH folder's, the user
# site's: "Requirement already satisfied", and nothing lands where the library is needed). A CUDA library is put into
# the site that needs it whatever pip finds elsewhere, and alone: what the site has of its own dependencies stays.
DEPENDENCY_OPTIONS = ("--ignore-installed", "--no-deps")


def dependency_into(requirement: str, site: str | None, pip_env: PipEnv, *, python: str | None = None,
                    along: tuple[str, ...] | None = ()) -> Action:
    """pip's install of the distribution that has a CUDA library (`catalog.dependency_requirement`) into ``site``."""
    return pip_into([requirement], site, pip_env, options=DEPENDENCY_OPTIONS, python=python, along=along)


def make_readable(stop: Unreachable, user: int) -> Action:
    """The mode change that lets the user reach a library: the folder searchable (0755) or the file readable
    (0644), run by its owner (or root) when it is not the user's; never a reinstall, which that user may not do and
    which leaves the mode as it was."""
    return chmod(stop.path, 0o755 if stop.folder else 0o644, owner=None if stop.owner == user else stop.owner_name)


def readable_again(stop: Unreachable, user: int, holder: Distribution | None = None,
                   wanted: int | None = None) -> Fix:
    """A library this user cannot reach: the mode change (`make_readable`). When what stops it is a folder or a
    file of a pip distribution (``holder``), what it holds cannot be seen from here (a file gone, another machine's
    or release's copied in under its name, of the same size or not): that distribution is then put back as its
    RECORD says, by the same owner, so that it is whole whatever it held (its RECORD, beside the folder, is
    readable; `unknown_put_back`). Where the library asked for is of another cuDNN generation, ``wanted``, than the
    distribution there (8.9.7 installed over the 9 wheel of the same name), putting that one back gives no such
    file: the asked generation of it is installed instead, by the same owner."""
    mode = make_readable(stop, user)
    inside = holder is not None and any(path == stop.path or path.startswith(stop.path.rstrip("/") + "/")
                                        for path in holder.files)
    if holder is not None and not stop.folder and inside:
        return unknown_put_back(stop, user, f"{holder.name} {holder.version}",
                                reinstall(holder.name, holder.version, holder.site, holder.pip_env,
                                          along=holder.along))
    if holder is None or not inside:
        return fix(mode, note=f"{stop.path} cannot be {'searched' if stop.folder else 'read'} by this user")
    other = _generation_instead(holder, wanted)
    if other is not None:
        return fix(mode, pip_into([other], holder.site, holder.pip_env),
                   note=f"{stop.path} cannot be searched by this user, and {holder.name} {holder.version} there "
                        f"is no cuDNN {wanted}: {other} is installed in its place"
                        + (f" (as {stop.owner_name}, its owner)" if stop.owner != user else ""))
    return unknown_put_back(stop, user, f"{holder.name} {holder.version}",
                            reinstall(holder.name, holder.version, holder.site, holder.pip_env),
                            *unlisted_names(holder))


def unknown_put_back(stop: Unreachable, user: int, what: str, *put_back: Action) -> Fix:
    """The mode change that lets the user reach ``stop`` and ``put_back``: the actions that put the distribution
    (``what``) that holds it back whole, since what a folder or file this user cannot read holds is unknown here.
    The one rule for an unreadable folder or file of a wheel, the judge's and the library target's alike."""
    return fix(make_readable(stop, user), *put_back,
               note=f"{stop.path} cannot be {'searched' if stop.folder else 'read'} by this user, so what it holds "
                    f"is unknown here: {what} is put back whole too"
                    + (f" (as {stop.owner_name}, its owner)" if stop.owner != user else ""))


def _generation_instead(holder: Distribution, wanted: int | None) -> str | None:
    """The requirement of cuDNN ``wanted`` for ``holder``'s CUDA (its name's ``-cuNN``) where ``holder`` is a cuDNN
    of another generation; None where it is of that one, or either is unknown."""
    try:
        major = parse_release(holder.version).major
    except ValueError:
        return None
    cuda = distribution_cuda(holder.name)
    if wanted is None or major == wanted or cuda is None:
        return None
    return cudnn_requirement(wanted, cuda)


def unlisted_names(holder: Distribution) -> tuple[Action, ...]:
    """What a reinstall leaves that could still part a load from ``holder``'s own files: in each folder of its
    cuDNN libraries, the names their openers try before those files (cuDNN 9's shim and graph ask for
    ``X.so.9.28.0`` and ``X.so.9.28`` first: `SubLibrary.names_tried`) that its RECORD does not list. pip's
    ``--force-reinstall`` rewrites what RECORD lists and nothing else; a link of that name by hand to another
    release is then what loads. Deleted where they are there, by whoever reinstalls: no wheel ships them."""
    try:
        release: Release | None = parse_release(holder.version)
    except ValueError:  # a version pip would not have made ("9.28.0.42.post1"): the names are not known
        release = None
    by_folder: dict[str, list[str]] = {}
    for path in holder.files:
        if (lib := classify(posixpath.basename(path))) is not None:
            by_folder.setdefault(posixpath.dirname(path), []).extend(lib.names_tried(release))
    return tuple(action for folder, names in sorted(by_folder.items())
                 for action in unlisted_ahead(folder, names, holder.files, release))


def unlisted_ahead(folder: str, names: Iterable[str], listed: Iterable[str], release: Release | None = None
                   ) -> tuple[Action, ...]:
    """The names of ``names`` in ``folder`` that an opener tries before a cuDNN library's own file
    (`SubLibrary.tried_before_own`, of ``release`` or of any) and that no RECORD lists (``listed``: paths): a link
    by hand of such a name is what loads, whatever release pip puts back (it rewrites what its RECORD lists and
    nothing else); they go, in the order given."""
    listed = set(listed)
    strays = list(dict.fromkeys(name for name in names if (lib := classify(name)) is not None
                                and lib.tried_before_own(name, release) and posixpath.join(folder, name) not in listed))
    return (delete(folder, strays),) if strays else ()


def reinstall(name: str, version: str, site: str | None, pip_env: PipEnv, python: str | None = None,
              along: tuple[str, ...] | None = ()) -> Action:
    """Put a damaged or incomplete pip distribution back as it was released: the same version, every file
    rewritten (``--force-reinstall``), its dependencies left as they are (``--no-deps``), into the
    site-packages folder that holds it, by whoever installs there."""
    return pip_into([f"{name}=={version}"], site, pip_env, options=("--force-reinstall", "--no-deps"), python=python,
                    along=along)


def install_kind(folder: str) -> str:
    """How a cuDNN folder was most likely installed, from its path alone: "pip", "conda", "toolkit" (the
    NVIDIA tarball or CUDA toolkit under /usr/local/cuda*), "system" (a distribution package) or "folder"."""
    parts = folder.split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return "pip"
    if any(part in ("conda", "miniconda3", "anaconda3", "miniforge3", "mambaforge", "envs") for part in parts):
        return "conda"
    if folder.startswith("/usr/local/cuda"):
        return "toolkit"
    if folder.rstrip("/") in ("/lib", "/lib64", "/usr/lib", "/usr/lib64") or folder.startswith(
            ("/usr/lib/", "/lib/")):
        return "system"
    return "folder"


def manual_reinstall(folder: str, major: int, release: Release | None) -> Action:
    """How to put back a cuDNN that pip does not own, by how it was installed."""
    wanted = f"cuDNN {release}" if release else f"cuDNN {major}"
    kind = install_kind(folder)
    if kind == "conda":
        return manual(f"reinstall {wanted} in that conda environment (conda install --force-reinstall cudnn)")
    if kind == "system":
        package = f"libcudnn{major}" if major < 9 else "libcudnn9-cuda-12 (or -cuda-13)"
        return manual(f"reinstall {wanted} from the distribution's package ({package}: apt-get install --reinstall, "
                      "dnf reinstall)")
    if kind == "toolkit":
        return manual(f"unpack {wanted} again into {folder} from NVIDIA's archive (the tar file for this CUDA)")
    return manual(f"put back the complete {wanted} in {folder} (every file of one release, from the package it "
                  "came from)")


def cudnn_install(major: int, cuda: int | None, python: str | None, site: str | None = None,
                  release: Release | None = None, note: str | None = None) -> Fix:
    """Install a cuDNN of ``major`` for CUDA ``cuda`` with pip, where a wheel exists; else in words."""
    requirement = cudnn_requirement(major, cuda, release)
    if requirement is not None:
        return fix(pip_install([requirement], target=site, python=python), note=note)
    if major == 7:
        return fix(manual("cuDNN 7 has no pip wheel: install it from NVIDIA's archive (cudnn-*-v7.*.tgz), conda "
                          "(conda install cudnn=7) or the distribution's libcudnn7 package"))
    return fix(manual(f"no pip wheel of cuDNN {release or major} for CUDA {cuda} installs on this machine: install "
                      "it from NVIDIA's archive (developer.download.nvidia.com/compute/cudnn/redist/cudnn/) or conda"))


def folder_of(path: str) -> str:
    return posixpath.dirname(path)


def pin(folder: str, replace_preload: bool = False) -> Action:
    """`cudnnload run` with ``folder``'s cuDNN pinned (its set preloaded by path): a way that changes
    nothing on disk. ``replace_preload``: the user's LD_PRELOAD holds another cuDNN, which it leaves out."""
    return run(["cudnnload", "run", *(["--replace-preload"] if replace_preload else []), "--cudnn", folder, "--"])


def pin_for(framework: str, replace_preload: bool = False) -> Action:
    """`cudnnload run --for FRAMEWORK`: the install that framework's rules accept, pinned."""
    return run(["cudnnload", "run", *(["--replace-preload"] if replace_preload else []), "--for", framework, "--"])
