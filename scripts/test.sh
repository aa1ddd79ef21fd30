#!/usr/bin/env bash
# The test suite: formatting, vet, and every test with the race detector.
# On a fresh machine it first installs what the tests need
# (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ffprobe >/dev/null || ! command -v mkvmerge >/dev/null || ! command -v chromium >/dev/null ||
	[ ! -x "${MOQ_EXPORT_VERSITYGW_CACHE:-/var/cache/moq-export-versitygw}/bin/versitygw" ] ||
	[ ! -x "${MOQ_EXPORT_FAKEGCS_CACHE:-/var/cache/moq-export-fakegcs}/bin/fake-gcs-server" ] ||
	[ ! -x "${MOQ_EXPORT_AZURITE_CACHE:-/var/cache/moq-export-azurite}/node_modules/.bin/azurite-blob" ]; then
	scripts/install-test-deps.sh
fi
# The object-store tests fail, rather than skip, without their S3 server
# and the GCS and Azure emulators.
export MOQ_S3_REQUIRED=1 MOQ_OBJSTORE_REQUIRED=1
export MOQ_VERSITYGW=$(scripts/versitygw.sh)
export MOQ_FAKEGCS=$(scripts/fake-gcs-server.sh)
export MOQ_AZURITE=$(scripts/azurite.sh)
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -race -timeout 15m ./...
