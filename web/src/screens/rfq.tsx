// The block RFQ screen (issue 34, route /rfq): per currency, the taker's side (request quotes, watch
// them, accept or cancel: rfqTaker.tsx), the maker's side for accounts an operator marked as makers
// (incoming RFQs and own quotes: rfqMaker.tsx), and the account's block trades with the requests that
// wait for its approval (blockTrades.tsx, also on the portfolio). A fill reloads the block trades.
import { useState } from 'preact/hooks';
import { priv, useLoad, useReloadOn, useSession } from '../lib/live.ts';
import { BlockTrades } from './blockTrades.tsx';
import { RfqMaker } from './rfqMaker.tsx';
import { RfqTaker } from './rfqTaker.tsx';

const CURRENCIES = ['BTC', 'ETH'] as const;

interface UserInfo {
  parent: { identity: string; is_maker: boolean };
  users: { user_id: number; identity: string; is_maker: boolean; taker_rating: number | null }[];
}

export function RfqScreen() {
  const s = useSession();
  const [currency, setCurrency] = useState<string>('BTC');
  const [local, setLocal] = useState(0);
  const bump = () => setLocal((x) => x + 1);
  // a block trade of either side (an RFQ fill, an approval elsewhere) changes the history
  const n = useReloadOn(['user.trades.any.any.100ms'], 0) + local;
  const { data: info } = useLoad(() => priv<UserInfo>('private/get_block_rfq_user_info'), []);
  // the session's own identity: a subaccount's session carries its username as `email`
  const me = info?.users.find((u) => u.identity === s?.email) ?? null;
  return (
    <>
      <div class="row" style="justify-content:space-between;align-items:center">
        <h1>Block RFQ</h1>
        <div class="tabs" role="tablist" aria-label="RFQ currency">
          {CURRENCIES.map((c) => (
            <button key={c} role="tab" type="button" aria-selected={c === currency} onClick={() => setCurrency(c)}>
              {c}
            </button>
          ))}
        </div>
      </div>
      {me && (
        <p class="muted">
          You are {me.identity}
          {me.is_maker ? ', a maker' : ''}; taker rating {me.taker_rating === null ? 'none yet' : `${me.taker_rating}%`}.
        </p>
      )}
      <RfqTaker key={`t ${currency}`} currency={currency} onTrade={bump} />
      {me?.is_maker && <RfqMaker key={`m ${currency}`} currency={currency} />}
      <BlockTrades n={n} />
    </>
  );
}
