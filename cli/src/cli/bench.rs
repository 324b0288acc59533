//! `host bench`: the whole ladder and the shape suite in one run, printed as tables, optionally
//! saved as JSON and drawn as an SVG chart; or, with `--from-json`, a saved report rendered again
//! without a GPU.

use crate::bench::{self, BenchConfig, report, table};
use crate::gpu::Gpu;
use crate::matmul::{MatmulShape, PrecisionPolicy};
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

/// Arguments of `host bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Matmul sizes, comma-separated: N for N x N x N, or MxKxN
    /// [default: 256,512,1024,2048,4096,8192,1000x800x1200]
    #[arg(long, value_name = "LIST", value_parser = parse_sizes)]
    pub sizes: Option<ShapeList>,
    /// Histogram bin counts, comma-separated (2^k accepted)
    /// [default: 256,1024,4096,8192,16384,65536,131072,262144,1048576]
    #[arg(long, value_name = "LIST", value_parser = parse_bins)]
    pub bins: Option<BinList>,
    /// Short default lists (sizes 256,1024,1000x800x1200; bins 256,8192,131072; suite
    /// 256,1000x800x1200,64x8192x64,3x100000x5) for a first look; --sizes and --bins still win.
    #[arg(long)]
    pub quick: bool,
    /// Run the shape suite alone (auto against cuBLAS on 18 shapes, from squares to GEMVs): no
    /// ladder, no histograms.
    #[arg(long, conflicts_with_all = [
        "sizes", "bins", "values", "cpu_repeat", "cpu_loop_limit",
        "skip_matmul", "skip_histogram", "skip_suite",
    ])]
    pub suite: bool,
    /// The precision policy auto runs the suite under: highest (FP32 FMA on the CUDA cores), high
    /// (FP32's class and bound; split-TF32 on Hopper's tensor cores where a scan of the inputs
    /// proves it safe) or medium (TF32 tensor cores).
    #[arg(long, default_value = "high")]
    pub precision: PrecisionPolicy,
    /// Values per histogram (2^k accepted).
    #[arg(long, value_name = "N", default_value = "2^26", value_parser = parse_values)]
    pub values: usize,
    /// Untimed GPU runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Timed GPU runs (the median is reported, with min and max) [default: 20; 10 with --sweep]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Most timed runs of the multithreaded CPU SGEMM (fewer when one run takes seconds).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub cpu_repeat: u32,
    /// Run the single-threaded CPU triple loop only while its estimated time stays under this
    /// many seconds (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = parse_seconds, allow_negative_numbers = true)]
    pub cpu_loop_limit: f64,
    /// Seed for every random input (default: fresh each run; the report records it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Leave out the ladder of matrix products (to run the suite alone, use --suite).
    #[arg(long, conflicts_with = "skip_histogram")]
    pub skip_matmul: bool,
    /// Leave out the histograms.
    #[arg(long)]
    pub skip_histogram: bool,
    /// Leave out the shape suite.
    #[arg(long)]
    pub skip_suite: bool,
    /// Leave out the histogram features (weights, edges, channels, packed counters, 2-D,
    /// segments), which run with the histograms otherwise.
    #[arg(long)]
    pub skip_features: bool,
    /// The torch/cupy peers' times of the feature cases, from `scripts/histogram_peers.py --out
    /// FILE` run on the same GPU (also with --from-json, to add them to a saved report).
    #[arg(long, value_name = "FILE")]
    pub peers: Option<PathBuf>,
    /// Sweep the histogram kernels' launch shapes (threads, copies, packing, the sorted tier's
    /// waves and bucket bits) on this GPU, each checked then timed, the planner's choice against
    /// the best: no ladder, no suite. --json and --table write the sweep.
    #[arg(long, conflicts_with_all = [
        "sizes", "bins", "quick", "suite", "values", "cpu_repeat", "cpu_loop_limit", "skip_matmul",
        "skip_histogram", "skip_suite", "skip_features", "chart", "from_json", "peers",
    ])]
    pub histogram_sweep: bool,
    /// Run the random-shape sweep alone: N shapes with m, k and n each log-uniform in [1, 16384]
    /// (m*k*n at most 2^35, drawn again above), drawn from --seed; at every shape BF16 and TF32
    /// (our tensor-core kernels against cuBLASLt) and auto (against cuBLASLt and cuBLAS FP32),
    /// each result checked before it is timed; tables per precision with the worst shape and the
    /// geometric mean of the ratios.
    #[arg(long, value_name = "N", value_parser = parse_sweep_shapes, allow_negative_numbers = true, conflicts_with_all = [
        "sizes", "bins", "quick", "suite", "values", "cpu_repeat", "cpu_loop_limit", "skip_matmul",
        "skip_histogram", "skip_suite", "skip_features", "chart", "from_json", "peers", "histogram_sweep",
    ])]
    pub sweep: Option<usize>,
    /// Run the shape sweep alone on these shapes instead of random ones: MxKxN (or N for N^3),
    /// comma-separated, or `llm` for the squares 256-8192 and the LLM layers (m of 1 to 8192
    /// tokens against weights of 4096x4096, 4096x14336, 14336x4096 and 8192x28672).
    #[arg(long, value_name = "LIST", value_parser = parse_sweep_shape_list, conflicts_with_all = [
        "sizes", "bins", "quick", "suite", "values", "cpu_repeat", "cpu_loop_limit", "skip_matmul",
        "skip_histogram", "skip_suite", "skip_features", "chart", "from_json", "peers", "histogram_sweep", "sweep",
    ])]
    pub sweep_shapes: Option<ShapeList>,
    /// Sweep only these precisions of the shape sweep, comma-separated: bf16, fp16, tf32, auto
    /// (with --sweep or --sweep-shapes; all four without).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_sweep_precision)]
    pub sweep_precisions: Vec<String>,
    /// Start no further shape of the shape sweep after this many seconds (with --sweep or
    /// --sweep-shapes): the shapes left are reported as not measured, and the tables, --json and
    /// --table are written as for a whole run. For machines lent for a fixed time.
    #[arg(long, value_name = "SECONDS", value_parser = parse_time_limit, allow_negative_numbers = true)]
    pub time_limit: Option<f64>,
    /// Sweep only the cases whose keys start with one of these prefixes, e.g. shared,packed
    /// (with --histogram-sweep).
    #[arg(long, value_name = "PREFIXES", value_delimiter = ',', requires = "histogram_sweep")]
    pub sweep_only: Vec<String>,
    /// Write every measurement, the device and the PTX description to this JSON file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Also write the printed tables to this text file.
    #[arg(long, value_name = "PATH")]
    pub table: Option<PathBuf>,
    /// Draw GFLOP/s against size and GB/s against bins to this SVG file.
    #[arg(long, value_name = "PATH.svg", value_parser = parse_svg_path)]
    pub chart: Option<PathBuf>,
    /// Measure nothing: render a report saved with --json (table, and --chart), no GPU needed.
    #[arg(long, value_name = "PATH", conflicts_with_all = [
        "sizes", "bins", "quick", "values", "warmup", "repeat", "cpu_repeat", "cpu_loop_limit", "seed",
        "skip_matmul", "skip_histogram", "suite", "skip_suite",
    ])]
    pub from_json: Option<PathBuf>,
}

