# The lab's runner as an image, for deploy/k8s (one pod per shard): the lab, its locked Python
# packages and Debian's headless Chromium. Build from the repository root:
#   docker build -f deploy/runner.Dockerfile -t REGISTRY/chaoslab-runner:latest .
# BASE_IMAGE needs Debian 13 (trixie) or later: chromium-headless-shell is packaged there.
ARG BASE_IMAGE=python:3.11-slim-trixie
FROM ${BASE_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium-headless-shell chromium \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /lab
COPY requirements.lock pyproject.toml ./
RUN python3 -m venv /lab/.venv && /lab/.venv/bin/pip install --no-cache-dir -r requirements.lock
COPY lab lab
COPY services services
COPY toxiproxy.json compose.yaml ./
RUN /lab/.venv/bin/pip install --no-cache-dir --no-deps -e .
ENV PATH=/lab/.venv/bin:$PATH PYTHONUNBUFFERED=1
CMD ["lab", "--help"]
