# Offline stand-in for the official python images, on the node stand-in (node.Dockerfile: the
# host's CAs, pip pointed at them): Debian's python3 (3.11), whatever version the tag names. The
# official image's `python` and `pip` are /usr/local/bin's, with no EXTERNALLY-MANAGED marker, so
# an app's Dockerfile runs `pip install -r requirements.txt` as root: a venv first on PATH gives
# it the same commands and the same freedom (Debian's own python3 refuses a global pip install).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
# What the lab finds on a later run: this tag is a stand-in (it keeps it current, and says so).
LABEL org.chaoslab.stand-in=python
RUN python3 -m venv /usr/local/python
ENV PATH=/usr/local/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["python3"]
