// Snapshot serialization of the whole exchange state, and the state hash.
//
// The serialization is canonical: the same state always gives the same text (maps are written in
// their iteration order, which replay reproduces), so sha256(snapshot) is the state hash that
// proves a replay reproduced the state bit for bit. Restoring rebuilds every map in the same order
// and every book in the same priority order, so a restored engine hashes equal to the original.
import { createHash } from 'node:crypto';
import type { CurrencyCode } from '../domain/currency.ts';
import type { Instrument } from '../domain/instrument.ts';
import { ApiKeys } from '../auth/apiKeys.ts';
import { Announcements } from './announcements.ts';
import { DEFAULT_LIMITS, Exchange, type ExchangeLimits } from './exchange.ts';
import { OrderBook } from './orderBook.ts';
import { ExposureOrders } from './exposureOrders.ts';
import { compactTradeIds, newOrder, newTradedOrder, tradeIdsOf, type Account, type Order, type InstrumentMarket, type Trade, type TradedOrder, type User } from './types.ts';
import { emptyImCache } from '../market/marks.ts';
import { ledgerFromJson, ledgerToJson } from './ledger.ts';
import { codRestore, codToJson } from './cod.ts';

const VERSION = 1;

type Json = Record<string, unknown>;

function num(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}
function unnum(x: number | null): number {
  return x === null ? NaN : x;
}

function orderToJson(o: Order): unknown[] {
  return [
    o.id, o.userId, o.side, o.price, o.remaining, o.amount, o.inst.id, o.type, o.tif, o.postOnly, o.rejectPostOnly, o.reduceOnly,
    o.label, o.clientOrderId, o.created, o.expiresAt, o.advanced, o.isLiquidation,
    o.filled, o.filledNotional, o.commission, o.state, o.cancelReason, o.reserved, o.lastUpdate, tradeIdsOf(o),
  ];
}

/**
 * An order no account's order map holds any more (pruned past `closedOrdersKept`, orderMemory.ts)
 * is reachable only through its trades, which read its id, owner, side, instrument,
 * type, flags and label (src/api/render.ts renderUserTrade): only those are written. A busy venue's
 * trades keep hundreds of thousands of such orders (321,511 orders, 59 of the 71 MB of the restart
 * bench's snapshot, before this form), so the snapshot, its write and a restart's parse shrink
 * with it. Live and restored engines write the same stub, so the state hash is unchanged by it.
 */
function prunedOrderToJson(o: TradedOrder): unknown[] {
  return [o.id, o.userId, o.side, o.inst.id, o.type, o.postOnly, o.reduceOnly, o.label, o.isLiquidation, o.state];
}

/** An order restored from its stub: the stub a live engine holds for it (`tradedOrderStub`). Its
 *  `mmp` tag, if any, is put back by the snapshot's mmp part, as on every order. */
function prunedOrderFromJson(a: unknown[], ex: Exchange): TradedOrder {
  const [id, userId, side, instId, type, postOnly, reduceOnly, label, isLiquidation, state] = a as never[];
  return newTradedOrder(id, userId, side, ex.instrumentsById.get(instId)!, type, postOnly, reduceOnly, label, isLiquidation, state, null);
}

const PRUNED_ORDER_FIELDS = 10;

function orderFromJson(a: unknown[], ex: Exchange): Order {
  const [id, userId, side, price, remaining, amount, instId, type, tif, postOnly, rejectPostOnly, reduceOnly, label, clientOrderId, created, expiresAt, advanced, isLiquidation,
    filled, filledNotional, commission, state, cancelReason, reserved, lastUpdate, tradeIds] = a as never[];
  const o = newOrder(id, userId, side, price, remaining, amount, ex.instrumentsById.get(instId)!, type, tif, postOnly, rejectPostOnly, reduceOnly, label, clientOrderId, created, expiresAt, advanced, isLiquidation);
  o.filled = filled;
  o.filledNotional = filledNotional;
  o.commission = commission;
  o.state = state;
  o.cancelReason = cancelReason;
  o.reserved = reserved;
  o.lastUpdate = lastUpdate;
  o.tradeIds = compactTradeIds(tradeIds);
  return o;
}

