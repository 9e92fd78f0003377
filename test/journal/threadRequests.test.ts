// Request/reply over a worker thread (src/journal/threadRequests.ts): replies are matched to
// requests in order, and a request that cannot even be posted rejects alone, without taking the
// reply of the request after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { threadRequests } from '../../src/journal/threadRequests.ts';

/** A thread that says it is ready, then answers each request with its `n` and the bytes it got. */
function echoThread(): Worker {
  return new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.postMessage({ ok: true });
     parentPort.on('message', (m) => m.op === 'close' ? process.exit(0) : parentPort.postMessage({ ok: true, n: m.n, bytes: m.data ? m.data.byteLength : 0 }));`,
    { eval: true },
  );
}

test('a request whose buffer cannot be sent rejects alone; the next request gets its own reply', async () => {
  const thread = threadRequests<{ op: string; n?: number; data?: Uint8Array }, { ok: true; n?: number; bytes?: number }>(echoThread(), 'echo');
  await thread.ready;
  const data = new Uint8Array(16);
  assert.deepEqual(await thread.request({ op: 'part', n: 1, data }, [data.buffer]), { ok: true, n: 1, bytes: 16 });
  assert.equal(data.byteLength, 0, 'transferred, not copied');
  // the same buffer again: detached, so it cannot be posted
  await assert.rejects(thread.request({ op: 'part', n: 2, data }, [data.buffer]), /detached|could not be cloned/i);
  assert.deepEqual(await thread.request({ op: 'part', n: 3 }), { ok: true, n: 3, bytes: 0 }, 'no waiter was left behind to take this reply');
  await thread.close({ op: 'close' });
});
