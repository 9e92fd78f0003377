// The taker's side of the block RFQ screen (issue 34): a structure built from the currency's options
// (legs with a direction and an integer ratio, an amount, every maker or chosen ones, disclosed or
// anonymous) sent with private/create_block_rfq, and the taker's RFQs live on block_rfq.taker.{currency}
// (best bid and ask, how many price levels quote it). Buy at the best ask or sell at the best bid is a
// fill-or-kill private/accept_block_rfq of the whole amount; Cancel is private/cancel_block_rfq.
// Mounted per currency (rfq.tsx keys it), so a currency's list starts empty.
import { useEffect, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { call } from '../lib/rpc.ts';
import { priv, useChannel, useLoad } from '../lib/live.ts';
import { useStackLabels } from '../lib/stack.ts';
import { bestOf, legAmounts, legsText, upsert, structureText, type Dir, type RfqLevel, type RfqView } from '../lib/rfq.ts';
import { Message, act } from './accounts.tsx';

type Msg = { ok: boolean; text: string } | null;
interface LegDraft {
  instrument: string;
  direction: Dir;
  ratio: string;
}
interface Instrument {
  instrument_name: string;
  expiration_timestamp: number;
  strike: number;
}
interface AcceptAnswer {
  block_trades?: { id: string; trades: { instrument_name: string; direction: Dir; amount: number; price: number }[] }[];
}

const MAX_LEGS = 20;
const newLeg = (): LegDraft => ({ instrument: '', direction: 'buy', ratio: '1' });

export function RfqTaker({ currency, onTrade }: { currency: string; onTrade: () => void }) {
  const [rfqs, setRfqs] = useState<RfqView[]>([]);
  const { data: loaded } = useLoad(() => priv<{ block_rfqs: RfqView[] }>('private/get_block_rfqs', { currency, role: 'taker', count: 20 }), [currency]);
  // what the channel sent meanwhile is as new as the load: keep it
  useEffect(() => {
    if (loaded) setRfqs((cur) => loaded.block_rfqs.filter((r) => !cur.some((c) => c.block_rfq_id === r.block_rfq_id)).reduce((l, r) => upsert(l, r, (x) => x.block_rfq_id), cur));
  }, [loaded]);
  useChannel(`block_rfq.taker.${currency}`, (d) => {
    const r = d as RfqView;
    setRfqs((l) => upsert(l, r, (x) => x.block_rfq_id));
    if (r.state === 'filled') onTrade();
  });
  return (
    <>
      <CreateRfq currency={currency} onCreated={(r) => setRfqs((l) => upsert(l, r, (x) => x.block_rfq_id))} />
      <MyRfqs rfqs={rfqs} onChange={(r) => setRfqs((l) => upsert(l, r, (x) => x.block_rfq_id))} onTrade={onTrade} />
    </>
  );
}

function CreateRfq({ currency, onCreated }: { currency: string; onCreated: (r: RfqView) => void }) {
  const [legs, setLegs] = useState<LegDraft[]>([newLeg()]);
  const [amount, setAmount] = useState('');
  const [allMakers, setAllMakers] = useState(true);
  const [chosen, setChosen] = useState<string[]>([]);
  const [disclosed, setDisclosed] = useState(true);
  const [label, setLabel] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  const { data: instruments } = useLoad(() => call<Instrument[]>('public/get_instruments', { currency, kind: 'option' }), [currency]);
  const { data: makers } = useLoad(() => priv<string[]>('private/get_block_rfq_makers'), []);
  const names = new Set((instruments ?? []).map((i) => i.instrument_name));
  const setLeg = (i: number, patch: Partial<LegDraft>) => setLegs((l) => l.map((x, j) => (j === i ? { ...x, ...patch } : x)));

  // what is wrong with the form, in words, before anything is sent
  const ratios = legs.map((l) => Number(l.ratio));
  const amounts = legAmounts(amount, ratios);
  let problem: string | null = null;
  if (legs.some((l) => !names.has(l.instrument))) problem = `Pick each leg from the ${currency} options`;
  else if (new Set(legs.map((l) => l.instrument)).size !== legs.length) problem = 'Each instrument once';
  else if (ratios.some((r) => !/^\d+$/.test(String(r)) || r < 1 || r > 1000)) problem = 'Ratios are whole numbers from 1 to 1000';
  else if (amounts === null) problem = 'The amount is a positive number';
  else if (!allMakers && chosen.length === 0) problem = 'Choose at least one maker';

  const send = () => {
    if (amounts === null || problem !== null) return;
    const params: Record<string, unknown> = {
      legs: legs.map((l, i) => ({ instrument_name: l.instrument, direction: l.direction, amount: Number(amounts[i]) })),
      disclosed,
      ...(label ? { label } : {}),
      ...(allMakers ? {} : { makers: chosen }),
    };
    void act(setMsg, () => priv<RfqView>('private/create_block_rfq', params).then((r) => (onCreated(r), r)), (r) => `RFQ #${r.block_rfq_id} sent`);
  };

  return (
    <div class="panel">
      <h2>Request quotes</h2>
      <datalist id="rfq-instruments">
        {(instruments ?? []).map((i) => (
          <option key={i.instrument_name} value={i.instrument_name} />
        ))}
      </datalist>
      <form
        class="rfq-form"
        aria-label="New RFQ"
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        {legs.map((l, i) => (
          <div class="rfq-leg" key={i}>
            <label class="rfq-inst">
              Leg {i + 1} instrument
              <input list="rfq-instruments" value={l.instrument} placeholder={`${currency}-…`} onInput={(e) => setLeg(i, { instrument: e.currentTarget.value.trim() })} />
            </label>
            <label>
              Leg {i + 1} direction
              <select value={l.direction} onChange={(e) => setLeg(i, { direction: e.currentTarget.value as Dir })}>
                <option value="buy">buy</option>
                <option value="sell">sell</option>
              </select>
            </label>
            <label class="rfq-ratio">
              Leg {i + 1} ratio
              <input inputMode="numeric" value={l.ratio} onInput={(e) => setLeg(i, { ratio: e.currentTarget.value.trim() })} />
            </label>
            {legs.length > 1 && (
              <button type="button" aria-label={`Remove leg ${i + 1}`} onClick={() => setLegs((x) => x.filter((_, j) => j !== i))}>
                Remove
              </button>
            )}
          </div>
        ))}
        <div class="rfq-leg">
          <button type="button" disabled={legs.length >= MAX_LEGS} onClick={() => setLegs((x) => [...x, newLeg()])}>
            Add leg
          </button>
          <label class="rfq-ratio">
            Amount
            <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
          </label>
          <label class="rfq-ratio">
            Label
            <input value={label} maxLength={64} onInput={(e) => setLabel(e.currentTarget.value)} />
          </label>
        </div>
        <fieldset class="rfq-makers">
          <legend>Makers</legend>
          <label class="check">
            <input type="radio" name="rfq-makers" checked={allMakers} onChange={() => setAllMakers(true)} /> All makers
          </label>
          <label class="check">
            <input type="radio" name="rfq-makers" checked={!allMakers} onChange={() => setAllMakers(false)} /> Chosen makers
          </label>
          {!allMakers &&
            (makers ?? []).map((m) => (
              <label class="check" key={m}>
                <input type="checkbox" checked={chosen.includes(m)} onChange={(e) => setChosen((c) => (e.currentTarget.checked ? [...c, m] : c.filter((x) => x !== m)))} /> {m}
              </label>
            ))}
          {!allMakers && makers?.length === 0 && <span class="muted">No account is a maker yet.</span>}
        </fieldset>
        <label class="check" title="Makers see your name (and you theirs); anonymous hides both, and needs at least 5 makers">
          <input type="checkbox" checked={disclosed} onChange={(e) => setDisclosed(e.currentTarget.checked)} /> Disclosed
        </label>
        {amounts && problem === null && <p class="muted">Legs: {legs.map((l, i) => `${l.direction} ${amounts[i]} ${l.instrument}`).join(', ')}</p>}
        {problem && (legs.some((l) => l.instrument) || amount) && <p class="muted">{problem}</p>}
        <button type="submit" class="primary" disabled={problem !== null}>
          Request quotes
        </button>
      </form>
      <Message msg={msg} />
    </div>
  );
}

function MyRfqs({ rfqs, onChange, onTrade }: { rfqs: RfqView[]; onChange: (r: RfqView) => void; onTrade: () => void }) {
  const ref = useStackLabels();
  const [msg, setMsg] = useState<Msg>(null);
  const accept = (r: RfqView, direction: Dir, level: RfqLevel) =>
    act(
      setMsg,
      async () => {
        // legs as Deribit's accept takes them, each priced at its mark (the fill's leg prices are the quote's)
        const marks = await Promise.all(r.legs.map((l) => call<{ mark_price: number }>('public/ticker', { instrument_name: l.instrument_name })));
        const legs = r.legs.map((l, i) => ({ instrument_name: l.instrument_name, direction: l.direction, ratio: l.ratio, price: Number(marks[i]!.mark_price.toFixed(4)) }));
        const a = await priv<AcceptAnswer>('private/accept_block_rfq', { block_rfq_id: r.block_rfq_id, direction, price: level.price, amount: r.amount, legs, time_in_force: 'fill_or_kill' });
        onTrade();
        return a;
      },
      (a) => `RFQ #${r.block_rfq_id}: ${direction === 'buy' ? 'bought' : 'sold'} ${fmt.amount(r.amount)} at ${structureText(level.price)}${a.block_trades?.[0] ? `, block trade #${a.block_trades[0].id}` : ''}`,
    );
  const cancel = (r: RfqView) => act(setMsg, () => priv<RfqView>('private/cancel_block_rfq', { block_rfq_id: r.block_rfq_id }).then(onChange), `RFQ #${r.block_rfq_id} cancelled`);
  return (
    <div class="panel">
      <h2>My RFQs</h2>
      <Message msg={msg} />
      {rfqs.length === 0 ? (
        <p class="muted">No RFQ yet.</p>
      ) : (
        <table class="stack" aria-label="My RFQs" ref={ref}>
          <thead>
            <tr>
              <th class="l">RFQ</th>
              <th class="l">Structure</th>
              <th>Amount</th>
              <th class="l">State</th>
              <th>Best bid</th>
              <th>Best ask</th>
              <th>Quotes</th>
              <th class="l">Expires (UTC)</th>
              <th class="l">Fill</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rfqs.map((r) => {
              const { bid, ask, levels } = bestOf(r);
              const open = r.state === 'open';
              return (
                <tr key={r.block_rfq_id} data-rfq-id={r.block_rfq_id} class={open ? '' : 'dim'}>
                  <td class="l">#{r.block_rfq_id}</td>
                  <td class="l wrap">{legsText(r.legs)}</td>
                  <td>{fmt.amount(r.amount)}</td>
                  <td class="l">{r.state}</td>
                  <td class="bid">{bid ? `${structureText(bid.price)} × ${fmt.amount(bid.amount)}` : '–'}</td>
                  <td class="ask">{ask ? `${structureText(ask.price)} × ${fmt.amount(ask.amount)}` : '–'}</td>
                  <td>{levels}</td>
                  <td class="l muted">{fmt.utc(r.expiration_timestamp)}</td>
                  <td class="l wrap">{r.trades.map((t) => `${t.direction === 'buy' ? 'bought' : 'sold'} ${fmt.amount(t.amount)} @ ${structureText(t.price)} (${t.maker})`).join('; ')}</td>
                  <td class="actions">
                    {open && ask && (
                      <button type="button" class="buy" onClick={() => void accept(r, 'buy', ask)}>
                        Buy at {structureText(ask.price)}
                      </button>
                    )}
                    {open && bid && (
                      <button type="button" class="sell" onClick={() => void accept(r, 'sell', bid)}>
                        Sell at {structureText(bid.price)}
                      </button>
                    )}
                    {open && (
                      <button type="button" onClick={() => void cancel(r)}>
                        Cancel
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}
