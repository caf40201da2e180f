"""The real PyTorch and JAX on the GPU machine broken by compositions of what users do (issue 31 item 6), each
diagnosed by `doctor` (plain, and `-- COMMAND`), the first error's fix applied, the program run again, the machine
put back after each.

    python bench/gpu_compositions.py [--out FILE.jsonl] [--set first|new|third|all] [--only NAME ...]

Run only on the GPU machine (bench/gpu_run.sh `compositions`): it changes the installed frameworks' files and
start-up files and puts them back. The machine has no network, so a `pip-install` of the distribution already
installed (its `--force-reinstall`) is applied by putting back the files that distribution's wheel put there
(kept aside before the case); any other pip action is recorded as not applicable here.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("import torch\nprint('cudnn', torch.backends.cudnn.version(), flush=True)\n"
         "c = torch.nn.Conv2d(3, 8, 3).cuda()\nprint('conv ok', float(c(torch.randn(1, 3, 16, 16, device='cuda'))"
         ".sum()), flush=True)\n")
JAX = ("import jax, jax.numpy as jnp\nout = jax.lax.conv(jnp.ones((1, 3, 16, 16)), jnp.ones((8, 3, 3, 3)), (1, 1),"
       " 'SAME')\nprint('conv ok', float(out.sum()), jax.devices()[0].platform, flush=True)\n"
       "assert jax.devices()[0].platform == 'gpu'\n")


@dataclass
class World:
    """What a case changes: the environment, and files (each kept aside to be put back)."""

    site: Path
    wheel: Path  # site/nvidia/cudnn/lib
    system: Path  # the system cuDNN's folder
    scratch: Path
    env: dict[str, str] = field(default_factory=dict)
    kept: list[tuple[Path, Path | None]] = field(default_factory=list)  # (path, its copy; None: it did not exist)
    numbers: Iterator[int] = field(default_factory=itertools.count)  # names of the copies, never reused
    owned: dict[str, list[Path]] = field(default_factory=dict)  # a distribution's files the case changed

    def keep(self, path: Path) -> None:
        if any(p == path for p, _ in self.kept):
            return
        if path.exists() or path.is_symlink():
            copy = self.scratch / "kept" / str(next(self.numbers))
            copy.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir() and not path.is_symlink():
                shutil.copytree(path, copy, symlinks=True)
            else:
                shutil.copy2(path, copy, follow_symlinks=False)
            self.kept.append((path, copy))
        else:
            self.kept.append((path, None))

    def write(self, path: Path, text: str) -> None:
        self.keep(path)
        path.write_text(text)

    def restore(self, under: Path | None = None) -> None:
        """Put back what was kept (only what lies under ``under``, when given)."""
        chosen = [(p, c) for p, c in self.kept if under is None or p == under or str(p).startswith(str(under) + "/")]
        for path, copy in reversed(chosen):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                path.unlink()
            if copy is not None:
                if copy.is_dir():
                    shutil.copytree(copy, path, symlinks=True)
                else:
                    shutil.copy2(copy, path, follow_symlinks=False)
        self.kept = [item for item in self.kept if item not in chosen]
        if any(p.parent in (self.system, Path("/etc/ld.so.conf.d")) for p, _ in chosen):
            subprocess.run(["ldconfig"], check=False)  # the loader's cache with the system's cuDNN again


def older_copy(world: World, where: Path) -> Path:
    """The system cuDNN's files laid out as a wheel's nvidia/cudnn/lib under ``where`` (a --target folder)."""
    lib = where / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(world.system):
        if name.startswith("libcudnn") and re.search(r"\.so\.9$", name):
            shutil.copy2(world.system / name, lib / name)
    return lib


def case_pth_and_ldlp(w: World) -> None:
    w.write(w.site / "zz-startup-cudnn.pth", f"import ctypes; ctypes.CDLL('{w.system}/libcudnn_graph.so.9')\n")
    w.env["LD_LIBRARY_PATH"] = str(w.system)


def case_target_copy_on_pythonpath(w: World) -> None:
    older_copy(w, w.scratch / "target")
    w.env["PYTHONPATH"] = str(w.scratch / "target")
    w.env["LD_LIBRARY_PATH"] = ""


def case_sitecustomize_and_preload(w: World) -> None:
    w.write(w.site / "sitecustomize.py", f"import ctypes\nctypes.CDLL('{w.system}/libcudnn.so.9')\n")
    w.env["LD_PRELOAD"] = f"{w.system}/libcudnn_ops.so.9"


def case_graph_replaced_and_empty_entry(w: World) -> None:
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    graph.unlink()
    shutil.copy2(w.system / "libcudnn_graph.so.9", graph)
    w.env["LD_LIBRARY_PATH"] = f":{w.system}"


def case_preload_graph_and_target(w: World) -> None:
    w.env["LD_PRELOAD"] = f"{w.system}/libcudnn_graph.so.9"
    older_copy(w, w.scratch / "target")
    w.env["PYTHONPATH"] = str(w.scratch / "target")


def case_engine_deleted_and_system_path(w: World) -> None:
    engine = w.wheel / "libcudnn_engines_runtime_compiled.so.9"
    w.keep(engine)
    engine.unlink()
    w.env["LD_LIBRARY_PATH"] = str(w.system)


def case_user_site_copy_and_ldlp(w: World) -> None:
    base = w.scratch / "userbase"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    older_copy(w, base / "lib" / version / "site-packages")
    w.env["PYTHONUSERBASE"] = str(base)
    w.env["LD_LIBRARY_PATH"] = str(w.system)


def case_record_gone_and_truncated(w: World) -> None:
    heuristic = w.wheel / "libcudnn_heuristic.so.9"
    w.keep(heuristic)
    data = heuristic.read_bytes()
    heuristic.unlink()
    heuristic.write_bytes(data[: len(data) // 3])
    w.env["LD_LIBRARY_PATH"] = ""


def case_ops_deleted_and_preload_shim(w: World) -> None:
    ops = w.wheel / "libcudnn_ops.so.9"
    w.keep(ops)
    ops.unlink()
    w.env["LD_PRELOAD"] = f"{w.system}/libcudnn.so.9"


CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "pth-maps-system-graph+ldlp-system": (case_pth_and_ldlp, ("torch", "jax")),
    "target-copy-on-pythonpath": (case_target_copy_on_pythonpath, ("torch", "jax")),
    "sitecustomize-maps-shim+preload-ops": (case_sitecustomize_and_preload, ("torch", "jax")),
    "graph-replaced+empty-ldlp-entry": (case_graph_replaced_and_empty_entry, ("torch", "jax")),
    "preload-graph+target-copy": (case_preload_graph_and_target, ("torch", "jax")),
    "engine-deleted+ldlp-system": (case_engine_deleted_and_system_path, ("torch", "jax")),
    "user-site-copy+ldlp-system": (case_user_site_copy_and_ldlp, ("torch", "jax")),
    "heuristic-truncated+empty-ldlp": (case_record_gone_and_truncated, ("torch", "jax")),
    "ops-deleted+preload-shim": (case_ops_deleted_and_preload_shim, ("torch", "jax")),
}


# The second set, written on 2026-11-29 (eleventh session) before any of it was run: new ways of breaking the real
# frameworks that neither the set above nor tests/test_frameworks_gpu.py has (`--set new`).
def case_shim_relinked_to_system(w: World) -> None:
    shim = w.wheel / "libcudnn.so.9"
    w.keep(shim)
    shim.unlink()
    shim.symlink_to(w.system / "libcudnn.so.9")


def case_ops_of_another_machine(w: World) -> None:
    ops = w.wheel / "libcudnn_ops.so.9"
    w.keep(ops)
    data = bytearray(ops.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64: a file of the aarch64 wheel copied in
    ops.unlink()
    ops.write_bytes(bytes(data))


def case_cnn_dangling_link_and_ldlp(w: World) -> None:
    cnn = w.wheel / "libcudnn_cnn.so.9"
    w.keep(cnn)
    cnn.unlink()
    cnn.symlink_to("libcudnn_cnn.so.9.19.0")  # a link whose file is not there
    w.env["LD_LIBRARY_PATH"] = str(w.system)


def case_preload_by_soname(w: World) -> None:
    w.env["LD_PRELOAD"] = "libcudnn_graph.so.9"


def case_lonely_shim_link_on_ldlp(w: World) -> None:
    folder = w.scratch / "links"
    folder.mkdir(exist_ok=True)
    if not (folder / "libcudnn.so.9").is_symlink():
        (folder / "libcudnn.so.9").symlink_to(w.system / "libcudnn.so.9")
    w.env["LD_LIBRARY_PATH"] = str(folder)


def case_pth_puts_older_first(w: World) -> None:
    older_copy(w, w.scratch / "older")
    w.write(w.site / "zz-older-first.pth", f"import sys; sys.path.insert(0, {str(w.scratch / 'older')!r})\n")


def case_hidden_gpu_and_ldlp(w: World) -> None:
    w.env["CUDA_VISIBLE_DEVICES"] = "1"
    w.env["LD_LIBRARY_PATH"] = str(w.system)


def case_engines_from_system_and_preload_heuristic(w: World) -> None:
    engines = w.wheel / "libcudnn_engines_precompiled.so.9"
    w.keep(engines)
    engines.unlink()
    shutil.copy2(w.system / "libcudnn_engines_precompiled.so.9", engines)
    w.env["LD_PRELOAD"] = str(w.system / "libcudnn_heuristic.so.9")


def case_metadata_gone_and_cnn_deleted(w: World) -> None:
    for info in w.site.glob("nvidia_cudnn_cu13-*.dist-info"):
        w.keep(info)
        shutil.rmtree(info)
    cnn = w.wheel / "libcudnn_cnn.so.9"
    w.keep(cnn)
    cnn.unlink()


NEW_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "shim-relinked-to-system": (case_shim_relinked_to_system, ("torch", "jax")),
    "ops-of-another-machine": (case_ops_of_another_machine, ("torch", "jax")),
    "cnn-dangling-link+ldlp-system": (case_cnn_dangling_link_and_ldlp, ("torch", "jax")),
    "preload-graph-by-soname": (case_preload_by_soname, ("torch", "jax")),
    "lonely-shim-link-on-ldlp": (case_lonely_shim_link_on_ldlp, ("torch", "jax")),
    "pth-puts-older-copy-first": (case_pth_puts_older_first, ("torch", "jax")),
    "hidden-gpu+ldlp-system": (case_hidden_gpu_and_ldlp, ("torch", "jax")),
    "engines-from-system+preload-heuristic": (case_engines_from_system_and_preload_heuristic, ("torch", "jax")),
    "metadata-gone+cnn-deleted": (case_metadata_gone_and_cnn_deleted, ("torch", "jax")),
}



# The third set, written later in the eleventh session, again before any of it was run (`--set third`).
def _aside_system(w: World) -> None:
    """The system cuDNN taken away (its files kept aside) and the loader's cache made again without it."""
    for path in sorted(w.system.glob("libcudnn*.so*")):
        w.keep(path)
        path.unlink()
    subprocess.run(["ldconfig"], check=False)


