//! The report as text: a header saying where and how it was measured, one table per matmul size,
//! one for the histogram and one for the shape suite, with ratios to cuBLAS and to the copy
//! bandwidth in every row.

use super::report::{
    BenchReport, FeatureSection, HistogramSection, LaunchOverhead, MatmulRow, MatmulRowKind, MatmulShapeResult,
    RowStatus, SuiteSection, SweepPrecision, SweepSection, SweepSummary,
};
use crate::error::format_bytes;
use crate::timing::Timing;

/// The whole report as aligned text.
pub fn render(report: &BenchReport) -> String {
    let mut out = header(report);
    if let Some(matmul) = &report.matmul {
        for shape in &matmul.shapes {
            out.push('\n');
            out += &render_matmul_shape(shape);
        }
        if let Some(overhead) = &matmul.launch_overhead {
            out.push('\n');
            out += &render_launch_overhead(overhead);
        }
    }
    if let Some(histogram) = &report.histogram {
        out.push('\n');
        out += &render_histogram(histogram);
    }
    if let Some(features) = &report.features {
        out.push('\n');
        out += &render_features(features);
    }
    if let Some(suite) = &report.suite {
        out.push('\n');
        out += &render_suite(suite);
    }
    if let Some(sweep) = &report.sweep {
        out.push('\n');
        out += &render_sweep(sweep);
    }
    let failures = report.failures();
    if !failures.is_empty() {
        out += "\nFAILED CHECKS (these rows were not timed):\n";
        for f in failures {
            out += &format!("  {f}\n");
        }
    }
    out
}

fn header(report: &BenchReport) -> String {
    let d = &report.device;
    let (major, minor) = d.compute_capability;
    let s = &report.settings;
    let cpu = report.host_cpu.model.as_deref().unwrap_or("unknown CPU");
    format!(
        "host bench, {date}\n\
         device {ordinal}: {name} (sm_{major}{minor}, {sms} SMs, {mem}, L2 {l2}, {mhz} MHz), driver CUDA {driver}\n\
         PTX: {ptx}; CPU: {cpu}, {threads} threads; seed {seed}\n\
         GPU rows: CUDA events, median of {repeat} runs after {warmup} warm-ups, with min and max; inputs rotated when they fit in L2.\n\
         CPU rows: wall clock. Every result is checked against a float64 (matmul) or exact (histogram) CPU reference before it is timed.\n",
        date = report.date,
        ordinal = d.ordinal,
        name = d.name,
        sms = d.sm_count,
        mem = format_bytes(d.total_memory),
        l2 = format_bytes(d.l2_bytes),
        mhz = d.clock_khz / 1000,
        driver = d.driver_cuda_version_string(),
        ptx = report.ptx.summary(),
        threads = report.host_cpu.threads,
        seed = s.seed,
        repeat = s.repeat,
        warmup = s.warmup,
    ) + &if report.ptx.profile == "release" {
        String::new()
    } else {
        "note: the PTX is a checked build (bounds and overflow checks): its times are not representative\n".into()
    }
}

/// The table for one matmul size.
pub fn render_matmul_shape(result: &MatmulShapeResult) -> String {
    let mut out = format!(
        "matmul {} ({:.2} GFLOP): checked on {}, bound {:.2e}; GPU inputs rotated over {} set(s); x cuBLAS(Lt) = time / cuBLAS(Lt) time in the row's baseline precision\n",
        result.shape,
        result.flops / 1e9,
        result.check,
        result.tolerance,
        result.input_sets
    );
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|row| {
            let note = match &row.status {
                RowStatus::Measured if matches!(row.kind, MatmulRowKind::CpuLoop | MatmulRowKind::CpuSgemm) => {
                    row.method.clone()
                }
                // `auto`'s plan: which kernel it ran and why.
                _ => row_note(row),
            };
            let mut cells = vec![row.name.clone()];
            cells.extend(timing_cells(row.timing.as_ref()));
            cells.push(opt(row.gflops.map(rate)));
            cells.push(opt(row.ratio_to_cublas.map(|r| format!("{r:.2}"))));
            cells.push(opt(row.ratio_to_cublaslt.map(|r| format!("{r:.2}"))));
            cells.push(opt(row.max_error.map(|e| format!("{e:.1e}"))));
            cells.push(note);
            cells
        })
        .collect();
    out += &grid(
        &["variant", "median ms", "min ms", "max ms", "GFLOP/s", "x cuBLAS", "x cuBLASLt", "max error", "note"],
        &[0],
        &rows,
    );
    out
}