/// Timed GPU runs when `--repeat` is not given (outside `--sweep`).
pub const DEFAULT_REPEAT: usize = 20;

/// The shapes `--sizes` selected.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeList(pub Vec<MatmulShape>);

/// The bin counts `--bins` selected.
#[derive(Debug, Clone, PartialEq)]
pub struct BinList(pub Vec<usize>);

/// Parses `256,1024,1000x800x1200`: `N` is `N x N x N`, `MxKxN` is `m x k x n`; repeats are
/// dropped, the order kept.
pub fn parse_sizes(text: &str) -> Result<ShapeList, String> {
    let mut shapes: Vec<MatmulShape> = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty entry in `{text}`: write sizes like 256,1024,1000x800x1200"));
        }
        let dims = item
            .split(['x', 'X'])
            .map(|d| {
                d.trim().parse::<usize>().map_err(|_| {
                    format!("size `{item}`: `{}` is not a whole number (write N for N x N x N, or MxKxN)", d.trim())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (m, k, n) = match dims[..] {
            [s] => (s, s, s),
            [m, k, n] => (m, k, n),
            _ => return Err(format!("size `{item}` has {} dimensions: write N, or MxKxN", dims.len())),
        };
        let shape = MatmulShape::new(m, k, n).map_err(|e| format!("size `{item}`: {e}"))?;
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    Ok(ShapeList(shapes))
}

/// Parses a count written `67108864` or `2^26`.
pub fn parse_count(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let bad = || format!("`{text}` is not a count: write a whole number like 65536 or a power of two like 2^16");
    match text.split_once('^') {
        Some((base, exp)) => {
            let (base, exp): (usize, u32) =
                (base.trim().parse().map_err(|_| bad())?, exp.trim().parse().map_err(|_| bad())?);
            base.checked_pow(exp).ok_or_else(|| format!("`{text}` is too large"))
        }
        None => text.parse().map_err(|_| bad()),
    }
}

/// Parses `256,8192,2^20`: every count at least 1 and within the `i32` values' range; repeats
/// are dropped, the order kept.
pub fn parse_bins(text: &str) -> Result<BinList, String> {
    let mut bins: Vec<usize> = Vec::new();
    for item in text.split(',').map(str::trim) {
        let b = parse_count(item).map_err(|e| format!("bins: {e}"))?;
        if b == 0 {
            return Err("bins: 0 bins: a histogram needs at least 1".into());
        }
        if b > i32::MAX as usize {
            return Err(format!("bins: {b} exceeds {} (the values are i32)", i32::MAX));
        }
        if !bins.contains(&b) {
            bins.push(b);
        }
    }
    Ok(BinList(bins))
}

/// Parses the histogram length: at least 1, at most `u32::MAX` (the kernels count in u32).
pub fn parse_values(text: &str) -> Result<usize, String> {
    match parse_count(text)? {
        0 => Err("a histogram needs at least 1 value".into()),
        n if n > u32::MAX as usize => Err(format!("{n} values exceed {} (the kernels count in u32)", u32::MAX)),
        n => Ok(n),
    }
}

/// The most shapes `--sweep` takes: 100,000 run for about a day.
pub const MAX_SWEEP_SHAPES: usize = 100_000;

/// Parses `--time-limit`: seconds, a finite number above 0.
pub fn parse_time_limit(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        Ok(_) => Err(format!("a time limit of {text} s: give a number of seconds above 0")),
        Err(_) => Err(format!("`{text}` is not a number of seconds")),
    }
}

/// Parses one of `--sweep-precisions`: the name of a precision of the shape sweep.
pub fn parse_sweep_precision(text: &str) -> Result<String, String> {
    let names: Vec<&str> = bench::shape_sweep::SWEEP_PRECISIONS.iter().map(|e| e.name).collect();
    let name = text.trim().to_ascii_lowercase();
    if names.contains(&name.as_str()) {
        Ok(name)
    } else {
        Err(format!("`{text}` is not a precision of the shape sweep: choose from {}", names.join(", ")))
    }
}

/// Parses the sweep's shape count: at least 1, at most [`MAX_SWEEP_SHAPES`].
pub fn parse_sweep_shapes(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("a sweep of 0 shapes measures nothing: give at least 1 (200 for the saved run)".into()),
        Ok(n) if n > MAX_SWEEP_SHAPES => {
            Err(format!("{n} shapes: a sweep takes at most {MAX_SWEEP_SHAPES} (about a second each)"))
        }
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a number of shapes: write a whole number like 200")),
    }
}

/// Parses `--sweep-shapes`: `llm` ([`bench::shape_sweep::llm_shapes`]) or a list as `--sizes`.
pub fn parse_sweep_shape_list(text: &str) -> Result<ShapeList, String> {
    if text.trim() == "llm" {
        return Ok(ShapeList(bench::shape_sweep::llm_shapes()));
    }
    parse_sizes(text)
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds (0 or more)")),
    }
}

