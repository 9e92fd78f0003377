// Mass quotes (issue 17): one market maker on one WebSocket re-quotes 100 instruments x 2 sides
// per round, every round moving every price one tick (so every quote is replaced: 200 cancels and
// 200 new orders a round). Measured two ways in the same server, one round in flight at a time
// (send the round, wait for its answers, send the next), as a quoting loop runs:
//   - mass quote: the round is one private/mass_quote message (one command, one journal record);
//   - reference: the same round as 200 private/edit requests sent at once on the socket (the way a
//     Deribit client without mass quotes moves its quotes: each edit is one command, answers pipelined).
// Printed: mass quotes/s, quotes/s, and quotes/s as a ratio to the reference's edits/s.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { benchAdmin, gridPrice, pool, type Book } from './benchAccounts.ts';
import { benchServerArgs, call, runIfMain, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';

const INSTRUMENTS = 100;
const TICK = 0.0005;
/** The stated target: quotes/s through mass_quote at least this multiple of the edit reference. */
const TARGET_RATIO = 1;

/** A JSON-RPC client on one socket: requests by id, answers matched back. */
class Rpc {
  private nextId = 1;
  private readonly pending = new Map<number, (m: { result?: unknown; error?: unknown }) => void>();
  constructor(private readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const m = JSON.parse(raw.toString()) as { id?: number; result?: unknown; error?: unknown };
      if (typeof m.id !== 'number') return;
      const f = this.pending.get(m.id);
      this.pending.delete(m.id);
      f?.(m);
    });
  }

  static async open(url: string): Promise<Rpc> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return new Rpc(ws);
  }

  /** Sends every request before awaiting any answer; rejects on the first error answer. */
  async batch(reqs: Array<{ method: string; params: unknown }>): Promise<unknown[]> {
    const answers = reqs.map(({ method, params }) => {
      const id = this.nextId++;
      const p = new Promise<unknown>((resolve, reject) => this.pending.set(id, (m) => (m.error ? reject(new Error(`${method}: ${JSON.stringify(m.error)}`)) : resolve(m.result))));
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return p;
    });
    return Promise.all(answers);
  }

  close(): void {
    this.ws.close();
  }
}

/** Books of BTC and ETH options with room for bids and asks 6 ticks either side of the mark. */
async function quotableBooks(base: string): Promise<Book[]> {
  const names: string[] = [];
  for (const currency of ['BTC', 'ETH']) {
    for (const i of (await call(base, 'public/get_instruments', { currency })) as Array<{ instrument_name: string }>) names.push(i.instrument_name);
  }
  const books: Book[] = [];
  await pool(32, names.map((name) => async () => books.push(await call(base, 'public/get_order_book', { instrument_name: name, depth: 1 }))));
  return books
    .filter((b) => b.mark_price - 6 * TICK > b.min_price && b.mark_price + 6 * TICK < b.max_price)
    .sort((a, b) => a.instrument_name.localeCompare(b.instrument_name))
    .slice(0, INSTRUMENTS);
}

/** Round `r`'s prices: bids 4 or 5 ticks under the mark, asks as far above (never crossing). */
function prices(b: Book, r: number): { bid: number; ask: number } {
  const k = 4 + (r % 2);
  return { bid: gridPrice(b, b.mark_price - k * TICK), ask: gridPrice(b, b.mark_price + k * TICK) };
}

function amountOf(b: Book): number {
  return b.instrument_name.startsWith('ETH') ? 1 : 0.1;
}

