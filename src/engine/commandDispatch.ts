// Which code applies each command: Exchange.apply hands every sequenced command here, before its
// after-steps (combo expiry, MMP, trigger orders); small ones (tokens, invites, halts) apply inline.
import { ERR, reject } from '../domain/errors.ts';
import { recordAccess } from './accessLog.ts';
import { optionsRefusal, setDisabledProducts } from './disabledProducts.ts';
import { cancelOwnMakers, cancelOwnMakersForEdit, setSelfTradingConfig } from './selfTrade.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { settleExpiry } from './settlement.ts';
import { liquidate } from './liquidation.ts';
import { cancelQuotes, massQuote } from './massQuote.ts';
import { applyCodAccount, applyCodMark, markPlaced } from './cod.ts';
import { createUser } from './users.ts';
import { deposit, withdraw } from './depositWithdraw.ts';
import { listInstruments, setIndex } from './marketState.ts';
import { applyTransfer } from '../accounts/transfers.ts';
import { applyMovePositions } from '../accounts/movePositions.ts';
import { applyWallet } from '../wallet/apply.ts';
import { WALLET_COMMANDS, type WalletCommand } from '../wallet/types.ts';
import { changePassword, setUserDisabled } from './userSecurity.ts';
import { applyRfq } from '../blockrfq/engine.ts';
import { RFQ_COMMANDS, type RfqCommand } from '../blockrfq/types.ts';
import { invalidateSignature } from '../blocktrades/execute.ts';
import { approveRequest, blockTradeOrRequest, rejectRequest, setApproval } from '../blocktrades/approval.ts';
import { changeMarginModel } from '../risk/portfolio/switch.ts';

