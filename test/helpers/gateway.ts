// Book rebuilding and waiting, for the gateway tests: a client's view of a book channel (snapshot,
// then changes chained by prev_change_id) compared with get_order_book.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import WebSocket from 'ws';
import { ROOT, freePort } from './server.ts';

export interface Book {
  change_id: number;
  bids: Array<[number, number]>;
  asks: Array<[number, number]>;
}

/** Applies a book channel's messages in order; asserts that every change chains on to the one before. */
export function applyBook(msgs: any[]): Book {
  const bids = new Map<number, number>();
  const asks = new Map<number, number>();
  let changeId: number | null = null;
  for (const d of msgs) {
    if (d.type === 'snapshot') {
      bids.clear();
      asks.clear();
    } else {
      assert.equal(d.prev_change_id, changeId, `change ${d.change_id} chains on to ${changeId}`);
    }
    for (const [a, p, q] of d.bids) {
      if (a === 'delete') bids.delete(p);
      else bids.set(p, q);
    }
    for (const [a, p, q] of d.asks) {
      if (a === 'delete') asks.delete(p);
      else asks.set(p, q);
    }
    changeId = d.change_id;
  }
  return {
    change_id: changeId ?? -1,
    bids: [...bids].sort((a, b) => b[0] - a[0]),
    asks: [...asks].sort((a, b) => a[0] - b[0]),
  };
}

/** get_order_book's answer in the same shape. */
export function bookOf(r: any): Book {
  return { change_id: r.change_id, bids: r.bids, asks: r.asks };
}

export async function until<T>(what: string, fn: () => T | null | undefined | false | Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface ChildGateway {
  url: string;
  proc: ChildProcess;
  exited: Promise<unknown>;
  output(): string;
}

/** Starts `npm run gateway`'s entry point as a child process and waits until it answers /health. */
export async function spawnGateway(env: Record<string, string>): Promise<ChildGateway> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/gateway/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  await until(`gateway on ${port}: ${out}`, async () => {
    if (proc.exitCode !== null) throw new Error(`gateway exited: ${out}`);
    return fetch(`${url}/health`).then((r) => r.ok, () => false);
  }, 30_000);
  return { url, proc, exited, output: () => out };
}

/** A JSON-RPC WebSocket client that connects from a loopback address of its choice (another "client address"). */
export class AddressedClient {
  private next = 1;
  private readonly pending = new Map<number, (body: any) => void>();
  readonly notes: Array<{ channel: string; data: any }> = [];
  /** The close code and reason, once closed. */
  closed: { code: number; reason: string } | null = null;
  readonly closedP: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString());
      if (msg.method === 'subscription') this.notes.push(msg.params);
      else if (typeof msg.id === 'number') {
        this.pending.get(msg.id)?.(msg);
        this.pending.delete(msg.id);
      }
    });
    this.closedP = new Promise((resolve) => ws.on('close', (code, reason) => resolve((this.closed = { code, reason: reason.toString() }))));
  }

  static open(url: string, localAddress = '127.0.0.1'): Promise<AddressedClient> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws/api/v2`, { localAddress });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new AddressedClient(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends a request; resolves with the whole answer, or rejects when none comes within `ms`. */
  call(method: string, params: Record<string, unknown> = {}, ms = 10_000): Promise<any> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no answer to ${method} within ${ms} ms`));
      }, ms);
      this.pending.set(id, (body) => {
        clearTimeout(timer);
        resolve(body);
      });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
}
