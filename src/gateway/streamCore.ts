// What the parts of a gateway's streams share (streams.ts wires them): the topics and their
// subscribers, the fan-out that writes a topic's frames to them (corked per event-loop turn), and
// the books mirrored from the leader (snapshot, then the stream's changes; read again on a gap).
import type { Logger } from 'pino';
import { textFrame } from '../api/ws/hub.ts';
import { BookMirror, type BookSnapshot } from './bookMirror.ts';
import type { ClientConn, Topic } from './clientConn.ts';
import type { LeaderReads } from './leaderReads.ts';
import { notification } from './channelData.ts';

export interface StreamCore {
  log: Logger;
  /** The instruments known (for channel names), snapshots and tickers. */
  reads: LeaderReads;
  /** By channel; a private one's key is prefixed with its user id and a NUL. */
  topics: Map<string, Topic>;
  mirrors: Map<string, BookMirror>;
  readonly deliveries: number;
  deliver(topic: Topic, data: string): void;
  flush(): void;
  flushSoon(): void;
  sync(name: string, m: BookMirror): Promise<void>;
  mirrorOf(name: string): BookMirror;
  resync(name: string, m: BookMirror): void;
}

export function streamCore(log: Logger, reads: LeaderReads): StreamCore {
  const topics = new Map<string, Topic>();
  const mirrors = new Map<string, BookMirror>();
  let deliveries = 0;
  const leaderGet = (method: string, params: Record<string, string | number>) => reads.get(method, params);

  // ---- fan-out -------------------------------------------------------------------------------------
  const corked = new Set<ClientConn>();
  const deliver = (topic: Topic, data: string) => {
    const frame = textFrame(notification(topic.channel, data));
    for (const c of topic.subs) {
      if (!corked.has(c) && !c.closed) {
        corked.add(c);
        c.socket.cork();
      }
      c.sendFrame(frame);
      deliveries++;
    }
  };
  const flush = () => {
    for (const c of corked) if (!c.closed) c.socket.uncork();
    corked.clear();
  };
  // stream messages that arrive together (one batch is several subjects) leave in one write per
  // connection: uncorked once the event-loop turn is over, not after each message (a write per
  // message and connection cost the gateway and its clients ~4x the CPU per delivery)
  let flushDue = false;
  const flushSoon = () => {
    if (flushDue) return;
    flushDue = true;
    setImmediate(() => {
      flushDue = false;
      flush();
    });
  };

  // ---- books ---------------------------------------------------------------------------------------
  const syncing = new Map<string, Promise<void>>();
  const sync = (name: string, m: BookMirror): Promise<void> => {
    let p = syncing.get(name);
    if (p) return p;
    p = (async () => {
      for (let attempt = 0; ; attempt++) {
        const s = (await leaderGet('public/get_order_book', { instrument_name: name, depth: 10000 })) as BookSnapshot;
        if (m.install(s)) return;
        // the snapshot fell between a batch's changes: read again once the stream has caught up
        await new Promise((r) => setTimeout(r, Math.min(1000, 20 << Math.min(attempt, 6))));
      }
    })().finally(() => syncing.delete(name));
    syncing.set(name, p);
    return p;
  };
  const mirrorOf = (name: string): BookMirror => {
    let m = mirrors.get(name);
    if (!m) {
      m = new BookMirror();
      mirrors.set(name, m);
    }
    return m;
  };
  const resync = (name: string, m: BookMirror) => {
    m.reset();
    sync(name, m).then(
      () => {
        // raw subscribers start over from the new snapshot (conflated ones go on chaining from the
        // state they last got: the next tick diffs it against the new book)
        for (const t of topics.values()) {
          if (t.spec.k === 'book' && t.spec.cadence === 'raw' && t.spec.instrument === name && m.book !== null) deliver(t, JSON.stringify(m.book.snapshot(name, Date.now())));
        }
        flush();
      },
      (err: unknown) => log.error({ err, instrument: name }, 'book snapshot failed'),
    );
  };

  return {
    log,
    reads,
    topics,
    mirrors,
    get deliveries() {
      return deliveries;
    },
    deliver,
    flush,
    flushSoon,
    sync,
    mirrorOf,
    resync,
  };
}
