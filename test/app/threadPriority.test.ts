// A background worker thread lowers its own scheduling priority, and only its own: the thread that
// started it (the engine thread) keeps the priority it had (src/app/threadPriority.ts, used by the
// snapshot thread). Linux keeps a nice value per thread; elsewhere the call may be refused, and
// then the test says so and checks that nothing changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';

test('a worker lowers its own thread priority, not the engine thread', async (t) => {
  const before = getPriority(0);
  const helper = new URL('../../src/app/threadPriority.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(helper)}); })
    .then((m) => require('node:worker_threads').parentPort.postMessage(m.lowerThisThreadPriority()));`;
  const worker = new Worker(source, { eval: true });
  const lowered = await new Promise<number | null>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(getPriority(0), before, 'the starting thread keeps its priority');
  if (lowered === null) {
    t.diagnostic('setpriority refused on this system: the worker runs at the process priority');
    return;
  }
  assert.equal(lowered, 19, 'the worker thread runs at the lowest priority');
});