fn parse_svg_path(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("svg") => Ok(path),
        _ => Err(format!("`{text}`: the chart is SVG, give a path ending in .svg")),
    }
}

impl BenchArgs {
    /// Timed GPU runs: `--repeat`, else 20, or [`bench::shape_sweep::SWEEP_REPEAT`] under `--sweep`.
    pub fn repeat(&self) -> usize {
        match (self.repeat, self.sweep.is_some() || self.sweep_shapes.is_some()) {
            (Some(r), _) => r as usize,
            (None, true) => bench::shape_sweep::SWEEP_REPEAT,
            (None, false) => DEFAULT_REPEAT,
        }
    }

    /// The measuring configuration: explicit lists, else the `--quick` or full defaults; `--suite`
    /// leaves out the ladder and the histograms.
    pub fn config(&self, command_line: Vec<String>) -> anyhow::Result<BenchConfig> {
        let (sizes, bins, suite) = if self.quick {
            (bench::QUICK_SIZES, bench::QUICK_BINS, bench::QUICK_SUITE_SHAPES)
        } else {
            (bench::DEFAULT_SIZES, bench::DEFAULT_BINS, bench::SUITE_SHAPES)
        };
        let sizes = match &self.sizes {
            Some(list) => list.0.clone(),
            None => parse_sizes(sizes).map_err(anyhow::Error::msg)?.0,
        };
        let bins = match &self.bins {
            Some(list) => list.0.clone(),
            None => parse_bins(bins).map_err(anyhow::Error::msg)?.0,
        };
        let sweep = self.sweep.is_some() || self.sweep_shapes.is_some();
        if !sweep && !self.sweep_precisions.is_empty() {
            anyhow::bail!(
                "--sweep-precisions selects precisions of the shape sweep: give --sweep or --sweep-shapes too"
            );
        }
        if !sweep && self.time_limit.is_some() {
            anyhow::bail!("--time-limit bounds the shape sweep: give --sweep or --sweep-shapes too");
        }
        Ok(BenchConfig {
            sizes,
            bins,
            suite: parse_sizes(suite).map_err(anyhow::Error::msg)?.0,
            suite_policy: self.precision,
            histogram_values: self.values,
            warmup: self.warmup as usize,
            repeat: self.repeat(),
            cpu_sgemm_max_runs: self.cpu_repeat as usize,
            cpu_loop_limit_s: self.cpu_loop_limit,
            seed: self.seed.unwrap_or_else(rand::random),
            skip_matmul: self.skip_matmul || self.suite || sweep,
            skip_histogram: self.skip_histogram || self.suite || sweep,
            skip_suite: self.skip_suite || sweep,
            skip_features: self.skip_features || sweep,
            sweep: self.sweep.or(self.sweep_shapes.as_ref().map(|list| list.0.len())),
            sweep_shapes: self.sweep_shapes.as_ref().map(|list| list.0.clone()),
            sweep_precisions: self.sweep_precisions.clone(),
            sweep_time_limit_s: self.time_limit,
            peers: match &self.peers {
                Some(path) => {
                    let peers = bench::histogram_features::PeersFile::read(path)?;
                    let source = peers.source(&path.display().to_string());
                    Some((peers, source))
                }
                None => None,
            },
            command_line,
        })
    }
}

