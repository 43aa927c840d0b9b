// A hand-written SVG: S1 cycles/s per contender at each concurrency (grouped bars) and S2
// median hand-off per contender (log scale).
const COLORS = [
  '#d62728',
  '#ff9896',
  '#7f7f7f',
  '#c7c7c7',
  '#1f77b4',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#8c564b',
];
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** The chart of one run's summary, as an SVG document. */
export function chart(s, meta) {
  const label = (k) => meta.labels[k] ?? k;
  const W = 900;
  const out = [];
  let y = 30;
  out.push(
    `<text x="20" y="${y}" font-size="16" font-weight="bold">nestjs-redlock benchmark — ${esc(meta.date.slice(0, 16))} UTC, commit ${esc(meta.commit)}</text>`,
  );
  const contenders = [...new Set(s.s1.map((r) => r.contender))];
  const color = (k) => COLORS[contenders.indexOf(k) % COLORS.length] ?? '#333';
  if (s.s1.length) {
    y += 30;
    out.push(
      `<text x="20" y="${y}" font-size="13">S1 uncontended acquire → release, cycles/s (median), 5 local nodes</text>`,
    );
    const top = y + 15;
    const H = 220;
    const concs = [...new Set(s.s1.map((r) => r.concurrency))].sort((a, b) => a - b);
    const max = Math.max(...s.s1.map((r) => r.cyclesPerSec));
    const groupW = (W - 260) / concs.length;
    const barW = (groupW - 20) / contenders.length;
    concs.forEach((c, gi) => {
      const x0 = 60 + gi * groupW;
      contenders.forEach((k, i) => {
        const r = s.s1.find((x) => x.contender === k && x.concurrency === c);
        if (!r) return;
        const h = (r.cyclesPerSec / max) * H;
        out.push(
          `<rect x="${(x0 + i * barW).toFixed(1)}" y="${(top + H - h).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${color(k)}"><title>${esc(label(k))}: ${r.cyclesPerSec.toFixed(0)}/s</title></rect>`,
        );
      });
      out.push(
        `<text x="${(x0 + (groupW - 20) / 2).toFixed(1)}" y="${top + H + 16}" font-size="12" text-anchor="middle">concurrency ${c}</text>`,
      );
    });
    for (let i = 0; i <= 4; i++) {
      const v = (max * i) / 4;
      const yy = top + H - (H * i) / 4;
      out.push(
        `<line x1="55" x2="${W - 200}" y1="${yy}" y2="${yy}" stroke="#ddd"/><text x="50" y="${yy + 4}" font-size="10" text-anchor="end">${v.toFixed(0)}</text>`,
      );
    }
    contenders.forEach((k, i) => {
      out.push(
        `<rect x="${W - 190}" y="${top + i * 18}" width="12" height="12" fill="${color(k)}"/><text x="${W - 172}" y="${top + i * 18 + 10}" font-size="11">${esc(label(k))}</text>`,
      );
    });
    y = top + H + 30;
  }
  if (s.s2.length) {
    y += 20;
    out.push(
      `<text x="20" y="${y}" font-size="13">S2 seeds' experiment: median hand-off between holders, ms (log scale; shorter is better)</text>`,
    );
    const rows = [...s.s2].sort((a, b) => a.handOffP50 - b.handOffP50);
    const lo = 0.01;
    const hi = Math.max(10, ...rows.map((r) => r.handOffP50));
    const scale = (v) =>
      ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) *
      (W - 420);
    rows.forEach((r, i) => {
      const yy = y + 12 + i * 22;
      out.push(
        `<text x="250" y="${yy + 13}" font-size="11" text-anchor="end">${esc(label(r.contender))}</text>`,
      );
      out.push(
        `<rect x="255" y="${yy}" width="${scale(r.handOffP50).toFixed(1)}" height="16" fill="${COLORS[(contenders.indexOf(r.contender) + 9) % COLORS.length] ?? '#555'}"/>`,
      );
      out.push(
        `<text x="${(260 + scale(r.handOffP50)).toFixed(1)}" y="${yy + 13}" font-size="11">${r.handOffP50.toFixed(2)} ms · ${r.successes}/100 · ${r.commandsPerSuccess.toFixed(0)} cmds/success</text>`,
      );
    });
    y += 12 + rows.length * 22 + 10;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y + 10}" font-family="sans-serif" viewBox="0 0 ${W} ${y + 10}"><rect width="100%" height="100%" fill="white"/>${out.join('')}</svg>\n`;
}
