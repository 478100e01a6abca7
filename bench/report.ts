/**
 * `npm run bench:report`: reads the per-scenario results (bench/results/S<n>-<size>.json, written by
 * `npm run bench -- --scenario …`) and writes bench/results/report.md (tables) and bench/results/report.svg
 * (a hand-written bar chart: closed-loop throughput and p99 per load, Portcullis beside the bare-Node limit).
 * When README.md has the markers `<!-- bench-report:start -->` / `<!-- bench-report:end -->`, the summary
 * table between them is replaced with the latest one.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ResultRow, ScenarioResult } from './scenarios/context.ts';
import { floodTable } from './scenarios/flood.ts';

const DIR = join('bench', 'results');
const SIZE_ORDER = ['small', 'medium', 'large', 'many-services'];

const results = readdirSync(DIR)
  .filter((f) => /^S\d+-[a-z0-9-]+\.json$/.test(f))
  .map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as ScenarioResult)
  .sort((a, b) => sizeRank(a.size) - sizeRank(b.size) || workersOf(a) - workersOf(b) || num(a.scenario) - num(b.scenario));
if (results.length === 0) throw new Error(`no scenario results in ${DIR}; run \`npm run bench -- --scenario all --size small\` first`);

function sizeRank(s: string): number {
  const i = SIZE_ORDER.indexOf(s);
  return i < 0 ? SIZE_ORDER.length : i;
}
function workersOf(r: ScenarioResult): number {
  return r.settings.workers ?? 1;
}
/** Results are grouped by dataset size and the controller's worker processes. */
function groupOf(r: ScenarioResult): string {
  const w = workersOf(r);
  return w > 1 ? `${r.size}, ${w} worker processes` : r.size;
}
function num(id: string): number {
  return Number(id.slice(1));
}

// ---- formatting --------------------------------------------------------------------------------------------
function n(x: number | undefined, digits?: number): string {
  if (x === undefined || Number.isNaN(x)) return '–';
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}
function pct(part: number, whole: number): string {
  return whole > 0 && Number.isFinite(part) ? `${((part / whole) * 100).toFixed(1)}%` : '–';
}

interface LoadLine {
  scenario: string;
  size: string;
  load: string;
  mode: ResultRow['mode'];
  p?: ResultRow;
  bare?: ResultRow;
  openP?: ResultRow;
  openBare?: ResultRow;
  targetP?: ResultRow;
  targetBare?: ResultRow;
}

/** Rows grouped per load (every load label is unique within a scenario). */
function loadLines(r: ScenarioResult): LoadLine[] {
  const out: LoadLine[] = [];
  for (const row of r.rows) {
    let line = out.find((l) => l.load === row.load);
    if (!line) {
      line = { scenario: r.scenario, size: r.size, load: row.load, mode: row.mode === 'burst' ? 'burst' : 'closed' };
      out.push(line);
    }
    if (row.mode === 'open') line[row.server === 'portcullis' ? 'openP' : 'openBare'] = row;
    else if (row.mode === 'target') line[row.server === 'portcullis' ? 'targetP' : 'targetBare'] = row;
    else line[row.server === 'portcullis' ? 'p' : 'bare'] = row;
  }
  return out;
}

