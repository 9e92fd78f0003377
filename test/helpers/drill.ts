// The operator's drill as tests run it (issue 30): steady order load on a leader, acknowledgements
// recorded with when they arrived, and the check after a takeover or restart that every
// acknowledged order is present exactly once and that the server equals a clean replay of its journal.
import assert from 'node:assert/strict';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import type { TestSchema } from './postgres.ts';
import { ok, rpc } from './server.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Ack {
  orderId: string;
  token: string;
  label: string;
  /** performance.now() when the request was sent, and when its answer arrived. */
  sentAt: number;
  at: number;
  /** The server that answered. */
  url: string;
}

export interface OrderLoad {
  acks: Ack[];
  /** Answers that were neither a result nor a transport failure, by error code. */
  errors: Map<number, number>;
  /** Stops the loops and waits for their last requests (each bounded by `requestTimeoutMs`). */
  stop(): Promise<void>;
}

/**
 * `loops` clients each placing resting buys (label `${prefix}-<client>-<n>`) on `target()` one after
 * the other. A request that fails in transport (reset, refused, timed out) acknowledged nothing.
 */
export function orderLoad(target: () => string, tokens: string[], instrument: string, prices: number[], prefix: string, requestTimeoutMs = 30_000): OrderLoad {
  const acks: Ack[] = [];
  const errors = new Map<number, number>();
  let stopped = false;
  const loops = tokens.map(async (token, u) => {
    for (let n = 0; !stopped; n++) {
      const url = target();
      const label = `${prefix}-${u}-${n}`;
      const sentAt = performance.now();
      try {
        const r = await rpcWithin(url, 'private/buy', { instrument_name: instrument, amount: 0.1, price: prices[n % prices.length], label }, token, requestTimeoutMs);
        if (r.body?.result) acks.push({ orderId: String(r.body.result.order.order_id), token, label, sentAt, at: performance.now(), url });
        else if (r.body?.error) errors.set(r.body.error.code, (errors.get(r.body.error.code) ?? 0) + 1);
      } catch {
        // the outcome is unknown: nothing was acknowledged
        await sleep(20);
      }
    }
  });
  return {
    acks,
    errors,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** rpc() that gives up after `ms` (a frozen server never answers). */
export async function rpcWithin(url: string, method: string, params: Record<string, unknown>, token: string | undefined, ms: number): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/v1/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(params),
    signal: AbortSignal.timeout(ms),
  });
  return { status: res.status, body: await res.json() };
}

/** The state a clean replay of the journal table reaches. */
export async function cleanReplay(db: TestSchema): Promise<{ seq: number; hash: string; errors: unknown[] }> {
  const rows = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal ORDER BY seq`);
  const ex = new Exchange();
  const errors: unknown[] = [];
  for (const r of rows) applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)), (err) => errors.push(err));
  return { seq: ex.seq, hash: stateHash(ex), errors };
}

/**
 * On `url` (the leader now): every acknowledged order is there under its owner; no order label of
 * `prefix` is journaled twice; the state equals a clean replay; seqs 1..n each once.
 */
export async function checkAcknowledged(db: TestSchema, url: string, admin: string, acks: Ack[], prefix: string): Promise<{ seq: number }> {
  for (const a of acks) {
    const st = await rpc(url, 'private/get_order_state', { order_id: a.orderId }, a.token);
    assert.ok(st.body.result, `acknowledged order ${a.orderId} (${a.label}) is on the leader: ${JSON.stringify(st.body.error)}`);
    assert.equal(st.body.result.label, a.label, `order ${a.orderId} is the one acknowledged`);
  }
  const records = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal ORDER BY seq`);
  const labels: string[] = [];
  for (const r of records) {
    const cmd = decodeCommand(r.cmd, Number(r.seq), Number(r.ts));
    if (cmd.t === 'place' && cmd.label.startsWith(`${prefix}-`)) labels.push(cmd.label);
  }
  const seen = new Set<string>();
  const twice = labels.filter((l) => (seen.has(l) ? true : (seen.add(l), false)));
  assert.deepEqual(twice, [], 'no order journaled twice');
  const acked = new Set(acks.map((a) => a.label));
  assert.equal(acked.size, acks.length, 'no order acknowledged twice');
  for (const l of acked) assert.ok(seen.has(l), `acknowledged order ${l} is journaled`);
  const h = await ok(url, 'private/get_state_hash', {}, admin);
  const replay = await cleanReplay(db);
  assert.deepEqual(replay.errors, []);
  assert.equal(replay.seq, h.seq);
  assert.equal(h.state_hash, replay.hash, 'the leader equals a clean replay of the journal');
  const [c] = await db.query<{ n: number; distinct: number; max: string }>(`SELECT count(*)::int AS n, count(DISTINCT seq)::int AS distinct, MAX(seq) AS max FROM ${db.name}.journal`);
  assert.deepEqual([c!.n, c!.distinct, Number(c!.max)], [h.seq, h.seq, h.seq], 'no seq written twice, none missing');
  return { seq: h.seq };
}
