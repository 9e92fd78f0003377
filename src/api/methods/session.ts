// Deribit's session introductions: public/hello (a client names itself; answered with our version).
import { Type } from '@sinclair/typebox';
import { SERVER_VERSION } from '../../app/version.ts';
import { defineMethod } from '../rpc/registry.ts';
import { SafeText } from './common.ts';

export const sessionMethods = [
  defineMethod({
    name: 'public/hello',
    scope: 'none',
    summary: "A client introduces itself (name and version, kept nowhere); the answer is the server's version.",
    params: Type.Object({ client_name: SafeText({ minLength: 1, maxLength: 100 }), client_version: SafeText({ minLength: 1, maxLength: 100 }) }),
    handler: () => ({ version: SERVER_VERSION }),
  }),
];