function tradeToJson(t: Trade): unknown[] {
  const a: unknown[] = [t.id, t.seq, t.inst.id, t.ts, t.price, t.lots, t.takerSide, t.makerOrder.id, t.takerOrder.id, t.makerFee, t.takerFee, num(t.indexPrice), num(t.markPrice), t.tickDirection, t.makerState, t.takerState];
  // a block trade's leg only: other trades serialize as before (src/blocktrades/)
  if (t.block !== undefined) a.push([t.block.id, t.block.legs]);
  // a combo fill's leg only (src/combos/): after a null block part
  if (t.combo !== undefined) {
    if (t.block === undefined) a.push(null);
    a.push([t.combo.id, t.combo.tradeId]);
  }
  return a;
}

function marketToJson(m: InstrumentMarket): unknown[] {
  return [m.inst.id, num(m.markCoin), num(m.markIv), m.minPrice, m.maxPrice, m.lastPrice, m.tradeSeq, m.changeId, m.trades.map((t) => t.id)];
}

export function serialize(ex: Exchange): string {
  // every order reachable from a user map or a trade, once; those only trades reach, as stubs
  const orders = new Map<number, TradedOrder>();
  const held = new Map<number, Order>();
  const trades = new Map<number, Trade>();
  for (const u of ex.users.values()) {
    for (const o of u.orders.values()) {
      orders.set(o.id, o);
      held.set(o.id, o);
    }
    for (const t of u.trades) {
      trades.set(t.id, t);
      orders.set(t.makerOrder.id, t.makerOrder);
      orders.set(t.takerOrder.id, t.takerOrder);
    }
  }
  for (const m of ex.markets.values()) {
    for (const t of m.trades) {
      trades.set(t.id, t);
      orders.set(t.makerOrder.id, t.makerOrder);
      orders.set(t.takerOrder.id, t.takerOrder);
    }
  }
  const state: Json = {
    v: VERSION,
    now: ex.now,
    seq: ex.seq,
    // how many orders and trades the lines below the head hold: restore counts them (ROWS_PER_LINE)
    rows: [orders.size, trades.size],
    next: [ex.nextUserId, ex.nextOrderId, ex.nextTradeId, ex.nextInstrumentId],
    instruments: [...ex.instruments.values()],
    index: ex.index,
    vol: ex.vol,
    indexHistory: ex.indexHistory,
    deliveries: ex.deliveries,
    auth: {
      invites: [...ex.auth.invites.values()],
      access: [...ex.auth.access],
      refresh: [...ex.auth.refresh],
      issued: ex.auth.issuedCount,
    },
    apiKeys: ex.apiKeys.toJson(),
    system: ex.system,
    insurance: { positions: [...ex.insurance.positions.values()].map((p) => [p.inst.id, p.size, p.openCost, p.realizedPnl]), log: ledgerToJson(ex.insurance.log) },
    nextLogId: ex.nextLogId,
    liquidating: [...ex.liquidating],
    deposits: ex.deposits,
    withdrawals: ex.withdrawals,
    markets: [...ex.markets.values()].map(marketToJson),
    books: [...ex.books].map(([id, b]) => [id, [...b.orders()].map((o) => o.id)]),
    users: [...ex.users.values()].map((u) => ({
      id: u.id,
      email: u.email,
      role: u.role,
      passwordHash: u.passwordHash,
      created: u.created,
      accounts: u.accounts,
      positions: [...u.positions.values()].map((p) => [p.inst.id, p.size, p.openCost, p.realizedPnl]),
      exposures: [...u.exposures.values()].map((e) => [e.inst.id, e.buyOpenLots, e.sellOpenLots, e.buyReserved, [...e.openOrders].map((o) => o.id)]),
      openOrderCount: u.openOrderCount,
      trades: u.trades.map((t) => t.id),
      orders: [...u.orders.keys()],
      clientOrderIds: [...u.clientOrderIds],
      depositIds: [...u.depositIds.values()],
      log: ledgerToJson(u.log),
    })),
    // market-maker protection (src/engine/mmp.ts): last, and absent from older snapshots
    mmp: ex.mmp.toJson(orders.values()),
    // last, and optional on restore: snapshots from before trigger orders have none
    triggers: ex.triggers.toJson(),
    // cancel-on-disconnect (src/engine/cod.ts): last, and absent from older snapshots
    // only open orders are marked, and an account's map holds every open order of it
    cod: codToJson(ex, held.values()),
    // announcements (src/engine/announcements.ts): last, and absent from older snapshots
    announcements: ex.announcements.toJson(),
    // self-trade prevention (src/engine/selfTrade.ts): last, and absent from older snapshots
    selfTrading: [...ex.selfTrading].sort((x, y) => x[0] - y[0]),
    // disabled trading products (src/engine/disabledProducts.ts): last, and absent from older snapshots
    disabledProducts: [...ex.disabledProducts].sort((x, y) => x[0] - y[0]),
    // access logs (src/engine/accessLog.ts): last, and absent from older snapshots
    accessLog: { next: ex.nextAccessId, users: [...ex.accessLog].sort((x, y) => x[0] - y[0]) },
    // subaccounts and transfers (src/accounts/): last, and absent while there are none, so a state
    // without them hashes as it did before they existed
    ...(ex.subaccounts.isEmpty() ? {} : { subaccounts: ex.subaccounts.toJson() }),
    // disabled users (src/engine/userSecurity.ts): absent while there are none, as subaccounts
    ...(ex.disabledUsers.size === 0 ? {} : { disabledUsers: [...ex.disabledUsers].sort((x, y) => x - y) }),
    // block trades (src/blocktrades/): absent while there are none, as subaccounts
    ...(ex.blockTrades.isEmpty() ? {} : { blockTrades: ex.blockTrades.toJson() }),
    // block RFQs (src/blockrfq/): absent while there are none
    ...(ex.blockRfqs.isEmpty() ? {} : { blockRfqs: ex.blockRfqs.toJson() }),
    // combos (src/combos/): absent while there are none
    ...(ex.combos.isEmpty() ? {} : { combos: ex.combos.toJson() }),
    // combo books (src/combos/book.ts): absent while no combo order was ever placed
    ...(ex.comboBooks.isEmpty() ? {} : { comboBooks: ex.comboBooks.toJson() }),
    // portfolio margin (src/risk/portfolio/state.ts): absent while every account is on the default
    // model under the default parameters, as subaccounts
    ...(ex.pm.isEmpty() ? {} : { pm: ex.pm.toJson() }),
    // the wallet (src/wallet/): absent while empty, as subaccounts
    ...(ex.wallet.isEmpty() ? {} : { wallet: ex.wallet.toJson() }),
  };
  const orderRows = [...orders.values()].sort((a, b) => a.id - b.id).map((o) => {
    const full = held.get(o.id);
    return full !== undefined ? orderToJson(full) : prunedOrderToJson(o);
  });
  const tradeRows = [...trades.values()].sort((a, b) => a.id - b.id).map(tradeToJson);
  // the two large arrays last, in lines (see ROWS_PER_LINE)
  return `${JSON.stringify(state).slice(0, -1)}${ORDERS_KEY}${rowLines(orderRows)}${TRADES_KEY}${rowLines(tradeRows)}}`;
}

