// The API's objects as the screens read them (Deribit shapes, API.md sections 3 and 6): only the
// fields used here.

export interface Instrument {
  instrument_name: string;
  strike: number;
  option_type: 'call' | 'put';
  expiration_timestamp: number;
  base_currency: string;
  tick_size: number;
  tick_size_steps: { above_price: number; tick_size: number }[];
  min_trade_amount: number;
  is_active: boolean;
  state: string;
}

export interface Ticker {
  instrument_name: string;
  best_bid_price: number;
  best_bid_amount: number;
  best_ask_price: number;
  best_ask_amount: number;
  mark_price: number;
  mark_iv: number | null;
  bid_iv?: number | null;
  ask_iv?: number | null;
  last_price?: number | null;
  /** the last 24 h: `volume` in coin (Deribit's ticker stats) */
  stats?: { volume?: number | null };
  index_price: number | null;
  open_interest: number;
  min_price: number;
  max_price: number;
  greeks: { delta: number; gamma: number; vega: number; theta: number; rho: number };
  state?: string;
}

export interface Order {
  order_id: string;
  instrument_name: string;
  direction: 'buy' | 'sell';
  price: number;
  amount: number;
  filled_amount: number;
  order_state: string;
  order_type: string;
  label: string;
  time_in_force: string;
  post_only: boolean;
  reduce_only: boolean;
  creation_timestamp: number;
  last_update_timestamp: number;
  average_price: number;
}

export interface Position {
  instrument_name: string;
  size: number;
  direction: string;
  average_price: number;
  mark_price: number;
  index_price: number;
  floating_profit_loss: number;
  realized_profit_loss: number;
  total_profit_loss: number;
  delta: number;
  gamma: number;
  vega: number;
  theta: number;
}

export interface PublicTrade {
  trade_id: string;
  instrument_name: string;
  price: number;
  amount: number;
  direction: 'buy' | 'sell';
  timestamp: number;
  iv?: number;
  index_price?: number;
}

export interface UserTrade extends PublicTrade {
  order_id: string;
  fee: number;
  liquidity: string;
}

export interface AccountSummary {
  currency: string;
  balance: number;
  equity: number;
  initial_margin: number;
  maintenance_margin: number;
  available_funds: number;
  available_withdrawal_funds: number;
  total_pl: number;
  session_upl: number;
  session_rpl: number;
  options_delta: number;
}
