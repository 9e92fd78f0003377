// Block RFQ acceptances across crashes (issue 34; as test/recovery/moveCrash.test.ts, on the shared
// SIGKILL loop of test/helpers/crash.ts): the server is killed (SIGKILL) with acceptances of two-leg
// RFQs in flight (one maker; then two makers' quotes filling each acceptance, with a hedge leg). An
// acceptance is one journaled command, so after every restart the recovered state hashes equal to a
// clean replay of the journal, each filled RFQ has all its legs on all accounts (or the RFQ is open
// and no leg traded), and money is conserved; the journal of the whole run replays to the same.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { instruments, market, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 2;
const IN_FLIGHT = 8;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25' };
const TAKER = 'rfq-taker@example.com';

/** Two calls of the latest expiry (the legs), and the last call listed (a hedge leg). */
async function markets(url: string): Promise<{ legs: [Market, Market]; hedge: Market }> {
  const calls = (await instruments(url)).filter((i) => i.option_type === 'call').sort((a, b) => b.expiration_timestamp - a.expiration_timestamp || a.strike - b.strike);
  return { legs: [await market(url, calls[0]), await market(url, calls[Math.floor(calls.length / 2)])], hedge: await market(url, calls[calls.length - 1]) };
}

/**
 * Every RFQ of the replayed state is all or none: open or cancelled with no fill, or filled by
 * `parts` makers' quotes each with `legsPerPart` leg trades; money conserved. Returns how many filled.
 */
function allOrNone(ex: Exchange, parts: number, legsPerPart: number): number {
  for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  let filled = 0;
  for (const r of ex.blockRfqs.rfqs.values()) {
    if (r.state !== 'filled') {
      assert.equal(r.fills.length, 0, `RFQ ${r.id} (${r.state}) traded nothing`);
      continue;
    }
    filled++;
    assert.equal(r.fills.length, parts, `RFQ ${r.id}: every maker's part traded`);
    for (const f of r.fills) assert.equal(ex.blockTrades.byId.get(f.blockTradeId)!.tradeIds.length, legsPerPart, `RFQ ${r.id}: every leg traded`);
  }
  return filled;
}

const idOf = async (url: string, token: string): Promise<number> => (await ok(url, 'private/get_block_rfq_user_info', {}, token)).users[0].user_id;

