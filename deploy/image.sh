#!/usr/bin/env bash
# Builds the Gatehouse image without pulling anything: the static binary
# (CGO_ENABLED=0), the host's CA bundle and an empty state directory in a
# fresh build context, FROM scratch (the Dockerfile at the root).
#
#   deploy/image.sh [TAG]                   # gatehouse:TAG (default: the version from git)
#   IMAGE=registry.example.com/gatehouse deploy/image.sh v0.1.0
#   IMAGE_BUILDER=buildah deploy/image.sh   # podman, buildah or docker (default: the first found)
#   deploy/image.sh --context DIR           # only lay out the context in DIR
#
# CA_BUNDLE names another CA bundle (default /etc/ssl/certs/ca-certificates.crt).
set -euo pipefail
cd "$(dirname "$0")/.."

ctx=""
if [ "${1:-}" = "--context" ]; then
  ctx=${2:?--context needs a directory}
  shift 2
fi
tag=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
image=${IMAGE:-gatehouse}
bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$bundle" ] || { echo "image.sh: no CA bundle at $bundle (install ca-certificates, or set CA_BUNDLE)" >&2; exit 1; }

only_context=1
if [ -z "$ctx" ]; then
  only_context=0
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
fi
mkdir -p "$ctx/state"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=$tag" -o "$ctx/gatehouse" ./cmd/gatehouse
chmod 0555 "$ctx/gatehouse"
cp "$bundle" "$ctx/ca-certificates.crt"
chmod 0444 "$ctx/ca-certificates.crt"
cp Dockerfile .dockerignore "$ctx/"
if [ "$only_context" = 1 ]; then
  echo "image.sh: context laid out in $ctx"
  exit 0
fi

builder=${IMAGE_BUILDER:-}
if [ -z "$builder" ]; then
  for b in podman buildah docker; do
    if command -v "$b" >/dev/null; then builder=$b; break; fi
  done
fi
case "$builder" in
  podman)  podman build --pull=never -t "$image:$tag" "$ctx" ;;
  buildah) buildah build --pull=never -t "$image:$tag" "$ctx" ;;
  docker)  docker build --pull=false -t "$image:$tag" "$ctx" ;;
  "") echo "image.sh: no podman, buildah or docker on PATH (apt-get install buildah); the context can be laid out with --context DIR" >&2; exit 1 ;;
  *) echo "image.sh: IMAGE_BUILDER=$builder: want podman, buildah or docker" >&2; exit 1 ;;
esac
echo "image.sh: built $image:$tag with $builder"