/// Runs the command: measures (or loads), prints the tables, writes `--json` and `--chart`, and
/// fails after writing them if any result failed its check.
pub fn run(device: usize, args: &BenchArgs) -> anyhow::Result<()> {
    if args.histogram_sweep {
        return run_sweep(device, args);
    }
    let report = match &args.from_json {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let mut report =
                report::from_json(&text).with_context(|| format!("reading the report {}", path.display()))?;
            if let (Some(peers_path), Some(features)) = (&args.peers, report.features.as_mut()) {
                let peers = bench::histogram_features::PeersFile::read(peers_path)?;
                let source = peers.source(&peers_path.display().to_string());
                bench::histogram_features::attach_peers(features, &peers, source);
            }
            report
        }
        None => {
            let config = args.config(std::env::args().collect())?;
            let gpu = Gpu::open(device)?;
            // Fail on an unusable output folder now, not after minutes of measuring.
            for path in args.json.iter().chain(&args.table).chain(&args.chart) {
                create_parent(path)?;
            }
            let progress = progress_bar(config.steps())?;
            let report = bench::run(&gpu, &config, &progress);
            progress.finish_and_clear();
            report?
        }
    };
    present(&report, args)?;
    let failures = report.failures();
    anyhow::ensure!(failures.is_empty(), "{} result(s) failed their check: {}", failures.len(), failures.join("; "));
    Ok(())
}

