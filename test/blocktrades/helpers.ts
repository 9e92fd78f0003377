// Engine-level helpers for the block-trade tests: block_trade commands through a Harness.
import type { Command } from '../../src/engine/commands.ts';
import type { BlockLeg, BlockRole, BlockRules } from '../../src/blocktrades/types.ts';
import { amt, type Harness } from '../helpers/engine.ts';

/** Rules small enough for test accounts: legs from one lot, the default band. */
export const RULES: BlockRules = { bandPct: 50, minAmount: { BTC: amt('0.1'), ETH: amt('1') } };

export interface BlockOpts {
  role?: BlockRole;
  timestamp?: number;
  nonce?: string;
  expiry?: number;
  sig?: string;
  rules?: BlockRules;
}

/** The command of `executor` executing with `signer`'s signature (role: the executor's, maker by default). */
export function blockCmd(h: Harness, executor: number, signer: number, legs: BlockLeg[], o: BlockOpts = {}): Extract<Command, { t: 'block_trade' }> {
  const timestamp = o.timestamp ?? h.ts;
  return {
    t: 'block_trade',
    executor,
    signer,
    role: o.role ?? 'maker',
    timestamp,
    nonce: o.nonce ?? 'n1',
    expiry: o.expiry ?? timestamp + 300_000,
    sig: o.sig ?? `mac-${executor}-${signer}-${o.nonce ?? 'n1'}`,
    legs,
    rules: o.rules ?? RULES,
  };
}

/** A leg: `side` is the maker's direction. */
export function leg(instrument: string, side: 'buy' | 'sell', price: number, amount: string): BlockLeg {
  return { instrument, side: side === 'buy' ? 0 : 1, price, lots: amt(amount) };
}
