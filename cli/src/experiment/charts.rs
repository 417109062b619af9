//! The report charts, drawn with plotters' SVG backend: the grid search's heat map (with a
//! colour bar), lines of (x, y) on log axes with point markers and an optional fitted line
//! (duality gap against seconds; the scaling bench's seconds against rows), and grouped bars
//! (speed-ups). Text is written as SVG `<text>` for the viewer to render, so no font is
//! bundled or looked up (plotters' `ttf` and `ab_glyph` features are off; a PNG backend would
//! need one).

use fwsvm::error::{Error, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A perceptual ramp (viridis, 5 stops) at t ∈ [0, 1].
pub fn ramp(t: f64) -> RGBColor {
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
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Distinct series colours (Okabe–Ito).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
];

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A drawing error as the library's.
fn chart_error(e: impl std::fmt::Display) -> Error {
    Error::Backend(format!("drawing a chart: {e}"))
}

/// Pixels a title needs (plotters' own estimate: 0.7 em per character) plus margins.
fn title_width(title: &str, size: u32) -> u32 {
    (title.chars().count() as f64 * 0.6 * size as f64) as u32 + 40
}

/// Renders into an SVG string of `size` with `draw` (on a white area).
fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        draw(&root)?;
        root.present().map_err(chart_error)?;
    }
    Ok(out)
}

/// A heat map: `values[r][c]` (None = not computed) with column labels along x and row labels
/// along y (first row at the top), the best cell outlined, each cell's value printed, and a
/// colour bar.
pub struct HeatMap<'a> {
    /// Title above the map.
    pub title: &'a str,
    /// Name of the x axis.
    pub x_name: &'a str,
    /// Name of the y axis.
    pub y_name: &'a str,
    /// Name of the values (the colour bar's label).
    pub value_name: &'a str,
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
    pub fn render(&self) -> Result<String> {
        let (rows, cols) = (self.y_labels.len().max(1), self.x_labels.len().max(1));
        let cell = 44;
        let bar = 110;
        let map_w = 80 + cols as u32 * cell + 20;
        let w = (map_w + bar).max(title_width(self.title, 16));
        let h = 50 + rows as u32 * cell + 60;
        let known: Vec<f64> = self.values.iter().flatten().flatten().copied().collect();
        let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let span = if hi > lo { hi - lo } else { 1.0 };
        svg((w, h), |root| {
            let root = root
                .titled(self.title, ("sans-serif", 16))
                .map_err(chart_error)?;
            let (map_area, bar_area) = root.split_horizontally(w - bar);
            let mut chart = ChartBuilder::on(&map_area)
                .margin(8)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..cols as f64, 0.0..rows as f64)
                .map_err(chart_error)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(0)
                .y_labels(0)
                .x_desc(self.x_name)
                .y_desc(self.y_name)
                .axis_desc_style(("sans-serif", 12))
                .draw()
                .map_err(chart_error)?;
            let area = chart.plotting_area();
            for (c, l) in self.x_labels.iter().enumerate() {
                let (px, py) = area.map_coordinate(&(c as f64 + 0.5, 0.0));
                label(&map_area, l, (px, py + 6), HPos::Center, VPos::Top)?;
            }
            for (r, l) in self.y_labels.iter().enumerate() {
                let (px, py) = area.map_coordinate(&(0.0, (rows - r) as f64 - 0.5));
                label(&map_area, l, (px - 6, py), HPos::Right, VPos::Center)?;
            }
            // Row r is drawn from the top: y runs from rows − r − 1 to rows − r.
            let top = |r: usize| (rows - r) as f64;
            for (r, row) in self.values.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    let fill = v.map_or(RGBColor(0xee, 0xee, 0xee), |v| ramp((v - lo) / span));
                    let corners = [(c as f64, top(r)), (c as f64 + 1.0, top(r) - 1.0)];
                    chart
                        .draw_series([
                            Rectangle::new(corners, fill.filled()),
                            Rectangle::new(corners, WHITE.stroke_width(1)),
                        ])
                        .map_err(chart_error)?;
                    if let Some(v) = v {
                        let light = (v - lo) / span < 0.6;
                        let style = TextStyle::from(("sans-serif", 11))
                            .color(if light { &WHITE } else { &BLACK })
                            .pos(Pos::new(HPos::Center, VPos::Center));
                        chart
                            .draw_series([Text::new(
                                format!("{v:.1}"),
                                (c as f64 + 0.5, top(r) - 0.5),
                                style,
                            )])
                            .map_err(chart_error)?;
                    }
                }
            }
            if let Some((r, c)) = self.best {
                chart
                    .draw_series([Rectangle::new(
                        [(c as f64, top(r)), (c as f64 + 1.0, top(r) - 1.0)],
                        RED.stroke_width(3),
                    )])
                    .map_err(chart_error)?;
            }
            colour_bar(&bar_area, lo, hi, self.value_name)
        })
    }
}

