//! The report as an SVG chart: GFLOP/s against size for every matmul rung (cuBLAS included),
//! input GB/s against bin count for every histogram tier under the copy-bandwidth ceiling, and
//! the shape suite's x cuBLAS per shape.
//! The first two x axes are logarithmic (sizes and bin counts double); the matmul y axis is too,
//! since the CPU triple loop and cuBLAS differ by four orders of magnitude, and so is the suite's,
//! on which 2x slower and 2x faster than cuBLAS lie equally far from it.

use super::report::{BenchReport, HistogramSection, MatmulSection, RowStatus, SuiteSection};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of the SVG, pixels.
pub const WIDTH: u32 = 1100;
/// Height of the SVG, pixels (three panels).
pub const HEIGHT: u32 = 1950;
/// Title of the matmul panel.
pub const MATMUL_TITLE: &str = "Matmul (FP32): GFLOP/s against size";
/// x label of the matmul panel.
pub const MATMUL_X: &str = "size n of an n x n x n product (rectangular: cube root of m*k*n), log scale";
/// y label of the matmul panel.
pub const MATMUL_Y: &str = "GFLOP/s (median), log scale";
/// Title of the histogram panel.
pub const HISTOGRAM_TITLE: &str = "Histogram: input GB/s against bins";
/// x label of the histogram panel.
pub const HISTOGRAM_X: &str = "bins, log scale";
/// y label of the histogram panel.
pub const HISTOGRAM_Y: &str = "GB/s of input read (median)";
/// Legend name of the ceiling line.
pub const CEILING: &str = "device-to-device copy (read + write): the ceiling";
/// Title of the suite panel.
pub const SUITE_TITLE: &str = "Shape suite: auto time over cuBLAS time, per shape";
/// x label of the suite panel.
pub const SUITE_X: &str = "shape m x k x n";
/// y label of the suite panel.
pub const SUITE_Y: &str = "x cuBLAS (auto median / cuBLAS median), log scale";
/// Legend name of the line at 1.0.
pub const SUITE_PARITY: &str = "1.00: as fast as cuBLAS";
/// Legend name of the line at [`SUITE_TARGET`].
pub const SUITE_TARGET_LINE: &str = "1.25: a quarter slower than cuBLAS";
/// The second reference line of the suite panel: within this factor of cuBLAS.
pub const SUITE_TARGET: f64 = 1.25;
/// Label of a suite shape without a ratio (auto or cuBLAS not measured).
pub const NOT_MEASURED: &str = "n/a";
/// Legend name of the bars of compute-bound shapes.
pub const SUITE_COMPUTE: &str = "compute-bound shape";
/// Legend name of the bars of memory-bound shapes.
pub const SUITE_MEMORY: &str = "memory-bound shape";

const FONT: &str = "sans-serif";

/// Series colours, distinguishable on white and from each other (Tableau 10, less its grey,
/// which reads as a grid line; black is kept for the baselines).
const COLORS: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Renders the chart as SVG text.
pub fn render_svg(report: &BenchReport) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!("{} ({}), {}", report.device.name, report.ptx.arch, report.date);
        let root = root.titled(&title, (FONT, 22))?;
        let panels = root.split_evenly((3, 1));
        match &report.matmul {
            Some(m) => draw_matmul(&panels[0], m)?,
            None => draw_absent(&panels[0], MATMUL_TITLE, "not measured in this run (--skip-matmul)")?,
        }
        match &report.histogram {
            Some(h) => draw_histogram(&panels[1], h)?,
            None => draw_absent(&panels[1], HISTOGRAM_TITLE, "not measured in this run (--skip-histogram)")?,
        }
        match &report.suite {
            Some(s) => draw_suite(&panels[2], s)?,
            None => draw_absent(&panels[2], SUITE_TITLE, "not measured in this run (--skip-suite)")?,
        }
        root.present()?;
    }
    Ok(svg)
}

/// Series in order of first appearance, each with its points sorted by x.
fn group(points: impl Iterator<Item = (String, f64, f64)>) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (name, x, y) in points {
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push((x, y)),
            None => series.push((name, vec![(x, y)])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// `lo..hi` widened by `factor` on both sides (a log axis needs a non-empty range around a
/// single point).
fn widen(lo: f64, hi: f64, factor: f64) -> std::ops::Range<f64> {
    lo / factor..hi * factor
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.filter(|v| v.is_finite() && *v > 0.0).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// One line with a dot per point for each series, with its legend entry.
fn draw_lines<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    points: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for (i, (name, pts)) in points.iter().enumerate() {
        let s = style(i, name);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), s))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], s));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, s.filled())))?;
    }
    Ok(())
}

