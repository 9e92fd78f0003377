// DESIGN.md rule 3 for the server as started: every connection the running exchange's journal holds
// runs WAL with synchronous=FULL, also after a restart on a database that is already in WAL mode
// (where better-sqlite3 would silently start a connection at NORMAL). test/journal/sqliteJournal.test.ts
// covers the adapter on its own; this pins the connection(s) that startExchange opens: the readers
// on the engine thread and the writer connection in the journal writer thread, which commits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { pragmaState } from '../../src/journal/sqliteJournal.ts';
import { startServer, tempDir, adminToken, ok, sqliteOf } from '../helpers/server.ts';
import type { TestServer } from '../helpers/server.ts';

const FULL = { journalMode: 'wal', synchronous: 2 };

async function assertEveryConnectionDurable(server: TestServer, expectedCount: number): Promise<void> {
  const app = sqliteOf(server.app);
  const conns = app.journal.connections();
  assert.equal(conns.length, expectedCount);
  for (const db of conns) assert.deepEqual(pragmaState(db), FULL);
  assert.deepEqual(await app.journalWriter.pragmas(), FULL, 'the writer thread commits with FULL');
  assert.deepEqual(await app.journalWriter.checkpointerPragmas(), FULL, 'the checkpointer thread fsyncs the database file');
}

test('every journal connection of a started server runs WAL with synchronous=FULL, also after a restart', async () => {
  const dataDir = tempDir();
  try {
    const first = await startServer({}, dataDir);
    await assertEveryConnectionDurable(first, 1);
    const admin = await adminToken(first.url);
    await ok(first.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, admin);
    await assertEveryConnectionDurable(first, 1); // the settings hold after writes
    await first.stop({ keepData: true });

    const second = await startServer({}, dataDir); // the database file is in WAL mode already
    try {
      await assertEveryConnectionDurable(second, 1);
      const it = sqliteOf(second.app).journal.readAfter(0);
      assert.ok(!it.next().done, 'the journal has records'); // opens a reader connection
      await assertEveryConnectionDurable(second, 2);
      it.return?.();
    } finally {
      await second.stop({ keepData: true });
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
