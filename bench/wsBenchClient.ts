// Client side of the WebSocket fan-out benchmark (bench/wsBench.ts), run as a child process so the
// server keeps its own core: opens N connections, subscribes each to the channels it is sent, and
// records for every notification its key (channel + change_id / last trade id) and arrival time.
import WebSocket from 'ws';

interface Start {
  url: string;
  connections: number;
  channels: string[];
  /** Sent with the subscribe (raw channels need an authenticated connection). */
  accessToken?: string;
}

const wall = () => performance.timeOrigin + performance.now();

let windowStart = Infinity;
let windowEnd = Infinity;
const keyIds = new Map<string, number>();
const keys: string[] = [];
let n = 0;
let keyOf = new Int32Array(1 << 20);
let recvAt = new Float64Array(1 << 20);
let outside = 0;
let cpu0 = process.cpuUsage();

/** 0.1 ms buckets up to 5 s. */
const HIST_BUCKETS = 50_000;
const QUOTE = 0x22;
const COMMA = 0x2c;

/** Reads the message key straight from the bytes (no decode of the whole message). */
function record(buf: Buffer): void {
  const t = wall();
  if (t < windowStart || t > windowEnd) {
    outside++;
    return;
  }
  const c0 = buf.indexOf('"channel":"') + 11;
  const channel = buf.toString('latin1', c0, buf.indexOf(QUOTE, c0));
  let key: string;
  if (channel.startsWith('book.')) {
    const i = buf.indexOf(',"change_id":', c0) + 13;
    key = channel + '|' + buf.toString('latin1', i, buf.indexOf(COMMA, i));
  } else {
    const i = buf.lastIndexOf('"trade_id":"') + 12;
    key = channel + '|' + buf.toString('latin1', i, buf.indexOf(QUOTE, i));
  }
  let id = keyIds.get(key);
  if (id === undefined) {
    id = keys.length;
    keys.push(key);
    keyIds.set(key, id);
  }
  if (n === keyOf.length) {
    const k2 = new Int32Array(n * 2);
    k2.set(keyOf);
    keyOf = k2;
    const r2 = new Float64Array(n * 2);
    r2.set(recvAt);
    recvAt = r2;
  }
  keyOf[n] = id;
  recvAt[n] = t;
  n++;
}

function cpuOf(u: NodeJS.CpuUsage, ms: number): number {
  return (u.user + u.system) / 1000 / ms;
}

async function start(msg: Start): Promise<void> {
  const sockets: WebSocket[] = [];
  let subscribed = 0;
  await new Promise<void>((resolve, reject) => {
    let opened = 0;
    for (let i = 0; i < msg.connections; i++) {
      const ws = new WebSocket(msg.url, { perMessageDeflate: false, skipUTF8Validation: true });
      sockets.push(ws);
      ws.on('error', reject);
      ws.on('open', () => {
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'public/subscribe', params: { channels: msg.channels, ...(msg.accessToken ? { access_token: msg.accessToken } : {}) } }));
        if (++opened === msg.connections) resolve();
      });
      ws.on('message', (data) => {
        const buf = data as Buffer;
        // notifications start {"jsonrpc":"2.0","method":"subscription"; replies {"jsonrpc":"2.0","id":
        if (buf[18] === 0x6d) record(buf);
        else if (buf.includes('"result"')) subscribed++;
      });
    }
  });
  while (subscribed < msg.connections) await new Promise((r) => setTimeout(r, 20));
  process.send!({ ready: true });
  process.on('message', (m: { window?: [number, number]; publish?: Array<[string, number]> }) => {
    if (m.window) {
      [windowStart, windowEnd] = m.window;
      cpu0 = process.cpuUsage();
    }
    if (m.publish) {
      const pub = new Map(m.publish);
      // delays in 0.1 ms buckets (the last bucket collects everything beyond), merged by the bench
      const hist = new Array<number>(HIST_BUCKETS).fill(0);
      let unmatched = 0;
      let max = 0;
      for (let i = 0; i < n; i++) {
        const at = pub.get(keys[keyOf[i]]);
        if (at === undefined) {
          unmatched++;
          continue;
        }
        const d = Math.max(0, recvAt[i] - at);
        if (d > max) max = d;
        hist[Math.min(HIST_BUCKETS - 1, Math.floor(d * 10))]++;
      }
      process.send!({ result: { deliveries: n, unmatched, outside, hist, max, cpu: cpuOf(process.cpuUsage(cpu0), windowEnd - windowStart) } });
      for (const ws of sockets) ws.terminate();
      setTimeout(() => process.exit(0), 50);
    }
  });
}

process.once('message', (m: Start) => {
  start(m).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
});
