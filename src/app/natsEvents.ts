// The leader's publisher of durable batches to NATS JetStream (`NATS_URL`): the gateways of
// src/gateway/ serve the WebSocket streams from it, so the engine renders each event once per batch
// instead of once per subscriber.
//
// Rules (docs/operations.md, "Gateways and NATS"):
// - called from the hub after the sequencer's onCommitted: nothing is published before its batch is
//   durable;
// - publishing never holds up an acknowledgement: messages go to an in-memory backlog that a pump
//   sends in order (a window of messages in flight, each acknowledged by JetStream), so the engine
//   thread only renders and queues;
// - every message carries `Nats-Msg-Id` = `<last seq of its batch>:<subject>`: a publish retried
//   after a lost acknowledgement (NATS restarted, connection cut) is stored once (the stream's
//   duplicate window);
// - the backlog is bounded (`STRIKEBOOK_NATS_BACKLOG_MAX` messages). While it is full the events of
//   new batches are dropped and the seq range is remembered; once there is room again a message on
//   `<prefix>.control.gap` names the range first, and gateways resynchronize their books from the
//   leader's snapshot (the dropped trades and private events are gone: they are in the journal and
//   in the read methods). Counted in /metrics: strikebook_nats_backlog, _published_total,
//   _dropped_total, _gaps_total, _connected.
// - a standby renders the batches it follows too and keeps them (up to the backlog's bound): when
//   it takes over, the old leader may have died with part of them unpublished (its backlog, its
//   window in flight), so the new leader first republishes what the stream lacks. It reads the
//   stream's tail to see which of the old leader's messages are stored; the rest go out before its
//   own, with the old leader's ids (it renders the leader's batches as they were written: the
//   journal's tx), so anything stored meanwhile is still stored once. Counted in
//   strikebook_nats_republished_total.
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { StreamHub } from '../api/ws/hub.ts';
import { StreamEvents, type EventMessage } from '../api/ws/streamEvents.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { Config } from './config.ts';
import { startTsWorker } from '../journal/tsWorker.ts';

export interface NatsEventsOptions {
  url: string;
  /** JetStream stream name; created with subjects `<prefix>.>` when missing. */
  stream: string;
  prefix: string;
  /** Messages the backlog may hold; past it new batches' events are dropped (a gap). */
  backlogMax: number;
  /** How long the stream keeps messages, seconds (how far back a gateway or consumer can resume). */
  maxAgeSec: number;
  log: Logger;
}

export interface NatsEventStats {
  backlog: number;
  published: number;
  /** messages of the old leader's batches published again after a takeover */
  republished: number;
  dropped: number;
  gaps: number;
  connected: boolean;
}

interface Pending {
  subject: string;
  data: string;
  id: string;
}

/** A batch a standby followed, rendered: published by the new leader if the old one had not. */
interface FollowedBatch {
  msgs: EventMessage[];
  last: number;
}

/**
 * The NATS client packages, loaded when first used rather than at the module's top: a server or
 * gateway without NATS never loads them (with pg, ~50 ms of every start: issue 36, restart to
 * serving). The module loader caches them after the first call.
 */
export const natsClient = () => import('@nats-io/transport-node');
export const jetStreamApi = () => import('@nats-io/jetstream');
type JetStreamApi = Awaited<ReturnType<typeof jetStreamApi>>;

/** Messages sent before their acknowledgements are awaited (in order on one connection). */
const WINDOW = 256;
/** Pause before a failed window is sent again (its stored messages are deduplicated). */
const RETRY_MS = 250;
/** JetStream duplicate window: longer than any retry of one message can take. */
const DUPLICATE_WINDOW_S = 120;
/**
 * Stored messages a new leader reads back from the stream's end to see which of the old leader's
 * it has. The old leader stores in order but for its last window in flight (a failed publish is
 * sent again with those after it), so everything before the last 2 windows is stored.
 */
const TAIL_CHECKED = 2 * WINDOW;
/** Messages read back from the stream at once. */
const TAIL_READ_PARALLEL = 64;

