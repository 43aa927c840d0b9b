import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Issue 9 items 1-2, the CI run of the fault campaign (`npm run campaign` is the full one):
 * three worker processes lock through the compiled library against a real 5-node fleet while a
 * seeded nemesis kills, restarts and SIGSTOPs nodes, adds latency and SIGSTOPs workers past their
 * lease; an independent checker reads the histories. Safe phases must show no violation, and
 * both controls (restarts without the quarantine, a quorum of one) must show overlaps — else the
 * checker would be blind. A failure prints the campaign's seed: `node test/campaign/campaign.mjs
 * --short --seed N --keep` replays its schedule (as far as real time allows) and keeps the
 * histories.
 */
interface CampaignSummary {
  seed: number;
  safeCycles: number;
  safeViolations: number;
  controlOverlaps: { name: string; overlaps: number }[];
  failures: string[];
}

describe('fault campaign, short run (real processes, real Redis, independent checker)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'redlock-campaign-spec-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('≥ 1 000 lock cycles under faults with 0 violations, and both controls caught', async () => {
    const out = join(dir, 'summary.json');
    const child = spawn(
      process.execPath,
      [join(__dirname, '..', 'campaign', 'campaign.mjs'), '--short', '--out', out],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    let summary: CampaignSummary | undefined;
    try {
      summary = JSON.parse(readFileSync(out, 'utf8')) as CampaignSummary;
    } catch {
      throw new Error(`the campaign wrote no summary (exit ${code}):\n${output}`);
    }
    expect({ failures: summary.failures, output: summary.failures.length ? output : '' }).toEqual({
      failures: [],
      output: '',
    });
    expect(summary.safeViolations).toBe(0);
    expect(summary.safeCycles).toBeGreaterThanOrEqual(1_000);
    for (const control of summary.controlOverlaps) expect(control.overlaps).toBeGreaterThan(0);
    expect(code).toBe(0);
  }, 600_000);
});
