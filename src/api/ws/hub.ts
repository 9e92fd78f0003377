// The stream hub: subscriptions and the notifications of API.md section 6.
//
// Nothing is published before it is durable, and nothing shows state later than what is durable.
// The engine observer only collects which orders and trades changed while commands were applied.
// When the sequencer seals a batch (`onSealed`: the live state is then exactly the state after the
// batch's last command) the hub renders the `raw` channels for that batch and adds it to the
// conflation window; the round is held and written when the batch is durable (`onCommitted`, called
// for the sealed batches in order). The 100 ms tick publishes the window to the `100ms`/`agg2`
// channels: at once when nothing is in flight; rendered now and held behind the last sealed batch
// when batches are being written but none is open; and at the next seal while commands are applied
// that no batch holds yet. (It used to wait until the sequencer was idle, which under a steady order
// flow took 90-350 ms; and raw rounds rendered at commit could show a later batch's changes, not yet
// durable.) Books are not derived from events but diffed: each book channel cadence
// keeps the L2 book it last published per instrument and compares it with the engine's book, so a
// client applying snapshot + changes always rebuilds the exact book, `prev_change_id` chaining every
// message to the one before it.
//
// Every message is serialized and framed once and the same bytes go to every subscriber of its
// channel (private channels: to every connection of that user on that channel). Connections with the
// same set of channels form a group; a publish round joins a group's frames once into one Buffer and
// writes that to each member: one write per connection per round and no allocation per subscriber
// (1,000 connections on the same 20 channels were 20,000 stream writes and buffered-chunk records a
// round, now 1,000 writes of one shared Buffer). A released round is written `WRITES_PER_TURN`
// connections per piece, each further piece in a turn of its own, so no piece holds the engine thread
// long (issue 36: none over 2 ms); a connection still owed a round gets it before its own answers
// (`flushOwed`), so the slicing reorders nothing on any one connection.
import type { Services } from '../../app/services.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Sequenced } from '../../engine/commands.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import { candleAt } from '../methods/candles.ts';
import { quoteOf, tickerOf } from '../methods/marketData.ts';
import { expirationEstimate, lockedIndices } from '../methods/market.ts';
import type { BatchTouched } from './streamEvents.ts';
import { isPrivate, parseChannel, type Cadence, type ChannelSpec } from './channels.ts';
import { isParitySpec, parityInitial, type ParityTopic } from './parityChannels.ts';
import { notification, textFrame, type Subscriber } from './frames.ts';
import { PRICE_INDICES, bookChangeId, depthView, diff, levels, quoteKey, snapshot } from './bookViews.ts';
import { marketInstrument, tickerFor } from '../methods/comboMarketData.ts';
import { TARGETED, WRITES_PER_TURN, emptyChanges, type BookState, type Changes, type Group, type HeldRound, type HubOptions, type Pending, type RoundTimes, type Topic } from './hubState.ts';
import { renderRound } from './roundRender.ts';
import { isRfqSpec, rfqInitial, type RfqTopic } from '../../blockrfq/channels.ts';

// moved to frames.ts and hubState.ts; importers of hub.ts keep them
export { frameOf, textFrame, textFrameOf, type Subscriber } from './frames.ts';
export type { HubOptions, RoundTimes } from './hubState.ts';

