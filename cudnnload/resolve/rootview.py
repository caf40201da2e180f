"""An unpacked container image or chroot as its own processes would see it: its dynamic linker (the
``ld.so.cache`` parsed from the image's file, ``ld.so.conf`` with its drop-ins, the folders compiled into the
image's ld.so, its glibc), its ``python3`` and that interpreter's ``sys.path``, and the environment its config
gives.

Read from inside the root (`diagnose.rooted` confines the reading process there first), so every path here is
the image's own: an absolute symbolic link of the image resolves inside it, by the kernel, never to this
machine's files. Nothing of the image runs: its ld.so, libc and python3 are read as files.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.errors import ElfError, UsageError
from cudnnload.files import NotRegularFile, read_regular
from cudnnload.resolve.elf import max_version, read_elf
from cudnnload.resolve.ldcache import LD_SO_CACHE, CacheEntry, LdCache, read_ld_cache
from cudnnload.resolve.linker import LinkerDefaults
from cudnnload.resolve.pythons import python_on_path, venv_config

LD_SO_CONF = "/etc/ld.so.conf"
# The PATH a container gets when its image sets none (moby's oci.DefaultPathEnv for Linux).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# glibc's trusted folders, compiled into ld.so as one NUL-separated string (elf/dl-load.c system_dirs, made by
# gen-trusted-dirs.awk from the configured slibdir and libdir): "/lib/x86_64-linux-gnu/\0/usr/lib/...\0".
_SYSTEM_DIRS = re.compile(rb"(?:/[\w./+-]*/\x00){2,}")
_FLAGS_X86_64 = 0x0303  # an ld.so.cache entry for an x86-64 libc6 library (ldcache._HOST_FLAGS)
# glibc-hwcaps subfolders are searched from glibc 2.33, the legacy hwcaps ones until 2.36 (NEWS of 2.33, 2.37)
_HWCAPS_FROM, _LEGACY_UNTIL = (2, 33), (2, 36)
_MAX_CONFIG = 1 << 20


# --- the environment an image's config gives ------------------------------------------------------------------


def image_environment(text: str, name: str) -> dict[str, str]:
    """The environment of an image's config: an OCI image config or ``docker inspect`` output (its ``Env`` list
    of NAME=VALUE), or plain NAME=VALUE lines (``#`` comments, an ``export`` before the name allowed).
    UsageError naming the file for anything else."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:  # nested deeper than the parser's stack
            raise UsageError(f"not JSON: {exc}", path=name) from None
        found = _env_list(data)
        if found is None:
            raise UsageError("a JSON file without an Env list (an OCI image config's config.Env, or docker "
                             "inspect's Config.Env)", path=name)
        return dict(_assignment(item, name) for item in found)
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pairs.update([_assignment(line.removeprefix("export ").strip(), f"{name}:{number}")])
    return pairs


def _env_list(data: object) -> list[object] | None:
    if isinstance(data, list) and len(data) == 1:
        data = data[0]  # docker inspect prints a list
    if not isinstance(data, dict):
        return None
    for key in ("config", "Config"):
        inner = data.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("Env"), list):
            return list(inner["Env"])
    return list(data["Env"]) if isinstance(data.get("Env"), list) else None


def _assignment(item: object, where: str) -> tuple[str, str]:
    name, sep, value = str(item).partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UsageError(f"not NAME=VALUE: {item!r}", path=where)
    return name, value.strip('"') if value.startswith('"') and value.endswith('"') else value


# --- the image's linker ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stale:
    """A folder ``ld.so.conf`` names, with the libraries in it that the image's cache does not list."""

    folder: str
    named_by: str  # the conf file that names it
    sonames: tuple[str, ...]


@dataclass(frozen=True)
class RootView:
    """What the image's processes would have: its linker, C library, Python and environment."""

    environ: Mapping[str, str]
    ld_cache: LdCache  # as a process there reads it (rebuilt when ``ldconfig`` runs at start, see `root_view`)
    image_cache: LdCache  # the image's file as it is
    conf_folders: tuple[tuple[str, str], ...]  # (folder, the conf file naming it), in ldconfig's order
    stale: tuple[Stale, ...]
    defaults: LinkerDefaults
    defaults_from: str  # where the default folders were read
    glibc: tuple[int, ...] | None
    python: str | None  # the image's python3 on its PATH
    python_version: str | None  # "3.11"
    site_paths: tuple[str, ...]  # that interpreter's sys.path, as its site.py builds it


