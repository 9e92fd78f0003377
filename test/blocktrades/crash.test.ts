// Block trades across crashes (issue 34): the server is killed (SIGKILL) with three-leg block trades
// in flight. A block trade is one journaled command, so after every restart the recovered state
// hashes equal to a clean replay of the journal, every block trade in it has all three legs on both
// accounts (positions move in lockstep, never one leg alone), money is conserved, and executing
// every signature again after the restart executes each agreement exactly once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Replay } from '../helpers/replay.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { atmCall, cheapCall, nearMark, twinPut } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 3;
const IN_FLIGHT = 30;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25', STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1', STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS: '3600000' };
const MAKER = 'crash-maker@example.com';
const TAKER = 'crash-taker@example.com';

/** Every block trade of the replayed state is whole: three legs on both accounts, positions in lockstep. */
function checkWhole(r: Replay, names: string[]): number {
  const ex = r.ex;
  for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  const maker = ex.usersByEmail.get(MAKER)!;
  const taker = ex.usersByEmail.get(TAKER)!;
  const records = ex.blockTrades.byUser.get(maker.id) ?? [];
  for (const rec of records) {
    assert.equal(rec.tradeIds.length, 3, `block trade ${rec.id} has every leg`);
    for (const u of [maker, taker]) {
      const legs = u.trades.filter((t) => t.block?.id === rec.id);
      assert.equal(legs.length, 3, `block trade ${rec.id}: three legs in account ${u.id}`);
    }
  }
  const n = records.length;
  // each agreement: the maker sells 0.1 of two calls and buys 0.1 of a put (1 lot each)
  const size = (u: typeof maker, name: string) => u.positions.get(ex.instruments.get(name)!.id)?.size ?? 0;
  assert.deepEqual(names.map((x) => size(maker, x)), [-n, -n, n], 'the maker holds every leg of every block trade, and no leg alone');
  assert.deepEqual(names.map((x) => size(taker, x)), [n, n, -n], 'the taker too');
  return n;
}

describe('block trades across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, each block trade whole, each agreement executed once', { timeout: 300_000 }, async (t) => {
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      let maker = await userToken(srv.url, admin, MAKER, { currency: 'BTC', amount: 50 });
      await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 50 });
      const call = await atmCall(srv.url);
      const cheap = await cheapCall(srv.url);
      const put = await twinPut(srv.url, call);
      const names = [call.name, cheap.name, put.name];
      const trades = [
        { instrument_name: call.name, direction: 'sell', price: nearMark(call), amount: 0.1 },
        { instrument_name: cheap.name, direction: 'sell', price: nearMark(cheap), amount: 0.1 },
        { instrument_name: put.name, direction: 'buy', price: nearMark(put), amount: 0.1 },
      ];
      const signed: Record<string, unknown>[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        // the taker signs a burst of agreements; the maker executes them all at once, none awaited
        const timestamp = await ok(srv.url, 'public/get_time');
        const taker = await login(srv.url, TAKER, 'user-password-1');
        const burst: Record<string, unknown>[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const deal = { timestamp, nonce: `r${round}-${i}`, trades };
          const { signature } = await ok(srv.url, 'private/verify_block_trade', { ...deal, role: 'taker' }, taker);
          burst.push({ ...deal, role: 'maker', counterparty_signature: signature });
        }
        signed.push(...burst);
        const answers = burst.map((p) => rpc(srv.url, 'private/execute_block_trade', p, maker).catch(() => undefined));
        const delay = round * 3;
        const replay = await killAndRecover(srv, answers, delay);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer of ${IN_FLIGHT} block trades; ${checkWhole(replay, names)} block trades in the journal after the restart`);
        maker = await login(srv.url, MAKER, 'user-password-1');
      }
      // every signature executed again: those the journal holds execute nothing, the rest once
      for (const p of signed) await rpc(srv.url, 'private/execute_block_trade', p, maker);
      for (const p of signed) {
        const r = await rpc(srv.url, 'private/execute_block_trade', p, maker);
        assert.equal(r.body.error?.data?.reason, 'block_trade_already_executed');
      }
      assert.equal(checkWhole(await stopAndReplay(srv), names), signed.length, 'each agreement executed exactly once');
    });
  });
});
