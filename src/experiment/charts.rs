//! Small self-contained SVG charts for reports (no plotting dependency): a heat map for
//! `fwsvm grid`.

use std::fmt::Write;

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A perceptual ramp (viridis, 5 stops) at t ∈ [0, 1], as `#rrggbb`.
pub fn ramp(t: f64) -> String {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |u: f64, v: f64| (u + (v - u) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// A heat map: `values[r][c]` (None = not computed) with column labels along x and row labels
/// along y (first row at the top), the best cell outlined, each cell's value printed.
pub struct HeatMap<'a> {
    /// Title above the map.
    pub title: &'a str,
    /// Name of the x axis.
    pub x_name: &'a str,
    /// Name of the y axis.
    pub y_name: &'a str,
    /// Column labels.
    pub x_labels: Vec<String>,
    /// Row labels.
    pub y_labels: Vec<String>,
    /// Values, rows × columns.
    pub values: Vec<Vec<Option<f64>>>,
    /// The cell to outline (row, column).
    pub best: Option<(usize, usize)>,
}

impl HeatMap<'_> {
    /// The SVG document.
    pub fn render(&self) -> String {
        let (rows, cols) = (self.y_labels.len(), self.x_labels.len());
        let cell = 44.0;
        let (left, top) = (90.0, 50.0);
        let (w, h) = (
            left + cols as f64 * cell + 30.0,
            top + rows as f64 * cell + 60.0,
        );
        let known: Vec<f64> = self.values.iter().flatten().flatten().copied().collect();
        let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" font-size="14" text-anchor="middle">{}</text>"#,
            w / 2.0,
            esc(self.title)
        );
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let (x, y) = (left + c as f64 * cell, top + r as f64 * cell);
                let (fill, text) = match v {
                    Some(v) => (ramp((v - lo) / span), format!("{v:.1}")),
                    None => ("#eeeeee".to_string(), String::new()),
                };
                let _ = writeln!(
                    s,
                    r#"<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="white"/>"#
                );
                if !text.is_empty() {
                    let light = v.is_some_and(|v| (v - lo) / span < 0.6);
                    let _ = writeln!(
                        s,
                        r#"<text x="{}" y="{}" text-anchor="middle" fill="{}">{text}</text>"#,
                        x + cell / 2.0,
                        y + cell / 2.0 + 4.0,
                        if light { "white" } else { "black" }
                    );
                }
            }
        }
        if let Some((r, c)) = self.best {
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="{cell}" height="{cell}" fill="none" stroke="red" stroke-width="3"/>"#,
                left + c as f64 * cell,
                top + r as f64 * cell
            );
        }
        for (c, l) in self.x_labels.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                left + (c as f64 + 0.5) * cell,
                top + rows as f64 * cell + 16.0,
                esc(l)
            );
        }
        for (r, l) in self.y_labels.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                left - 6.0,
                top + (r as f64 + 0.5) * cell + 4.0,
                esc(l)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            left + cols as f64 * cell / 2.0,
            top + rows as f64 * cell + 36.0,
            esc(self.x_name)
        );
        let _ = writeln!(
            s,
            r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">{}</text>"#,
            top + rows as f64 * cell / 2.0,
            top + rows as f64 * cell / 2.0,
            esc(self.y_name)
        );
        s.push_str("</svg>\n");
        s
    }
}

/// Distinct line colours (Okabe–Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Lines of (x, y) points on a linear x axis and a log10 y axis, with a legend.
pub struct LineChart<'a> {
    /// Title.
    pub title: &'a str,
    /// x axis name.
    pub x_name: &'a str,
    /// y axis name.
    pub y_name: &'a str,
    /// (name, points); points with y ≤ 0 are left out (log axis).
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// A log10 x axis too (points with x ≤ 0 left out).
    pub log_x: bool,
}

fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(hi > lo) {
        return vec![lo];
    }
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut v = Vec::new();
    while t <= hi + 1e-9 * step {
        v.push(t);
        t += step;
    }
    v
}

