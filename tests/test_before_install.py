"""A verdict before anything is installed or run (issue 34): `doctor --requirements` and `doctor --root`.

The requirement sets are made of small wheels written here into a local index (pip's own ``--find-links``):
pip resolves them, the prediction says which files stay and in which order pip installs, and pip then installs
them for real into a ``--target`` folder, whose files and whose "Installing collected packages" line are the
answer. The range-request reader reads a real cuDNN wheel through a local HTTP server that answers ranges, and
a small one through a server that does not. The roots are built here: an ``/etc/ld.so.cache`` written by
``ldconfig -r``, a real cuDNN 9.28 folder reached through an absolute symbolic link that leads nowhere on this
machine, and a ``ld.so.conf`` drop-in. Network tests (PyPI) are marked slow.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudnnload.errors import UsageError
from cudnnload.resolve.pipset import resolve_requirements
from cudnnload.resolve.rootview import image_environment
from cudnnload.resolve.wheelfacts import WheelError, wheel_facts
from tests.wheels import cache_root, lib_folder

PYTHON = sys.executable
CLI = [PYTHON, "-m", "cudnnload"]


def make_wheel(folder: Path, name: str, version: str, files: dict[str, bytes], requires: tuple[str, ...] = (),
               record: bool = True) -> Path:
    """A wheel pip installs: METADATA, WHEEL, RECORD (unless not wanted) and ``files``."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    info = f"{dist}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = ("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n" +
                                   "".join(f"Requires-Dist: {r}\n" for r in requires)).encode()
    members[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: cudnnload-tests\nRoot-Is-Purelib: true\n"
                                b"Tag: py3-none-any\n")
    rows = [f"{member},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
            f"{len(data)}" for member, data in members.items()]
    if record:
        members[f"{info}/RECORD"] = ("\n".join(rows + [f"{info}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for member, data in members.items():
            out.writestr(member, data)
    return path


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A find-links folder: two cuDNN-named distributions writing the same shim with other bytes, their common
    dependency, and a distribution that requires both."""
    folder = tmp_path / "index"
    folder.mkdir()
    make_wheel(folder, "nvidia-cublas-cu99", "1.0", {"nvidia/cublas/lib/libcublasLt.so.99": b"lt"})
    make_wheel(folder, "nvidia-cudnn-cu98", "9.1.0.1", {"nvidia/cudnn/lib/libcudnn.so.9": b"from cu98",
                                                        "nvidia/cudnn/lib/only98.txt": b"x"},
               requires=("nvidia-cublas-cu99",))
    make_wheel(folder, "nvidia-cudnn-cu99", "9.2.0.1", {"nvidia/cudnn/lib/libcudnn.so.9": b"from cu99"},
               requires=("nvidia-cublas-cu99",))
    make_wheel(folder, "app", "1.0", {"app/__init__.py": b""}, requires=("nvidia-cudnn-cu98", "nvidia-cudnn-cu99"))
    return folder


def _local(folder: Path) -> str:
    return f"--no-index --find-links {folder}"


def test_the_prediction_names_the_order_and_the_files_pip_really_leaves(index: Path, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("app\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--pip-args", _local(index),
                           "--json"], capture_output=True, text=True, timeout=300, check=False)
    predicted = json.loads(done.stdout)["result"]
    target = tmp_path / "target"
    real = subprocess.run([PYTHON, "-m", "pip", "install", "--no-index", "--find-links", str(index), "--target",
                           str(target), "-r", str(requirements)], capture_output=True, text=True, timeout=300,
                          check=True)
    line = next(x for x in real.stdout.splitlines() if x.startswith("Installing collected packages:"))
    installed = [name.strip() for name in line.split(":", 1)[1].split(",")]
    assert [label.split(" ")[0] for label in predicted["installs"]] == installed
    (pair,) = predicted["overwrites"]
    winner = pair["last"].split(" ")[0]
    assert (target / "nvidia/cudnn/lib/libcudnn.so.9").read_bytes() == f"from {winner[-4:]}".encode()
    assert pair["paths"] == ["nvidia/cudnn/lib/libcudnn.so.9"]
    assert (target / "nvidia/cudnn/lib/only98.txt").exists()  # written by one only: no overwrite
    (conflict,) = [f for f in predicted["findings"] if f["code"] == "record-conflict"]
    assert winner in conflict["message"] and done.returncode == 0


def test_a_failing_prediction_exits_1_with_the_fix_its_model_gives(tmp_path: Path) -> None:
    """CTranslate2 4.5.0's surveyed wheel bundles the cuDNN 9.1 shim and NEEDs it; its sub-libraries it opens by
    name, and the set writes them where no search looks: the fix is that folder on LD_LIBRARY_PATH."""
    folder = tmp_path / "index"
    folder.mkdir()
    make_wheel(folder, "ctranslate2", "4.5.0", {"ctranslate2/__init__.py": b"",
                                                "ctranslate2.libs/libcudnn-74a4c495.so.9.1.0": b"bundled"})
    make_wheel(folder, "nvidia-cudnn-cu95", "9.1.0.1", {f"nvidia/cudnn/lib/{name}": b"x" for name in (
        "libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
        "libcudnn_engines_runtime_compiled.so.9")})
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("ctranslate2==4.5.0\nnvidia-cudnn-cu95\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--pip-args", _local(folder),
                           "--json"], capture_output=True, text=True, timeout=300, check=False)
    predicted = json.loads(done.stdout)["result"]
    (expected,) = predicted["frameworks"]
    assert expected["shim"].endswith("ctranslate2.libs/libcudnn-74a4c495.so.9.1.0") and expected["bundled"]
    assert str(expected["release"]) == "9.1.0" and not expected["works"]
    (missing,) = [f for f in predicted["findings"] if f["code"] == "missing-sublibrary"]
    (action,) = missing["fix"]["actions"]
    assert action["do"] == "env-set" and action["variable"] == "LD_LIBRARY_PATH"
    assert action["value"] == os.path.join(predicted["site"], "nvidia/cudnn/lib")
    assert done.returncode == 1


def test_a_requirement_pip_cannot_resolve_is_one_line_and_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("no-such-distribution-anywhere==1.0\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--pip-args", _local(empty)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip cannot resolve" in done.stderr
    assert "no-such-distribution-anywhere" in done.stderr


def test_a_requirement_only_its_source_answers_is_refused_and_none_of_its_code_runs(tmp_path: Path) -> None:
    """"Before anything is installed or run": a local folder (or an sdist) gives its metadata only by running its
    setup.py or build backend; a hostile user's folder wrote a file from there. Refused in one line, nothing run."""
    empty, package = tmp_path / "empty", tmp_path / "planted"
    empty.mkdir()
    package.mkdir()
    ran = tmp_path / "ran"
    (package / "setup.py").write_text(f"open({str(ran)!r}, 'a').write('ran')\n"
                                      "from setuptools import setup\nsetup(name='planted', version='1.0')\n")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{package}\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--pip-args", _local(empty)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert not ran.exists()
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "only as its source" in done.stderr and "running its code" in done.stderr


@pytest.mark.parametrize(("name", "head"), [
    ("poetry.lock", "# This file is automatically @generated by Poetry\n[[package]]\n"),
    ("Pipfile.lock", '{"_meta": {"pipfile-spec": 6}}'),
    ("locked.txt", "# This file is automatically @generated by Poetry 1.8\n[[package]]\nname = \"x\"\n"),
])
def test_another_tools_lock_file_is_refused_by_its_tool(tmp_path: Path, name: str, head: str) -> None:
    lock = tmp_path / name
    lock.write_text(head)
    done = subprocess.run([*CLI, "doctor", "--requirements", str(lock)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "lock file, which pip cannot read" in done.stderr and str(lock) in done.stderr


def test_a_pylock_toml_needs_a_pip_that_reads_it(tmp_path: Path) -> None:
    lock = tmp_path / "pylock.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "pip"\n')
    with pytest.raises(UsageError, match=r"pip reads one from 26\.1.*this pip is 23"):
        resolve_requirements([str(lock)])


def test_a_wheel_without_record_is_named_and_nothing_is_installed(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    folder.mkdir()
    make_wheel(folder, "nvidia-cudnn-cu97", "9.0.0.1", {"nvidia/cudnn/lib/libcudnn.so.9": b"x"}, record=False)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("nvidia-cudnn-cu97\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--pip-args", _local(folder)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and "has no .dist-info/RECORD" in done.stderr
    check = subprocess.run([PYTHON, "-m", "pip", "show", "nvidia-cudnn-cu97"], capture_output=True, text=True,
                           check=False)
    assert check.returncode != 0  # not installed


# --- reading a wheel where it lies ------------------------------------------------------------------------------


class _Ranges(http.server.SimpleHTTPRequestHandler):
    """A file server that answers ``Range: bytes=A-B`` with 206, as PyPI's file host does."""

    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = Path(self.translate_path(self.path))
        wanted = self.headers.get("Range")
        if wanted is None or not path.is_file():
            super().do_GET()
            return
        first, last = (int(x) for x in wanted.removeprefix("bytes=").split("-"))
        size = path.stat().st_size
        last = min(last, size - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        with open(path, "rb") as handle:
            handle.seek(first)
            left = last - first + 1
            while left > 0:
                chunk = handle.read(min(left, 1 << 20))
                self.wfile.write(chunk)
                left -= len(chunk)


class _NoRanges(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


def _serve(folder: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             lambda *a: handler(*a, directory=str(folder)))  # type: ignore[misc]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_range_requests_read_the_graph_library_not_the_whole_wheel(tmp_path: Path) -> None:
    wheel = cache_root() / "wheels" / "nvidia_cudnn_cu12-9.0.0.312-py3-none-manylinux2014_x86_64.whl"
    if not wheel.exists():
        pytest.skip("run `make wheels` for the real cuDNN wheels")
    (tmp_path / wheel.name).symlink_to(wheel)
    for url in _serve(tmp_path, _Ranges):
        facts = wheel_facts("nvidia-cudnn-cu12", "9.0.0.312", f"{url}/{wheel.name}", None, cudnn=True)
    assert facts.how == "range requests"
    assert facts.cudnn is not None and str(facts.cudnn.release) == "9.0.0" and facts.cudnn.cudart_version == 12030
    assert facts.fetched < 3 << 20 < wheel.stat().st_size // 100  # the graph member (1 MB) and the directory
    assert facts.writes("nvidia/cudnn/lib/libcudnn_graph.so.9") is not None


def test_a_server_without_ranges_is_read_from_the_whole_file(tmp_path: Path) -> None:
    make_wheel(tmp_path, "nvidia-cudnn-cu96", "9.0.0.1", {"nvidia/cudnn/lib/libcudnn.so.9": b"x" * 1000})
    for url in _serve(tmp_path, _NoRanges):
        facts = wheel_facts("nvidia-cudnn-cu96", "9.0.0.1", f"{url}/nvidia_cudnn_cu96-9.0.0.1-py3-none-any.whl", None,
                            cudnn=True)
    assert facts.how.startswith("whole file") and facts.writes("nvidia/cudnn/lib/libcudnn.so.9") is not None


def test_a_zip_without_record_is_a_wheel_error(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "thing", "1.0", {"thing/x.py": b""}, record=False)
    with pytest.raises(WheelError, match="no .dist-info/RECORD"):
        wheel_facts("thing", "1.0", path.as_uri(), None, cudnn=False)


@pytest.mark.parametrize(("text", "cuda"), [("535.104.05", 12020), ("580.65.06", 13000), ("570.86.10", 12080),
                                           ("12.4", 12040), ("13", 13000), ("470.57.02", 11040), ("410.48", None),
                                           ("latest", None)])
def test_a_driver_is_named_by_its_version_or_the_cuda_it_supports(text: str, cuda: int | None) -> None:
    from cudnnload.resolve.hardware import driver_cuda_version

    assert driver_cuda_version(text) == cuda


def test_a_driver_option_that_is_no_version_is_a_usage_error(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("x\n")
    done = subprocess.run([*CLI, "doctor", "--requirements", str(requirements), "--driver", "latest"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "--driver 'latest'" in done.stderr


# --- an image's environment --------------------------------------------------------------------------------------


def test_an_image_environment_from_lines_and_from_an_oci_config() -> None:
    assert image_environment("# x\nexport PATH=/bin\nLD_LIBRARY_PATH=/a:/b\n", "env") == {
        "PATH": "/bin", "LD_LIBRARY_PATH": "/a:/b"}
    config = {"architecture": "amd64", "config": {"Env": ["PATH=/usr/bin", "CUDNN_PATH=/opt/c"]}}
    assert image_environment(json.dumps(config), "config.json") == {"PATH": "/usr/bin", "CUDNN_PATH": "/opt/c"}
    assert image_environment(json.dumps([{"Config": {"Env": ["A=1"]}}]), "inspect.json") == {"A": "1"}
    with pytest.raises(UsageError, match="not NAME=VALUE"):
        image_environment("just words\n", "env")


# --- a root, judged from outside ---------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def image() -> Iterator[Path]:
    """A root with its own ld.so.cache, and a real cuDNN 9.28 in /opt/cudnn/lib reached through an absolute
    link, /usr/lib/cudnn -> /opt/cudnn, that leads to nothing on this machine (in a folder anyone may read)."""
    if os.geteuid() != 0 or shutil.which("ldconfig") is None:
        pytest.skip("ldconfig -r (root) writes the image's cache")
    if os.path.exists("/opt/cudnn"):
        pytest.skip("/opt/cudnn exists here: the absolute link would not show where it leads")
    holder = Path(tempfile.mkdtemp(prefix="cudnnload-image-"))
    holder.chmod(0o755)
    root = holder / "root"
    (root / "etc" / "ld.so.conf.d").mkdir(parents=True)
    (root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (root / "opt" / "cudnn").mkdir(parents=True)
    shutil.copytree(lib_folder("cu12-9.28.0.42"), root / "opt" / "cudnn" / "lib", copy_function=os.link)
    (root / "usr" / "lib").mkdir(parents=True)
    (root / "usr" / "lib" / "cudnn").symlink_to("/opt/cudnn")
    subprocess.run(["ldconfig", "-r", str(root)], check=True, capture_output=True)
    yield root
    shutil.rmtree(holder)


def _doctor(*args: str) -> tuple[int, dict[str, object], str]:
    done = subprocess.run([*CLI, "doctor", *args, "--json"], capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, json.loads(done.stdout)["result"] if done.stdout.strip() else {}, done.stderr


def test_a_root_is_read_from_inside_it_absolute_links_included(image: Path, tmp_path: Path) -> None:
    env = tmp_path / "env"
    env.write_text("LD_LIBRARY_PATH=/usr/lib/cudnn/lib\n")
    before = _snapshot(image)
    code, report, _ = _doctor("--root", str(image), "--env-file", str(env))
    assert report["chosen"] == "/usr/lib/cudnn/lib" and report["release"] == "9.28.0"
    (install,) = report["inventory"]["installs"]
    assert {step["path"].rsplit("/", 1)[0] for step in install["plan"]} == {"/usr/lib/cudnn/lib"}
    assert _snapshot(image) == before  # nothing written into the root
    # the image has no zlib of its own: this machine's is never the answer
    assert any(f["code"] == "missing-dependency" and "libz.so.1" in f["message"] for f in report["findings"])
    assert code == 1


def test_a_drop_in_missing_from_the_cache_counts_once_ldconfig_runs_at_start(image: Path) -> None:
    (image / "etc" / "ld.so.conf.d" / "cudnn.conf").write_text("/usr/lib/cudnn/lib\n")
    _, plain, _ = _doctor("--root", str(image))
    assert any(f["code"] == "ldcache-stale" for f in plain["findings"])
    assert not plain["inventory"]["installs"]
    _, started, _ = _doctor("--root", str(image), "--driver", "580.65.06")
    (install,) = started["inventory"]["installs"]
    assert install["folder"] == "/usr/lib/cudnn/lib" and install["found_via"] == "ld.so.cache"


def test_a_root_without_ld_so_cache_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    before = _snapshot(root)
    code, _, stderr = _doctor("--root", str(root))
    assert code == 2 and "no /etc/ld.so.cache" in stderr and stderr.count("\n") == 1
    assert _snapshot(root) == before


def test_an_unprivileged_reader_is_confined_in_a_user_namespace(image: Path, tmp_path: Path) -> None:
    """nobody runs cudnnload from a folder it may read (this venv's interpreter lies under /root), with the
    system's python3: the reader gets a user namespace of its own for its chroot."""
    system = shutil.which("python3", path="/usr/bin")
    if system is None:
        pytest.skip("no /usr/bin/python3 for an unprivileged run")
    lib = Path(tempfile.mkdtemp(prefix="cudnnload-lib-"))
    try:
        for package in ("cudnnload", "elftools", "click", "packaging"):
            source = Path(__import__(package).__file__).parent  # type: ignore[arg-type]
            shutil.copytree(source, lib / package, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["chmod", "-R", "a+rX", str(lib)], check=True)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", system, "-m",
                               "cudnnload", "doctor", "--root", str(image), "--json"], capture_output=True, text=True,
                              timeout=300, check=False, cwd="/",
                              env={"PATH": "/usr/bin:/bin", "HOME": "/", "CUDNNLOAD_NO_CACHE": "1",
                                   "PYTHONPATH": str(lib)})
    finally:
        shutil.rmtree(lib)
    if "unshare(CLONE_NEWUSER) failed" in done.stderr:
        pytest.skip(f"no user namespace for an unprivileged user here: {done.stderr.strip()}")
    report = json.loads(done.stdout)["result"]
    assert [i["folder"] for i in report["inventory"]["installs"]] == []  # the link's folder is on no search path
    assert report["target"]["description"].startswith(f"the root file system {image}"), done.stderr


@pytest.mark.slow
def test_a_pylock_toml_is_read_by_a_pip_that_reads_it(index: Path, tmp_path: Path) -> None:
    """pip >= 26.1 (from PyPI) locks the set into a pylock.toml and reads it back with -r: the prediction for that
    interpreter names pip's order and the file that stays, as the real install of the lock file shows."""
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "-U", "pip>=26.1"], check=True, timeout=600)
    (tmp_path / "requirements.txt").write_text("app\n")
    lock = tmp_path / "pylock.toml"
    subprocess.run([python, "-m", "pip", "lock", "-q", "--no-index", "--find-links", str(index), "-r",
                    str(tmp_path / "requirements.txt"), "-o", str(lock)], check=True, timeout=600, cwd=tmp_path)
    code, predicted, _ = _doctor("--requirements", str(lock), "--python", python, "--pip-args", _local(index))
    assert predicted["order"].startswith("pip 26.") and code == 0
    target = tmp_path / "target"
    real = subprocess.run([python, "-m", "pip", "install", "--no-index", "--find-links", str(index), "--target",
                           str(target), "-r", str(lock)], capture_output=True, text=True, timeout=600, check=True)
    line = next(x for x in real.stdout.splitlines() if x.startswith("Installing collected packages:"))
    installed = [name.strip() for name in line.split(":")[1].split(",")]
    assert [label.split(" ")[0] for label in predicted["installs"]] == installed
    (pair,) = predicted["overwrites"]
    assert (target / "nvidia/cudnn/lib/libcudnn.so.9").read_bytes() == f"from {pair['last'].split()[0][-4:]}".encode()


@pytest.mark.slow
def test_a_pypi_cudnn_wheel_is_predicted_from_a_fraction_of_it(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("nvidia-cudnn-cu12==9.28.0.42\n")
    code, report, _ = _doctor("--requirements", str(requirements), "--driver", "12.2")
    (cudnn,) = [r for r in report["read"] if r["distribution"] == "nvidia-cudnn-cu12"]
    assert cudnn["cudnn"] == "9.28.0, CUDA 12.9"
    assert cudnn["fetched"] < 60e6 or cudnn["how"] == "remembered"
    assert code == 0
