// Deribit's `subaccount_id` on reads (get_account_summary, get_positions, get_transaction_log): the
// main account reads one of its subaccounts (or itself). Anyone else's id is simply not found, and
// a subaccount reads only itself (src/accounts/subaccounts.ts).
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import type { User } from '../../engine/types.ts';
import type { CallContext } from '../rpc/registry.ts';
import { caller } from './common.ts';

export const SubaccountId = Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 }));

/** The user a read is for; call inside `seq.read`. */
export function readFor(ctx: CallContext, subaccountId: number | undefined): User {
  const ex = ctx.services.ex;
  const me = caller(ctx).userId;
  const id = subaccountId ?? me;
  if (id !== me && ex.subaccounts.subs.get(id)?.mainId !== me) throw reject(ERR.NOT_FOUND, 'subaccount_not_found', 'subaccount_id');
  const u = ex.users.get(id);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}
