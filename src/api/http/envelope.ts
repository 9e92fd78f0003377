// The Deribit envelope (API.md 1.2) around a call's outcome, as text, for every HTTP answer.
import type { CallOutput } from '../rpc/dispatch.ts';
import { ERROR_TABLE } from '../rpc/errors.ts';
import { resultText } from '../reads/rendered.ts';

export interface Envelope {
  id: unknown;
  usIn: number;
}

export function micros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export function envelopeText(env: Envelope, out: CallOutput, testnet: boolean): string {
  const usOut = micros();
  const head = env.id === undefined ? '{"jsonrpc":"2.0"' : `{"jsonrpc":"2.0","id":${JSON.stringify(env.id)}`;
  const body = out.error ? `,"error":${JSON.stringify(out.error)}` : `,"result":${resultText(out.result)}`;
  return `${head}${body},"usIn":${env.usIn},"usOut":${usOut},"usDiff":${usOut - env.usIn},"testnet":${testnet}}`;
}

export function errorOut(code: keyof typeof ERROR_TABLE, reason?: string): CallOutput {
  const info = ERROR_TABLE[code];
  return { status: info.status, error: { code, message: info.message, ...(reason ? { data: { reason } } : {}) } };
}