/**
 * The snapshot's two large arrays, its orders and its trades (most of its bytes: 321,511 orders and
 * 159,462 trades in the restart bench's), are written last and in lines of this many rows: `[`, a
 * newline, the lines (rows joined by commas) joined by a comma and a newline, a newline and `]`.
 * The text stays one JSON document (a newline is whitespace to JSON), and no other newline can be in
 * it (JSON.stringify escapes one in a string and adds no whitespace), so `restore` finds the lines
 * with indexOf and parses one line at a time, turning its rows into engine objects at once. One
 * parse of the whole text instead built a tree of the whole state first, which lived long enough to
 * be promoted to the old generation, only to die when the restore finished: on these machines
 * (docs/performance.md, twenty-first stop) 31,000 fresh pages, ~0.6 s of a 5 s restart. A line's
 * tree dies young, on pages the young generation reuses.
 */
const ROWS_PER_LINE = 512;
const ORDERS_KEY = ',"orders":[';
const TRADES_KEY = ',"trades":[';

function rowLines(rows: readonly unknown[][]): string {
  const lines: string[] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_LINE) lines.push(JSON.stringify(rows.slice(i, i + ROWS_PER_LINE)).slice(1, -1));
  return `\n${lines.join(',\n')}\n]`;
}

/**
 * The rows of one of `serialize`'s arrays in lines, from `cursor.at` (just past the newline after
 * its `[`) to its closing `]` line; leaves `cursor.at` at the start of that line. Each line's rows
 * are parsed together and handed out one by one.
 */
function* rowsInLines(text: string, cursor: { at: number }, expected: number, what: string): Generator<never[]> {
  let count = 0;
  for (;;) {
    const end = text.indexOf('\n', cursor.at);
    // the closing line (`]` and what follows the array) has no newline after the trades' one
    if (text.charCodeAt(cursor.at) === 0x5d /* ] */ || end < 0) break;
    const line = text.slice(cursor.at, text.charCodeAt(end - 1) === 0x2c /* , */ ? end - 1 : end);
    cursor.at = end + 1;
    for (const row of JSON.parse(`[${line}]`) as never[][]) {
      count++;
      yield row;
    }
  }
  if (count !== expected) throw new Error(`snapshot: ${count} ${what} in the lines, the head says ${expected}`);
}

