# Offline stand-in for ghcr.io/shopify/toxiproxy:2.12.0: the same go-install-built binaries at
# the paths the official image uses (/toxiproxy, /toxiproxy-cli), so compose.yaml's command and
# healthcheck serve both. Built from the lab's offline base image.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY toxiproxy-server /toxiproxy
COPY toxiproxy-cli /toxiproxy-cli
EXPOSE 8474
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=0.0.0.0"]