/// The boxed legend of every labelled series, at `position`.
fn draw_legend<'a, CT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn style(i: usize, name: &str) -> ShapeStyle {
    // cuBLAS is the baseline every rung is read against: black and heavier.
    if name == super::matmul::CUBLAS { BLACK.stroke_width(3) } else { COLORS[i % COLORS.len()].stroke_width(2) }
}

fn draw_matmul(area: &DrawingArea<SVGBackend, Shift>, section: &MatmulSection) -> anyhow::Result<()> {
    let points = group(section.shapes.iter().flat_map(|s| {
        let x = (s.shape.m as f64 * s.shape.k as f64 * s.shape.n as f64).cbrt();
        s.rows
            .iter()
            .filter(|r| r.status == RowStatus::Measured)
            .filter_map(move |r| r.gflops.map(|y| (r.name.clone(), x, y)))
    }));
    let xs = bounds(points.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
    let ys = bounds(points.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let (Some((x0, x1)), Some((y0, y1))) = (xs, ys) else {
        return draw_absent(area, MATMUL_TITLE, "no matmul row was measured");
    };
    // Ticks at the square sizes measured: the round numbers a log axis picks (2000, 3000) name
    // no size that was run.
    let mut ticks: Vec<f64> = section
        .shapes
        .iter()
        .filter(|s| s.shape.m == s.shape.k && s.shape.k == s.shape.n)
        .map(|s| s.shape.m as f64)
        .collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let mut chart = ChartBuilder::on(area)
        .caption(MATMUL_TITLE, (FONT, 20))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80)
        // A decade of room below the slowest row holds the legend clear of the data.
        .build_cartesian_2d(widen(x0, x1, 1.3).log_scale().with_key_points(ticks), (y0 / 20.0..y1 * 2.0).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(MATMUL_X)
        .y_desc(MATMUL_Y)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y}"))
        .label_style((FONT, 14))
        .draw()?;
    draw_lines(&mut chart, &points)?;
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    Ok(())
}

fn draw_histogram(area: &DrawingArea<SVGBackend, Shift>, section: &HistogramSection) -> anyhow::Result<()> {
    let points = group(section.bins.iter().flat_map(|b| {
        let x = b.bins as f64;
        b.rows
            .iter()
            .filter(|r| r.status == RowStatus::Measured)
            .filter_map(move |r| r.gb_per_s.map(|y| (r.tier.clone(), x, y)))
    }));
    let ceiling = section.copy.gb_per_s;
    let Some((x0, x1)) = bounds(section.bins.iter().map(|b| b.bins as f64)) else {
        return draw_absent(area, HISTOGRAM_TITLE, "no bin count was measured");
    };
    let y1 = points.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(ceiling, f64::max);
    let x_range = widen(x0, x1, 1.5);
    let ticks: Vec<f64> = section.bins.iter().map(|b| b.bins as f64).collect();
    let (xl, xr) = (x_range.start, x_range.end);
    let title = format!("{HISTOGRAM_TITLE} ({} values)", section.values);
    let mut chart = ChartBuilder::on(area)
        .caption(&title, (FONT, 20))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80)
        // Room above the ceiling holds the legend clear of the data.
        .build_cartesian_2d(x_range.log_scale().with_key_points(ticks), 0.0..y1 * 1.4)?;
    chart
        .configure_mesh()
        .x_desc(HISTOGRAM_X)
        .y_desc(HISTOGRAM_Y)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style((FONT, 14))
        .draw()?;
    let ceiling_style = BLACK.stroke_width(2);
    chart
        .draw_series(LineSeries::new([(xl, ceiling), (xr, ceiling)], ceiling_style))?
        .label(format!("{CEILING}, {ceiling:.0} GB/s"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], ceiling_style));
    draw_lines(&mut chart, &points)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

