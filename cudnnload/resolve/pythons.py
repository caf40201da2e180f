"""Which Python environment a command run without a target is about: this interpreter's, unless that is an
environment of cudnnload's own (installed the way pipx or ``uv tool`` install a command), which is nobody's
program: then the user's ``python3`` on PATH.

An environment is cudnnload's own when it is a venv the user has not activated (``VIRTUAL_ENV`` does not name
it) and either lies where pipx or ``uv tool`` keep their environments, or holds nothing but cudnnload and
what cudnnload requires (its ``Requires-Dist``, followed through the distributions installed there) and the
installers (pip, setuptools, wheel). A venv with a framework or a cuDNN wheel beside cudnnload is the user's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from cudnnload.files import NotRegularFile, read_regular

# pipx: $PIPX_HOME/venvs/NAME (default ~/.local/pipx or ~/.local/share/pipx); uv: $UV_TOOL_DIR/NAME (default
# ~/.local/share/uv/tools). Read in pipx's `paths.py` and uv's `uv-tool` crate.
_TOOL_FOLDERS = ("/pipx/venvs/", "/uv/tools/")
_INSTALLERS = frozenset({"pip", "setuptools", "wheel", "uv"})


def tool_environment(environ: Mapping[str, str] | None = None, *, prefix: str | None = None,
                     base_prefix: str | None = None) -> str | None:
    """This interpreter's venv (``prefix``, default ``sys.prefix``) when it is cudnnload's own (see the module
    docstring); None when the environment is the user's."""
    env = os.environ if environ is None else environ
    prefix = os.path.realpath(prefix or sys.prefix)
    if prefix == os.path.realpath(base_prefix or sys.base_prefix):
        return None  # not a venv: the system's or a conda Python is the user's
    active = env.get("VIRTUAL_ENV")
    if active and os.path.realpath(active) == prefix:
        return None  # activated: the user works in it
    if any(mark in prefix + "/" for mark in _TOOL_FOLDERS):
        return prefix
    sites = _site_packages(prefix)
    names = _names(sites)
    if "cudnnload" not in names:
        return None  # cudnnload runs from a source tree on the path: the environment is the developer's
    closure = _closure("cudnnload", sites, names)
    return prefix if set(names) - _INSTALLERS <= closure else None


def interpreter_of_site(site: str) -> tuple[str | None, tuple[str, ...]]:
    """Who installs into the site-packages folder ``site`` with pip, and how: (interpreter, pip options). A venv's
    (``PREFIX/lib/pythonX.Y/site-packages`` under a ``pyvenv.cfg``): its ``bin/python``; another prefix's (the
    system's, conda's): its ``bin/pythonX.Y``; a user site (``~/.local/lib/pythonX.Y/site-packages``):
    ``pythonX.Y`` with ``--user``; any other folder (a ``--target`` one): (None, ()), the action's ``target``
    says it. Never the interpreter cudnnload happens to run in, unless that is the one whose folder it is."""
    parts = _site_parts(site)
    if parts is None:
        return None, ()
    prefix, version = parts
    for name in ("python", version, "python3"):
        candidate = os.path.join(prefix, "bin", name)
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) and os.access(candidate, os.X_OK):
            return candidate, ()
    candidate = os.path.join(prefix, "bin", version)
    if os.access(candidate, os.X_OK):
        return candidate, ()
    if os.path.basename(prefix) == ".local" or prefix.endswith("/.local"):
        return version, ("--user",)
    return None, ()