/// The host's time per planned launch beside cuBLAS's.
pub fn render_launch_overhead(o: &LaunchOverhead) -> String {
    let mut out = format!(
        "launch overhead: host time to enqueue one {side}x{side}x{side} GEMM, {} calls in batches of {} (each batch timed on the host's clock, the stream drained between batches); ours: {}\n",
        o.launches,
        o.batch,
        o.plan,
        side = o.side
    );
    let row = |name: &str, c: Option<&super::report::PerCall>, note: String| {
        let cell = |v: Option<f64>| opt(v.map(|v| format!("{v:.2}")));
        vec![name.to_string(), cell(c.map(|c| c.median_us)), cell(c.map(|c| c.min_us)), cell(c.map(|c| c.max_us)), note]
    };
    let ratio = o.ratio.map_or(String::new(), |r| format!("{r:.2}x cuBLAS's"));
    let rows = vec![
        row("GemmPlan::launch", Some(&o.ours), ratio),
        row("cublasSgemm", o.cublas.as_ref(), o.cublas_missing.clone().unwrap_or_default()),
    ];
    out += &grid(&["call", "median us", "min us", "max us", "note"], &[0], &rows);
    out
}

/// The histogram table: a CPU row and one row per tier at each bin count.
pub fn render_histogram(section: &HistogramSection) -> String {
    let values = section.values;
    let pow = if values.is_power_of_two() { format!(" = 2^{}", values.trailing_zeros()) } else { String::new() };
    let copy = &section.copy;
    let mut out = format!(
        "histogram of {values}{pow} i32 values ({}), {} read per histogram\n\
         ceiling: device-to-device copy of {}, {:.0} GB/s (read + write, median of {}); % of copy = GB/s / ceiling\n\
         CPU: {}; speedup = CPU time / GPU time\n",
        section.distribution,
        format_bytes(4 * values as u64),
        format_bytes(copy.bytes),
        copy.gb_per_s,
        copy.timing.runs,
        section.cpu_method,
    );
    let mut rows = Vec::new();
    for entry in &section.bins {
        let mut cpu = vec![entry.bins.to_string(), "cpu".into()];
        cpu.extend(timing_cells(Some(&entry.cpu)));
        let cpu_fraction = format!("{:.2}%", 100.0 * entry.cpu_gb_per_s / copy.gb_per_s);
        // The CPU's counts are the reference the tiers are compared with.
        cpu.extend([rate(entry.cpu_gb_per_s), cpu_fraction, "1x".into(), "ref".into(), String::new()]);
        rows.push(cpu);
        for row in &entry.rows {
            let mut cells = vec![entry.bins.to_string(), row.tier.clone()];
            cells.extend(timing_cells(row.timing.as_ref()));
            cells.push(opt(row.gb_per_s.map(rate)));
            cells.push(opt(row.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f))));
            cells.push(opt(row.speedup_over_cpu.map(|s| format!("{s:.0}x"))));
            cells.push(opt(row.exact_match.map(|e| if e { "yes" } else { "NO" }.to_string())));
            let plan = row.plan.clone().unwrap_or_default();
            cells.push(match &row.status {
                RowStatus::Measured => plan,
                RowStatus::Skipped { reason } | RowStatus::Failed { reason } if plan.is_empty() => reason.clone(),
                RowStatus::Skipped { reason } | RowStatus::Failed { reason } => format!("{plan}; {reason}"),
            });
            rows.push(cells);
        }
    }
    out += &grid(
        &["bins", "tier", "median ms", "min ms", "max ms", "GB/s", "% of copy", "speedup", "exact", "plan / note"],
        &[1],
        &rows,
    );
    out
}

