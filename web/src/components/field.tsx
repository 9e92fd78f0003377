// A form's text field as the screens write it: the caption and the input inside one <label> (the
// label names the input for screen readers and the tests), the input bound to a string state.

interface FieldProps {
  caption: string;
  value: string;
  onValue: (v: string) => void;
  /** Drops the spaces a paste brings (addresses, amounts, names); a free-text label keeps them. */
  trim?: boolean;
  /** The label's class: the screens lay fields out by it. */
  class?: string;
  // the input's own attributes the screens set
  inputMode?: 'numeric' | 'decimal';
  list?: string;
  maxLength?: number;
  placeholder?: string;
  size?: number;
}

export function Field({ caption, value, onValue, trim = false, class: cls, inputMode, list, maxLength, placeholder, size }: FieldProps) {
  return (
    <label class={cls}>
      {caption}
      <input inputMode={inputMode} list={list} maxLength={maxLength} placeholder={placeholder} size={size} value={value} onInput={(e) => onValue(trim ? e.currentTarget.value.trim() : e.currentTarget.value)} />
    </label>
  );
}