def seen_elsewhere(site: str, environ: Mapping[str, str]) -> frozenset[str]:
    """The distributions the interpreter of the site-packages folder ``site`` counts as installed from its other
    folders (canonical names): pip then says "Requirement already satisfied" and puts nothing into ``site``. A
    venv's interpreter searches ``PYTHONPATH``, then, with ``include-system-site-packages = true``, the user site of
    ``HOME`` (where ``PYTHONNOUSERSITE`` is unset) and its base installation's site-packages; another prefix's
    interpreter ``PYTHONPATH`` and the user site. Read from the folders' names alone (`_names`)."""
    parts = _site_parts(site)
    if parts is None:
        return frozenset()
    prefix, version = parts
    others = [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    config = venv_config(prefix)
    if config is not None and config.get("include-system-site-packages", "false").lower() != "true":
        return _others(others, site)
    home = environ.get("HOME")
    if home and os.path.isabs(home) and not environ.get("PYTHONNOUSERSITE"):
        others.append(os.path.join(home, ".local", "lib", version, "site-packages"))
    if config is not None and os.path.isabs(config.get("home", "")):
        others += [os.path.join(os.path.dirname(config["home"]), "lib", version, "site-packages")]
    return _others(others, site)


def _others(sites: list[str], site: str) -> frozenset[str]:
    real = os.path.realpath(site)
    return frozenset(_names([other for other in sites if os.path.realpath(other) != real]))


def venv_config(prefix: str) -> dict[str, str] | None:
    """A venv's ``pyvenv.cfg`` as site.py reads it: each ``key = value`` line, the key lowercased; None for a prefix
    that is no venv."""
    try:
        lines = read_regular(os.path.join(prefix, "pyvenv.cfg"), 1 << 16).decode("utf-8", "replace").splitlines()
    except (OSError, NotRegularFile):
        return None
    return {key.strip().lower(): value.strip() for key, sep, value in (line.partition("=") for line in lines) if sep}


def installer_of(python: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Whose pip installs for the interpreter ``python`` (a ``PREFIX/bin/python`` path): "uv" for a venv without pip
    (`lacks_pip`) that uv made (its ``pyvenv.cfg`` has uv's ``uv = VERSION`` line, uv's ``uv-virtualenv`` crate), or
    that another tool made without one (``python -m venv --without-pip``, ``virtualenv --no-pip``) where ``uv`` is on
    ``environ``'s PATH (``uv pip install --python`` installs into any interpreter's environment); "pip" for every
    other (``python -m pip``)."""
    import shutil

    if python is None or not os.path.isabs(python):
        return "pip"
    prefix = os.path.dirname(os.path.dirname(python))
    config = venv_config(prefix)
    if not _without_pip(prefix, config):
        return "pip"
    env = os.environ if environ is None else environ
    return "uv" if "uv" in (config or {}) or shutil.which("uv", path=env.get("PATH", os.defpath)) else "pip"


def lacks_pip(python: str | None) -> bool:
    """Whether ``python -m pip`` answers "No module named pip" for the interpreter ``python`` (a ``PREFIX/bin/python``
    path): a venv that holds no pip of its own (uv makes none; ``python -m venv --without-pip``) and does not see its
    base's (``include-system-site-packages = false``), or a conda prefix (``conda-meta``) without pip (pixi's: its
    PyPI packages are uv's, and conda-forge's python does not bring pip). Not said of another base interpreter (its
    pip may be anywhere on its path)."""
    if python is None or not os.path.isabs(python):
        return False
    prefix = os.path.dirname(os.path.dirname(python))
    return _without_pip(prefix, venv_config(prefix))


def _without_pip(prefix: str, config: dict[str, str] | None) -> bool:
    """`lacks_pip` of the environment at ``prefix``, its ``pyvenv.cfg`` read (None: no venv)."""
    conda = config is None and os.path.isdir(os.path.join(prefix, "conda-meta"))
    if (config is None and not conda) or (config or {}).get("include-system-site-packages", "false").lower() == "true":
        return False
    return not any(os.path.isfile(os.path.join(site, "pip", "__init__.py")) for site in _site_packages(prefix))


def without_ensurepip(python: str) -> str | None:
    """The ``X.Y`` of the interpreter ``python`` (a ``PREFIX/bin/python`` path) where its standard library has no
    ``ensurepip``, so that ``python -m ensurepip`` cannot put pip in (Debian and Ubuntu ship it apart, in the
    ``pythonX.Y-venv`` package: a venv of their system Python made ``--without-pip`` is the usual way there without
    it); None where it has one, or where its standard library is not found (nothing to say). The standard library is
    its base's: the interpreter's real file (a venv's links lead there), or its ``pyvenv.cfg``'s ``home`` (a venv
    made ``--copies``); its version, the real file's name's or ``pyvenv.cfg``'s (``version``, uv's
    ``version_info``)."""
    import re

    prefix = os.path.dirname(os.path.dirname(python))
    real = os.path.realpath(python)
    config = venv_config(prefix) or {}
    homes = [os.path.dirname(os.path.dirname(real)), os.path.dirname(config.get("home", "/"))]
    said = config.get("version") or config.get("version_info") or ""
    for version in dict.fromkeys([*re.findall(r"python(\d+\.\d+)$", os.path.basename(real)),
                                  *re.findall(r"^(\d+\.\d+)", said)]):
        for home in dict.fromkeys(homes):
            stdlib = os.path.join(home, "lib", f"python{version}")
            if os.path.isfile(os.path.join(stdlib, "os.py")):
                return None if os.path.isfile(os.path.join(stdlib, "ensurepip", "__init__.py")) else version
    return None


def externally_managed(python: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether pip refuses to install for the interpreter ``python`` (a path, or a name looked up on ``environ``'s
    PATH) into its own environment or its user site: a Python marked ``EXTERNALLY-MANAGED`` in its standard
    library's folder (PEP 668: Debian 12, Ubuntu 23.04 and later, Fedora 38), outside a venv (pip ignores the mark
    there), answers "error: externally-managed-environment" unless told ``--break-system-packages``."""
    import re
    import shutil

    env = os.environ if environ is None else environ
    path = python if python and os.path.isabs(python) else \
        shutil.which(python, path=env.get("PATH", os.defpath)) if python else None
    if path is None or venv_config(os.path.dirname(os.path.dirname(path))) is not None:
        return False
    real = os.path.realpath(path)
    found = re.match(r"python(\d+\.\d+)$", os.path.basename(real))
    if found is None:
        return False
    return os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(real)), "lib", f"python{found.group(1)}",
                                       "EXTERNALLY-MANAGED"))


