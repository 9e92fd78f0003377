// Settlement is one journaled command, so a crash around it settles the expiry exactly once
// (API.md 7.3): the server is killed with SIGKILL while the test clock passes an expiry and again
// right after the settlement, restarted each time, and the journal then shows the money moved once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { isReject } from '../../src/domain/errors.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { recover } from '../../src/app/services.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { prepareExpiry } from '../helpers/expiry.ts';
import { adminToken, login, ok, rpc, spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

// tokens must outlive the hours the test clock jumps
const ENV = { STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' };

async function kill(child: ChildServer): Promise<void> {
  child.proc.kill('SIGKILL');
  await child.exited;
}

async function waitDelivered(url: string, instrument: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const inst = await ok(url, 'public/get_instrument', { instrument_name: instrument });
    if (inst.state === 'delivered') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${instrument} was not delivered`);
}

describe('settlement across a crash', () => {
  it('settles an expiry exactly once when the server is killed during and after settlement', async () => {
    const dataDir = tempDir();
    let child = await spawnServer(dataDir, ENV);
    try {
      const admin = await adminToken(child.url);
      const sc = await prepareExpiry(child.url, admin);

      // kill while the clock moves past the expiry (the settle command is applied, maybe journaled)
      void rpc(child.url, 'private/set_test_time', { timestamp: sc.expiry + 1_000 }, admin).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 2));
      await kill(child);

      child = await spawnServer(dataDir, ENV);
      const admin2 = await login(child.url, 'admin@example.com', 'admin-password-1');
      const moved = await rpc(child.url, 'private/set_test_time', { timestamp: sc.expiry + 1_000 }, admin2);
      // refused as "backwards" only when the journal already holds commands at that time
      if (moved.body.error) assert.equal(moved.body.error.code, 11029);
      await waitDelivered(child.url, sc.instrument);

      // kill right after the settlement was acknowledged, then let the restarted timers run a while
      await kill(child);
      child = await spawnServer(dataDir, ENV);
      await waitDelivered(child.url, sc.instrument);
      await new Promise((r) => setTimeout(r, 1_500));
      const prices = await ok(child.url, 'public/get_delivery_prices', { index_name: 'btc_usd' });
      // exactly one record for the expiry's date (an earlier, empty expiry may have its own)
      const date = new Date(sc.expiry).toISOString().slice(0, 10);
      assert.deepEqual(prices.data.filter((d: any) => d.date === date), [{ date, delivery_price: sc.deliveryPrice }]);
      child.proc.kill('SIGTERM');
      await child.exited;

      // the journal, replayed: balances just before the first successful settle, and at the end
      const journal = openSqliteJournal(dataDir);
      try {
        const ex = new Exchange();
        let beforeSettle: { buyer: number; seller: number } | null = null;
        let settled = 0;
        for (const rec of journal.readAfter(0)) {
          const cmd = decodeCommand(rec.cmd, rec.seq, rec.ts);
          const snapshot = {
            buyer: ex.usersByEmail.get(sc.buyerEmail)?.accounts.BTC.balance ?? 0,
            seller: ex.usersByEmail.get(sc.sellerEmail)?.accounts.BTC.balance ?? 0,
          };
          const result = applyCommand(ex, cmd);
          if (cmd.t === 'settle' && cmd.expiry === sc.expiry && cmd.currency === 'BTC' && !isReject(result)) {
            settled++;
            beforeSettle ??= snapshot;
          }
        }
        assert.equal(settled, 1, 'exactly one settle command for the expiry succeeded');
        const final = recover(journal).ex;
        const buyer = final.usersByEmail.get(sc.buyerEmail)!.accounts.BTC.balance;
        const seller = final.usersByEmail.get(sc.sellerEmail)!.accounts.BTC.balance;
        assert.equal(buyer - beforeSettle!.buyer, sc.buyerDelta);
        assert.equal(seller - beforeSettle!.seller, sc.sellerDelta);
        for (const [c, v] of Object.entries(final.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
        assert.equal(final.deliveries.filter((d) => d.expiry === sc.expiry && d.currency === 'BTC').length, 1);
      } finally {
        journal.close();
      }
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) await kill(child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
