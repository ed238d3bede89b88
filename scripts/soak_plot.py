"""Draws the soak's memory and descriptor curves (the `soak-sample` lines of
scripts/soak.sh's output) as one SVG with two panels, without plotting
libraries. Usage: soak_plot.py SOAK_TXT OUT_SVG"""

import sys

source, target = sys.argv[1:]
rows = []
for line in open(source):
    if line.startswith("soak-sample ") and not line.startswith("soak-sample seconds"):
        t, rss, fds, rate = line.split()[1].split(",")[:4]
        rows.append((float(t), float(rss), float(fds), float(rate)))
if not rows:
    sys.exit("no samples")

W, H, PAD = 640, 180, 44
panels = [("resident memory (MiB)", 1, "#1f77b4"), ("open descriptors", 2, "#d62728"), ("requests per second", 3, "#2ca02c")]
t_max = max(r[0] for r in rows) or 1
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(panels)}" font-family="sans-serif" font-size="11">']
for i, (title, col, colour) in enumerate(panels):
    top = i * H
    values = [r[col] for r in rows]
    v_max = max(values) * 1.1 or 1
    def x(t):
        return PAD + (W - 2 * PAD) * t / t_max
    def y(v):
        return top + H - PAD + 10 - (H - PAD - 10) * v / v_max
    svg.append(f'<text x="{PAD}" y="{top + 14}">{title}</text>')
    svg.append(f'<line x1="{PAD}" y1="{y(0)}" x2="{W - PAD}" y2="{y(0)}" stroke="#888"/>')
    svg.append(f'<line x1="{PAD}" y1="{y(0)}" x2="{PAD}" y2="{y(v_max)}" stroke="#888"/>')
    svg.append(f'<text x="4" y="{y(v_max) + 10}">{v_max:.0f}</text><text x="4" y="{y(0)}">0</text>')
    svg.append(f'<text x="{W - PAD - 30}" y="{y(0) + 14}">{t_max:.0f} s</text>')
    points = " ".join(f"{x(r[0]):.1f},{y(r[col]):.1f}" for r in rows)
    svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
svg.append("</svg>")
open(target, "w").write("\n".join(svg))
