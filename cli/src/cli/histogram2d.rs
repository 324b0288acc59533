//! `host histogram2d`: a 2-D histogram of `f32` pairs (`numpy.histogram2d`), counts or weighted
//! `f64` sums, of random pairs (`--n`: checked against the CPU, then timed) or of two files
//! (`--x`, `--y`, read whole; `--check`, `--out`).

use super::histogram::{parse_range, print_device};
use super::histogram_features::random_weights;
use crate::arrays;
use crate::gpu::Gpu;
use crate::histogram::hist2d::{self, Bins2d, Hist2dPlan};
use crate::histogram::tuning::{self, LaunchRequest};
use crate::histogram::{HistogramLimits, first_count_difference};
use crate::io::OutputFile;
use crate::timing::{rotation_sets, time_launches};
use anyhow::bail;
use clap::{Args, ValueEnum};
use rand::{Rng, SeedableRng};
use std::path::PathBuf;

/// `--tier` of `histogram2d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Tier2dChoice {
    /// Shared memory while one block holds the bins (packed counters past 58,112), else global.
    Auto,
    /// Block-private counters or sums in shared memory.
    Shared,
    /// Every pair added into global memory.
    Global,
}

/// Arguments of `host histogram2d`.
#[derive(Args, Debug)]
pub struct Histogram2dArgs {
    /// Number of random pairs, uniform over the ranges with about 1% outside them.
    #[arg(long, required_unless_present = "x", conflicts_with_all = ["x", "y"])]
    pub n: Option<usize>,
    /// The pairs' x coordinates: a float32 .npy file (any shape) or raw little-endian f32.
    #[arg(long, value_name = "FILE", requires = "y")]
    pub x: Option<PathBuf>,
    /// The pairs' y coordinates, as many as x.
    #[arg(long, value_name = "FILE", requires = "x")]
    pub y: Option<PathBuf>,
    /// Bins: BX,BY (or B for B x B).
    #[arg(long, value_parser = parse_bins_2d, value_name = "BX,BY")]
    pub bins: (usize, usize),
    /// x range LO,HI: even bins over it, HI in the last bin (default 0,1).
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true, value_name = "LO,HI")]
    pub range_x: Option<(f32, f32)>,
    /// y range LO,HI (default 0,1).
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true, value_name = "LO,HI")]
    pub range_y: Option<(f32, f32)>,
    /// Weights, summed per bin in f64: `random` (with --n) or a float32 file of one per pair.
    #[arg(long, value_name = "FILE|random")]
    pub weights: Option<String>,
    /// Where the counters live.
    #[arg(long, value_enum, default_value_t = Tier2dChoice::Auto)]
    pub tier: Tier2dChoice,
    /// Counters per 32-bit word as log2: 0 (u32), 1 (16-bit), 2 (8-bit) (default: the narrowest
    /// that fits one block).
    #[arg(long)]
    pub packing: Option<u32>,
    /// Threads per block (default: the occupancy query's best).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Private copies of the counters per block (a power of two up to 32).
    #[arg(long)]
    pub copies: Option<u32>,
    /// Resident blocks per SM the grid assumes (at most the occupancy query's).
    #[arg(long)]
    pub blocks_per_sm: Option<u32>,
    /// Weighted: merge warps whose lanes hold one bin (default: below 32 copies).
    #[arg(long)]
    pub aggregate: Option<bool>,
    /// Shared tier in 16-bit digits: flush two adjacent counters per 64-bit atomic (true) or one
    /// per counter (false) (default: true).
    #[arg(long)]
    pub paired_flush: Option<bool>,
    /// Print the plan and stop.
    #[arg(long)]
    pub plan: bool,
    /// With --plan: plan for this device model (h100, h200) without a GPU (the grid estimated
    /// from threads, shared memory and 64 registers per thread).
    #[arg(long, requires = "plan", value_name = "MODEL")]
    pub device_model: Option<crate::gpu::DeviceModel>,
    /// Check the result of --x/--y files against the CPU.
    #[arg(long)]
    pub check: bool,
    /// Write the result of --x/--y files to this .npy file (uint64 counts or float64 sums, BX x BY).
    #[arg(long, value_name = "H.npy")]
    pub out: Option<PathBuf>,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Seed for the random pairs (default: fresh each run).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Parses `BX,BY` or `B`.
pub fn parse_bins_2d(text: &str) -> Result<(usize, usize), String> {
    let parse = |s: &str| s.trim().parse::<usize>().map_err(|e| format!("'{}' in '{text}': {e}", s.trim()));
    match text.split_once(',') {
        Some((x, y)) => Ok((parse(x)?, parse(y)?)),
        None => {
            let b = parse(text)?;
            Ok((b, b))
        }
    }
}

