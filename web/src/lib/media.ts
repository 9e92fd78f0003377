// Media queries as hooks: screens that change shape on a phone (the chain shows fewer columns)
// re-render when the query's answer changes, e.g. on rotating the phone.
import { useEffect, useState } from 'preact/hooks';

/** Below this width (CSS px) screens take their narrow, one-column shape (styles.css agrees). */
export const NARROW_QUERY = '(max-width: 720px)';

export function useMedia(query: string): boolean {
  const [match, set] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const mq = matchMedia(query);
    const on = () => set(mq.matches);
    on();
    mq.addEventListener('change', on);
    return () => mq.removeEventListener('change', on);
  }, [query]);
  return match;
}

export function useNarrow(): boolean {
  return useMedia(NARROW_QUERY);
}
