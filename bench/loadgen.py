"""The second process of measurement 3: POST signed (or wrongly signed) webhooks, time each.

``python -m bench.loadgen --url http://127.0.0.1:PORT --secret S --count N --kind bad``
prints one JSON object: per-request latencies in milliseconds, the status codes, and the
window (first send to last answer). Each of ``--concurrency`` threads keeps one connection
(keep-alive), as a busy Forgejo instance would.

The client runs at nice ``CLIENT_NICE`` when it may (as root): with a CPU load beside the
benchmark (``bench.run --load-cpus``) it would otherwise wait for a core as long as the
controller does, and count its own waits as the answer's. Forgejo sends from another
machine; what is measured is how long the controller takes to answer. The nice level it got
is in the output (``client_nice``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence

import requests

from bench.child import print_result

#: The shape and size of a Forgejo package event (about 2 KiB); a tag, so each one nudges.
BODY = json.dumps(
    {
        "action": "created",
        "package": {
            "id": 1,
            "type": "container",
            "name": "team/app",
            "version": "latest",
            "html_url": "https://forgejo.example/team/-/packages/container/app/latest",
            "owner": {"login": "team", "full_name": "Team", "email": "team@example.invalid"},
        },
        "sender": {"login": "ci", "id": 7, "avatar_url": "https://forgejo.example/a/7"},
        "padding": "x" * 1500,
    }
).encode()


#: The client's nice level when it may lower it (root); otherwise it keeps its own.
CLIENT_NICE = -10


def favoured() -> int:
    """Lower this process's nice level to ``CLIENT_NICE`` if allowed; the level it runs at."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, CLIENT_NICE)
    return os.getpriority(os.PRIO_PROCESS, 0)


def signature(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen")
    parser.add_argument("--url", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--kind", choices=("good", "bad"), required=True)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    nice = favoured()

    good = signature(args.secret, BODY)
    wrong = signature(args.secret + "-not-the-secret", BODY)
    headers = {
        "Content-Type": "application/json",
        "X-Forgejo-Event": "package",
        "X-Forgejo-Signature": good if args.kind == "good" else wrong,
    }
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    remaining = iter(range(args.count))

    def worker() -> None:
        session = requests.Session()
        session.trust_env = False
        while True:
            with lock:
                if next(remaining, None) is None:
                    return
            started = time.perf_counter()
            try:
                response = session.post(
                    f"{args.url}/webhook", data=BODY, headers=headers, timeout=10
                )
            except requests.RequestException as exc:
                with lock:
                    errors.append(type(exc).__name__)
                continue
            elapsed_ms = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(elapsed_ms)
                statuses[response.status_code] += 1

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    window = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    window = time.perf_counter() - window
    return print_result(
        {
            "kind": args.kind,
            "latencies_ms": latencies,
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "errors": errors,
            "window_s": window,
            "client_nice": nice,
        }
    )


if __name__ == "__main__":
    raise SystemExit(main())
