// Cancel-on-disconnect across a crash and a takeover (docs/operations.md, "What each failure
// costs"): a server killed with SIGKILL closes no connection gracefully, so nothing cancelled the
// orders of its COD connections while it died. The next process to lead (the same one restarted on
// its data directory, or a standby taking over) cancels them, by journaled `cancel_orders` with
// cancel_reason `cancel_on_disconnect`, before it answers any client; every other order stays.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { freshSchema } from '../helpers/postgres.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, request, rpc, serverFleet, spawnServer, tempDir, userToken } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

// tokens outlive the restarts; snapshots every few records, so marks are restored from one too
const ENV = { STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_SNAPSHOT_EVERY: '25' };
const A = 'cod-a@example.com';
const B = 'cod-b@example.com';

/** Rests small bids at fresh prices below the mark. */
function bidder(m: Market) {
  let idx = m.prices.indexOf(nearMark(m)) - 5;
  return async (place: (params: Record<string, unknown>) => Promise<any>): Promise<string> => {
    const r = await place({ instrument_name: m.name, amount: 0.1, price: m.prices[idx--] });
    assert.equal(r.order.order_state, 'open');
    return r.order.order_id;
  };
}

const wsBuy = (ws: WsClient) => (p: Record<string, unknown>) => ws.ok('private/buy', p);