def case_wheel_and_system_gone(w: World) -> None:
    w.keep(w.wheel.parent)
    shutil.rmtree(w.wheel.parent)
    _aside_system(w)


def case_tarball_copied_over_wheel(w: World) -> None:
    for path in sorted(w.wheel.glob("libcudnn*.so.9")):
        w.keep(path)
        path.unlink()
        shutil.copy2(w.system / path.name, path)  # `cp cudnn-*-archive/lib/libcudnn* .../nvidia/cudnn/lib/`


def case_stale_empty_cudnn_on_pythonpath(w: World) -> None:
    stale = w.scratch / "stale"
    (stale / "nvidia" / "cudnn" / "lib").mkdir(parents=True, exist_ok=True)  # what an uninstall left of a --target
    w.env["PYTHONPATH"] = str(stale)


THIRD_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "wheel-and-system-cudnn-gone": (case_wheel_and_system_gone, ("torch", "jax")),
    "tarball-copied-over-wheel": (case_tarball_copied_over_wheel, ("torch", "jax")),
    "stale-empty-cudnn-on-pythonpath": (case_stale_empty_cudnn_on_pythonpath, ("torch", "jax")),
}

def run_program(code: str, env: dict[str, str], cwd: Path) -> dict[str, object]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return {"ok": done.returncode == 0 and "conv ok" in done.stdout, "exit": done.returncode,
            "last": lines[-3:], "seconds": round(time.monotonic() - start, 1)}


