// The maker's side of the block RFQ screen (issue 34), shown to accounts an operator marked as makers
// (private/set_block_rfq_maker): the RFQs sent to it, live on block_rfq.maker.{currency}, each with a
// quote form (bid or ask, amount, a price per leg; the structure price is their exact ratio-weighted
// sum, bought legs added: lib/rfq.ts), and its own quotes, live on block_rfq.maker.quotes.{currency},
// with Edit (private/edit_block_rfq_quote, same id and side) and Cancel (cancel_block_rfq_quote).
import { useEffect, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useChannel, useLoad } from '../lib/live.ts';
import { useStackLabels } from '../lib/stack.ts';
import { legsText, structurePrice, upsert, structureText, type Dir, type QuoteView, type RfqView } from '../lib/rfq.ts';
import { Message, act } from './accounts.tsx';

type Msg = { ok: boolean; text: string } | null;
/** The form's target: a new quote on an RFQ, or an edit of one of the maker's quotes. */
type Draft = { rfq: RfqView; quote: QuoteView | null };

export function RfqMaker({ currency }: { currency: string }) {
  const [rfqs, setRfqs] = useState<RfqView[]>([]);
  const [quotes, setQuotes] = useState<QuoteView[]>([]);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [msg, setMsg] = useState<Msg>(null);
  const { data: loaded } = useLoad(() => priv<{ block_rfqs: RfqView[] }>('private/get_block_rfqs', { currency, role: 'maker', count: 20 }), [currency]);
  const { data: loadedQuotes } = useLoad(() => priv<QuoteView[]>('private/get_block_rfq_quotes', {}), [currency]);
  const byRfq = (l: RfqView[], r: RfqView) => upsert(l, r, (x) => x.block_rfq_id);
  const byQuote = (l: QuoteView[], q: QuoteView) => upsert(l, q, (x) => x.block_rfq_quote_id);
  // what the channels sent meanwhile is as new as the load: keep it
  useEffect(() => {
    if (loaded) setRfqs((cur) => loaded.block_rfqs.filter((r) => !cur.some((c) => c.block_rfq_id === r.block_rfq_id)).reduce(byRfq, cur));
  }, [loaded]);
  useEffect(() => {
    if (loadedQuotes) setQuotes((cur) => loadedQuotes.filter((q) => !cur.some((c) => c.block_rfq_quote_id === q.block_rfq_quote_id)).reduce(byQuote, cur));
  }, [loadedQuotes]);
  useChannel(`block_rfq.maker.${currency}`, (d) => setRfqs((l) => byRfq(l, d as RfqView)));
  useChannel(`block_rfq.maker.quotes.${currency}`, (d) => setQuotes((l) => byQuote(l, d as QuoteView)));

  const rfqIds = new Set(rfqs.map((r) => r.block_rfq_id));
  const mine = quotes.filter((q) => rfqIds.has(q.block_rfq_id));
  const cancel = (q: QuoteView) => act(setMsg, () => priv<QuoteView>('private/cancel_block_rfq_quote', { block_rfq_quote_id: q.block_rfq_quote_id }).then((x) => setQuotes((l) => byQuote(l, x))), `Quote #${q.block_rfq_quote_id} cancelled`);
  return (
    <div class="panel">
      <h2>Incoming RFQs</h2>
      <IncomingTable rfqs={rfqs} onQuote={(r) => setDraft({ rfq: r, quote: null })} />
      {draft && (
        <QuoteForm
          key={`${draft.rfq.block_rfq_id} ${draft.quote?.block_rfq_quote_id ?? 'new'}`}
          draft={draft}
          setMsg={setMsg}
          onDone={(q) => {
            setQuotes((l) => byQuote(l, q));
            setDraft(null);
          }}
          onClose={() => setDraft(null)}
        />
      )}
      <Message msg={msg} />
      <h3>My quotes</h3>
      <QuotesTable
        quotes={mine}
        onEdit={(q) => {
          const r = rfqs.find((x) => x.block_rfq_id === q.block_rfq_id);
          if (r) setDraft({ rfq: r, quote: q });
        }}
        onCancel={(q) => void cancel(q)}
      />
    </div>
  );
}

