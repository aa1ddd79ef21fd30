// Prints the bytes @moq/net's own encoders produce for every moq-lite message
// in every version, one JSON line per message: {"version","message","hex"}.
// package interop compares them with subscribe/internal/wire's per-version
// layouts (TestReferenceLayouts), and the wire package's unit tests carry
// the same bytes.
import * as Ietf from "../node_modules/@moq/net/ietf/index.js";
import * as Lite from "../node_modules/@moq/net/lite/index.js";
import { Writer } from "../node_modules/@moq/net/stream.js";

async function bytes(f: (w: Writer) => Promise<void>, version?: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  const w = new Writer(new WritableStream({ write(c) { chunks.push(new Uint8Array(c)); } }), version as never);
  await f(w);
  w.close();
  await w.closed;
  return chunks.map((c) => Array.from(c, (x) => x.toString(16).padStart(2, "0")).join("")).join("");
}

function out(version: string, message: string, hex: string) {
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify({ version, message, hex }) + "\n"));
}

const V = Lite.Version;
const versions: [string, number][] = [
  ["moq-lite-01", V.DRAFT_01], ["moq-lite-02", V.DRAFT_02], ["moq-lite-03", V.DRAFT_03],
  ["moq-lite-04", V.DRAFT_04], ["moq-lite-05", V.DRAFT_05],
];

// deno-lint-ignore no-explicit-any
const L = Lite as any;
for (const [name, v] of versions) {
  const emit = async (message: string, f: (w: Writer) => Promise<void>) => {
    try {
      out(name, message, await bytes(f, v));
    } catch (_) {
      // The version has no such message.
    }
  };
  const hasSetup = Lite.hasSetupStream(v as never);
  await emit("AnnounceRequest", (w) => new L.AnnounceRequest("room", 7n).encode(w, v));
  await emit("AnnounceActive", (w) => L.encodeAnnounceBroadcast(w, { status: "active", suffix: "alice", hops: [7n, 300n] }, v));
  await emit("AnnounceEnded", (w) => L.encodeAnnounceBroadcast(w, { status: "ended", suffix: "alice" }, v));
  await emit("AnnounceInit", (w) => new L.AnnounceInit(["alice", "bob"]).encode(w, v));
  await emit("AnnounceOK", (w) => new L.AnnounceOk(12345n, 2).encode(w, v));
  await emit("Subscribe", (w) =>
    new L.Subscribe({ id: 3n, broadcast: "room/alice", track: "video", priority: 60, ordered: true, maxLatency: 500, startGroup: 5, endGroup: 9 }).encode(w, v));
  await emit("SubscribeUpdate", (w) => new L.SubscribeUpdate({ priority: 80, maxLatency: 0, startGroup: 7 }).encode(w, v));
  await emit("SubscribeOK", (w) =>
    L.encodeSubscribeResponse(w, { ok: new L.SubscribeOk({ priority: 60, ordered: true, maxLatency: 500, startGroup: 5 }) }, v));
  await emit("SubscribeStart", (w) => L.encodeSubscribeResponse(w, { start: new L.SubscribeStart(5) }, v));
  await emit("SubscribeEnd", (w) => L.encodeSubscribeResponse(w, { end: new L.SubscribeEnd(9) }, v));
  await emit("SubscribeDrop", (w) => L.encodeSubscribeResponse(w, { drop: new L.SubscribeDrop({ start: 1, end: 2, error: 13 }) }, v));
  await emit("Group", (w) => new L.Group(3n, 5).encode(w));
  if (v !== V.DRAFT_01 && v !== V.DRAFT_02) {
    await emit("Probe", (w) => new L.Probe({ bitrate: 5000000, rtt: 12 }).encode(w, v));
  }
  await emit("Goaway", (w) => new L.Goaway("https://b.example/x").encode(w, v));
  await emit("Track", (w) => new L.Track("room/alice", "video").encode(w, v));
  await emit("TrackInfo", (w) => new L.TrackInfo({ priority: 1, ordered: true, latencyMax: 5000, timescale: 1000000 }).encode(w, v));
  await emit("Fetch", (w) => new L.Fetch("room/alice", "audio", 80, 41).encode(w, v));
  if (hasSetup) {
    await emit("Setup", (w) => new L.Setup({ probe: 1, path: "/anon?jwt=x", role: 2, origin: 99n }).encode(w, v));
  }
  if (v === V.DRAFT_01 || v === V.DRAFT_02) {
    await emit("SessionInfo", (w) => new L.SessionInfo(64000).encode(w, v));
  }
}

// The legacy SETUP exchange as @moq/net's connect() and accept() write it.
const params = new Ietf.SetupOptions();
params.setVarint(Ietf.SetupOption.MaxRequestId, 42069n);
params.setBytes(Ietf.SetupOption.Implementation, new TextEncoder().encode("moq-lite-js"));
Ietf.solicitIntoSetup(params);
const D14 = Ietf.Version.DRAFT_14;
out("moql", "ClientSetup", await bytes(async (w) => {
  await w.u53(Lite.StreamId.ClientCompat);
  await new Ietf.ClientSetup({ versions: [V.DRAFT_02, V.DRAFT_01, D14], parameters: params }).encode(w, D14);
}, D14));
out("moql", "ServerSetup", await bytes(async (w) => {
  await w.u53(Lite.StreamId.ServerCompat);
  await new Ietf.ServerSetup({ version: V.DRAFT_02, parameters: params }).encode(w, D14);
}, D14));