def doctor(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    tool = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [env.get("PYTHONPATH"), os.environ.get(
        "CUDNNLOAD_TREE", "")]))}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", *args], env=tool, cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False)
    try:
        result = json.loads(done.stdout[done.stdout.index("{"):])["result"]
    except (ValueError, KeyError):
        return {"error": done.stderr.strip()[-300:] or f"exit {done.returncode}"}
    errors = [f for f in result.get("findings", []) if f.get("severity") == "error"]
    first = errors[0] if errors else None
    return {"codes": [f["code"] for f in errors], "first": first["code"] if first else None,
            "actions": first["fix"]["actions"] if first else [], "text": first["fix"]["text"] if first else None}


def _requirement(text: str) -> str:
    """A requirement's canonical distribution name ("nvidia-cudnn-cu13>=9.19,<10" -> "nvidia-cudnn-cu13")."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[@]", text.strip(), maxsplit=1)[0]).lower()


def _uninstall(world: World, name: str) -> None:
    """pip uninstall NAME from the site: the files its RECORD lists, then its metadata (kept aside first)."""
    for info in world.site.glob("*.dist-info"):
        if re.sub(r"[-_.]+", "-", info.name.split("-")[0]).lower() != name or not (info / "RECORD").exists():
            continue
        for line in (info / "RECORD").read_text().splitlines():
            path = world.site / line.split(",", 1)[0]
            if path.parent != info and (path.is_file() or path.is_symlink()):
                world.keep(path)
                path.unlink()
        world.keep(info)
        shutil.rmtree(info)


def apply(actions: list[dict[str, object]], world: World, env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The actions applied to the world (files kept aside first); the program's environment after; what could not
    be applied here."""
    env = dict(env)
    refused = []
    for action in actions:
        kind = action["do"]
        if kind == "env-unset":
            env.pop(str(action["variable"]), None)
        elif kind == "env-set":
            env[str(action["variable"])] = str(action["value"])
        elif kind == "env-remove-entry":
            variable, entry = str(action["variable"]), str(action["entry"])
            parts = re.split(r"[ :]" if variable == "LD_PRELOAD" else ":", env.get(variable, ""))
            kept = [p for p in parts if os.path.normpath(p or ".") != os.path.normpath(entry or ".") and p != entry]
            if any(kept):
                env[variable] = (" " if variable == "LD_PRELOAD" else ":").join(kept)
            else:
                env.pop(variable, None)
        elif kind == "remove-line":
            path = Path(str(action["path"]))
            world.keep(path)
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if line.rstrip("\n") != action["line"]))
        elif kind == "delete":  # the contract: the path itself, or whichever of ``names`` are there in it (rm -f)
            names = action.get("names") or []
            folder = Path(str(action["path"]))
            for path in [folder / str(name) for name in names] if names else [folder]:  # type: ignore[union-attr]
                if path.is_symlink() or path.exists():
                    world.keep(path)
                    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        elif kind in ("chmod", "relink"):
            path = Path(str(action["path"]))
            world.keep(path)
            if kind == "chmod":
                path.chmod(int(str(action["mode"]), 8))
            else:
                path.unlink(missing_ok=True)
                path.symlink_to(str(action["target"]))
        elif kind == "pip-install" and any(str(r).startswith("nvidia-cudnn-cu13") for r in action["requirements"]):
            world.restore(under=world.wheel.parent)  # the wheel's files as pip puts them back; nothing else
            for info in {p for p, _ in world.kept if p.name.startswith("nvidia_cudnn_cu13-")}:
                world.restore(under=info)  # and its metadata
        elif kind == "pip-install" and (changed := [p for r in action["requirements"]  # type: ignore[union-attr]
                                                    for p in world.owned.get(_requirement(str(r)), [])]):
            for path in changed:  # another distribution the case changed: its files as pip puts them back
                world.restore(under=path)
        elif kind == "pip-uninstall":
            target = Path(str(action.get("target") or ""))
            for name in action["requirements"]:
                if action.get("target"):
                    if str(name).startswith("nvidia-cudnn") and (target / "nvidia" / "cudnn").exists():
                        shutil.rmtree(target / "nvidia" / "cudnn")
                    continue
                _uninstall(world, _requirement(str(name)))
        elif kind == "run":
            env["CUDNNLOAD_RUN_ARGV"] = json.dumps(action["argv"])
        else:
            refused.append(f"{kind} {action.get('requirements') or action.get('text') or ''}")
    return env, refused


