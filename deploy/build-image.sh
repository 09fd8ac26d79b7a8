#!/bin/sh
# deploy/build-image.sh TAG [VERSION]: builds the static image of
# deploy/Containerfile (FROM scratch) with podman (or buildah, or docker:
# $BUILDER): a static binary (CGO_ENABLED=0) and the image's few files in
# a fresh context directory, nothing else of the checkout.
set -eu
tag=${1:?usage: deploy/build-image.sh TAG [VERSION]}
version=${2:-dev}
here=$(cd "$(dirname "$0")/.." && pwd)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cd "$here"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$ctx/stelae-bridge" ./cmd/stelae-bridge
# The layout: etc/ (the user), state/stelae-bridge (0700, the user's:
# copied into /var/lib, its mode kept), tmp/ (1777) as /tmp.
mkdir "$ctx/etc" "$ctx/state" "$ctx/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/stelae-bridge:/sbin/nologin\n' > "$ctx/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$ctx/etc/group"
mkdir -m 0700 "$ctx/state/stelae-bridge"
chmod 1777 "$ctx/tmp"
builder=${BUILDER:-podman}
case "$builder" in
buildah) buildah bud -f deploy/Containerfile -t "$tag" "$ctx" ;;
*) "$builder" build -f deploy/Containerfile -t "$tag" "$ctx" ;;
esac