impl Histogram2dArgs {
    /// The checked bins.
    pub fn bins_2d(&self) -> crate::Result<Bins2d> {
        Bins2d::new(self.bins.0, self.bins.1, self.range_x.unwrap_or((0.0, 1.0)), self.range_y.unwrap_or((0.0, 1.0)))
    }

    /// The kernels' tunables.
    pub fn request(&self) -> LaunchRequest {
        LaunchRequest {
            threads_per_block: self.threads,
            copies: self.copies,
            blocks_per_sm: self.blocks_per_sm,
            packing: self.packing,
            global: match self.tier {
                Tier2dChoice::Auto => None,
                Tier2dChoice::Shared => Some(false),
                Tier2dChoice::Global => Some(true),
            },
            aggregate: self.aggregate,
            f32_partials: None,
            double_buffer: None,
            warp_private: None,
            paired_flush: self.paired_flush,
        }
    }
}

/// Random pairs uniform over the ranges, about 1% of each coordinate outside its range, NaN or
/// infinite.
pub fn random_pairs(seed: u64, n: usize, bins: &Bins2d) -> (Vec<f32>, Vec<f32>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    let mut coord = |lo: f32, hi: f32| -> f32 {
        let span = hi as f64 - lo as f64;
        match rng.random_range(0..200) {
            0 => odd[rng.random_range(0..odd.len())],
            1 => (hi as f64 + span * rng.random_range(0.0..0.5)) as f32,
            _ => (lo as f64 + span * rng.random_range(0.0..1.0)) as f32,
        }
    };
    let (x, y) = (bins.x(), bins.y());
    let xs = (0..n).map(|_| coord(x.lo, x.hi)).collect();
    let ys = (0..n).map(|_| coord(y.lo, y.hi)).collect();
    (xs, ys)
}