# The fourth set, written on 2026-11-30 (sixteenth session) before any of it was run (`--set fourth`): ways that
# none of the sets above nor tests/test_frameworks_gpu.py has. /etc/ld.so.preload changes every process, so it is
# last.
def _release(w: World) -> str:
    """The wheel's cuDNN release, from its metadata's name ("9.19.0")."""
    info = next(w.site.glob("nvidia_cudnn_cu13-*.dist-info"))
    return ".".join(info.name.split("-")[1].split(".")[:3])


def case_versioned_graph_name_to_system(w: World) -> None:
    stray = w.wheel / f"libcudnn_graph.so.{_release(w)}"  # ln -s by hand: the shim tries this name first
    w.keep(stray)
    stray.symlink_to(w.system / "libcudnn_graph.so.9")


def case_lib_folder_linked_to_older_copy(w: World) -> None:
    older = older_copy(w, w.scratch / "older")
    w.keep(w.wheel)
    shutil.rmtree(w.wheel)
    w.wheel.symlink_to(older)  # ln -s another cuDNN's folder in place of the wheel's


def case_lib_folder_renamed(w: World) -> None:
    moved = w.wheel.with_name("lib64")  # mv lib lib64, "where libraries belong"
    w.keep(moved)
    w.keep(w.wheel)
    shutil.copytree(w.wheel, moved, symlinks=True)
    shutil.rmtree(w.wheel)


