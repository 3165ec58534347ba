"""Benchmarks (run with python -m bench.<name>); results land in docs/performance.md."""
