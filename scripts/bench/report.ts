// The benchmark report: a markdown table and an SVG bar chart of the ratios to the anchors.

export interface Row {
  workload: string;
  /** Load generator and its settings. */
  how: string;
  /** cubby's figure (NaN when the row was skipped). */
  value: number;
  unit: string;
  /** The anchor's name, or a note (latency percentiles, why the row was skipped). */
  anchor: string;
  anchorValue?: number;
  /** The target: a minimum ratio to the anchor, or with `lowerIsBetter` a maximum absolute value. */
  target?: number;
  lowerIsBetter?: boolean;
}

const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

/** The ratio cubby / anchor, or undefined for rows without an anchor figure. */
export function ratioOf(r: Row): number | undefined {
  return r.anchorValue === undefined || Number.isNaN(r.value) ? undefined : r.value / r.anchorValue;
}

function verdict(r: Row): string {
  if (r.target === undefined || Number.isNaN(r.value)) return "";
  if (r.lowerIsBetter) return `≤ ${r.target} ${r.unit} ${r.value <= r.target ? "✓" : "✗"}`;
  const ratio = ratioOf(r)!;
  return `≥ ${r.target}× ${ratio >= r.target ? "✓" : "✗"}`;
}

/** The table: workload, how, cubby, anchor, anchor's figure, ratio, target. */
export function markdownTable(rows: Row[]): string {
  const lines = ["| workload | how | cubby | anchor | anchor figure | ratio | target |", "|---|---|---|---|---|---|---|"];
  for (const r of rows) {
    const ratio = ratioOf(r);
    lines.push(
      `| ${r.workload} | ${r.how} | ${Number.isNaN(r.value) ? "—" : `${fmt(r.value)} ${r.unit}`} | ${r.anchor} | ${
        r.anchorValue === undefined ? "" : `${fmt(r.anchorValue)} ${r.unit}`
      } | ${ratio === undefined ? "" : `${ratio.toFixed(2)}×`} | ${verdict(r)} |`,
    );
  }
  return lines.join("\n");
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A horizontal bar chart of every ratio, with the target marked on each bar. */
export function chartSvg(rows: Row[]): string {
  const bars = rows.filter((r) => ratioOf(r) !== undefined);
  const max = Math.max(2, ...bars.map((r) => Math.max(ratioOf(r)!, r.target ?? 0))) * 1.1;
  const left = 330;
  const width = 420;
  const barH = 22;
  const gap = 12;
  const top = 40;
  const height = top + bars.length * (barH + gap) + 30;
  const x = (v: number) => left + (v / max) * width;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 70}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">cubby / anchor (higher is better; | = target; grey: no target)</text>`,
    `<line x1="${x(1)}" y1="${top - 8}" x2="${x(1)}" y2="${height - 25}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${x(1)}" y="${height - 10}" text-anchor="middle" fill="#666">1×</text>`,
  ];
  bars.forEach((r, i) => {
    const ratio = ratioOf(r)!;
    const y = top + i * (barH + gap);
    const color = r.target === undefined ? "#7f8c8d" : ratio >= r.target ? "#3a7d44" : "#c0392b";
    parts.push(
      `<text x="${left - 8}" y="${y + barH / 2 + 4}" text-anchor="end">${escapeXml(`${r.workload} vs ${r.anchor}`.slice(0, 52))}</text>`,
      `<rect x="${left}" y="${y}" width="${x(ratio) - left}" height="${barH}" fill="${color}"/>`,
      `<text x="${x(ratio) + 4}" y="${y + barH / 2 + 4}">${ratio.toFixed(2)}×</text>`,
    );
    if (r.target !== undefined) {
      parts.push(`<line x1="${x(r.target)}" y1="${y - 3}" x2="${x(r.target)}" y2="${y + barH + 3}" stroke="black" stroke-width="2"/>`);
    }
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