def case_relative_ldlp_to_older_copy(w: World) -> None:
    folder = w.scratch / "cwd" / "lib9"
    folder.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(w.system):
        if name.startswith("libcudnn") and re.search(r"\.so\.9$", name):
            shutil.copy2(w.system / name, folder / name)
    w.env["LD_LIBRARY_PATH"] = "lib9"


def case_cwd_holds_older_nvidia_cudnn(w: World) -> None:
    older_copy(w, w.scratch / "cwd")  # python run from a folder that holds an unpacked nvidia/cudnn


def case_sitecustomize_on_pythonpath_maps_ops(w: World) -> None:
    folder = w.scratch / "startup"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        f"import ctypes\nctypes.CDLL('{w.system}/libcudnn_ops.so.9', mode=ctypes.RTLD_GLOBAL)\n")
    w.env["PYTHONPATH"] = str(folder)


def case_missing_preload_and_graph_deleted(w: World) -> None:
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    graph.unlink()
    w.env["LD_PRELOAD"] = "/opt/gone/libcudnn.so.9"  # a preload that is not there: ld.so says so and goes on


def case_other_cuda_wheel_uninstalled_over_it(w: World) -> None:
    for path in sorted(w.wheel.glob("libcudnn*.so.9")):  # pip uninstall nvidia-cudnn-cu12: its RECORD had them
        w.keep(path)
        path.unlink()


def case_ld_so_preload_system_ops(w: World) -> None:
    w.write(Path("/etc/ld.so.preload"), f"{w.system}/libcudnn_ops.so.9\n")


FOURTH_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "versioned-graph-name-to-system": (case_versioned_graph_name_to_system, ("torch", "jax")),
    "lib-folder-linked-to-older-copy": (case_lib_folder_linked_to_older_copy, ("torch", "jax")),
    "lib-folder-renamed-lib64": (case_lib_folder_renamed, ("torch", "jax")),
    "relative-ldlp-to-older-copy": (case_relative_ldlp_to_older_copy, ("torch", "jax")),
    "cwd-holds-older-nvidia-cudnn": (case_cwd_holds_older_nvidia_cudnn, ("torch", "jax")),
    "sitecustomize-on-pythonpath-maps-ops": (case_sitecustomize_on_pythonpath_maps_ops, ("torch", "jax")),
    "missing-preload+graph-deleted": (case_missing_preload_and_graph_deleted, ("torch", "jax")),
    "other-cuda-wheel-uninstalled-over-it": (case_other_cuda_wheel_uninstalled_over_it, ("torch", "jax")),
    "etc-ld-so-preload-system-ops": (case_ld_so_preload_system_ops, ("torch", "jax")),
}

# The fifth set, written in the sixteenth session after the fourth had run and two fixes came of it, before any of
# it was run (`--set fifth`).
def case_graph_replaced_by_linker_script(w: World) -> None:
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    graph.unlink()
    graph.write_text(f"/* GNU ld script */\nINPUT({w.system}/libcudnn_graph.so.9)\n")  # a -dev package's way


def case_heuristic_symlink_loop(w: World) -> None:
    heuristic = w.wheel / "libcudnn_heuristic.so.9"
    w.keep(heuristic)
    heuristic.unlink()
    heuristic.symlink_to("libcudnn_heuristic.so.9")  # ln -sf by hand onto itself


def case_pth_path_line_to_older_copy(w: World) -> None:
    older_copy(w, w.scratch / "vendored")
    w.write(w.site / "zz-vendored.pth", f"{w.scratch / 'vendored'}\n")  # a path line: appended to sys.path


def case_shim_replaced_by_system_copy(w: World) -> None:
    shim = w.wheel / "libcudnn.so.9"
    w.keep(shim)
    shim.unlink()
    shutil.copy2(w.system / "libcudnn.so.9", shim)


def case_engine_replaced_by_folder(w: World) -> None:
    engines = w.wheel / "libcudnn_engines_precompiled.so.9"
    w.keep(engines)
    engines.unlink()
    engines.mkdir()  # unpacked into a folder of the same name


FIFTH_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "graph-replaced-by-linker-script": (case_graph_replaced_by_linker_script, ("torch", "jax")),
    "heuristic-symlink-loop": (case_heuristic_symlink_loop, ("torch", "jax")),
    "pth-path-line-to-older-copy": (case_pth_path_line_to_older_copy, ("torch", "jax")),
    "shim-replaced-by-system-copy": (case_shim_replaced_by_system_copy, ("torch", "jax")),
    "engine-replaced-by-folder": (case_engine_replaced_by_folder, ("torch", "jax")),
}

