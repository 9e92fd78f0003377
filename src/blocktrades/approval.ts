// Block trade approvals (issue 34; docs/api-notes.md "Block trades: approvals"). An account may
// require that its block trades wait for its approval (Deribit: the `block_trade_approval` feature):
// an execute_block_trade between two accounts of which one requires it executes nothing yet; it
// becomes a request (get_block_trade_requests) where each side that requires approval is `initial`
// and the other `accepted`. `approve_block_trade` of a waiting side accepts it; when both are
// accepted the held command executes as one block trade, every check made again at that moment
// (signature expiry and invalidation, once per agreement, both sides' margin), or the approval is
// refused and nothing changes. `reject_block_trade` of either side closes it: it never executes.
// Every change is a journaled command applied by the single writer (deterministic: engine time).
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { applyBlockTrade, checkLegs, sideRefusal } from './execute.ts';
import { agreementKey, signatureKey } from './state.ts';
import type { BlockRole, BlockTradeRecord, BlockTradeRequest } from './types.ts';

type BlockCmd = Extract<Command, { t: 'block_trade' }>;
type SettingCmd = Extract<Command, { t: 'block_approval' }>;
type AnswerCmd = Extract<Command, { t: 'block_approve' | 'block_reject' }>;

/** Requests (open or still listed) one account may be a party of. */
export const MAX_BLOCK_REQUESTS = 200;

/** What execute_block_trade did: executed, or left waiting for an approval. */
export type BlockOutcome = BlockTradeRecord | { request: BlockTradeRequest };

export function isWaiting(o: BlockOutcome): o is { request: BlockTradeRequest } {
  return (o as { request?: BlockTradeRequest }).request !== undefined;
}

/** Whether the request is still open (neither rejected nor executed). */
export function isOpen(r: BlockTradeRequest): boolean {
  return r.maker.value !== 'rejected' && r.taker.value !== 'rejected' && r.blockTradeId === null;
}

/** The maker and taker accounts of a request. */
export function partiesOf(r: { executor: number; signer: number; role: BlockRole }): { maker: number; taker: number } {
  return r.role === 'maker' ? { maker: r.executor, taker: r.signer } : { maker: r.signer, taker: r.executor };
}

/** The block_approval setting command: whether the account's block trades wait for its approval. */
export function setApproval(ex: Exchange, c: SettingCmd): boolean | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  if (c.required) ex.blockTrades.approvalRequired.add(c.userId);
  else ex.blockTrades.approvalRequired.delete(c.userId);
  return c.required;
}

/**
 * The `block_trade` command: executed at once when neither party requires approval (exactly
 * applyBlockTrade), else checked as it would execute now and held as a request.
 */
export function blockTradeOrRequest(ex: Exchange, c: BlockCmd): BlockOutcome | Reject {
  const bt = ex.blockTrades;
  bt.prune(ex.now);
  // an agreement held as a request (waiting or rejected) executes only through its approval
  if (bt.requests.has(agreementKey(c.executor, c.signer, c.timestamp, c.nonce))) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_already_requested', 'nonce');
  // a signature held in a request (with any counterparty) executes nothing else
  for (const r of bt.requests.values()) if (r.sig === c.sig) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_already_requested', 'counterparty_signature');
  if (!bt.approvalRequired.has(c.executor) && !bt.approvalRequired.has(c.signer)) return applyBlockTrade(ex, c);
  const executor = ex.users.get(c.executor);
  const signer = ex.users.get(c.signer);
  if (!executor) return reject(ERR.UNAUTHORIZED);
  if (!signer) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalid', 'counterparty_signature');
  if (executor === signer) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_with_self', 'counterparty_signature');
  if (ex.now > c.expiry) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_expired', 'counterparty_signature');
  if (bt.invalidated.has(c.sig)) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalidated', 'counterparty_signature');
  const key = agreementKey(executor.id, signer.id, c.timestamp, c.nonce);
  if (bt.executed.has(key) || bt.executed.has(signatureKey(c.sig))) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_already_executed', 'nonce');
  const checked = checkLegs(ex, c.legs, c.rules);
  if (isReject(checked)) return checked;
  const { maker, taker } = partiesOf(c);
  for (const [uid, role] of [[maker, 'maker'], [taker, 'taker']] as const) {
    const refused = sideRefusal(ex, ex.users.get(uid)!, role, c.legs, checked);
    if (refused !== null) return uid === executor.id ? refused : reject(refused.code, `counterparty_${refused.reason ?? 'refused'}`);
  }
  for (const uid of [maker, taker]) {
    if (requestsOf(ex, uid).length >= MAX_BLOCK_REQUESTS) return reject(ERR.INVALID_ARGUMENTS, 'too_many_block_trade_requests');
  }
  const side = (uid: number) => ({ value: bt.approvalRequired.has(uid) ? ('initial' as const) : ('accepted' as const), timestamp: ex.now });
  const r: BlockTradeRequest = {
    key,
    executor: c.executor,
    signer: c.signer,
    role: c.role,
    timestamp: c.timestamp,
    nonce: c.nonce,
    expiry: c.expiry,
    sig: c.sig,
    legs: c.legs.map((l) => ({ ...l })),
    rules: c.rules,
    currency: checked.currency,
    created: ex.now,
    maker: side(maker),
    taker: side(taker),
    blockTradeId: null,
  };
  bt.requests.set(key, r);
  ex.observer?.blockRequest?.(r);
  return { request: r };
}

