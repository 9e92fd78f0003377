// The NATS event publisher's thread (src/app/natsEvents.ts): the connection, the backlog and the
// JetStream publishes (a request and its acknowledgement per message, ~25 us of CPU each in the
// client library) run here, so the engine thread only renders a batch and posts it.
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { NatsEventPublisher, type NatsEventsOptions } from './natsEvents.ts';
import type { EventMessage } from '../api/ws/streamEvents.ts';

type Options = Omit<NatsEventsOptions, 'log'> & { logLevel: string };

const opts = workerData as Options;
const port = parentPort!;
const pub = new NatsEventPublisher({ ...opts, log: pino({ level: opts.logLevel }) });
pub.start();
/** The counts /metrics shows, sent a few times a second (and at close). */
const report = () => port.postMessage({ stats: pub.counts });
const timer = setInterval(report, 100);

port.on('message', (m: { batch?: { msgs: EventMessage[]; first: number; last: number; followed: boolean }; promote?: true; close?: number }) => {
  if (m.batch) {
    if (m.batch.followed) pub.retain(m.batch.msgs, m.batch.last);
    else pub.enqueue(m.batch.msgs, m.batch.first, m.batch.last);
  } else if (m.promote) pub.promote();
  else if (m.close !== undefined) {
    void pub.close(m.close).then(() => {
      clearInterval(timer);
      report();
      port.postMessage({ closed: true });
    });
  }
});