def root_view(environ: Mapping[str, str], host: LinkerDefaults, *, ldconfig_at_start: bool) -> RootView:
    """Read the root this process is confined to. ``host``: this machine's linker defaults (the CPU a container
    runs on decides the hwcaps subfolders); ``ldconfig_at_start``: the container starts with ``ldconfig`` run
    over its ``ld.so.conf`` (the NVIDIA container toolkit's update-ldcache hook runs ``ldconfig -f
    /etc/ld.so.conf -C /etc/ld.so.cache`` in it: nvidia-container-toolkit internal/ldconfig UpdateLDCache), so
    the drop-ins not yet in the cache count. UsageError when there is no ``/etc/ld.so.cache`` to read."""
    env = dict(environ)
    env.setdefault("PATH", DEFAULT_PATH)
    if not os.path.lexists(LD_SO_CACHE):
        raise UsageError("no /etc/ld.so.cache in the root: not an unpacked image or chroot a dynamic linker runs in",
                         fix="give the folder an image was unpacked into (docker export | tar -x), with its /etc")
    image_cache = read_ld_cache(LD_SO_CACHE)
    if image_cache.problem is not None:
        raise UsageError(f"the root's /etc/ld.so.cache cannot be read: {image_cache.problem}")
    python = python_on_path(env)
    interpreter = _interpreter(python)
    defaults, defaults_from = _defaults(interpreter, host)
    glibc = _glibc(image_cache)
    if glibc is not None:
        defaults = _hwcaps_for(defaults, glibc)
    conf = _conf_folders(LD_SO_CONF)
    stale = _stale(conf, image_cache, defaults.default_dirs)
    cache = _rebuilt(image_cache, stale) if ldconfig_at_start else image_cache
    version = _python_version(python)
    sites = tuple(_sys_path(python, version, env)) if python and version else ()
    return RootView(env, cache, image_cache, tuple(conf), tuple(stale), defaults, defaults_from, glibc, python,
                    version, sites)


def _interpreter(python: str | None) -> str | None:
    """The dynamic linker the image's programs start with: its python3's PT_INTERP (the x86-64 one by default)."""
    if python is not None:
        try:
            found = read_elf(os.path.realpath(python)).interpreter
        except (OSError, ElfError):
            found = None
        if found:
            return found
    return "/lib64/ld-linux-x86-64.so.2"


def _defaults(interpreter: str | None, host: LinkerDefaults) -> tuple[LinkerDefaults, str]:
    """The image's ld.so's trusted folders (read from its file) with this machine's CPU-dependent values."""
    try:
        data = read_regular(os.path.realpath(interpreter or ""), 64 << 20)
    except (OSError, NotRegularFile):
        return host, "this machine's ld.so (the image's could not be read)"
    match = _SYSTEM_DIRS.search(data)
    if match is None:
        return host, f"this machine's ld.so (no trusted folders found in {interpreter})"
    dirs = tuple(part.decode("utf-8", "replace").rstrip("/") for part in match.group().split(b"\0") if part)
    lib = dirs[0].lstrip("/")  # $LIB: the first trusted folder, without its leading '/' (slibdir)
    return replace(host, default_dirs=dirs, lib=lib, source=f"{interpreter} (its trusted folders)"), interpreter or ""


def _glibc(cache: LdCache) -> tuple[int, ...] | None:
    """The image's glibc: the newest GLIBC_ version its libc.so.6 defines (found as its processes find it)."""
    entry = next((e for e in cache.entries if e.name == "libc.so.6" and not e.hwcap), None)
    try:
        return max_version(d for d in read_elf(entry.path).version_defs if d.startswith("GLIBC_")) if entry else None
    except (OSError, ElfError):
        return None


def _hwcaps_for(defaults: LinkerDefaults, glibc: tuple[int, ...]) -> LinkerDefaults:
    """The subfolders the image's glibc searches on this CPU: glibc-hwcaps from 2.33, the legacy ones before 2.37."""
    keep = tuple(sub for sub in defaults.subdirs if not sub or (
        glibc >= _HWCAPS_FROM if sub.startswith("glibc-hwcaps/") else glibc <= _LEGACY_UNTIL))
    return replace(defaults, subdirs=keep or ("",))


