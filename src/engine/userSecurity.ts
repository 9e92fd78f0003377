// Password change and user disable (issue 29): each replaces or blocks a user's credentials and
// revokes the tokens they gave, in one journaled command, so every socket holding one of them loses
// its private streams at the next credential sweep (src/api/ws/credentialSweep.ts).
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';

/**
 * Replaces the password hash (computed at the edge: the engine never sees a password) and ends every
 * password session of the user. The change applies only over the hash the edge verified the old
 * password against (`was`): of two concurrent changes with the same old password only the first wins.
 * Tokens issued to API keys stay valid, as the keys do (Deribit: a key is a credential of its own).
 */
export function changePassword(ex: Exchange, c: Extract<Command, { t: 'change_password' }>): true | Reject {
  const user = ex.users.get(c.userId);
  if (user === undefined || ex.disabledUsers.has(c.userId)) return reject(ERR.UNAUTHORIZED, 'invalid_token');
  if (user.passwordHash !== c.was) return reject(ERR.INVALID_CREDENTIALS, 'invalid_credentials', 'old_password');
  user.passwordHash = c.passwordHash;
  ex.auth.revokeUser(c.userId, true);
  return true;
}

/**
 * An administrator disables (or enables again) a user: while disabled, no credential of the user
 * authenticates and no token is issued to it; disabling revokes every token it holds (API-key ones
 * too), so enabling again needs a new login. Open orders are left as they are (docs/api-notes.md).
 */
export function setUserDisabled(ex: Exchange, c: Extract<Command, { t: 'set_user_disabled' }>): { user_id: number; disabled: boolean } | Reject {
  if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  if (!ex.users.has(c.userId)) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  // an administrator could otherwise lock the venue's last way in
  if (c.userId === c.by) return reject(ERR.INVALID_ARGUMENTS, 'cannot_disable_self', 'user_id');
  if (c.disabled) {
    ex.disabledUsers.add(c.userId);
    ex.auth.revokeUser(c.userId, false);
  } else ex.disabledUsers.delete(c.userId);
  return { user_id: c.userId, disabled: c.disabled };
}
