// The streams a gateway serves (src/gateway/gateway.ts's header tells what each channel is made of):
// subscribe/unsubscribe here; the topics, their fan-out and the books mirrored from the leader in
// streamCore.ts; the handling of each event message from NATS (src/gateway/natsStream.ts), the
// 100 ms tick of the conflated channels, tickers and portfolios read from the leader in streamRouting.ts.
import type { Logger } from 'pino';
import { channelScope, isComboName, isPrivate, parseChannel, type ChannelSpec } from '../api/ws/channels.ts';
import { ERR } from '../domain/errors.ts';
import type { L2 } from './bookMirror.ts';
import { envelope, failure, type ClientConn } from './clientConn.ts';
import type { LeaderLocator } from './leaderLocator.ts';
import { FirstMessages } from './firstMessages.ts';
import { LeaderReads } from './leaderReads.ts';
import { subscriberOf, type WhoIs } from './credentials.ts';
import { FIRST_FROM_LEADER, quoteKey, volKey } from './channelData.ts';
import { streamCore } from './streamCore.ts';
import { startRouting } from './streamRouting.ts';

export interface StreamDeps {
  log: Logger;
  tickMs: number;
  maxSubs: number;
  /** The first token of the stream's subjects. */
  prefix: string;
  leader: LeaderLocator;
  /** How long a read from the leader may take before the leader is looked for, ms. */
  timeoutMs: number;
  /** Sends a request on the client's own upstream connection; resolves with the answer text. */
  upstreamCall(c: ClientConn, method: string, params: unknown): Promise<string>;
  /** Who the leader says a credential is, asked on the client's connection (src/gateway/credentials.ts). */
  whoIs: WhoIs;
  closing(): boolean;
}

export interface Streams {
  onMessage(subject: string, text: string): void;
  subscribe(c: ClientConn, id: unknown, params: Record<string, unknown>, priv: boolean): Promise<void>;
  unsubscribeOne(c: ClientConn, channel: string): boolean;
  /** Ends the private subscriptions made with the connection's login, and forgets its user. */
  dropPrivate(c: ClientConn): void;
  readonly books: number;
  readonly deliveries: number;
  close(): void;
}