// ---- markdown ----------------------------------------------------------------------------------------------
const sizes = [...new Set(results.map(groupOf))];
const md: string[] = ['# Portcullis benchmark report', ''];
const first = results[0]!;
md.push(
  `Generated ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC from ${results.length} scenario results. ` +
    `Machine: ${first.machine.cpu}, ${first.machine.cores} cores, ${first.machine.memGb} GB, Node ${first.machine.node}, ${first.machine.os} ` +
    '(load generator, controller and bare server share the cores). HTTPS over 127.0.0.1.',
  '',
  '- **closed loop**: autocannon, keep-alive connections each sending its next request when the previous answer arrives; max throughput; latency resolution 1 ms.',
  '- **open loop**: our own scheduler at a constant arrival rate (a fraction of Portcullis\' closed-loop throughput, the same rate for both servers); latency from the *scheduled* send time (no coordinated omission), microsecond resolution.',
  '- **burst**: a fixed set of requests fired together (enrollments, re-authentication after restart); req/s over the wall time of the burst.',
  '- **bare**: a plain `node:https` server with the controller\'s key and certificate replaying Portcullis\' own response bytes — the practical limit of Node + TLS on this machine. **% of bare**: Portcullis throughput ÷ bare throughput.',
  '- CPU: server process CPU time over the run (100% = one core); RSS at the end of the run.',
  '',
);
for (const size of sizes) {
  const rs = results.filter((r) => groupOf(r) === size);
  const counts = rs[0]!.dataset.counts;
  md.push(`## ${size}`, '', `Dataset: ${Object.entries(counts).map(([k, v]) => `${n(v, 0)} ${k}`).join(', ')}; loaded in ${n(rs[0]!.dataset.loadMs / 1000, 1)} s. Measured ${rs.map((r) => r.date.slice(0, 10)).sort().at(-1)}.`, '');
  const loads = loadTable(rs);
  if (loads.length > 2) md.push(...loads, '');
  const targets = targetTable(rs);
  if (targets.length) md.push(...targets, '');
  const metrics = rs.flatMap((r) => r.metrics.map((m) => ({ scenario: r.scenario, ...m })));
  if (metrics.length) {
    md.push('| Scenario | Figure | Portcullis | bare | Portcullis vs bare |', '|---|---|---:|---:|---:|');
    for (const m of metrics) {
      md.push(`| ${m.scenario} | ${m.name}${m.note ? ` (${m.note})` : ''} | ${n(m.portcullis)} ${m.unit} | ${m.bare === undefined ? '–' : `${n(m.bare)} ${m.unit}`} | ${m.bare === undefined ? '–' : `${(m.portcullis / m.bare).toFixed(1)}×`} |`);
    }
    md.push('');
  }
  for (const r of rs) {
    const flood = r.scenario === 'S13' ? floodTable(r) : [];
    if (flood.length) md.push(...flood, '');
  }
  md.push('Scenario notes:', '');
  for (const r of rs) {
    const workers = r.settings.workers ?? 1;
    md.push(
      `- **${r.scenario}** ${r.title}. ${r.notes.join(' ')} (${r.settings.duration} s per run after a ${r.settings.warmupS} s warm-up; open loop at ${r.settings.openFraction * 100}% of the closed-loop rate, at most ${r.settings.maxRate}/s; ` +
        `controller with ${workers} worker process${workers === 1 ? '' : 'es'}.)`,
    );
  }
  md.push('');
}
md.push('![throughput and p99 per scenario, Portcullis beside the bare-Node limit](report.svg)', '');

function loadTable(rs: ScenarioResult[]): string[] {
  const lines = [
    '| Scenario | Load | Mode | req/s | bare req/s | % of bare | p50 ms | p99 ms | p99.9 ms | bare p99 ms | open rate/s | open p50 / p99 / p99.9 ms | bare open p99 ms | CPU % | RSS MB | errors |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rs) {
    for (const l of loadLines(r)) {
      const p = l.p;
      const b = l.bare;
      const o = l.openP;
      const errors = [p, b, o, l.openBare].reduce((s, x) => s + (x ? x.non2xx + x.errors : 0), 0);
      lines.push(
        `| ${r.scenario} | ${l.load} | ${l.mode} c=${p?.connections ?? '–'} | ${n(p?.rps)} | ${n(b?.rps)} | ${p && b ? pct(p.rps, b.rps) : '–'} | ${lat(p?.p50, l.mode)} | ${lat(p?.p99, l.mode)} | ${lat(p?.p999, l.mode)} | ${lat(b?.p99, l.mode)} | ` +
          `${o ? n(o.targetRate, 0) : '–'} | ${o ? `${n(o.p50)} / ${n(o.p99)} / ${n(o.p999)}` : '–'} | ${n(l.openBare?.p99)} | ${n(p?.cpuPct, 0)} | ${n(p?.rssMb, 0)} | ${errors} |`,
      );
    }
  }
  return lines;
}

/**
 * The issue's latency target for the hot client paths: p99 under 10 ms at a fixed arrival rate. Both servers are
 * driven open-loop at exactly that rate; "achieved" is the rate of answers, below the target when the server (or
 * the load generator sharing the cores) could not keep up.
 */