# The sixth set, written in the sixteenth session before any of it was run, to be run once at the session's final
# code (`--set sixth`).
def case_runtime_engine_deleted(w: World) -> None:
    engine = w.wheel / "libcudnn_engines_runtime_compiled.so.9"  # the search goes on to the loader's cache
    w.keep(engine)
    engine.unlink()


def case_heuristic_replaced_by_ops_copy(w: World) -> None:
    heuristic = w.wheel / "libcudnn_heuristic.so.9"
    w.keep(heuristic)
    heuristic.unlink()
    shutil.copy2(w.wheel / "libcudnn_ops.so.9", heuristic)  # cp of the wrong file under the name


def case_regular_nvidia_package_on_pythonpath(w: World) -> None:
    package = w.scratch / "vendor" / "nvidia"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")  # a regular package named nvidia, without cudnn: it hides the wheels'
    w.env["PYTHONPATH"] = str(w.scratch / "vendor")


def _system_copy_in_torch_lib(w: World, name: str) -> None:
    """The wheel's ``name`` gone, and the system's copied next to torch's libraries ("copy the missing DLL next
    to torch's")."""
    gone = w.wheel / name
    w.keep(gone)
    gone.unlink()
    stray = w.site / "torch" / "lib" / name
    w.keep(stray)
    shutil.copy2(w.system / name, stray)


def case_graph_deleted_and_system_graph_in_torch_lib(w: World) -> None:
    _system_copy_in_torch_lib(w, "libcudnn_graph.so.9")


SIXTH_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "runtime-engine-deleted": (case_runtime_engine_deleted, ("torch", "jax")),
    "heuristic-replaced-by-ops-copy": (case_heuristic_replaced_by_ops_copy, ("torch", "jax")),
    "regular-nvidia-package-on-pythonpath": (case_regular_nvidia_package_on_pythonpath, ("torch", "jax")),
    "graph-deleted+system-graph-in-torch-lib": (case_graph_deleted_and_system_graph_in_torch_lib, ("torch", "jax")),
}

# The seventh set, written in the twenty-second session (2026-12-01) before any of it was run (`--set seventh`):
# a shim copied beside the framework's own libraries, the loader's configuration, two sub-libraries of another
# release, a start-up file that sets the search path too late, and a loader's cache naming a file that is gone.
def case_system_shim_in_torch_lib_and_wheel_shim_deleted(w: World) -> None:
    _system_copy_in_torch_lib(w, "libcudnn.so.9")


def case_ld_so_conf_older_copy_and_graph_deleted(w: World) -> None:
    older = older_copy(w, w.scratch / "opt-cudnn")
    w.write(Path("/etc/ld.so.conf.d/000-cudnn.conf"), f"{older}\n")  # an installer's drop-in, first of all
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    graph.unlink()
    subprocess.run(["ldconfig"], check=False)


def case_ops_and_cnn_linked_to_system(w: World) -> None:
    for name in ("libcudnn_ops.so.9", "libcudnn_cnn.so.9"):
        path = w.wheel / name
        w.keep(path)
        path.unlink()
        path.symlink_to(w.system / name)


def case_sitecustomize_sets_ldlp_too_late(w: World) -> None:
    moved = w.scratch / "moved"
    moved.mkdir(exist_ok=True)
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    shutil.move(str(graph), moved / graph.name)  # the library moved out, and the search path set from inside
    folder = w.scratch / "startup"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(f"import os\nos.environ['LD_LIBRARY_PATH'] = '{moved}'\n")
    w.env["PYTHONPATH"] = str(folder)


def case_stale_cache_entry_and_graph_deleted(w: World) -> None:
    graph = w.wheel / "libcudnn_graph.so.9"
    w.keep(graph)
    graph.unlink()
    system_graph = w.system / "libcudnn_graph.so.9"  # the cache still names it; ldconfig not run after
    for path in sorted(w.system.glob("libcudnn_graph.so*")):
        w.keep(path)
        path.unlink()
    assert not system_graph.exists()


SEVENTH_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "system-shim-in-torch-lib+wheel-shim-deleted": (case_system_shim_in_torch_lib_and_wheel_shim_deleted,
                                                    ("torch", "jax")),
    "ld-so-conf-older-copy+graph-deleted": (case_ld_so_conf_older_copy_and_graph_deleted, ("torch", "jax")),
    "ops-and-cnn-linked-to-system": (case_ops_and_cnn_linked_to_system, ("torch", "jax")),
    "sitecustomize-sets-ldlp-too-late": (case_sitecustomize_sets_ldlp_too_late, ("torch", "jax")),
    "stale-cache-entry+graph-deleted": (case_stale_cache_entry_and_graph_deleted, ("torch", "jax")),
}