export async function startStreams(deps: StreamDeps): Promise<Streams> {
  const { log, maxSubs, leader, whoIs } = deps;
  // the instruments known (for channel names), snapshots and tickers
  const reads = new LeaderReads(leader, deps.timeoutMs);
  const core = streamCore(log, reads);
  const { topics, mirrors, sync, mirrorOf } = core;
  const routing = startRouting(core, deps);

  const firsts = new FirstMessages(leader, log, deps.closing);
  const initialOf = (channels: string[]) => firsts.of(channels);

  const unsubscribeOne = (c: ClientConn, channel: string) => {
    const t = c.subs.get(channel);
    if (!t) return false;
    c.subs.delete(channel);
    c.credentials.delete(channel);
    t.subs.delete(c);
    if (t.subs.size === 0) {
      topics.delete(isPrivate(t.spec) ? `${t.userId}\u0000${channel}` : channel);
      if (t.spec.k === 'book' || t.spec.k === 'book_depth' || t.spec.k === 'quote') {
        const name = t.spec.instrument;
        if (![...topics.values()].some((x) => (x.spec.k === 'book' || x.spec.k === 'book_depth' || x.spec.k === 'quote') && x.spec.instrument === name)) mirrors.delete(name);
      }
    }
    return true;
  };
  const dropPrivate = (c: ClientConn) => {
    c.userId = null;
    for (const [ch, token] of [...c.credentials]) if (token === null) unsubscribeOne(c, ch);
  };

  const subscribe = async (c: ClientConn, id: unknown, params: Record<string, unknown>, priv: boolean): Promise<void> => {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0 || channels.some((x) => typeof x !== 'string')) return c.send(envelope(id, failure(ERR.INVALID_PARAMS, 'channels must be a non-empty array of strings', 'channels')));
    const who = await subscriberOf(c, params, priv, whoIs);
    if ('code' in who) return c.send(envelope(id, failure(who.code, who.reason)));
    const { user, token } = who;
    // combos too (issue 34): their book, ticker and trades channels come from the stream as the options'
    const parse = (n: string) => parseChannel(n, (i) => reads.known.has(i), { parity: true, rfq: true, combo: (i) => reads.combos.has(i) });
    const unknown = (channels as string[]).filter((n) => parse(n) === null);
    if (unknown.length > 0 && performance.now() - reads.knownAt > 5000) await reads.refreshKnown().catch(() => undefined);
    // a combo made a moment ago (its name not yet on the stream): the leader is asked
    else if (unknown.some((n) => n.split('.').some((part) => isComboName(part) && !reads.combos.has(part)))) await reads.refreshCombos().catch(() => undefined);
    // as Deribit and the leader: a channel not served is left out of the answer and the rest subscribe
    const specs: Array<[string, ChannelSpec]> = [];
    for (const n of channels as string[]) {
      const spec = c.subs.get(n)?.spec ?? parse(n);
      if (spec !== null) specs.push([n, spec]);
    }
    // books first (each may wait for a snapshot from the leader); the subscriptions below are then
    // made, answered and given their snapshots without a pause, so no change can reach a
    // subscriber before its snapshot
    for (const [, spec] of specs) {
      if (spec.k !== 'book' && spec.k !== 'book_depth' && spec.k !== 'quote') continue;
      const m = mirrorOf(spec.instrument);
      if (m.book === null) await sync(spec.instrument, m);
    }
    // first messages the leader sends on subscribe (current ticker, quote, candle, ...): asked of it
    // for the channels this request will add
    const firsts = await initialOf(specs.filter(([n, spec]) => FIRST_FROM_LEADER.has(spec.k) && !c.subs.has(n) && !('cadence' in spec && spec.cadence === 'raw' && user === null)).map(([n]) => n));
    const done: string[] = [];
    const after: string[] = [];
    for (const [n, spec] of specs) {
      if (c.subs.has(n)) {
        done.push(n);
        continue;
      }
      if (isPrivate(spec) && (!priv || user === null)) continue;
      // a credential whose scopes do not read trades and orders gets none of their channels (left
      // out of the answer, as the leader does: src/api/ws/sessionMethods.ts)
      if (isPrivate(spec) && channelScope(spec) === 'trade:read' && !who.tradeRead) continue;
      // raw intervals need an authenticated caller, as on the leader (silently left out)
      if ('cadence' in spec && spec.cadence === 'raw' && user === null) continue;
      if (c.subs.size >= maxSubs) continue;
      // a gap may have reset a book meanwhile: it is left out (the client can subscribe again)
      if ((spec.k === 'book' || spec.k === 'book_depth') && (mirrors.get(spec.instrument)?.book ?? null) === null) continue;
      const userId = isPrivate(spec) ? user : null;
      const key = userId !== null ? `${userId}\u0000${n}` : n;
      let t = topics.get(key);
      if (!t) topics.set(key, (t = { channel: n, spec, userId, subs: new Set() }));
      t.subs.add(c);
      c.subs.set(n, t);
      if (userId !== null) c.credentials.set(n, token);
      done.push(n);
      // a summary on the next tick, as the hub sends one to a new subscriber
      if (spec.k === 'user.portfolio') (t.due ??= new Set()).add(spec.currency ?? 'BTC').add(spec.currency ?? 'ETH');
      for (const data of firsts.get(n) ?? []) {
        if (spec.k === 'ticker') t.last ??= data;
        else if (spec.k === 'vol_index') t.last ??= volKey(data);
        else if (spec.k === 'incremental_ticker' && t.last === undefined) {
          // the snapshot is the ticker with its type: the topic diffs the next reads against it
          const { type: _type, ...ticker } = JSON.parse(data) as Record<string, unknown>;
          t.last = JSON.stringify(ticker);
        }
        else if (spec.k === 'quote') t.last ??= quoteKey(JSON.parse(data) as Record<string, unknown>);
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${data}}}`);
      }
      if (spec.k === 'book' || spec.k === 'book_depth') {
        const m = mirrors.get(spec.instrument)!;
        // the state of the cadence the subscriber follows, so its next change chains on to it
        const st: L2 = spec.cadence === 'raw' ? m.book! : m.agg!;
        const data = spec.k === 'book' ? st.snapshot(spec.instrument, Date.now()) : st.depthView(spec.instrument, spec.depth, Date.now(), spec.group, reads.ticks.get(spec.instrument));
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${JSON.stringify(data)}}}`);
      }
    }
    if (done.length === 0 && c.subs.size >= maxSubs) return c.send(envelope(id, failure(ERR.INVALID_ARGUMENTS, `at most ${maxSubs} subscriptions per connection`, 'channels')));
    c.send(envelope(id, `"result":${JSON.stringify(done)}`));
    for (const a of after) c.send(a);
  };
  await reads.refreshKnown();

  return {
    onMessage: routing.onMessage,
    subscribe,
    unsubscribeOne,
    dropPrivate,
    get books() {
      return mirrors.size;
    },
    get deliveries() {
      return core.deliveries;
    },
    close() {
      firsts.close();
      routing.close();
    },
  };
}
