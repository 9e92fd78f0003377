// Every operation of the service, in one list: the registry the transports are generated from.
import type { MethodDef } from '../rpc/registry.ts';
import { adminMethods } from './admin.ts';
import { authMethods } from './auth.ts';
import { inviteMethods } from './invites.ts';
import { marketMethods } from './market.ts';
import { tradingMethods } from './trading.ts';

export const allMethods: MethodDef[] = [...authMethods, ...inviteMethods, ...tradingMethods, ...adminMethods, ...marketMethods];

/** Operations grouped as in API.md section 3, for the inventory tests. */
export const methodGroups = {
  authentication: authMethods,
  invites: inviteMethods,
  trading: tradingMethods,
  admin: adminMethods,
  market: marketMethods,
};
