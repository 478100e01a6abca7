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
    /** 99.9th percentile. */
    p99_9: number;
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
    /** Requests each connection cycles through; setupRequest may rewrite method, path, headers and body. */
    requests?: Array<{ method?: string; path?: string; headers?: Record<string, string>; body?: string; setupRequest?: (req: Record<string, unknown>, context: Record<string, unknown>) => Record<string, unknown> }>;
  }
  interface Instance extends PromiseLike<Result> {
    stop(): void;
  }
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
