"""autoroll: roll enrolled Deployments when a mutable image tag moves to a new digest."""

__version__ = "0.3.0"
