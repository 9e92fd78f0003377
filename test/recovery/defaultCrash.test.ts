// Defaults across crashes (issue 13): the server is killed (SIGKILL) five times while accounts
// default, during liquidation steps (takeovers at mark) and during settlements (deficits covered by
// the waterfall and shared). After every restart the recovered state hashes equal to a clean replay
// of the journal, and at the end every default went through the waterfall exactly once: each
// defaulter ends at zero in every currency with one cover, the insurance account's log agrees, and
// money is conserved.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { instruments, market, nearMark } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';

const ROUNDS = 5;
const MIN = 60_000;
// tokens outlive the test clock's jumps; small snapshot interval, so recovery crosses snapshots
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '40' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond().catch(() => false)) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('defaults across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL and applies each waterfall exactly once', async (t) => {
    const dataDir = tempDir();
    const rand = mulberry32(0xdefa17);
    let child: ChildServer = await spawnServer(dataDir, ENV);
    const restart = async () => {
      child = await spawnServer(dataDir, ENV);
      // the recovered state, before anything new, against a clean replay of the journal
      const h = await ok(child.url, 'private/get_state_hash', {}, await login(child.url, 'admin@example.com', 'admin-password-1'));
      const replay = cleanReplay(dataDir, h.seq);
      assert.deepEqual(replay.errors, []);
      assert.equal(replay.seq, h.seq);
      assert.equal(h.state_hash, replay.hash, `recovered state differs from a clean replay at seq ${h.seq}`);
    };
    try {
      let admin = await adminToken(child.url);
      const buyer = await userToken(child.url, admin, 'buyer@example.com', { currency: 'BTC', amount: 100 });
      const defaulters: string[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const email = `d${round}@example.com`;
        defaulters.push(email);
        const d = await userToken(child.url, admin, email, { currency: 'BTC', amount: 0.2 });
        await ok(child.url, 'private/deposit_collateral', { currency: 'ETH', amount: 1 }, d);
        await ok(child.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100_000 }, admin);
        // D writes the call nearest the money of the first expiry at least 45 minutes away
        const now = await ok(child.url, 'public/get_time');
        const calls = (await instruments(child.url, 'BTC')).filter((i) => i.option_type === 'call' && i.expiration_timestamp - 45 * MIN > now);
        const expiry = Math.min(...calls.map((i) => i.expiration_timestamp));
        const inst = calls.filter((i) => i.expiration_timestamp === expiry).sort((a, b) => Math.abs(a.strike - 100_000) - Math.abs(b.strike - 100_000))[0];
        const m = await market(child.url, inst);
        await ok(child.url, 'private/buy', { instrument_name: inst.instrument_name, amount: 1, price: nearMark(m) }, buyer);
        await ok(child.url, 'private/sell', { instrument_name: inst.instrument_name, amount: 1, price: nearMark(m) }, d);
        // the index jumps inside the delivery window: D's equity goes below zero
        await ok(child.url, 'private/set_test_time', { timestamp: expiry - 40 * MIN }, admin);
        await ok(child.url, 'private/set_index_price', { index_name: 'btc_usd', price: 140_000 }, admin);
        const atSettlement = round % 2 === 0;
        let delay: number;
        if (atSettlement) {
          // killed while the clock passes the expiry: the settlement may or may not be journaled
          void rpc(child.url, 'private/set_test_time', { timestamp: expiry + 1_000 }, admin).catch(() => undefined);
          delay = Math.floor(rand() * 30);
        } else {
          // killed around the background liquidation check (every second): a takeover may or may not be journaled
          delay = Math.floor(rand() * 1_500);
        }
        await sleep(delay);
        child.proc.kill('SIGKILL');
        await child.exited;
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after ${atSettlement ? 'passing the expiry' : 'the index jump'}`);
        await restart();
        admin = await login(child.url, 'admin@example.com', 'admin-password-1');
        if (atSettlement) {
          const moved = await rpc(child.url, 'private/set_test_time', { timestamp: expiry + 1_000 }, admin);
          if (moved.body.error) assert.equal(moved.body.error.code, 11029); // the journal already holds that time
          await until('the expiry to settle', async () => (await ok(child.url, 'public/get_instrument', { instrument_name: inst.instrument_name })).state === 'delivered');
        }
        const dToken = await login(child.url, email, 'user-password-1');
        await until(`${email} to be resolved`, async () => {
          const s = await ok(child.url, 'private/get_account_summary', { currency: 'BTC' }, dToken);
          const positions = await ok(child.url, 'private/get_positions', { currency: 'BTC' }, dToken);
          return !s.in_liquidation && positions.every((p: any) => p.size === 0);
        });
      }
      // stop cleanly and read what happened from the journal
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0);
      const final = cleanReplay(dataDir, Number.MAX_SAFE_INTEGER);
      const ex = final.ex;
      for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
      for (const u of ex.users.values()) for (const [c, a] of Object.entries(u.accounts)) assert.ok(a.balance >= 0, `user ${u.email} ${c} ${a.balance}`);
      for (const email of defaulters) {
        const u = ex.usersByEmail.get(email)!;
        assert.equal(u.accounts.BTC.balance, 0, `${email} BTC`);
        assert.equal(u.accounts.ETH.balance, 0, `${email} ETH`);
        const covers = u.log.entries().filter((e) => e.type === 'insurance_cover' || e.type === 'conversion');
        // one waterfall: at most one conversion out of ETH, one into BTC, one cover
        assert.ok(covers.filter((e) => e.type === 'insurance_cover').length <= 1, `${email}: ${covers.map((e) => e.type)}`);
        assert.equal(covers.filter((e) => e.type === 'conversion' && e.currency === 'ETH').length, 1, `${email}: its ETH was taken once`);
        const inFund = ex.insurance.log.entries().filter((e) => e.userId === u.id && (e.type === 'insurance_cover' || e.type === 'conversion'));
        assert.equal(inFund.length, covers.length, `${email}: the insurance account's log mirrors the user's`);
      }
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGKILL');
        await child.exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