impl LineChart<'_> {
    /// The SVG document.
    pub fn render(&self) -> String {
        let (w, h) = (640.0, 400.0);
        let (l, r, t, b) = (70.0, 150.0, 40.0, 50.0);
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().copied())
            .filter(|&(x, y)| x.is_finite() && y > 0.0 && y.is_finite() && (!self.log_x || x > 0.0))
            .collect();
        let x_hi = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
        let (lx_lo, lx_hi) = if self.log_x && !pts.is_empty() {
            let lo = pts
                .iter()
                .map(|p| p.0.log10())
                .fold(f64::INFINITY, f64::min)
                .floor();
            let hi = pts
                .iter()
                .map(|p| p.0.log10())
                .fold(f64::NEG_INFINITY, f64::max)
                .ceil();
            (lo, hi.max(lo + 1.0))
        } else {
            (0.0, 1.0)
        };
        let y_lo = pts
            .iter()
            .map(|p| p.1.log10())
            .fold(f64::INFINITY, f64::min);
        let y_hi = pts
            .iter()
            .map(|p| p.1.log10())
            .fold(f64::NEG_INFINITY, f64::max);
        let (y_lo, y_hi) = if y_lo.is_finite() {
            (y_lo.floor(), y_hi.ceil().max(y_lo.floor() + 1.0))
        } else {
            (0.0, 1.0)
        };
        let log_x = self.log_x;
        let px = |x: f64| {
            if log_x {
                l + (w - l - r) * (x.log10() - lx_lo) / (lx_hi - lx_lo)
            } else {
                l + (w - l - r) * x / x_hi
            }
        };
        let py = |y: f64| t + (h - t - b) * (1.0 - (y.log10() - y_lo) / (y_hi - y_lo));
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" font-size="14" text-anchor="middle">{}</text>"#,
            (l + w - r) / 2.0,
            esc(self.title)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            w - l - r,
            h - t - b
        );
        for e in (y_lo as i32)..=(y_hi as i32) {
            let y = py(10f64.powi(e));
            let _ = writeln!(
                s,
                r##"<line x1="{l}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">1e{e}</text>"##,
                w - r,
                l - 5.0,
                y + 4.0
            );
        }
        let xt: Vec<f64> = if log_x {
            (lx_lo as i32..=lx_hi as i32)
                .map(|e| 10f64.powi(e))
                .collect()
        } else {
            nice_ticks(0.0, x_hi)
        };
        for x in xt {
            let xp = px(x);
            let _ = writeln!(
                s,
                r##"<line x1="{xp}" y1="{}" x2="{xp}" y2="{}" stroke="#888"/><text x="{xp}" y="{}" text-anchor="middle">{}</text>"##,
                h - b,
                h - b + 4.0,
                h - b + 16.0,
                crate::util::fmt_g(x, 4)
            );
        }
        for (k, (name, p)) in self.series.iter().enumerate() {
            let col = PALETTE[k % PALETTE.len()];
            let path: Vec<String> = p
                .iter()
                .filter(|&&(x, y)| x.is_finite() && y > 0.0 && y.is_finite() && (!log_x || x > 0.0))
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            if !path.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{col}" stroke-width="1.5" points="{}"/>"#,
                    path.join(" ")
                );
            }
            let ly = t + 14.0 * k as f64 + 8.0;
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{col}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
                w - r + 10.0,
                w - r + 30.0,
                w - r + 35.0,
                ly + 4.0,
                esc(name)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            (l + w - r) / 2.0,
            h - 12.0,
            esc(self.x_name)
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>"#,
            (t + h - b) / 2.0,
            (t + h - b) / 2.0,
            esc(self.y_name)
        );
        s.push_str("</svg>\n");
        s
    }
}

/// Grouped bars: one group per category, one bar per series, a dashed line at `reference`.
pub struct BarChart<'a> {
    /// Title.
    pub title: &'a str,
    /// y axis name.
    pub y_name: &'a str,
    /// Category (group) names.
    pub groups: Vec<String>,
    /// (series name, one value per group; None = missing).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// A horizontal reference line (1 for speed-ups).
    pub reference: Option<f64>,
}

