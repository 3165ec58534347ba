"""Counters and log lines (Prometheus metrics on an injected registry, structlog formatting).

Below the adapters and the controller shell, so both can count and log; above the core,
which neither counts nor logs.
"""
