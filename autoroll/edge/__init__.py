"""Where the process meets the world: the CLI, the server that wires one process, the Flask
app (probes, /metrics, /webhook), the gunicorn worker, the probes' own listener, and the
`autoroll plan` rendering. The only layer that imports every other one.
"""
