// Combo fills across crashes (issue 34): the server is killed (SIGKILL) with combo orders filling
// against a resting combo book. A combo fill is part of one journaled `place` command, so after every
// restart the recovered state hashes equal to a clean replay of the journal, and every combo trade in
// it has both legs on both accounts (the two legs' positions move in lockstep, never one leg alone).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Replay } from '../helpers/replay.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { atmCall, cheapCall } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 3;
const IN_FLIGHT = 30;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25' };
const MAKER = 'combo-maker@example.com';
const TAKER = 'combo-taker@example.com';

/** Every combo trade of the replayed state is whole: both legs on both accounts, in lockstep. */
function checkWhole(r: Replay, comboId: string, names: [string, string], ratios: [number, number]): number {
  const ex = r.ex;
  for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  const maker = ex.usersByEmail.get(MAKER)!;
  const taker = ex.usersByEmail.get(TAKER)!;
  const trades = ex.comboBooks.trades.get(comboId) ?? [];
  let lots = 0;
  for (const t of trades) {
    assert.equal(t.legs.length, 2, `combo trade ${t.id} has both legs`);
    lots += t.lots;
  }
  const size = (u: typeof maker, name: string) => u.positions.get(ex.instruments.get(name)!.id)?.size ?? 0;
  // the taker bought the combo: ratio x lots of each leg; the maker the opposite
  assert.deepEqual(names.map((n) => size(taker, n)), ratios.map((x) => x * lots), 'the taker holds both legs of every combo trade, no leg alone');
  assert.deepEqual(names.map((n) => size(maker, n)), ratios.map((x) => -x * lots), 'the maker too');
  return trades.length;
}

describe('combo fills across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, each combo fill whole', { timeout: 300_000 }, async (t) => {
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      let maker = await userToken(srv.url, admin, MAKER, { currency: 'BTC', amount: 50 });
      let taker = await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 50 });
      const call = await atmCall(srv.url);
      const cheap = await cheapCall(srv.url);
      const combo = await ok(srv.url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: cheap.name, direction: 'sell', amount: 1 }] }, taker);
      const comboId = combo.id as string;
      // the net mark as the combo price: sum of ratio x leg mark (the legs in the combo's order)
      const marks: Record<string, number> = { [call.name]: call.book.mark_price, [cheap.name]: cheap.book.mark_price };
      const ratios: [number, number] = [combo.legs[0].amount, combo.legs[1].amount];
      const names: [string, string] = [combo.legs[0].instrument_name, combo.legs[1].instrument_name];
      const price = Number((ratios[0] * marks[names[0]]! + ratios[1] * marks[names[1]]!).toFixed(4));
      for (let round = 1; round <= ROUNDS; round++) {
        // the maker rests sells; the taker sends a burst of buys, none awaited
        for (let i = 0; i < IN_FLIGHT; i++) await ok(srv.url, 'private/sell', { instrument_name: comboId, amount: 0.1, type: 'limit', price }, maker);
        const answers: Promise<unknown>[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) answers.push(rpc(srv.url, 'private/buy', { instrument_name: comboId, amount: 0.1, type: 'limit', price, time_in_force: 'immediate_or_cancel' }, taker).catch(() => undefined));
        const delay = round * 3;
        const replay = await killAndRecover(srv, answers, delay);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer of ${IN_FLIGHT} combo buys; ${checkWhole(replay, comboId, names, ratios)} combo trades in the journal after the restart`);
        maker = await login(srv.url, MAKER, 'user-password-1');
        taker = await login(srv.url, TAKER, 'user-password-1');
      }
      assert.ok(checkWhole(await stopAndReplay(srv), comboId, names, ratios) > 0, 'combo trades happened');
    });
  });
});
