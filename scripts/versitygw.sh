#!/usr/bin/env bash
# versitygw.sh builds the S3-compatible server the object-store tests
# (package objstore, internal/cli) run on loopback: versitygw v1.8.0
# (Apache-2.0; a gateway that keeps each object as a plain file under a
# directory), with `go install` from the Go module proxy (checksummed by
# the Go checksum database), into a cache outside the repository. Nothing
# fetched is committed. MinIO's server is AGPL and not used.
#
# Usage: scripts/versitygw.sh      # prints the binary's path
#        MOQ_VERSITYGW=$(scripts/versitygw.sh) go test ./objstore/
#
# The cache (default /var/cache/moq-export-versitygw, override with
# MOQ_EXPORT_VERSITYGW_CACHE) holds bin/versitygw; a second run with it
# present only prints the path. Tests look for MOQ_VERSITYGW, then for
# /var/cache/moq-export-versitygw/bin/versitygw, then PATH.
set -euo pipefail
VERSION=v1.8.0
CACHE=${MOQ_EXPORT_VERSITYGW_CACHE:-/var/cache/moq-export-versitygw}
BIN=$CACHE/bin/versitygw
stamp=$CACHE/bin/.version
if [[ -x $BIN && -f $stamp && $(cat "$stamp") == "$VERSION" ]]; then
	echo "$BIN"
	exit 0
fi
mkdir -p "$CACHE/bin"
# Outside the module: the server's dependencies stay out of go.mod.
(cd / && GOBIN="$CACHE/bin" GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VERSION") >&2
echo "$VERSION" >"$stamp"
echo "$BIN"
