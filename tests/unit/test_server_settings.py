"""The gunicorn embedding's settings and wiring, without starting gunicorn."""

from __future__ import annotations

from pathlib import Path

import yaml
from gunicorn.workers.gthread import ThreadWorker

from autoroll.config import Config
from autoroll.edge.http_worker import REQUEST_READ_SECONDS
from autoroll.edge.runtime import PROCESS_EXIT_SECONDS, SHUTDOWN_BUDGET, Runtime, build_runtime
from autoroll.edge.server import (
    GRACEFUL_TIMEOUT_SECONDS,
    RECONCILE_STOP_SECONDS,
    THREADS_STOP_SECONDS,
    WORKER_TMP_DIR,
    AutorollServer,
    gunicorn_settings,
    worker_tmp_dir,
)
from autoroll.kube.transport import CONNECT_ATTEMPTS, LEASE_CALL_TIMEOUT, call_seconds
from tests.support.answering_registry import AnsweringRegistry
from tests.support.empty_cluster import EmptyCluster

ROOT = Path(__file__).resolve().parents[2]
ENV = {
    "FORGEJO_HOST": "git.example.org",
    "FORGEJO_USER": "autoroll",
    "FORGEJO_TOKEN": "token-0123456789",
    "WEBHOOK_SECRET": "webhook-secret-0123456789",
    "LISTEN_ADDR": "127.0.0.1:9090",
}


def test_one_gthread_worker_process_without_preloading() -> None:
    settings = gunicorn_settings(Config.from_env(ENV))
    assert settings["workers"] == 1
    assert settings["worker_class"] == "autoroll.edge.http_worker.DeadlineThreadWorker"
    assert settings["preload_app"] is False
    assert settings["bind"] == ["127.0.0.1:9090"]


def test_the_worker_heartbeat_goes_where_it_is_told() -> None:
    config = Config.from_env(ENV)
    assert gunicorn_settings(config, tmp_dir="/dev/shm")["worker_tmp_dir"] == "/dev/shm"
    assert gunicorn_settings(config)["worker_tmp_dir"] is None  # gunicorn's own default


def test_the_heartbeat_dir_is_dev_shm_when_writable_else_gunicorns_default(tmp_path: Path) -> None:
    assert WORKER_TMP_DIR == "/dev/shm"
    assert worker_tmp_dir(str(tmp_path)) == str(tmp_path)
    assert worker_tmp_dir(str(tmp_path / "missing")) is None
    (tmp_path / "file").write_text("")
    assert worker_tmp_dir(str(tmp_path / "file")) is None


def test_the_server_puts_the_heartbeat_in_dev_shm_on_linux() -> None:
    # The image's read-only root without /tmp relies on this (tests/image: "without /tmp").
    server = AutorollServer(Config.from_env(ENV))
    assert server.cfg.worker_tmp_dir == worker_tmp_dir()
    if Path(WORKER_TMP_DIR).is_dir():
        assert server.cfg.worker_tmp_dir == WORKER_TMP_DIR


def test_shutdown_fits_in_the_default_pod_grace_period() -> None:
    assert RECONCILE_STOP_SECONDS < GRACEFUL_TIMEOUT_SECONDS < 30


def test_the_shutdown_budget_adds_up_the_bound_of_every_step() -> None:
    budget = SHUTDOWN_BUDGET
    # Each part is the timeout the code enforces, not a separate guess.
    assert budget.request_drain == REQUEST_READ_SECONDS + 1
    assert budget.reconcile_stop == RECONCILE_STOP_SECONDS
    assert budget.threads_stop == THREADS_STOP_SECONDS
    assert budget.lease_release == 2 * call_seconds(LEASE_CALL_TIMEOUT)  # one read, one write
    assert budget.process_exit == PROCESS_EXIT_SECONDS
    # The reconcile process: its thread, then the others together, the release only with
    # election, then its exit; all of it runs beside the drain.
    alone = RECONCILE_STOP_SECONDS + THREADS_STOP_SECONDS + PROCESS_EXIT_SECONDS
    assert budget.reconcile_process(electing=False) == alone
    assert budget.reconcile_process(electing=True) == alone + budget.lease_release
    for electing in (False, True):
        assert budget.worst_case(electing=electing) == max(
            budget.request_drain, budget.reconcile_process(electing=electing)
        )
    # gunicorn's master waits at least the worst case before it SIGKILLs the worker ...
    assert budget.worst_case(electing=True) <= GRACEFUL_TIMEOUT_SECONDS
    assert gunicorn_settings(Config.from_env(ENV))["graceful_timeout"] == GRACEFUL_TIMEOUT_SECONDS
    # ... and the kubelet waits longer than the master (the chart's default grace period).
    values = yaml.safe_load((ROOT / "charts" / "autoroll" / "values.yaml").read_text())
    assert values["terminationGracePeriodSeconds"] >= GRACEFUL_TIMEOUT_SECONDS + 2


def test_a_lease_call_is_bounded_by_connect_attempts_and_one_read() -> None:
    assert call_seconds((1.0, 3.0)) == CONNECT_ATTEMPTS * 1.0 + 3.0


def test_the_master_builds_nothing_until_the_worker_loads() -> None:
    built: list[Runtime] = []

    def factory(config: Config) -> Runtime:
        runtime = build_runtime(config, cluster=EmptyCluster(), registry=AnsweringRegistry({}))
        built.append(runtime)
        return runtime

    app = AutorollServer(Config.from_env(ENV), runtime_factory=factory)
    assert built == [] and app.runtime is None
    assert app.cfg.workers == 1
    assert app.cfg.worker_class_str == "autoroll.edge.http_worker.DeadlineThreadWorker"
    assert issubclass(app.cfg.worker_class, ThreadWorker)  # gthread underneath
    wsgi = app.load()
    assert len(built) == 1 and app.runtime is built[0]
    assert wsgi is built[0].app
    assert not built[0].worker.alive  # started by the post_worker_init hook, not by load()


def test_each_runtime_has_its_own_metrics_registry() -> None:
    config = Config.from_env(ENV)
    a = build_runtime(config, cluster=EmptyCluster(), registry=AnsweringRegistry({}))
    b = build_runtime(config, cluster=EmptyCluster(), registry=AnsweringRegistry({}))
    assert a.metrics.registry is not b.metrics.registry
    a.nudge.nudge()
    assert a.nudge.pending and not b.nudge.pending
