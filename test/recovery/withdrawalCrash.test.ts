// Withdrawals across crashes (issue 32): the server is killed (SIGKILL) with withdrawals and their
// cancels in flight. A withdrawal is one journaled command that takes its amount out of the balance and
// records it pending, so after every restart the recovered state hashes equal to a clean replay of the
// journal, and each withdrawal is either there, pending with its funds reserved (or cancelled with
// them back), or not there at all: the user's balance is exactly the deposit minus the withdrawals the
// journal holds as pending or completed, the pending total is their sum, conservation holds with
// pending withdrawals, and a nonce'd withdrawal resent after the restart is made at most once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import { isPending } from '../../src/wallet/wallet.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 4;
const IN_FLIGHT = 40;
const ENV = {
  STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000',
  STRIKEBOOK_SNAPSHOT_EVERY: '30',
  STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0',
  STRIKEBOOK_MAX_PENDING_WITHDRAWALS: '1000',
  STRIKEBOOK_WITHDRAWAL_AUTO_COMPLETE_MS: '0',
};
const EMAIL = 'withdrawer@example.com';
const DEPOSIT_SAT = 1_000_000_000; // 10 BTC

/** The journal's withdrawals are whole: balance, pending total and log entries agree with the records. */
function checkWhole(ex: Exchange, userId: number): { pending: number[]; count: number } {
  for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  const u = ex.users.get(userId)!;
  let out = 0;
  let pendingSum = 0;
  let ended = 0;
  const pending: number[] = [];
  const records = ex.wallet.withdrawalsOf(userId, 'BTC');
  for (const w of records) {
    if (isPending(w)) {
      pendingSum += w.amount;
      pending.push(w.id);
    }
    if (isPending(w) || w.state === 'completed') out += w.amount;
    else ended++;
  }
  assert.equal(u.accounts.BTC.balance, DEPOSIT_SAT - out, 'the balance is the deposit minus the pending and completed withdrawals');
  assert.equal(ex.wallet.pending.BTC, pendingSum, 'the pending total is the pending withdrawals');
  let debits = 0;
  let credits = 0;
  for (const e of u.log.entries()) {
    if (e.type !== 'withdrawal') continue;
    if (e.amount < 0) debits++;
    else credits++;
  }
  assert.equal(debits, records.length, 'one debit per withdrawal');
  assert.equal(credits, ended, 'one credit back per cancelled withdrawal');
  return { pending, count: records.length };
}

describe('withdrawals across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, each withdrawal pending with its funds reserved or not there at all', { timeout: 300_000 }, async (t) => {
    const rand = mulberry32(0x3d21);
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      let user = await userToken(srv.url, admin, EMAIL, { currency: 'BTC', amount: DEPOSIT_SAT / 1e8 });
      const userId = (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, user)).id;
      await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qcrash', label: '' }, user);
      let pending: number[] = [];
      const sent: Record<string, unknown>[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        // a burst of withdrawals (half with nonces) and cancels of pending ones, none awaited
        const answers: Promise<unknown>[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          if (i % 4 === 3 && pending.length > 0) {
            const id = pending[Math.floor(rand() * pending.length)]!;
            answers.push(rpc(srv.url, 'private/cancel_withdrawal', { currency: 'BTC', id }, user).catch(() => undefined));
            continue;
          }
          const p: Record<string, unknown> = { currency: 'BTC', address: 'bc1qcrash', amount: (1 + Math.floor(rand() * 5_000_000)) / 1e8 };
          if (i % 2 === 0) {
            p.nonce = `r${round}-${i}`;
            sent.push(p);
          }
          answers.push(rpc(srv.url, 'private/withdraw', p, user).catch(() => undefined));
        }
        // killed once the first answers are out, while the rest of the burst is still coming in
        const delay = Math.floor(rand() * 15);
        const replay = await killAndRecover(srv, answers, delay);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer of a burst of ${IN_FLIGHT} withdrawals and cancels`);
        const seen = checkWhole(replay.ex, userId);
        pending = seen.pending;
        // the server's own answer agrees with the journal
        user = await login(srv.url, EMAIL, 'user-password-1');
        const listed = await ok(srv.url, 'private/get_withdrawals', { currency: 'BTC', count: 1000 }, user);
        assert.equal(listed.count, seen.count);
        t.diagnostic(`round ${round}: ${seen.count} withdrawals in the journal, ${pending.length} pending`);
      }
      // every nonce'd withdrawal sent again, twice: those the journal holds are not made again
      for (const p of sent) await rpc(srv.url, 'private/withdraw', p, user);
      for (const p of sent) await rpc(srv.url, 'private/withdraw', p, user);
      const final = await stopAndReplay(srv);
      checkWhole(final.ex, userId);
      const perNonce = new Map<string, number>();
      for (const w of final.ex.wallet.withdrawalsOf(userId, 'BTC')) if (w.nonce !== null) perNonce.set(w.nonce, (perNonce.get(w.nonce) ?? 0) + 1);
      for (const [nonce, n] of perNonce) assert.equal(n, 1, `nonce ${nonce} made ${n} withdrawals`);
      assert.ok(perNonce.size > 0);
    });
  });
});
