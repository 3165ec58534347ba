# syntax=docker/dockerfile:1
# autoroll controller image.
#   docker build -t autoroll:latest .     (the build-push workflow)
#   make image                            (podman, on a Debian base made by mmdebstrap, as CI)
# CI builds this very file and tests the result as the chart runs it (tests/image/).
# The runtime UID/GID 10001 is the chart's podSecurityContext.runAsUser/runAsGroup.

# One pinned base for every stage: the venv built below links to this interpreter. Any
# Debian-like image with python3 (>= 3.11) and its venv module will do; CI passes its own.
# Pinned by digest (the multi-arch index), so a retagged base cannot change the image; the
# workflow builds with --pull so the pinned bytes are fetched, never a stale local copy.
ARG PYTHON_IMAGE=docker.io/library/python:3.12.8-slim-bookworm@sha256:10f3aaab98db50cba827d3b33a91f39dc9ec2d02ca9b85cbc5008220d07b17f3

# --- build: the locked dependencies and the wheel, in a venv that never gets pip ---------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# The installer and the build backend live in /tools, which does not ship; /venv is made
# without pip and filled by /tools' pip (--python) with exactly the lock (requirements/):
# every download is checked against its hash, and only wheels are accepted (no compiler).
# Trimmed (docs/adr/013-image-and-dependencies.md): kubernetes/aio, the client's asyncio
# copy that autoroll never imports (its aiohttp stack is left out of the lock), the test
# suites some packages ship, and the bytecode of the client's generated API and model
# modules, of which autoroll imports a handful (compiled in memory when imported).
COPY requirements/build.txt requirements/runtime.txt /src/requirements/
RUN python3 -m venv /tools \
 && /tools/bin/pip install --quiet --require-hashes --only-binary :all: -r /src/requirements/build.txt \
 && python3 -m venv --without-pip /venv \
 && /tools/bin/pip --python /venv/bin/python install --quiet --require-hashes --no-deps \
      --only-binary :all: --no-compile -r /src/requirements/runtime.txt \
 && cd /venv/lib/python3*/site-packages \
 && rm -rf kubernetes/aio ./*/tests ./*/benchmarks \
 && /venv/bin/python -m compileall -q -j 0 -x '/kubernetes/client/(api|models)/' .
WORKDIR /src
COPY pyproject.toml README.md ./
COPY autoroll ./autoroll
COPY jobhash ./jobhash
# jobhash._chart is charts/autoroll itself (pyproject.toml: package-dir).
COPY charts/autoroll ./charts/autoroll
RUN /tools/bin/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir /wheels . \
 && /tools/bin/pip --python /venv/bin/python install --quiet --no-deps /wheels/*.whl

# --- runtime: the venv only; no installer, no compiler, no source tree -------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The base's own installer goes too (pip, setuptools, wheel and the wheels ensurepip would
# install), so nothing in the image can fetch or build code.
RUN (python3 -m pip uninstall --yes --quiet pip setuptools wheel >/dev/null 2>&1 || true) \
 && rm -rf /usr/share/python-wheels /usr/lib/python3*/ensurepip/_bundled \
      /usr/local/lib/python3*/ensurepip/_bundled \
 && groupadd --system --gid 10001 autoroll \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin autoroll
COPY --from=build /venv /venv
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["autoroll"]
CMD ["serve"]
