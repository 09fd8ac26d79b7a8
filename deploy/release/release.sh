#!/bin/sh
# deploy/release/release.sh [GORELEASER ARGS]: stelae-bridge's release from
# one command. It builds the pinned GoReleaser and cyclonedx-gomod (this
# directory's go.mod and go.sum: the versions and their checksums) into
# .release-tools/ (ignored by git), then runs, from the repository's root,
#   goreleaser release -f deploy/release/goreleaser.yaml --clean ARGS
#   deploy/release/release.sh --snapshot    # into dist/, nothing published
# A maintainer publishes from a tag (deploy/release/README.md).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=$root/.release-tools
cd "$root"
go -C deploy/release build -o "$tools/" \
  github.com/goreleaser/goreleaser/v2 \
  github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
# GoReleaser runs the SBOM tool with a bare environment: these Go settings
# go to it through goreleaser.yaml's sboms env.
GOFLAGS=$(go env GOFLAGS) GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE) \
  GOPROXY=$(go env GOPROXY) GOTOOLCHAIN=$(go env GOTOOLCHAIN)
export GOFLAGS GOMODCACHE GOCACHE GOPROXY GOTOOLCHAIN
PATH=$tools:$PATH exec goreleaser release -f deploy/release/goreleaser.yaml --clean "$@"