/// Writes `text` (11 px) at pixel `at` of `area`, anchored as `h`, `v`.
fn label(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    text: &str,
    at: (i32, i32),
    h: HPos,
    v: VPos,
) -> Result<()> {
    let (x0, y0) = area.get_base_pixel();
    let style = TextStyle::from(("sans-serif", 11)).pos(Pos::new(h, v));
    area.draw(&Text::new(text.to_string(), (at.0 - x0, at.1 - y0), style))
        .map_err(chart_error)
}

/// A vertical colour bar from `lo` (bottom) to `hi` with its scale.
fn colour_bar(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    lo: f64,
    hi: f64,
    name: &str,
) -> Result<()> {
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin_top(8)
        .margin_bottom(48)
        .margin_right(8)
        .y_label_area_size(58)
        .build_cartesian_2d(0.0..1.0, lo..hi)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(name)
        .y_labels(6)
        .y_label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 12))
        .draw()
        .map_err(chart_error)?;
    let steps = 64;
    let dy = (hi - lo) / steps as f64;
    chart
        .draw_series((0..steps).map(|i| {
            let y = lo + i as f64 * dy;
            Rectangle::new(
                [(0.0, y), (1.0, y + dy)],
                ramp((i as f64 + 0.5) / steps as f64).filled(),
            )
        }))
        .map_err(chart_error)?;
    Ok(())
}

/// Lines of (x, y) points with markers on a log10 y axis (and a log10 x axis with `log_x`),
/// with a legend; optionally a fitted power law.
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
    /// A fitted line log10 y = b·log10 x + a, drawn dashed as (b, a) (with `log_x`).
    pub fit: Option<(f64, f64)>,
}

