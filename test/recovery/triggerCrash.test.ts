// Trigger orders across crashes (issue 17): a server on the default SQLite journal holds trigger
// orders; an index move fires them while more orders and triggers arrive, and the server is killed
// (SIGKILL) at a random point of that load. A trigger fires inside the command that moved the price
// and its order is placed (and filled) by that same command, so there is no journaled state between
// "triggered" and "placed": a crash leaves either the whole command or none of it. After every
// restart the recovered state hashes equal to a clean replay of the journal, and every trigger order
// whose placement was acknowledged is there exactly once: placed once, fired at most once, into at
// most one order.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { market, nearDatedAtmCall, nearMark } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';

const ROUNDS = 4;
// tokens outlive the run; a small snapshot interval, so recovery crosses snapshots
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '40' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every acknowledged trigger of `email` is in `ex` once: one placement, at most one firing, at most one child order. */
function checkTriggers(ex: Exchange, email: string, acked: Set<string>): { fired: number } {
  const user = ex.usersByEmail.get(email)!;
  const mine = ex.triggers.byUser.get(user.id) ?? new Map();
  const log = ex.triggers.history.get(user.id) ?? [];
  const children = new Map<number, number>();
  for (const o of user.orders.values()) if (o.origin !== null) children.set(o.origin.id, (children.get(o.origin.id) ?? 0) + 1);
  let fired = 0;
  for (const text of acked) {
    const id = Number(text);
    const t = mine.get(id);
    assert.ok(t !== undefined, `acknowledged trigger ${id} is present`);
    assert.equal(log.filter((e) => e.triggerOrderId === id && e.request === 'order').length, 1, `trigger ${id} placed once`);
    const firings = log.filter((e) => e.triggerOrderId === id && e.request === 'trigger:order');
    assert.ok(firings.length <= 1, `trigger ${id} fired at most once`);
    assert.ok((children.get(id) ?? 0) <= 1, `trigger ${id} became at most one order`);
    if (t.state === 'triggered') {
      fired++;
      assert.equal(firings.length, 1);
      assert.equal(user.orders.get(t.firedOrderId!)?.origin, t, `trigger ${id}'s order names it`);
    } else if (t.state === 'untriggered') assert.equal(firings.length, 0);
  }
  return { fired };
}

describe('trigger orders across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL during firing, with every acknowledged trigger exactly once', async (t) => {
    const dataDir = tempDir();
    const rand = mulberry32(0x7a16e7);
    let child: ChildServer = await spawnServer(dataDir, ENV);
    const acked = new Set<string>();
    let totalFired = 0;
    try {
      let admin = await adminToken(child.url);
      let maker = await userToken(child.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
      let trader = await userToken(child.url, admin, 'trader@example.com', { currency: 'BTC', amount: 100 });
      const x = await nearDatedAtmCall(child.url);
      let index = (await ok(child.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price as number;
      for (let round = 1; round <= ROUNDS; round++) {
        const url = child.url;
        // start each round from the same index, so the triggers below sit just under it
        await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: index }, admin);
        const m = await market(url, x.inst);
        const p = nearMark(m);
        const i = m.prices.indexOf(p);
        // the marks moved since the last round: the maker's old quotes would cross its new ones
        await ok(url, 'private/cancel_all', {}, maker);
        await ok(url, 'private/buy', { instrument_name: x.name, amount: 3, price: m.prices[i - 8] }, maker);
        await ok(url, 'private/sell', { instrument_name: x.name, amount: 3, price: m.prices[i + 8] }, maker);
        const place = async (params: Record<string, unknown>) => {
          const r = await rpc(url, params.side === 'buy' ? 'private/buy' : 'private/sell', { instrument_name: x.name, amount: 0.1, ...params, side: undefined }, trader);
          if (r.body.result) acked.add(r.body.result.order.order_id);
          return r;
        };
        for (let k = 0; k < 8; k++) {
          const kind = k % 4;
          if (kind === 0) await place({ side: 'sell', type: 'stop_market', trigger: 'index_price', trigger_price: index - 100 * (k + 1) });
          else if (kind === 1) await place({ side: 'sell', type: 'stop_limit', trigger: 'index_price', trigger_price: index - 100 * (k + 1), price: m.prices[i - 10] });
          else if (kind === 2) await place({ side: 'buy', type: 'take_market', trigger: 'index_price', trigger_price: index - 100 * (k + 1) });
          else await place({ side: 'sell', type: 'trailing_stop', trigger: 'index_price', trigger_offset: 300 + 50 * k });
        }
        await place({ side: 'sell', type: 'stop_market', trigger: 'mark_price', trigger_price: m.prices[i - 4] });

        // the load: the index falls through every level while orders and more triggers arrive
        // (odd rounds: the kill falls anywhere around the index move, which may be lost; even rounds:
        // the move is acknowledged first, so its firings are durable, and the kill falls in the load
        // that follows, with later firings of the last price and mark moves)
        const load: Promise<unknown>[] = [];
        const move = rpc(url, 'private/set_index_price', { index_name: 'btc_usd', price: index - 1500 }, admin).catch(() => undefined);
        if (round % 2 === 0) await move;
        else load.push(move);
        for (let k = 0; k < 30; k++) {
          load.push(place({ side: 'sell', type: 'stop_market', trigger: 'index_price', trigger_price: index - 5000 - k }).catch(() => undefined));
          load.push(rpc(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: m.prices[i - 12] }, maker).catch(() => undefined));
        }
        const delay = Math.floor(rand() * 60);
        await sleep(delay);
        child.proc.kill('SIGKILL');
        await child.exited;
        await Promise.allSettled(load);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms into the load${round % 2 === 0 ? ' after the index move was acknowledged' : ''}; ${acked.size} triggers acknowledged so far`);

        child = await spawnServer(dataDir, ENV);
        admin = await login(child.url, 'admin@example.com', 'admin-password-1');
        const h = await ok(child.url, 'private/get_state_hash', {}, admin);
        const replay = cleanReplay(dataDir, h.seq);
        assert.deepEqual(replay.errors, []);
        assert.equal(replay.seq, h.seq);
        assert.equal(h.state_hash, replay.hash, `round ${round}: recovered state differs from a clean replay at seq ${h.seq}`);
        const { fired } = checkTriggers(replay.ex, 'trader@example.com', acked);
        totalFired = fired;
        const now = (await ok(child.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
        t.diagnostic(`round ${round}: recovered at seq ${h.seq}, index move ${now === index - 1500 ? 'kept' : 'lost'}, ${fired} acknowledged triggers fired so far`);
        maker = await login(child.url, 'maker@example.com', 'user-password-1');
        trader = await login(child.url, 'trader@example.com', 'user-password-1');
        // the recovered server answers for every acknowledged trigger
        for (const id of acked) assert.ok((await rpc(child.url, 'private/get_order_state', { order_id: id }, trader)).body.result, `order ${id} after restart`);
        // the index may have moved before the kill, or not: the next round starts from a fresh level
        index = index + 2000;
      }
      // the even rounds' acknowledged index moves fired triggers
      assert.ok(totalFired > 0, 'some acknowledged triggers fired');
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0);
      const final = cleanReplay(dataDir);
      for (const [c, v] of Object.entries(final.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
      checkTriggers(final.ex, 'trader@example.com', acked);
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGKILL');
        await child.exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
