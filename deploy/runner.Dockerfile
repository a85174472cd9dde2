# The lab's runner as an image, for deploy/k8s (one pod per shard): the lab, its locked Python
# packages and Debian's headless Chromium. Build from the repository root:
#   docker build -f deploy/runner.Dockerfile -t REGISTRY/chaoslab-runner:latest .
# BASE_IMAGE is any Debian 12 (bookworm) or later image with Python 3.11: the official
# python:3.11-slim-bookworm, or the lab's offline base (`lab k8s` builds on it). Wheels placed
# in deploy/wheels/ (downloaded on the host: a build behind a proxy with its own CA cannot
# reach PyPI) install without an index; without them pip installs the locked versions from PyPI.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium-headless-shell \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /lab
COPY requirements.lock pyproject.toml ./
COPY deploy/wheels/ /lab/wheels/
RUN python3 -m venv /lab/.venv \
 && if ls /lab/wheels/*.whl >/dev/null 2>&1; then \
      /lab/.venv/bin/pip install --no-cache-dir --no-index --find-links /lab/wheels -r requirements.lock; \
    else \
      /lab/.venv/bin/pip install --no-cache-dir -r requirements.lock; \
    fi && rm -rf /lab/wheels
COPY lab lab
COPY services services
COPY toxiproxy.json compose.yaml ./
# setuptools is in the lock: the lab installs with no index and no build isolation.
RUN /lab/.venv/bin/pip install --no-cache-dir --no-deps --no-index --no-build-isolation -e .
ENV PATH=/lab/.venv/bin:$PATH PYTHONUNBUFFERED=1
CMD ["lab", "--help"]
