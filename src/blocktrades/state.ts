// Block-trade state (issue 34): executed block trades, the signatures that may not execute (used or
// invalidated) and the id counter. Deterministic engine state: every change is a journaled command
// applied by the single writer, snapshotted (absent while empty, so older states hash as before).
import type { BlockTradeRecord, BlockTradeRequest } from './types.ts';

/** Block trades kept per account (history); older ones leave memory and snapshots. */
export const BLOCK_TRADES_KEPT = 1000;
/**
 * How long a used or invalidated signature is remembered after its shared timestamp. A signature
 * never lives longer than the timestamp + the longest TTL the setting allows (1 h), so past this
 * nothing it names can execute anyway.
 */
export const SIGNATURE_MEMORY_MS = 24 * 3600 * 1000;

export class BlockTrades {
  nextId = 1;
  /** executed block trades per account (both parties), oldest first */
  readonly byUser = new Map<number, BlockTradeRecord[]>();
  /** by id, for get_block_trade (derived from byUser) */
  readonly byId = new Map<number, BlockTradeRecord>();
  /**
   * The agreements that executed: `<lower user>:<higher user>:<timestamp>:<nonce>` -> timestamp.
   * Both parties sign the same timestamp and nonce, so whichever signature is used, it executes once.
   */
  readonly executed = new Map<string, number>();
  /** Invalidated signatures (their MAC) -> the timestamp they were valid around. */
  readonly invalidated = new Map<string, number>();
  /** Accounts whose block trades wait for their approval (src/blocktrades/approval.ts). */
  readonly approvalRequired = new Set<number>();
  /** Block trade requests (waiting, or closed and still listed) by agreement key, oldest first. */
  readonly requests = new Map<string, BlockTradeRequest>();

  record(r: BlockTradeRecord): void {
    this.byId.set(r.id, r);
    for (const u of r.maker === r.taker ? [r.maker] : [r.maker, r.taker]) {
      let list = this.byUser.get(u);
      if (list === undefined) this.byUser.set(u, (list = []));
      list.push(r);
      if (list.length > 2 * BLOCK_TRADES_KEPT) {
        for (const old of list.splice(0, list.length - BLOCK_TRADES_KEPT)) if (!this.heldElsewhere(old, u)) this.byId.delete(old.id);
      }
    }
  }

  /** Forgets signatures whose timestamp is older than the memory window (deterministic: engine time). */
  prune(now: number): void {
    for (const m of [this.executed, this.invalidated]) {
      for (const [k, ts] of m) if (ts + SIGNATURE_MEMORY_MS < now) m.delete(k);
    }
    for (const [k, r] of this.requests) if (r.timestamp + SIGNATURE_MEMORY_MS < now) this.requests.delete(k);
  }

  isEmpty(): boolean {
    return this.nextId === 1 && this.invalidated.size === 0 && this.approvalRequired.size === 0 && this.requests.size === 0;
  }

  toJson(): unknown {
    const records = new Map<number, BlockTradeRecord>();
    for (const list of this.byUser.values()) for (const r of list) records.set(r.id, r);
    return {
      next: this.nextId,
      records: [...records.values()].sort((a, b) => a.id - b.id),
      users: [...this.byUser].map(([u, list]) => [u, list.map((r) => r.id)]),
      executed: [...this.executed],
      invalidated: [...this.invalidated],
      // absent while unused, so states from before approvals hash as before
      ...(this.approvalRequired.size > 0 ? { approval: [...this.approvalRequired].sort((a, b) => a - b) } : {}),
      ...(this.requests.size > 0 ? { requests: [...this.requests.values()] } : {}),
    };
  }

  /** Restores from `toJson` output; snapshots from before block trades have none (`j` undefined). */
  restore(j: unknown): void {
    if (j === undefined || j === null) return;
    const s = j as {
      next: number;
      records: BlockTradeRecord[];
      users: [number, number[]][];
      executed: [string, number][];
      invalidated: [string, number][];
      approval?: number[];
      requests?: BlockTradeRequest[];
    };
    this.nextId = s.next;
    const byId = new Map(s.records.map((r) => [r.id, r]));
    for (const [u, ids] of s.users) this.byUser.set(u, ids.map((id) => byId.get(id)!));
    for (const r of s.records) this.byId.set(r.id, r);
    for (const [k, v] of s.executed) this.executed.set(k, v);
    for (const [k, v] of s.invalidated) this.invalidated.set(k, v);
    for (const u of s.approval ?? []) this.approvalRequired.add(u);
    for (const r of s.requests ?? []) this.requests.set(r.key, r);
  }

  private heldElsewhere(r: BlockTradeRecord, except: number): boolean {
    const other = r.maker === except ? r.taker : r.maker;
    return other !== except && (this.byUser.get(other)?.includes(r) ?? false);
  }
}

/** The key of one agreement between two accounts (order-free: either party's signature names it). */
export function agreementKey(a: number, b: number, timestamp: number, nonce: string): string {
  return `${Math.min(a, b)}:${Math.max(a, b)}:${timestamp}:${nonce}`;
}

/** The key under which a used signature (its MAC) is remembered with the executed agreements. */
export function signatureKey(mac: string): string {
  return `sig:${mac}`;
}