def _site_parts(site: str) -> tuple[str, str] | None:
    """(prefix, ``pythonX.Y``) of a ``PREFIX/lib/pythonX.Y/site-packages`` folder; None for another folder."""
    lib, version = os.path.split(os.path.dirname(os.path.normpath(site)))
    if os.path.basename(site) != "site-packages" or not version.startswith("python"):
        return None
    return os.path.dirname(lib), version


def system_interpreter_of(site: str) -> str | None:
    """The interpreter of a Debian-style ``dist-packages`` folder (Debian's and Ubuntu's Python, the NGC framework
    containers): ``/usr/local/lib/pythonX.Y/dist-packages`` and ``/usr/lib/pythonX.Y/dist-packages`` are
    ``/usr/bin/pythonX.Y``'s, ``/usr/lib/python3/dist-packages`` ``/usr/bin/python3``'s; None for another folder or
    where that interpreter is not there. The reverse of `rootview`'s Debian site folders; beside
    `interpreter_of_site`, which answers a prefix's own ``site-packages``."""
    folder, name = os.path.split(os.path.normpath(site))
    lib, version = os.path.split(folder)
    if name != "dist-packages" or not version.startswith("python3") or lib not in ("/usr/lib", "/usr/local/lib"):
        return None
    candidate = os.path.join("/usr/bin", version)
    return candidate if os.access(candidate, os.X_OK) else None


def along_of(site: str, pip_env: tuple[str | None, tuple[str, ...]]) -> tuple[str, ...] | None:
    """`along_in_target` for a site pip installs into with ``--target`` (``pip_env`` names no interpreter and no
    option), () for any other: pip merges into a site-packages of an interpreter."""
    return along_in_target(site) if pip_env == (None, ()) else ()


# The folder NVIDIA's wheels share in a site-packages (nvidia/cudnn/lib, nvidia/cublas/lib, nvidia/cu13/lib, ...)
NAMESPACE = "nvidia"


def along_in_target(site: str) -> tuple[str, ...] | None:
    """For a folder pip installs into with ``--target`` (no interpreter of its own): the distributions, as
    ``name==version``, whose RECORD lists files under its ``nvidia`` folder. pip --target keeps a top-level folder
    that is already there and puts nothing into it ("Target directory ... already exists. Specify --upgrade to
    force replacement."); with ``--upgrade`` it replaces it whole (pip 23.2 to 25, ``_handle_target_dir``): another
    NVIDIA wheel lands there only installed with all of these. () where there is no ``nvidia`` folder; None where
    it holds a folder no RECORD lists (a copy, a link): replaced, it would be lost."""
    namespace = os.path.join(site, NAMESPACE)
    try:
        held = {name for name in os.listdir(namespace) if name not in ("__init__.py", "__pycache__")}
    except OSError:
        return () if not os.path.lexists(namespace) else None
    along: list[str] = []
    claimed: set[str] = set()
    for distribution, paths in _recorded(site):
        parts = {path.split("/")[1] for path in paths if path.startswith(f"{NAMESPACE}/") and path.count("/") >= 1}
        if parts:
            along.append(distribution)
            claimed |= parts
    return tuple(along) if held <= claimed else None