describe('block RFQ acceptances across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, each RFQ filled with all its legs or none', { timeout: 300_000 }, async (t) => {
    await withCrashServer(ENV, async (srv) => {
      const rand = mulberry32(0x5f0);
      const admin = await adminToken(srv.url);
      let taker = await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 50 });
      let maker = await userToken(srv.url, admin, 'rfq-maker@example.com', { currency: 'BTC', amount: 50 });
      const makerId = await idOf(srv.url, maker);
      const takerId = await idOf(srv.url, taker);
      await ok(srv.url, 'private/set_block_rfq_maker', { user_id: makerId, is_maker: true }, admin);
      const { legs } = await markets(srv.url);
      const structure = [
        { instrument_name: legs[0].name, amount: 0.2, direction: 'buy' },
        { instrument_name: legs[1].name, amount: 0.1, direction: 'sell' },
      ];
      const priced = legs.map((m) => ({ instrument_name: m.name, price: nearMark(m) }));
      /** the taker holds exactly 2:1 of the legs per filled RFQ, the maker the opposite */
      const holdings = (ex: Exchange, filled: number) => {
        const [a, b] = legs.map((m) => ex.instruments.get(m.name)!.id);
        const pos = (u: number, i: number) => ex.users.get(u)!.positions.get(i)?.size ?? 0;
        assert.deepEqual([pos(takerId, a!), pos(takerId, b!)], [2 * filled, -filled], 'the taker: both legs of every filled RFQ, no leg alone');
        assert.deepEqual([pos(makerId, a!), pos(makerId, b!)], [-2 * filled, filled], 'the maker: the opposite');
      };
      for (let round = 1; round <= ROUNDS; round++) {
        const ids: number[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const rfq = await ok(srv.url, 'private/create_block_rfq', { legs: structure }, taker);
          await ok(srv.url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 0.1, direction: 'sell', legs: priced }, maker);
          ids.push(rfq.block_rfq_id);
        }
        const answers = ids.map((id) => rpc(srv.url, 'private/accept_block_rfq', { block_rfq_id: id, price: 10, amount: 0.1, direction: 'buy', legs: priced, time_in_force: 'fill_or_kill' }, taker).catch(() => undefined));
        const first = Promise.race(answers);
        const delay = Math.floor(rand() * 10);
        const replay = await killAndRecover(srv, answers, delay);
        if (round === 1) t.diagnostic(JSON.stringify(((await first) as { body?: unknown } | undefined)?.body).slice(0, 300));
        const filled = allOrNone(replay.ex, 1, 2);
        holdings(replay.ex, filled);
        taker = await login(srv.url, TAKER, 'user-password-1');
        maker = await login(srv.url, 'rfq-maker@example.com', 'user-password-1');
        // the remaining RFQs close before the next round (open ones count against the taker's limit)
        for (const r of replay.ex.blockRfqs.rfqs.values()) if (r.state === 'open') await ok(srv.url, 'private/cancel_block_rfq', { block_rfq_id: r.id }, taker);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer; ${filled} RFQs filled in the journal`);
      }
      const end = await stopAndReplay(srv);
      holdings(end.ex, allOrNone(end.ex, 1, 2));
    });
  });

  it('a multi-maker acceptance with a hedge leg: after every SIGKILL all parts and legs traded or none', { timeout: 300_000 }, async (t) => {
    await withCrashServer(ENV, async (srv) => {
      const rand = mulberry32(0x5f1);
      const admin = await adminToken(srv.url);
      let taker = await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 50 });
      const makerTokens = [
        await userToken(srv.url, admin, 'rfq-maker1@example.com', { currency: 'BTC', amount: 50 }),
        await userToken(srv.url, admin, 'rfq-maker2@example.com', { currency: 'BTC', amount: 50 }),
      ];
      const takerId = await idOf(srv.url, taker);
      const makerIds: number[] = [];
      for (const m of makerTokens) {
        const id = await idOf(srv.url, m);
        await ok(srv.url, 'private/set_block_rfq_maker', { user_id: id, is_maker: true }, admin);
        makerIds.push(id);
      }
      const { legs, hedge: hedgeMarket } = await markets(srv.url);
      // amount 0.2 (legs 0.4 bought, 0.2 sold), hedge 0.2 sold; each maker quotes half of it
      const structure = [
        { instrument_name: legs[0].name, amount: 0.4, direction: 'buy' },
        { instrument_name: legs[1].name, amount: 0.2, direction: 'sell' },
      ];
      const hedge = { instrument_name: hedgeMarket.name, direction: 'sell', amount: 0.2, price: nearMark(hedgeMarket) };
      const priced = legs.map((m) => ({ instrument_name: m.name, price: nearMark(m) }));
      /** per filled RFQ the taker holds 4 lots, -2 lots and -2 hedge lots; each maker the opposite of half */
      const holdings = (ex: Exchange, filled: number) => {
        const [a, b, hg] = [...legs, hedgeMarket].map((m) => ex.instruments.get(m.name)!.id);
        const pos = (u: number, i: number) => ex.users.get(u)!.positions.get(i)?.size ?? 0;
        assert.deepEqual([pos(takerId, a!), pos(takerId, b!), pos(takerId, hg!)], [4 * filled, -2 * filled, -2 * filled], 'the taker: every leg and the hedge of every filled RFQ');
        for (const m of makerIds) assert.deepEqual([pos(m, a!), pos(m, b!), pos(m, hg!)], [-2 * filled, filled, filled], `maker ${m}: the opposite of its half`);
      };
      for (let round = 1; round <= ROUNDS; round++) {
        const ids: number[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const rfq = await ok(srv.url, 'private/create_block_rfq', { legs: structure, hedge }, taker);
          for (const m of makerTokens) await ok(srv.url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 0.1, direction: 'sell', legs: priced, hedge: { instrument_name: hedge.instrument_name, price: hedge.price } }, m);
          ids.push(rfq.block_rfq_id);
        }
        const answers = ids.map((id) => rpc(srv.url, 'private/accept_block_rfq', { block_rfq_id: id, price: 10, amount: 0.2, direction: 'buy', legs: priced, time_in_force: 'fill_or_kill' }, taker).catch(() => undefined));
        const first = Promise.race(answers);
        const delay = Math.floor(rand() * 10);
        const replay = await killAndRecover(srv, answers, delay);
        if (round === 1) t.diagnostic(JSON.stringify(((await first) as { body?: unknown } | undefined)?.body).slice(0, 300));
        // both makers' parts, each with both legs and the hedge
        const filled = allOrNone(replay.ex, 2, 3);
        holdings(replay.ex, filled);
        taker = await login(srv.url, TAKER, 'user-password-1');
        for (const r of replay.ex.blockRfqs.rfqs.values()) if (r.state === 'open') await ok(srv.url, 'private/cancel_block_rfq', { block_rfq_id: r.id }, taker);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer; ${filled} RFQs filled by two makers with a hedge`);
      }
      const end = await stopAndReplay(srv);
      holdings(end.ex, allOrNone(end.ex, 2, 3));
    });
  });
});
