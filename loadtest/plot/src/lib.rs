//! The plots beside the benchmark results in `loadtest/results/`: a chart of panels stacked
//! one above the other, each with line or dot series, drawn as SVG by plotters' SVG backend.
//! Its text is SVG `<text>`, laid out by whatever shows the file, so no font is read here.
//!
//! Layout:
//! - here: [`Series`], [`Panel`] and [`svg`] / [`write`], the whole drawing.
//! - `src/main.rs`: the `plot` binary, which draws the decoupling experiment from the series
//!   its end-to-end test writes (`loadtest/bench-e2e.sh` runs it).
//!
//! Users: `bench` (each function's latency distribution), `storm` (admissions per second by
//! answer, stock remaining) and the `plot` binary.

use anyhow::{Context, ensure};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Its points joined in order.
    Line,
    /// One dot per point: for samples, such as each request's latency.
    Dots,
}

/// One named series of a panel, as (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    /// Its legend entry; none when empty (a panel whose title says it all has no legend).
    pub label: String,
    pub mark: Mark,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            mark: Mark::Line,
            points,
        }
    }

    pub fn dots(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            mark: Mark::Dots,
            points,
        }
    }
}

/// Where a panel's legend goes: where its series leave room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Legend {
    #[default]
    UpperRight,
    /// For rising curves such as distributions.
    LowerRight,
}

/// One chart of a figure: its axes and its series, each in a colour of its own.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A logarithmic x axis (points at x <= 0 are left out): for latency distributions.
    pub log_x: bool,
    /// Names for the rows y = 0, 1, 2, ... (from the bottom): a y axis of categories, such as
    /// one row per function, instead of numbers.
    pub y_categories: Vec<String>,
    pub legend: Legend,
    pub series: Vec<Series>,
}

impl Panel {
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: &str) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.to_owned(),
            ..Self::default()
        }
    }

    pub fn with(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }
}

const WIDTH: u32 = 960;
/// A panel's height, unless its legend or its rows need more.
const PANEL_HEIGHT: u32 = 400;
const TITLE_HEIGHT: u32 = 40;
const FONT: &str = "sans-serif";

/// Tableau's ten colours (distinct on white and for most colour-blind readers); series past
/// the tenth take them again with dashed lines.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn colour(index: usize) -> RGBAColor {
    COLOURS[index % COLOURS.len()].to_rgba()
}

/// Dash and gap of the lines of the second round of colours, pixels.
const DASH: (u32, u32) = (8, 4);

/// The figure as an SVG document: `title` above the panels, stacked in order. Refuses a
/// panel without a single point to draw, so that a harness that lost its data fails rather
/// than publishing an empty plot.
pub fn svg(title: &str, panels: &[Panel]) -> anyhow::Result<String> {
    ensure!(!panels.is_empty(), "{title}: a figure needs a panel");
    for panel in panels {
        ensure!(
            panel.series.iter().any(|s| !drawn(panel, s).is_empty()),
            "{title}: the panel {:?} has no point to draw",
            panel.title
        );
    }
    let mut out = String::new();
    {
        let panel_height = panels
            .iter()
            .map(|p| 120 + 24 * p.series.len().max(p.y_categories.len()) as u32)
            .fold(PANEL_HEIGHT, u32::max);
        let height = TITLE_HEIGHT + panel_height * panels.len() as u32;
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, (FONT, 26))?;
        for (panel, area) in panels.iter().zip(root.split_evenly((panels.len(), 1))) {
            draw_panel(&area, panel).with_context(|| format!("{title}: {}", panel.title))?;
        }
        root.present()?;
    }
    Ok(out)
}

/// Writes [`svg`] to `path`, creating its directory.
pub fn write(path: &Path, title: &str, panels: &[Panel]) -> anyhow::Result<()> {
    let text = svg(title, panels)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("failed to write {}", path.display()))
}

/// The points of `series` that the panel's axes can show.
fn drawn(panel: &Panel, series: &Series) -> Vec<(f64, f64)> {
    series
        .points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && (!panel.log_x || *x > 0.0))
        .collect()
}