def sharing_in_target(site: str, name: str) -> tuple[str, ...]:
    """For a folder pip installs into with ``--target``: the other distributions, as ``name==version``, whose RECORD
    lists files under a top-level entry that the RECORD of the distribution ``name`` does (torch's ``torch``, the
    JAX CUDA plugin's and PJRT wheel's shared ``jax_plugins``, ``bin`` for console scripts). A reinstall of ``name``
    there needs ``--upgrade``, which replaces each of its top-level entries whole (without it pip keeps them and
    rewrites nothing): these go with them, and are installed along. () where ``name`` is not installed there."""
    from packaging.utils import canonicalize_name

    wanted = canonicalize_name(name)
    recorded = [(distribution, canonicalize_name(distribution.partition("==")[0]), paths)
                for distribution, paths in _recorded(site)]
    own = next((paths for _, canonical, paths in recorded if canonical == wanted), None)
    if own is None:
        return ()
    tops = _tops(own)
    return tuple(distribution for distribution, canonical, paths in recorded
                 if canonical != wanted and _tops(paths) & tops)


def _tops(paths: Sequence[str]) -> set[str]:
    """The top-level entries of a ``--target`` folder that RECORD paths are under (a script's ``../../bin/x``,
    written from the scheme's ``lib/python``, is ``bin``), less the distribution's own ``.dist-info``."""
    tops = set()
    for path in paths:
        top = os.path.normpath(os.path.join("lib/python", path)) if path.startswith("../") else path
        first = top.split("/", 1)[0]
        if first and first != ".." and not first.endswith(".dist-info"):
            tops.add(first)
    return tops


