// Tables of many columns on a phone: styles.css stacks a `table.stack` into one label/value line
// per cell, and the label comes from the cell's column heading, copied here into `data-label` after
// every render (the tables are a page of rows at most, so this is cheap).
import { useLayoutEffect, useRef } from 'preact/hooks';

export function useStackLabels<T extends HTMLTableElement>() {
  const ref = useRef<T>(null);
  useLayoutEffect(() => {
    const table = ref.current;
    if (!table) return;
    const heads = [...table.querySelectorAll('thead tr:last-child th')].map((th) => th.textContent?.trim() ?? '');
    for (const tr of table.querySelectorAll('tbody tr')) {
      let col = 0;
      for (const td of (tr as HTMLTableRowElement).cells) {
        const label = heads[col] ?? '';
        if (td.dataset.label !== label) td.dataset.label = label;
        col += td.colSpan;
      }
    }
  });
  return ref;
}