/// The axes' ranges: every point inside with a little room, from 0 on a linear axis (every
/// figure here counts or times something).
fn ranges(panel: &Panel) -> (Range<f64>, Range<f64>) {
    let points: Vec<(f64, f64)> = panel.series.iter().flat_map(|s| drawn(panel, s)).collect();
    let fold = |pick: fn(&(f64, f64)) -> f64| {
        points
            .iter()
            .map(pick)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (x_lo, x_hi) = fold(|p| p.0);
    let (y_lo, y_hi) = fold(|p| p.1);
    let x = if panel.log_x {
        x_lo / 1.2..x_hi * 1.2
    } else {
        let x_lo = x_lo.min(0.0);
        let span = if x_hi > x_lo { x_hi - x_lo } else { 1.0 };
        x_lo..x_lo + span * 1.03
    };
    if !panel.y_categories.is_empty() {
        return (x, -0.5..panel.y_categories.len() as f64 - 0.5);
    }
    let y_lo = y_lo.min(0.0);
    let y_hi = if y_hi > y_lo { y_hi * 1.08 } else { y_lo + 1.0 };
    (x, y_lo..y_hi)
}

fn draw_panel<DB>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let (x, y) = ranges(panel);
    if panel.log_x {
        draw_on(area, panel, x.log_scale(), y)
    } else {
        draw_on(area, panel, x, y)
    }
}

