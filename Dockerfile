# Gatehouse's image: the static gatehouse binary (CGO_ENABLED=0) and a CA bundle on an
# empty base. Nothing is pulled: build the context with deploy/image.sh, which compiles
# the binary, copies the host's CA bundle beside it and runs podman, buildah or docker
# (docs/deploy.md). By hand, from a context holding gatehouse and ca-certificates.crt:
#
#   CGO_ENABLED=0 go build -trimpath -o gatehouse ./cmd/gatehouse
#   cp /etc/ssl/certs/ca-certificates.crt .
#   buildah build -t gatehouse:dev .        # or podman build, docker build
#
# It runs as 65532:65532 (no account needed) on a read-only root filesystem: the
# state (a SQLite store, instance lock files) goes to the volume /var/lib/gatehouse,
# temporary files to /tmp (mount an emptyDir or a tmpfs), the config to
# /etc/gatehouse/gatehouse.yaml (a ConfigMap). Stdio MCP servers need their own
# programs: build an image FROM this one that adds them, or use HTTP servers.
FROM scratch
COPY gatehouse /gatehouse
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 state/ /var/lib/gatehouse/
ENV HOME=/var/lib/gatehouse \
    XDG_CACHE_HOME=/var/lib/gatehouse/cache \
    TMPDIR=/tmp \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /var/lib/gatehouse
USER 65532:65532
VOLUME ["/var/lib/gatehouse"]
EXPOSE 8080 9090
ENTRYPOINT ["/gatehouse"]
CMD ["serve", "--config", "/etc/gatehouse/gatehouse.yaml", "--log-format", "json"]