export class StreamHub {
  private readonly topics = new Map<string, Topic>();
  /** Book state per cadence and instrument id. */
  private readonly books: Record<Cadence, Map<number, BookState>> = { raw: new Map(), agg: new Map() };
  private current = emptyChanges();
  private window = emptyChanges();
  private aggDue = false;
  /** wall time the tick waiting for a pending batch fired (its round's `due`) */
  private aggDueAt = 0;
  private readonly timer: NodeJS.Timeout;
  private nextOrd = 0;
  /** each subscriber's topics, and the group they put it in */
  private readonly subTopics = new Map<Subscriber, Set<Topic>>();
  private readonly groupOf = new Map<Subscriber, Group>();
  private readonly groups = new Map<string, Group>();
  /** subscribers whose topics changed since their group was computed (regrouped before a round) */
  private readonly regroup = new Set<Subscriber>();
  /** topics with frames in the current round, in the order they were published */
  private readonly roundTopics: Topic[] = [];
  /** writes of earlier rounds still to be made, oldest first */
  private readonly outbox: Pending[] = [];
  /** rounds of sealed batches not yet durable, in seal order (the sequencer commits in that order) */
  private readonly sealed: HeldRound[] = [];
  private draining: NodeJS.Immediate | null = null;
  /** Instruments already announced `settled` (a repeated settle command announces nothing). */
  private readonly settledSeen = new Set<number>();
  /** platform_state: the locked indices last published, as text */
  private lockedLast = '';
  /** Observer of publish rounds (benchmarks). */
  onRound: ((cadence: Cadence, times: RoundTimes) => void) | null = null;
  /** Called as a round is rendered, while the live state is the one it shows (a round is written
   *  later, once its batch is durable, and the state may have moved on by then); what it returns
   *  comes back in that round's `RoundTimes.rendered` (benchmarks: which change ids it carries). */
  onRender: ((cadence: Cadence) => unknown) | null = null;
  /** Receives what each batch touched when it is sealed, before the hub's own rendering (the NATS
   *  event publisher, src/app/natsEvents.ts: once per batch, whatever the subscribers). It renders
   *  then, from the state the batch left; what it returns (null: nothing) is run once the batch is
   *  durable. Returned, not called: a wrapper that drops it stops the publishing. */
  onBatch: ((batch: BatchTouched, cmds: Sequenced[]) => (() => void) | null) | null = null;
  private deliveries = 0;
  /** CPU time (µs) of the writes made after their round's first turn; counted only while `onRound` is set */
  queuedWriteCpu = 0;
  /** Times each piece of writes made in a turn of its own (src/app/services.ts: engine-work metric
   *  `stream_fanout`; the first piece runs in `onCommitted`, timed there). */
  onSlice: ((seconds: number) => void) | null = null;
  /** Observer of every piece of writes (tests): how many sockets it wrote. */
  onPiece: ((writes: number) => void) | null = null;

