// Adapter: a Deno raw QUIC connection (Deno.QuicConn, --unstable-net) shaped
// like the WebTransport session @moq/net expects from connect({transport}) and
// accept(transport, url).
//
// What @moq/net 0.3.4 touches on the session (read from its compiled JS):
//   protocol                        negotiated ALPN ("moq-lite-05") -> version
//   createBidirectionalStream(opts) {readable, writable}; opts = {sendOrder, waitUntilAvailable}
//   createUnidirectionalStream(opts) WritableStream<Uint8Array>
//   incomingBidirectionalStreams    ReadableStream<{readable, writable}>
//   incomingUnidirectionalStreams   ReadableStream<ReadableStream<Uint8Array>>
//   close(info?), closed            WebTransportCloseInfo-shaped
//   datagrams (optional)            {maxDatagramSize, readable, writable}
//   getStats (optional)             absent here, so it advertises Probe level 0
// A raw QUIC stream maps 1:1 to a moq stream, so everything except close and
// the datagram pair passes straight through.

export const ALPN = "moq-lite-05";

interface SendOptions {
  sendOrder?: number;
  waitUntilAvailable?: boolean;
}

interface CloseInfo {
  closeCode?: number;
  reason?: string;
}

interface Datagrams {
  readonly maxDatagramSize: number;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
}

// Deno 2.9 stores a stream's send order as an i32 and silently wraps larger
// values (seen: -4.5e15 became +444776448), while @moq/net packs a group's send
// order as -(priorityRank * 2^44 + position + 1) (lite/priority.js), down to
// about -2^52. Unmapped, group streams would get effectively random priorities,
// some above the control streams at 0. This maps the packing into the i32 range
// keeping its order: rank * 2^23 + position (position capped at 2^23 - 1).
const GROUP_SPAN = 2 ** 44;
const I32_SPAN = 2 ** 23;
export function sendOrder(order: number | undefined): number | undefined {
  if (order === undefined || !Number.isFinite(order)) return undefined;
  if (order >= 0) return Math.min(Math.trunc(order), 2 ** 31 - 1);
  const v = Math.trunc(-order) - 1;
  const rank = Math.min(Math.floor(v / GROUP_SPAN), 255);
  const position = Math.min(v % GROUP_SPAN, I32_SPAN - 1);
  return -(rank * I32_SPAN + position + 1);
}

// patchSendOrder makes later assignments to stream.sendOrder (what @moq/net's
// Writer.setPriority does to re-rank in-flight groups) go through sendOrder().
function patchSendOrder<T extends WritableStream<Uint8Array>>(stream: T): T {
  let desc: PropertyDescriptor | undefined;
  for (let p = Object.getPrototypeOf(stream); p && !desc; p = Object.getPrototypeOf(p)) {
    desc = Object.getOwnPropertyDescriptor(p, "sendOrder");
  }
  if (!desc?.set || !desc.get) return stream;
  Object.defineProperty(stream, "sendOrder", {
    configurable: true,
    get: () => desc.get!.call(stream),
    set: (v: number) => desc.set!.call(stream, sendOrder(v) ?? 0),
  });
  return stream;
}

export class QuicWebTransport {
  readonly #conn: Deno.QuicConn;
  #closing = false;

  readonly protocol: string;
  readonly ready: Promise<void>;
  readonly closed: Promise<{ closeCode: number; reason: string }>;
  readonly incomingBidirectionalStreams: ReadableStream<{
    readable: ReadableStream<Uint8Array>;
    writable: WritableStream<Uint8Array>;
  }>;
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  readonly datagrams: Datagrams | undefined;

  constructor(conn: Deno.QuicConn) {
    this.#conn = conn;
    this.protocol = conn.protocol ?? "";
    this.ready = conn.handshake;
    this.closed = conn.closed.then((info) => ({
      closeCode: info?.closeCode ?? 0,
      reason: info?.reason ?? "",
    }));
    this.incomingBidirectionalStreams = conn.incomingBidirectionalStreams.pipeThrough(
      new TransformStream({
        transform(stream, controller) {
          patchSendOrder(stream.writable);
          controller.enqueue(stream);
        },
      }),
    );
    this.incomingUnidirectionalStreams = conn.incomingUnidirectionalStreams;
    this.datagrams = conn.maxDatagramSize > 0 ? this.#datagrams(conn) : undefined;
  }

  async createBidirectionalStream(options?: SendOptions) {
    const stream = await this.#conn.createBidirectionalStream({
      sendOrder: sendOrder(options?.sendOrder),
      waitUntilAvailable: options?.waitUntilAvailable ?? false,
    });
    patchSendOrder(stream.writable);
    return stream;
  }

  async createUnidirectionalStream(options?: SendOptions) {
    const stream = await this.#conn.createUnidirectionalStream({
      sendOrder: sendOrder(options?.sendOrder),
      waitUntilAvailable: options?.waitUntilAvailable ?? false,
    });
    return patchSendOrder(stream);
  }

  close(info?: CloseInfo): void {
    if (this.#closing) return;
    this.#closing = true;
    try {
      this.#conn.close({ closeCode: info?.closeCode ?? 0, reason: info?.reason ?? "" });
    } catch {
      // Already closed by the peer.
    }
  }

  #datagrams(conn: Deno.QuicConn): Datagrams {
    return {
      maxDatagramSize: conn.maxDatagramSize,
      readable: new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            controller.enqueue(await conn.readDatagram());
          } catch {
            controller.close();
          }
        },
      }),
      writable: new WritableStream<Uint8Array>({
        write(chunk) {
          return conn.sendDatagram(chunk);
        },
      }),
    };
  }
}

// listen binds a raw QUIC listener on hostname:port (port 0 picks a free one)
// with the PEM certificate chain and key, for the ALPNs given (moq-lite-05 by
// default; "moql", "moqt-20" and the like restrict @moq/net to IETF drafts).
export function listen(hostname: string, port: number, cert: string, key: string, alpns: string[] = [ALPN]) {
  const endpoint = new Deno.QuicEndpoint({ hostname, port });
  const listener = endpoint.listen({
    alpnProtocols: alpns,
    cert,
    key,
    maxConcurrentUnidirectionalStreams: 1024,
    maxConcurrentBidirectionalStreams: 256,
    keepAliveInterval: 5000,
  });
  return { endpoint, listener };
}

// dial connects to host:port offering the ALPNs given (only moq-lite-05 by
// default), trusting caCert (PEM) in addition to the system roots.
export async function dial(hostname: string, port: number, serverName: string, caCert?: string, alpns: string[] = [ALPN]) {
  const conn = await Deno.connectQuic({
    hostname,
    port,
    serverName,
    alpnProtocols: alpns,
    caCerts: caCert ? [caCert] : undefined,
    maxConcurrentUnidirectionalStreams: 1024,
    maxConcurrentBidirectionalStreams: 256,
    keepAliveInterval: 5000,
  });
  await conn.handshake;
  return conn;
}
