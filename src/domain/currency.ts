// Currencies and their exact minor units. Every balance is an integer count of minor units.

export type CurrencyCode = 'BTC' | 'ETH' | 'USDC';

export interface Currency {
  code: CurrencyCode;
  name: string;
  decimals: number;
  /** Deribit's coin_type: the chain the coin lives on (BITCOIN or ETHER; USDC is an ERC-20 token). */
  coinType: 'BITCOIN' | 'ETHER';
  /** The currency the chain's network fees are paid in (Deribit network_currency). */
  networkCurrency: CurrencyCode;
  /** Self-service sandbox deposit limit per call, in minor units. */
  sandboxDepositLimit: number;
  indexName: string | null;
}

export const CURRENCIES: Record<CurrencyCode, Currency> = {
  BTC: { code: 'BTC', name: 'Bitcoin', decimals: 8, coinType: 'BITCOIN', networkCurrency: 'BTC', sandboxDepositLimit: 1000 * 1e8, indexName: 'btc_usd' },
  ETH: { code: 'ETH', name: 'Ethereum', decimals: 8, coinType: 'ETHER', networkCurrency: 'ETH', sandboxDepositLimit: 1000 * 1e8, indexName: 'eth_usd' },
  USDC: { code: 'USDC', name: 'USD Coin', decimals: 6, coinType: 'ETHER', networkCurrency: 'ETH', sandboxDepositLimit: 1000 * 1e6, indexName: null },
};

export const CURRENCY_CODES = Object.keys(CURRENCIES) as CurrencyCode[];
/** Currencies that settle options (inverse options are quoted and settled in the coin). */
export const OPTION_CURRENCIES: CurrencyCode[] = ['BTC', 'ETH'];

export function isCurrency(s: unknown): s is CurrencyCode {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(CURRENCIES, s);
}