function targetTable(rs: ScenarioResult[]): string[] {
  const lines: string[] = [];
  for (const r of rs) {
    for (const l of loadLines(r)) {
      const measured = r.rows.some((x) => x.load === l.load && x.mode === 'target');
      const skipped = r.notes.some((x) => x.startsWith(`${l.load}: portcullis not driven`));
      if (!r.settings.targetRate || (!measured && !skipped)) continue;
      const t = l.targetP;
      const b = l.targetBare;
      if (lines.length === 0) {
        lines.push(
          `Latency target (open loop at ${n(r.settings.targetRate, 0)} req/s, both servers; target: p99 under 10 ms; "max below target": the closed-loop maximum is under that rate, so the server is not driven there):`,
          '',
          '| Scenario | Load | achieved req/s | p50 / p99 / p99.9 ms | p99 < 10 ms | bare achieved req/s | bare p50 / p99 / p99.9 ms | CPU % | errors |',
          '|---|---|---:|---:|:---:|---:|---:|---:|---:|',
        );
      }
      const errors = (t ? t.non2xx + t.errors : 0) + (b ? b.non2xx + b.errors : 0);
      const below = 'max below target';
      lines.push(
        `| ${r.scenario} | ${l.load} | ${t ? n(t.rps) : below} | ${t ? `${n(t.p50)} / ${n(t.p99)} / ${n(t.p999)}` : `max ${n(l.p?.rps)} req/s`} | ${t && t.p99 < 10 && t.rps >= (t.targetRate ?? 0) * 0.98 ? 'yes' : 'no'} | ` +
          `${b ? n(b.rps) : below} | ${b ? `${n(b.p50)} / ${n(b.p99)} / ${n(b.p999)}` : `max ${n(l.bare?.rps)} req/s`} | ${t ? n(t.cpuPct, 0) : '–'} | ${errors} |`,
      );
    }
  }
  return lines;
}

/** autocannon latencies are whole milliseconds: show `<1` for 0. */
function lat(x: number | undefined, mode: string): string {
  if (x === undefined) return '–';
  if (mode === 'closed') return x < 1 ? '<1' : n(x, 0);
  return n(x);
}

writeFileSync(join(DIR, 'report.md'), md.join('\n'));

// ---- SVG chart ---------------------------------------------------------------------------------------------
const BAR = 9;
const ROW = BAR * 2 + 8;
const LABEL_W = 330;
const PANEL_W = 330;
const GAP = 40;
const P_COLOR = '#2f6db5';
const B_COLOR = '#b8bec6';
const svg: string[] = [];
let y = 60;
const width = LABEL_W + PANEL_W * 2 + GAP * 2;
const body: string[] = [];
for (const size of sizes) {
  const lines = results.filter((r) => groupOf(r) === size).flatMap((r) => loadLines(r).filter((l) => l.p && l.bare).map((l) => ({ ...l, label: `${r.scenario} ${l.load}` })));
  if (lines.length === 0) continue;
  body.push(`<text x="10" y="${y}" font-size="15" font-weight="bold">${esc(size)}</text>`);
  y += 10;
  const maxRps = Math.max(...lines.map((l) => Math.max(l.p!.rps, l.bare!.rps)));
  const maxP99 = Math.max(...lines.map((l) => Math.max(l.p!.p99, l.bare!.p99, 1)));
  const xRps = logScale(1, maxRps, PANEL_W - 60);
  const xLat = logScale(0.5, maxP99, PANEL_W - 60);
  const px1 = LABEL_W;
  const px2 = LABEL_W + PANEL_W + GAP;
  body.push(`<text x="${px1}" y="${y + 4}" font-size="11" fill="#444">closed-loop req/s (log scale)</text>`);
  body.push(`<text x="${px2}" y="${y + 4}" font-size="11" fill="#444">closed-loop p99 latency, ms (log scale)</text>`);
  y += 12;
  for (const l of lines) {
    body.push(`<text x="${LABEL_W - 8}" y="${y + BAR + 3}" font-size="10" text-anchor="end">${esc(l.label.length > 52 ? l.label.slice(0, 51) + '…' : l.label)}</text>`);
    bar(px1, y, xRps(l.p!.rps), P_COLOR, n(l.p!.rps, 0) + ` (${pct(l.p!.rps, l.bare!.rps)})`);
    bar(px1, y + BAR, xRps(l.bare!.rps), B_COLOR, n(l.bare!.rps, 0));
    bar(px2, y, xLat(Math.max(l.p!.p99, 0.5)), P_COLOR, lat(l.p!.p99, l.mode));
    bar(px2, y + BAR, xLat(Math.max(l.bare!.p99, 0.5)), B_COLOR, lat(l.bare!.p99, l.mode));
    y += ROW;
  }
  y += 24;
}
function bar(x: number, top: number, w: number, color: string, label: string): void {
  const width = Math.max(1, w);
  body.push(`<rect x="${x}" y="${top}" width="${width.toFixed(1)}" height="${BAR - 1}" fill="${color}"/>`);
  body.push(`<text x="${(x + width + 3).toFixed(1)}" y="${top + BAR - 1}" font-size="8" fill="#333">${esc(label)}</text>`);
}
function logScale(min: number, max: number, px: number): (v: number) => number {
  const lo = Math.log10(min);
  const hi = Math.log10(Math.max(max, min * 10));
  return (v) => ((Math.log10(Math.max(v, min)) - lo) / (hi - lo)) * px;
}
function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
const height = y + 10;
svg.push(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
  `<rect width="100%" height="100%" fill="white"/>`,
  `<text x="10" y="22" font-size="17" font-weight="bold">Portcullis vs the bare-Node limit, per scenario</text>`,
  `<text x="10" y="40" font-size="11" fill="#444">${esc(`${first.machine.cpu}, ${first.machine.cores} cores, Node ${first.machine.node}; HTTPS over loopback`)}</text>`,
  `<rect x="${LABEL_W + PANEL_W}" y="10" width="10" height="10" fill="${P_COLOR}"/><text x="${LABEL_W + PANEL_W + 14}" y="19" font-size="11">Portcullis</text>`,
  `<rect x="${LABEL_W + PANEL_W + 90}" y="10" width="10" height="10" fill="${B_COLOR}"/><text x="${LABEL_W + PANEL_W + 104}" y="19" font-size="11">bare node:https (same bytes)</text>`,
  ...body,
  '</svg>',
);
writeFileSync(join(DIR, 'report.svg'), svg.join('\n') + '\n');