# The eighth set, written in the twenty-seventh session (2026-12-02) before any of it was run (`--set eighth`): the
# CUDA 12 wheel installed over the CUDA 13 one (issue 27), a lone shim on PYTHONPATH, a sub-library cut short, a
# search-path entry naming a file, an engine of another release inside the wheel, a module named nvidia in the
# working folder, and the CUDA wheels cuDNN needs (NVRTC, cuBLASLt) taken away.
def case_cu12_wheel_installed_over_cu13(w: World) -> None:
    """`pip install nvidia-cudnn-cu12` after the CUDA 13 one: the same nvidia/cudnn/lib, its files over the other's,
    its own record (the system's 9.14 files stand for the CUDA 12 wheel's)."""
    names = sorted(p.name for p in w.wheel.glob("libcudnn*.so.9"))
    for name in names:
        path = w.wheel / name
        w.keep(path)
        path.unlink()
        shutil.copy2(w.system / name, path)
    info = w.site / "nvidia_cudnn_cu12-9.14.0.64.dist-info"
    w.keep(info)
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.14.0.64\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("".join(f"nvidia/cudnn/lib/{name},,\n" for name in names)
                                 + f"{info.name}/METADATA,,\n{info.name}/INSTALLER,,\n{info.name}/RECORD,,\n")


def case_shim_only_copy_on_pythonpath(w: World) -> None:
    lib = w.scratch / "vendor" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    shutil.copy2(w.system / "libcudnn.so.9", lib / "libcudnn.so.9")  # the shim alone, "all that the error named"
    w.env["PYTHONPATH"] = str(w.scratch / "vendor")


