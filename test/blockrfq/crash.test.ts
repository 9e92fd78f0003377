// Block RFQ acceptances across crashes (issue 34; as test/recovery/moveCrash.test.ts): the server is
// killed (SIGKILL) with acceptances of two-leg RFQs in flight (one maker; then two makers' quotes
// filling each acceptance, with a hedge leg). An acceptance is one journaled
// command, so after every restart the recovered state hashes equal to a clean replay of the journal,
// each filled RFQ has both legs on both accounts (or the RFQ is open and no leg traded), and money is
// conserved.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { instruments, market, nearMark } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';

const ROUNDS = 2;
const IN_FLIGHT = 8;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('block RFQ acceptances across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, each RFQ filled with all its legs or none', { timeout: 300_000 }, async (t) => {
    const dataDir = tempDir();
    const rand = mulberry32(0x5f0);
    let child: ChildServer = await spawnServer(dataDir, ENV);
    try {
      const admin = await adminToken(child.url);
      let taker = await userToken(child.url, admin, 'rfq-taker@example.com', { currency: 'BTC', amount: 50 });
      let maker = await userToken(child.url, admin, 'rfq-maker@example.com', { currency: 'BTC', amount: 50 });
      const makerId = (await ok(child.url, 'private/get_block_rfq_user_info', {}, maker)).users[0].user_id;
      const takerId = (await ok(child.url, 'private/get_block_rfq_user_info', {}, taker)).users[0].user_id;
      await ok(child.url, 'private/set_block_rfq_maker', { user_id: makerId, is_maker: true }, admin);
      const calls = (await instruments(child.url)).filter((i) => i.option_type === 'call').sort((a, b) => b.expiration_timestamp - a.expiration_timestamp || a.strike - b.strike);
      const legs = [await market(child.url, calls[0]), await market(child.url, calls[Math.floor(calls.length / 2)])];
      const structure = [
        { instrument_name: legs[0]!.name, amount: 0.2, direction: 'buy' },
        { instrument_name: legs[1]!.name, amount: 0.1, direction: 'sell' },
      ];
      const priced = legs.map((m) => ({ instrument_name: m.name, price: nearMark(m) }));
      for (let round = 1; round <= ROUNDS; round++) {
        const ids: number[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const rfq = await ok(child.url, 'private/create_block_rfq', { legs: structure }, taker);
          await ok(child.url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 0.1, direction: 'sell', legs: priced }, maker);
          ids.push(rfq.block_rfq_id);
        }
        const answers = ids.map((id) => rpc(child.url, 'private/accept_block_rfq', { block_rfq_id: id, price: 10, amount: 0.1, direction: 'buy', legs: priced, time_in_force: 'fill_or_kill' }, taker).catch(() => undefined));
        const first = await Promise.race(answers);
        if (round === 1) t.diagnostic(JSON.stringify((first as any)?.body).slice(0, 300));
        const delay = Math.floor(rand() * 10);
        await sleep(delay);
        child.proc.kill('SIGKILL');
        await child.exited;
        child = await spawnServer(dataDir, ENV);
        const adminNow = await login(child.url, 'admin@example.com', 'admin-password-1');
        taker = await login(child.url, 'rfq-taker@example.com', 'user-password-1');
        maker = await login(child.url, 'rfq-maker@example.com', 'user-password-1');
        const h = await ok(child.url, 'private/get_state_hash', {}, adminNow);
        const replay = cleanReplay(dataDir, h.seq);
        assert.deepEqual(replay.errors, []);
        assert.equal(h.state_hash, replay.hash, `recovered state differs from a clean replay at seq ${h.seq}`);
        const ex = replay.ex;
        for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
        let filled = 0;
        for (const r of ex.blockRfqs.rfqs.values()) {
          if (r.state !== 'filled') {
            assert.equal(r.fills.length, 0);
            continue;
          }
          filled++;
          const rec = ex.blockTrades.byId.get(r.fills[0]!.blockTradeId)!;
          assert.equal(rec.tradeIds.length, 2, 'both legs traded');
        }
        // the taker holds exactly 2:1 of the legs per filled RFQ, the maker the opposite
        const [a, b] = legs.map((m) => ex.instruments.get(m.name)!.id);
        const pos = (u: number, i: number) => ex.users.get(u)!.positions.get(i)?.size ?? 0;
        assert.equal(pos(takerId, a!), 2 * filled);
        assert.equal(pos(takerId, b!) + filled, 0);
        assert.equal(pos(makerId, a!) + 2 * filled, 0);
        assert.equal(pos(makerId, b!), filled);
        // the remaining RFQs close before the next round (open ones count against the taker's limit)
        for (const r of ex.blockRfqs.rfqs.values()) if (r.state === 'open') await ok(child.url, 'private/cancel_block_rfq', { block_rfq_id: r.id }, taker);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer; ${filled} RFQs filled in the journal`);
      }
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0);
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGKILL');
        await child.exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
  it('a multi-maker acceptance with a hedge leg: after every SIGKILL all parts and legs traded or none', { timeout: 300_000 }, async (t) => {
    const dataDir = tempDir();
    const rand = mulberry32(0x5f1);
    let child: ChildServer = await spawnServer(dataDir, ENV);
    try {
      const admin = await adminToken(child.url);
      let taker = await userToken(child.url, admin, 'rfq-taker@example.com', { currency: 'BTC', amount: 50 });
      const makerTokens = [
        await userToken(child.url, admin, 'rfq-maker1@example.com', { currency: 'BTC', amount: 50 }),
        await userToken(child.url, admin, 'rfq-maker2@example.com', { currency: 'BTC', amount: 50 }),
      ];
      const takerId = (await ok(child.url, 'private/get_block_rfq_user_info', {}, taker)).users[0].user_id;
      const makerIds: number[] = [];
      for (const m of makerTokens) {
        const id = (await ok(child.url, 'private/get_block_rfq_user_info', {}, m)).users[0].user_id;
        await ok(child.url, 'private/set_block_rfq_maker', { user_id: id, is_maker: true }, admin);
        makerIds.push(id);
      }
      const calls = (await instruments(child.url)).filter((i) => i.option_type === 'call').sort((a, b) => b.expiration_timestamp - a.expiration_timestamp || a.strike - b.strike);
      const legs = [await market(child.url, calls[0]), await market(child.url, calls[Math.floor(calls.length / 2)])];
      const hedgeMarket = await market(child.url, calls[calls.length - 1]);
      // amount 0.2 (legs 0.4 bought, 0.2 sold), hedge 0.2 sold; each maker quotes half of it
      const structure = [
        { instrument_name: legs[0]!.name, amount: 0.4, direction: 'buy' },
        { instrument_name: legs[1]!.name, amount: 0.2, direction: 'sell' },
      ];
      const hedge = { instrument_name: hedgeMarket.name, direction: 'sell', amount: 0.2, price: nearMark(hedgeMarket) };
      const priced = legs.map((m) => ({ instrument_name: m.name, price: nearMark(m) }));
      for (let round = 1; round <= ROUNDS; round++) {
        const ids: number[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const rfq = await ok(child.url, 'private/create_block_rfq', { legs: structure, hedge }, taker);
          for (const m of makerTokens) await ok(child.url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 0.1, direction: 'sell', legs: priced, hedge: { instrument_name: hedge.instrument_name, price: hedge.price } }, m);
          ids.push(rfq.block_rfq_id);
        }
        const answers = ids.map((id) => rpc(child.url, 'private/accept_block_rfq', { block_rfq_id: id, price: 10, amount: 0.2, direction: 'buy', legs: priced, time_in_force: 'fill_or_kill' }, taker).catch(() => undefined));
        const first = await Promise.race(answers);
        if (round === 1) t.diagnostic(JSON.stringify((first as any)?.body).slice(0, 300));
        const delay = Math.floor(rand() * 10);
        await sleep(delay);
        child.proc.kill('SIGKILL');
        await child.exited;
        child = await spawnServer(dataDir, ENV);
        const adminNow = await login(child.url, 'admin@example.com', 'admin-password-1');
        taker = await login(child.url, 'rfq-taker@example.com', 'user-password-1');
        const h = await ok(child.url, 'private/get_state_hash', {}, adminNow);
        const replay = cleanReplay(dataDir, h.seq);
        assert.deepEqual(replay.errors, []);
        assert.equal(h.state_hash, replay.hash, `recovered state differs from a clean replay at seq ${h.seq}`);
        const ex = replay.ex;
        for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
        let filled = 0;
        for (const r of ex.blockRfqs.rfqs.values()) {
          if (r.state !== 'filled') {
            assert.equal(r.fills.length, 0);
            continue;
          }
          filled++;
          assert.equal(r.fills.length, 2, 'both makers\' parts traded');
          for (const f of r.fills) assert.equal(ex.blockTrades.byId.get(f.blockTradeId)!.tradeIds.length, 3, 'both legs and the hedge traded');
        }
        // per filled RFQ the taker holds 4 lots, -2 lots and -2 hedge lots; each maker the opposite of half
        const [a, b, hg] = [...legs, hedgeMarket].map((m) => ex.instruments.get(m.name)!.id);
        const pos = (u: number, i: number) => ex.users.get(u)!.positions.get(i)?.size ?? 0;
        assert.deepEqual([pos(takerId, a!), pos(takerId, b!), pos(takerId, hg!)], [4 * filled, -2 * filled, -2 * filled]);
        for (const m of makerIds) assert.deepEqual([pos(m, a!), pos(m, b!), pos(m, hg!)], [-2 * filled, filled, filled]);
        for (const r of ex.blockRfqs.rfqs.values()) if (r.state === 'open') await ok(child.url, 'private/cancel_block_rfq', { block_rfq_id: r.id }, taker);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer; ${filled} RFQs filled by two makers with a hedge`);
      }
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0);
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGKILL');
        await child.exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
