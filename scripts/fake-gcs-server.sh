#!/usr/bin/env bash
# fake-gcs-server.sh builds the Google Cloud Storage emulator the gs://
# tests (package objstore) run on loopback: fake-gcs-server v1.56.1
# (BSD-2-Clause; it serves the JSON API the Go SDK speaks, with compose),
# with `go install` from the Go module proxy (checksummed by the Go
# checksum database), into a cache outside the repository. Nothing
# fetched is committed.
#
# Usage: scripts/fake-gcs-server.sh      # prints the binary's path
#
# The cache (default /var/cache/moq-export-fakegcs, override with
# MOQ_EXPORT_FAKEGCS_CACHE) holds bin/fake-gcs-server; a second run with
# it present only prints the path. Tests look for MOQ_FAKEGCS, then for
# /var/cache/moq-export-fakegcs/bin/fake-gcs-server, then PATH.
set -euo pipefail
VERSION=v1.56.1
CACHE=${MOQ_EXPORT_FAKEGCS_CACHE:-/var/cache/moq-export-fakegcs}
BIN=$CACHE/bin/fake-gcs-server
stamp=$CACHE/bin/.version
if [[ -x $BIN && -f $stamp && $(cat "$stamp") == "$VERSION" ]]; then
	echo "$BIN"
	exit 0
fi
mkdir -p "$CACHE/bin"
# Outside the module: the server's dependencies stay out of go.mod.
(cd / && GOBIN="$CACHE/bin" GOFLAGS=-mod=mod go install "github.com/fsouza/fake-gcs-server@$VERSION") >&2
echo "$VERSION" >"$stamp"
echo "$BIN"
