// Block RFQ latency (issue 34): a maker's quote change to the taker seeing it on block_rfq.taker.BTC,
// open loop (edits sent at a fixed rate whatever the answers), p99 over 1,000; beside it the same
// path of a plain order: a resting order's edit to the book.{instrument}.raw notification.
// Each edit carries a distinct amount, by which its notification is recognized; an edit whose change
// was conflated into a later one in the same batch has no notification of its own and is not counted.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { BOOTSTRAP, benchServerArgs, call, runIfMain, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';

const EDITS = 1000;
const RATE = 200;

interface Socket {
  ws: WebSocket;
  send(method: string, params: Record<string, unknown>): void;
  call(method: string, params: Record<string, unknown>): Promise<any>;
}

async function socket(url: string, token: string, onNote: (channel: string, data: any, at: number) => void): Promise<Socket> {
  const ws = new WebSocket(url.replace('http', 'ws') + '/ws/api/v2');
  await new Promise((res, rej) => (ws.once('open', res), ws.once('error', rej)));
  let id = 0;
  const waiting = new Map<number, (m: any) => void>();
  ws.on('message', (raw) => {
    const at = performance.now();
    const m = JSON.parse(String(raw));
    if (m.method === 'subscription') onNote(m.params.channel, m.params.data, at);
    else if (m.id !== undefined) waiting.get(m.id)?.(m);
  });
  const s: Socket = {
    ws,
    send: (method, params) => ws.send(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, access_token: token } })),
    call: (method, params) =>
      new Promise((res, rej) => {
        const i = ++id;
        waiting.set(i, (m) => (m.error ? rej(new Error(JSON.stringify(m.error))) : res(m.result)));
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: i, method, params: { ...params, access_token: token } }));
      }),
  };
  return s;
}

function p(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Sends EDITS edits at RATE/s; `amountSeen` resolves each distinct amount seen by the observer. */
async function openLoop(send: (k: number) => void, seen: Map<string, number>, amountOf: (k: number) => string): Promise<number[]> {
  const sent = new Map<string, number>();
  const start = performance.now();
  for (let k = 0; k < EDITS; k++) {
    const due = start + (k * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent.set(amountOf(k), performance.now());
    send(k);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const lat: number[] = [];
  for (const [a, t] of sent) {
    const s = seen.get(a);
    if (s !== undefined && s >= t) lat.push(s - t);
  }
  return lat.sort((a, b) => a - b);
}

export async function runRfqBench(): Promise<{ lines: string[]; ok: boolean }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-rfqbench-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const base = `http://127.0.0.1:${port}`;
  const server = spawnStrikebook(port, dataDir, benchServerArgs());
  const sockets: Socket[] = [];
  try {
    await waitHttp(`${base}/health`);
    await call(base, 'private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password', bootstrap_token: BOOTSTRAP });
    const admin = (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password' })).access_token;
    const tokens: string[] = [];
    const ids: number[] = [];
    for (const who of ['maker', 'taker']) {
      const u = await call(base, 'private/create_user', { email: `bench-${who}@example.com`, password: 'bench-password' }, admin);
      await call(base, 'private/deposit_collateral', { currency: 'BTC', amount: 10_000, user_id: u.user_id }, admin);
      ids.push(u.user_id);
      tokens.push((await call(base, 'public/auth', { grant_type: 'password', username: `bench-${who}@example.com`, password: 'bench-password' })).access_token);
    }
    const [maker, taker] = tokens as [string, string];
    await call(base, 'private/set_block_rfq_maker', { user_id: ids[0], is_maker: true }, admin);
    const instruments = (await call(base, 'public/get_instruments', { currency: 'BTC' })) as any[];
    const index = (await call(base, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    const lastExpiry = Math.max(...instruments.map((i) => i.expiration_timestamp));
    const inst = instruments.filter((i) => i.expiration_timestamp === lastExpiry && i.option_type === 'call').sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index))[0];
    const name = inst.instrument_name;
    const mark = (await call(base, 'public/get_order_book', { instrument_name: name })).mark_price;
    const price = Math.max(0.0005, Math.floor(mark * 0.9 * 2000) / 2000);
    const amountOf = (k: number) => ((k + 1) / 10).toFixed(1);

    // block RFQ path: edits of one bid quote -> the taker's block_rfq.taker.BTC
    const rfqSeen = new Map<string, number>();
    const takerWs = await socket(base, taker, (ch, d, at) => {
      if (ch === 'block_rfq.taker.BTC') for (const b of d.bids ?? []) if (!rfqSeen.has(b.amount.toFixed(1))) rfqSeen.set(b.amount.toFixed(1), at);
    });
    const makerWs = await socket(base, maker, () => undefined);
    sockets.push(takerWs, makerWs);
    const rfq = await call(base, 'private/create_block_rfq', { legs: [{ instrument_name: name, amount: 200, direction: 'buy' }] }, taker);
    await takerWs.call('private/subscribe', { channels: ['block_rfq.taker.BTC'] });
    const q = await makerWs.call('private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 150, direction: 'buy', legs: [{ instrument_name: name, price }] });
    const rfqLat = await openLoop((k) => makerWs.send('private/edit_block_rfq_quote', { block_rfq_quote_id: q.block_rfq_quote_id, amount: Number(amountOf(k)), legs: [{ instrument_name: name, price }] }), rfqSeen, amountOf);

    // reference: edits of one resting order -> book.{instrument}.raw
    const bookSeen = new Map<string, number>();
    const bookWs = await socket(base, taker, (ch, d, at) => {
      if (ch === `book.${name}.raw`) for (const b of d.bids ?? []) if (b[1] > 0 && !bookSeen.has(Number(b[2]).toFixed(1))) bookSeen.set(Number(b[2]).toFixed(1), at);
    });
    sockets.push(bookWs);
    const order = await makerWs.call('private/buy', { instrument_name: name, amount: 150, price });
    await bookWs.call('private/subscribe', { channels: [`book.${name}.raw`] });
    const bookLat = await openLoop((k) => makerWs.send('private/edit', { order_id: order.order.order_id, amount: Number(amountOf(k)), price: order.order.price }), bookSeen, amountOf);

    const line = (what: string, l: number[]) => `${what}: ${l.length} of ${EDITS} seen (open loop ${RATE}/s), p50 ${p(l, 0.5).toFixed(2)} ms, p99 ${p(l, 0.99).toFixed(2)} ms`;
    const lines = [line('block RFQ quote edit -> block_rfq.taker.BTC', rfqLat), line('reference: order edit -> book.X.raw', bookLat), `ratio p99 ${(p(rfqLat, 0.99) / p(bookLat, 0.99)).toFixed(2)}`];
    return { lines, ok: rfqLat.length > 0 };
  } finally {
    for (const s of sockets) s.ws.close();
    await stopGracefully(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, runRfqBench);
