"""The image tier: the controller image built from the committed Dockerfile, run with podman."""