/// `--histogram-sweep`: the copy ceiling, then every case's grid; prints the sweep and writes
/// `--json` / `--table`; fails after writing them if any configuration's result was wrong.
fn run_sweep(device: usize, args: &BenchArgs) -> anyhow::Result<()> {
    let gpu = Gpu::open(device)?;
    for path in args.json.iter().chain(&args.table) {
        create_parent(path)?;
    }
    let (warmup, repeat) = (args.warmup as usize, args.repeat());
    let progress = progress_bar(bench::histogram_sweep::steps(&args.sweep_only))?;
    progress.set_message("device-to-device copy (bandwidth ceiling)");
    let copy = bench::memcopy::measure(&gpu, bench::COPY_BYTES, warmup, repeat)?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let sweep = bench::histogram_sweep::run(&gpu, copy, seed, (warmup, repeat), &args.sweep_only, &progress);
    progress.finish_and_clear();
    let sweep = sweep?;
    let text = bench::histogram_sweep::render(&sweep);
    print!("{text}");
    if let Some(path) = &args.table {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&sweep)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let failed: Vec<String> = sweep
        .cases
        .iter()
        .flat_map(|c| c.rows.iter().map(move |r| (c, r)))
        .filter_map(|(c, r)| match &r.status {
            report::RowStatus::Failed { reason } => Some(format!("{} {}: {reason}", c.key, r.config)),
            _ => None,
        })
        .collect();
    anyhow::ensure!(failed.is_empty(), "{} configuration(s) failed their check: {}", failed.len(), failed.join("; "));
    Ok(())
}

