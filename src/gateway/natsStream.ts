// A gateway's reader of the leader's event stream on NATS JetStream (issue 30 item 3; docs/operations.md
// "Gateways and NATS JetStream"). An ordered consumer of `<prefix>.>`, from the stream's end at start.
//
// A NATS restart used to leave streams silent for ~45 s (the ordered consumer noticed only after
// missed idle heartbeats) with nothing logged, counted or reported. Now the connection's status events
// say it at once: a disconnect is logged, counted (strikebook_gateway_nats_disconnects_total) and
// shown by /health and strikebook_gateway_nats_connected; on reconnect the consumer is made again
// from the stream sequence after the last message handled, so nothing stored meanwhile is missed and
// nothing is handled twice. The connection is pinged every second (a server that vanished without a
// close is noticed within ~2 s) and reconnection is tried every 250 ms.
import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ConsumerMessages } from '@nats-io/jetstream';
import { Counter, Gauge, type Registry } from 'prom-client';
import { ensureEventStream, jetStreamApi, natsClient } from '../app/natsEvents.ts';

export interface NatsStreamOptions {
  url: string;
  stream: string;
  prefix: string;
  log: Logger;
  register: Registry;
  onMessage(subject: string, text: string): void;
}

export interface NatsStreamState {
  connected: boolean;
  /** Stream sequence of the last message handled. */
  lastSeq: number;
  disconnects: number;
  /** ms since the connection was lost (0 while connected). */
  downMs: number;
}

export interface NatsStream {
  state(): NatsStreamState;
  close(): Promise<void>;
}

export async function startNatsStream(opts: NatsStreamOptions): Promise<NatsStream> {
  const { log } = opts;
  const { connect } = await natsClient();
  const { DeliverPolicy, jetstream, jetstreamManager } = await jetStreamApi();
  const nc: NatsConnection = await connect({ servers: opts.url, name: 'strikebook-gateway', maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 1000, maxPingOut: 2 });
  const js = jetstream(nc);
  // the leader creates the stream with its first batch; a gateway started first creates it alike
  await ensureEventStream(nc, opts.stream, opts.prefix, 3600);
  let lastSeq = (await (await jetstreamManager(nc)).streams.info(opts.stream)).state.last_seq;
  let connected = true;
  let downSince = 0;
  let disconnects = 0;
  let resumes = 0;
  let closing = false;
  let messages: ConsumerMessages | null = null;
  /** Bumped for each consumer made: a loop of an older one stops handling messages. */
  let generation = 0;

  const consume = async (): Promise<void> => {
    const mine = ++generation;
    await messages?.close().catch(() => undefined);
    const consumer = await js.consumers.get(opts.stream, { filter_subjects: `${opts.prefix}.>`, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 });
    const m = await consumer.consume();
    messages = m;
    void (async () => {
      for await (const msg of m) {
        if (mine !== generation) break;
        const seq = msg.info.streamSequence;
        // an overlap of two consumers across a resume: each message once
        if (seq <= lastSeq) continue;
        lastSeq = seq;
        try {
          opts.onMessage(msg.subject, msg.string());
        } catch (err) {
          log.error({ err, subject: msg.subject }, 'stream message failed');
        }
      }
    })().catch((err: unknown) => {
      // the consumer ended with an error (NATS gone): the reconnect makes a new one
      if (mine === generation && !closing) log.warn({ err }, 'gateway: stream consumer ended');
    });
  };
  await consume();

  /** After a reconnect: a new consumer from the last sequence (retried until NATS answers). */
  const resume = async (): Promise<void> => {
    for (let attempt = 0; !closing && connected; attempt++) {
      try {
        await consume();
        resumes++;
        log.warn({ from_seq: lastSeq + 1, down_ms: Math.round(performance.now() - downSince) }, 'gateway: NATS back; stream resumed');
        return;
      } catch (err) {
        if (attempt === 0) log.warn({ err }, 'gateway: resuming the stream failed; retrying');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };

  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'staleConnection') {
        if (!connected) continue;
        connected = false;
        downSince = performance.now();
        disconnects++;
        log.error({ server: s.type === 'disconnect' ? s.server : undefined, last_seq: lastSeq }, 'gateway: NATS connection lost; streams paused');
      } else if (s.type === 'reconnect') {
        connected = true;
        void resume();
      }
    }
  })();

  new Gauge({
    name: 'strikebook_gateway_nats_connected',
    help: '1 while the gateway is connected to NATS, else 0 (streams paused).',
    registers: [opts.register],
    collect() {
      this.set(connected ? 1 : 0);
    },
  });
  new Counter({
    name: 'strikebook_gateway_nats_disconnects_total',
    help: 'Times the gateway lost its NATS connection.',
    registers: [opts.register],
    collect() {
      this.reset();
      this.inc(disconnects);
    },
  });
  new Counter({
    name: 'strikebook_gateway_nats_resumes_total',
    help: 'Times the gateway resumed the event stream after a reconnect.',
    registers: [opts.register],
    collect() {
      this.reset();
      this.inc(resumes);
    },
  });
  new Gauge({
    name: 'strikebook_gateway_stream_seq',
    help: 'Stream sequence of the last event message the gateway handled.',
    registers: [opts.register],
    collect() {
      this.set(lastSeq);
    },
  });

  return {
    state: () => ({ connected, lastSeq, disconnects, downMs: connected ? 0 : Math.round(performance.now() - downSince) }),
    async close() {
      closing = true;
      generation++;
      await messages?.close().catch(() => undefined);
      await nc.close();
    },
  };
}
