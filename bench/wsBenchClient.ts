// Client side of the WebSocket fan-out benchmarks (bench/wsBench.ts, bench/gatewayBench.ts), run as
// a child process so the server keeps its own core: opens N connections, subscribes each to the
// channels it is sent, and records for every notification its key (channel + change_id / last trade
// id) and arrival time.
//
// It speaks WebSocket itself over `net` instead of using the `ws` client: on a 2-core machine the
// clients share the cores with the server, and `ws`'s per-message work (a Buffer, an event and
// UTF-8 checks per message, 200,000 messages/s) took CPU the server was being timed on. Here a
// socket read is timestamped once, the frames in it are split in place and only the bytes that
// name the message are read. It is still checked: every timed message's key must be one the server
// published (`unmatched` otherwise), and a frame that is not a server text/ping/close frame of the
// protocol fails the run.
import { randomBytes } from 'node:crypto';
import net from 'node:net';

interface Start {
  url: string;
  connections: number;
  channels: string[];
  /** Sent with the subscribe (raw channels need an authenticated connection). */
  accessToken?: string;
  /** Keep the payload of every notification the first connection times, with its key, and send
   *  them back with the result (bench/fanoutRawBench.ts replays them from a bare server). */
  capture?: boolean;
}

const wall = () => performance.timeOrigin + performance.now();

let windowStart = Infinity;
let windowEnd = Infinity;
/** the channels subscribed to, and for each the ids (change_id / last trade id) seen: key -> key number */
let channels: string[] = [];
const channelByHash = new Map<number, number>();
let idsOf: Array<Map<number, number>> = [];
/** key number -> [channel index, id] */
const keyChannel: number[] = [];
const keyId: number[] = [];
let n = 0;
let keyOf = new Int32Array(1 << 20);
let recvAt = new Float64Array(1 << 20);
let outside = 0;
/** The captured connection's notifications: key number and payload text, in arrival order. */
const captured: Array<[number, string]> = [];
let cpu0 = process.cpuUsage();

/** 0.1 ms buckets up to 5 s. */
const HIST_BUCKETS = 50_000;
const QUOTE = 0x22;
/** Every notification starts so (hub.ts `notification`); the channel name follows. */
const PREFIX = Buffer.from('{"jsonrpc":"2.0","method":"subscription","params":{"channel":"');
const CHANGE_ID = Buffer.from(',"change_id":');
const TRADE_ID = Buffer.from('"trade_id":"');
/** notifications start {"jsonrpc":"2.0","method":"subscription"; replies {"jsonrpc":"2.0","id": */
const METHOD_AT = 18;

/** FNV-1a of bytes [from, to): names a channel without making a string of it. */
function hash(buf: Buffer, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  // the length too: two channels of one hash would also need the same length
  return (h ^ (to - from)) >>> 0;
}

function digits(buf: Buffer, at: number, what: string): number {
  let v = 0;
  let i = at;
  for (let c = buf[i]!; c >= 0x30 && c <= 0x39; c = buf[++i]!) v = v * 10 + (c - 0x30);
  if (i === at) throw new Error(`no ${what} in a notification`);
  return v;
}

/**
 * Reads the key of the notification in buf[start, end) straight from its bytes, without strings or
 * allocation (200,000 a second share the cores with the server being timed); `t` is when the read
 * that brought it returned. A notification of a channel not subscribed to fails the run.
 */
