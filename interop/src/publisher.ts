// The reference publisher's core, shared by the Deno program (publish.ts) and
// the browser page (browser/ietf-publish.ts): publishes one hang broadcast
// with @moq/net 0.3.4 and @moq/hang 0.3.5 from a manifest (see doc.go) on the
// session open() establishes, reporting through emit.
import * as Moq from "@moq/net";
import { Catalog, Container } from "@moq/hang";
import { base64, sleep, unbase64 } from "./util.ts";

interface ManifestFrame {
  ts: number; // presentation timestamp, microseconds
  key: boolean; // starts a new group
  at: number; // send time, microseconds after the start
  data: string; // base64 payload (the codec bitstream, without container)
}

interface ManifestTrack {
  name: string;
  kind: "video" | "audio";
  config: Record<string, unknown>; // catalog rendition fields except container
  frames: ManifestFrame[];
}

export interface Manifest {
  broadcast: string;
  tracks: ManifestTrack[];
}

export interface PublishSession {
  conn: Moq.Connection.Established;
  close(): void;
}

export type Emit = (event: string, fields?: Record<string, unknown>) => void;

export async function publishManifest(
  manifest: Manifest,
  flags: Record<string, string>,
  open: () => Promise<PublishSession>,
  emit: Emit,
  log: (...args: unknown[]) => void,
): Promise<void> {
  const speed = Number(flags.speed ?? "1");
  const waitMs = Number(flags["wait-ms"] ?? "20000");

  // The catalog, validated (and defaulted) by hang's own schema.
  const cmaf = flags.container === "cmaf";
  // LOC: hang's LOC producer (@moq/loc), a group per keyframe, as the
  // legacy one.
  const loc = flags.container === "loc";
  const raw: Record<string, { renditions: Record<string, unknown> }> = {};
  for (const t of manifest.tracks) {
    raw[t.kind] ??= { renditions: {} };
    let container: Record<string, unknown> = { kind: "legacy" };
    if (cmaf) {
      // deno-lint-ignore no-explicit-any
      const config = t.config as any;
      const init = t.kind === "video"
        ? Container.Cmaf.createVideoInitSegment(config)
        : Container.Cmaf.createAudioInitSegment(config);
      container = { kind: "cmaf", init: base64(init) };
    } else if (loc) {
      container = { kind: "loc" };
    }
    raw[t.kind].renditions[t.name] = { ...t.config, container };
  }
  const catalog = Catalog.RootSchema.parse(raw);

  const broadcast = new Moq.Broadcast.Producer();
  if (flags["no-fetch"] !== undefined) {
    // --no-fetch refuses every FETCH (the stream is reset), as @moq/net's
    // consuming wire layer does over a transport without FETCH: @moq/net
    // serves a FETCH from its broadcast's retained window otherwise.
    broadcast.fetchGroup = () => Promise.reject(new Error("this publisher serves no FETCH"));
  }
  const catalogTrack = broadcast.createTrack(Catalog.TRACK);
  // The catalog's group stays open, as a hang publisher's does (@moq/publish
  // serves it with @moq/json's producer, which keeps the group open for its
  // deltas): @moq/net keeps an open group cached, and drops a closed one 5 s
  // after it was written (DEFAULT_LATENCY_MAX_MS, the window of a track that
  // sets none). writeJson closes its group, so a subscriber that came more
  // than 5 s after the start (Deno takes 5-10 s to start on a loaded
  // machine) never got the catalog.
  catalogTrack.appendGroup().writeJson(catalog);

  const producers = manifest.tracks.map((t) => {
    const track = broadcast.createTrack(t.name, Container.trackInfo());
    // Record the sequence of each group hang's legacy producer opens.
    let sequence = -1;
    const append = track.appendGroup.bind(track);
    track.appendGroup = () => {
      const group = append();
      sequence = group.sequence;
      return group;
    };
    // deno-lint-ignore no-explicit-any
    const legacy = loc ? new Container.Loc.Producer(track as any) : new Container.Legacy.Producer(track as any);
    // CMAF: one moof+mdat per frame (hang's encoder, timescale µs as its
    // init says), a group per keyframe, as a hang CMAF producer writes them.
    let group: ReturnType<typeof track.appendGroup> | undefined;
    let fragments = 0;
    const encode = (data: Uint8Array, ts: number, key: boolean, duration: number) => {
      if (!cmaf) return legacy.encode(data, ts as Moq.Time.Micro, key);
      if (key) {
        group?.close();
        group = track.appendGroup();
      }
      const payload = Container.Cmaf.encodeDataSegment({ data, timestamp: ts, duration, keyframe: key, sequence: ++fragments });
      group!.writeFrame({ payload, timestamp: Moq.Time.Timestamp.fromMicros(ts as Moq.Time.Micro) });
    };
    const close = () => {
      if (!cmaf) return legacy.close();
      track.close();
      group?.close();
    };
    return { spec: t, track, encode, close, sequence: () => sequence };
  });

  // --at-once starts the media before any peer has connected, as a live
  // encoder does: @moq/net holds what was sent for its latency window (5 s)
  // and replays it to a subscription that asks for it with a start group.
  const atOnce = flags["at-once"] !== undefined;
  const playing = atOnce ? play() : undefined;

  const session = await open();
  session.conn.publish(Moq.Path.from(manifest.broadcast), broadcast);
  emit("published", { broadcast: manifest.broadcast, version: session.conn.version });
  emit("catalog", { json: JSON.stringify(catalog) });

  if (playing) {
    await playing;
  } else {
    // A subscription without a start group begins at the newest group, so
    // hold the media until every track has a subscriber.
    const deadline = Date.now() + waitMs;
    while (!producers.every((p) => p.track.used.peek())) {
      if (Date.now() > deadline) {
        const missing = producers.filter((p) => !p.track.used.peek()).map((p) => p.spec.name);
        throw new Error(`no subscriber for ${missing.join(", ")} after ${waitMs} ms`);
      }
      await sleep(10);
    }
    emit("subscribed", { tracks: producers.map((p) => p.spec.name) });
    await play();
  }
  // @moq/net's publisher sends SUBSCRIBE_END and FINs the subscribe stream as
  // soon as a track closes, without waiting for its group streams, and its
  // subscriber drops group streams that arrive after that FIN. Give the last
  // groups a head start so the recording does not depend on that race.
  await sleep(Number(flags["close-delay-ms"] ?? "500"));
  for (const p of producers) p.close();
  emit("done", { frames: producers.reduce((n, p) => n + p.spec.frames.length, 0) });
  log("published", producers.reduce((n, p) => n + p.spec.frames.length, 0), "frames; waiting for the peer to close");

  const linger = Number(flags["linger-ms"] ?? "30000");
  await Promise.race([session.conn.closed.catch(() => undefined), sleep(linger)]);
  session.close();

  // play sends the manifest's frames on their schedule.
  async function play(): Promise<void> {
    const schedule = producers
      .flatMap((p) => p.spec.frames.map((f, index) => ({ p, f, index })))
      .sort((a, b) => a.f.at - b.f.at);
    // --epoch-ms T stamps the frames on a wall clock that started at T (Unix
    // ms), as a live encoder does: a publisher started again goes on from the
    // real time instead of from 0.
    const shift = flags["epoch-ms"] ? Math.round((Date.now() - Number(flags["epoch-ms"])) * 1000) : 0;
    const start = performance.now();
    for (const { p, f, index } of schedule) {
      await sleep(f.at / 1000 / speed - (performance.now() - start));
      const next = p.spec.frames[index + 1];
      const duration = next ? Math.max(next.ts - f.ts, 1) : 20_000;
      p.encode(unbase64(f.data), f.ts + shift, f.key, duration);
      // late: how far behind its schedule (ms) this keyframe went out. A
      // starved process sends late what it stamped on time, so the media it
      // never sent before a kill ends that much before the kill.
      if (f.key) {
        emit("group", {
          track: p.spec.name,
          sequence: p.sequence(),
          frame: index,
          late: Math.max(0, Math.round(performance.now() - start - f.at / 1000 / speed)),
        });
      }
    }
  }
}