impl LineChart<'_> {
    /// The points of each series that the axes can show (y > 0; x > 0 on a log x axis).
    fn shown(&self) -> Vec<Vec<(f64, f64)>> {
        self.series
            .iter()
            .map(|(_, pts)| {
                pts.iter()
                    .copied()
                    .filter(|&(x, y)| {
                        x.is_finite() && y > 0.0 && y.is_finite() && (!self.log_x || x > 0.0)
                    })
                    .collect()
            })
            .collect()
    }

    /// The SVG document.
    pub fn render(&self) -> Result<String> {
        let pts = self.shown();
        let all: Vec<(f64, f64)> = pts.iter().flatten().copied().collect();
        let extent = |v: &mut dyn Iterator<Item = f64>| {
            v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            })
        };
        let (x_lo, x_hi) = extent(&mut all.iter().map(|p| p.0));
        let (y_lo, y_hi) = extent(&mut all.iter().map(|p| p.1));
        let (y_lo, y_hi) = if y_lo.is_finite() {
            (y_lo / 1.5, y_hi * 1.5)
        } else {
            (0.1, 10.0)
        };
        let w = 720.max(title_width(self.title, 16));
        svg((w, 420), |root| {
            if self.log_x {
                let (lo, hi) = if x_lo.is_finite() {
                    (x_lo / 1.3, x_hi * 1.3)
                } else {
                    (1.0, 10.0)
                };
                self.draw(root, (lo..hi).log_scale(), (lo, hi), &pts, (y_lo, y_hi))
            } else {
                let (lo, hi) = if !x_lo.is_finite() {
                    (0.0, 1.0)
                } else if x_hi - x_lo < 1e-12 {
                    (x_lo - 0.5, x_hi + 0.5)
                } else {
                    (x_lo, x_hi + 0.02 * (x_hi - x_lo))
                };
                self.draw(root, lo..hi, (lo, hi), &pts, (y_lo, y_hi))
            }
        })
    }

    /// Draws the chart with x axis `x` (linear or log) spanning `xs`.
    fn draw<X>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        x: X,
        xs: (f64, f64),
        pts: &[Vec<(f64, f64)>],
        ys: (f64, f64),
    ) -> Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let log_x = self.log_x;
        let y_label = |v: &f64| log_tick(*v, |v| format!("{v:.0e}"));
        let x_label = |v: &f64| {
            if log_x {
                log_tick(*v, |v| {
                    if (1.0..1e7).contains(&v) && v.fract() == 0.0 {
                        format!("{}", v as u64)
                    } else {
                        crate::fmt::fmt_g(v, 3)
                    }
                })
            } else {
                crate::fmt::fmt_g(*v, 3)
            }
        };
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x, (ys.0..ys.1).log_scale())
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .x_desc(self.x_name)
            .y_desc(self.y_name)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .label_style(("sans-serif", 11))
            .axis_desc_style(("sans-serif", 12))
            .draw()
            .map_err(chart_error)?;
        for (i, ((name, _), p)) in self.series.iter().zip(pts).enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2)))
                .map_err(chart_error)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
            chart
                .draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled())))
                .map_err(chart_error)?;
        }
        if let Some((b, a)) = self.fit.filter(|_| self.log_x) {
            // log10 y = a + b·log10 x, over the x range, clipped to the y range.
            let at = |x: f64| 10f64.powf(a + b * x.log10()).clamp(ys.0, ys.1);
            let n = 32;
            let line: Vec<(f64, f64)> = (0..=n)
                .map(|k| {
                    let x = xs.0 * (xs.1 / xs.0).powf(k as f64 / n as f64);
                    (x, at(x))
                })
                .collect();
            chart
                .draw_series(DashedLineSeries::new(line, 6, 4, BLACK.stroke_width(1)))
                .map_err(chart_error)?
                .label(format!("least squares: ∝ m^{b:.2}"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK));
        }
        chart
            .configure_series_labels()
            .position(if log_x {
                SeriesLabelPosition::UpperLeft
            } else {
                SeriesLabelPosition::UpperRight
            })
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xaa, 0xaa, 0xaa))
            .draw()
            .map_err(chart_error)
    }
}