function record(buf: Buffer, start: number, end: number, t: number, capture: boolean): void {
  if (t < windowStart || t > windowEnd) {
    outside++;
    return;
  }
  if (buf.compare(PREFIX, 0, PREFIX.length, start, start + PREFIX.length) !== 0) throw new Error('not a notification');
  const c0 = start + PREFIX.length;
  const c1 = buf.indexOf(QUOTE, c0);
  const ch = channelByHash.get(hash(buf, c0, c1));
  if (ch === undefined || c1 >= end) throw new Error(`notification of a channel not subscribed: ${buf.toString('latin1', c0, Math.min(c1, c0 + 100))}`);
  // book: the change_id; trades: the last trade's id (trades are in id order)
  const id = channels[ch]!.startsWith('book.')
    ? digits(buf, buf.indexOf(CHANGE_ID, c1) + CHANGE_ID.length, 'change_id')
    : digits(buf, buf.lastIndexOf(TRADE_ID, end) + TRADE_ID.length, 'trade_id');
  const ids = idsOf[ch]!;
  let k = ids.get(id);
  if (k === undefined) {
    k = keyId.length;
    keyChannel.push(ch);
    keyId.push(id);
    ids.set(id, k);
  }
  if (n === keyOf.length) {
    const k2 = new Int32Array(n * 2);
    k2.set(keyOf);
    keyOf = k2;
    const r2 = new Float64Array(n * 2);
    r2.set(recvAt);
    recvAt = r2;
  }
  keyOf[n] = k;
  recvAt[n] = t;
  n++;
  if (capture) captured.push([k, buf.toString('utf8', start, end)]);
}

function cpuOf(u: NodeJS.CpuUsage, ms: number): number {
  return (u.user + u.system) / 1000 / ms;
}

/** A client frame (RFC 6455 5.2): masked, with a zero key, so the payload goes out as is. */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? 6 : 8;
  if (n >= 65536) throw new Error('client frame too large');
  const f = Buffer.alloc(head + n);
  f[0] = 0x80 | opcode;
  if (n < 126) f[1] = 0x80 | n;
  else {
    f[1] = 0x80 | 126;
    f.writeUInt16BE(n, 2);
  }
  payload.copy(f, head);
  return f;
}

/** One connection: the upgrade, then server frames parsed in place from each read. */
class Conn {
  private rest: Buffer | null = null;
  private upgraded = false;
  onReply: (() => void) | null = null;
  /** Whether this connection's notifications are captured (Start.capture). */
  capture = false;

  constructor(
    private readonly sock: net.Socket,
    private readonly onOpen: () => void,
    private readonly onError: (e: Error) => void,
  ) {
    sock.setNoDelay(true);
    sock.on('data', (chunk: Buffer) => {
      try {
        this.data(chunk);
      } catch (err) {
        onError(err as Error);
      }
    });
    sock.on('error', onError);
  }

  send(text: string): void {
    this.sock.write(clientFrame(0x1, Buffer.from(text)));
  }

  close(): void {
    this.sock.destroy();
  }

