"""The shell that runs the core: one pass (reconciler, asking, executor, observer), the one
reconcile thread (worker), the pacer, and leader election.

It talks to the cluster and the registry only through the Protocols in `autoroll.core.ports`,
so it never imports the Kubernetes client or an HTTP library.
"""
