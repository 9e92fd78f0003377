// Every operation of the service, in one list: the registry the transports are generated from.
import type { MethodDef } from '../rpc/registry.ts';
import { accountMethods } from './account.ts';
import { adminMethods } from './admin.ts';
import { apiKeyMethods } from './apiKeys.ts';
import { deribitExtraMethods } from './deribitExtras.ts';
import { authMethods } from './auth.ts';
import { channelMethods } from './channels.ts';
import { cancelOnDisconnectMethods } from './cancelOnDisconnect.ts';
import { orderMethods } from './orders.ts';
import { settlementMethods } from './settlements.ts';
import { volatilityMethods } from './volatility.ts';
import { fundsMethods } from './funds.ts';
import { inviteMethods } from './invites.ts';
import { marginMethods } from './margins.ts';
import { marketMethods } from './market.ts';
import { rateLimitMethods } from './rateLimits.ts';
import { tradingMethods } from './trading.ts';
import { mmpMethods } from './mmp.ts';
import { portfolioMarginMethods } from './portfolioMargin.ts';
import { sessionMethods } from './session.ts';
import { subaccountMethods } from './subaccounts.ts';
import { deskAccountMethods } from './deskAccounts.ts';
import { blockTradeMethods } from './blockTrades.ts';
import { blockApprovalMethods } from './blockApprovals.ts';
import { comboMethods } from './combos.ts';
import { blockRfqMethods } from '../../blockrfq/methods.ts';
import { walletMethods } from './wallet.ts';
import { walletAdminMethods } from './walletAdmin.ts';
import { labelAndCloseMethods } from './labelsAndClose.ts';
import { parityReadMethods } from './parityReads.ts';
import { apiKeyAdminMethods } from './apiKeyAdmin.ts';
import { announcementMethods } from './announcements.ts';
import { selfTradingMethods } from './selfTrading.ts';
import { disabledProductMethods } from './disabledProducts.ts';
import { accessLogMethods } from './accessLog.ts';
import { forkTokenMethods } from './forkToken.ts';
import { triggerOrderMethods } from './triggerOrders.ts';
import { accountSecurityMethods } from './accountSecurity.ts';

export const allMethods: MethodDef[] = [...accountMethods, ...authMethods, ...inviteMethods, ...tradingMethods, ...adminMethods, ...marketMethods, ...apiKeyMethods, ...deribitExtraMethods, ...fundsMethods, ...channelMethods, ...cancelOnDisconnectMethods, ...marginMethods, ...orderMethods, ...settlementMethods, ...volatilityMethods, ...rateLimitMethods, ...triggerOrderMethods, ...mmpMethods, ...sessionMethods, ...labelAndCloseMethods, ...parityReadMethods, ...apiKeyAdminMethods, ...announcementMethods, ...selfTradingMethods, ...disabledProductMethods, ...accessLogMethods, ...forkTokenMethods, ...portfolioMarginMethods, ...subaccountMethods, ...deskAccountMethods, ...accountSecurityMethods, ...blockTradeMethods, ...blockApprovalMethods, ...blockRfqMethods, ...comboMethods, ...walletMethods, ...walletAdminMethods];

/** Operations grouped as in API.md section 3, for the inventory tests. */
export const methodGroups = {
  authentication: authMethods,
  invites: inviteMethods,
  trading: tradingMethods,
  account: accountMethods,
  admin: adminMethods,
  market: marketMethods,
  apiKeys: apiKeyMethods,
  deribit: deribitExtraMethods,
  funds: fundsMethods,
  channels: channelMethods,
  cancelOnDisconnect: cancelOnDisconnectMethods,
  margins: marginMethods,
  orders: orderMethods,
  settlements: settlementMethods,
  volatility: volatilityMethods,
  rateLimits: rateLimitMethods,
  mmp: mmpMethods,
  triggerOrders: triggerOrderMethods,
  session: sessionMethods,
  labelsAndClose: labelAndCloseMethods,
  parityReads: parityReadMethods,
  apiKeyAdmin: apiKeyAdminMethods,
  announcements: announcementMethods,
  selfTrading: selfTradingMethods,
  disabledProducts: disabledProductMethods,
  accessLog: accessLogMethods,
  forkToken: forkTokenMethods,
  subaccounts: subaccountMethods,
  deskAccounts: deskAccountMethods,
  accountSecurity: accountSecurityMethods,
  blockTrades: blockTradeMethods,
  blockRfq: blockRfqMethods,
  combos: comboMethods,
  wallet: walletMethods,
  walletAdmin: walletAdminMethods,
};