impl BarChart<'_> {
    /// The SVG document.
    pub fn render(&self) -> String {
        let ng = self.groups.len().max(1);
        let ns = self.series.len().max(1);
        let bar = 16.0;
        let gw = bar * ns as f64 + 20.0;
        let (l, r, t, b) = (60.0, 150.0, 40.0, 50.0);
        let (w, h) = (l + r + gw * ng as f64, 360.0);
        let hi = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .chain(self.reference)
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.1;
        let py = |v: f64| t + (h - t - b) * (1.0 - v / hi);
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" font-size="14" text-anchor="middle">{}</text>"#,
            (l + w - r) / 2.0,
            esc(self.title)
        );
        for y in nice_ticks(0.0, hi) {
            let _ = writeln!(
                s,
                r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{4}</text>"##,
                py(y),
                w - r,
                l - 5.0,
                py(y) + 4.0,
                crate::util::fmt_g(y, 4)
            );
        }
        for (gi, g) in self.groups.iter().enumerate() {
            let x0 = l + gi as f64 * gw + 10.0;
            for (si, (_, vals)) in self.series.iter().enumerate() {
                if let Some(Some(v)) = vals.get(gi) {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
                        x0 + si as f64 * bar,
                        py(*v),
                        bar - 2.0,
                        (h - b) - py(*v),
                        PALETTE[si % PALETTE.len()]
                    );
                }
            }
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                x0 + bar * ns as f64 / 2.0,
                h - b + 16.0,
                esc(g)
            );
        }
        if let Some(rf) = self.reference {
            let _ = writeln!(
                s,
                r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#000" stroke-dasharray="4 3"/>"##,
                py(rf),
                w - r
            );
        }
        for (si, (name, _)) in self.series.iter().enumerate() {
            let ly = t + 14.0 * si as f64 + 8.0;
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="12" height="10" fill="{}"/><text x="{}" y="{}">{}</text>"#,
                w - r + 10.0,
                ly - 5.0,
                PALETTE[si % PALETTE.len()],
                w - r + 27.0,
                ly + 4.0,
                esc(name)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>"#,
            (t + h - b) / 2.0,
            (t + h - b) / 2.0,
            esc(self.y_name)
        );
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_ends_and_heat_map_structure() {
        assert_eq!(ramp(0.0), "#440154");
        assert_eq!(ramp(1.0), "#fde725");
        assert_eq!(ramp(f64::NAN), "#440154");
        let m = HeatMap {
            title: "a < b",
            x_name: "log2 C",
            y_name: "log2 γ",
            x_labels: vec!["-1".into(), "1".into()],
            y_labels: vec!["0".into()],
            values: vec![vec![Some(80.0), None]],
            best: Some((0, 0)),
        };
        let svg = m.render();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect").count(), 3, "two cells and the outline");
        assert!(svg.contains("a &lt; b") && svg.contains(">80.0<"));
        assert!(svg.contains("stroke=\"red\""));
    }

    #[test]
    fn line_and_bar_charts() {
        let c = LineChart {
            title: "gap",
            x_name: "s",
            y_name: "gap",
            series: vec![
                ("fw".into(), vec![(0.0, 1.0), (1.0, 1e-3), (2.0, 0.0)]),
                ("partan".into(), vec![(0.0, 1.0), (0.5, 1e-5)]),
            ],
            log_x: false,
        }
        .render();
        assert_eq!(c.matches("<polyline").count(), 2);
        // The y ≤ 0 point is left out: two points in fw's line.
        assert!(c.contains(">1e-5<") && c.contains(">1e0<"), "{c}");
        let b = BarChart {
            title: "speed-up",
            y_name: "×",
            groups: vec!["a9a".into(), "w8a".into()],
            series: vec![
                ("fw".into(), vec![Some(1.0), Some(1.0)]),
                ("mfw".into(), vec![Some(2.0), None]),
            ],
            reference: Some(1.0),
        }
        .render();
        assert_eq!(
            b.matches("<rect").count(),
            3 + 2,
            "three bars, two legend keys"
        );
        assert!(b.contains("stroke-dasharray"));
    }
}