fn draw_on<DB, X>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    x: X,
    y: Range<f64>,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let categories = &panel.y_categories;
    let longest = categories.iter().map(|c| c.len()).max().unwrap_or(0) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 21))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64.max(24 + 8 * longest))
        .build_cartesian_2d(x, y)?;
    // A row's name at its whole y, nothing between rows.
    let row_name = |y: &f64| {
        let row = y.round();
        match categories.get(row as usize) {
            Some(name) if (y - row).abs() < 1e-6 && row >= 0.0 => name.clone(),
            _ => String::new(),
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style((FONT, 16))
        .light_line_style(BLACK.mix(0.05))
        .bold_line_style(BLACK.mix(0.15));
    if !categories.is_empty() {
        mesh.y_labels(categories.len() + 1)
            .y_label_formatter(&row_name);
    }
    mesh.draw()?;
    for (index, series) in panel.series.iter().enumerate() {
        let colour = colour(index);
        let points = drawn(panel, series);
        let style = colour.stroke_width(2);
        let drawn = match series.mark {
            Mark::Line if index < COLOURS.len() => chart
                .draw_series(LineSeries::new(points, style))?
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)),
            Mark::Line => chart
                .draw_series(DashedLineSeries::new(points, DASH.0, DASH.1, style))?
                .legend(move |(x, y)| {
                    DashedPathElement::new(vec![(x, y), (x + 20, y)], DASH.0, DASH.1, style)
                }),
            Mark::Dots => chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|point| Circle::new(point, 3, colour.mix(0.7).filled())),
                )?
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, colour.filled())),
        };
        if !series.label.is_empty() {
            drawn.label(&series.label);
        }
    }
    if panel.series.iter().all(|s| s.label.is_empty()) {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(match panel.legend {
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
        })
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure() -> Vec<Panel> {
        vec![
            Panel::new("Follow latency", "seconds since the load started", "ms")
                .with(Series::dots(
                    "baseline",
                    vec![(0.0, 7.0), (0.1, 8.0), (0.2, 30.0)],
                ))
                .with(Series::dots("slowed", vec![(0.0, 6.0), (0.1, 9.0)])),
            Panel::new("Backlog", "seconds", "messages")
                .with(Series::line(
                    "baseline",
                    vec![(0.0, 0.0), (1.0, 14.0), (2.0, 0.0)],
                ))
                .with(Series::line(
                    "slowed",
                    vec![(0.0, 0.0), (1.5, 40.0), (3.0, 0.0)],
                )),
        ]
    }

    fn polyline_points(element: &str) -> Vec<&str> {
        let points = element
            .split("points=\"")
            .nth(1)
            .expect("a points attribute");
        points
            .split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .collect()
    }

    #[test]
    fn a_figure_holds_its_titles_axes_legend_and_every_point() {
        let svg = svg("Decoupling <test>", &figure()).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for text in [
            "Decoupling &lt;test&gt;",
            "Follow latency",
            "Backlog",
            "seconds since the load started",
            "messages",
            "baseline",
            "slowed",
        ] {
            assert!(svg.contains(text), "{text:?} missing from the SVG");
        }
        // Each series in its colour: a line through its points (and a legend line), or a dot
        // per sample (and a legend dot).
        let lines: Vec<usize> = svg
            .split("<polyline")
            .skip(1)
            .filter(|line| line.contains("stroke-width=\"2\""))
            .map(|line| polyline_points(line).len())
            .collect();
        assert_eq!(lines, [3, 3, 2, 2], "{svg}");
        assert_eq!(svg.matches("<circle").count(), 5 + 2, "{svg}");
    }

    #[test]
    fn a_panel_without_points_is_refused() {
        let mut panels = figure();
        panels[1].series.iter_mut().for_each(|s| s.points.clear());
        let err = svg("Decoupling", &panels).unwrap_err().to_string();
        assert!(err.contains("Backlog"), "{err}");
        assert!(svg("Nothing", &[]).is_err());
    }

    #[test]
    fn a_log_axis_leaves_out_what_it_cannot_show() {
        let panel = Panel {
            log_x: true,
            ..Panel::new("Latency", "ms", "fraction")
        }
        .with(Series::line(
            "hello-http",
            vec![(0.0, 0.0), (1.0, 0.5), (10.0, 1.0)],
        ));
        let svg = svg("Functions", &[panel]).unwrap();
        assert!(svg.contains("hello-http"));
        let line = svg
            .split("<polyline")
            .find(|line| line.contains("stroke-width=\"2\""))
            .unwrap();
        assert_eq!(polyline_points(line).len(), 2, "{line}");
    }

    #[test]
    fn a_category_axis_names_each_row() {
        let panel = Panel {
            y_categories: vec!["hello-http".into(), "follow".into(), "get-sale".into()],
            ..Panel::new("Latency percentiles", "ms", "")
        }
        .with(Series::dots(
            "p50",
            vec![(3.0, 0.0), (19.0, 1.0), (5.0, 2.0)],
        ))
        .with(Series::dots(
            "p99",
            vec![(4.0, 0.0), (25.0, 1.0), (9.0, 2.0)],
        ));
        let svg = svg("Functions", &[panel]).unwrap();
        for name in ["hello-http", "follow", "get-sale", "p50", "p99"] {
            assert!(
                svg.contains(&format!(">\n{name}\n<")),
                "{name} missing: {svg}"
            );
        }
        assert_eq!(svg.matches("<circle").count(), 6 + 2);
    }

    #[test]
    fn series_past_the_tenth_are_dashed() {
        let mut panel = Panel::new("Latency", "ms", "share");
        for i in 0..11 {
            let x = f64::from(i);
            panel = panel.with(Series::line(format!("f{i}"), vec![(0.0, x), (100.0, x)]));
        }
        let svg = svg("Functions", &[panel]).unwrap();
        let lines = svg
            .split("<polyline")
            .filter(|line| line.contains("stroke-width=\"2\""))
            .count();
        // Ten solid lines and their legend lines, then the eleventh as dozens of dashes (a
        // single line if it were solid) and its legend as two.
        assert!(lines > 20 + 2 + 20, "{lines} lines: {svg}");
        assert!(svg.contains("f10"));
    }

    #[test]
    fn a_panel_of_unlabelled_series_has_no_legend() {
        let panel = Panel::new("Throughput; the line: the target", "share", "")
            .with(Series::dots("", vec![(0.3, 0.0), (0.5, 1.0)]))
            .with(Series::line("", vec![(0.8, -0.5), (0.8, 1.5)]));
        let svg = svg("Functions", &[panel]).unwrap();
        // The two dots, and no legend box, line or dot.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(
            !svg.contains("opacity=\"0.85\""),
            "a legend background: {svg}"
        );
    }

    #[test]
    fn writes_the_file_where_asked() {
        let dir = std::env::temp_dir().join(format!("plot-test-{}", std::process::id()));
        let path = dir.join("nested/figure.svg");
        write(&path, "Decoupling", &figure()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("Follow latency"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
