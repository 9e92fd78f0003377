// A lean closed-loop HTTP load generator, the cross-check beside autocannon in the HTTP benchmark.
//
// Why: on a 2-core machine the load generator shares the cores with the server it measures.
// autocannon, given a different request plan per connection (setupRequest), rebuilds every
// request and collects every response body: ~25-30 us of CPU per request, about as much as the
// server's engine thread. This one sends requests encoded once per connection and reads responses
// by their Content-Length (~14 us per request), so more of the machine is left to the server and
// less of the measured latency is the generator's own queueing. Latency is measured the same way:
// from writing a request to having read its whole response; each connection has one request
// outstanding at a time, as with autocannon's pipelining 1.
import net from 'node:net';
import type { LoadResult } from './support.ts';

export interface LeanStep {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A socket 'data' handler that cuts HTTP/1.1 responses out of the stream by their Content-Length
 * (every answer of both servers has one) and calls `onResponse` with each status; anything else
 * calls `fail`, which should end the connection.
 */
export function responseReader(fail: () => void, onResponse: (status: number) => void): (data: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (data) => {
    pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
    for (;;) {
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = pending.toString('latin1', 0, headEnd);
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (length === null) return fail();
      const size = headEnd + 4 + Number(length[1]);
      if (pending.length < size) return;
      pending = pending.subarray(size);
      onResponse(Number(head.slice(9, 12)));
    }
  };
}

/** Encodes a POST request once, to be written as is for every send. */
export function encodeRequest(port: number, step: LeanStep): Buffer {
  const body = Buffer.from(step.body);
  let head = `POST ${step.path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-length: ${body.length}\r\n`;
  // a step's own length or host (autocannon adds Content-Length to the header objects it is given)
  for (const [k, v] of Object.entries(step.headers)) if (!/^(content-length|host)$/i.test(k)) head += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`), body]);
}

/** Runs `plans.length` connections (plan i on connection i) for `seconds` against 127.0.0.1:port. */
export async function leanLoad(port: number, plans: LeanStep[][], seconds: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const encoded = plans.map((plan) => plan.map((step) => encodeRequest(port, step)));
  await Promise.all(
    encoded.map(
      (requests) =>
        new Promise<void>((resolve) => {
          let next = 0;
          let sentAt = 0;
          const socket = net.connect(port, '127.0.0.1');
          socket.setNoDelay(true);
          const send = () => {
            if (performance.now() >= end) {
              socket.destroy();
              resolve();
              return;
            }
            sentAt = performance.now();
            socket.write(requests[next++ % requests.length]!);
          };
          const fail = () => {
            errors++;
            socket.destroy();
            resolve();
          };
          socket.on('connect', send);
          socket.on('error', fail);
          // the server closing the connection before the end is an error too (and must not hang the run)
          socket.on('close', () => {
            if (performance.now() < end) errors++;
            resolve();
          });
          socket.on(
            'data',
            responseReader(fail, (status) => {
              if (status !== 200) non2xx++;
              latencies.push(performance.now() - sentAt);
              send();
            }),
          );
        }),
    ),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => (latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]!);
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), total: latencies.length, non2xx, errors };
}
