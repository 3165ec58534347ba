"""The controller image as a user gets it: built from the committed Dockerfile, run as the
chart runs it (read-only root, only /tmp writable, no capabilities, uid 10001).

Every container shares the host's network namespace and binds 127.0.0.1 only; the
registry and the API server it is pointed at are closed ports on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.support.image import ControllerImage, Podman, base_image, push_image
from tests.support.ports import free_port
from tests.support.registry import RegistryServer
from tests.support.serve import dead_kubeconfig, scrape_metric
from tests.support.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "autoroll"
TOKEN = "tok-image-test-0123456789"
KUBECONFIG = "/etc/autoroll/kubeconfig"

#: What the chart's securityContext and volumes amount to (charts/autoroll/values.yaml and
#: templates/deployment.yaml): readOnlyRootFilesystem, capabilities drop ALL,
#: allowPrivilegeEscalation false; podman's own tmpfs on /tmp, /var/tmp and /run is off,
#: as Kubernetes mounts none.
CHART_SECURITY = (
    "--read-only",
    "--read-only-tmpfs=false",
    "--cap-drop=all",
    "--security-opt=no-new-privileges",
)
#: The chart's `tmp` volume: an in-memory emptyDir (mode 0777) of tmpSizeLimit at /tmp.
CHART_TMP = ("--mount=type=tmpfs,destination=/tmp,tmpfs-size=16m,tmpfs-mode=0777",)


def run(
    podman: Podman, image: ControllerImage, *args: str, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return podman.run(
        "run", "--rm", "--network=none", *podman.container_flags, *flags, image.reference, *args,
        check=False, timeout=120,
    )  # fmt: skip


def python_in_image(podman: Podman, image: ControllerImage, code: str) -> object:
    """Run ``code`` with the image's python (read-only root); it prints one JSON value."""
    result = run(podman, image, "-c", code, flags=("--entrypoint=python3", *CHART_SECURITY))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@dataclass