/// Runs the command.
pub fn run(device: usize, args: &Histogram2dArgs) -> anyhow::Result<()> {
    let bins = args.bins_2d()?;
    let request = args.request();
    let weighted = args.weights.is_some();
    // Requests refused on any device are reported before the GPU is opened.
    let limits = args.device_model.map_or(HistogramLimits::H100, HistogramLimits::of_model);
    let model_plan = hist2d::plan_2d_for(&limits, &tuning::model_before_device(limits), bins, weighted, &request)?;
    if let Some(model) = args.device_model {
        println!("device model: {}", model.info().name);
        println!("plan: {model_plan} (the grid estimated from threads, shared memory and 64 registers per thread)");
        println!("why: {}", model_plan.reason(&limits));
        return Ok(());
    }
    let (x, y, w) = match (&args.x, &args.y) {
        (Some(xp), Some(yp)) => {
            let (x, y) = (arrays::read_f32_values(xp)?, arrays::read_f32_values(yp)?);
            if x.len() != y.len() {
                bail!(
                    "{} holds {} values and {} holds {}: give one y per x",
                    xp.display(),
                    x.len(),
                    yp.display(),
                    y.len()
                );
            }
            let w = match args.weights.as_deref() {
                Some("random") => bail!("--weights random goes with --n; with --x and --y give a weights file"),
                Some(p) => Some(arrays::read_f32_values(p.as_ref())?),
                None => None,
            };
            if let Some(w) = &w
                && w.len() != x.len()
            {
                bail!("{} pairs and {} weights: give one weight per pair", x.len(), w.len());
            }
            (x, y, w)
        }
        _ => {
            for (flag, given) in [("--check", args.check), ("--out", args.out.is_some())] {
                if given {
                    bail!("{flag} applies to --x/--y files only");
                }
            }
            if let Some(p) = args.weights.as_deref().filter(|&w| w != "random") {
                bail!("--weights {p}: a weights file goes with --x and --y files (with --n, use --weights random)");
            }
            (Vec::new(), Vec::new(), None)
        }
    };
    let out = args.out.as_deref().map(OutputFile::create).transpose()?;
    let gpu = Gpu::open(device)?;
    let plan = hist2d::plan_2d(&gpu, bins, weighted, &request)?;
    let limits = HistogramLimits::of(&gpu)?;
    print_device(&gpu);
    println!("plan: {plan}");
    println!("why: {}", plan.reason(&limits));
    if args.plan {
        return Ok(());
    }
    if args.x.is_some() {
        return run_files(&gpu, args, &plan, &x, &y, w.as_deref(), out);
    }
    let n = args.n.unwrap_or(0);
    let seed = args.seed.unwrap_or_else(rand::random);
    let bytes = (if weighted { 12 } else { 8 }) * n as u64;
    let sets = rotation_sets(bytes, gpu.info().l2_bytes);
    let draws: Vec<(Vec<f32>, Vec<f32>)> =
        (0..sets).map(|s| random_pairs(seed.wrapping_add(s as u64), n, &bins)).collect();
    let weights = weighted.then(|| random_weights(seed, n));
    let upload = |v: &[f32]| if v.is_empty() { gpu.zeros::<f32>(4) } else { gpu.upload(v) };
    let dx = draws.iter().map(|(x, _)| upload(x)).collect::<crate::Result<Vec<_>>>()?;
    let dy = draws.iter().map(|(_, y)| upload(y)).collect::<crate::Result<Vec<_>>>()?;
    let dw = weights.as_deref().map(upload).transpose()?;
    let stream = gpu.stream();
    let start = std::time::Instant::now();
    let (timing, check, ok) = if let Some(weights) = &weights {
        let want = hist2d::histogram2d_weighted_cpu(&draws[0].0, &draws[0].1, weights, &bins);
        let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
        let dw = dw.as_ref().expect("uploaded with the weights");
        let mut sums = gpu.zeros::<f64>(bins.bins() as usize)?;
        let launch = |i: usize, sums: &mut cudarc::driver::CudaSlice<f64>| -> crate::Result<()> {
            stream.memset_zeros(sums)?;
            let k = i % sets;
            hist2d::launch_2d_weighted(
                &gpu,
                &plan,
                stream,
                &dx[k].slice(0..n),
                &dy[k].slice(0..n),
                &dw.slice(0..n),
                &mut sums.as_view_mut(),
            )
        };
        launch(0, &mut sums)?;
        gpu.synchronize()?;
        let got = gpu.download(&sums)?;
        let difference = want.first_difference(&got, plan.partial_sums());
        let timing = time_launches(&gpu, args.warmup as usize, args.repeat as usize, |i| launch(i, &mut sums))?;
        let check = match &difference {
            None => format!("CPU reference (exact sums, {cpu_ms:.1} ms): every sum within the stated bound: yes"),
            Some(d) => format!("CPU reference (exact sums): DIFFERS: {d}"),
        };
        (timing, check, difference.is_none())
    } else {
        let want = hist2d::histogram2d_cpu(&draws[0].0, &draws[0].1, &bins);
        let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut counts = gpu.zeros::<u32>(bins.bins() as usize)?;
        let launch = |i: usize, counts: &mut cudarc::driver::CudaSlice<u32>| -> crate::Result<()> {
            stream.memset_zeros(counts)?;
            let k = i % sets;
            hist2d::launch_2d(&gpu, &plan, stream, &dx[k].slice(0..n), &dy[k].slice(0..n), &mut counts.as_view_mut())
        };
        launch(0, &mut counts)?;
        gpu.synchronize()?;
        let got = gpu.download(&counts)?;
        let difference = first_count_difference(&got, &want);
        let timing = time_launches(&gpu, args.warmup as usize, args.repeat as usize, |i| launch(i, &mut counts))?;
        let check = match &difference {
            None => format!("CPU reference ({cpu_ms:.1} ms): matches the GPU exactly: yes"),
            Some(d) => format!("CPU reference: matches the GPU exactly: NO: {d}"),
        };
        (timing, check, difference.is_none())
    };
    println!(
        "2-D histogram of {n} pairs into {} x {} bins{}: median {:.3} ms (min {:.3}, max {:.3}, {} runs), {:.1} GB/s of input read",
        bins.x().bins,
        bins.y().bins,
        if weighted { " (f64 sums of weights)" } else { "" },
        timing.median_ms,
        timing.min_ms,
        timing.max_ms,
        timing.runs,
        bytes as f64 / (timing.median_ms * 1e6)
    );
    println!("{check}");
    if !ok {
        bail!("the GPU result differs from the CPU's");
    }
    Ok(())
}