/// The histogram features table: per case its time, GB/s of input read and fraction of the copy
/// ceiling, its time over our own baseline row (same run), the fastest torch/cupy peer and our
/// time over its, the goal, and the plan with how the result was checked.
pub fn render_features(section: &FeatureSection) -> String {
    let mut out = format!(
        "histogram features: GB/s of input read (values, with weights or both coordinates where read); % of copy = GB/s / the {:.0} GB/s copy (read + write) of this run\n\
         x base = time / our baseline row's (same run); x peer = time / the fastest peer's (below 1: faster); peers: {}\n",
        section.copy.gb_per_s,
        section
            .peers_source
            .as_deref()
            .unwrap_or("none given (host bench --peers FILE from scripts/histogram_peers.py)")
    );
    let rows: Vec<Vec<String>> = section
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.key.clone()];
            cells.push(opt(row.timing.map(|t| fine_ms(t.median_ms))));
            cells.push(opt(row.gb_per_s.map(rate)));
            cells.push(opt(row.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f))));
            cells.push(opt(row.ratio_to_baseline().map(|r| format!("{r:.2}"))));
            let peer = row.against_fastest_peer();
            cells.push(opt(peer.map(|(p, _)| format!("{} {}", p.name, fine_ms(p.ms)))));
            cells.push(opt(peer.map(|(_, r)| format!("{r:.2}"))));
            cells.push(row.target.clone());
            let mut note = Vec::new();
            match &row.status {
                RowStatus::Measured => {}
                RowStatus::Skipped { reason } | RowStatus::Failed { reason } => note.push(reason.clone()),
            }
            if let Some(c) = &row.check {
                note.push(c.clone());
            }
            if let Some(p) = &row.plan {
                note.push(p.clone());
            }
            if let Some(b) = &row.baseline {
                note.push(format!("baseline: {} {} ms", b.name, fine_ms(b.ms)));
            }
            cells.push(note.join("; "));
            cells
        })
        .collect();
    out += &grid(
        &[
            "case",
            "median ms",
            "GB/s",
            "% of copy",
            "x base",
            "fastest peer",
            "x peer",
            "goal",
            "check; plan; baseline",
        ],
        &[0, 5, 7],
        &rows,
    );
    out
}

/// The suite table: the planner against cuBLAS at each shape, then the geometric mean of x
/// cuBLAS.
pub fn render_suite(section: &SuiteSection) -> String {
    let planner = &section.planner;
    let mut out = format!(
        "matmul shape suite: {planner} (the planner's choice, checked on the same bound as the ladder) against cuBLAS; \
         x cuBLAS = {planner} time / cuBLAS time\n\
         GB/s = (A + B read once, C written once) / {planner} time; memory-bound: under {ridge} FLOP per byte; \
         % of copy = GB/s / the copy's {copy:.0} GB/s, for memory-bound shapes\n",
        ridge = section.ridge_flop_per_byte,
        copy = section.copy.gb_per_s,
    );
    let rows: Vec<Vec<String>> = section
        .shapes
        .iter()
        .map(|s| {
            let mut note = row_note(&s.auto);
            if let RowStatus::Skipped { reason } | RowStatus::Failed { reason } = &s.cublas.status {
                let sep = if note.is_empty() { "" } else { "; " };
                note = format!("{note}{sep}{}: {reason}", s.cublas.name);
            }
            vec![
                s.shape.to_string(),
                opt(s.kernel.clone()),
                opt(s.auto.timing.map(|t| fine_ms(t.median_ms))),
                opt(s.cublas.timing.map(|t| fine_ms(t.median_ms))),
                opt(s.x_cublas.map(|r| format!("{r:.2}"))),
                opt(s.auto.gflops.map(rate)),
                opt(s.gb_per_s.map(rate)),
                opt(s.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f))),
                opt(s.auto.max_error.map(|e| format!("{e:.1e}"))),
                note,
            ]
        })
        .collect();
    out += &grid(
        &[
            "shape",
            "kernel",
            &format!("{planner} ms"),
            "cuBLAS ms",
            "x cuBLAS",
            "GFLOP/s",
            "GB/s",
            "% of copy",
            "max error",
            "plan / note",
        ],
        &[0, 1],
        &rows,
    );
    out += &match section.geomean_x_cublas {
        Some(mean) => {
            let n = section.geomean_shapes;
            format!("geometric mean of x cuBLAS: {mean:.2} over {n} shape{}\n", if n == 1 { "" } else { "s" })
        }
        None => "geometric mean of x cuBLAS: - (no shape has both auto and cuBLAS measured)\n".into(),
    };
    out
}

