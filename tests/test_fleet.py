"""`cudnnload fleet`: reports from a folder (what `doctor --output DIR/%N.json` writes under Slurm) and from a
real local Ray cluster of four nodes, one with an older cuDNN on its LD_LIBRARY_PATH and one without cuDNN."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudnnload.cli import EXIT_CANNOT_RUN, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from tests.test_doctor_targets import cli, one_line_error
from tests.wheels import cache_root, lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]
NEW, OLD, CUBLAS = "cu12-9.28.0.42", "cu12-9.0.0.312", "cublas-cu12-12.9.1.4"


def search_path(tag: str) -> str:
    return f"{lib_folder(tag)}:{lib_folder(CUBLAS)}"


def system_cudnn() -> bool:
    listed = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    return any(line.strip().startswith("libcudnn.so.9 ") for line in listed.splitlines())


# --- the folder: reports written by doctor --output ----------------------------------------------------

@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four nodes' reports, as `srun cudnnload doctor libcudnn.so.9 --output reports/%N.json` leaves them."""
    folder = tmp_path_factory.mktemp("reports")
    environments = {"node-a": search_path(NEW), "node-b": search_path(NEW), "node-c": search_path(OLD),
                    "node-d": None}
    for node, path in environments.items():
        env = {"LD_LIBRARY_PATH": path} if path else {}
        done = cli("doctor", "libcudnn.so.9", "--output", str(folder / f"{node}.json"), env=env)
        assert done.stdout.startswith(f"cudnnload doctor: wrote {folder / node}.json"), done.stdout + done.stderr
    return folder