/**
 * What `restore` reads: the snapshot without its orders and trades, and those as rows. A text
 * without lines is a snapshot written before they were (one JSON document in a single line): it is
 * read whole. A text in lines whose rows are not as many as its head says (a line lost or repeated
 * when the parts were stored) is refused, never restored as a smaller book.
 */
function readSnapshotText(text: string): { s: ReturnType<typeof JSON.parse>; orders: Iterable<never[]>; trades: Iterable<never[]> } {
  const first = text.indexOf('\n');
  if (first < 0) {
    const s = JSON.parse(text);
    return { s, orders: s.orders ?? [], trades: s.trades ?? [] };
  }
  if (text.slice(first - ORDERS_KEY.length, first) !== ORDERS_KEY) throw new Error('snapshot: the orders do not follow the head');
  const s = JSON.parse(`${text.slice(0, first - ORDERS_KEY.length)}}`);
  const rows: unknown = s.rows;
  if (!(Array.isArray(rows) && rows.length === 2 && rows.every((n) => Number.isInteger(n)))) throw new Error('snapshot: the head does not count its rows');
  const [orderCount, tradeCount] = rows as [number, number];
  const cursor = { at: first + 1 };
  const expect = (what: string) => {
    if (!text.startsWith(what, cursor.at)) throw new Error(`snapshot: expected ${JSON.stringify(what)} at ${cursor.at}`);
    cursor.at += what.length;
  };
  // the orders are read in full before the trades start (restore reads them in that order)
  const orders = rowsInLines(text, cursor, orderCount, 'orders');
  const trades = (function* () {
    expect(`]${TRADES_KEY}\n`);
    yield* rowsInLines(text, cursor, tradeCount, 'trades');
    expect(']}');
    if (cursor.at !== text.length) throw new Error('snapshot: text after the end');
  })();
  return { s, orders, trades };
}