/// The sweep: how its shapes were drawn, a table per precision with each shape's times and
/// ratios, then every precision's summary lines together.
pub fn render_sweep(section: &SweepSection) -> String {
    let mut out = format!(
        "shape sweep: {} shapes, seed {}; {}\n\
         x = our time / the baseline's (1.10 = 10% slower); worst = the shape with the largest x\n",
        section.shapes.len(),
        section.seed,
        section.draw,
    );
    for precision in &section.precisions {
        out.push('\n');
        out += &render_sweep_precision(precision);
    }
    out += "\nsweep summary:\n";
    for precision in &section.precisions {
        for summary in [Some(&precision.x_cublaslt), precision.x_cublas.as_ref()].into_iter().flatten() {
            out += &format!("  {}\n", sweep_summary_line(precision, summary));
        }
    }
    out
}

/// One precision's table and its summary lines.
pub fn render_sweep_precision(p: &SweepPrecision) -> String {
    let cublas = p.x_cublas.as_ref();
    let mut out = format!(
        "sweep {}: {} against {}{}\n",
        p.name,
        p.planner,
        p.x_cublaslt.baseline,
        cublas.map_or(String::new(), |c| format!(" and {}", c.baseline)),
    );
    let rows: Vec<Vec<String>> = p
        .shapes
        .iter()
        .map(|s| {
            let time = |row: Option<&MatmulRow>| opt(row.and_then(|r| r.timing).map(|t| fine_ms(t.median_ms)));
            let ratio = |r: Option<f64>| opt(r.map(|r| format!("{r:.2}")));
            // Only what went wrong: a measured row's plan is in the JSON.
            let note = s
                .rows()
                .filter_map(|row| match &row.status {
                    RowStatus::Measured => None,
                    RowStatus::Skipped { reason } => Some(format!("{} skipped: {reason}", row.name)),
                    RowStatus::Failed { reason } => Some(format!("{} FAILED: {reason}", row.name)),
                })
                .collect::<Vec<_>>()
                .join("; ");
            let mut cells = vec![
                s.shape.to_string(),
                opt(s.kernel.clone()),
                time(Some(&s.ours)),
                time(Some(&s.cublaslt)),
                ratio(s.ours.ratio_to_cublaslt),
            ];
            if cublas.is_some() {
                cells.push(time(s.cublas.as_ref()));
                cells.push(ratio(s.ours.ratio_to_cublas));
            }
            cells.push(opt(s.ours.gflops.map(rate)));
            cells.push(opt(s.ours.max_error.map(|e| format!("{e:.1e}"))));
            cells.push(note);
            cells
        })
        .collect();
    let ours_ms = format!("{} ms", p.planner);
    let mut headers = vec!["shape", "kernel", &ours_ms, "cuBLASLt ms", "x cuBLASLt"];
    if cublas.is_some() {
        headers.extend(["cuBLAS ms", "x cuBLAS"]);
    }
    headers.extend(["GFLOP/s", "max error", "note"]);
    out += &grid(&headers, &[0, 1], &rows);
    for summary in [Some(&p.x_cublaslt), cublas].into_iter().flatten() {
        out += &sweep_summary_line(p, summary);
        out.push('\n');
    }
    out
}

/// `bf16 x cublaslt bf16: worst 1.83 at 16x4096x14336, geometric mean 1.12 over 198 shapes (2
/// not measured)`.
pub fn sweep_summary_line(p: &SweepPrecision, s: &SweepSummary) -> String {
    let unmeasured = match s.unmeasured {
        0 => String::new(),
        n => format!(" ({n} not measured: skipped or failed)"),
    };
    match (s.worst, s.geomean) {
        (Some(worst), Some(mean)) => format!(
            "{} x {}: worst {:.2} at {}, geometric mean {mean:.2} over {} shape{}{unmeasured}",
            p.name,
            s.baseline,
            worst.ratio,
            worst.shape,
            s.measured,
            if s.measured == 1 { "" } else { "s" },
        ),
        _ => format!("{} x {}: - (no shape has both rows measured){unmeasured}", p.name, s.baseline),
    }
}

