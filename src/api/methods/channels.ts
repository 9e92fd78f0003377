// public/get_channels (Strikebook's own; Deribit has no such method): the WebSocket channels this
// server serves, with the values each name parameter takes, so a client can tell in advance what a
// subscription will accept (a channel not listed is refused with -32602, docs/api-notes.md).
import { Type } from '@sinclair/typebox';
import { defineMethod } from '../rpc/registry.ts';
import { CHANNELS } from '../ws/channels.ts';

export const channelMethods = [
  defineMethod({
    name: 'public/get_channels',
    scope: 'none',
    summary: 'The WebSocket channel families this server serves: name template, access (public/private), the values of each parameter, the data each message carries.',
    params: Type.Object({ access: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])) }),
    handler(_ctx, p) {
      return CHANNELS.filter((c) => p.access === undefined || c.access === p.access);
    },
  }),
];
