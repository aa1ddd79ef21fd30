// Shared helpers of the interop programs: flags, the JSON-lines event channel
// to the Go test (stdout), logging (stderr), and session setup over raw QUIC.
import * as Moq from "@moq/net";
import { dial, listen, QuicWebTransport } from "./quic.ts";
import { sleep } from "./util.ts";
export { base64, sleep, unbase64 } from "./util.ts";

// stdout is the event channel to the Go test; @moq/net logs with console.log and
// console.debug, so all console output goes to stderr.
console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);

export type Flags = Record<string, string>;

// parseFlags reads --name=value and --name value pairs.
export function parseFlags(args: string[]): Flags {
  const flags: Flags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("--")) throw new Error(`unexpected argument ${arg}`);
    const eq = arg.indexOf("=");
    if (eq > 0) {
      flags[arg.slice(2, eq)] = arg.slice(eq + 1);
    } else {
      flags[arg.slice(2)] = args[++i] ?? "";
    }
  }
  return flags;
}

export function required(flags: Flags, name: string): string {
  const v = flags[name];
  if (v === undefined || v === "") throw new Error(`missing --${name}`);
  return v;
}

const encoder = new TextEncoder();

// emit writes one event as a JSON line on stdout, the channel the Go test reads.
export function emit(event: string, fields: Record<string, unknown> = {}): void {
  Deno.stdout.writeSync(encoder.encode(JSON.stringify({ event, ...fields }) + "\n"));
}

export function log(...args: unknown[]): void {
  console.error("[deno]", ...args);
}

export function splitHostPort(addr: string): [string, number] {
  const i = addr.lastIndexOf(":");
  if (i < 0) throw new Error(`address ${addr} has no port`);
  let host = addr.slice(0, i);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return [host, Number(addr.slice(i + 1))];
}

export interface Session {
  conn: Moq.Connection.Established;
  close(): void;
}

// openSession establishes one moq-lite-05 session as the flags say:
//   --listen host:port --cert PEMFILE --key PEMFILE   accept one raw QUIC client
//                                                     (emits {"event":"listening","port":N})
//   --connect host:port [--ca PEMFILE] [--server-name NAME]   dial a server
//   --alpn A,B   the ALPNs offered or accepted (default moq-lite-05; "moql"
//                reaches IETF draft 14, "moqt-20" draft 20)
// and hands it to @moq/net's own accept() or connect({transport}).
export async function openSession(flags: Flags): Promise<Session> {
  if (flags.webtransport) return await openWebTransport(flags);
  const alpns = flags.alpn ? flags.alpn.split(",") : undefined;
  if (flags.listen) {
    const [host, port] = splitHostPort(flags.listen);
    const cert = Deno.readTextFileSync(required(flags, "cert"));
    const key = Deno.readTextFileSync(required(flags, "key"));
    const { endpoint, listener } = listen(host, port, cert, key, alpns);
    emit("listening", { port: endpoint.addr.port });
    // A handshake that fails (a client that gave up on a loaded machine)
    // is not the end: the listener waits for the next one, as a server
    // does (it once ended the restarted publisher of a restart test).
    let quic: Deno.QuicConn;
    for (let failed = 1; ; failed++) {
      try {
        quic = await listener.accept();
        break;
      } catch (err) {
        if (failed == 5) throw err;
        log("accept failed; waiting for the next connection:", String(err));
      }
    }
    // The listener is not stopped: stopping it while another client's
    // handshake is pending makes Deno 2.9 (quinn-proto 0.11.16,
    // endpoint.rs:217) panic at that client's next datagram, as it unwraps
    // the server config stop() removed. moq-export dials a second time when
    // the peer answers its probe while a dial is in flight (session.Links'
    // dialWatched), so a restarted publisher crashed once in 160 -race
    // restarts (TestTheReferencePublisherOutlivesASecondHandshake). A server
    // of one session refuses the others instead, as long as it runs.
    refuseTheRest(listener);
    const transport = new QuicWebTransport(quic);
    const url = new URL(`moql://localhost:${endpoint.addr.port}/`);
    // deno-lint-ignore no-explicit-any
    const conn = await Moq.Connection.accept(transport as any, url);
    log("accepted", transport.protocol, conn.version);
    return {
      conn,
      close() {
        conn.close();
        try {
          endpoint.close();
        } catch {
          // already closed
        }
      },
    };
  }
  const [host, port] = splitHostPort(required(flags, "connect"));
  const ca = flags.ca ? Deno.readTextFileSync(flags.ca) : undefined;
  const quic = await dial(host, port, flags["server-name"] ?? "localhost", ca, alpns);
  const transport = new QuicWebTransport(quic);
  const url = new URL(`moql://${flags["server-name"] ?? "localhost"}:${port}/${flags.root ?? ""}`);
  // deno-lint-ignore no-explicit-any
  const conn = await Moq.Connection.connect(url, { transport: transport as any });
  log("connected", transport.protocol, conn.version);
  return { conn, close: () => conn.close() };
}

// refuseTheRest refuses every connection the listener takes from now on;
// the program's exit ends it.
async function refuseTheRest(listener: Deno.QuicListener) {
  try {
    for await (const incoming of listener) incoming.refuse();
  } catch {
    // the endpoint closed
  }
}

// openWebTransport dials --webtransport URL with Deno's WebTransport (the
// certificate pinned by --fingerprint HEX, as a browser's
// serverCertificateHashes) and hands the session to @moq/net's connect: the
// path and query (?jwt=) travel in the CONNECT request, where @moq/net
// carries them. Deno sends no WT-Available-Protocols, so the server falls
// back to the legacy SETUP (moq-lite-02).
async function openWebTransport(flags: Flags): Promise<Session> {
  const url = new URL(flags.webtransport);
  const hex = flags.fingerprint ?? "";
  const hash = new Uint8Array(hex.length / 2);
  for (let i = 0; i < hash.length; i++) hash[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  const wt = new WebTransport(url, hex ? { serverCertificateHashes: [{ algorithm: "sha-256", value: hash }] } : {});
  await wt.ready;
  // deno-lint-ignore no-explicit-any
  const conn = await Moq.Connection.connect(url, { transport: wt as any });
  log("connected over WebTransport", conn.version);
  return { conn, close: () => conn.close() };
}

// run wraps a program's main: any failure becomes an "error" event and exit 1.
export function run(main: () => Promise<void>): void {
  main().then(
    // Let the CONNECTION_CLOSE leave before the process goes.
    () => sleep(100).then(() => Deno.exit(0)),
    (err) => {
      emit("error", { message: String(err?.stack ?? err) });
      log("fatal", err);
      Deno.exit(1);
    },
  );
}
