#!/usr/bin/env bash
# azurite.sh installs the Azure Storage emulator the az:// tests (package
# objstore) run on loopback: Microsoft's azurite 3.37.0 (MIT) from npm,
# into a cache outside the repository (its blob service only is started
# by the tests). Nothing fetched is committed.
#
# Usage: scripts/azurite.sh      # prints the path of azurite-blob
#
# The cache (default /var/cache/moq-export-azurite, override with
# MOQ_EXPORT_AZURITE_CACHE) holds node_modules/.bin/azurite-blob; a second
# run with it present only prints the path. Tests look for MOQ_AZURITE,
# then for that path, then PATH.
set -euo pipefail
VERSION=3.37.0
CACHE=${MOQ_EXPORT_AZURITE_CACHE:-/var/cache/moq-export-azurite}
BIN=$CACHE/node_modules/.bin/azurite-blob
stamp=$CACHE/.version
if [[ -x $BIN && -f $stamp && $(cat "$stamp") == "$VERSION" ]]; then
	echo "$BIN"
	exit 0
fi
mkdir -p "$CACHE"
(cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error --no-save --prefix "$CACHE" "azurite@$VERSION") >&2
echo "$VERSION" >"$stamp"
echo "$BIN"
