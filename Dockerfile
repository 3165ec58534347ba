# syntax=docker/dockerfile:1
# autoroll controller image.
#   docker build --target test .        run the test suite inside the build image
#   docker build -t autoroll:latest .   the runtime image (the last stage)
# The runtime UID/GID 10001 is the chart's podSecurityContext.runAsUser/runAsGroup.

# One pinned base for every stage: the venv built below links to this interpreter.
ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm

# --- build: the wheel, installed into a self-contained venv --------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY autoroll ./autoroll
COPY jobhash ./jobhash
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /venv \
 && /venv/bin/pip install /wheels/*.whl

# --- test: the suite, in the build image (tools it cannot find are skipped) -------------
FROM build AS test
COPY . .
RUN /venv/bin/pip install '.[test]' \
 && /venv/bin/python -m pytest -q -p no:cacheprovider

# --- runtime: the venv only; no compilers, no pip cache, no source tree ----------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 autoroll \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin autoroll
COPY --from=build /venv /venv
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["autoroll"]
CMD ["serve"]
