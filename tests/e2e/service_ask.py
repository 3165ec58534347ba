"""A program a pod runs to ask a URL from inside the cluster (``python3 -c ASK URL``).

Python, since Debian's static busybox ``wget`` cannot run in these images. It exits 0 when
the URL answers 200. A refused connection is asked again, once a second for up to 30 s:
kube-proxy rejects a Service's ClusterIP until it has programmed the Service's endpoints,
which follows the pod's readiness by one sync (the chart's ``helm test`` pod asks again for
the same reason). A name that does not resolve is not asked again.
"""

from __future__ import annotations

ASK = """
import sys, time, urllib.error, urllib.request
for attempt in range(30):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=5)
        break
    except urllib.error.URLError as error:
        if not isinstance(error.reason, ConnectionRefusedError) or attempt == 29:
            raise
        print("refused: the Service's rules are not programmed yet", file=sys.stderr, flush=True)
        time.sleep(1)
"""
