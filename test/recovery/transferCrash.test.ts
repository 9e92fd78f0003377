// Transfers across crashes (issue 32): the server is killed (SIGKILL) with transfers between a main
// account and its subaccounts in flight. A transfer is one journaled command, so after every restart
// the recovered state hashes equal to a clean replay of the journal, each transfer in the journal is
// whole (both log entries or neither), the family's money is exactly what was deposited, and a
// nonce'd transfer resent after the restart moves money at most once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { killAndRecover, stopAndReplay, withCrashServer } from '../helpers/crash.ts';
import { adminToken, login, ok, rpc, userToken } from '../helpers/server.ts';

const ROUNDS = 4;
const IN_FLIGHT = 40;
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '30' };
const MAIN = 'family@example.com';
const DEPOSIT_SAT = 1_000_000_000; // 10 BTC

describe('transfers across crashes', () => {
  it('recovers to the state of a clean replay after every SIGKILL, with every transfer whole and the family\'s money conserved', { timeout: 300_000 }, async (t) => {
    const rand = mulberry32(0x7a5f);
    await withCrashServer(ENV, async (srv) => {
      const admin = await adminToken(srv.url);
      const main = await userToken(srv.url, admin, MAIN, { currency: 'BTC', amount: DEPOSIT_SAT / 1e8 });
      for (let i = 0; i < 3; i++) await ok(srv.url, 'private/create_subaccount', {}, main);
      const ids: number[] = (await ok(srv.url, 'private/get_subaccounts', {}, main)).map((x: any) => x.id);
      for (const id of ids.slice(1)) await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 2, destination: id }, main);
      const sent: Record<string, unknown>[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        // a burst between the main account and its subaccounts, some with nonces, none awaited
        const burst: Record<string, unknown>[] = [];
        const answers: Promise<unknown>[] = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const from = ids[Math.floor(rand() * ids.length)]!;
          let to = ids[Math.floor(rand() * ids.length)]!;
          if (to === from) to = ids[(ids.indexOf(from) + 1) % ids.length]!;
          const p: Record<string, unknown> = { currency: 'BTC', amount: (1 + Math.floor(rand() * 5_000_000)) / 1e8, source: from, destination: to };
          if (i % 2 === 0) p.nonce = `r${round}-${i}`;
          burst.push(p);
          answers.push(rpc(srv.url, 'private/submit_transfer_between_subaccounts', p, main).catch(() => undefined));
        }
        sent.push(...burst.filter((p) => p.nonce !== undefined));
        // killed once the first answers are out, while the rest of the burst is still coming in
        const delay = Math.floor(rand() * 15);
        const replay = await killAndRecover(srv, answers, delay);
        t.diagnostic(`round ${round}: SIGKILL ${delay} ms after the first answer of a burst of ${IN_FLIGHT} transfers`);
        const ex = replay.ex;
        for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
        let family = 0;
        let outs = 0;
        let ins = 0;
        for (const id of ids) {
          const u = ex.users.get(id)!;
          family += u.accounts.BTC.balance;
          assert.ok(u.accounts.BTC.balance >= 0, `account ${id} below zero`);
          for (const e of u.log.entries()) {
            if (e.type !== 'transfer') continue;
            if (e.amount < 0) outs++;
            else ins++;
          }
        }
        assert.equal(family, DEPOSIT_SAT, "the family's money is what was deposited");
        const records = ex.subaccounts.transfers.get(ids[0]!) ?? [];
        assert.equal(outs, records.length, 'one payment entry per transfer');
        assert.equal(ins, records.length, 'one income entry per transfer');
        t.diagnostic(`round ${round}: ${records.length} transfers in the journal after the restart`);
      }
      // every nonce'd transfer sent again: those the journal holds move nothing, the rest apply once
      const mainNow = await login(srv.url, MAIN, 'user-password-1');
      for (const p of sent) await rpc(srv.url, 'private/submit_transfer_between_subaccounts', p, mainNow);
      for (const p of sent) await rpc(srv.url, 'private/submit_transfer_between_subaccounts', p, mainNow);
      const final = await stopAndReplay(srv);
      const records = final.ex.subaccounts.transfers.get(ids[0]!)!;
      const perNonce = new Map<string, number>();
      for (const r of records) if (r.nonce !== null) perNonce.set(r.nonce, (perNonce.get(r.nonce) ?? 0) + 1);
      for (const [nonce, n] of perNonce) assert.equal(n, 1, `nonce ${nonce} applied ${n} times`);
      let family = 0;
      for (const id of ids) family += final.ex.users.get(id)!.accounts.BTC.balance;
      assert.equal(family, DEPOSIT_SAT);
    });
  });
});
