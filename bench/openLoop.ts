// An open-loop HTTP load generator: requests start on a fixed schedule, whatever the server does,
// and each one's latency counts from its scheduled start. A closed loop (autocannon, leanLoad) sends
// the next request only when the previous answer is in, so a 100 ms stall delays one request per
// connection and hides the requests that would have arrived meanwhile (coordinated omission); here
// they queue, as real clients' orders would, and their wait is counted.
//
// `connections` sockets, at most one request in flight on each (HTTP/1.1 without pipelining); a
// request due while every socket is busy waits in a queue for the first free one.
import net from 'node:net';
import { encodeRequest, responseReader, type LeanStep } from './leanLoad.ts';

export interface OpenLoopResult {
  /** Requests scheduled, and answered (any status) before the run ended plus a grace period. */
  scheduled: number;
  answered: number;
  non2xx: number;
  /** Non-2xx answers by status, e.g. { 503: 2 }. */
  statuses: Record<number, number>;
  errors: number;
  /** Answers read on a socket that had no request in flight (not counted as latencies). */
  unsolicited: number;
  /** Latency from scheduled start to the whole answer read, ms. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** Every latency, ascending (to pool runs). */
  latenciesMs: number[];
}

/** How long answers still in flight are waited for after the last scheduled start, ms. */
const GRACE_MS = 5_000;

/**
 * Sends `steps` round-robin (step i of request i) at `ratePerSec` for `seconds` over `connections`
 * sockets to 127.0.0.1:port.
 */
export async function openLoop(port: number, steps: LeanStep[], opts: { ratePerSec: number; seconds: number; connections: number }): Promise<OpenLoopResult> {
  const encoded = steps.map((s) => encodeRequest(port, s));
  const total = Math.floor(opts.ratePerSec * opts.seconds);
  const interval = 1000 / opts.ratePerSec;
  const latencies: number[] = [];
  let non2xx = 0;
  const statuses: Record<number, number> = {};
  let errors = 0;
  let unsolicited = 0;
  let nextIndex = 0;
  let sent = 0;
  /** Scheduled start times of requests that are due and wait for a free socket, oldest first. */
  const queue: number[] = [];
  let queueHead = 0;
  const idle: Conn[] = [];

  interface Conn {
    socket: net.Socket;
    /** Scheduled start of the request in flight; -1 while the socket is idle. */
    scheduledAt: number;
  }

  const dispatch = () => {
    while (queueHead < queue.length && idle.length > 0) {
      const c = idle.pop()!;
      c.scheduledAt = queue[queueHead++]!;
      c.socket.write(encoded[sent++ % encoded.length]!);
    }
    if (queueHead > 4096 && queueHead * 2 > queue.length) {
      queue.splice(0, queueHead);
      queueHead = 0;
    }
  };

  await Promise.all(
    Array.from(
      { length: opts.connections },
      () =>
        new Promise<void>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1');
          socket.setNoDelay(true);
          const c: Conn = { socket, scheduledAt: -1 };
          socket.once('connect', () => {
            idle.push(c);
            resolve();
          });
          socket.once('error', reject);
          socket.on('close', () => {
            const at = idle.indexOf(c);
            if (at >= 0) idle.splice(at, 1);
          });
          socket.on(
            'data',
            responseReader(
              () => {
                errors++;
                socket.destroy();
              },
              (status) => {
                // an answer with nothing asked (a server-initiated close) has no start to count from
                if (c.scheduledAt < 0) {
                  unsolicited++;
                  return;
                }
                if (status !== 200) {
                  non2xx++;
                  statuses[status] = (statuses[status] ?? 0) + 1;
                }
                latencies.push(performance.now() - c.scheduledAt);
                c.scheduledAt = -1;
                idle.push(c);
                dispatch();
              },
            ),
          );
        }),
    ),
  );
  const sockets = [...idle];
  for (const c of sockets) {
    c.socket.removeAllListeners('error');
    c.socket.on('error', () => errors++);
  }

  const start = performance.now() + 10;
  await new Promise<void>((resolve) => {
    // a 1 ms timer moves due requests to the queue; a late timer makes them late, which counts
    const pump = setInterval(() => {
      const now = performance.now();
      while (nextIndex < total && start + nextIndex * interval <= now) queue.push(start + interval * nextIndex++);
      dispatch();
      if (nextIndex >= total) {
        clearInterval(pump);
        resolve();
      }
    }, 1);
  });
  const deadline = performance.now() + GRACE_MS;
  while (latencies.length + errors < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  for (const c of sockets) c.socket.destroy();

  return withQuantiles({ scheduled: total, non2xx, statuses, errors, unsolicited }, latencies);
}

/** A result from its counts and its latencies (sorted here). */
function withQuantiles(counts: Pick<OpenLoopResult, 'scheduled' | 'non2xx' | 'statuses' | 'errors' | 'unsolicited'>, latencies: number[]): OpenLoopResult {
  latencies.sort((a, b) => a - b);
  const at = (q: number) => (latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]!);
  return { ...counts, answered: latencies.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: latencies.length === 0 ? NaN : latencies[latencies.length - 1]!, latenciesMs: latencies };
}

/** Several runs taken as one: counts added, quantiles over every latency of them all. */
export function pooled(runs: OpenLoopResult[]): OpenLoopResult {
  const statuses: Record<number, number> = {};
  for (const r of runs) for (const [k, v] of Object.entries(r.statuses)) statuses[Number(k)] = (statuses[Number(k)] ?? 0) + v;
  const sum = (f: (r: OpenLoopResult) => number) => runs.reduce((n, r) => n + f(r), 0);
  return withQuantiles(
    { scheduled: sum((r) => r.scheduled), non2xx: sum((r) => r.non2xx), statuses, errors: sum((r) => r.errors), unsolicited: sum((r) => r.unsolicited) },
    runs.flatMap((r) => r.latenciesMs),
  );
}