function IncomingTable({ rfqs, onQuote }: { rfqs: RfqView[]; onQuote: (r: RfqView) => void }) {
  const ref = useStackLabels();
  if (rfqs.length === 0) return <p class="muted">No RFQ sent to you yet.</p>;
  return (
    <table class="stack" aria-label="Incoming RFQs" ref={ref}>
      <thead>
        <tr>
          <th class="l">RFQ</th>
          <th class="l">Taker</th>
          <th class="l">Rating</th>
          <th class="l">Structure</th>
          <th>Amount</th>
          <th>Mark</th>
          <th class="l">State</th>
          <th class="l">Expires (UTC)</th>
          <th class="l">Traded</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {rfqs.map((r) => (
          <tr key={r.block_rfq_id} data-rfq-id={r.block_rfq_id} class={r.state === 'open' ? '' : 'dim'}>
            <td class="l">#{r.block_rfq_id}</td>
            <td class="l">{r.taker ?? 'anonymous'}</td>
            <td class="l">{r.taker_rating}</td>
            <td class="l wrap">{legsText(r.legs)}</td>
            <td>{fmt.amount(r.amount)}</td>
            <td>{structureText(r.mark_price)}</td>
            <td class="l">{r.state}</td>
            <td class="l muted">{fmt.utc(r.expiration_timestamp)}</td>
            <td class="l wrap">{r.trades.map((t) => `${t.direction === 'buy' ? 'taker bought' : 'taker sold'} ${fmt.amount(t.amount)} @ ${structureText(t.price)}`).join('; ')}</td>
            <td class="actions">
              {r.state === 'open' && (
                <button type="button" onClick={() => onQuote(r)}>
                  Quote
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The quote form; what came of a send is said by the panel (`setMsg`), since a sent quote closes the form. */
function QuoteForm({ draft, setMsg, onDone, onClose }: { draft: Draft; setMsg: (m: Msg) => void; onDone: (q: QuoteView) => void; onClose: () => void }) {
  const { rfq, quote } = draft;
  const [direction, setDirection] = useState<Dir>(quote?.direction ?? 'sell');
  const [amount, setAmount] = useState(String(quote?.amount ?? rfq.amount));
  const [prices, setPrices] = useState<string[]>(rfq.legs.map((l) => {
    const p = quote?.legs.find((x) => x.instrument_name === l.instrument_name)?.price;
    return p === undefined ? '' : String(p);
  }));
  const [aon, setAon] = useState(quote?.execution_instruction === 'all_or_none');
  const price = structurePrice(rfq.legs, prices);
  const send = () => {
    if (price === null) return;
    const legs = rfq.legs.map((l, i) => ({ instrument_name: l.instrument_name, direction: l.direction, ratio: l.ratio, price: Number(prices[i]) }));
    const params = { amount: Number(amount), legs, price: Number(price) };
    void act(
      setMsg,
      () =>
        (quote
          ? priv<QuoteView>('private/edit_block_rfq_quote', { ...params, block_rfq_quote_id: quote.block_rfq_quote_id })
          : priv<QuoteView>('private/add_block_rfq_quote', { ...params, block_rfq_id: rfq.block_rfq_id, direction, execution_instruction: aon ? 'all_or_none' : 'any_part_of' })
        ).then((q) => (onDone(q), q)),
      (q) => `Quote #${q.block_rfq_quote_id} ${quote ? 'saved' : 'sent'}`,
    );
  };
  return (
    <form
      class="rfq-quote"
      aria-label={quote ? `Edit quote ${quote.block_rfq_quote_id}` : `Quote RFQ ${rfq.block_rfq_id}`}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <h3>{quote ? `Edit quote #${quote.block_rfq_quote_id}` : `Quote RFQ #${rfq.block_rfq_id}`}</h3>
      <p class="muted wrap">
        {legsText(rfq.legs)}; the structure's mark {structureText(rfq.mark_price)}
      </p>
      <div class="rfq-leg">
        <label>
          Side
          <select aria-label="Quote side" value={direction} disabled={quote !== null} onChange={(e) => setDirection(e.currentTarget.value as Dir)}>
            <option value="sell">ask (sell the structure)</option>
            <option value="buy">bid (buy the structure)</option>
          </select>
        </label>
        <label class="rfq-ratio">
          Quote amount
          <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
        </label>
        {!quote && (
          <label class="check">
            <input type="checkbox" checked={aon} onChange={(e) => setAon(e.currentTarget.checked)} /> All or none
          </label>
        )}
      </div>
      <div class="rfq-leg">
        {rfq.legs.map((l, i) => (
          <label key={l.instrument_name} class="rfq-ratio">
            Price {l.instrument_name}
            <input inputMode="decimal" value={prices[i]} onInput={(e) => setPrices((p) => p.map((x, j) => (j === i ? e.currentTarget.value.trim() : x)))} />
          </label>
        ))}
      </div>
      <p aria-label="Structure price">Structure price: {price ?? '–'}</p>
      <div class="rfq-leg">
        <button type="submit" class="primary" disabled={price === null}>
          {quote ? 'Save quote' : 'Send quote'}
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

function QuotesTable({ quotes, onEdit, onCancel }: { quotes: QuoteView[]; onEdit: (q: QuoteView) => void; onCancel: (q: QuoteView) => void }) {
  const ref = useStackLabels();
  if (quotes.length === 0) return <p class="muted">No quote yet.</p>;
  return (
    <table class="stack" aria-label="My quotes" ref={ref}>
      <thead>
        <tr>
          <th class="l">Quote</th>
          <th class="l">RFQ</th>
          <th class="l">Side</th>
          <th>Price</th>
          <th>Amount</th>
          <th>Filled</th>
          <th class="l">State</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {quotes.map((q) => (
          <tr key={q.block_rfq_quote_id} data-quote-id={q.block_rfq_quote_id} class={q.quote_state === 'open' ? '' : 'dim'}>
            <td class="l">#{q.block_rfq_quote_id}</td>
            <td class="l">#{q.block_rfq_id}</td>
            <td class={`l ${q.direction === 'buy' ? 'bid' : 'ask'}`}>{q.direction === 'buy' ? 'bid' : 'ask'}</td>
            <td>{structureText(q.price)}</td>
            <td>{fmt.amount(q.amount)}</td>
            <td>{fmt.amount(q.filled_amount)}</td>
            <td class="l">{q.quote_state}</td>
            <td class="actions">
              {q.quote_state === 'open' && (
                <>
                  <button type="button" aria-label={`Edit quote ${q.block_rfq_quote_id}`} onClick={() => onEdit(q)}>
                    Edit
                  </button>
                  <button type="button" aria-label={`Cancel quote ${q.block_rfq_quote_id}`} onClick={() => onCancel(q)}>
                    Cancel
                  </button>
                </>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
