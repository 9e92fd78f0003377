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
// round, now 1,000 writes of one shared Buffer).
import type { Services } from '../../app/services.ts';
import type { CurrencyCode } from '../../domain/currency.ts';
import { priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { Sequenced } from '../../engine/commands.ts';
import type { MmpTriggerEvent } from '../../engine/mmp.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Order, Trade, User } from '../../engine/types.ts';
import type { TriggerOrder } from '../../engine/triggers.ts';

/** A regular or an untriggered/closed trigger order: user.orders.* shows both. */
type AnyOrder = Order | TriggerOrder;
import { accountSummary, renderPosition } from '../methods/account.ts';
import { candleAt, quoteOf, tickerOf } from '../methods/marketData.ts';
import { expirationEstimate, lockedIndices } from '../methods/market.ts';
import { coin, renderOrder, renderPublicTrade, renderUserTrade } from '../render.ts';
import type { BatchTouched } from './streamEvents.ts';
import { isPrivate, parseChannel, selects, type Cadence, type ChannelSpec } from './channels.ts';
import { groupLevels, isParitySpec, parityInitial, parityRound, type ParityTopic } from './parityChannels.ts';

/** A connection as the hub sees it. */
export interface Subscriber {
  readonly id: number;
  /** Queues a complete WebSocket frame on the connection (the connection enforces its buffer bound). */
  sendFrame(frame: Buffer): void;
}

interface Topic {
  key: string;
  /** creation order: a group's frames of a round go out in this order */
  ord: number;
  channel: string;
  spec: ChannelSpec;
  userId: number | null;
  subs: Set<Subscriber>;
  /** groups whose channel set holds this topic */
  groups: Set<Group>;
  /** the frames of the current publish round */
  frames: Buffer[];
  /** ticker: fingerprint of what was last published */
  last?: string;
}

/** Subscribers with exactly the same topics: every round sends each of them the same bytes. */
interface Group {
  key: string;
  topics: Topic[];
  subs: Set<Subscriber>;
  /** the frames of the current publish round, in topic order */
  round: Buffer[];
}

/** A round's bytes for one group, written to its members `WRITES_PER_TURN` sockets a turn. */
interface Pending {
  bytes: Buffer;
  subs: Subscriber[];
  next: number;
}

/**
 * Socket writes per event-loop turn. A write to a loopback socket costs ~10 µs of kernel time, so a
 * conflated round to 1,000 connections held the engine thread for 10-15 ms in one turn; written 200
 * a turn, orders and commits run between the slices (each ~2 ms). Raw rounds (after a commit) are
 * written at once: they are small and their order against the commands' answers matters.
 */
const WRITES_PER_TURN = 200;

/** A round rendered at a batch's seal, held until the batch is durable. */
interface HeldRound {
  /** the last seq of the batch it was rendered with (released when that is durable) */
  seq: number;
  /** the raw round's writes: made at once when released (their order against answers matters) */
  raw: Pending[];
  /** conflated rounds' writes: `WRITES_PER_TURN` a turn */
  agg: Pending[];
  /** what `onBatch` asked to run once the batch is durable (the NATS publish) */
  post: (() => void) | null;
  /** the rounds held here, reported to `onRound` when written */
  rounds: Array<{ cadence: Cadence; due: number; deliveries: number; cpu: number; rendered: unknown }>;
}

/** Times of one publish round (wall clock ms, performance.timeOrigin + performance.now()). */
export interface RoundTimes {
  /** when its content was due: the 100 ms tick that closed the window (agg), or the commit (raw) */
  due: number;
  /** when the round's writes started (after the batch it was rendered with became durable, if one
   *  was in flight or open) */
  start: number;
  /** when the round's first turn ended (its first `WRITES_PER_TURN` writes made; the rest follow in
   *  the next turns) */
  end: number;
  deliveries: number;
  /** CPU time of the process during the round, µs (user + system) */
  cpu: number;
  /** what `onRender` returned when the round was rendered */
  rendered: unknown;
}

interface BookState {
  inst: Instrument;
  changeId: number;
  bids: Map<number, number>;
  asks: Map<number, number>;
  topics: number;
}

/** What changed since the last publish of a cadence. */
interface Changes {
  trades: Trade[];
  orders: Set<AnyOrder>;
  users: Set<number>;
  /** currencies whose index or vol smile moved */
  currencies: Set<CurrencyCode>;
  /** a command of a kind that may move any account (settlement, ...): every portfolio is refreshed */
  everyone: boolean;
  /** instrument life-cycle events (`instrument.state.*`), in order */
  states: Array<{ inst: Instrument; state: 'created' | 'started' | 'settled'; ts: number }>;
  /** MMP triggers (`user.mmp_trigger.*`), in order */
  mmp: MmpTriggerEvent[];
}

/** Commands whose effect on accounts the observer and the cases in onCommitted fully cover. */
const TARGETED = new Set<string>([
  'place', 'cancel', 'cancel_all', 'cancel_orders', 'edit', 'liquidate', 'deposit', 'withdraw', 'index', 'set_vol', 'create_user',
  'issue_token', 'revoke_token', 'create_invite', 'revoke_invite', 'create_api_key', 'remove_api_key', 'update_api_key', 'publish_announcement', 'read_announcement', 'set_self_trading_config', 'set_disabled_trading_products', 'halt', 'list', 'expire_orders',
  'set_mmp_config', 'reset_mmp', 'mass_quote', 'cancel_quotes',
  // cancel-on-disconnect marks and flags (src/engine/cod.ts) move no account, order or trade
  'cod_account', 'cod_mark',
  // subaccounts move no money (a removed one's subscriptions find no user); a transfer moves its two accounts'
  'create_subaccount', 'rename_subaccount', 'subaccount_login', 'remove_subaccount', 'transfer',
  // the wallet (src/wallet/): a withdrawal or its cancel moves its owner's balance; addresses move no money
  // (an operator's completion, rejection or credit is untargeted: every portfolio is refreshed)
  'wallet_withdraw', 'wallet_cancel_withdrawal', 'wallet_new_address', 'wallet_add_addresses', 'address_book_add', 'address_book_update', 'address_book_remove',
  // credentials only (src/engine/userSecurity.ts)
  'change_password', 'set_user_disabled',
]);

function emptyChanges(): Changes {
  return { trades: [], orders: new Set(), users: new Set(), currencies: new Set(), everyone: false, states: [], mmp: [] };
}

export interface HubOptions {
  /** Conflation period of `100ms`/`agg2` channels. */
  tickMs: number;
}

function lotsAmount(inst: Instrument, lots: number): number {
  return Number(((lots * inst.lotScaled) / 1e8).toFixed(8));
}

/** What a quote notification says apart from its timestamp (sent only when this changes). */
function quoteKey(q: Record<string, unknown>): string {
  return `${q.best_bid_price}/${q.best_bid_amount}/${q.best_ask_price}/${q.best_ask_amount}`;
}

const PRICE_INDICES = ['btc_usd', 'eth_usd'];

function notification(channel: string, dataJson: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${dataJson}}}`);
}

/** A complete unmasked WebSocket text frame (RFC 6455 5.2) around `payload`: built once per message,
 *  written as is to every subscriber's socket. */
export function textFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const frame = frameOf(n);
  payload.copy(frame, frame.length - n);
  return frame;
}

/**
 * The same frame around a string's UTF-8 bytes, encoded straight into it: an answer is counted and
 * copied once, where `ws.send(string)` counted its bytes again, built a header and an options
 * object per message and left the string to be encoded by the socket's writev.
 */
export function textFrameOf(text: string): Buffer {
  const n = Buffer.byteLength(text);
  const frame = frameOf(n);
  frame.write(text, frame.length - n, n, 'utf8');
  return frame;
}

/** A text frame of `n` payload bytes with its header written, the payload (its end) left to fill. */
export function frameOf(n: number): Buffer {
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81;
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
    frame.writeUInt32BE(n >>> 0, 6);
  }
  return frame;
}

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
    return parseChannel(channel, (name) => this.s.ex.instruments.has(name), { parity: true });
  }

  /**
   * Adds a subscription (the spec already checked by the caller) and returns the initial message
   * for this subscriber (book snapshot), if any. Must run with no batch pending (inside seq.read).
   */
  subscribe(sub: Subscriber, channel: string, spec: ChannelSpec, userId: number | null): Buffer | Buffer[] | null {
    // the answer (and its snapshot) goes after every message queued before it
    this.drain(Infinity);
    const key = isPrivate(spec) ? `${userId}\u0000${channel}` : channel;
    let topic = this.topics.get(key);
    if (!topic) {
      topic = { key, ord: this.nextOrd++, channel, spec, userId: isPrivate(spec) ? userId : null, subs: new Set(), groups: new Set(), frames: [] };
      this.topics.set(key, topic);
      if (spec.k === 'book' || spec.k === 'book_depth') this.bookState(spec.cadence, this.s.ex.instruments.get(spec.instrument)!).topics++;
    }
    topic.subs.add(sub);
    let mine = this.subTopics.get(sub);
    if (!mine) this.subTopics.set(sub, (mine = new Set()));
    mine.add(topic);
    this.regroup.add(sub);
    if (spec.k === 'book') return notification(channel, JSON.stringify(this.snapshot(this.books[spec.cadence].get(this.instId(spec.instrument))!)));
    if (spec.k === 'book_depth') return notification(channel, JSON.stringify(this.depthView(this.books[spec.cadence].get(this.instId(spec.instrument))!, spec.depth, spec.group)));
    if (isParitySpec(spec)) return parityInitial(this.s.ex, topic as ParityTopic).map((d) => notification(channel, d));
    // the current ticker, best bid/ask and candle of the latest trade, so a client has a value at
    // once (a screen of a hundred tickers needs no hundred requests, each costing rate-limit credits)
    if (spec.k === 'ticker') {
      const data = JSON.stringify(this.ticker(this.s.ex.instruments.get(spec.instrument)!));
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
    // nothing of the channel may follow the answer
    this.drain(Infinity);
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
    return this.s.ex.instruments.get(name)!.id;
  }

  private bookState(cadence: Cadence, inst: Instrument): BookState {
    let st = this.books[cadence].get(inst.id);
    if (!st) {
      st = { inst, changeId: this.s.ex.markets.get(inst.id)!.changeId, bids: this.levels(inst, BUY), asks: this.levels(inst, SELL), topics: 0 };
      this.books[cadence].set(inst.id, st);
    }
    return st;
  }

  private levels(inst: Instrument, side: 0 | 1): Map<number, number> {
    return new Map(this.s.ex.books.get(inst.id)!.depth(side, Number.MAX_SAFE_INTEGER));
  }

  private side(st: BookState, m: Map<number, number>, desc: boolean): Array<[string, number, number]> {
    const prices = [...m.keys()].sort((a, b) => (desc ? b - a : a - b));
    return prices.map((p) => ['new', priceToNumber(p), lotsAmount(st.inst, m.get(p)!)]);
  }

  private snapshot(st: BookState) {
    return {
      type: 'snapshot',
      timestamp: this.s.ex.now,
      instrument_name: st.inst.name,
      change_id: st.changeId,
      bids: this.side(st, st.bids, true),
      asks: this.side(st, st.asks, false),
    };
  }

  private depthView(st: BookState, depth: number, group: number) {
    const top = (m: Map<number, number>, desc: boolean) => groupLevels(m, st.inst, group, desc, depth).map(([p, q]) => [priceToNumber(p), lotsAmount(st.inst, q)]);
    return { timestamp: this.s.ex.now, instrument_name: st.inst.name, change_id: st.changeId, bids: top(st.bids, true), asks: top(st.asks, false) };
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
    if (held.raw.length > 0) {
      for (const p of held.raw) this.outbox.push(p);
      this.drain(Infinity);
    }
    if (held.agg.length > 0) {
      for (const p of held.agg) this.outbox.push(p);
      this.drain(WRITES_PER_TURN);
    }
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
      (held === null ? this.outbox : cadence === 'raw' ? held.raw : held.agg).push({ bytes, subs: Array.from(g.subs), next: 0 });
    }
    if (held === null) this.drain(cadence === 'raw' ? Infinity : WRITES_PER_TURN);
  }

  /** Makes up to `limit` queued writes, oldest first; what is left is written in the next turns. */
  private drain(limit: number): void {
    let left = limit;
    while (this.outbox.length > 0 && left > 0) {
      const p = this.outbox[0]!;
      const end = Math.min(p.subs.length, p.next + left);
      for (let i = p.next; i < end; i++) p.subs[i]!.sendFrame(p.bytes);
      left -= end - p.next;
      p.next = end;
      if (end === p.subs.length) this.outbox.shift();
    }
    if (this.outbox.length === 0) {
      if (this.draining !== null) clearImmediate(this.draining);
      this.draining = null;
    } else if (this.draining === null) {
      this.draining = setImmediate(() => {
        this.draining = null;
        const cpu0 = this.onRound !== null ? process.cpuUsage() : null;
        this.drain(WRITES_PER_TURN);
        if (cpu0 !== null) {
          const cpu = process.cpuUsage(cpu0);
          this.queuedWriteCpu += cpu.user + cpu.system;
        }
      });
    }
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
      const m = ex.markets.get(st.inst.id)!;
      if (m.changeId === st.changeId) continue;
      const bids = this.levels(st.inst, BUY);
      const asks = this.levels(st.inst, SELL);
      const data = {
        type: 'change',
        timestamp: ex.now,
        instrument_name: st.inst.name,
        prev_change_id: st.changeId,
        change_id: m.changeId,
        bids: this.diff(st, st.bids, bids, true),
        asks: this.diff(st, st.asks, asks, false),
      };
      st.changeId = m.changeId;
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
    // per-round groupings
    const touchedInst = new Set<Instrument>();
    for (const t of ch.trades) touchedInst.add(t.inst);
    for (const o of ch.orders) touchedInst.add(o.inst);
    const ordersByUser = new Map<number, AnyOrder[]>();
    for (const o of ch.orders) {
      let a = ordersByUser.get(o.userId);
      if (!a) ordersByUser.set(o.userId, (a = []));
      a.push(o);
    }
    for (const a of ordersByUser.values()) a.sort((x, y) => x.id - y.id);
    const tradesByUser = new Map<number, Trade[]>();
    const addTrade = (u: number, t: Trade) => {
      let a = tradesByUser.get(u);
      if (!a) tradesByUser.set(u, (a = []));
      if (a[a.length - 1] !== t) a.push(t);
    };
    for (const t of ch.trades) {
      addTrade(t.makerOrder.userId, t);
      addTrade(t.takerOrder.userId, t);
    }
    const orderJson = new Map<AnyOrder, Record<string, unknown>>();
    const rendered = (o: AnyOrder) => {
      let r = orderJson.get(o);
      if (!r) orderJson.set(o, (r = renderOrder(o)));
      return r;
    };
    const publicTrades = new Map<Trade, Record<string, unknown>>();
    const pubTrade = (t: Trade) => {
      let r = publicTrades.get(t);
      if (!r) publicTrades.set(t, (r = renderPublicTrade(t)));
      return r;
    };

    for (const topic of this.topics.values()) {
      const spec = topic.spec;
      switch (spec.k) {
        case 'book': {
          if (spec.cadence !== cadence) break;
          const data = bookChanges.get(this.instId(spec.instrument));
          if (data !== undefined) this.deliver(topic, notification(topic.channel, data));
          break;
        }
        case 'book_depth': {
          if (spec.cadence !== cadence) break;
          const id = this.instId(spec.instrument);
          if (bookChanges.has(id)) this.deliver(topic, notification(topic.channel, JSON.stringify(this.depthView(this.books[cadence].get(id)!, spec.depth, spec.group))));
          break;
        }
        case 'trades': {
          if (spec.cadence !== cadence) break;
          const sel = ch.trades.filter((t) => selects(spec.sel, t.inst.name, t.inst.currency));
          if (sel.length > 0) this.deliver(topic, notification(topic.channel, JSON.stringify(sel.map(pubTrade))));
          break;
        }
        case 'ticker': {
          if (spec.cadence !== cadence) break;
          const inst = ex.instruments.get(spec.instrument)!;
          if (!touchedInst.has(inst) && !ch.currencies.has(inst.currency) && topic.last !== undefined) break;
          const data = JSON.stringify(this.ticker(inst));
          if (data === topic.last) break;
          topic.last = data;
          this.deliver(topic, notification(topic.channel, data));
          break;
        }
        case 'quote': {
          // sent after each durable batch that moved the best bid or ask (price or amount)
          if (cadence !== 'raw') break;
          const inst = ex.instruments.get(spec.instrument)!;
          if (!touchedInst.has(inst)) break;
          const q = quoteOf(ex, inst);
          const key = quoteKey(q);
          if (key === topic.last) break;
          topic.last = key;
          this.deliver(topic, notification(topic.channel, JSON.stringify(q)));
          break;
        }
        case 'chart': {
          // conflated: each candle the window's trades touched, oldest first, in its state now
          if (cadence !== 'agg') break;
          const ticks = new Set<number>();
          for (const t of ch.trades) if (t.inst.name === spec.instrument) ticks.add(Math.floor(t.ts / spec.widthMs) * spec.widthMs);
          if (ticks.size === 0) break;
          const inst = ex.instruments.get(spec.instrument)!;
          for (const tick of [...ticks].sort((a, b) => a - b)) {
            const candle = candleAt(ex, inst, tick, spec.widthMs);
            if (candle) this.deliver(topic, notification(topic.channel, JSON.stringify(candle)));
          }
          break;
        }
        case 'expiration_price': {
          if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
          const est = expirationEstimate(ex, spec.currency);
          if (est) this.deliver(topic, notification(topic.channel, JSON.stringify(est)));
          break;
        }
        case 'instrument_state': {
          if (cadence !== 'raw') break;
          for (const e of ch.states) {
            if (spec.currency !== null && e.inst.currency !== spec.currency) continue;
            this.deliver(topic, notification(topic.channel, JSON.stringify({ timestamp: e.ts, state: e.state, instrument_name: e.inst.name })));
          }
          break;
        }
        case 'platform_state': {
          if (cadence !== 'raw' || lockedNow === null) break;
          for (const n of PRICE_INDICES) {
            if (lockedBefore.has(n) !== lockedNow.has(n)) this.deliver(topic, notification(topic.channel, JSON.stringify({ price_index: n, locked: lockedNow.has(n) })));
          }
          break;
        }
        case 'index': {
          if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
          const idx = ex.index[spec.currency];
          if (idx) this.deliver(topic, notification(topic.channel, JSON.stringify({ index_name: spec.indexName, price: idx.price, timestamp: idx.ts })));
          break;
        }
        case 'markprice': {
          if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
          const marks: unknown[] = [];
          for (const m of ex.markets.values()) {
            if (m.inst.currency !== spec.currency || m.inst.state !== 'open') continue;
            marks.push({ instrument_name: m.inst.name, mark_price: coin(m.markCoin), iv: Number.isFinite(m.markIv) ? Number(m.markIv.toFixed(4)) : null, timestamp: ex.now });
          }
          this.deliver(topic, notification(topic.channel, JSON.stringify(marks)));
          break;
        }
        case 'user.orders': {
          if (spec.cadence !== cadence) break;
          const mine = (ordersByUser.get(topic.userId!) ?? []).filter((o) => selects(spec.sel, o.inst.name, o.inst.currency));
          if (mine.length === 0) break;
          // raw: one order object per notification; conflated: an array (Deribit)
          if (cadence === 'raw') for (const o of mine) this.deliver(topic, notification(topic.channel, JSON.stringify(rendered(o))));
          else this.deliver(topic, notification(topic.channel, JSON.stringify(mine.map(rendered))));
          break;
        }
        case 'user.trades': {
          if (spec.cadence !== cadence) break;
          const uid = topic.userId!;
          const mine = (tradesByUser.get(uid) ?? []).filter((t) => selects(spec.sel, t.inst.name, t.inst.currency));
          if (mine.length > 0) this.deliver(topic, notification(topic.channel, JSON.stringify(mine.map((t) => renderUserTrade(t, uid)))));
          break;
        }
        case 'user.changes': {
          if (spec.cadence !== cadence) break;
          const uid = topic.userId!;
          const user = ex.users.get(uid);
          if (!user) break;
          const byInst = new Map<Instrument, { orders: AnyOrder[]; trades: Trade[] }>();
          const entry = (i: Instrument) => {
            let e = byInst.get(i);
            if (!e) byInst.set(i, (e = { orders: [], trades: [] }));
            return e;
          };
          for (const o of ordersByUser.get(uid) ?? []) if (selects(spec.sel, o.inst.name, o.inst.currency)) entry(o.inst).orders.push(o);
          for (const t of tradesByUser.get(uid) ?? []) if (selects(spec.sel, t.inst.name, t.inst.currency)) entry(t.inst).trades.push(t);
          for (const [inst, e] of byInst) {
            const data = {
              instrument_name: inst.name,
              orders: e.orders.map(rendered),
              trades: e.trades.map((t) => renderUserTrade(t, uid)),
              positions: e.trades.length > 0 ? [this.position(user, inst)] : [],
            };
            this.deliver(topic, notification(topic.channel, JSON.stringify(data)));
          }
          break;
        }
        case 'user.mmp_trigger': {
          if (cadence !== 'raw') break;
          for (const e of ch.mmp) {
            if (e.userId !== topic.userId || e.indexName !== spec.indexName) continue;
            const data = { index_name: e.indexName, ...(e.group !== null ? { mmp_group: e.group } : {}), frozen_until: e.frozenUntil };
            this.deliver(topic, notification(topic.channel, JSON.stringify(data)));
          }
          break;
        }
        case 'user.portfolio': {
          // conflated: at most one summary per tick, when the user's money, orders or marks moved
          if (cadence !== 'agg') break;
          const uid = topic.userId!;
          const user = ex.users.get(uid);
          if (!user) break;
          const currencies = spec.currency === null ? (['BTC', 'ETH'] as CurrencyCode[]) : [spec.currency];
          for (const c of currencies) {
            if (!ch.everyone && !ch.users.has(uid) && !ch.currencies.has(c) && topic.last !== undefined) continue;
            const data = JSON.stringify(this.summary(user, c));
            if (spec.currency !== null) {
              if (data === topic.last) continue;
              topic.last = data;
            }
            this.deliver(topic, notification(topic.channel, data));
          }
          if (spec.currency === null) topic.last = '';
          break;
        }
        default:
          if (isParitySpec(spec)) for (const d of parityRound(ex, topic as ParityTopic, { cadence, currencies: ch.currencies, touched: touchedInst })) this.deliver(topic, notification(topic.channel, d));
      }
    }
    this.flush(cadence, held);
    if (this.onRound !== null) {
      const cpu = process.cpuUsage(cpu0!);
      if (held !== null) held.rounds.push({ cadence, due: dueAt || startedAt, deliveries: this.deliveries, cpu: cpu.user + cpu.system, rendered: renderedTag });
      else this.onRound(cadence, { due: dueAt || startedAt, start: startedAt, end: performance.timeOrigin + performance.now(), deliveries: this.deliveries, cpu: cpu.user + cpu.system, rendered: renderedTag });
    }
  }

  private diff(st: BookState, before: Map<number, number>, after: Map<number, number>, desc: boolean): Array<[string, number, number]> {
    const out: Array<[string, number, number, number]> = [];
    for (const [p, q] of after) {
      const old = before.get(p);
      if (old === undefined) out.push(['new', priceToNumber(p), lotsAmount(st.inst, q), p]);
      else if (old !== q) out.push(['change', priceToNumber(p), lotsAmount(st.inst, q), p]);
    }
    for (const p of before.keys()) if (!after.has(p)) out.push(['delete', priceToNumber(p), 0, p]);
    out.sort((a, b) => (desc ? b[3] - a[3] : a[3] - b[3]));
    return out.map(([a, p, q]) => [a, p, q]);
  }

  private ticker(inst: Instrument): Record<string, unknown> {
    return tickerOf(this.s.ex, inst);
  }

  private position(user: User, inst: Instrument): Record<string, unknown> {
    return renderPosition(this.s.ex, user, inst);
  }

  private summary(user: User, currency: CurrencyCode): Record<string, unknown> {
    return accountSummary(this.s.ex, user, currency, false);
  }
}