export function restore(text: string, limits: ExchangeLimits = DEFAULT_LIMITS): Exchange {
  const { s, orders: orderRows, trades: tradeRows } = readSnapshotText(text);
  if (s.v !== VERSION) throw new Error(`unsupported snapshot version ${s.v}`);
  const ex = new Exchange(limits);
  ex.now = s.now;
  ex.seq = s.seq;
  [ex.nextUserId, ex.nextOrderId, ex.nextTradeId, ex.nextInstrumentId] = s.next;
  for (const inst of s.instruments as Instrument[]) {
    ex.instruments.set(inst.name, inst);
    ex.instrumentsById.set(inst.id, inst);
  }
  ex.index = s.index;
  ex.vol = s.vol;
  ex.indexHistory = s.indexHistory ?? {};
  ex.deliveries = s.deliveries ?? [];
  for (const inv of s.auth.invites) ex.auth.invites.set(inv.code, inv);
  ex.auth.restoreTokens(s.auth.access, s.auth.refresh);
  ex.auth.issuedCount = s.auth.issued;
  ex.apiKeys = ApiKeys.fromJson(s.apiKeys);
  ex.announcements = Announcements.fromJson(s.announcements);
  ex.selfTrading = new Map(s.selfTrading ?? []);
  ex.disabledProducts = new Map(s.disabledProducts ?? []);
  ex.accessLog = new Map(s.accessLog?.users ?? []);
  ex.nextAccessId = s.accessLog?.next ?? 1;
  ex.system = s.system;
  // snapshots from before the insurance account held positions and logs have neither
  ex.insurance = { accounts: ex.system.insurance, positions: new Map(), log: ledgerFromJson(s.insurance?.log) };
  for (const [instId, size, openCost, realizedPnl] of s.insurance?.positions ?? []) {
    ex.insurance.positions.set(instId, { inst: ex.instrumentsById.get(instId)!, size, openCost, realizedPnl });
  }
  ex.nextLogId = s.nextLogId ?? 1;
  ex.liquidating = new Set(s.liquidating ?? []);
  ex.deposits = s.deposits;
  ex.withdrawals = s.withdrawals;

  // the orders accounts hold, and the stubs of those only trades reach (as the live engine has them)
  const orders = new Map<number, Order>();
  const traded = new Map<number, TradedOrder>();
  for (const a of orderRows) {
    const o = a.length === PRUNED_ORDER_FIELDS ? prunedOrderFromJson(a, ex) : orderFromJson(a, ex);
    if (a.length !== PRUNED_ORDER_FIELDS) orders.set(o.id, o as Order);
    traded.set(o.id, o);
  }
  const trades = new Map<number, Trade>();
  for (const a of tradeRows) {
    const [id, seq, instId, ts, price, lots, takerSide, makerId, takerId, makerFee, takerFee, indexPrice, markPrice, tickDirection, makerState, takerState, block, combo] = a;
    const trade: Trade = {
      id, seq, inst: ex.instrumentsById.get(instId)!, ts, price, lots, takerSide,
      makerOrder: traded.get(makerId)!, takerOrder: traded.get(takerId)!, makerFee, takerFee,
      indexPrice: unnum(indexPrice), markPrice: unnum(markPrice), tickDirection, makerState, takerState, iv: undefined,
    };
    if (block !== undefined && block !== null) trade.block = { id: block[0], legs: block[1] };
    if (combo !== undefined) trade.combo = { id: combo[0], tradeId: combo[1] };
    trades.set(id, trade);
  }
  for (const a of s.markets) {
    const [id, markCoin, markIv, minPrice, maxPrice, lastPrice, tradeSeq, changeId, tradeIds] = a;
    const inst = ex.instrumentsById.get(id)!;
    ex.markets.set(id, {
      inst, markCoin: unnum(markCoin), markIv: unnum(markIv), minPrice, maxPrice, lastPrice, tradeSeq, changeId,
      trades: (tradeIds as number[]).map((t) => trades.get(t)!),
      imCache: emptyImCache(),
    });
  }
  for (const [id, orderIds] of s.books as [number, number[]][]) {
    const book = new OrderBook<Order>();
    for (const oid of orderIds) book.add(orders.get(oid)!);
    ex.books.set(id, book);
  }
  for (const j of s.users) {
    const user: User = {
      id: j.id,
      email: j.email,
      role: j.role,
      passwordHash: j.passwordHash,
      created: j.created,
      accounts: j.accounts as Record<CurrencyCode, Account>,
      positions: new Map(),
      exposures: new Map(),
      openOrderCount: j.openOrderCount,
      trades: (j.trades as number[]).map((t) => trades.get(t)!),
      orders: new Map((j.orders as number[]).map((id) => [id, orders.get(id)!])),
      clientOrderIds: new Map(j.clientOrderIds),
      depositIds: new Map((j.depositIds as { depositId: string }[]).map((d) => [d.depositId, d as never])),
      log: ledgerFromJson(j.log),
    };
    for (const [instId, size, openCost, realizedPnl] of j.positions) {
      user.positions.set(instId, { inst: ex.instrumentsById.get(instId)!, size, openCost, realizedPnl });
    }
    for (const [instId, buyOpenLots, sellOpenLots, buyReserved, openIds] of j.exposures) {
      const openOrders = new ExposureOrders();
      let reduceOnlyOpen = 0;
      for (const id of openIds as number[]) {
        const o = orders.get(id)!;
        openOrders.add(o);
        if (o.reduceOnly) reduceOnlyOpen++;
      }
      user.exposures.set(instId, { inst: ex.instrumentsById.get(instId)!, buyOpenLots, sellOpenLots, buyReserved, reduceOnlyOpen, openOrders });
    }
    ex.users.set(user.id, user);
    ex.usersByEmail.set(user.email.toLowerCase(), user);
  }
  for (const o of orders.values()) if (o.state === 'open' && o.expiresAt > 0) ex.trading.gtdOrders.add(o);
  ex.mmp.restore(s.mmp, traded);
  ex.triggers.restore(s.triggers, (id) => orders.get(id));
  codRestore(ex, s.cod, orders);
  ex.subaccounts.restore(s.subaccounts);
  ex.disabledUsers = new Set<number>(s.disabledUsers ?? []);
  ex.blockTrades.restore(s.blockTrades);
  ex.blockRfqs.restore(s.blockRfqs);
  ex.combos.restore(s.combos);
  ex.comboBooks.restore(s.comboBooks, (id) => trades.get(id));
  ex.pm.restore(s.pm);
  ex.wallet.restore(s.wallet);
  return ex;
}

export function stateHash(ex: Exchange): string {
  return createHash('sha256').update(serialize(ex)).digest('hex');
}
