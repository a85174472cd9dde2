# Offline stand-in for the official node images (and the layer under the python one), for an
# app's own compose file on a machine with no registry: Debian's nodejs from the lab's offline
# base. Its builds go out through the host's network (the lab's override sets `network: host` for
# a build FROM a stand-in; the lab's engine has no NAT of its own), so `npm ci` and `pip install`
# in the app's Dockerfile must trust what the host trusts -- a proxy's CA included: the host's
# CA bundle (host-ca.crt, empty if the host has none) replaces the image's, and npm and pip,
# which bring their own roots, are pointed at it.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
# What the lab finds on a later run: this tag is a stand-in (it keeps it current, and says so).
LABEL org.chaoslab.stand-in=node
COPY host-ca.crt /tmp/host-ca.crt
RUN if [ -s /tmp/host-ca.crt ]; then mv /tmp/host-ca.crt /etc/ssl/certs/ca-certificates.crt; else rm /tmp/host-ca.crt; fi
ENV LANG=C.UTF-8 \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