@pytest.mark.wheels
def test_doctor_output_names_the_file_after_the_host(tmp_path: Path) -> None:
    done = cli("doctor", "--output", str(tmp_path / "reports" / "%N.json"), env={"CUDNNLOAD_NO_CACHE": "1"})
    written = tmp_path / "reports" / f"{socket.gethostname().split('.')[0]}.json"
    verdict = "healthy" if done.returncode == 0 else "PROBLEMS"
    assert done.stdout.strip() == f"cudnnload doctor: wrote {written} ({verdict})"
    doc = json.loads(written.read_text())
    assert doc["kind"] == "doctor" and doc["result"]["host"] == socket.gethostname()
    assert oct(written.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.wheels
def test_the_folder_shows_the_two_odd_nodes_with_their_difference_and_fix(reports: Path) -> None:
    done = cli("fleet", str(reports))
    assert done.returncode == EXIT_PROBLEMS, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("cudnnload fleet: 4 nodes in 3 groups; 2 differ from the reference group")
    assert "2 nodes    healthy   cuDNN 9.28.0" in out and "node-a, node-b" in out
    older = out.index("node-c, against the reference group (node-a, node-b):")
    missing = out.index("node-d, against the reference group (node-a, node-b):")
    assert f"    + {search_path(OLD)}" in out[older:missing]  # the exact difference
    assert f"  fix: export LD_LIBRARY_PATH={search_path(NEW)} (on node-c, as on the reference group)" in out
    assert "    + 9.0.0 in" in out[older:missing] and "    + none" in out[missing:]
    assert "  error   not-found                on node-d" in out
    assert "None" not in out  # a fact the report holds as null is "none" or "not found", never Python's word


@pytest.mark.wheels
def test_the_folder_as_json(reports: Path) -> None:
    done = cli("fleet", "--json", str(reports))
    result = json.loads(done.stdout)["result"]
    assert result["nodes"] == 4 and [g["nodes"] for g in result["groups"]] == [["node-a", "node-b"], ["node-c"],
                                                                                ["node-d"]]
    assert result["groups"][0]["differences"] == [] and result["groups"][1]["differences"]
    assert {"fact": {"kind": "variable", "name": "LD_LIBRARY_PATH"}, "what": "$LD_LIBRARY_PATH",
            "left": search_path(NEW), "right": None} in result["groups"][2]["differences"]
    assert result["failed"] == [] and result["healthy"] is False


@pytest.mark.wheels
def test_alike_healthy_nodes_exit_zero(reports: Path, tmp_path: Path) -> None:
    for node in ("node-a", "node-b"):
        shutil.copy(reports / f"{node}.json", tmp_path / f"{node}.json")
    done = cli("fleet", str(tmp_path))
    assert done.returncode == EXIT_OK and done.stdout.rstrip().endswith("all 2 nodes healthy and alike"), done.stdout


@pytest.mark.wheels
def test_a_bad_report_is_one_node_without_a_report(reports: Path, tmp_path: Path) -> None:
    shutil.copy(reports / "node-a.json", tmp_path / "node-a.json")
    (tmp_path / "cut.json").write_text((reports / "node-b.json").read_text()[:500])
    (tmp_path / "other.json").write_text(json.dumps({"schema": 1, "kind": "inventory", "result": {}}))
    (tmp_path / "newer.json").write_text(json.dumps({"schema": 7, "kind": "doctor", "result": {}}))
    os.mkfifo(tmp_path / "pipe.json")
    done = cli("fleet", str(tmp_path), timeout=20)
    assert done.returncode == EXIT_PROBLEMS and "Traceback" not in done.stderr
    failed = done.stdout[done.stdout.index("nodes without a report:"):]
    assert "cut: not JSON" in failed and "cut short?" in failed
    assert "other: not a `cudnnload doctor --json` report (kind 'inventory')" in failed
    assert "newer: report schema 7; this cudnnload reads schema 1" in failed
    assert "pipe: not a regular file: a FIFO" in failed


def test_an_empty_folder_or_no_folder_is_a_usage_error(tmp_path: Path) -> None:
    one_line_error(cli("fleet", str(tmp_path)), EXIT_USAGE, str(tmp_path), "no reports here")
    one_line_error(cli("fleet", str(tmp_path / "nope")), EXIT_USAGE, "not a folder")
    one_line_error(cli("fleet"), EXIT_USAGE, "give a FOLDER of reports, or --ray")


def without(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment in which importing each of ``packages`` fails as it does where it is not installed."""
    for package in packages:
        (tmp_path / "hidden" / package).mkdir(parents=True)
        missing = f"raise ImportError(\"No module named {package!r}\")\n"
        (tmp_path / "hidden" / package / "__init__.py").write_text(missing)
    return {"PYTHONPATH": os.pathsep.join((str(tmp_path / "hidden"), python_path(ROOT)))}


def test_a_package_it_needs_missing_is_exit_3_naming_the_extra(tmp_path: Path) -> None:
    """README, exit codes: 3 where cudnnload could not do its work, a package it needs missing among the reasons
    (2 is the caller's mistake, which this is not)."""
    one_line_error(cli("fleet", "--ray", env=without(tmp_path, "ray")), EXIT_CANNOT_RUN, "Ray is not installed",
                   "cudnnload[ray]")


@pytest.mark.wheels
def test_a_plot_without_matplotlib_is_exit_3_naming_the_extra(tmp_path: Path) -> None:
    one_line_error(cli("trace", "--lazy", "--runs", "1", "--plot", str(tmp_path / "t.png"), str(lib_folder(NEW)),
                       env=without(tmp_path, "matplotlib")), EXIT_CANNOT_RUN, "--plot needs matplotlib",
                   "cudnnload[plot]")


@pytest.mark.wheels
def test_reading_keeps_one_report_per_group_not_per_node(reports: Path) -> None:
    """1 000 nodes of 2 setups: two reports are kept, whatever the number of nodes."""
    from cudnnload.diagnose import fleet

    docs = [json.loads((reports / f"{n}.json").read_text()) for n in ("node-a", "node-c")]
    kept: list[object] = []
    original = fleet._Building.__init__

    def counting(self: object, *args: object, **kwargs: object) -> None:
        kept.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    fleet._Building.__init__ = counting  # type: ignore[method-assign]
    try:
        result = fleet.summarize(fleet.NodeReport(f"n{i}", docs[i % 7 == 0]) for i in range(1000))
    finally:
        fleet._Building.__init__ = original  # type: ignore[method-assign]
    assert len(kept) == 2 and result.nodes == 1000 and [len(g.nodes) for g in result.groups] == [857, 143]


# --- a real Ray cluster -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """Four Ray nodes on this machine (ray.cluster_utils.Cluster, as Ray's own tests make them), each with
    its own environment, which the workers it starts inherit."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'cudnnload[ray]')")
    from ray.cluster_utils import Cluster

    if not (cache_root() / "unpacked").is_dir():
        pytest.skip("the wheels are not unpacked: run `make wheels`")
    base = {"PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())}
    nodes = {"node-a": {"LD_LIBRARY_PATH": search_path(NEW)}, "node-b": {"LD_LIBRARY_PATH": search_path(NEW)},
             "node-c": {"LD_LIBRARY_PATH": search_path(OLD)}, "node-d": {}}
    try:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "node_name": "node-a", "env_vars": {**base, **nodes["node-a"]}})
        for name in ("node-b", "node-c", "node-d"):
            cluster.add_node(num_cpus=1, node_name=name, env_vars={**base, **nodes[name]})
        cluster.wait_for_nodes()
    except Exception as exc:  # noqa: BLE001 (whatever keeps Ray from starting here)
        pytest.skip(f"Ray cannot start a local cluster here: {exc}")
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.wheels
@pytest.mark.timeout_s(120)  # four doctors on four nodes of a 2-core machine, the cluster's start
@pytest.mark.slow
def test_fleet_through_ray_names_the_two_odd_nodes_and_the_difference(ray_cluster: Any) -> None:
    done = cli("fleet", "--ray", ray_cluster.address, "libcudnn.so.9", timeout=110)
    out = done.stdout
    assert done.returncode == EXIT_PROBLEMS and "Traceback" not in done.stderr, out + done.stderr
    assert out.startswith("cudnnload fleet: 4 nodes in 3 groups; 2 differ from the reference group"), out
    assert "node-c, against the reference group (node-a, node-b):" in out
    assert "node-d, against the reference group (node-a, node-b):" in out
    assert f"  fix: export LD_LIBRARY_PATH={search_path(NEW)} (on node-c, as on the reference group)" in out
    if not system_cudnn():  # the GPU machine's apt cuDNN is found there instead of nothing
        assert "  error   not-found                on node-d" in out


@pytest.mark.wheels
@pytest.mark.timeout_s(120)
@pytest.mark.slow
def test_a_node_whose_doctor_fails_is_reported_with_the_reason(ray_cluster: Any) -> None:
    done = cli("fleet", "--ray", ray_cluster.address, "--python", "/no/such/python", timeout=110)
    assert done.returncode == EXIT_PROBLEMS and "Traceback" not in done.stderr, done.stdout + done.stderr
    failed = done.stdout[done.stdout.index("nodes without a report:"):]
    for node in ("node-a", "node-b", "node-c", "node-d"):
        assert f"  {node}: cudnnload doctor gave no report: cudnnload: error: /no/such/python" in failed


_SLOW = """
import os, sys, time
if sys.argv[1:2] == ["doctor"]:  # the doctor a fleet task starts on this node (`python -c ... doctor`), not Ray's
    open(os.environ["CUDNNLOAD_TEST_STARTED"], "w").close()
    time.sleep(100)
"""


@pytest.mark.wheels
@pytest.mark.timeout_s(120)
@pytest.mark.slow
def test_a_node_that_dies_or_hangs_during_its_task_is_reported_as_such(ray_cluster: Any, tmp_path: Path) -> None:
    """node-e's doctor hangs (a sitecustomize of its own sleeps in it): with a short --timeout it is reported
    as timed out; then, while its doctor hangs again, the node is removed from the cluster mid-task."""
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(_SLOW)
    started = tmp_path / "started"
    node = ray_cluster.add_node(num_cpus=1, node_name="node-e", env_vars={
        "PYTHONPATH": python_path(tmp_path / "slow", ROOT), "CUDNNLOAD_CACHE": str(cache_root()),
        "LD_LIBRARY_PATH": search_path(NEW), "CUDNNLOAD_TEST_STARTED": str(started)})
    ray_cluster.wait_for_nodes()

    timed_out = cli("fleet", "--ray", ray_cluster.address, "--timeout", "2", "libcudnn.so.9", timeout=60)
    assert "  node-e: cudnnload doctor did not end within 2 s" in timed_out.stdout, timed_out.stdout
    assert timed_out.returncode == EXIT_PROBLEMS

    started.unlink()
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())}
    running = subprocess.Popen([sys.executable, "-m", "cudnnload", "fleet", "--ray", ray_cluster.address,
                                "--timeout", "60", "libcudnn.so.9"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environ)
    try:
        deadline = time.monotonic() + 40
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "node-e's doctor never started"
        ray_cluster.remove_node(node)
        out, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == EXIT_PROBLEMS and "Traceback" not in err, out + err
    assert "  node-e: the task failed:" in out, out
    assert "4 nodes" in out.splitlines()[0] or "5 nodes" in out.splitlines()[0]


@pytest.mark.slow
def test_an_unreachable_ray_address_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'cudnnload[ray]')")
    done = cli("fleet", "--ray", "127.0.0.1:9", timeout=50)
    one_line_error(done, EXIT_USAGE, "127.0.0.1:9")


@pytest.mark.slow
def test_an_address_where_something_else_listens_is_an_error_in_bounded_time() -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'cudnnload[ray]')")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        done = cli("fleet", "--ray", address, "--connect-timeout", "5", timeout=30)
        assert time.monotonic() - started < 20
    one_line_error(done, EXIT_USAGE, f"no Ray cluster answered at {address} within 5 s")
