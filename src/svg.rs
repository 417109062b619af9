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
}
