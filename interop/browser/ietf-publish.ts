// The reference publisher as a web page (TestIETFBrowserPublisherIntoListen):
// @moq/net 0.3.4 in Chromium, whose WebTransport sends WT-Available-Protocols
// and reports the negotiated protocol, publishes the manifest (manifest.json
// next to the page) into our --listen. The query gives url (https://...),
// fingerprint (hex SHA-256 of the server's certificate) and protocols (the
// WebTransport protocols offered, comma separated). Events collect in
// window.moqEvents as JSON lines for the Go test; the last one is "exit".
import * as Moq from "@moq/net";
import { type Manifest, publishManifest } from "../src/publisher.ts";

const events: string[] = [];
// deno-lint-ignore no-explicit-any
(window as any).moqEvents = events;
const emit = (event: string, fields: Record<string, unknown> = {}) => events.push(JSON.stringify({ event, ...fields }));
const log = (...args: unknown[]) => emit("log", { message: args.map(String).join(" ") });

async function main() {
  const q = new URLSearchParams(location.search);
  const manifest: Manifest = await (await fetch("manifest.json")).json();
  const url = new URL(q.get("url")!);
  const protocols = q.get("protocols")!.split(",");
  const flags = { speed: q.get("speed") ?? "2", "linger-ms": "5000" };
  await publishManifest(manifest, flags, async () => {
    const conn = await Moq.Connection.connect(url, {
      webtransport: { protocols, serverCertificateHashes: [{ value: q.get("fingerprint")! }] },
      websocket: { enabled: false },
    });
    log("connected", conn.version);
    return { conn, close: () => conn.close() };
  }, emit, log);
}

main().then(
  () => emit("exit", { code: 0 }),
  (err) => {
    emit("error", { message: String(err?.stack ?? err) });
    emit("exit", { code: 1 });
  },
);
