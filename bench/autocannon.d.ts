// Minimal typings for the parts of autocannon's programmatic API the benchmark uses (the package ships none).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    total: number;
  }
  interface Result {
    requests: Histogram & { sent: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    mismatches: number;
    resets: number;
    duration: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    /** Stop after this many requests in total, even before `duration` ends. */
    maxOverallRequests?: number;
    pipelining?: number;
    timeout?: number;
    method?: string;
    body?: string;
    headers?: Record<string, string>;
    tlsOptions?: Record<string, unknown>;
    title?: string;
  }
  interface Instance extends PromiseLike<Result> {
    stop(): void;
  }
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
