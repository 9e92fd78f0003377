// A worker thread for test/app/threadPriority.test.ts: lowers its own priority, reports its thread
// id and the nice it got, then waits to be terminated (so that its /proc entry can be read).
import { parentPort } from 'node:worker_threads';
import { currentThreadId, lowerThisThreadsPriority } from '../../src/app/threadPriority.ts';

const nice = lowerThisThreadsPriority();
parentPort!.postMessage({ tid: currentThreadId(), nice });
setInterval(() => undefined, 1_000);
