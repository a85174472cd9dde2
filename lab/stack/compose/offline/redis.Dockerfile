# Offline stand-in for the official redis image, for an app's own compose file on a machine with
# no registry: Debian's redis-server (7.0) from the lab's offline base, with the official image's
# habits an app's file relies on -- /data as the working directory (where RDB and AOF files go),
# `redis-server` as the default command, and protected mode off (the official image patches it
# off: clients come from other containers, with no password on a compose network).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
# What the lab finds on a later run: this tag is a stand-in (it keeps it current, and says so).
LABEL org.chaoslab.stand-in=redis
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
WORKDIR /data
ENTRYPOINT ["sh", "/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
EXPOSE 6379
