// Prints hex of @moq/net 0.3.4's own encodings of IETF messages (test vectors).
// Usage (from interop/): node tools/ietf-vectors.mjs  — the hex strings in
// subscribe/internal/ietf/vectors_test.go come from this output.
const base = new URL("../node_modules/@moq/net", import.meta.url).href;
const { Writer } = await import(base + "/stream.js");
const S = await import(base + "/ietf/setup.js");
const P = await import(base + "/ietf/parameters.js");
const Sub = await import(base + "/ietf/subscribe.js");
const PN = await import(base + "/ietf/publish_namespace.js");
const SN = await import(base + "/ietf/subscribe_namespace.js");
const Pub = await import(base + "/ietf/publish.js");
const Obj = await import(base + "/ietf/object.js");
const R = await import(base + "/ietf/request.js");
const G = await import(base + "/ietf/goaway.js");
const { Version } = await import(base + "/ietf/version.js");
const { Timestamp, Timescale } = await import(base + "/time.js");

async function capture(version, f) {
  const chunks = [];
  const w = new Writer(new WritableStream({ write(c) { chunks.push(new Uint8Array(c)); } }), version);
  await f(w);
  w.close();
  await new Promise((r) => setTimeout(r, 5));
  let n = 0; for (const c of chunks) n += c.length;
  const out = new Uint8Array(n); let o = 0; for (const c of chunks) { out.set(c, o); o += c.length; }
  return Array.from(out).map((b) => b.toString(16).padStart(2, "0")).join("");
}
const enc = new TextEncoder();
const res = {};
for (const [name, v] of [["14", Version.DRAFT_14], ["16", Version.DRAFT_16], ["20", Version.DRAFT_20]]) {
  const params = new P.SetupOptions();
  params.setVarint(P.SetupOption.MaxRequestId, 42069n);
  params.setBytes(P.SetupOption.Implementation, enc.encode("moq-lite-js"));
  if (v !== Version.DRAFT_20) {
    res["client_setup_" + name] = await capture(v, async (w) => { await w.u53(0x20); await new S.ClientSetup({ versions: [0xff0dad02, 0xff0dad01, Version.DRAFT_14], parameters: params }).encode(w, v); });
    res["server_setup_" + name] = await capture(v, async (w) => { await w.u53(0x21); await new S.ServerSetup({ version: Version.DRAFT_14, parameters: params }).encode(w, v); });
  } else {
    res["setup_" + name] = await capture(v, async (w) => { await w.u53(0x2f00); await new S.Setup({ parameters: params }).encode(w, v); });
  }
  res["subscribe_" + name] = await capture(v, async (w) => { await w.u53(3); await new Sub.Subscribe({ requestId: 2n, trackNamespace: "interop/dial.hang", trackName: "video", subscriberPriority: 60, filter: Sub.joinFilter(v) }).encode(w, v); });
  res["subscribe_ok_" + name] = await capture(v, async (w) => { await w.u53(4); await new Sub.SubscribeOk({ requestId: 2n, trackAlias: 2n, properties: { timescale: 1000000, groupOrder: 2 } }).encode(w, v); });
  res["publish_namespace_" + name] = await capture(v, async (w) => { await w.u53(6); await new PN.PublishNamespace({ requestId: 1n, trackNamespace: "interop/dial.hang" }).encode(w, v); });
  res["publish_done_" + name] = await capture(v, async (w) => { await w.u53(0x0b); await new Pub.PublishDone({ requestId: 2n, statusCode: 2, reasonPhrase: "track ended" }).encode(w, v); });
  res["request_error_" + name] = await capture(v, async (w) => { await w.u53(5); await new R.RequestError({ requestId: 2n, errorCode: 404, reasonPhrase: "Broadcast not found" }).encode(w, v); });
  res["goaway_" + name] = await capture(v, async (w) => { await w.u53(0x10); await new G.GoAway({ newSessionUri: "moqt://b/" }).encode(w, v); });
  if (v !== Version.DRAFT_20) res["max_request_id_" + name] = await capture(v, async (w) => { await w.u53(0x15); await new R.MaxRequestId({ requestId: 100n }).encode(w, v); });
  if (v === Version.DRAFT_14) {
    res["subscribe_namespace_14"] = await capture(v, async (w) => { await w.u53(0x11); await new SN.SubscribeNamespaceLegacy({ namespace: "interop", requestId: 4n }).encode(w, v); });
    res["subscribe_namespace_ok_14"] = await capture(v, async (w) => { await w.u53(0x12); await new SN.SubscribeNamespaceOk({ requestId: 4n }).encode(w, v); });
    res["publish_namespace_ok_14"] = await capture(v, async (w) => { await w.u53(7); await new PN.PublishNamespaceOk({ requestId: 1n }).encode(w, v); });
    res["publish_namespace_done_14"] = await capture(v, async (w) => { await w.u53(9); await new PN.PublishNamespaceDone({ trackNamespace: "interop/dial.hang" }).encode(w, v); });
  } else if (v === Version.DRAFT_20) {
    res["subscribe_namespace_20"] = await capture(v, async (w) => { await w.u53(0x50); await new SN.SubscribeNamespace({ namespace: "interop", requestId: 4n }).encode(w, v); });
    res["namespace_20"] = await capture(v, async (w) => { await w.u53(0x08); await new SN.SubscribeNamespaceEntry({ suffix: "dial.hang" }).encode(w, v); });
    res["request_ok_20"] = await capture(v, async (w) => { await w.u53(7); await new R.RequestOk({}).encode(w, v); });
  }
  const flags = { hasExtensions: true, hasSubgroup: false, hasSubgroupObject: false, hasEnd: true, hasPriority: true, firstObject: true };
  res["subgroup_" + name] = await capture(v, async (w) => {
    await new Obj.Group({ trackAlias: 2n, groupId: 300, subGroupId: 0, publisherPriority: 0, flags }).encode(w, v);
    await new Obj.Frame({ payload: enc.encode("hello"), timestamp: new Timestamp(1500000, Timescale(1000000)) }).encode(w, flags, Timescale(1000000), v, 0);
    await new Obj.Frame({ payload: new Uint8Array(200), timestamp: new Timestamp(1533333, Timescale(1000000)) }).encode(w, flags, Timescale(1000000), v, 0);
    await new Obj.Frame({}).encode(w, flags, Timescale(1000000), v, 0);
  });
}
console.log(JSON.stringify(res, null, 1));