export class NatsEventPublisher {
  private nc: NatsConnection | null = null;
  private js: JetStreamClient | null = null;
  private readonly backlog: Pending[] = [];
  /** Index of the first message not yet acknowledged (the backlog is compacted now and then). */
  private head = 0;
  private pumping = false;
  private closed = false;
  private streamReady = false;
  private gap: { from: number; to: number } | null = null;
  private stats = { published: 0, republished: 0, dropped: 0, gaps: 0 };
  /** While a standby: the batches followed, oldest first, holding at most backlogMax messages. */
  private followed: FollowedBatch[] = [];
  private followedMessages = 0;
  /** Set once this process publishes as the leader; the followed batches are checked first. */
  private leading = false;
  private republishDue = false;
  private connected = false;
  private wake: (() => void) | null = null;

  constructor(private readonly opts: NatsEventsOptions) {}

  /** Connects in the background (a server started with NATS down keeps running and queues). */
  start(): void {
    void this.run();
  }

  private async run(): Promise<void> {
    // first connection: tried until it succeeds or the server closes (the client's own
    // waitOnFirstConnect could not be stopped by close); later reconnects are the client's
    let jetstream: JetStreamApi['jetstream'] | null = null;
    for (let attempt = 0; this.nc === null; attempt++) {
      if (this.closed) return;
      try {
        // both client packages are loaded before the connection, so that nothing awaits between
        // connecting and `js` being set below
        const [{ connect }, api] = await Promise.all([natsClient(), jetStreamApi()]);
        jetstream = api.jetstream;
        this.nc = await connect({ servers: this.opts.url, name: 'strikebook-leader', maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 });
      } catch (err) {
        if (attempt === 0) this.opts.log.warn({ err, url: this.opts.url }, 'NATS not reachable; events wait in the backlog');
        await sleep(500);
      }
    }
    if (this.closed) {
      await this.nc.close();
      return;
    }
    this.connected = true;
    this.js = jetstream!(this.nc, { timeout: 2000 });
    this.opts.log.info({ url: this.opts.url, stream: this.opts.stream }, 'publishing events to NATS JetStream');
    void (async () => {
      for await (const st of this.nc!.status()) {
        if (st.type === 'disconnect') this.connected = false;
        else if (st.type === 'reconnect') {
          this.connected = true;
          // a restarted server without its storage has no stream: make sure again
          this.streamReady = false;
          this.kick();
        }
      }
    })();
    this.kick();
  }

  private async ensureStream(): Promise<void> {
    if (this.streamReady) return;
    await ensureEventStream(this.nc!, this.opts.stream, this.opts.prefix, this.opts.maxAgeSec);
    this.streamReady = true;
  }

  get counts(): NatsEventStats {
    return { backlog: this.backlog.length - this.head, ...this.stats, connected: this.connected };
  }

  /** Keeps the messages of a batch a standby followed, for a takeover (see the header). */
  retain(msgs: EventMessage[], lastSeq: number): void {
    if (this.closed || this.leading || msgs.length === 0) return;
    this.followed.push({ msgs, last: lastSeq });
    this.followedMessages += msgs.length;
    let drop = 0;
    while (this.followedMessages > this.opts.backlogMax && drop < this.followed.length - 1) this.followedMessages -= this.followed[drop++]!.msgs.length;
    if (drop > 0) this.followed.splice(0, drop);
  }

  /** This process is the leader now: what the old one left unpublished goes out before its own. */
  promote(): void {
    if (this.leading) return;
    this.leading = true;
    this.republishDue = this.followed.length > 0;
    this.kick();
  }

  /** Queues one durable batch's messages (engine thread; never waits). */
  enqueue(msgs: EventMessage[], firstSeq: number, lastSeq: number): void {
    if (this.closed || msgs.length === 0) return;
    // a batch of its own: this process leads (promote() is also sent, this covers its absence)
    this.promote();
    const size = this.backlog.length - this.head;
    if (this.gap !== null || size + msgs.length > this.opts.backlogMax) {
      if (size + msgs.length + 1 > this.opts.backlogMax) {
        if (this.gap === null) {
          this.gap = { from: firstSeq, to: lastSeq };
          this.stats.gaps++;
          this.opts.log.warn({ backlog: size, seq: firstSeq }, 'NATS event backlog full; dropping events (gap)');
        } else this.gap.to = lastSeq;
        this.stats.dropped += msgs.length;
        return;
      }
      // room again: the gap is announced before anything after it
      this.announceGap();
    }
    for (const m of msgs) this.backlog.push({ subject: m.subject, data: m.data, id: `${lastSeq}:${m.subject}` });
    this.kick();
  }

  private announceGap(): void {
    const g = this.gap;
    if (g === null) return;
    this.backlog.push({ subject: `${this.opts.prefix}.control.gap`, data: JSON.stringify({ from_seq: g.from, to_seq: g.to }), id: `gap:${g.from}-${g.to}` });
    this.gap = null;
  }

