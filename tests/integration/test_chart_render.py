"""The chart renders cleanly with the shipped example values, with the real helm binary.

`helm template` and `helm lint --strict` must print nothing on stderr (no warnings), every
rendered document must parse as YAML, and a bad install must fail with a message that names
the value. The guards behind the schema are tested here with --skip-schema-validation,
which helm-unittest cannot do per suite.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"
EXAMPLES = ROOT / "examples"
VALUES_FILES = ["values-minimal.yaml", "values-production.yaml"]

Helm = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def helm() -> Helm:
    binary = require_tool("helm")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, *args], capture_output=True, text=True, check=False, timeout=60
        )

    return run


def _template(helm: Helm, *args: str) -> subprocess.CompletedProcess[str]:
    return helm("template", "autoroll", str(CHART), "--namespace", "autoroll", *args)


def _documents(stdout: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(stdout) if doc is not None]


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_example_values_render_without_warnings(helm: Helm, values_file: str) -> None:
    result = _template(helm, "-f", str(EXAMPLES / values_file))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    docs = _documents(result.stdout)
    kinds = {d["kind"] for d in docs}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment"} <= kinds
    # Both examples name an existing Secret, so the chart creates none.
    assert "Secret" not in kinds
    for doc in docs:
        assert doc["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"


def test_production_example_turns_on_the_optional_objects(helm: Helm) -> None:
    result = _template(helm, "-f", str(EXAMPLES / "values-production.yaml"))
    docs = _documents(result.stdout)
    assert {"Ingress", "NetworkPolicy", "ServiceMonitor"} <= {d["kind"] for d in docs}
    paths = _by_kind(docs, "Ingress")["spec"]["rules"][0]["http"]["paths"]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/webhook", "Exact")]


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_helm_lint_strict_passes_with_example_values(helm: Helm, values_file: str) -> None:
    result = helm("lint", "--strict", str(CHART), "-f", str(EXAMPLES / values_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout
    assert result.stderr == ""


def test_install_without_values_fails_naming_the_required_values(helm: Helm) -> None:
    result = _template(helm)
    assert result.returncode != 0
    assert "at '/forgejo/host'" in result.stderr
    assert "at '/forgejo/user'" in result.stderr
    assert "at '/image/repository'" in result.stderr


def _minimal_without_schema(*sets: str) -> list[str]:
    args = ["-f", str(EXAMPLES / "values-minimal.yaml"), "--skip-schema-validation"]
    for item in sets:
        args += ["--set", item]
    return args


def test_template_guard_names_forgejo_host_when_the_schema_is_skipped(helm: Helm) -> None:
    result = _template(helm, *_minimal_without_schema("forgejo.host="))
    assert result.returncode != 0
    assert "required values are empty: forgejo.host" in result.stderr


def test_template_guard_rejects_a_short_webhook_secret(helm: Helm) -> None:
    sets = ("secret.existingSecret=", "secret.forgejoToken=t", "secret.webhookSecret=short")
    result = _template(helm, *_minimal_without_schema(*sets))
    assert result.returncode != 0
    assert "secret.webhookSecret: must be at least 16 characters" in result.stderr


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (
            '["deployment","replicaset"]',
            "workloadKinds: replicaset is not a kind autoroll rolls;"
            " expected some of deployment, statefulset, daemonset",
        ),
        ('"deployment"', "workloadKinds: expected a list of kinds"),
        ("[]", "workloadKinds: name at least one kind to roll"),
        ('["deployment","deployment"]', "names a kind twice; name each once"),
    ],
)
def test_template_guard_names_workload_kinds(helm: Helm, kinds: str, message: str) -> None:
    args = [*_minimal_without_schema(), "--set-json", f"workloadKinds={kinds}"]
    result = _template(helm, *args)
    assert result.returncode != 0
    assert message in result.stderr


def test_template_guard_requires_ingress_host(helm: Helm) -> None:
    result = _template(helm, *_minimal_without_schema("ingress.enabled=true"))
    assert result.returncode != 0
    assert "ingress.host: required when ingress.enabled is true" in result.stderr


def test_template_guard_requires_httproute_parent_refs(helm: Helm) -> None:
    result = _template(helm, *_minimal_without_schema("httpRoute.enabled=true"))
    assert result.returncode != 0
    assert "httpRoute.parentRefs: required when httpRoute.enabled is true" in result.stderr


def test_secret_values_appear_only_base64_in_the_secret(helm: Helm) -> None:
    token, hook = "tok-3f9a1c-unique", "hook-secret-7b2e-unique-value"
    result = helm(
        "install", "autoroll", str(CHART), "--dry-run=client", "--namespace", "autoroll",
        "-f", str(EXAMPLES / "values-minimal.yaml"),
        "--set", "secret.existingSecret=",
        "--set", f"secret.forgejoToken={token}",
        "--set", f"secret.webhookSecret={hook}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # --dry-run prints the manifests and NOTES; neither may show a secret in clear text.
    assert token not in result.stdout
    assert hook not in result.stdout
    assert "NOTES:" in result.stdout


def test_chart_uid_matches_the_dockerfile_user(helm: Helm) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    match = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.MULTILINE)
    assert match is not None, "Dockerfile must switch to a numeric USER uid:gid"
    result = _template(helm, "-f", str(EXAMPLES / "values-minimal.yaml"))
    pod = _by_kind(_documents(result.stdout), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == int(match[1])
    assert pod["securityContext"]["runAsGroup"] == int(match[2])
    assert 'ENTRYPOINT ["autoroll"]' in dockerfile
    assert 'CMD ["serve"]' in dockerfile


def test_example_app_is_enrolled_on_the_object_with_pull_policy_always() -> None:
    app = yaml.safe_load((EXAMPLES / "example-app.yaml").read_text())
    assert app["kind"] == "Deployment"
    assert app["metadata"]["labels"]["aethnet.se/autoroll"] == "true"
    assert "aethnet.se/autoroll" not in app["spec"]["template"]["metadata"]["labels"]
    for container in app["spec"]["template"]["spec"]["containers"]:
        assert container["imagePullPolicy"] == "Always"
        assert "@" not in container["image"]


def test_secret_example_holds_only_placeholders_for_both_keys() -> None:
    secret = yaml.safe_load((EXAMPLES / "secret.example.yaml").read_text())
    minimal = yaml.safe_load((EXAMPLES / "values-minimal.yaml").read_text())
    assert secret["kind"] == "Secret"
    assert secret["metadata"]["name"] == minimal["secret"]["existingSecret"]
    assert set(secret["stringData"]) == {"FORGEJO_TOKEN", "WEBHOOK_SECRET"}
    assert all(v.startswith("<replace") for v in secret["stringData"].values())


# The `restricted` Pod Security Standard, as the checks kube-apiserver's PodSecurity
# admission applies to a pod (https://kubernetes.io/docs/concepts/security/pod-security-standards/).
_RESTRICTED_VOLUME_TYPES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
    "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip


def _restricted_violations(pod: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    pod_sc = pod.get("securityContext", {})
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            problems.append(f"{flag} is set")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUME_TYPES:
            problems.append(f"volume {volume['name']} has type {sorted(kinds)}")
    for container in pod.get("initContainers", []) + pod["containers"]:
        name, sc = container["name"], container.get("securityContext", {})
        if sc.get("privileged"):
            problems.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
            problems.append(f"{name}: runAsNonRoot is not true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            problems.append(f"{name}: runs as UID 0")
        profile = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
        if profile not in {"RuntimeDefault", "Localhost"}:
            problems.append(f"{name}: seccompProfile is {profile!r}")
        capabilities = sc.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds capabilities {capabilities['add']}")
        if any("hostPort" in port for port in container.get("ports", [])):
            problems.append(f"{name}: uses a hostPort")
        if not sc.get("readOnlyRootFilesystem"):
            problems.append(f"{name}: root filesystem is writable (our own rule)")
        resources = container.get("resources", {})
        for part in ("requests", "limits"):
            if not {"cpu", "memory"} <= set(resources.get(part, {})):
                problems.append(f"{name}: {part} lack cpu or memory (our own rule)")
    return problems


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_controller_pod_meets_the_restricted_pod_security_standard(
    helm: Helm, values_file: str
) -> None:
    result = _template(helm, "-f", str(EXAMPLES / values_file))
    pod = _by_kind(_documents(result.stdout), "Deployment")["spec"]["template"]["spec"]
    assert _restricted_violations(pod) == []


def test_restricted_check_catches_a_weakened_security_context(helm: Helm) -> None:
    result = _template(
        helm,
        "-f", str(EXAMPLES / "values-minimal.yaml"),
        "--set", "securityContext.allowPrivilegeEscalation=true",
        "--set", "podSecurityContext.seccompProfile=null",
    )  # fmt: skip
    pod = _by_kind(_documents(result.stdout), "Deployment")["spec"]["template"]["spec"]
    assert _restricted_violations(pod) == [
        "autoroll: allowPrivilegeEscalation is not false",
        "autoroll: seccompProfile is None",
    ]