class Served:
    name: str
    port: int
    podman: Podman

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        result = self.podman.run("logs", self.name, check=False)
        return result.stdout + result.stderr

    def pid(self) -> int:
        return int(self.podman.run("inspect", "--format", "{{.State.Pid}}", self.name).stdout)

    def running(self) -> bool:
        state = self.podman.run("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return state.stdout.strip() == "true"


Serve = Callable[..., Served]


@pytest.fixture
def serve(podman: Podman, controller_image: ControllerImage, tmp_path: Path) -> Iterator[Serve]:
    """``serve(*flags, **env)`` starts ``autoroll serve`` and waits for /healthz."""
    started: list[Served] = []
    kubeconfig = dead_kubeconfig(tmp_path / "kubeconfig")
    kubeconfig.chmod(0o644)

    def start(*flags: str, **env: str) -> Served:
        port = free_port()
        name = f"autoroll-image-test-{port}"
        environment = {
            "FORGEJO_HOST": f"127.0.0.1:{free_port()}",
            "REGISTRY_SCHEME": "http",
            "FORGEJO_USER": "autoroll",
            "FORGEJO_TOKEN": TOKEN,
            "WEBHOOK_SECRET": "webhook-secret-for-the-image-test",
            "KUBECONFIG": KUBECONFIG,
            "LISTEN_ADDR": f"127.0.0.1:{port}",
            "PROBE_ADDR": f"127.0.0.1:{free_port()}",  # --network=host: a free port of ours
            "POLL_INTERVAL_SECONDS": "3600",
            **env,
        }
        podman.run(
            "run", "--detach", f"--name={name}", "--network=host", *podman.container_flags,
            f"--volume={kubeconfig}:{KUBECONFIG}:ro",
            *(f"--env={key}={value}" for key, value in environment.items()),
            *flags, controller_image.reference, "serve",
        )  # fmt: skip
        served = Served(name, port, podman)
        started.append(served)

        def healthy() -> bool:
            if not served.running():
                raise AssertionError(f"the container exited:\n{served.logs()}")
            try:
                return requests.get(f"{served.url}/healthz", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        wait_until(healthy, 120, f"/healthz of {name}")
        return served

    yield start
    for served in started:
        podman.run("rm", "--force", "--time=10", served.name, check=False)


def _uids(pid: int) -> set[int]:
    """Real, effective, saved and filesystem uid of a process (read from the host)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return {int(value) for value in line.split()[1:]}
    raise AssertionError(f"no Uid line for pid {pid}")


def test_help_lists_the_commands(podman: Podman, controller_image: ControllerImage) -> None:
    result = run(podman, controller_image, "--help")
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout
    assert "plan" in result.stdout


def test_jobhash_names_the_example_jobs_as_the_source_tree_does(
    podman: Podman, controller_image: ControllerImage
) -> None:
    values = REPO / "examples" / "jobs-values.yaml"
    args = ("names", "--release", "demo", "-f")
    in_image = run(
        podman, controller_image, *args, "/values.yaml",
        flags=("--entrypoint=jobhash", f"--volume={values}:/values.yaml:ro", *CHART_SECURITY),
    )  # fmt: skip
    here = subprocess.run(
        [sys.executable, "-m", "jobhash", *args, str(values)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert in_image.returncode == 0, in_image.stderr
    assert in_image.stdout == here.stdout
    assert "demo-autoroll-db-migrate-" in in_image.stdout


def test_the_wheel_in_the_image_carries_the_chart_it_was_built_from(
    podman: Podman, controller_image: ControllerImage
) -> None:
    packaged = python_in_image(
        podman, controller_image,
        "import hashlib, json, pathlib, jobhash._chart as c\n"
        "root = pathlib.Path(list(c.__path__)[0])\n"
        "print(json.dumps({p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes())"
        ".hexdigest() for p in root.rglob('*') if p.is_file() and p.suffix != '.pyc'"
        " and p.name != '__init__.py'}))",
    )  # fmt: skip
    assert isinstance(packaged, dict)
    assert {"Chart.yaml", "values.yaml", "values.schema.json", "templates/_jobs.tpl"} <= set(
        packaged
    )
    for relative, digest in packaged.items():
        assert digest == hashlib.sha256((CHART / relative).read_bytes()).hexdigest(), relative
    assert not any(name.startswith("tests/") for name in packaged)


def test_serve_without_environment_exits_2_naming_every_variable(
    podman: Podman, controller_image: ControllerImage
) -> None:
    result = run(podman, controller_image, "serve", flags=CHART_SECURITY)
    assert result.returncode == 2
    for name in ("FORGEJO_HOST", "FORGEJO_USER", "FORGEJO_TOKEN", "WEBHOOK_SECRET"):
        assert f"{name}: is required but not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_runs_as_the_chart_runs_it(serve: Serve) -> None:
    served = serve(*CHART_SECURITY, *CHART_TMP)
    assert _uids(served.pid()) == {10001}  # the image's USER, the chart's runAsUser
    # The first pass ran through the Kubernetes client and reached the (closed) API port.
    wait_until(
        lambda: scrape_metric(served.url, "autoroll_ticks_total", outcome="error") >= 1,
        60,
        "the first pass to fail on the closed API port",
    )
    logs = served.logs()
    assert "cannot reach the Kubernetes API" in logs
    assert "Traceback" not in logs
    assert TOKEN not in logs


def test_serve_runs_as_an_arbitrary_uid(serve: Serve) -> None:
    served = serve(*CHART_SECURITY, *CHART_TMP, "--user=54321:54321")
    assert _uids(served.pid()) == {54321}
    assert requests.get(f"{served.url}/metrics", timeout=5).status_code == 200


def test_serve_needs_no_tmp_at_all(serve: Serve) -> None:
    # Nothing writable but /dev/shm: gunicorn's worker heartbeat lives there (server.py).
    served = serve(*CHART_SECURITY)
    assert requests.get(f"{served.url}/healthz", timeout=5).text == "ok\n"


def test_serve_with_leader_election_reaches_the_lease_api(serve: Serve) -> None:
    # The Lease adapter goes through KubeRest like every call: what it imports survives the trim.
    served = serve(
        *CHART_SECURITY, *CHART_TMP,
        LEADER_ELECTION="true", LEADER_ELECTION_NAMESPACE="autoroll", POD_NAME="autoroll-0",
    )  # fmt: skip
    wait_until(
        lambda: scrape_metric(served.url, "autoroll_lease_errors_total") >= 1,
        60,
        "a lease call to fail on the closed API port",
    )
    logs = served.logs()
    assert "Traceback" not in logs
    assert "ModuleNotFoundError" not in logs


def test_the_image_runs_as_10001_by_default(
    podman: Podman, controller_image: ControllerImage
) -> None:
    config = json.loads(
        podman.run(
            "image", "inspect", "--format", "{{json .Config}}", controller_image.reference
        ).stdout
    )
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["autoroll"]
    assert config["Cmd"] == ["serve"]


#: Inside the image: every fact the next test judges, as one JSON object.
_INVENTORY = r"""
import importlib.util, json, os, shutil
found = {"modules": [], "packages": [], "wheels": [], "dirs": [], "tools": [], "paths": []}
for name in ("pip", "setuptools", "wheel", "_distutils_hack"):
    if importlib.util.find_spec(name) is not None:
        found["modules"].append(name)
for name in ("pip", "pip3", "gcc", "cc", "c++", "g++", "clang", "make", "ld", "as"):
    if shutil.which(name, path="/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"):
        found["tools"].append(name)
kubernetes = importlib.util.find_spec("kubernetes").submodule_search_locations[0]
for path in ("/src", "/tools", "/wheels", os.path.join(kubernetes, "aio")):
    if os.path.exists(path):
        found["paths"].append(path)
for top in ("/venv", "/usr", "/opt", "/srv", "/home", "/root"):
    for root, dirs, files in os.walk(top):
        found["wheels"] += [os.path.join(root, f) for f in files if f.endswith(".whl")]
        found["packages"] += [os.path.join(root, d) for d in dirs
                              if d in ("pip", "setuptools", "wheel")
                              and os.path.exists(os.path.join(root, d, "__init__.py"))]
        if root.startswith("/venv"):
            found["dirs"] += [os.path.join(root, d) for d in dirs
                              if d in ("tests", "test", "docs", "bench", "examples")]
print(json.dumps(found))
"""


def test_the_image_ships_no_tests_docs_or_build_tools(
    podman: Podman, controller_image: ControllerImage
) -> None:
    found = python_in_image(podman, controller_image, _INVENTORY)
    assert isinstance(found, dict)
    assert found["modules"] == [], "an installer or build backend is importable"
    assert found["packages"] == [], "an installer or build backend is installed (base or venv)"
    assert found["wheels"] == [], "wheels ship (ensurepip's, or a build's)"
    assert found["tools"] == [], "an installer or compiler is on PATH"
    assert found["paths"] == [], "build leftovers or the trimmed kubernetes/aio"
    assert found["dirs"] == [], "tests or docs ship in the venv"


def test_the_build_time_ca_bundle_does_not_ship(
    podman: Podman, controller_image: ControllerImage
) -> None:
    # The build mounts the host's CA bundle so pip trusts the host's proxies; the image must
    # keep the base's own.
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    base = base_image(podman)
    in_base = podman.run(
        "run", "--rm", "--network=none", *podman.container_flags, "--entrypoint=cat", base, bundle,
        check=False,
    )  # fmt: skip
    in_image = run(podman, controller_image, bundle, flags=("--entrypoint=cat",))
    assert in_image.returncode == in_base.returncode
    assert in_image.stdout == in_base.stdout


def test_push_image_puts_the_image_on_a_local_registry_in_both_manifest_formats(
    controller_image: ControllerImage, registry: RegistryServer
) -> None:
    # The real-node tests push this way before `helm install`; a Docker-format copy has the
    # same config under another manifest digest (what containerd may report instead).
    oci = push_image(
        controller_image, registry.url, "forgejo/autoroll", "latest",
        user=registry.user, password=registry.password,
    )  # fmt: skip
    docker = push_image(
        controller_image, registry.url, "mirror/autoroll", "latest",
        user=registry.user, password=registry.password, manifest_format="v2s2",
    )  # fmt: skip
    assert oci.reference == f"{registry.host}/forgejo/autoroll:latest"
    configs = []
    for pushed, repository, media_type in (
        (oci, "forgejo/autoroll", "application/vnd.oci.image.manifest.v1+json"),
        (docker, "mirror/autoroll", "application/vnd.docker.distribution.manifest.v2+json"),
    ):
        answer = requests.get(
            f"{registry.url}/v2/{repository}/manifests/latest",
            headers={"Accept": media_type},
            auth=registry.auth,
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["Docker-Content-Digest"] == pushed.digest
        assert answer.headers["Content-Type"] == media_type
        configs.append(answer.json()["config"]["digest"])
    assert oci.digest != docker.digest
    assert configs[0] == configs[1]