// ---- README ------------------------------------------------------------------------------------------------
const START = '<!-- bench-report:start -->';
const END = '<!-- bench-report:end -->';
if (existsSync('README.md')) {
  const readme = readFileSync('README.md', 'utf8');
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a >= 0 && b > a) {
    const summary = readmeSummary();
    writeFileSync('README.md', readme.slice(0, a + START.length) + '\n' + summary + '\n' + readme.slice(b));
    console.log('README.md: performance table updated');
  }
}

/** The README keeps one compact table: the largest size measured, closed-loop figures and % of bare. */
function readmeSummary(): string {
  const largest = results[results.length - 1]!.size;
  const size = largest;
  const rs = results.filter((r) => r.size === largest && workersOf(r) === 1);
  const multi = results.filter((r) => r.size === largest && workersOf(r) > 1);
  const m = rs[0]!.machine;
  const lines = [
    `Latest run: dataset \`${size}\` (${Object.entries(rs[0]!.dataset.counts).map(([k, v]) => `${n(v, 0)} ${k}`).join(', ')}), ` +
      `${rs.map((r) => r.date.slice(0, 10)).sort().at(-1)}, on ${m.cpu}, ${m.cores} cores, ${m.memGb} GB, Node ${m.node} — load generator and servers on the same machine.`,
    '',
    '| Scenario | Load | req/s | bare req/s | % of bare | p99 ms | open-loop rate/s | open p50 / p99 / p99.9 ms |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rs) {
    for (const l of loadLines(r)) {
      if (!l.p) continue;
      const o = l.openP;
      lines.push(`| ${r.scenario} | ${l.load}${l.mode === 'burst' ? ' (burst)' : ''} | ${n(l.p.rps)} | ${n(l.bare?.rps)} | ${l.bare ? pct(l.p.rps, l.bare.rps) : '–'} | ${lat(l.p.p99, l.mode)} | ${o ? n(o.targetRate, 0) : '–'} | ${o ? `${n(o.p50)} / ${n(o.p99)} / ${n(o.p999)}` : '–'} |`);
    }
  }
  for (const r of rs) for (const x of r.metrics) lines.push(`| ${r.scenario} | ${x.name} | ${n(x.portcullis)} ${x.unit} | ${x.bare === undefined ? '–' : `${n(x.bare)} ${x.unit}`} | | | | |`);
  const targets = targetTable(rs);
  if (targets.length) lines.push('', 'One worker process:', '', ...targets);
  if (multi.length) {
    const w = workersOf(multi[0]!);
    lines.push('', `${w} worker processes (the default on this machine: one per core), same dataset:`, '', '| Scenario | Load | req/s | bare req/s | % of bare | p99 ms | CPU % | RSS MB |', '|---|---|---:|---:|---:|---:|---:|---:|');
    for (const r of multi) {
      for (const l of loadLines(r)) {
        if (!l.p) continue;
        lines.push(`| ${r.scenario} | ${l.load} | ${n(l.p.rps)} | ${n(l.bare?.rps)} | ${l.bare ? pct(l.p.rps, l.bare.rps) : '–'} | ${lat(l.p.p99, l.mode)} | ${n(l.p.cpuPct, 0)} | ${n(l.p.rssMb, 0)} |`);
      }
    }
    const t = targetTable(multi);
    if (t.length) lines.push('', ...t);
  }
  lines.push('', 'Full tables, notes and every size: `bench/results/report.md`; chart: `bench/results/report.svg`; how to run: `bench/README.md`.');
  return lines.join('\n');
}
console.log(`written ${join(DIR, 'report.md')} and ${join(DIR, 'report.svg')} (${results.length} results, sizes ${sizes.join(', ')})`);