def _recorded(site: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each distribution of ``site`` (``name==version``, from its ``.dist-info`` folder's name) and the paths its
    RECORD lists; none for a folder that cannot be listed, a distribution whose RECORD cannot be read."""
    try:
        entries = sorted(os.listdir(site))
    except OSError:
        return []
    found = []
    for entry in entries:
        stem, dot, suffix = entry.rpartition(".")
        name, _, version = stem.partition("-")
        if not dot or suffix != "dist-info" or not version:
            continue
        try:
            with open(os.path.join(site, entry, "RECORD"), encoding="utf-8", errors="replace") as record:
                paths = tuple(row.split(",", 1)[0] for row in record)
        except OSError:
            continue
        found.append((f"{name.replace('_', '-')}=={version}", paths))
    return found


def interpreter_of_process(executable: str, argv: list[str] | tuple[str, ...], environ: Mapping[str, str]) -> str:
    """The interpreter whose environment a running Python process is in: its ``VIRTUAL_ENV``'s, else the path it
    was started as (a venv's ``bin/python`` is a link to the base interpreter: ``/proc/PID/exe`` names the base,
    whose pip installs elsewhere), else its executable."""
    venv = environ.get("VIRTUAL_ENV")
    if venv and os.path.isabs(venv):
        for name in ("python", "python3"):
            if os.access(os.path.join(venv, "bin", name), os.X_OK):
                return os.path.join(venv, "bin", name)
    first = argv[0] if argv else ""
    if os.path.isabs(first) and os.path.basename(first).startswith("python") and os.access(first, os.X_OK):
        return first
    return executable


def program_python(command: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The interpreter whose environment a program's cuDNN comes from when that is not this process's: the program's
    own when it is a Python of another environment (``/other/venv/bin/python train.py``, or any ``python3`` when
    cudnnload runs from an environment of its own, pipx's or ``uv tool``'s: its wheels and frameworks, not
    cudnnload's); None: this one's, or a program that is no Python (its cuDNN comes from its own search path)."""
    import shutil

    first = command[0] if command else ""
    if not os.path.basename(first).startswith("python"):
        return None
    found = shutil.which(first, path=environ.get("PATH", os.defpath))
    return None if found is None or environment_of(found) == os.path.realpath(sys.prefix) else found


def _venv_of(python: str) -> str | None:
    """The venv whose interpreter the path ``python`` is (``PREFIX/bin/python`` under a ``pyvenv.cfg``), as the path
    names it (a venv's interpreter is a link to the base one); None for another interpreter."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return prefix if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) else None


def environment_of(python: str) -> str:
    """The environment an interpreter's path is of: a venv's folder (its ``pyvenv.cfg``), else its installation's
    prefix."""
    venv = _venv_of(python)
    return os.path.realpath(venv) if venv is not None else os.path.dirname(os.path.dirname(os.path.realpath(python)))


def venv_sites(python: str) -> list[str] | None:
    """The site-packages folders of the venv whose interpreter ``python`` is (`_venv_of`); None for another
    interpreter, whose folders only running it would tell."""
    venv = _venv_of(python) if os.path.basename(python).startswith("python") else None
    return _site_packages(venv) if venv is not None else None


def python_on_path(environ: Mapping[str, str] | None = None, *, outside: str | None = None) -> str | None:
    """The first ``python3`` (then ``python``) on ``PATH`` that is not inside ``outside`` (a tool environment);
    None when there is none."""
    env = os.environ if environ is None else environ
    for name in ("python3", "python"):
        for folder in env.get("PATH", "").split(os.pathsep):
            if not folder or not os.path.isabs(folder):
                continue  # an empty or relative entry is the current folder: nobody's Python to judge
            path = os.path.join(folder, name)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            if outside is not None and (os.path.realpath(folder) + "/").startswith(outside.rstrip("/") + "/"):
                continue
            return path
    return None


def shell_site(environ: Mapping[str, str]) -> str | None:
    """The site-packages folder of the Python environment the shell has active (``VIRTUAL_ENV``'s, else
    ``CONDA_PREFIX``'s) where it exists: where pip can put a CUDA library that a cuDNN outside pip lacks. None
    without one (the system's Python is nobody's to install into unasked)."""
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(variable)
        if prefix and os.path.isabs(prefix):
            found = [site for site in _site_packages(prefix) if os.path.isdir(site)]
            if len(found) == 1:
                return found[0]
    return None


def _site_packages(prefix: str) -> list[str]:
    lib = os.path.join(prefix, "lib")
    try:
        names = sorted(os.listdir(lib))
    except OSError:
        return []
    return [os.path.join(lib, name, "site-packages") for name in names if name.startswith("python")]


def _names(sites: list[str]) -> dict[str, str]:
    """Canonical name -> its metadata folder, from the folder names alone (a venv beside torch and JAX holds
    ~600 distributions: reading each METADATA would cost a second)."""
    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    for site in sites:
        try:
            entries = os.listdir(site)
        except OSError:
            continue
        for entry in entries:
            stem, dot, suffix = entry.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info"):
                found.setdefault(str(canonicalize_name(stem.partition("-")[0])), os.path.join(site, entry))
    return found


def _closure(root: str, sites: list[str], names: Mapping[str, str]) -> set[str]:
    """``root`` and what it requires (markers for this interpreter, no extras), followed through what is
    installed: only these distributions' METADATA is read."""
    from importlib import metadata
    from pathlib import Path

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen or name not in names:
            continue
        seen.add(name)
        try:
            requires = metadata.PathDistribution(Path(names[name])).requires or []
        except (OSError, ValueError):
            continue
        for text in requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(str(canonicalize_name(requirement.name)))
    return seen


# what a Python interpreter's executable holds: the interpreter's entry point (exported so that C extensions bind
# to it: Py_BytesMain from 3.8, Py_Main before), or libpython (PyPy's libpypy), which holds it, among its NEEDED
_ENTRY_POINTS = frozenset({"Py_BytesMain", "Py_Main"})


def not_an_interpreter(path: str) -> str | None:
    """Why the executable ``path`` is no Python interpreter, read from the file without running it; None where it is
    one. ``--python`` runs what it names to observe its start-up: a script (a training script, a pyenv shim) or
    another program would run instead."""
    from cudnnload.errors import ElfError
    from cudnnload.resolve.elf import read_dynamic_symbols, read_elf

    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if head.startswith(b"#!"):
        return "a script, not a Python interpreter: --python would run it"
    if head != b"\x7fELF":
        return "not an executable file that is a Python interpreter (no ELF header): --python would run it"
    try:
        needs_libpython = any(name.startswith(("libpython", "libpypy")) for name in read_elf(path).needed)
        if needs_libpython or _ENTRY_POINTS & read_dynamic_symbols(path).defined:
            return None
    except ElfError as exc:
        return f"not a loadable executable ({exc.reason})"
    return "an executable that is no Python interpreter (it neither exports Py_BytesMain nor links libpython): " \
           "--python would run it"