/// `--x`/`--y` files: one run, checked with `--check`, written with `--out`.
fn run_files(
    gpu: &Gpu,
    args: &Histogram2dArgs,
    plan: &Hist2dPlan,
    x: &[f32],
    y: &[f32],
    w: Option<&[f32]>,
    out: Option<OutputFile>,
) -> anyhow::Result<()> {
    let bins = plan.bins();
    let shape = [bins.x().bins as u64, bins.y().bins as u64];
    match w {
        Some(w) => {
            let sums = hist2d::histogram2d_weighted(gpu, x, y, w, bins)?;
            println!("sums: {:e} in all", sums.iter().sum::<f64>());
            if args.check {
                let want = hist2d::histogram2d_weighted_cpu(x, y, w, &bins);
                if let Some(d) = want.first_difference(&sums, plan.partial_sums()) {
                    bail!("the weighted sums differ from the CPU's exact sums beyond the bound: {d}");
                }
                println!("CPU reference (exact sums): every sum within the stated bound: yes");
            }
            if let Some(out) = out {
                let path = out.path().display().to_string();
                out.write_npy(&shape, &sums)?;
                println!("wrote the sums to {path}");
            }
        }
        None => {
            let counts = hist2d::histogram2d(gpu, x, y, bins)?;
            println!("counts: {} of {} pairs in range", counts.iter().map(|&c| c as u64).sum::<u64>(), x.len());
            if args.check {
                let want = hist2d::histogram2d_cpu(x, y, &bins);
                if let Some(d) = first_count_difference(&counts, &want) {
                    bail!("the GPU counts differ from the CPU's: {d}");
                }
                println!("CPU reference: matches the GPU exactly: yes");
            }
            if let Some(out) = out {
                let path = out.path().display().to_string();
                let counts: Vec<u64> = counts.into_iter().map(u64::from).collect();
                out.write_npy(&shape, &counts)?;
                println!("wrote the counts to {path}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> Histogram2dArgs {
        let cli = Cli::try_parse_from(["host", "histogram2d"].iter().chain(argv)).unwrap();
        let Command::Histogram2d(args) = cli.command else { unreachable!() };
        args
    }

    #[test]
    fn bins_ranges_and_tiers_parse() {
        let a = args(&["--n", "100", "--bins", "256,128", "--range-x", "-1,1", "--tier", "global", "--packing", "1"]);
        assert_eq!((a.bins, a.range_x, a.range_y, a.packing), ((256, 128), Some((-1.0, 1.0)), None, Some(1)));
        assert_eq!(a.request().global, Some(true));
        assert_eq!(args(&["--n", "1", "--bins", "64"]).bins, (64, 64));
        assert!(Cli::try_parse_from(["host", "histogram2d", "--n", "1", "--bins", "a,b"]).is_err());
        assert!(Cli::try_parse_from(["host", "histogram2d", "--x", "x.npy", "--bins", "4"]).is_err(), "--x needs --y");
        assert!(
            Cli::try_parse_from(["host", "histogram2d", "--n", "3", "--x", "x.npy", "--y", "y.npy", "--bins", "4"])
                .is_err()
        );
    }

    #[test]
    fn bad_arguments_are_refused_before_a_gpu_is_needed() {
        let refused = |argv: &[&str]| run(0, &args(argv)).unwrap_err().to_string();
        assert!(refused(&["--n", "10", "--bins", "0"]).contains("x:"));
        assert!(refused(&["--n", "10", "--bins", "4", "--range-y", "1,0"]).contains("y: range"));
        assert!(refused(&["--n", "10", "--bins", "4", "--out", "h.npy"]).contains("--x/--y files only"));
        assert!(refused(&["--n", "10", "--bins", "4", "--weights", "w.npy"]).contains("goes with --x and --y"));
        assert!(refused(&["--n", "10", "--bins", "4", "--copies", "5"]).contains("power of two"));
        let packed = refused(&["--n", "10", "--bins", "256", "--packing", "0", "--tier", "shared"]);
        assert!(packed.contains("as 32-bit counters"), "{packed}");
        let dir = tempfile::tempdir().unwrap();
        let (x, y) = (dir.path().join("x.npy"), dir.path().join("y.npy"));
        crate::io::write_npy(&x, &[3], &[0.1f32, 0.2, 0.3]).unwrap();
        crate::io::write_npy(&y, &[2], &[0.1f32, 0.2]).unwrap();
        let err = refused(&["--x", x.to_str().unwrap(), "--y", y.to_str().unwrap(), "--bins", "4"]);
        assert!(err.contains("give one y per x"), "{err}");
    }

    #[test]
    fn plans_for_a_device_model_need_no_gpu() {
        assert!(run(0, &args(&["--n", "10", "--bins", "256", "--plan", "--device-model", "h200"])).is_ok());
        assert!(
            Cli::try_parse_from(["host", "histogram2d", "--n", "1", "--bins", "4", "--device-model", "h200"]).is_err()
        );
    }

    #[test]
    fn random_pairs_fall_mostly_inside_the_ranges() {
        let bins = Bins2d::new(4, 4, (-1.0, 1.0), (10.0, 20.0)).unwrap();
        let (x, y) = random_pairs(1, 10_000, &bins);
        let inside = x.iter().zip(&y).filter(|&(&a, &b)| bins.bin_of(a, b).is_some()).count();
        assert!(inside > 9_700 && inside < 10_000, "{inside}");
    }
}
