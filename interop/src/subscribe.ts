// Reference subscriber for the interop tests: records one hang broadcast with
// @moq/net 0.3.4 and @moq/hang 0.3.5 over raw QUIC, as server (--listen) or
// client (--connect), and prints the catalog and every frame as JSON lines.
import * as Moq from "@moq/net";
import { Catalog, Container } from "@moq/hang";
import { base64, emit, log, openSession, parseFlags, required, run, sleep } from "./common.ts";

run(async () => {
  const flags = parseFlags(Deno.args);
  const name = Moq.Path.from(required(flags, "broadcast"));
  // Stop a track after this many frames (a live publisher never ends), and the
  // whole recording after max-ms.
  const maxFrames = Number(flags["max-frames"] ?? "0");
  const maxMs = Number(flags["max-ms"] ?? "30000");
  // Subscribe from this group on instead of the newest one (SUBSCRIBE Group Start).
  const startGroup = flags["start-group"] === undefined ? undefined : Number(flags["start-group"]);

  const session = await openSession(flags);
  const conn = session.conn;

  if (flags.announced !== "false") {
    // Wait for the broadcast to be announced, so consume() is not refused.
    const announced = conn.announced();
    for (;;) {
      const event = await announced.next();
      if (!event) throw new Error("announce stream ended before the broadcast was announced");
      log("announce", event.path, event.active);
      if (event.path === name && event.active) break;
    }
    announced.close();
    emit("announced", { broadcast: name });
  }
  const broadcast = conn.consume(name);

  const catalogSub = broadcast.subscribe(Catalog.TRACK, { priority: 100 });
  const json = await catalogSub.readJson();
  if (json === undefined) throw new Error("catalog track ended without a frame");
  const catalog = Catalog.RootSchema.parse(json);
  emit("catalog", { json: JSON.stringify(json) });
  catalogSub.close();

  const names = [
    ...Object.keys(catalog.video?.renditions ?? {}),
    ...Object.keys(catalog.audio?.renditions ?? {}),
  ];
  const format = new Container.Legacy.Format();
  const deadline = sleep(maxMs).then(() => "timeout" as const);

  const recordTrack = async (track: string) => {
    const sub = broadcast.subscribe(track, { priority: 60, ordered: true, startGroup });
    const info = await sub.info();
    emit("track", { track, timescale: info.timescale, latencyMax: info.latencyMax });
    let count = 0;
    const groups: Promise<void>[] = [];
    for (;;) {
      const group = await sub.recvGroup();
      if (!group) break;
      groups.push((async () => {
        for (let index = 0;; index++) {
          const frame = await group.readFrame();
          if (!frame) break;
          for (const media of format.decode(frame.payload)) {
            count++;
            emit("frame", {
              track,
              group: group.sequence,
              index,
              ts: media.timestamp,
              wire: frame.timestamp.asMicros(),
              data: base64(media.payload),
            });
          }
        }
      })());
      if (maxFrames > 0 && count >= maxFrames) break;
    }
    await Promise.all(groups);
    sub.close();
    emit("track_end", { track, frames: count });
  };

  const result = await Promise.race([Promise.all(names.map(recordTrack)), deadline]);
  if (result === "timeout") emit("timeout", { ms: maxMs });
  emit("done", {});
  session.close();
});
