// Subaccounts (issue 32): a main account creates up to a limit of them; each is a user of its own for
// the engine (balances, positions, margin, orders, liquidation) linked to its main account. The
// state here is deterministic engine state: every change is a journaled command (src/engine/commands.ts)
// applied by the single writer, snapshotted and covered by the state hash.
//
// A subaccount has no password: its user record's email is `subaccount:<id>` (text no signup can
// use, so it never collides with a real email and a password login to it always fails) and its
// sessions come from its main account (private/exchange_token). Removing one deletes its user record
// and with it every token and API key, so its credentials stop at the next call.
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { User } from '../engine/types.ts';
import { blankUser } from '../engine/users.ts';
import type { SubaccountRecord, TransferRecord } from './types.ts';
import { CURRENCY_CODES } from '../domain/currency.ts';
import { UserTransfers } from './userTransfers.ts';

/** Deribit's default limit of subaccounts per main account (STRIKEBOOK_MAX_SUBACCOUNTS). */
export const DEFAULT_MAX_SUBACCOUNTS = 20;
/** Transfers kept per main account (history and nonce memory); older ones leave memory and snapshots. */
export const TRANSFERS_KEPT = 1000;
/** A subaccount's user record email: not an email (no '@'), so no signup or login can name it. */
export const subaccountEmail = (id: number): string => `subaccount:${id}`;

type Cmd<T extends Command['t']> = Extract<Command, { t: T }>;

export class Subaccounts {
  /** live subaccounts by id */
  readonly subs = new Map<number, SubaccountRecord>();
  /** live subaccount ids per main account, in creation order (derived from `subs`) */
  private readonly children = new Map<number, number[]>();
  /** transfers per main account, oldest first (bounded: TRANSFERS_KEPT to 2 x TRANSFERS_KEPT) */
  readonly transfers = new Map<number, TransferRecord[]>();
  nextTransferId = 1;
  /** Transfers to other users of the venue (src/accounts/userTransfers.ts); ids from nextTransferId. */
  readonly users: UserTransfers;

  constructor(private readonly ex: Exchange) {
    this.users = new UserTransfers(ex);
  }

  /** The main account of a user: its parent for a subaccount, itself otherwise. */
  mainOf(userId: number): number {
    return this.subs.get(userId)?.mainId ?? userId;
  }

  isSubaccount(userId: number): boolean {
    return this.subs.has(userId);
  }

  /** Live subaccount ids of a main account, in creation order. */
  childrenOf(mainId: number): readonly number[] {
    return this.children.get(mainId) ?? [];
  }

  /** Whether a session may be issued to the user (a subaccount needs its login enabled). */
  loginAllowed(userId: number): boolean {
    const s = this.subs.get(userId);
    return s === undefined || s.loginEnabled;
  }

  /** Deribit's `username`: a subaccount's name, a main account's email. */
  username(userId: number): string {
    return this.subs.get(userId)?.username ?? this.ex.users.get(userId)?.email ?? `user_${userId}`;
  }

  create(c: Cmd<'create_subaccount'>): User | Reject {
    const main = this.ex.users.get(c.mainId);
    if (!main) return reject(ERR.UNAUTHORIZED);
    if (this.subs.has(c.mainId)) return reject(ERR.FORBIDDEN, 'main_account_only');
    if (this.childrenOf(c.mainId).length >= c.max) return reject(ERR.FORBIDDEN, 'subaccount_limit_reached');
    const id = this.ex.nextUserId++;
    const user = blankUser(id, subaccountEmail(id), 'user', '', this.ex.now);
    this.ex.users.set(id, user);
    this.ex.usersByEmail.set(user.email, user);
    this.add({ id, mainId: c.mainId, username: this.freeName(c.mainId, defaultName(main.email, id)), loginEnabled: true, created: this.ex.now });
    return user;
  }

  /** The subaccount `subId` of `mainId`, or the refusal: another main's subaccount is simply not found. */
  own(mainId: number, subId: number): SubaccountRecord | Reject {
    const s = this.subs.get(subId);
    if (s === undefined || s.mainId !== mainId) return reject(ERR.NOT_FOUND, 'subaccount_not_found', 'sid');
    return s;
  }

  rename(c: Cmd<'rename_subaccount'>): SubaccountRecord | Reject {
    const s = this.own(c.mainId, c.subId);
    if (isReject(s)) return s;
    if (s.username !== c.name && this.nameTaken(c.mainId, c.name)) return reject(ERR.INVALID_ARGUMENTS, 'name_taken', 'name');
    s.username = c.name;
    return s;
  }

  setLogin(c: Cmd<'subaccount_login'>): SubaccountRecord | Reject {
    const s = this.own(c.mainId, c.subId);
    if (isReject(s)) return s;
    s.loginEnabled = c.on;
    // disabled: its sessions end now, as a removal's do
    if (!c.on) this.revokeSessions(s.id);
    return s;
  }

