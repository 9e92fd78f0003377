// Request/reply over a worker thread that answers every request, in the order it received them:
// one FIFO of waiters matches the replies up. A failed reply, a thread error or the thread's exit
// breaks the channel: the failure rejects its own request, everything still waiting, and every
// later request. (For the journal that is DESIGN.md rule 3: after a failed write, nothing more.)
import type { Worker } from 'node:worker_threads';

export type ThreadReply = { ok: true } | { ok: false; message: string };

export interface ThreadRequests<Req, Ok> {
  /** The thread's reply to `req`; the buffers in `transfer` move to the thread (no copy) and are
   *  unusable here after. */
  request(req: Req, transfer?: readonly ArrayBuffer[]): Promise<Ok>;
  /** The thread's first message, which it sends unasked once it is ready to serve. */
  readonly ready: Promise<Ok>;
  /** Asks the thread to finish (`closeReq`), or terminates it when broken; resolves once it exited. */
  close(closeReq: Req): Promise<void>;
}

interface Waiter<Ok> {
  resolve: (reply: Ok) => void;
  reject: (err: Error) => void;
}

export function threadRequests<Req, Ok extends { ok: true }>(worker: Worker, name: string): ThreadRequests<Req, Ok> {
  const waiters: Array<Waiter<Ok>> = [];
  let broken: Error | null = null;
  let exited = false;

  const breakAll = (err: Error) => {
    broken ??= err;
    for (const w of waiters.splice(0)) w.reject(broken);
  };
  worker.on('message', (reply: Ok | { ok: false; message: string }) => {
    const w = waiters.shift();
    if (!w) return;
    if (reply.ok) w.resolve(reply);
    else {
      const err = new Error(`${name}: ${reply.message}`);
      broken ??= err;
      w.reject(err);
    }
  });
  worker.on('error', (err) => breakAll(new Error(`${name} thread failed`, { cause: err })));
  worker.on('exit', (code) => {
    exited = true;
    breakAll(new Error(`${name} thread exited (code ${code})`));
  });

  const request = (req: Req, transfer?: readonly ArrayBuffer[]): Promise<Ok> => {
    if (broken) return Promise.reject(broken);
    return new Promise((resolve, reject) => {
      // Posted first: a message that cannot be sent throws here and rejects this request alone, with
      // no waiter left behind to take the next request's reply. A detached buffer in the transfer
      // list does not throw: node drops the whole message without a word, and this request would
      // wait forever. An empty buffer has nothing to move, so it is left to the clone, which throws
      // on a detached one.
      worker.postMessage(req, transfer?.filter((b) => b.byteLength > 0));
      waiters.push({ resolve, reject });
    });
  };
  const ready = new Promise<Ok>((resolve, reject) => {
    waiters.push({ resolve, reject });
  });

  return {
    request,
    ready,
    async close(closeReq) {
      if (exited) return;
      const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      if (!broken) await request(closeReq).catch(() => undefined);
      else await worker.terminate();
      await gone;
    },
  };
}
