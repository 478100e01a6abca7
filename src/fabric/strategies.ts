/**
 * Terminator strategies: which host of a service a dial goes to, as a service's `terminatorStrategy` names it.
 * Every strategy first keeps the best precedence present (`required` before `default`; `failed` hosts are never
 * chosen), then:
 *
 * - `smartrouting` (the default): the least cost, where cost is the path to the host's router, the terminator's
 *   own cost and what this controller saw of it lately (each circuit open on it, and recent failures, make it
 *   dearer); at random among equals.
 * - `weighted`: at random, weighted towards cheaper hosts (weight 1 / (1 + cost)).
 * - `random`: at random.
 * - `sticky`: the host the dialer's stickiness token names while it can still be used; otherwise as
 *   `smartrouting`. The token handed back is the chosen terminator's id.
 */

export interface Candidate {
  id: string;
  precedence: string;
  /** The terminator's own cost (0..65535). */
  cost: number;
  /** Cost of the path from the dialer's router to the host's router. */
  pathCost: number;
}

/** What a process remembers of each terminator to price it (smart routing). */
export class TerminatorStats {
  private readonly open = new Map<string, number>();
  private readonly failures = new Map<string, { count: number; at: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    /** Added per open circuit. */
    private readonly circuitCost = 2,
    /** Added per recent failure; failures are forgotten after `failureMemoryMs`. */
    private readonly failureCost = 20,
    private readonly failureMemoryMs = 60_000,
  ) {}

  circuitOpened(id: string): void {
    this.open.set(id, (this.open.get(id) ?? 0) + 1);
  }

  circuitClosed(id: string): void {
    const n = (this.open.get(id) ?? 0) - 1;
    if (n > 0) this.open.set(id, n);
    else this.open.delete(id);
  }

  failed(id: string): void {
    const f = this.failures.get(id);
    this.failures.set(id, { count: (f && this.now() - f.at < this.failureMemoryMs ? f.count : 0) + 1, at: this.now() });
  }

  succeeded(id: string): void {
    this.failures.delete(id);
  }

  /** The extra cost this controller adds to a terminator now. */
  dynamicCost(id: string): number {
    const f = this.failures.get(id);
    const recent = f && this.now() - f.at < this.failureMemoryMs ? f.count : 0;
    return (this.open.get(id) ?? 0) * this.circuitCost + recent * this.failureCost;
  }

  forget(id: string): void {
    this.open.delete(id);
    this.failures.delete(id);
  }
}

export const STRATEGIES = ['smartrouting', 'weighted', 'random', 'sticky'] as const;

function bestPrecedence<T extends Candidate>(candidates: readonly T[]): T[] {
  const usable = candidates.filter((c) => c.precedence !== 'failed');
  const required = usable.filter((c) => c.precedence === 'required');
  return required.length > 0 ? required : usable;
}

function cheapest<T extends Candidate>(pool: readonly T[], costOf: (c: T) => number, random: () => number): T | undefined {
  if (pool.length === 0) return undefined;
  const least = Math.min(...pool.map(costOf));
  const best = pool.filter((c) => costOf(c) === least);
  return best[Math.floor(random() * best.length)];
}

export interface Choice<T> {
  terminator: T;
  /** A stickiness token to hand the dialer (sticky strategy). */
  stickyToken?: string;
}

export function chooseTerminator<T extends Candidate>(
  strategy: string,
  candidates: readonly T[],
  options: { stats?: TerminatorStats; stickyToken?: string; random?: () => number } = {},
): Choice<T> | undefined {
  const random = options.random ?? Math.random;
  const pool = bestPrecedence(candidates);
  if (pool.length === 0) return undefined;
  const smartCost = (c: T) => c.pathCost + c.cost + (options.stats?.dynamicCost(c.id) ?? 0);
  switch (strategy) {
    case 'random':
      return { terminator: pool[Math.floor(random() * pool.length)]! };
    case 'weighted': {
      const weights = pool.map((c) => 1 / (1 + c.pathCost + c.cost));
      let pick = random() * weights.reduce((a, b) => a + b, 0);
      for (let i = 0; i < pool.length; i++) {
        pick -= weights[i]!;
        if (pick < 0) return { terminator: pool[i]! };
      }
      return { terminator: pool[pool.length - 1]! };
    }
    case 'sticky': {
      const stuck = options.stickyToken ? pool.find((c) => c.id === options.stickyToken) : undefined;
      const terminator = stuck ?? cheapest(pool, smartCost, random)!;
      return { terminator, stickyToken: terminator.id };
    }
    default:
      return { terminator: cheapest(pool, smartCost, random)! };
  }
}