def _conf_folders(path: str, seen: set[str] | None = None) -> list[tuple[str, str]]:
    """The folders ``path`` names, in ldconfig's order, its ``include`` globs read in place (a relative pattern
    from the including file's folder: glibc elf/ldconfig.c parse_conf_include); ``hwcap`` lines skipped."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    try:
        text = read_regular(path, _MAX_CONFIG).decode("utf-8", "replace")
    except (OSError, NotRegularFile):
        return []
    folders: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap "):
            continue
        if line.startswith("include") and line[7:8].isspace():
            for pattern in line[8:].split():
                pattern = pattern if pattern.startswith("/") else os.path.join(os.path.dirname(path), pattern)
                for included in sorted(glob.glob(pattern)):
                    folders += _conf_folders(included, seen)
            continue
        for folder in re.split(r"[\s,:]+", line):
            if folder.startswith("/") and folder not in (f for f, _ in folders):
                folders.append((folder.rstrip("/") or "/", path))
    return folders


def _stale(conf: Sequence[tuple[str, str]], cache: LdCache, trusted: Sequence[str]) -> list[Stale]:
    """Each conf folder whose libraries (by their SONAME) the cache does not list there."""
    listed = {e.path for e in cache.entries}
    found = []
    for folder, named_by in conf:
        if folder in trusted:
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        missing = []
        for name in names:
            path = os.path.join(folder, name)
            if ".so" not in name or not os.path.isfile(path):
                continue
            try:
                soname = read_elf(path).soname
            except (OSError, ElfError):
                continue
            if soname and os.path.join(folder, soname) not in listed and soname not in missing:
                missing.append(soname)
        if missing:
            found.append(Stale(folder, named_by, tuple(missing)))
    return found


def _rebuilt(cache: LdCache, stale: Sequence[Stale]) -> LdCache:
    """The cache after ``ldconfig`` at start: the image's entries, and those of the conf folders it lacked (after
    them: where a soname is in both, the image's entry stays the first the lookup meets)."""
    added = tuple(CacheEntry(soname, os.path.join(s.folder, soname), _FLAGS_X86_64) for s in stale
                  for soname in s.sonames)
    return replace(cache, entries=cache.entries + added,
                   generator=f"{cache.generator or 'ldconfig'}, with the ld.so.conf folders ldconfig adds at start")


# --- the image's Python -----------------------------------------------------------------------------------------


def _python_version(python: str | None) -> str | None:
    """"3.11" from the interpreter's file name (``python3`` links to ``python3.11``)."""
    if python is None:
        return None
    match = re.search(r"python(\d+\.\d+)$", os.path.realpath(python))
    return match.group(1) if match else None


def _sys_path(python: str, version: str, env: Mapping[str, str]) -> list[str]:
    """What the image's interpreter puts on ``sys.path`` (Modules/getpath.py and Lib/site.py): PYTHONPATH, the
    standard library, then the site folders of its prefix (a venv's, when a ``pyvenv.cfg`` sits beside or above
    it); Debian's site.py (it names ``dist-packages``) lists ``/usr/local/lib/python3.X/dist-packages``,
    ``/usr/lib/python3/dist-packages`` and ``/usr/lib/python3.X/dist-packages``; a ``.pth`` file's folder lines
    are added where they exist."""
    folder = os.path.dirname(python)
    venv = next((os.path.dirname(cfg) for cfg in (os.path.join(folder, "pyvenv.cfg"),
                                                   os.path.join(os.path.dirname(folder), "pyvenv.cfg"))
                 if os.path.isfile(cfg)), None)
    real = os.path.realpath(python)
    prefix = os.path.dirname(os.path.dirname(real))
    stdlib = os.path.join(prefix, "lib", f"python{version}")
    paths = [p for p in env.get("PYTHONPATH", "").split(":") if p]
    paths += [os.path.join(prefix, "lib", f"python{version.replace('.', '')}.zip"), stdlib,
              os.path.join(stdlib, "lib-dynload")]
    debian = _names_dist_packages(os.path.join(stdlib, "site.py"))
    if venv is not None:
        sites = [os.path.join(venv, "lib", f"python{version}", "site-packages")]
        if _venv_system_site(os.path.join(venv, "pyvenv.cfg")):
            sites += _prefix_sites(prefix, version, debian)
    else:
        sites = _prefix_sites(prefix, version, debian)
    for site in sites:
        if os.path.isdir(site):
            paths.append(site)
            paths += _pth_folders(site)
    return list(dict.fromkeys(paths))


def _prefix_sites(prefix: str, version: str, debian: bool) -> list[str]:
    if debian:
        return [os.path.join("/usr/local/lib", f"python{version}", "dist-packages"),
                os.path.join(prefix, "lib", "python3", "dist-packages"),
                os.path.join(prefix, "lib", f"python{version}", "dist-packages")]
    return [os.path.join(prefix, "lib", f"python{version}", "site-packages")]


def _names_dist_packages(site_py: str) -> bool:
    try:
        return b"dist-packages" in read_regular(site_py, 1 << 20)
    except (OSError, NotRegularFile):
        return False


def _venv_system_site(cfg: str) -> bool:
    return (venv_config(os.path.dirname(cfg)) or {}).get("include-system-site-packages", "").lower() == "true"


def _pth_folders(site: str) -> list[str]:
    """The folder lines of a site folder's ``.pth`` files, in name order, where the folder exists (site.py
    addpackage: ``import`` lines run code, which nothing here does)."""
    found = []
    for name in sorted(os.listdir(site)):
        if not name.endswith(".pth"):
            continue
        try:
            text = read_regular(os.path.join(site, name), 1 << 20).decode("utf-8", "replace")
        except (OSError, NotRegularFile):
            continue
        for line in text.splitlines():
            line = line.rstrip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            folder = os.path.normpath(os.path.join(site, line))
            if os.path.isdir(folder):
                found.append(folder)
    return found