/// A log axis' tick label: `fmt(v)` at 1, 2 and 5 times a power of ten, nothing between (the
/// grid lines stay).
fn log_tick(v: f64, fmt: impl Fn(f64) -> String) -> String {
    if !(v > 0.0) {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m)
    {
        fmt(v)
    } else {
        String::new()
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
    pub fn render(&self) -> Result<String> {
        let ng = self.groups.len().max(1);
        let ns = self.series.len().max(1);
        let hi = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .chain(self.reference)
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.1;
        let w = (120 + 150 + ng as u32 * (16 * ns as u32 + 20))
            .max(title_width(self.title, 16))
            .max(480);
        svg((w, 380), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(self.title, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..ng as f64, 0.0..hi)
                .map_err(chart_error)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
                .y_desc(self.y_name)
                .label_style(("sans-serif", 11))
                .axis_desc_style(("sans-serif", 12))
                .draw()
                .map_err(chart_error)?;
            let area = chart.plotting_area();
            for (g, name) in self.groups.iter().enumerate() {
                let (px, py) = area.map_coordinate(&(g as f64 + 0.5, 0.0));
                label(root, name, (px, py + 6), HPos::Center, VPos::Top)?;
            }
            let width = 0.8 / ns as f64;
            for (si, (name, vals)) in self.series.iter().enumerate() {
                let c = colour(si);
                let bars = vals.iter().enumerate().filter_map(|(g, v)| {
                    let x0 = g as f64 + 0.1 + si as f64 * width;
                    v.map(|v| Rectangle::new([(x0, 0.0), (x0 + 0.9 * width, v)], c.filled()))
                });
                chart
                    .draw_series(bars)
                    .map_err(chart_error)?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
                    });
            }
            if let Some(r) = self.reference {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(0.0, r), (ng as f64, r)],
                        6,
                        4,
                        BLACK.stroke_width(1),
                    ))
                    .map_err(chart_error)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(0xaa, 0xaa, 0xaa))
                .draw()
                .map_err(chart_error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses the document as XML: the charts are well-formed SVG.
    fn elements(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants()
            .filter(|n| n.is_element())
            .map(|n| n.tag_name().name().to_string())
            .collect()
    }

    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect()
    }

    #[test]
    fn ramp_ends() {
        assert_eq!(ramp(0.0), RGBColor(0x44, 0x01, 0x54));
        assert_eq!(ramp(1.0), RGBColor(0xfd, 0xe7, 0x25));
        assert_eq!(ramp(f64::NAN), ramp(0.0));
    }

    #[test]
    fn heat_map_has_cells_values_outline_and_colour_bar() {
        let title = "accuracy by C and γ: a long title that the old writer cut off at both ends";
        let m = HeatMap {
            title,
            x_name: "log2 C",
            y_name: "log2 γ",
            value_name: "accuracy %",
            x_labels: vec!["-1".into(), "1".into()],
            y_labels: vec!["0".into()],
            values: vec![vec![Some(80.0), None]],
            best: Some((0, 0)),
        };
        let svg = m.render().unwrap();
        let t = texts(&svg);
        assert!(t.iter().any(|s| s == title), "{t:?}");
        assert!(t.iter().any(|s| s == "80.0"));
        assert!(
            t.iter().any(|s| s == "accuracy %"),
            "colour bar label: {t:?}"
        );
        assert!(t.iter().any(|s| s == "-1") && t.iter().any(|s| s == "1"));
        // The title fits: the document is at least as wide as plotters' estimate of it.
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let width: f64 = doc
            .root_element()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap();
        assert!(width >= title_width(title, 16) as f64);
        assert!(
            svg.contains("#FF0000") || svg.contains("#ff0000"),
            "the best cell's outline"
        );
        // Two cells (fill and border each), the outline and 64 colour-bar steps at least.
        assert!(elements(&svg).iter().filter(|e| *e == "rect").count() >= 4 + 1 + 64);
    }

    #[test]
    fn line_chart_has_markers_legend_and_fit() {
        let c = LineChart {
            title: "gap",
            x_name: "s",
            y_name: "gap",
            series: vec![
                ("fw".into(), vec![(0.0, 1.0), (1.0, 1e-3), (2.0, 0.0)]),
                ("partan".into(), vec![(0.0, 1.0), (0.5, 1e-5)]),
            ],
            log_x: false,
            fit: None,
        }
        .render()
        .unwrap();
        let e = elements(&c);
        // The y ≤ 0 point is left out: 2 + 2 markers.
        assert_eq!(e.iter().filter(|x| *x == "circle").count(), 4);
        let t = texts(&c);
        assert!(t.iter().any(|s| s == "fw") && t.iter().any(|s| s == "partan"));
        assert!(
            t.iter().any(|s| s.ends_with("e-5") || s.ends_with("e-6")),
            "{t:?}"
        );
        let s = LineChart {
            title: "scale",
            x_name: "rows",
            y_name: "seconds",
            series: vec![("partan".into(), vec![(1e4, 0.1), (1e5, 2.0)])],
            log_x: true,
            fit: Some((1.3, -6.0)),
        }
        .render()
        .unwrap();
        assert!(
            texts(&s).iter().any(|t| t.starts_with("least squares")),
            "{:?}",
            texts(&s)
        );
    }

    #[test]
    fn bar_chart_has_bars_legend_and_reference() {
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
        .render()
        .unwrap();
        let t = texts(&b);
        assert!(
            t.iter().any(|s| s == "a9a") && t.iter().any(|s| s == "w8a"),
            "{t:?}"
        );
        assert!(t.iter().any(|s| s == "mfw"));
        // three bars and two legend keys at least
        assert!(elements(&b).iter().filter(|e| *e == "rect").count() >= 5);
    }
}