  private data(chunk: Buffer): void {
    const t = wall();
    const buf = this.rest === null ? chunk : Buffer.concat([this.rest, chunk]);
    this.rest = null;
    let at = 0;
    if (!this.upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        this.rest = buf;
        return;
      }
      if (!buf.toString('latin1', 0, 12).startsWith('HTTP/1.1 101')) throw new Error(`upgrade refused: ${buf.toString('latin1', 0, Math.min(end, 200))}`);
      this.upgraded = true;
      at = end + 4;
      this.onOpen();
    }
    while (at + 2 <= buf.length) {
      const b0 = buf[at]!;
      let len = buf[at + 1]!;
      if (len & 0x80) throw new Error('masked server frame');
      let head = 2;
      if (len === 126) {
        if (at + 4 > buf.length) break;
        len = buf.readUInt16BE(at + 2);
        head = 4;
      } else if (len === 127) {
        if (at + 10 > buf.length) break;
        len = buf.readUInt32BE(at + 2) * 2 ** 32 + buf.readUInt32BE(at + 6);
        head = 10;
      }
      if (at + head + len > buf.length) break;
      const p = at + head;
      const opcode = b0 & 0x0f;
      if ((b0 & 0x80) === 0) throw new Error('fragmented server frame');
      if (opcode === 0x1) {
        if (buf[p + METHOD_AT] === 0x6d) record(buf, p, p + len, t, this.capture);
        else if (buf.indexOf('"result"', p) >= 0 && buf.indexOf('"result"', p) < p + len) this.onReply?.();
        else throw new Error(`unexpected answer: ${buf.toString('latin1', p, Math.min(p + len, p + 300))}`);
      } else if (opcode === 0x9) this.sock.write(clientFrame(0xa, buf.subarray(p, p + len)));
      else if (opcode === 0x8) this.sock.destroy();
      else throw new Error(`unexpected opcode ${opcode}`);
      at = p + len;
    }
    // a frame split across reads: keep its start (rare; a copy, since `buf` may be reused)
    if (at < buf.length) this.rest = Buffer.from(buf.subarray(at));
  }

  static open(url: string, onOpen: () => void, onError: (e: Error) => void): Conn {
    const u = new URL(url);
    const sock = net.connect(Number(u.port), u.hostname);
    const c = new Conn(sock, onOpen, onError);
    sock.on('connect', () => {
      sock.write(
        `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    return c;
  }
}

async function start(msg: Start): Promise<void> {
  const conns: Conn[] = [];
  let subscribed = 0;
  channels = msg.channels;
  idsOf = channels.map(() => new Map());
  channels.forEach((c, i) => {
    const b = Buffer.from(c);
    const h = hash(b, 0, b.length);
    if (channelByHash.has(h)) throw new Error(`two channels of one hash: ${c}`);
    channelByHash.set(h, i);
  });
  const subscribe = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'public/subscribe', params: { channels: msg.channels, ...(msg.accessToken ? { access_token: msg.accessToken } : {}) } });
  const fail = (err: Error) => {
    console.error(err);
    process.exit(1);
  };
  await new Promise<void>((resolve) => {
    let opened = 0;
    for (let i = 0; i < msg.connections; i++) {
      const c = Conn.open(
        msg.url,
        () => {
          c.send(subscribe);
          if (++opened === msg.connections) resolve();
        },
        fail,
      );
      c.onReply = () => subscribed++;
      c.capture = msg.capture === true && i === 0;
      conns.push(c);
    }
  });
  while (subscribed < msg.connections) await new Promise((r) => setTimeout(r, 20));
  process.send!({ ready: true });
  let cpu = NaN;
  // publish: per key the time the delay counts from, and optionally a second reference (`hist2`)
  process.on('message', (m: { window?: [number, number]; publish?: Array<[string, number, number?]> }) => {
    if (m.window) {
      [windowStart, windowEnd] = m.window;
      cpu0 = process.cpuUsage();
      setTimeout(() => (cpu = cpuOf(process.cpuUsage(cpu0), windowEnd - windowStart)), windowEnd - wall());
    }
    if (m.publish) {
      // asked before the window closed (bench/fanoutRawBench.ts leaves its reference's open): the CPU so far
      if (Number.isNaN(cpu)) cpu = cpuOf(process.cpuUsage(cpu0), wall() - windowStart);
      const pub = new Map(m.publish.map(([k, a, b]) => [k, [a, b] as const]));
      // delays in 0.1 ms buckets (the last bucket collects everything beyond), merged by the bench
      const pubOfKey = keyId.map((id, k) => pub.get(`${channels[keyChannel[k]!]}|${id}`));
      const hist = new Array<number>(HIST_BUCKETS).fill(0);
      const hist2 = new Array<number>(HIST_BUCKETS).fill(0);
      let unmatched = 0;
      let max = 0;
      for (let i = 0; i < n; i++) {
        const at = pubOfKey[keyOf[i]!];
        if (at === undefined) {
          unmatched++;
          continue;
        }
        const d = Math.max(0, recvAt[i]! - at[0]);
        if (d > max) max = d;
        hist[Math.min(HIST_BUCKETS - 1, Math.floor(d * 10))]++;
        if (at[1] !== undefined) hist2[Math.min(HIST_BUCKETS - 1, Math.floor(Math.max(0, recvAt[i]! - at[1]) * 10))]++;
      }
      const frames = captured.map(([k, text]) => [`${channels[keyChannel[k]!]}|${keyId[k]}`, text]);
      // exit once the result is written: it is large (the histograms, and the captured payloads,
      // 0.6 MB), the parent reads it only as fast as its loop allows, and an exit with the write
      // pending lost it (the full-size raw fan-out section failed so: "bench client exited (0)")
      process.send!({ result: { deliveries: n, unmatched, outside, hist, hist2, max, cpu, captured: frames } }, () => process.exit(0));
      for (const c of conns) c.close();
    }
  });
}

process.once('message', (m: Start) => {
  start(m).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
});