def case_cnn_cut_in_half(w: World) -> None:
    cnn = w.wheel / "libcudnn_cnn.so.9"
    w.keep(cnn)
    data = cnn.read_bytes()
    cnn.unlink()
    cnn.write_bytes(data[: len(data) // 2])  # an interrupted copy: its headers whole, its end missing


def case_ops_deleted_and_ldlp_names_a_file(w: World) -> None:
    ops = w.wheel / "libcudnn_ops.so.9"
    w.keep(ops)
    ops.unlink()
    w.env["LD_LIBRARY_PATH"] = str(w.system / "libcudnn_ops.so.9")  # the file, not its folder: the loader skips it


def case_precompiled_engines_from_system(w: World) -> None:
    engines = w.wheel / "libcudnn_engines_precompiled.so.9"
    w.keep(engines)
    engines.unlink()
    shutil.copy2(w.system / engines.name, engines)


def case_nvidia_module_in_cwd(w: World) -> None:
    cwd = w.scratch / "cwd"
    cwd.mkdir(exist_ok=True)
    (cwd / "nvidia.py").write_text("# a script of the user's, named after the company\n")


def _cuda_library(w: World, pattern: str) -> Path:
    """The CUDA wheel's file that ``pattern`` names (nvidia/cu13/lib on CUDA 13, nvidia/<part>/lib before)."""
    return next(p for p in sorted((w.site / "nvidia").glob(f"*/lib/{pattern}")) if not p.is_symlink())


def _delete_owned(w: World, path: Path) -> None:
    w.keep(path)
    path.unlink()
    w.owned.setdefault(_distribution_of(w.site, path), []).append(path)


def case_nvrtc_deleted(w: World) -> None:
    _delete_owned(w, _cuda_library(w, "libnvrtc.so.1*"))


def case_cublaslt_deleted(w: World) -> None:
    _delete_owned(w, _cuda_library(w, "libcublasLt.so.1*"))


def _distribution_of(site: Path, path: Path) -> str:
    """The canonical name of the distribution whose RECORD lists ``path`` (pip's way to know)."""
    relative = path.relative_to(site).as_posix()
    for record in site.glob("*.dist-info/RECORD"):
        if any(line.split(",", 1)[0] == relative for line in record.read_text().splitlines()):
            return re.sub(r"[-_.]+", "-", record.parent.name.split("-")[0]).lower()
    return ""


EIGHTH_CASES: dict[str, tuple[Callable[[World], None], tuple[str, ...]]] = {
    "cu12-wheel-installed-over-cu13": (case_cu12_wheel_installed_over_cu13, ("torch", "jax")),
    "shim-only-copy-on-pythonpath": (case_shim_only_copy_on_pythonpath, ("torch", "jax")),
    "cnn-cut-in-half": (case_cnn_cut_in_half, ("torch", "jax")),
    "ops-deleted+ldlp-names-a-file": (case_ops_deleted_and_ldlp_names_a_file, ("torch", "jax")),
    "precompiled-engines-from-system": (case_precompiled_engines_from_system, ("torch", "jax")),
    "nvidia-module-in-cwd": (case_nvidia_module_in_cwd, ("torch", "jax")),
    "nvrtc-deleted": (case_nvrtc_deleted, ("torch", "jax")),
    "cublaslt-deleted": (case_cublaslt_deleted, ("torch", "jax")),
}


def run_case(name: str, world: World, frameworks: tuple[str, ...]) -> dict[str, object]:
    """For each framework: the case made, the program run; where it fails, for each form of doctor, the case made
    again, doctor asked, its first error's actions applied, the program run again, everything put back."""
    make, _ = {**CASES, **NEW_CASES, **THIRD_CASES, **FOURTH_CASES, **FIFTH_CASES, **SIXTH_CASES,
               **SEVENTH_CASES, **EIGHTH_CASES}[name]
    record: dict[str, object] = {"case": name}
    cwd = world.scratch / "cwd"
    cwd.mkdir(exist_ok=True)
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}

    def made() -> dict[str, str]:
        world.env = dict(base_env)
        make(world)
        return {k: v for k, v in world.env.items() if v or k != "LD_LIBRARY_PATH"} | (
            {"LD_LIBRARY_PATH": world.env["LD_LIBRARY_PATH"]} if world.env.get("LD_LIBRARY_PATH") else {})

    try:
        for framework in frameworks:
            code = TORCH if framework == "torch" else JAX
            env = made()
            entry: dict[str, object] = {"before": run_program(code, env, cwd)}
            for form, args in (("plain", []), ("command", ["--", sys.executable, "-c", code])):
                if entry["before"]["ok"]:  # type: ignore[index]
                    break
                world.restore()
                env = made()
                said = doctor(args, env, cwd)
                after_env, refused = apply(list(said.get("actions") or []), world, env)  # type: ignore[arg-type]
                argv = json.loads(after_env.pop("CUDNNLOAD_RUN_ARGV", "null"))
                after = run_program(code, after_env, cwd) if not argv else {"ok": None, "note": "run action"}
                entry[form] = {**said, "refused": refused, "after": after}
            world.restore()
            record[framework] = entry
    finally:
        world.restore()
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "compositions.jsonl"))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--set", default="first",
                        choices=("first", "new", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "all"),
                        help="the first set of compositions, the second or third (written in the eleventh session), "
                             "the fourth to sixth (the sixteenth), the seventh (the twenty-second), the eighth (the "
                             "twenty-seventh), or all")
    args = parser.parse_args()
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    system = next(Path(d) for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
                  if (Path(d) / "libcudnn.so.9").exists())
    os.environ["CUDNNLOAD_TREE"] = os.pathsep.join([str(ROOT), str(ROOT / "plugins"),
                                                   *(p for p in os.environ.get("PYTHONPATH", "").split(":") if p)])
    rows = []
    with open(args.out, "w") as out:
        chosen = {"first": CASES, "new": NEW_CASES, "third": THIRD_CASES, "fourth": FOURTH_CASES,
                  "fifth": FIFTH_CASES, "sixth": SIXTH_CASES, "seventh": SEVENTH_CASES, "eighth": EIGHTH_CASES,
                  "all": {**CASES, **NEW_CASES, **THIRD_CASES, **FOURTH_CASES, **FIFTH_CASES, **SIXTH_CASES,
                          **SEVENTH_CASES, **EIGHTH_CASES}}[args.set]
        for name, (_, frameworks) in chosen.items():
            if args.only and name not in args.only:
                continue
            with tempfile.TemporaryDirectory() as scratch:
                world = World(site, site / "nvidia" / "cudnn" / "lib", system, Path(scratch))
                record = run_case(name, world, frameworks)
            out.write(json.dumps(record) + "\n")
            out.flush()
            rows.append(record)
            for framework in frameworks:
                entry = record.get(framework) or {}
                before = entry.get("before", {})
                line = f"{name:<38} {framework:<6} before {'ok' if before.get('ok') else 'FAILS'}"
                for form in ("plain", "command"):
                    said = entry.get(form)
                    if said:
                        after = said["after"].get("ok")
                        line += f" | {form}: {said.get('first') or said.get('error')} -> " + (
                            "fixed" if after else "not fixed" if after is False else said["after"].get("note", "?"))
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