  private kick(): void {
    if (this.wake) {
      const w = this.wake;
      this.wake = null;
      w();
    }
    if (!this.pumping && this.js !== null) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (!this.closed) {
        if (this.head >= this.backlog.length && !this.republishDue) {
          this.backlog.length = 0;
          this.head = 0;
          // drained with a gap pending: announced now, not only with the next batch
          if (this.gap === null) return;
          this.announceGap();
        }
        if (!this.connected) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        try {
          await this.ensureStream();
        } catch (err) {
          this.opts.log.warn({ err }, 'NATS stream not available; retrying');
          await sleep(RETRY_MS);
          continue;
        }
        if (this.republishDue) {
          try {
            await this.republish();
          } catch (err) {
            this.opts.log.warn({ err }, 'NATS: reading the stream back after the takeover failed; retrying');
            await sleep(RETRY_MS);
          }
          continue;
        }
        const end = Math.min(this.backlog.length, this.head + WINDOW);
        const sent: Array<Promise<unknown>> = [];
        for (let i = this.head; i < end; i++) {
          const m = this.backlog[i]!;
          sent.push(this.js!.publish(m.subject, m.data, { msgID: m.id, timeout: 2000 }));
        }
        const results = await Promise.allSettled(sent);
        const firstFailed = results.findIndex((r) => r.status === 'rejected');
        const ok = firstFailed === -1 ? results.length : firstFailed;
        // a message after a failed one may be stored already: it is sent again with its id, and
        // the stream keeps one copy
        this.stats.published += ok;
        this.head += ok;
        if (this.head > 4096 && this.head * 2 > this.backlog.length) {
          this.backlog.splice(0, this.head);
          this.head = 0;
        }
        if (firstFailed !== -1) {
          const reason = (results[firstFailed] as PromiseRejectedResult).reason as unknown;
          this.opts.log.warn({ err: reason, backlog: this.backlog.length - this.head }, 'NATS publish failed; retrying');
          this.streamReady = false;
          await sleep(RETRY_MS);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /**
   * After a takeover: puts the followed batches' messages the stream lacks at the front of the
   * backlog. Read back: the stream's last TAIL_CHECKED messages. A followed batch older than the
   * oldest batch among them is stored whole (and may have expired since); one that ends there or
   * later is published but for the messages found. An empty stream (new, or its storage lost)
   * gets every followed batch.
   */
  private async republish(): Promise<void> {
    const stream = this.opts.stream;
    const jsm = await (await jetStreamApi()).jetstreamManager(this.nc!, { timeout: 2000 });
    const state = (await jsm.streams.info(stream)).state;
    const from = Math.max(state.first_seq, state.last_seq - TAIL_CHECKED + 1);
    const stored = new Set<string>();
    let oldest = Number.POSITIVE_INFINITY;
    for (let s = from; state.messages > 0 && s <= state.last_seq; s += TAIL_READ_PARALLEL) {
      const seqs = Array.from({ length: Math.min(TAIL_READ_PARALLEL, state.last_seq - s + 1) }, (_, i) => s + i);
      // a message deleted meanwhile (max_age) reads as missing: it cannot be one of the last batches
      const got = await Promise.all(seqs.map((seq) => jsm.streams.getMessage(stream, { seq }).catch(() => null)));
      for (const m of got) {
        const id = m?.header.get('Nats-Msg-Id');
        if (!id) continue;
        stored.add(id);
        const batch = Number(id.slice(0, id.indexOf(':')));
        if (Number.isSafeInteger(batch) && batch < oldest) oldest = batch;
      }
    }
    // nothing of a batch stored (an empty stream): every followed batch goes out
    if (oldest === Number.POSITIVE_INFINITY) oldest = 0;
    // the whole stream was read: the oldest batch in it may be partly stored too
    const whole = from === state.first_seq;
    const missing: Pending[] = [];
    for (const b of this.followed) {
      if (b.last < oldest || (b.last === oldest && !whole)) continue;
      for (const m of b.msgs) {
        const id = `${b.last}:${m.subject}`;
        if (!stored.has(id)) missing.push({ subject: m.subject, data: m.data, id });
      }
    }
    const after = this.backlog.splice(this.head);
    for (const m of missing) this.backlog.push(m);
    for (const m of after) this.backlog.push(m);
    this.stats.republished += missing.length;
    this.republishDue = false;
    this.followed = [];
    this.followedMessages = 0;
    if (missing.length > 0) this.opts.log.info({ messages: missing.length, checked: stored.size }, 'NATS: republishing what the old leader left unpublished');
  }

  /** Waits (up to `ms`) for the backlog to drain, then closes the connection. */
  async close(ms = 2000): Promise<void> {
    const until = performance.now() + ms;
    while (this.connected && this.head < this.backlog.length && performance.now() < until) await sleep(20);
    this.closed = true;
    this.kick();
    // the backlog was given its chance above; close() (not drain()) also ends a reconnecting connection
    await this.nc?.close().catch(() => undefined);
  }
}

/** Creates the event stream (subjects `<prefix>.>`, file storage) unless it exists. */
export async function ensureEventStream(nc: NatsConnection, stream: string, prefix: string, maxAgeSec: number): Promise<void> {
  const { jetstreamManager, StorageType } = await jetStreamApi();
  const jsm = await jetstreamManager(nc, { timeout: 2000 });
  try {
    await jsm.streams.info(stream);
  } catch {
    await jsm.streams.add({
      name: stream,
      subjects: [`${prefix}.>`],
      storage: StorageType.File,
      max_age: maxAgeSec * 1e9,
      duplicate_window: Math.min(DUPLICATE_WINDOW_S, maxAgeSec) * 1e9,
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The running publisher as the engine thread sees it. */
export interface NatsEvents {
  /** As last reported by the publisher's thread (a few times a second). */
  readonly counts: NatsEventStats;
  /** This standby took over (its sequencer promoted): what the old leader left unpublished goes first. */
  promoted(): void;
  /** Gives the backlog up to `ms` to drain, then closes the connection and the thread. */
  close(ms?: number): Promise<void>;
}

/**
 * With `NATS_URL` set, publishes every durable batch the hub sees (rendered on the engine thread,
 * published by a thread of its own: src/app/natsEventsWorker.ts); null (nothing changes) without.
 */
export function startNatsEvents(config: Config, log: Logger, ex: Exchange, hub: StreamHub, isFollowing: () => boolean = () => false): NatsEvents | null {
  if (!config.natsUrl) return null;
  const events = new StreamEvents(ex, config.natsSubjectPrefix ?? 'strikebook');
  const worker = startTsWorker(new URL('./natsEventsWorker.ts', import.meta.url), {
    url: config.natsUrl,
    stream: config.natsStream ?? 'STRIKEBOOK',
    prefix: events.prefix,
    backlogMax: config.natsBacklogMax ?? 100_000,
    maxAgeSec: config.natsMaxAgeSec ?? 3600,
    logLevel: config.logLevel,
  });
  let counts: NatsEventStats = { backlog: 0, published: 0, republished: 0, dropped: 0, gaps: 0, connected: false };
  let closed: (() => void) | null = null;
  worker.on('message', (m: { stats?: NatsEventStats; closed?: boolean }) => {
    if (m.stats) counts = m.stats;
    if (m.closed) closed?.();
  });
  worker.on('error', (err) => log.error({ err }, 'NATS event thread failed; events are not published'));
  hub.onBatch = (batch, cmds) => {
    if (cmds.length === 0) return null;
    // rendered on a standby too (its followed batches, the leader's as written): the book state
    // the next change is diffed against stays current, so the first change it publishes after a
    // takeover chains on, and the publishing thread keeps them in case the old leader died before
    // publishing them. Rendered when the batch is sealed (the state is then the batch's own),
    // handed to the publishing thread only once it is durable.
    const msgs = events.render(batch);
    if (msgs.length === 0) return null;
    const first = cmds[0]!.seq;
    const last = cmds[cmds.length - 1]!.seq;
    const followed = isFollowing();
    return () => worker.postMessage({ batch: { msgs, first, last, followed } });
  };
  let closing: Promise<void> | null = null;
  return {
    get counts() {
      return counts;
    },
    promoted() {
      worker.postMessage({ promote: true });
    },
    close(ms = 2000) {
      closing ??= (async () => {
        hub.onBatch = null;
        const done = new Promise<void>((resolve) => (closed = resolve));
        worker.postMessage({ close: ms });
        await Promise.race([done, new Promise((r) => setTimeout(r, ms + 3000))]);
        await worker.terminate();
      })();
      return closing;
    },
  };
}
