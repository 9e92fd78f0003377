// A user's own password change and an administrator's disable/enable of a user (issue 29): each is
// one journaled command (src/engine/userSecurity.ts) that revokes the tokens it must, so every live
// socket holding one of them loses its private streams within one credential sweep.
import { Type } from '@sinclair/typebox';
import { hashPassword, verifyPassword } from '../../auth/crypto.ts';
import { ERR, reject, tooManyRequests } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Password, caller, unwrap } from './common.ts';

export const accountSecurityMethods = [
  defineMethod({
    name: 'private/change_password',
    scope: 'account:read_write',
    // the old password is checked for length only: a password set before today's rules still changes
    params: Type.Object({ old_password: Type.String({ minLength: 1, maxLength: 128 }), new_password: Password }),
    async handler(ctx, p) {
      const s = ctx.services;
      const c = caller(ctx);
      // an API key's holder must not take the account over: only a password session changes the password
      if (c.apiKeyId !== undefined) throw reject(ERR.FORBIDDEN, 'password_session_required');
      const user = await s.seq.read(() => s.ex.users.get(c.userId) ?? null);
      if (user === null) throw reject(ERR.UNAUTHORIZED, 'invalid_token');
      const email = user.email.toLowerCase();
      // wrong old passwords count as failed logins of the account from this client (the login
      // throttle, src/auth/loginThrottle.ts): a stolen token cannot guess the password faster
      const was = await s.limiter.exclusive(`login:${email}`, async () => {
        const wait = s.loginThrottle.retryAfter(email, ctx.ip);
        if (wait > 0) throw tooManyRequests('too_many_login_attempts', wait);
        const hash = user.passwordHash;
        if (!(await verifyPassword(p.old_password, hash))) {
          s.loginThrottle.failed(email, ctx.ip);
          throw reject(ERR.INVALID_CREDENTIALS, 'invalid_credentials', 'old_password');
        }
        return hash;
      });
      const passwordHash = await hashPassword(p.new_password);
      return s.seq.submit({ t: 'change_password', userId: c.userId, was, passwordHash }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/set_user_disabled',
    scope: 'admin',
    params: Type.Object({ user_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), disabled: Type.Boolean() }),
    async handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'set_user_disabled', userId: p.user_id, disabled: p.disabled, by: c.userId }, (r) => unwrap(r));
    },
  }),
];
