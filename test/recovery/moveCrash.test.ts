// Position moves across crashes (issue 32): the server is killed (SIGKILL) with two-leg
// move_positions between a main account and its subaccounts in flight. A move is one journaled
// command, so after every restart the recovered state hashes equal to a clean replay of the journal,
// every move in the journal is whole (its four log entries, both legs on both sides, or none), the
// family's positions in each instrument are what it bought, and no account is below zero.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { instruments, market, nearMark } from '../helpers/market.ts';
import { adminToken, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 3;
const IN_FLIGHT = 30;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25' };
const MAIN = 'mover@example.com';

describe('position moves across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, with every move whole (all legs or none)', { timeout: 300_000 }, async (t) => {
    const rand = mulberry32(0x30e5);
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      const main = await userToken(srv.url, admin, MAIN, { currency: 'BTC', amount: 50 });
      const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
      for (let i = 0; i < 2; i++) await ok(srv.url, 'private/create_subaccount', {}, main);
      const ids: number[] = (await ok(srv.url, 'private/get_subaccounts', {}, main)).map((x: any) => x.id);
      for (const id of ids.slice(1)) await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 15, destination: id }, main);
      // two calls, 5 BTC of each bought by the main account
      const calls = (await instruments(srv.url)).filter((i) => i.option_type === 'call').sort((a, b) => b.expiration_timestamp - a.expiration_timestamp || a.strike - b.strike);
      const legs = [await market(srv.url, calls[0]), await market(srv.url, calls[Math.floor(calls.length / 2)])];
      for (const m of legs) {
        await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 5, price: nearMark(m) }, maker);
        await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 5, price: nearMark(m) }, main);
      }
      const bought = new Map(legs.map((m) => [m.name, 50]));
      for (let round = 1; round <= ROUNDS; round++) {
        const answers: Promise<unknown>[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const from = ids[Math.floor(rand() * ids.length)]!;
          let to = ids[Math.floor(rand() * ids.length)]!;
          if (to === from) to = ids[(ids.indexOf(from) + 1) % ids.length]!;
          const trades = legs.map((m) => ({ instrument_name: m.name, amount: (1 + Math.floor(rand() * 5)) / 10 }));
          answers.push(rpc(srv.url, 'private/move_positions', { source_uid: from, target_uid: to, trades }, main).catch(() => undefined));
        }
        const delay = Math.floor(rand() * 15);
        const replay = await killAndRecover(srv, answers, delay);
        const ex = replay.ex;
        for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
        // the family still holds exactly what it bought, in each instrument
        for (const m of legs) {
          const inst = ex.instruments.get(m.name)!;
          let held = 0;
          for (const id of ids) held += ex.users.get(id)!.positions.get(inst.id)?.size ?? 0;
          assert.equal(held, bought.get(m.name), `the family's ${m.name}`);
        }
        // each move's entries: both legs on both sides, one after the other (consecutive log ids)
        const entries = ids.flatMap((id) => ex.users.get(id)!.log.entries().filter((e) => e.type === 'position_move')).sort((a, b) => a.id - b.id);
        assert.equal(entries.length % 4, 0, 'four entries per move');
        for (let i = 0; i < entries.length; i += 4) {
          const group = entries.slice(i, i + 4);
          assert.equal(group[3]!.id - group[0]!.id, 3, 'one move writes its four entries together');
          assert.deepEqual(new Set(group.map((e) => e.instrument)), new Set(legs.map((m) => m.name)), 'both legs');
          assert.equal(group.reduce((s, e) => s + e.size!, 0), 0, 'each leg given on one side is taken on the other');
        }
        for (const id of ids) assert.ok(ex.users.get(id)!.accounts.BTC.balance >= 0, `account ${id} below zero`);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer; ${entries.length / 4} moves in the journal`);
      }
      await stopAndReplay(srv);
    });
  });
});