export function dispatchCommand(ex: Exchange, c: Command): unknown {
  if (WALLET_COMMANDS.has(c.t)) return applyWallet(ex, c as WalletCommand);
  if (RFQ_COMMANDS.has(c.t)) return applyRfq(ex, c as RfqCommand);
  switch (c.t) {
    case 'create_user':
      return createUser(ex, c);
    case 'issue_token': {
      if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
      if (ex.disabledUsers.has(c.userId)) return reject(ERR.UNAUTHORIZED, 'user_disabled');
      if (!ex.subaccounts.loginAllowed(c.userId)) return reject(ERR.FORBIDDEN, 'subaccount_login_disabled');
      if (c.replaces !== null) {
        // a refresh token is single-use: of two concurrent refreshes only the first wins
        const old = ex.auth.refresh.get(c.replaces);
        if (!old || old.expiresAt <= ex.now) return reject(ERR.UNAUTHORIZED, 'invalid_refresh_token');
        ex.auth.consumeRefresh(c.replaces);
      }
      ex.auth.issue(c.userId, c.access, c.refresh, c.scope, ex.now, c.accessTtl, c.refreshTtl);
      if (c.login !== undefined) recordAccess(ex, c.userId, c.login.ip, c.login.grant);
      return true;
    }
    case 'revoke_token':
      return ex.auth.revokeAccess(c.access);
    case 'change_password':
      return changePassword(ex, c);
    case 'set_user_disabled':
      return setUserDisabled(ex, c);
    case 'create_invite': {
      if (ex.auth.invites.has(c.code)) return reject(ERR.INVALID_ARGUMENTS, 'duplicate_code');
      const inv = {
        code: c.code,
        maxUses: c.maxUses,
        uses: 0,
        expiresAt: ex.now + c.expiresIn * 1000,
        note: c.note,
        createdBy: c.by,
        created: ex.now,
        revoked: false,
      };
      ex.auth.invites.set(c.code, inv);
      return inv;
    }
    case 'revoke_invite': {
      const inv = ex.auth.invites.get(c.code);
      if (!inv) return reject(ERR.NOT_FOUND, 'invite_code_unknown', 'code');
      inv.revoked = true;
      return inv;
    }
    case 'deposit':
      return deposit(ex, c);
    case 'withdraw':
      return withdraw(ex, c);
    case 'place': {
      const disabled = optionsRefusal(ex, c.userId, c.reduceOnly);
      if (disabled !== null) return disabled;
      const combo = ex.combos.byId.get(c.instrument);
      if (combo !== undefined) {
        const cr = ex.comboBooks.place(c, combo);
        if (c.cod === true) markPlaced(cr);
        return cr;
      }
      // cancel_maker self-trade prevention: the own orders this one would meet go first
      if (c.trig === undefined && !c.postOnly && (c.type === 'market' || c.price !== null)) cancelOwnMakers(ex, c.userId, c.instrument, c.side, c.type === 'market' ? NaN : c.price!, c.lots);
      const r = c.trig !== undefined ? ex.triggers.place({ ...c, trig: c.trig }) : ex.trading.place(c);
      if (c.cod === true) markPlaced(r);
      return r;
    }
    case 'cancel': {
      if (ex.comboBooks.orderOf(c.userId, c.orderId) !== undefined) return ex.comboBooks.cancel(c.userId, c.orderId);
      const t = ex.triggers.get(c.userId, c.orderId);
      if (t === undefined) return ex.trading.cancelByUser(c.userId, c.orderId);
      return ex.triggers.cancelRefusal(t) ?? ex.triggers.cancel(t, 'user_request');
    }
    case 'cancel_all': {
      const types = c.types ?? 'all';
      const options = c.kind !== 'option_combo';
      const regular = options && (types === 'all' || types === 'limit') ? ex.trading.cancelAll(c) : [];
      // combo orders are limit orders (no trigger orders on combos); comboBooks.cancelAll reads c.kind
      if ((types === 'all' || types === 'limit') && ex.comboBooks.hasOpen()) regular.push(...ex.comboBooks.cancelAll(c));
      const triggers = options ? ex.triggers.cancelAll(c, types) : [];
      return triggers.length === 0 ? regular : [...regular, ...triggers];
    }
    case 'index':
      return setIndex(ex, c.currency, c.price, c.manual);
    case 'set_vol': {
      // refused before anything changes: a NaN smile would make refreshMarks throw half-way, and the
      // journal (JSON) would replay it as null, i.e. as a different command
      if (![c.atmVol, c.skew, c.curvature].every(Number.isFinite) || !(c.atmVol > 0)) return reject(ERR.INVALID_ARGUMENTS, 'volatility_invalid', 'atm_vol');
      ex.vol[c.currency] = { atmVol: c.atmVol, skew: c.skew, curvature: c.curvature };
      ex.refreshMarks(c.currency);
      return ex.vol[c.currency];
    }
    case 'halt': {
      const inst = ex.instruments.get(c.instrument);
      if (!inst) return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
      inst.halted = c.halted;
      if (c.halted) {
        ex.trading.cancelInstrument(inst, 'instrument_halted');
        ex.triggers.cancelInstrument(inst, 'instrument_halted');
      }
      return inst;
    }
    case 'list':
      return listInstruments(ex, c.instruments);
    case 'expire_orders':
      return ex.trading.expireOrders() + ex.triggers.expire().length + ex.comboBooks.expire();
    case 'settle': {
      const r = settleExpiry(ex, c.currency, c.expiry);
      // trigger orders of the delivered series can never fire: cancelled with the expiry
      ex.triggers.cancelClosedInstruments('settlement');
      return r;
    }
    case 'cancel_orders': {
      const orders = ex.trading.cancelOrders(c.userId, c.orderIds, c.reason);
      if (ex.comboBooks.hasOpen()) orders.push(...ex.comboBooks.cancelOrders(c.userId, c.orderIds, c.reason));
      ex.triggers.cancelIds(c.userId, c.orderIds, c.reason);
      return orders;
    }
    case 'create_api_key':
      if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
      return ex.apiKeys.create(c.userId, c.clientId, c.encSecret, c.scope, c.name, ex.now);
    case 'remove_api_key':
      return ex.apiKeys.remove(c.userId, c.id);
    case 'update_api_key':
      return ex.apiKeys.update(c.userId, c.id, c.change);
    case 'publish_announcement':
      return ex.announcements.publish(c, ex.now);
    case 'read_announcement':
      return ex.announcements.markRead(c.userId, c.id);
    case 'set_self_trading_config':
      return setSelfTradingConfig(ex, c);
    case 'set_disabled_trading_products':
      return setDisabledProducts(ex, c);
    case 'edit': {
      const co = ex.comboBooks.orderOf(c.userId, c.orderId);
      if (co !== undefined) {
        const cr = ex.comboBooks.edit(c, ex.combos.byId.get(co.inst.name)!);
        if (c.cod === true) markPlaced(cr);
        return cr;
      }
      const t = ex.triggers.get(c.userId, c.orderId);
      if (t === undefined) cancelOwnMakersForEdit(ex, c);
      const r = t !== undefined ? ex.triggers.edit(c, t) : ex.trading.edit(c);
      if (c.cod === true) markPlaced(r);
      return r;
    }
    case 'liquidate':
      return liquidate(ex, c.userId, c.currency);
    case 'set_mmp_config':
      return ex.mmp.setConfig(c);
    case 'reset_mmp':
      return ex.mmp.reset(c.userId, c.indexName, c.group);
    case 'mass_quote': {
      const disabled = optionsRefusal(ex, c.userId, false);
      if (disabled !== null) return disabled;
      const r = massQuote(ex, c);
      if (c.cod === true) markPlaced(r);
      return r;
    }
    case 'cod_account':
      return applyCodAccount(ex, c);
    case 'cod_mark':
      return applyCodMark(ex, c);
    case 'cancel_quotes':
      return cancelQuotes(ex, c);
    case 'create_subaccount':
      return ex.subaccounts.create(c);
    case 'rename_subaccount':
      return ex.subaccounts.rename(c);
    case 'subaccount_login':
      return ex.subaccounts.setLogin(c);
    case 'remove_subaccount':
      return ex.subaccounts.remove(c);
    case 'transfer':
      return applyTransfer(ex, c);
    case 'subaccount_email':
      return ex.subaccounts.setEmail(c);
    case 'subaccount_notifications':
      return ex.subaccounts.setNotifications(c);
    case 'user_transfer':
      return ex.subaccounts.users.submit(c);
    case 'cancel_transfer':
      return ex.subaccounts.users.cancel(c);
    case 'confirm_transfers':
      return ex.subaccounts.users.confirmDue();
    case 'move_positions':
      return applyMovePositions(ex, c);
    case 'block_trade':
      return blockTradeOrRequest(ex, c);
    case 'block_approval':
      return setApproval(ex, c);
    case 'block_approve':
      return approveRequest(ex, c);
    case 'block_reject':
      return rejectRequest(ex, c);
    case 'block_invalidate':
      return invalidateSignature(ex, c);
    case 'create_combo':
      return ex.combos.create(c);
    case 'change_margin_model':
      return changeMarginModel(ex, c.userId, c.model);
    case 'set_pm_params': {
      if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
      const bad = ex.pm.setParams(c.params);
      return bad === null ? ex.pm.params : reject(ERR.INVALID_ARGUMENTS, 'invalid_parameter', bad);
    }
  }
}