/// A GPU row's note: its plan when it has one, then why it was not measured.
fn row_note(row: &MatmulRow) -> String {
    let plan = row.plan.clone().unwrap_or_default();
    match &row.status {
        RowStatus::Measured => plan,
        RowStatus::Skipped { reason } | RowStatus::Failed { reason } if plan.is_empty() => reason.clone(),
        RowStatus::Skipped { reason } | RowStatus::Failed { reason } => format!("{plan}; {reason}"),
    }
}

fn timing_cells(t: Option<&Timing>) -> [String; 3] {
    match t {
        Some(t) => [ms(t.median_ms), ms(t.min_ms), ms(t.max_ms)],
        None => ["-".into(), "-".into(), "-".into()],
    }
}

fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// Milliseconds with a fourth decimal below 0.1 ms, where the suite's small shapes run: 0.012
/// and 0.013 would hide a 10% difference.
fn fine_ms(v: f64) -> String {
    if v < 0.1 { format!("{v:.4}") } else { ms(v) }
}

/// Rates in whole units from 100, with one decimal from 10 and two below, so that the CPU's
/// few GFLOP/s and the GPU's thousands read alike.
fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// Columns padded to their widest cell: those in `left` left-aligned (names), the last
/// left-aligned and unpadded (free text), the others right-aligned (numbers).
fn grid(headers: &[&str], left: &[usize], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            let padded = if i + 1 == widths.len() {
                cell.to_string()
            } else if left.contains(&i) {
                format!("{cell:<w$}")
            } else {
                format!("{cell:>w$}")
            };
            if i > 0 {
                l += "  ";
            }
            l += &padded;
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = line(headers);
    for row in rows {
        out += &line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn launch_overhead_shows_both_calls_and_the_ratio_or_why_cublas_is_missing() {
        use super::super::report::PerCall;
        let per = |median_us| PerCall { median_us, min_us: median_us, max_us: median_us };
        let o = LaunchOverhead::new(256, 10_000, 200, "sgemm".into(), per(3.0), Ok(per(2.0)));
        let text = render_launch_overhead(&o);
        assert!(
            text.contains("GemmPlan::launch") && text.contains("3.00") && text.contains("1.50x cuBLAS's"),
            "{text}"
        );
        let missing = LaunchOverhead::new(256, 10_000, 200, "sgemm".into(), per(3.0), Err("no libcublas".into()));
        assert_eq!(missing.ratio, None);
        assert!(render_launch_overhead(&missing).contains("no libcublas"));
    }

    #[test]
    fn feature_rows_show_rate_ceiling_baseline_peer_and_goal() {
        use super::super::report::{CopyBandwidth, FeatureRow, TimedName};
        let t = |ms: f64| Timing::from_samples(vec![ms]).unwrap();
        let copy = CopyBandwidth::new(1 << 30, t(0.5));
        let row = FeatureRow::measured(
            "edges-f32-256",
            "edges",
            "c".into(),
            "<= 1.5x the even bins",
            "edges tier".into(),
            t(0.1),
            1 << 28,
            &copy,
            "exact".into(),
        )
        .with_baseline("256 even f32 bins", 0.08);
        let mut row = row;
        row.peers = vec![
            TimedName { name: "cupy.histogram (CUB)".into(), ms: 0.8 },
            TimedName { name: "torch".into(), ms: 0.4 },
        ];
        let skipped = FeatureRow::unmeasured(
            "2d-256x256",
            "2-D",
            "c".into(),
            "g",
            None,
            RowStatus::Skipped { reason: "no plan: x".into() },
        );
        let section = FeatureSection { copy, rows: vec![row, skipped], peers_source: Some("p.json: H200".into()) };
        let text = render_features(&section);
        assert!(text.contains("edges-f32-256") && text.contains("2684") && text.contains("62.5%"), "{text}");
        assert!(text.contains("1.25") && text.contains("torch 0.400") && text.contains("0.25"), "{text}");
        assert!(text.contains("<= 1.5x the even bins") && text.contains("exact; edges tier; baseline"), "{text}");
        assert!(text.contains("no plan: x") && text.contains("peers: p.json: H200"), "{text}");
    }

    /// A sweep of two shapes: `auto` measured at both against cuBLASLt and cuBLAS, except
    /// cuBLAS failing its check at the second.
    pub(crate) fn sweep_fixture() -> SweepSection {
        use super::super::report::{CheckMethod, SweepShapeResult};
        use super::super::shape_sweep::{MAX_MACS, MAX_SIDE, SWEEP_PRECISIONS, draw_rule, summarize};
        use crate::matmul::{MatmulShape, Precision};
        let t = |ms: f64| Timing::from_samples(vec![ms]).unwrap();
        let (a, b) = (MatmulShape::new(16, 4096, 14336).unwrap(), MatmulShape::new(333, 777, 555).unwrap());
        let row = |name: &str, kind, shape: MatmulShape, ms: f64| {
            MatmulRow::measured(name, kind, "events", shape.flops(), t(ms), Some(1e-7)).with_precision(Precision::Fp32)
        };
        let failed = MatmulRow::unmeasured(
            "cublas",
            MatmulRowKind::Cublas,
            "events",
            RowStatus::Failed { reason: "error 1e-2 exceeds the bound".into() },
            Some(1e-2),
        );
        let shapes = vec![
            SweepShapeResult::new(
                a,
                1,
                CheckMethod::Full,
                Some("few_rows".into()),
                row("auto", MatmulRowKind::Gpu, a, 0.066),
                row("cublaslt", MatmulRowKind::CublasLt, a, 0.030),
                Some(row("cublas", MatmulRowKind::Cublas, a, 0.033)),
            ),
            SweepShapeResult::new(
                b,
                16,
                CheckMethod::Full,
                Some("sgemm".into()),
                row("auto", MatmulRowKind::Gpu, b, 0.0120),
                row("cublaslt", MatmulRowKind::CublasLt, b, 0.0150),
                Some(failed),
            ),
        ];
        let auto = SWEEP_PRECISIONS.iter().find(|e| e.name == "auto").unwrap();
        SweepSection {
            seed: 1,
            draw: draw_rule(),
            max_side: MAX_SIDE,
            max_macs: MAX_MACS,
            shapes: vec![a, b],
            precisions: vec![summarize(auto, "auto".into(), shapes)],
        }
    }

    #[test]
    fn sweep_tables_give_every_shape_its_ratios_and_each_baseline_its_worst_and_mean() {
        let text = render_sweep(&sweep_fixture());
        assert!(text.starts_with("shape sweep: 2 shapes, seed 1; m, k, n each log-uniform"), "{text}");
        assert!(text.contains("sweep auto: auto against cublaslt and cublas\n"), "{text}");
        let line = text.lines().find(|l| l.starts_with("16x4096x14336")).unwrap();
        let cells: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(cells[..7], ["16x4096x14336", "few_rows", "0.0660", "0.0300", "2.20", "0.0330", "2.00"], "{line}");
        let line = text.lines().find(|l| l.starts_with("333x777x555")).unwrap();
        assert!(line.contains("0.80") && line.contains("cublas FAILED: error 1e-2"), "{line}");
        // Worst and mean against cuBLASLt over both shapes; against cuBLAS over the one measured.
        let mean = (2.2f64 * 0.8).sqrt();
        let lt = format!("auto x cublaslt: worst 2.20 at 16x4096x14336, geometric mean {mean:.2} over 2 shapes");
        let cublas = "auto x cublas: worst 2.00 at 16x4096x14336, geometric mean 2.00 over 1 shape \
                      (1 not measured: skipped or failed)";
        assert_eq!(text.matches(&lt).count(), 2, "under the table and in the summary: {text}");
        assert_eq!(text.matches(cublas).count(), 2, "{text}");
        assert!(text.contains("\nsweep summary:\n  auto x cublaslt"), "{text}");
    }

    #[test]
    fn rates_show_fewer_decimals_as_they_grow() {
        assert_eq!(rate(1.8345), "1.83");
        assert_eq!(rate(12.54), "12.5");
        assert_eq!(rate(4295.2), "4295");
    }

    #[test]
    fn suite_times_keep_a_fourth_decimal_below_a_tenth_of_a_millisecond() {
        assert_eq!(fine_ms(0.0133), "0.0133");
        assert_eq!(fine_ms(0.405), "0.405");
        assert_eq!(fine_ms(2.793), "2.793");
    }

    #[test]
    fn grid_aligns_numbers_right_and_labels_left() {
        let text = grid(&["variant", "ms", "note"], &[0], &[vec!["a".into(), "1.5".into(), "x y".into()]]);
        assert_eq!(text, "variant   ms  note\na        1.5  x y\n");
    }
}
