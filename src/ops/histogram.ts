/**
 * A Prometheus histogram for the hot paths: each label set is resolved once to a child whose
 * observation is a bucket search and two additions. prom-client's Histogram builds a label
 * key, validates the labels and looks up its buckets by their bound turned into a string on
 * every observation. This one registers in a prom-client Registry and is exposed exactly as
 * prom-client exposes a Histogram (same lines, same order).
 */
import type { Registry } from 'prom-client';

export class HistogramChild {
  /** Observations per bucket (not cumulative); past the last bound only `count` grows. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

type Values<L extends string> = Record<L, string>;

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

export class FastHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Children by their label values, nested in the order of `labelNames`. */
  private readonly tree = new Map<string, unknown>();
  /** Every child, in the order its label set was first seen (the exposition's order). */
  private readonly all: HistogramChild[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly buckets: readonly number[],
    registers: Registry[],
  ) {
    if (labelNames.length < 1 || labelNames.length > 3) throw new Error(`${name}: 1 to 3 label names`);
    for (const registry of registers) registry.registerMetric(this as never);
  }

  /** The child for these label values (as many as `labelNames`, in their order). */
  child(a: string, b?: string, c?: string): HistogramChild {
    const n = this.labelNames.length;
    let node = this.tree;
    if (n > 1) node = branch(node, a);
    if (n > 2) node = branch(node, b!);
    const leaf = n === 1 ? a : n === 2 ? b! : c!;
    return (node.get(leaf) as HistogramChild | undefined) ?? this.add(node, leaf, [a, b!, c!]);
  }

  private add(node: Map<string, unknown>, leaf: string, values: string[]): HistogramChild {
    const labels = {} as Values<L>;
    this.labelNames.forEach((name, i) => (labels[name] = values[i]));
    const child = new HistogramChild(labels, this.buckets);
    node.set(leaf, child);
    this.all.push(child);
    return child;
  }

  observe(labels: Values<L>, value: number): void {
    const [a, b, c] = this.labelNames.map((name) => labels[name]);
    this.child(a, b, c).observe(value);
  }

  /** What prom-client's Registry formats (the shape its Histogram gives). */
  getForPromString(): { name: string; help: string; type: string; values: ExportedValue[]; aggregator: string } {
    const values: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const child of this.all) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += child.counts[i];
        values.push({ labels: { le }, sharedLabels: child.labels, value: cumulative, metricName: bucket });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: child.labels, value: child.count, metricName: bucket },
        { labels: {}, sharedLabels: child.labels, value: child.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: child.labels, value: child.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** For Registry.getMetricsAsJSON: each value's own labels and its label set in one. */
  get(): object {
    const data = this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })),
    };
  }

  reset(): void {
    this.tree.clear();
    this.all.length = 0;
  }
}

function branch(node: Map<string, unknown>, value: string): Map<string, unknown> {
  let next = node.get(value) as Map<string, unknown> | undefined;
  if (!next) node.set(value, (next = new Map()));
  return next;
}
