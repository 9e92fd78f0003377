// Issue 36's judged lines and the references added for them (bench/judged.ts, the raw fan-out's
// bare server and the clients' capture, the restart's bare read). A bench is judged on these, so a
// reference that broke silently (frames not replayed as captured, a capture that drops frames, a
// ratio judged the wrong way round, a line missing from the summary) would make a line look better
// or worse than it is. No timing is asserted here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { JUDGED_LINES, atLeast, atMost, judgedText, summaryTable, zero } from '../../bench/judged.ts';

const BENCH = path.resolve(import.meta.dirname, '../../bench');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strikebook-issue36-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

test('a line is judged by its ratio to the reference, in the direction of its target', () => {
  assert.equal(atLeast('httpResting', 60, 100, 'req/s', 0.6).pass, true);
  assert.equal(atLeast('httpResting', 59, 100, 'req/s', 0.6).pass, false);
  assert.equal(atLeast('replay', 10, 0, 'records/s', 0.5).pass, false, 'no reference, no pass');
  assert.equal(atMost('openLoopP99', 30, 10, 'ms', 3).pass, true);
  assert.equal(atMost('openLoopP99', 31, 10, 'ms', 3).pass, false);
  assert.equal(atMost('openLoopP99', 5, 0, 'ms', 3).pass, false, 'a latency reference of 0 ms judges nothing');
  // a count: a bare server held past 2 ms not once counts as once
  assert.equal(atMost('loopStalls', 2, 0, '', 2).pass, true);
  assert.equal(atMost('loopStalls', 3, 0, '', 2).pass, false);
  assert.equal(atMost('loopStalls', 200, 100, '', 2).ratio, 2);
  assert.equal(zero('engineWork', 0, 'pieces').pass, true);
  assert.equal(zero('engineWork', 1, 'pieces').pass, false);
  const text = judgedText(atLeast('wsOrders', 6_500, 10_000, 'msg/s', 0.6));
  assert.match(text, /^orders over WebSocket: 6,500 msg\/s vs ws echo server 10,000 msg\/s = 0\.650 \(target >= 0\.6\): PASS$/);
});

test('the summary table has every line of the issue in its order, measured or not', () => {
  const rows = summaryTable([atLeast('replay', 1, 4, 'records/s', 0.5), zero('engineWork', 3, 'pieces over 2 ms')]);
  const body = rows.slice(2);
  assert.deepEqual(body.map((r) => r.split(' | ')[0]!.slice(2)), Object.values(JUDGED_LINES).map((d) => d.line));
  assert.equal(body.length, 9);
  assert.match(body.find((r) => r.startsWith('| journal replay |'))!, /\| 0\.250 \| >= 0\.5 \| FAIL \|$/);
  assert.match(body.find((r) => r.startsWith('| engine-work'))!, /\| 3 pieces over 2 ms \|.*\| 3 \| 0 \| FAIL \|$/);
  assert.match(body.find((r) => r.startsWith('| orders over WebSocket |'))!, /not measured/);
});

/** Waits for the first message of `child` that `pick` turns into a value. */
function message<T>(child: ReturnType<typeof fork>, pick: (m: any) => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: any) => {
      const v = pick(m);
      if (v !== undefined) {
        child.off('message', on);
        resolve(v);
      }
    };
    child.on('message', on);
    child.once('exit', (code) => reject(new Error(`child exited (${code})`)));
  });
}

test('the bare fan-out server writes the captured frames, round by round, to every client, which times each against its round', async () => {
  const server = fork(path.join(BENCH, 'bareFanoutServer.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const client = fork(path.join(BENCH, 'wsBenchClient.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const port = await message(server, (m) => m.port as number | undefined);
    const channels = ['book.BTC-X.raw', 'trades.BTC-X.raw'];
    const ready = message(client, (m) => (m.ready ? true : undefined));
    client.send({ url: `ws://127.0.0.1:${port}/`, connections: 3, channels, capture: true });
    await ready;
    const book = (id: number) => `{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-X.raw","data":{"type":"change","change_id":${id},"bids":[],"asks":[]}}}`;
    const trades = (id: number) => `{"jsonrpc":"2.0","method":"subscription","params":{"channel":"trades.BTC-X.raw","data":[{"trade_id":"${id}","price":1}]}}`;
    const rounds: Array<[number, string[]]> = [
      [0, [book(7), trades(41)]],
      [0, [book(8)]],
    ];
    const now = performance.timeOrigin + performance.now();
    client.send({ window: [now - 1_000, now + 60_000] });
    const done = message(server, (m) => (m.starts ? (m as { starts: number[] }) : undefined));
    server.send({ rounds: rounds.map(([, p]) => [now, p]) });
    const { starts } = await done;
    assert.equal(starts.length, 2, 'one start per round');
    // the frames reach the client (3 connections x 3 notifications) before it is asked for its figures
    await new Promise((r) => setTimeout(r, 300));
    const result = message(client, (m) => m.result as { deliveries: number; unmatched: number; captured: Array<[string, string]> } | undefined);
    client.send({ publish: [['book.BTC-X.raw|7', starts[0]], ['trades.BTC-X.raw|41', starts[0]], ['book.BTC-X.raw|8', starts[1]]] });
    const r = await result;
    assert.equal(r.deliveries, 9);
    assert.equal(r.unmatched, 0, 'every delivery timed against the round that carried it');
    // one connection captured, in arrival order, each payload byte for byte with its key
    assert.deepEqual(r.captured, [['book.BTC-X.raw|7', book(7)], ['trades.BTC-X.raw|41', trades(41)], ['book.BTC-X.raw|8', book(8)]]);
  } finally {
    server.kill('SIGKILL');
    client.kill('SIGKILL');
  }
});

test("the restart's reference reads and keeps every record of the journal, as a program of its own", () => {
  const dir = path.join(root, 'journal');
  const j = openSqliteJournal(dir);
  try {
    j.append(Array.from({ length: 4_500 }, (_, i) => ({ seq: i + 1, ts: 1_700_000_000_000 + i, cmd: `C|1|${i + 1}` })));
  } finally {
    j.close();
  }
  const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(BENCH, 'bareRead.ts'), dir], { encoding: 'utf8' });
  assert.equal((JSON.parse(out) as { records: number }).records, 4_500);
});
