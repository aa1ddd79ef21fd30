// Reference publisher for the interop tests: publishes one hang broadcast with
// @moq/net 0.3.4 and @moq/hang 0.3.5 (catalog.json + legacy container, or with
// --container cmaf hang's own CMAF encoder: init segments from
// createVideoInitSegment/createAudioInitSegment in the catalog, one
// encodeDataSegment moof+mdat per frame; with --container loc hang's LOC
// producer, @moq/loc: a property block with the timestamp before each
// frame's codec payload) from a manifest the Go test wrote,
// over raw QUIC (or --webtransport), as server (--listen) or client
// (--connect). See doc.go for the manifest and the events it prints; the
// publishing itself is publisher.ts.
import { emit, log, openSession, parseFlags, required, run } from "./common.ts";
import { type Manifest, publishManifest } from "./publisher.ts";

run(async () => {
  const flags = parseFlags(Deno.args);
  const manifest: Manifest = JSON.parse(Deno.readTextFileSync(required(flags, "manifest")));
  await publishManifest(manifest, flags, () => openSession(flags), emit, log);
});