fn present(report: &report::BenchReport, args: &BenchArgs) -> anyhow::Result<()> {
    let text = table::render(report);
    print!("{text}");
    if let Some(path) = &args.table {
        create_parent(path)?;
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    if let Some(path) = &args.json {
        create_parent(path)?;
        std::fs::write(path, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.chart {
        create_parent(path)?;
        std::fs::write(path, bench::chart::render_svg(report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn create_parent(path: &Path) -> anyhow::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating the folder {}", dir.display()))
        }
        _ => Ok(()),
    }
}

fn progress_bar(steps: u64) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")?
            .progress_chars("=> "),
    );
    // Steps take up to tens of seconds: keep the clock moving in between.
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    Ok(bar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        let cli = Cli::try_parse_from(["host", "bench"].iter().chain(args))?;
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        Ok(args)
    }

    fn shape(m: usize, k: usize, n: usize) -> MatmulShape {
        MatmulShape::new(m, k, n).unwrap()
    }

    #[test]
    fn the_sweep_runs_alone_and_the_features_take_peers_or_can_be_skipped() {
        let a = parse(&["--histogram-sweep", "--sweep-only", "shared,packed", "--repeat", "10"]).unwrap();
        assert!(a.histogram_sweep);
        assert_eq!(a.sweep_only, ["shared", "packed"]);
        assert!(parse(&["--histogram-sweep", "--sizes", "256"]).is_err());
        assert!(parse(&["--histogram-sweep", "--peers", "p.json"]).is_err());
        assert!(parse(&["--sweep-only", "shared"]).is_err(), "--sweep-only needs --histogram-sweep");
        let a = parse(&["--skip-matmul", "--skip-suite", "--peers", "p.json", "--skip-features"]).unwrap();
        assert_eq!((a.peers.as_deref(), a.skip_features), (Some(Path::new("p.json")), true));
        let err = a.config(vec![]).unwrap_err().to_string();
        assert!(err.contains("p.json"), "a missing peers file is reported: {err}");
    }

    #[test]
    fn sizes_accept_square_and_rectangular_entries_and_drop_repeats() {
        assert_eq!(parse_sizes("1024").unwrap().0, vec![shape(1024, 1024, 1024)]);
        assert_eq!(parse_sizes("1000x800x1200").unwrap().0, vec![shape(1000, 800, 1200)]);
        assert_eq!(
            parse_sizes(" 256, 1000X800X1200,256 ").unwrap().0,
            vec![shape(256, 256, 256), shape(1000, 800, 1200)]
        );
    }

    #[test]
    fn bad_sizes_say_what_is_wrong() {
        for (text, needle) in [
            ("0", "m is 0"),
            ("1000x0x1200", "k is 0"),
            ("abc", "`abc` is not a whole number"),
            ("10x20", "has 2 dimensions"),
            ("256,,512", "empty entry"),
            ("-5", "`-5` is not a whole number"),
        ] {
            let err = parse_sizes(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let err = parse(&["--sizes", "1x2"]).unwrap_err().to_string();
        assert!(err.contains("has 2 dimensions"), "{err}");
    }

    #[test]
    fn bins_accept_counts_and_powers_and_reject_zero_and_overflow() {
        assert_eq!(parse_bins("256,2^20,256").unwrap().0, vec![256, 1 << 20]);
        assert!(parse_bins("0").unwrap_err().contains("at least 1"));
        assert!(parse_bins("2^31").unwrap_err().contains("i32"));
        assert!(parse_bins("2^99").unwrap_err().contains("too large"));
        assert!(parse_bins("many").unwrap_err().contains("not a count"));
        assert!(parse(&["--bins", "256,0"]).is_err());
    }

    #[test]
    fn values_accept_powers_of_two_and_reject_zero() {
        assert_eq!(parse(&[]).unwrap().values, 1 << 26);
        assert_eq!(parse(&["--values", "1000"]).unwrap().values, 1000);
        assert!(parse_values("0").unwrap_err().contains("at least 1"));
        assert!(parse_values("2^33").unwrap_err().contains("u32"));
    }

    #[test]
    fn defaults_measure_the_full_lists_and_quick_shortens_them_unless_lists_are_given() {
        let config = parse(&["--seed", "7"]).unwrap().config(vec![]).unwrap();
        assert_eq!(config.sizes.len(), 7);
        assert_eq!(config.sizes[6], shape(1000, 800, 1200));
        assert_eq!(config.bins.first(), Some(&256));
        assert_eq!(config.bins.last(), Some(&(1 << 20)));
        assert_eq!((config.warmup, config.repeat, config.seed, config.cpu_loop_limit_s), (3, 20, 7, 30.0));
        let quick = parse(&["--quick"]).unwrap().config(vec![]).unwrap();
        assert_eq!(quick.sizes.len(), 3);
        assert_eq!(quick.bins, vec![256, 8192, 131072]);
        let mixed = parse(&["--quick", "--sizes", "512"]).unwrap().config(vec![]).unwrap();
        assert_eq!((mixed.sizes, mixed.bins.len()), (vec![shape(512, 512, 512)], 3));
    }

    #[test]
    fn suite_runs_by_default_and_alone_with_suite_and_not_with_skip_suite() {
        let config = parse(&[]).unwrap().config(vec![]).unwrap();
        assert_eq!((config.skip_matmul, config.skip_histogram, config.skip_suite), (false, false, false));
        assert_eq!(config.suite.len(), 18);
        assert_eq!(config.suite[17], shape(16, 16_384, 16_384));
        let alone = parse(&["--suite"]).unwrap().config(vec![]).unwrap();
        assert_eq!((alone.skip_matmul, alone.skip_histogram, alone.skip_suite), (true, true, false));
        assert_eq!(alone.suite, config.suite);
        let skipped = parse(&["--skip-suite"]).unwrap().config(vec![]).unwrap();
        assert_eq!((skipped.skip_matmul, skipped.skip_histogram, skipped.skip_suite), (false, false, true));
        let quick = parse(&["--suite", "--quick"]).unwrap().config(vec![]).unwrap();
        assert_eq!(quick.suite, parse_sizes(bench::QUICK_SUITE_SHAPES).unwrap().0);
        assert_eq!(config.suite_policy, PrecisionPolicy::High);
        let fp32 = parse(&["--suite", "--precision", "highest"]).unwrap().config(vec![]).unwrap();
        assert_eq!(fp32.suite_policy, PrecisionPolicy::Highest);
        assert!(parse(&["--precision", "sgemm"]).is_err());
        assert_eq!(quick.suite.len(), 4);
    }

    #[test]
    fn suite_alone_refuses_flags_of_the_sections_it_leaves_out() {
        for flag in [
            &["--skip-suite"][..],
            &["--skip-matmul"],
            &["--skip-histogram"],
            &["--sizes", "256"],
            &["--bins", "256"],
            &["--values", "1000"],
        ] {
            let args: Vec<&str> = ["--suite"].iter().chain(flag).copied().collect();
            let err = parse(&args).unwrap_err().to_string();
            assert!(err.contains("cannot be used with"), "{args:?}: {err}");
        }
        assert!(parse(&["--suite", "--repeat", "50", "--json", "r.json"]).is_ok());
        let err = parse(&["--from-json", "r.json", "--suite"]).unwrap_err().to_string();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn skipping_both_sections_is_refused() {
        assert!(parse(&["--skip-matmul"]).unwrap().skip_matmul);
        let err = parse(&["--skip-matmul", "--skip-histogram"]).unwrap_err().to_string();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn chart_path_must_be_svg_and_outputs_parse() {
        let args = parse(&["--json", "results/h100.json", "--chart", "results/h100.svg"]).unwrap();
        assert_eq!(args.json.as_deref(), Some(Path::new("results/h100.json")));
        assert_eq!(args.chart.as_deref(), Some(Path::new("results/h100.svg")));
        let err = parse(&["--chart", "results/h100.png"]).unwrap_err().to_string();
        assert!(err.contains("ending in .svg"), "{err}");
    }

    #[test]
    fn sweep_takes_a_shape_count_and_the_seed_and_runs_alone_with_fewer_repeats() {
        let config = parse(&["--sweep", "200", "--seed", "1"]).unwrap().config(vec![]).unwrap();
        assert_eq!((config.sweep, config.seed), (Some(200), 1));
        assert!(config.skip_matmul && config.skip_histogram && config.skip_suite && config.skip_features);
        assert_eq!(config.repeat, bench::shape_sweep::SWEEP_REPEAT);
        assert_eq!(config.steps(), 200 * bench::shape_sweep::steps_per_shape() as u64);
        // --repeat still wins, and outside the sweep the default stays 20.
        let config = parse(&["--sweep", "5", "--repeat", "3"]).unwrap().config(vec![]).unwrap();
        assert_eq!(config.repeat, 3);
        assert_eq!(parse(&[]).unwrap().config(vec![]).unwrap().sweep, None);
        assert_eq!(parse(&[]).unwrap().repeat(), DEFAULT_REPEAT);
        // The policy auto runs under, and the outputs, go with it.
        let a = parse(&["--sweep", "3", "--precision", "highest", "--json", "s.json", "--table", "s.txt"]).unwrap();
        assert_eq!(a.config(vec![]).unwrap().suite_policy, PrecisionPolicy::Highest);
    }

    #[test]
    fn sweep_precisions_select_the_sweeps_tables_and_need_a_sweep() {
        let config = parse(&["--sweep", "200", "--sweep-precisions", "AUTO,tf32"]).unwrap().config(vec![]).unwrap();
        assert_eq!(config.sweep_precisions, ["auto", "tf32"]);
        assert_eq!(config.steps(), 200 * bench::shape_sweep::steps_per_shape_of(&config.sweep_precisions) as u64);
        let err = parse(&["--sweep", "5", "--sweep-precisions", "fp32"]).unwrap_err().to_string();
        assert!(err.contains("choose from bf16, fp16, tf32, auto"), "{err}");
        let err = parse(&["--sweep-precisions", "auto"]).unwrap().config(vec![]).unwrap_err().to_string();
        assert!(err.contains("give --sweep or --sweep-shapes too"), "{err}");
    }

    #[test]
    fn time_limit_bounds_the_sweep_and_takes_positive_seconds() {
        let config = parse(&["--sweep", "200", "--time-limit", "150"]).unwrap().config(vec![]).unwrap();
        assert_eq!(config.sweep_time_limit_s, Some(150.0));
        assert_eq!(parse(&["--sweep", "2"]).unwrap().config(vec![]).unwrap().sweep_time_limit_s, None);
        for bad in ["0", "-3", "inf", "NaN", "soon"] {
            let err = parse(&["--sweep", "2", "--time-limit", bad]).unwrap_err().to_string();
            assert!(err.contains("seconds"), "{bad}: {err}");
        }
        let err = parse(&["--time-limit", "60"]).unwrap().config(vec![]).unwrap_err().to_string();
        assert!(err.contains("give --sweep or --sweep-shapes too"), "{err}");
    }

    #[test]
    fn sweep_shapes_runs_the_sweep_alone_on_listed_shapes_or_the_llm_set() {
        let config = parse(&["--sweep-shapes", "64x4096x4096,1024"]).unwrap().config(vec![]).unwrap();
        let listed = vec![MatmulShape::new(64, 4096, 4096).unwrap(), MatmulShape::new(1024, 1024, 1024).unwrap()];
        assert_eq!((config.sweep, config.sweep_shapes.as_ref()), (Some(2), Some(&listed)));
        assert!(config.skip_matmul && config.skip_histogram && config.skip_suite && config.skip_features);
        assert_eq!(config.repeat, bench::shape_sweep::SWEEP_REPEAT);
        let llm = parse(&["--sweep-shapes", "llm"]).unwrap().config(vec![]).unwrap();
        assert_eq!(llm.sweep_shapes, Some(bench::shape_sweep::llm_shapes()));
        // A count and a list are two sweeps: one at a time.
        let err = parse(&["--sweep", "3", "--sweep-shapes", "llm"]).unwrap_err().to_string();
        assert!(err.contains("cannot be used with"), "{err}");
        let err = parse(&["--sweep-shapes", "big"]).unwrap_err().to_string();
        assert!(err.contains("big"), "{err}");
    }

    #[test]
    fn sweep_refuses_zero_shapes_non_numbers_and_the_other_sections_flags() {
        let err = parse(&["--sweep", "0"]).unwrap_err().to_string();
        assert!(err.contains("a sweep of 0 shapes measures nothing"), "{err}");
        let err = parse(&["--sweep", "many"]).unwrap_err().to_string();
        assert!(err.contains("`many` is not a number of shapes"), "{err}");
        let err = parse(&["--sweep", "-3"]).unwrap_err().to_string();
        assert!(err.contains("`-3` is not a number of shapes"), "{err}");
        let err = parse(&["--sweep", "1000000"]).unwrap_err().to_string();
        assert!(err.contains("at most 100000"), "{err}");
        for flag in [
            &["--suite"][..],
            &["--quick"],
            &["--sizes", "256"],
            &["--skip-suite"],
            &["--histogram-sweep"],
            &["--chart", "s.svg"],
            &["--from-json", "r.json"],
        ] {
            let args: Vec<&str> = ["--sweep", "10"].iter().chain(flag).copied().collect();
            let err = parse(&args).unwrap_err().to_string();
            assert!(err.contains("cannot be used with"), "{args:?}: {err}");
        }
    }

    #[test]
    fn repeat_zero_and_negative_limits_are_refused() {
        assert!(parse(&["--repeat", "0"]).is_err());
        assert!(parse(&["--cpu-repeat", "0"]).is_err());
        assert!(parse(&["--cpu-loop-limit", "-1"]).unwrap_err().to_string().contains("seconds"));
        assert_eq!(parse(&["--cpu-loop-limit", "0"]).unwrap().cpu_loop_limit, 0.0);
    }

    #[test]
    fn from_json_excludes_measuring_flags_but_takes_outputs() {
        assert!(parse(&["--from-json", "r.json", "--chart", "r.svg"]).is_ok());
        let err = parse(&["--from-json", "r.json", "--sizes", "256"]).unwrap_err().to_string();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn from_json_of_a_missing_file_names_it() {
        let args = parse(&["--from-json", "/nonexistent/report.json"]).unwrap();
        let err = format!("{:#}", run(0, &args).unwrap_err());
        assert!(err.contains("/nonexistent/report.json"), "{err}");
    }
}