  constructor(
    private readonly s: Services,
    opts: HubOptions = { tickMs: 100 },
  ) {
    s.ex.observer = {
      order: (o) => {
        this.current.orders.add(o);
        this.current.users.add(o.userId);
      },
      trade: (t) => {
        this.current.trades.push(t);
      },
      mmpTrigger: (e) => {
        this.current.mmp.push(e);
      },
      // a copy: the request changes again in later commands of the batch
      blockRequest: (r) => {
        this.current.blocks.push({ ...r, maker: { ...r.maker }, taker: { ...r.taker } });
      },
    };
    this.timer = setInterval(() => this.tick(), opts.tickMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    if (this.draining !== null) clearImmediate(this.draining);
    this.outbox.length = 0;
    if (this.s.ex.observer !== null) this.s.ex.observer = null;
  }

  // ---- subscriptions ---------------------------------------------------------------------------

  parse(channel: string): ChannelSpec | null {
    return parseChannel(channel, (name) => this.s.ex.instruments.has(name), { parity: true, rfq: true, combo: (name) => this.s.ex.combos.byId.has(name) });
  }

  /**
   * Adds a subscription (the spec already checked by the caller) and returns the initial message
   * for this subscriber (book snapshot), if any. Must run with no batch pending (inside seq.read).
   */
  subscribe(sub: Subscriber, channel: string, spec: ChannelSpec, userId: number | null): Buffer | Buffer[] | null {
    // the answer (and its snapshot) goes after every message queued for this connection before it
    this.flushOwed(sub);
    const key = isPrivate(spec) ? `${userId}\u0000${channel}` : channel;
    let topic = this.topics.get(key);
    if (!topic) {
      topic = { key, ord: this.nextOrd++, channel, spec, userId: isPrivate(spec) ? userId : null, subs: new Set(), groups: new Set(), frames: [] };
      this.topics.set(key, topic);
      if (spec.k === 'book' || spec.k === 'book_depth') this.bookState(spec.cadence, marketInstrument(this.s.ex, spec.instrument)!).topics++;
    }
    topic.subs.add(sub);
    let mine = this.subTopics.get(sub);
    if (!mine) this.subTopics.set(sub, (mine = new Set()));
    mine.add(topic);
    this.regroup.add(sub);
    if (spec.k === 'book') return notification(channel, JSON.stringify(snapshot(this.s.ex, this.books[spec.cadence].get(this.instId(spec.instrument))!)));
    if (spec.k === 'book_depth') return notification(channel, JSON.stringify(depthView(this.s.ex, this.books[spec.cadence].get(this.instId(spec.instrument))!, spec.depth, spec.group)));
    if (isParitySpec(spec)) return parityInitial(this.s.ex, topic as ParityTopic).map((d) => notification(channel, d));
    if (isRfqSpec(spec)) return rfqInitial(this.s.ex, topic as RfqTopic).map((d) => notification(channel, d));
    // the current ticker, best bid/ask and candle of the latest trade, so a client has a value at
    // once (a screen of a hundred tickers needs no hundred requests, each costing rate-limit credits)
    if (spec.k === 'ticker') {
      const data = JSON.stringify(tickerFor(this.s.ex, marketInstrument(this.s.ex, spec.instrument)!, tickerOf));
      topic.last ??= data;
      return notification(channel, data);
    }
    if (spec.k === 'quote') {
      const q = quoteOf(this.s.ex, this.s.ex.instruments.get(spec.instrument)!);
      topic.last ??= quoteKey(q);
      return notification(channel, JSON.stringify(q));
    }
    if (spec.k === 'platform_state') {
      // the state of every index at once: one message each, as when one changes
      const now = lockedIndices(this.s.ex);
      this.lockedLast = now.join(',');
      const locked = new Set(now);
      return PRICE_INDICES.map((n) => notification(channel, JSON.stringify({ price_index: n, locked: locked.has(n) })));
    }
    if (spec.k === 'expiration_price') {
      const est = expirationEstimate(this.s.ex, spec.currency);
      return est ? notification(channel, JSON.stringify(est)) : null;
    }
    if (spec.k === 'chart') {
      const inst = this.s.ex.instruments.get(spec.instrument)!;
      const trades = this.s.ex.markets.get(inst.id)!.trades;
      const last = trades[trades.length - 1];
      const candle = last ? candleAt(this.s.ex, inst, Math.floor(last.ts / spec.widthMs) * spec.widthMs, spec.widthMs) : null;
      return candle ? notification(channel, JSON.stringify(candle)) : null;
    }
    return null;
  }

  unsubscribe(sub: Subscriber, channel: string, spec: ChannelSpec, userId: number | null): void {
    // nothing of the channel may follow the answer: what is queued for this connection goes first
    this.flushOwed(sub);
    const key = isPrivate(spec) ? `${userId}\u0000${channel}` : channel;
    const topic = this.topics.get(key);
    if (!topic || !topic.subs.delete(sub)) return;
    const mine = this.subTopics.get(sub)!;
    mine.delete(topic);
    if (mine.size === 0) this.subTopics.delete(sub);
    this.regroup.add(sub);
    if (topic.subs.size > 0) return;
    this.topics.delete(key);
    if (spec.k === 'book' || spec.k === 'book_depth') {
      const id = this.instId(spec.instrument);
      const st = this.books[spec.cadence].get(id);
      if (st && --st.topics === 0) this.books[spec.cadence].delete(id);
    }
  }

  /** Number of distinct channels with subscribers (for tests and metrics). */
  get topicCount(): number {
    return this.topics.size;
  }

  /** Number of distinct channel sets among subscribers (for tests). */
  get groupCount(): number {
    this.regroupChanged();
    return this.groups.size;
  }

  /** Moves every subscriber whose topics changed to the group of its new topic set. Run before a
   *  round rather than on each subscribe, so a subscribe of 500 channels computes one key, not 500. */
  private regroupChanged(): void {
    for (const sub of this.regroup) {
      const old = this.groupOf.get(sub);
      if (old) {
        old.subs.delete(sub);
        if (old.subs.size === 0) {
          this.groups.delete(old.key);
          for (const t of old.topics) t.groups.delete(old);
        }
        this.groupOf.delete(sub);
      }
      const mine = this.subTopics.get(sub);
      if (!mine) continue;
      const topics = [...mine].sort((a, b) => a.ord - b.ord);
      const key = topics.map((t) => t.ord).join(',');
      let g = this.groups.get(key);
      if (!g) {
        g = { key, topics, subs: new Set(), round: [] };
        this.groups.set(key, g);
        for (const t of topics) t.groups.add(g);
      }
      g.subs.add(sub);
      this.groupOf.set(sub, g);
    }
    this.regroup.clear();
  }

  private instId(name: string): number {
    return marketInstrument(this.s.ex, name)!.id;
  }

  private bookState(cadence: Cadence, inst: Instrument): BookState {
    let st = this.books[cadence].get(inst.id);
    if (!st) {
      st = { inst, changeId: bookChangeId(this.s.ex, inst), bids: levels(this.s.ex, inst, BUY), asks: levels(this.s.ex, inst, SELL), topics: 0 };
      this.books[cadence].set(inst.id, st);
    }
    return st;
  }

  // ---- publishing ------------------------------------------------------------------------------

  /** The sequencer's hook: the batch `cmds` is sealed; the live state is the state it left. */
  onSealed(cmds: Sequenced[]): void {
    const batch = this.current;
    this.current = emptyChanges();
    for (const c of cmds) {
      if (c.t === 'index' || c.t === 'set_vol') batch.currencies.add(c.currency);
      if (c.t === 'deposit' || c.t === 'withdraw' || c.t === 'wallet_withdraw' || c.t === 'wallet_cancel_withdrawal') batch.users.add(c.userId);
      if (c.t === 'transfer') {
        batch.users.add(c.from);
        batch.users.add(c.to);
      }
      if (!TARGETED.has(c.t)) batch.everyone = true;
      if (c.t === 'list') {
        for (const spec of c.instruments) {
          const inst = this.s.ex.instruments.get(spec.name);
          // listed by this command (a name listed before keeps its earlier creation time)
          if (!inst || inst.created !== c.ts) continue;
          batch.states.push({ inst, state: 'created', ts: c.ts }, { inst, state: 'started', ts: c.ts });
        }
      } else if (c.t === 'settle') {
        for (const inst of this.s.ex.instruments.values()) {
          if (inst.currency === c.currency && inst.expiry === c.expiry && inst.state === 'delivered' && !this.settledSeen.has(inst.id)) {
            this.settledSeen.add(inst.id);
            batch.states.push({ inst, state: 'settled', ts: c.ts });
          }
        }
      }
    }
    const held: HeldRound = { seq: cmds.length > 0 ? cmds[cmds.length - 1]!.seq : 0, raw: [], agg: [], post: null, rounds: [] };
    held.post = this.onBatch?.(batch, cmds) ?? null;
    if (this.topics.size > 0) this.publish('raw', batch, 0, held);
    const w = this.window;
    for (const t of batch.trades) w.trades.push(t);
    for (const o of batch.orders) w.orders.add(o);
    for (const u of batch.users) w.users.add(u);
    for (const c of batch.currencies) w.currencies.add(c);
    w.everyone ||= batch.everyone;
    if (this.aggDue) this.publishWindow(held);
    this.sealed.push(held);
  }

  /** The sequencer's hook: the batch `cmds` is durable; the rounds held for it are written now. */
  onCommitted(cmds: Sequenced[]): void {
    const durable = cmds.length > 0 ? cmds[cmds.length - 1]!.seq : 0;
    while (this.sealed.length > 0 && this.sealed[0]!.seq <= durable) this.release(this.sealed.shift()!);
  }

  private release(held: HeldRound): void {
    held.post?.();
    if (held.raw.length === 0 && held.agg.length === 0) return;
    const startedAt = this.onRound !== null ? performance.timeOrigin + performance.now() : 0;
    const cpu0 = this.onRound !== null ? process.cpuUsage() : null;
    for (const p of held.raw) this.enqueue(p);
    for (const p of held.agg) this.enqueue(p);
    this.drain(WRITES_PER_TURN);
    if (this.onRound !== null) {
      const end = performance.timeOrigin + performance.now();
      const cpu = process.cpuUsage(cpu0!);
      for (const r of held.rounds) this.onRound(r.cadence, { due: r.due || startedAt, start: startedAt, end, deliveries: r.deliveries, cpu: r.cpu + cpu.user + cpu.system, rendered: r.rendered });
    }
  }

  private tick(): void {
    if (this.s.seq.hasOpenBatch) {
      // commands are applied that no sealed batch holds: the window is rendered at that batch's seal
      if (!this.aggDue && this.onRound !== null) this.aggDueAt = performance.timeOrigin + performance.now();
      this.aggDue = true;
      return;
    }
    // batches in flight, none open: the live state is the last sealed batch's end; written once it
    // is durable. Nothing in flight: written now.
    this.publishWindow(this.sealed[this.sealed.length - 1] ?? null);
  }

  /** Publishes the conflation window to the `agg` channels (into `held`: written when it is durable). */
  private publishWindow(held: HeldRound | null): void {
    const dueAt = this.aggDue ? this.aggDueAt : 0;
    this.aggDue = false;
    const w = this.window;
    this.window = emptyChanges();
    if (this.topics.size > 0) this.publish('agg', w, dueAt, held);
  }

  /** Adds a message of `topic` to the round; it is framed here, once, and written in `flush`. */
  private deliver(topic: Topic, data: Buffer): void {
    if (topic.frames.length === 0) this.roundTopics.push(topic);
    topic.frames.push(textFrame(data));
    this.deliveries += topic.subs.size;
  }

  /** Writes the round: per group its frames joined once, the same Buffer to each member; an `agg`
   *  round `WRITES_PER_TURN` sockets a turn, after what earlier rounds still have to write. With
   *  `held`, the writes (to the members as of now) wait there for their batch to be durable. */
  private flush(cadence: Cadence, held: HeldRound | null): void {
    if (this.roundTopics.length === 0) return;
    const touched: Group[] = [];
    // topics were published in `this.topics` order, which is `ord` order: each group's frames come
    // out in its topics' order, as they did when each topic was written on its own
    for (const topic of this.roundTopics) {
      for (const g of topic.groups) {
        if (g.round.length === 0) touched.push(g);
        for (const f of topic.frames) g.round.push(f);
      }
      topic.frames = [];
    }
    this.roundTopics.length = 0;
    for (const g of touched) {
      const bytes = g.round.length === 1 ? g.round[0]! : Buffer.concat(g.round);
      g.round = [];
      // the members as of this round (one array per group, not an object per subscriber)
      const p: Pending = { bytes, subs: Array.from(g.subs), next: 0 };
      if (held === null) this.enqueue(p);
      else (cadence === 'raw' ? held.raw : held.agg).push(p);
    }
    if (held === null) this.drain(WRITES_PER_TURN);
  }

  /** Queues a round's writes behind the earlier ones; each member is owed one more write. */
  private enqueue(p: Pending): void {
    for (const sub of p.subs) sub.owed = (sub.owed ?? 0) + 1;
    this.outbox.push(p);
  }

  /**
   * Makes now every queued write owed to `sub`, oldest first: its own answer (or a subscribe's
   * snapshot) is about to be written and must follow them. The other connections' writes stay
   * queued; only the order among connections changes (`sub` is moved to the front of what is left).
   */
  flushOwed(sub: Subscriber): void {
    for (let k = 0; k < this.outbox.length && (sub.owed ?? 0) > 0; k++) {
      const p = this.outbox[k]!;
      const i = p.subs.indexOf(sub, p.next);
      if (i < 0) continue;
      p.subs[i] = p.subs[p.next]!;
      p.subs[p.next] = sub;
      p.next++;
      sub.owed!--;
      sub.sendFrame(p.bytes);
    }
  }

  /** Makes up to `limit` queued writes, oldest first; what is left is written in the next turns,
   *  `limit` a turn. */
  private drain(limit: number): void {
    let left = limit;
    while (this.outbox.length > 0 && left > 0) {
      const p = this.outbox[0]!;
      const end = Math.min(p.subs.length, p.next + left);
      for (let i = p.next; i < end; i++) {
        const sub = p.subs[i]!;
        sub.owed!--;
        sub.sendFrame(p.bytes);
      }
      left -= end - p.next;
      p.next = end;
      if (end === p.subs.length) this.outbox.shift();
    }
    if (left < limit) this.onPiece?.(limit - left);
    if (this.outbox.length === 0) {
      if (this.draining !== null) clearImmediate(this.draining);
      this.draining = null;
    } else if (this.draining === null) {
      this.draining = setImmediate(() => this.drainTurn());
    }
  }

  /** A further piece of queued writes, in a turn of its own. */
  private drainTurn(): void {
    this.draining = null;
    const started = this.onSlice !== null ? performance.now() : 0;
    const cpu0 = this.onRound !== null ? process.cpuUsage() : null;
    this.drain(WRITES_PER_TURN);
    if (cpu0 !== null) {
      const cpu = process.cpuUsage(cpu0);
      this.queuedWriteCpu += cpu.user + cpu.system;
    }
    if (this.onSlice !== null) this.onSlice((performance.now() - started) / 1000);
  }

  private publish(cadence: Cadence, ch: Changes, dueAt: number, held: HeldRound | null): void {
    this.deliveries = 0;
    const startedAt = this.onRound !== null ? performance.timeOrigin + performance.now() : 0;
    const cpu0 = this.onRound !== null ? process.cpuUsage() : null;
    const renderedTag = this.onRender?.(cadence);
    this.regroupChanged();
    const ex = this.s.ex;
    // book diffs, once per instrument and cadence
    const bookChanges = new Map<number, string>();
    for (const st of this.books[cadence].values()) {
      const changeId = bookChangeId(ex, st.inst);
      if (changeId === st.changeId) continue;
      const bids = levels(ex, st.inst, BUY);
      const asks = levels(ex, st.inst, SELL);
      const data = {
        type: 'change',
        timestamp: ex.now,
        instrument_name: st.inst.name,
        prev_change_id: st.changeId,
        change_id: changeId,
        bids: diff(st, st.bids, bids, true),
        asks: diff(st, st.asks, asks, false),
      };
      st.changeId = changeId;
      st.bids = bids;
      st.asks = asks;
      bookChanges.set(st.inst.id, JSON.stringify(data));
    }
    // platform_state: which indices became locked or unlocked since the last raw round
    let lockedNow: Set<string> | null = null;
    let lockedBefore = new Set<string>();
    if (cadence === 'raw') {
      const now = lockedIndices(ex);
      const key = now.join(',');
      if (key !== this.lockedLast) {
        lockedBefore = new Set(this.lockedLast === '' ? [] : this.lockedLast.split(','));
        lockedNow = new Set(now);
        this.lockedLast = key;
      }
    }
    renderRound(ex, cadence, ch, this.topics.values(), this.books[cadence], bookChanges, lockedNow, lockedBefore, (topic, data) => this.deliver(topic, data));
    this.flush(cadence, held);
    if (this.onRound !== null) {
      const cpu = process.cpuUsage(cpu0!);
      if (held !== null) held.rounds.push({ cadence, due: dueAt || startedAt, deliveries: this.deliveries, cpu: cpu.user + cpu.system, rendered: renderedTag });
      else this.onRound(cadence, { due: dueAt || startedAt, start: startedAt, end: performance.timeOrigin + performance.now(), deliveries: this.deliveries, cpu: cpu.user + cpu.system, rendered: renderedTag });
    }
  }
}