export async function runMassQuoteBench(opts: { rounds?: number } = {}): Promise<{ lines: string[]; ok: boolean }> {
  const rounds = opts.rounds ?? 200;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-massquote-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const base = `http://127.0.0.1:${port}`;
  // the reference sends a round of 200 edits at once: more than the default 100 waiting requests
  const server = spawnStrikebook(port, dataDir, benchServerArgs(), { STRIKEBOOK_WS_MAX_QUEUED: '1000' });
  try {
    await waitHttp(`${base}/health`);
    const admin = await benchAdmin(base);
    const user = await call(base, 'private/create_user', { email: 'bench-mm@example.com', password: 'bench-password' }, admin);
    for (const currency of ['BTC', 'ETH']) await call(base, 'private/deposit_collateral', { currency, amount: 100000, user_id: user.user_id }, admin);
    const token = (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-mm@example.com', password: 'bench-password' })).access_token;
    const books = await quotableBooks(base);
    if (books.length < INSTRUMENTS) throw new Error(`only ${books.length} instruments with room to quote`);
    const rpc = await Rpc.open(`ws://127.0.0.1:${port}/ws/api/v2`);
    await rpc.batch([{ method: 'public/auth', params: { grant_type: 'password', username: 'bench-mm@example.com', password: 'bench-password' } }]);
    void token;
    for (const index_name of ['btc_usd', 'eth_usd']) {
      await rpc.batch([{ method: 'private/set_mmp_config', params: { index_name, mmp_group: 'bench', interval: 1, frozen_time: 0, quantity_limit: 1e6 } }]);
    }

    // mass quotes: one message per round
    const massRound = (r: number) => ({
      method: 'private/mass_quote',
      params: {
        quote_id: `r${r}`,
        mmp_group: 'bench',
        quotes: books.map((b) => {
          const p = prices(b, r);
          return { instrument_name: b.instrument_name, bid: { price: p.bid, amount: amountOf(b) }, ask: { price: p.ask, amount: amountOf(b) } };
        }),
      },
    });
    const check = (res: unknown) => {
      const r = res as { orders: unknown[]; errors_count: number };
      if (r.errors_count !== 0 || r.orders.length !== 2 * INSTRUMENTS) throw new Error(`mass quote: ${r.orders.length} orders, ${r.errors_count} errors`);
    };
    for (let r = 0; r < 10; r++) check((await rpc.batch([massRound(r)]))[0]);
    let t0 = performance.now();
    for (let r = 10; r < 10 + rounds; r++) check((await rpc.batch([massRound(r)]))[0]);
    const massSeconds = (performance.now() - t0) / 1000;
    await rpc.batch([{ method: 'private/cancel_quotes', params: { cancel_type: 'all' } }]);

    // reference: the same quotes as orders, moved by 200 edits a round
    const placed = (await rpc.batch(
      books.flatMap((b) => {
        const p = prices(b, 0);
        return [
          { method: 'private/buy', params: { instrument_name: b.instrument_name, amount: amountOf(b), price: p.bid } },
          { method: 'private/sell', params: { instrument_name: b.instrument_name, amount: amountOf(b), price: p.ask } },
        ];
      }),
    )) as Array<{ order: { order_id: string } }>;
    const ids = placed.map((x) => x.order.order_id);
    const editRound = (r: number) =>
      books.flatMap((b, i) => {
        const p = prices(b, r);
        return [
          { method: 'private/edit', params: { order_id: ids[2 * i], amount: amountOf(b), price: p.bid } },
          { method: 'private/edit', params: { order_id: ids[2 * i + 1], amount: amountOf(b), price: p.ask } },
        ];
      });
    for (let r = 1; r < 11; r++) await rpc.batch(editRound(r));
    t0 = performance.now();
    for (let r = 11; r < 11 + rounds; r++) await rpc.batch(editRound(r));
    const editSeconds = (performance.now() - t0) / 1000;
    rpc.close();

    const quotes = rounds * 2 * INSTRUMENTS;
    const massPerSec = rounds / massSeconds;
    const quotesPerSec = quotes / massSeconds;
    const editsPerSec = quotes / editSeconds;
    const ratio = quotesPerSec / editsPerSec;
    return {
      ok: ratio >= TARGET_RATIO,
      lines: [
        `${INSTRUMENTS} instruments x 2 sides per round, every price moved each round, ${rounds} rounds, one round in flight`,
        `mass_quote: ${massPerSec.toFixed(0)} mass quotes/s, ${quotesPerSec.toFixed(0)} quotes/s (${((massSeconds * 1000) / rounds).toFixed(2)} ms per message)`,
        `reference, the same quotes as 200 private/edit per round in one socket batch: ${editsPerSec.toFixed(0)} edits/s (${((editSeconds * 1000) / rounds).toFixed(2)} ms per round)`,
        `ratio quotes/s mass_quote / reference: ${ratio.toFixed(2)} (target >= ${TARGET_RATIO}) ${ratio >= TARGET_RATIO ? 'OK' : 'BELOW'}`,
      ],
    };
  } finally {
    await stopGracefully(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => runMassQuoteBench());
