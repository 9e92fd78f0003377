// Portfolio margin in the exchange state (issue 35): each account's margin model and the operator's
// parameters. Plain data owned by the single writer, changed only by journaled commands
// (change_margin_model: src/risk/portfolio/switch.ts; set_pm_params), and snapshotted.
import { DEFAULT_PM_PARAMS, paramsRefusal, type PortfolioMarginParams } from './params.ts';

export const MARGIN_MODELS = ['cross_sm', 'cross_pm', 'segregated_sm', 'segregated_pm'] as const;
export type MarginModel = (typeof MARGIN_MODELS)[number];
/** Every account starts here (Deribit's default for a new account is standard margin). */
export const DEFAULT_MARGIN_MODEL: MarginModel = 'segregated_sm';

export function isPortfolioModel(m: MarginModel): boolean {
  return m === 'cross_pm' || m === 'segregated_pm';
}

export function isCrossModel(m: MarginModel): boolean {
  return m === 'cross_pm' || m === 'cross_sm';
}

interface StateJson {
  models: [number, MarginModel][];
  params: PortfolioMarginParams | null;
}

export class PortfolioMarginState {
  /** Accounts not on the default model, by user id. */
  readonly models = new Map<number, MarginModel>();
  params: Readonly<PortfolioMarginParams> = DEFAULT_PM_PARAMS;
  /** Bumped whenever the parameters change: every cached scenario vector is then stale. Derived. */
  generation = 0;

  model(userId: number): MarginModel {
    return this.models.get(userId) ?? DEFAULT_MARGIN_MODEL;
  }

  isPm(userId: number): boolean {
    return this.models.size > 0 && isPortfolioModel(this.model(userId));
  }

  setModel(userId: number, m: MarginModel): void {
    if (m === DEFAULT_MARGIN_MODEL) this.models.delete(userId);
    else this.models.set(userId, m);
  }

  /** Applies a parameter change (fields absent keep their value); the refused field's name, or null. */
  setParams(change: Partial<PortfolioMarginParams>): string | null {
    const next: PortfolioMarginParams = { ...this.params, ...change };
    if (change.extendedMoves !== undefined) next.extendedMoves = Object.freeze([...change.extendedMoves]);
    const bad = paramsRefusal(next);
    if (bad !== null) return bad;
    this.params = Object.freeze(next);
    this.generation++;
    return null;
  }

  isEmpty(): boolean {
    return this.models.size === 0 && this.params === DEFAULT_PM_PARAMS;
  }

  toJson(): StateJson {
    return { models: [...this.models].sort((a, b) => a[0] - b[0]), params: this.params === DEFAULT_PM_PARAMS ? null : { ...this.params, extendedMoves: [...this.params.extendedMoves] } };
  }

  restore(j: StateJson | undefined): void {
    this.models.clear();
    this.params = DEFAULT_PM_PARAMS;
    if (j === undefined) return;
    for (const [id, m] of j.models) this.models.set(id, m);
    if (j.params !== null) this.params = Object.freeze({ ...j.params, extendedMoves: Object.freeze([...j.params.extendedMoves]) });
    this.generation++;
  }
}