  setEmail(c: Cmd<'subaccount_email'>): SubaccountRecord | Reject {
    const s = this.own(c.mainId, c.subId);
    if (isReject(s)) return s;
    s.email = c.email;
    return s;
  }

  setNotifications(c: Cmd<'subaccount_notifications'>): SubaccountRecord | Reject {
    const s = this.own(c.mainId, c.subId);
    if (isReject(s)) return s;
    s.notifications = c.on;
    return s;
  }

  remove(c: Cmd<'remove_subaccount'>): SubaccountRecord | Reject {
    const s = this.own(c.mainId, c.subId);
    if (isReject(s)) return s;
    const u = this.ex.users.get(s.id)!;
    // only an empty subaccount: nothing of value may vanish with it (conservation)
    for (const cur of CURRENCY_CODES) if (u.accounts[cur].balance !== 0) return reject(ERR.FORBIDDEN, 'subaccount_has_balance', 'subaccount_id');
    for (const p of u.positions.values()) if (p.size !== 0) return reject(ERR.FORBIDDEN, 'subaccount_has_positions', 'subaccount_id');
    if (u.openOrderCount > 0 || this.ex.triggers.untriggeredCount(u.id) > 0) return reject(ERR.FORBIDDEN, 'subaccount_has_open_orders', 'subaccount_id');
    this.revokeSessions(s.id);
    for (const k of this.ex.apiKeys.forUser(s.id)) this.ex.apiKeys.remove(s.id, k.id);
    this.ex.codAccounts.delete(s.id);
    // its MMP groups and trigger history would otherwise outlive it: create-and-remove cycles must
    // not grow the state
    for (const [k, g] of this.ex.mmp.groups) if (g.userId === s.id) this.ex.mmp.groups.delete(k);
    this.ex.triggers.byUser.delete(s.id);
    this.ex.triggers.history.delete(s.id);
    this.ex.users.delete(s.id);
    this.ex.usersByEmail.delete(u.email);
    this.subs.delete(s.id);
    const kids = this.children.get(s.mainId)!;
    kids.splice(kids.indexOf(s.id), 1);
    if (kids.length === 0) this.children.delete(s.mainId);
    return s;
  }

  /** Appends a transfer to its main account's history, trimming the oldest in steps (amortised O(1)). */
  record(mainId: number, t: TransferRecord): void {
    let list = this.transfers.get(mainId);
    if (list === undefined) this.transfers.set(mainId, (list = []));
    list.push(t);
    if (list.length > 2 * TRANSFERS_KEPT) list.splice(0, list.length - TRANSFERS_KEPT);
  }

  isEmpty(): boolean {
    return this.subs.size === 0 && this.transfers.size === 0 && this.nextTransferId === 1 && this.users.isEmpty();
  }

  toJson(): unknown {
    // user transfers only once there are any: a state without them serializes as before
    return { subs: [...this.subs.values()], transfers: [...this.transfers], next: this.nextTransferId, ...(this.users.isEmpty() ? {} : { user: this.users.toJson() }) };
  }

  /** Restores from `toJson` output; snapshots from before subaccounts have none (`j` undefined). */
  restore(j: unknown): void {
    if (j === undefined || j === null) return;
    const s = j as { subs: SubaccountRecord[]; transfers: [number, TransferRecord[]][]; next: number; user?: unknown };
    for (const r of s.subs) this.add(r);
    this.users.restore(s.user);
    for (const [mainId, list] of s.transfers) this.transfers.set(mainId, list);
    this.nextTransferId = s.next;
  }

  private add(r: SubaccountRecord): void {
    this.subs.set(r.id, r);
    let kids = this.children.get(r.mainId);
    if (kids === undefined) this.children.set(r.mainId, (kids = []));
    kids.push(r.id);
  }

  private nameTaken(mainId: number, name: string): boolean {
    for (const id of this.childrenOf(mainId)) if (this.subs.get(id)!.username === name) return true;
    return false;
  }

  private freeName(mainId: number, base: string): string {
    let name = base;
    for (let i = 2; this.nameTaken(mainId, name); i++) name = `${base}_${i}`;
    return name;
  }

  /** Ends every session of a user (its access and refresh tokens). */
  private revokeSessions(userId: number): void {
    const auth = this.ex.auth;
    for (const [hash, rec] of auth.access) if (rec.userId === userId) auth.revokeAccess(hash);
    for (const [hash, rec] of auth.refresh) if (rec.userId === userId) auth.consumeRefresh(hash);
  }
}

/** `<local part of the main's email>_<id>`, letters, digits and `_` only (Deribit's usernames). */
function defaultName(mainEmail: string, id: number): string {
  const local = mainEmail.split('@')[0]!.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 24);
  return `${local || 'sub'}_${id}`;
}