/** The requests an account is a party of, oldest first. */
export function requestsOf(ex: Exchange, userId: number): BlockTradeRequest[] {
  const out: BlockTradeRequest[] = [];
  for (const r of ex.blockTrades.requests.values()) if (r.executor === userId || r.signer === userId) out.push(r);
  return out;
}

/** The open request where `userId` is the party in `role`, with that timestamp and nonce. */
function findRequest(ex: Exchange, c: AnswerCmd): BlockTradeRequest | Reject {
  for (const r of ex.blockTrades.requests.values()) {
    if (r.timestamp !== c.timestamp || r.nonce !== c.nonce) continue;
    const p = partiesOf(r);
    if ((c.role === 'maker' ? p.maker : p.taker) === c.userId) return r;
  }
  // a request of other accounts, or the caller in the other role, is simply not found
  return reject(ERR.NOT_FOUND, 'block_trade_request_not_found', 'nonce');
}

/**
 * private/approve_block_trade: the caller's waiting side is accepted; with both sides accepted the
 * block trade executes now (all checks again), else the approval is refused and nothing changes.
 */
export function approveRequest(ex: Exchange, c: Extract<Command, { t: 'block_approve' }>): BlockTradeRequest | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  ex.blockTrades.prune(ex.now);
  const r = findRequest(ex, c);
  if (isReject(r)) return r;
  if (!isOpen(r)) return reject(ERR.INVALID_ARGUMENTS, r.blockTradeId !== null ? 'block_trade_already_executed' : 'block_trade_request_rejected', 'nonce');
  const mine = c.role === 'maker' ? r.maker : r.taker;
  const theirs = c.role === 'maker' ? r.taker : r.maker;
  if (mine.value !== 'initial') return reject(ERR.INVALID_ARGUMENTS, 'block_trade_request_not_waiting', 'role');
  if (ex.now > r.expiry) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_expired', 'nonce');
  if (theirs.value === 'accepted') {
    const rec = applyBlockTrade(ex, { t: 'block_trade', executor: r.executor, signer: r.signer, role: r.role, timestamp: r.timestamp, nonce: r.nonce, expiry: r.expiry, sig: r.sig, legs: r.legs, rules: r.rules });
    if (isReject(rec)) return rec;
    r.blockTradeId = rec.id;
    r.maker = { value: 'executed', timestamp: ex.now };
    r.taker = { value: 'executed', timestamp: ex.now };
  } else {
    mine.value = 'accepted';
    mine.timestamp = ex.now;
  }
  ex.observer?.blockRequest?.(r);
  return r;
}

/** private/reject_block_trade: either party closes an open request; it never executes. */
export function rejectRequest(ex: Exchange, c: Extract<Command, { t: 'block_reject' }>): BlockTradeRequest | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  ex.blockTrades.prune(ex.now);
  const r = findRequest(ex, c);
  if (isReject(r)) return r;
  if (!isOpen(r)) return reject(ERR.INVALID_ARGUMENTS, r.blockTradeId !== null ? 'block_trade_already_executed' : 'block_trade_request_rejected', 'nonce');
  const mine = c.role === 'maker' ? r.maker : r.taker;
  mine.value = 'rejected';
  mine.timestamp = ex.now;
  ex.observer?.blockRequest?.(r);
  return r;
}
