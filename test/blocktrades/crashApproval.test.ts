// Block trade approvals across a crash (issue 34): the taker requires approval, the maker executes a
// burst of three-leg agreements (held as requests), the taker approves them all at once and the
// server is killed (SIGKILL) while the approvals execute. After the restart the state hashes equal
// to a clean replay of the journal, every executed request has all three legs on both accounts
// (never one leg alone), and approving every request again executes each exactly once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Replay } from '../helpers/replay.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { atmCall, cheapCall, nearMark, twinPut } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const IN_FLIGHT = 20;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25', STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1', STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS: '3600000' };
const MAKER = 'crash-appr-maker@example.com';
const TAKER = 'crash-appr-taker@example.com';

/** Every executed request is whole (three legs on both accounts); returns how many executed. */
function checkWhole(r: Replay, names: string[]): number {
  const ex = r.ex;
  for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  const maker = ex.usersByEmail.get(MAKER)!;
  const taker = ex.usersByEmail.get(TAKER)!;
  const records = ex.blockTrades.byUser.get(maker.id) ?? [];
  for (const rec of records) for (const u of [maker, taker]) assert.equal(u.trades.filter((t) => t.block?.id === rec.id).length, 3, `block trade ${rec.id}: three legs in account ${u.id}`);
  const executed = [...ex.blockTrades.requests.values()].filter((q) => q.blockTradeId !== null).length;
  assert.equal(executed, records.length, 'each executed request is one block trade');
  const n = records.length;
  const size = (u: typeof maker, name: string) => u.positions.get(ex.instruments.get(name)!.id)?.size ?? 0;
  assert.deepEqual(names.map((x) => size(maker, x)), [-n, -n, n], 'the maker holds every leg of every executed request, and no leg alone');
  assert.deepEqual(names.map((x) => size(taker, x)), [n, n, -n], 'the taker too');
  return n;
}

describe('block trade approvals across a crash', () => {
  it('recovers to the state of a clean replay, each approved request whole and executed once', { timeout: 300_000 }, async (t) => {
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      const maker = await userToken(srv.url, admin, MAKER, { currency: 'BTC', amount: 50 });
      let taker = await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 50 });
      await ok(srv.url, 'private/set_block_trade_approval', { enabled: true }, taker);
      const call = await atmCall(srv.url);
      const cheap = await cheapCall(srv.url);
      const put = await twinPut(srv.url, call);
      const names = [call.name, cheap.name, put.name];
      const trades = [
        { instrument_name: call.name, direction: 'sell', price: nearMark(call), amount: 0.1 },
        { instrument_name: cheap.name, direction: 'sell', price: nearMark(cheap), amount: 0.1 },
        { instrument_name: put.name, direction: 'buy', price: nearMark(put), amount: 0.1 },
      ];
      const timestamp = await ok(srv.url, 'public/get_time');
      const answers: Record<string, unknown>[] = [];
      for (let i = 0; i < IN_FLIGHT; i++) {
        const deal = { timestamp, nonce: `a${i}`, trades };
        const { signature } = await ok(srv.url, 'private/verify_block_trade', { ...deal, role: 'taker' }, taker);
        const held = await ok(srv.url, 'private/execute_block_trade', { ...deal, role: 'maker', counterparty_signature: signature }, maker);
        assert.equal(held.state, 'waiting_for_approval');
        answers.push({ timestamp, nonce: deal.nonce, role: 'taker' });
      }
      const inFlight = answers.map((p) => rpc(srv.url, 'private/approve_block_trade', p, taker).catch(() => undefined));
      const replay = await killAndRecover(srv, inFlight, 3);
      t.diagnostic(`${checkWhole(replay, names)} of ${IN_FLIGHT} approved requests executed before the SIGKILL`);
      // every request approved again: those executed answer so, the others execute now, once
      taker = await login(srv.url, TAKER, 'user-password-1');
      for (const p of answers) {
        const r = await rpc(srv.url, 'private/approve_block_trade', p, taker);
        assert.ok(r.body.result === 'ok' || r.body.error?.data?.reason === 'block_trade_already_executed', JSON.stringify(r.body));
      }
      for (const p of answers) assert.equal((await rpc(srv.url, 'private/approve_block_trade', p, taker)).body.error?.data?.reason, 'block_trade_already_executed');
      assert.equal(checkWhole(await stopAndReplay(srv), names), IN_FLIGHT, 'each request executed exactly once');
    });
  });
});