describe('cancel-on-disconnect after a crash', () => {
  test('a SIGKILLed server, restarted on its data directory, cancels the orders of its COD connections and keeps the rest', { timeout: 300_000 }, async () => {
    const dataDir = tempDir();
    let child = await spawnServer(dataDir, ENV);
    try {
      const admin = await adminToken(child.url);
      const tokA = await userToken(child.url, admin, A, { currency: 'BTC', amount: 10 });
      const tokB = await userToken(child.url, admin, B, { currency: 'BTC', amount: 10 });
      const m = await atmCall(child.url);
      const rest = bidder(m);
      const open = async (email: string) => {
        const ws = await WsClient.open(child.url);
        await ws.auth(email);
        return ws;
      };

      // connection scope, on before placing: its orders, and an untriggered trigger order
      const cod = await open(A);
      await cod.ok('private/enable_cancel_on_disconnect', { scope: 'connection' });
      const swept = [await rest(wsBuy(cod)), await rest(wsBuy(cod))];
      const stop = await cod.ok('private/buy', { instrument_name: m.name, amount: 0.1, type: 'stop_limit', trigger: 'index_price', trigger_price: 1_000_000, price: m.prices[5] });
      assert.equal(stop.order.order_state, 'untriggered');
      swept.push(stop.order.order_id);
      // on after placing: as live, the orders placed before are covered too
      const late = await open(A);
      swept.push(await rest(wsBuy(late)));
      await late.ok('private/enable_cancel_on_disconnect');
      // another user's COD connection: its own order goes, and it cannot reach A's
      const other = await open(B);
      await other.ok('private/enable_cancel_on_disconnect');
      swept.push(await rest(wsBuy(other)));

      const kept: string[] = [];
      // no COD
      const plain = await open(A);
      kept.push(await rest(wsBuy(plain)));
      // COD on, then off again: its orders stay, as the live path would keep them
      const off = await open(A);
      await off.ok('private/enable_cancel_on_disconnect');
      kept.push(await rest(wsBuy(off)));
      await off.ok('private/disable_cancel_on_disconnect');
      // COD on, then private/logout (closes without cancelling): stays
      const out = await open(A);
      await out.ok('private/enable_cancel_on_disconnect');
      kept.push(await rest(wsBuy(out)));
      await out.ok('private/logout');
      await out.closedP;
      // HTTP, with a forged mark in the params: refused or ignored, never a COD order
      const forged = await rpc(child.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[10], cod: true }, tokA);
      if (forged.body.result) kept.push(forged.body.result.order.order_id);
      kept.push(await rest((p) => ok(child.url, 'private/buy', p, tokA)));
      // B's COD connection edits A's order: refused (not found), and no mark reaches it
      const foreign = await other.call('private/edit', { order_id: kept[0], amount: 0.2, price: m.prices[3] });
      assert.ok(foreign.error, 'another user\'s order is not found');

      const hashBefore = (await ok(child.url, 'private/get_state_hash', {}, admin)).state_hash;
      const seqBefore = cleanReplay(dataDir).seq;
      // a crash: the sockets are not closed by the server, nothing runs on its way down
      child.proc.kill('SIGKILL');
      await child.exited;
      for (const ws of [cod, late, other, plain, off]) await ws.closedP;

      child = await spawnServer(dataDir, ENV);
      const stateOf = async (id: string) => {
        for (const tok of [tokA, tokB]) {
          const r = await rpc(child.url, 'private/get_order_state', { order_id: id }, tok);
          if (r.body.result) return r.body.result;
        }
        throw new Error(`order ${id} not found`);
      };
      for (const id of swept) {
        const o = await stateOf(id);
        assert.deepEqual([o.order_state, o.cancel_reason], ['cancelled', 'cancel_on_disconnect'], `order ${id} was cancelled on restart`);
      }
      for (const id of kept) assert.equal((await stateOf(id)).order_state, 'open', `order ${id} stays`);

      // the cancels are journaled commands, right after what the crashed process had written, and
      // the recovered state is the journal's
      const journal = openSqliteJournal(dataDir);
      const after = [...journal.readAfter(seqBefore)].map((r) => decodeCommand(r.cmd, r.seq, r.ts));
      journal.close();
      const cancels = after.filter((c) => c.t === 'cancel_orders');
      assert.equal(cancels.length, 2, 'one cancel_orders per user');
      assert.ok(after.slice(0, 2).every((c) => c.t === 'cancel_orders' && c.reason === 'cancel_on_disconnect'), 'first after the crash');
      const cancelled = cancels.flatMap((c) => (c as { orderIds: number[] }).orderIds).map(String).sort();
      assert.deepEqual(cancelled, [...swept].sort());
      const replay = cleanReplay(dataDir);
      assert.equal((await ok(child.url, 'private/get_state_hash', {}, admin)).state_hash, replay.hash);
      assert.notEqual(replay.hash, hashBefore);

      // a second restart sweeps nothing more
      child.proc.kill('SIGKILL');
      await child.exited;
      const seqAgain = cleanReplay(dataDir).seq;
      child = await spawnServer(dataDir, ENV);
      assert.equal(cleanReplay(dataDir).seq, seqAgain, 'no command on a start with nothing to cancel');
      for (const id of kept) assert.equal((await stateOf(id)).order_state, 'open');
    } finally {
      child.proc.kill('SIGTERM');
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('the account-scope flag survives a crash, and a new connection\'s orders are swept after the next one', { timeout: 300_000 }, async () => {
    const dataDir = tempDir();
    let child = await spawnServer(dataDir, ENV);
    try {
      const admin = await adminToken(child.url);
      const tok = await userToken(child.url, admin, A, { currency: 'BTC', amount: 10 });
      const m = await atmCall(child.url);
      const rest = bidder(m);
      assert.equal(await ok(child.url, 'private/enable_cancel_on_disconnect', { scope: 'account' }, tok), 'ok');
      child.proc.kill('SIGKILL');
      await child.exited;

      child = await spawnServer(dataDir, ENV);
      assert.deepEqual(await ok(child.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, tok), { scope: 'account', enabled: true });
      const ws = await WsClient.open(child.url);
      await ws.auth(A);
      assert.deepEqual(await ws.ok('private/get_cancel_on_disconnect', { scope: 'account' }), { scope: 'account', enabled: true });
      assert.deepEqual(await ws.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: true }, 'a new connection starts with it on');
      const id = await rest(wsBuy(ws));
      const viaHttp = await rest((p) => ok(child.url, 'private/buy', p, tok));
      child.proc.kill('SIGKILL');
      await child.exited;
      await ws.closedP;

      child = await spawnServer(dataDir, ENV);
      const o = await ok(child.url, 'private/get_order_state', { order_id: id }, tok);
      assert.deepEqual([o.order_state, o.cancel_reason], ['cancelled', 'cancel_on_disconnect']);
      assert.equal((await ok(child.url, 'private/get_order_state', { order_id: viaHttp }, tok)).order_state, 'open');
      // and turned off over HTTP, it stays off across a restart too
      await ok(child.url, 'private/disable_cancel_on_disconnect', { scope: 'account' }, tok);
      child.proc.kill('SIGKILL');
      await child.exited;
      child = await spawnServer(dataDir, ENV);
      assert.deepEqual(await ok(child.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, tok), { scope: 'account', enabled: false });
    } finally {
      child.proc.kill('SIGTERM');
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a standby that takes over from a SIGKILLed leader cancels the orders of the leader\'s COD connections before its first order', { timeout: 300_000 }, async (t) => {
    const db = await freshSchema(t);
    if (!db) return;
    const { spawn } = serverFleet(t, { ...ENV, DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '200' });
    const leader = await spawn();
    const admin = await adminToken(leader.url);
    const tok = await userToken(leader.url, admin, A, { currency: 'BTC', amount: 10 });
    const m = await atmCall(leader.url);
    const rest = bidder(m);
    const standby = await spawn();
    assert.equal((await request(standby.url, '/health')).body.role, 'standby');

    const ws = await WsClient.open(leader.url);
    await ws.auth(A);
    await ws.ok('private/enable_cancel_on_disconnect');
    const swept = await rest(wsBuy(ws));
    const plain = await WsClient.open(leader.url);
    await plain.auth(A);
    const kept = await rest(wsBuy(plain));
    const viaHttp = await rest((p) => ok(leader.url, 'private/buy', p, tok));

    leader.proc.kill('SIGKILL');
    await leader.exited;
    // the first order the standby accepts: by then the sweep is applied (it was sequenced first)
    let first: any;
    for (const deadline = performance.now() + 60_000; ; ) {
      first = await rpc(standby.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[1] }, tok);
      if (first.body.result) break;
      assert.equal(first.body.error?.code, 10040, JSON.stringify(first.body));
      if (performance.now() > deadline) throw new Error('the standby did not take over');
      await new Promise((r) => setTimeout(r, 50));
    }
    const o = await ok(standby.url, 'private/get_order_state', { order_id: swept }, tok);
    assert.deepEqual([o.order_state, o.cancel_reason], ['cancelled', 'cancel_on_disconnect']);
    for (const id of [kept, viaHttp]) assert.equal((await ok(standby.url, 'private/get_order_state', { order_id: id }, tok)).order_state, 'open');
    const rows = await db.query<{ seq: string; cmd: string }>(`SELECT seq, cmd FROM ${db.name}.journal WHERE cmd LIKE '%cancel_orders%' ORDER BY seq`);
    assert.equal(rows.length, 1);
    const cmd = decodeCommand(rows[0]!.cmd, Number(rows[0]!.seq), 0);
    assert.deepEqual(cmd.t === 'cancel_orders' ? [cmd.orderIds.map(String), cmd.reason] : null, [[swept], 'cancel_on_disconnect']);
    const firstSeq = await db.query<{ seq: string }>(`SELECT seq FROM ${db.name}.journal WHERE cmd LIKE 'P|%' ORDER BY seq DESC LIMIT 1`);
    assert.ok(Number(rows[0]!.seq) < Number(firstSeq[0]!.seq), 'the sweep comes before the first order the new leader took');
    await ws.closedP;
    await plain.closedP;
  });
});