fn draw_suite(area: &DrawingArea<SVGBackend, Shift>, section: &SuiteSection) -> anyhow::Result<()> {
    let names: Vec<String> = section.shapes.iter().map(|s| s.shape.to_string()).collect();
    let ratios = bounds(section.shapes.iter().filter_map(|s| s.x_cublas));
    // The title names the planner when it is not `auto`.
    let base = match section.planner.as_str() {
        "auto" => SUITE_TITLE.to_string(),
        planner => format!("Shape suite: {planner} time over cuBLAS time, per shape"),
    };
    let Some((lo, hi)) = ratios else {
        let why = format!("no shape has both {} and cuBLAS measured", section.planner);
        return draw_absent(area, &base, &why);
    };
    let title = match section.geomean_x_cublas {
        Some(mean) => {
            let n = section.geomean_shapes;
            format!("{base} (geometric mean {mean:.2} over {n} shape{})", if n == 1 { "" } else { "s" })
        }
        None => base,
    };
    // Both reference lines always show; room above the highest bar holds the legend.
    let y_range = (lo.min(1.0) / 1.3)..(hi.max(SUITE_TARGET) * 2.0);
    let ticks: Vec<f64> = [0.25, 0.5, 0.75, 1.0, SUITE_TARGET, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .into_iter()
        .filter(|t| y_range.contains(t))
        .collect();
    let (last, y_bottom) = (names.len() as i32 - 1, y_range.start);
    let mut chart = ChartBuilder::on(area)
        .caption(&title, (FONT, 20))
        .margin(15)
        .x_label_area_size(150)
        .y_label_area_size(80)
        .build_cartesian_2d((0..last).into_segmented(), y_range.log_scale().with_key_points(ticks))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(names.len())
        // The shapes are labelled below, turned: the mesh centres a turned label on its tick,
        // across the axis.
        .x_label_formatter(&|_| String::new())
        .x_desc(SUITE_X)
        .y_desc(SUITE_Y)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style((FONT, 14))
        .draw()?;
    // Turned a quarter, reading down from the axis: 18 names of up to 14 characters do not fit
    // side by side.
    let (base_x, base_y) = area.get_base_pixel();
    let name_style =
        TextStyle::from((FONT, 13)).transform(FontTransform::Rotate90).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i as i32), y_bottom));
        area.draw(&Text::new(name.as_str(), (x - base_x, y - base_y + 10), name_style.clone()))?;
    }
    // Bars from 1.0 (cuBLAS) to each ratio: up when slower, down when faster.
    for (memory_bound, color, name) in [(false, COLORS[0], SUITE_COMPUTE), (true, COLORS[1], SUITE_MEMORY)] {
        let bars =
            section.shapes.iter().enumerate().filter(|(_, s)| s.memory_bound == memory_bound).filter_map(|(i, s)| {
                s.x_cublas.map(|r| {
                    let i = i as i32;
                    // The last slot ends at `Last`: with one shape, `Exact(1)` lies off the axis.
                    let right = if i == last { SegmentValue::Last } else { SegmentValue::Exact(i + 1) };
                    let mut bar = Rectangle::new([(SegmentValue::Exact(i), 1.0), (right, r)], color.mix(0.8).filled());
                    bar.set_margin(0, 0, 6, 6);
                    bar
                })
            });
        chart
            .draw_series(bars)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], color.mix(0.8).filled()));
    }
    // Each ratio in figures at the end of its bar, so that 0.97 and 1.03 read apart.
    chart.draw_series(section.shapes.iter().enumerate().filter_map(|(i, s)| {
        s.x_cublas.map(|r| {
            let (v, dy) = if r >= 1.0 { (VPos::Bottom, -4) } else { (VPos::Top, 4) };
            let style = TextStyle::from((FONT, 13)).pos(Pos::new(HPos::Center, v));
            EmptyElement::at((SegmentValue::CenterOf(i as i32), r)) + Text::new(format!("{r:.2}"), (0, dy), style)
        })
    }))?;
    // A shape without a ratio says so where its bar would be.
    chart.draw_series(section.shapes.iter().enumerate().filter(|(_, s)| s.x_cublas.is_none()).map(|(i, _)| {
        let style = TextStyle::from((FONT, 13)).pos(Pos::new(HPos::Center, VPos::Bottom));
        EmptyElement::at((SegmentValue::CenterOf(i as i32), 1.0)) + Text::new(NOT_MEASURED, (0, -4), style)
    }))?;
    let parity = BLACK.stroke_width(2);
    chart
        .draw_series(LineSeries::new([(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)], parity))?
        .label(SUITE_PARITY)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], parity));
    let target = COLORS[3].stroke_width(2);
    chart
        .draw_series(DashedLineSeries::new(
            [(SegmentValue::Exact(0), SUITE_TARGET), (SegmentValue::Last, SUITE_TARGET)],
            8,
            6,
            target,
        ))?
        .label(SUITE_TARGET_LINE)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], target));
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

fn draw_absent(area: &DrawingArea<SVGBackend, Shift>, title: &str, why: &str) -> anyhow::Result<()> {
    let area = area.titled(title, (FONT, 20))?;
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(why, (w as i32 / 4, h as i32 / 2), (FONT, 16)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_keeps_first_appearance_order_and_sorts_points_by_x() {
        let pts = vec![("b".to_string(), 4.0, 1.0), ("a".to_string(), 2.0, 1.0), ("b".to_string(), 1.0, 2.0)];
        let g = group(pts.into_iter());
        assert_eq!(g[0], ("b".to_string(), vec![(1.0, 2.0), (4.0, 1.0)]));
        assert_eq!(g[1].0, "a");
    }

    #[test]
    fn bounds_ignore_values_a_log_axis_cannot_show() {
        assert_eq!(bounds([3.0, 0.0, -1.0, f64::NAN, 5.0].into_iter()), Some((3.0, 5.0)));
        assert_eq!(bounds(std::iter::empty()), None);
    }
}
