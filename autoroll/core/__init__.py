"""The pure core: which pod is stale, is the workload settled, may it roll now.

Everything here is a function over plain data (or a frozen dataclass, or a Protocol the
shell implements). It imports only the standard library and this package, so every rule
can be table-tested and property-tested without a cluster, a registry or a clock.
"""
