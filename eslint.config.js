// Lint rules: typescript-eslint's recommended set; `any` in src needs a comment saying why.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const NOT_THE_SAME_BITS = 'not the same bits on every Node.js release: use Math.exp(b * Math.log(a))';

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'dist/**', 'web/dist/**', 'test-artifacts/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // A replay must reach the live state on whichever Node.js release runs it: Math.pow and `**`
    // differ in the last bit between Node 20 and 24 (even 10 ** -4); Math.exp and Math.log do not
    // (test/domain/pricingBits.test.ts).
    files: ['src/**'],
    rules: {
      'no-restricted-properties': ['error', { object: 'Math', property: 'pow', message: NOT_THE_SAME_BITS }],
      'no-restricted-syntax': [
        'error',
        // BigInt powers are exact; a literal to a literal or to a named constant (10 ** PRICE_SCALE)
        // is folded once and exact
        {
          selector: "BinaryExpression[operator='**']:not([left.bigint]):not([left.type='Literal'][right.type='Literal']):not([left.type='Literal'][right.type='Identifier'][right.name=/^[A-Z][A-Z0-9_]*$/])",
          message: `${NOT_THE_SAME_BITS}; a power of ten: pow10(n) (src/domain/decimal.ts)`,
        },
        { selector: "AssignmentExpression[operator='**=']", message: NOT_THE_SAME_BITS },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
