// The open loop's thread accounts (bench/threadTimes.ts): what the bench prints about a server's
// engine thread (run, and waited for a core) and its other threads must be the right threads' times,
// or a slow second would be blamed on the wrong one. No timing is asserted: only which thread a
// known amount of work is booked to, and that it is at least the work done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { addWindow, emptyWindow, readThreadTimes, threadWindowText } from '../../bench/threadTimes.ts';

const linux = existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`);

/** A fixed amount of work (not a wall-clock spin: a thread taken off its core meanwhile still does all of it). */
const work = 'let x = 0; for (let i = 0; i < 3e8; i++) x = (x + i) % 1000003; globalThis.sink = x;';

test("a process's own thread and its worker threads are booked apart", { skip: linux ? false : 'needs Linux /proc/<pid>/task/<tid>/schedstat' }, async () => {
  // the child waits for a line on stdin and works on its main thread; on the next line it works in a worker
  const source = `
const { Worker } = require('node:worker_threads');
let round = 0;
process.stdin.on('data', () => {
  if (round++ === 0) { ${work} process.stdout.write('main done\\n'); return; }
  // the worker stays alive after its work: a thread that ended has no accounts left to read
  const w = new Worker(${JSON.stringify(work + " require('node:worker_threads').parentPort.postMessage('done'); setInterval(() => {}, 1000);")}, { eval: true });
  w.on('message', () => process.stdout.write('worker done\\n'));
});
process.stdout.write('ready\\n');
`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = () => new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const phase = async () => {
    const before = readThreadTimes(child.pid);
    assert.ok(before.has(child.pid!), "the main thread is the task with the process's id");
    const finished = line();
    child.stdin.write('go\n');
    await finished;
    const w = emptyWindow();
    addWindow(w, child.pid!, before, readThreadTimes(child.pid));
    return w;
  };
  try {
    await line();
    const onMain = await phase();
    assert.ok(onMain.mainRunMs > 50 && onMain.mainRunMs > 5 * onMain.othersRunMs, `work on the main thread is booked to it (main ${onMain.mainRunMs} ms, others ${onMain.othersRunMs} ms)`);
    assert.ok(onMain.mainWaitMs >= 0);
    assert.match(threadWindowText(onMain, 1) ?? '', /^engine thread ran \d+\.\d\d s \(\d+% of the window\) and waited ready for a core/);
    const inWorker = await phase();
    assert.ok(inWorker.othersRunMs > 50 && inWorker.othersRunMs > 2 * inWorker.mainRunMs, `work in a worker is booked to the other threads (main ${inWorker.mainRunMs} ms, others ${inWorker.othersRunMs} ms)`);
    assert.ok(inWorker.busiestOtherRunMs > inWorker.othersRunMs / 2, 'the busiest other thread is the worker');
  } finally {
    child.kill();
  }
});

test('no /proc, or a process that is gone: nothing is read and nothing is printed', () => {
  assert.equal(readThreadTimes(undefined).size, 0);
  assert.equal(readThreadTimes(2 ** 30).size, 0);
  assert.equal(threadWindowText(emptyWindow(), 1), null);
});
