// Over 600 lines with its documentation: about 390 lines of code; the rest are doc comments with
// examples and 240 lines of unit tests.
//! `host matmul`: the ladder for one shape, from the CPU's triple loop through each kernel to
//! cuBLAS, each timed with CUDA events and optionally checked against a float64 reference.

use crate::cublas::Sgemm;
use crate::error::{Error, format_bytes};
use crate::gpu::DeviceModel;
use crate::gpu::Gpu;
use crate::inputs::InputSets;
use crate::io::{self, Matrix, OutputFile};
use crate::matmul::DeviceMatrices;
use crate::matmul::{
    self, MatmulDevice, MatmulPlan, MatmulShape, MatmulVariant, PlanOptions, Precision, PrecisionPolicy, SplitK,
    TileWidth, split_k,
};
use crate::reference::{MatmulReference, matmul_cpu_triple_loop};
use crate::timing::rotation_sets;
use crate::timing::{Timing, UntrackedEvents, time_launches};
use clap::Args;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The Guide's single-threaded CPU loop runs at ~1 GFLOP/s; above this many FLOPs (1024^3 * 2)
/// it would take minutes, so the CPU row is skipped and says so.
pub const CPU_TRIPLE_LOOP_MAX_FLOPS: f64 = 2.0 * 1024.0 * 1024.0 * 1024.0;

/// Arguments of `host matmul`: random matrices of a shape (`--m --k --n`), or the user's
/// (`--a A.npy --b B.npy`).
#[derive(Args, Debug)]
pub struct MatmulArgs {
    /// Rows of A and C (random inputs).
    #[arg(long, required_unless_present = "a", conflicts_with = "a")]
    pub m: Option<usize>,
    /// Columns of A, rows of B (random inputs).
    #[arg(long, required_unless_present = "a", conflicts_with = "a")]
    pub k: Option<usize>,
    /// Columns of B and C (random inputs).
    #[arg(long, required_unless_present = "a", conflicts_with = "a")]
    pub n: Option<usize>,
    /// A as a 2-D float32 .npy file in C order (with --b instead of --m --k --n).
    #[arg(long, requires = "b", value_name = "A.npy")]
    pub a: Option<PathBuf>,
    /// B as a 2-D float32 .npy file in C order.
    #[arg(long, requires = "a", value_name = "B.npy")]
    pub b: Option<PathBuf>,
    /// Write C, as the first variant of --variant computed it, to this .npy file (with --a --b).
    #[arg(long, requires = "a", value_name = "C.npy")]
    pub out: Option<PathBuf>,
    /// Variants to run: auto (the planner's choice under --precision), naive, tiled16, tiled32,
    /// sgemm, sgemm_warp_tiled, few_rows, few_cols, short_k (k <= 32), the Hopper tensor-core
    /// variants wgmma_bf16,
    /// wgmma_f16 (refused for inputs beyond F16's range, |x| >= 65520), wgmma_tf32 and
    /// wgmma_tf32_transposed (each timed against cuBLAS in its precision),
    /// wgmma_tf32x3 (guarded split-TF32, within FP32's bound, timed against cuBLAS FP32),
    /// decode_bf16 and decode_f16 (BF16 or FP16 for m <= 16, timed against cuBLAS and cuBLASLt in
    /// their precision), a comma-separated list, or all (every variant that takes the shape).
    #[arg(long, default_value = "auto", value_parser = parse_variants)]
    pub variant: VariantSelection,
    /// The arithmetic auto may use: highest (IEEE FP32 FMA on the CUDA cores), high (FP32's
    /// class and bound on every input, split-TF32 tensor cores on Hopper where a scan of the
    /// inputs proves it safe), medium (TF32 tensor cores).
    #[arg(long, default_value = "high")]
    pub precision: PrecisionPolicy,
    /// With --plan: plan for this device model (h100, h200) without a GPU.
    #[arg(long, requires = "plan", value_name = "MODEL")]
    pub device_model: Option<DeviceModel>,
    /// Split k into about this many ranges (1: no split), overriding the planner's split, for the
    /// kernels that take one (sgemm, sgemm_warp_tiled, few_rows, few_cols, decode_bf16, and
    /// wgmma_bf16, wgmma_f16, wgmma_tf32 and wgmma_tf32_transposed in whole stages of 64 or 32
    /// columns; auto's choice among them): for measuring the planner's choices.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub split_k: Option<u32>,
    /// The tile width of wgmma_bf16, wgmma_f16 and wgmma_tf32 (auto's choice among them): n256
    /// (tiles of 128x256; wgmma_tf32 256x128), n128 (128x128), n64 (128x64) or n16 (16x128, for
    /// m <= 16), overriding the planner's choice: for measuring it.
    #[arg(long, value_parser = parse_tile)]
    pub tile: Option<TileWidth>,
    /// Print the plan of each selected variant (kernel, grid, split of k, and why) and exit
    /// without running.
    #[arg(long)]
    pub plan: bool,
    /// Timed runs per kernel (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Check every result against a float64 CPU reference (error relative to sum |a*b|).
    #[arg(long)]
    pub check: bool,
    /// Seed for the random inputs (default: fresh each run).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `--tile`'s value.
fn parse_tile(text: &str) -> Result<TileWidth, String> {
    TileWidth::parse(text).ok_or_else(|| format!("unknown tile width `{text}`: n256, n128, n64 or n16"))
}

/// The planner's plan of `variant` for `shape` under `policy`, with `k` split into about
/// `split_k` ranges when given (an error for a kernel that takes no split), on tiles of width
/// `tile` when given.
fn plan_variant(
    device: MatmulDevice,
    variant: MatmulVariant,
    shape: MatmulShape,
    policy: PrecisionPolicy,
    split_k: Option<u32>,
    tile: Option<TileWidth>,
) -> crate::Result<MatmulPlan> {
    let options = PlanOptions { policy, split: None, tile, ..PlanOptions::default() };
    let Some(wanted) = split_k else { return matmul::plan_with(variant, shape, device, options) };
    // Whole stages for the tensor-core tile kernels, CHUNK_GRANULE columns for the others.
    let granule = variant.split_granule().max(split_k::CHUNK_GRANULE);
    let split = SplitK::about_in(shape.k, wanted, granule, granule);
    // The library refuses a split the kernel does not take; --split-k 1 leaves the plan unsplit.
    matmul::plan_with(variant, shape, device, PlanOptions { split: Some(split), ..options })
}

/// Prints the plan of each selected variant for `device`, or why it has none.
fn print_plans(device: MatmulDevice, device_name: &str, shape: MatmulShape, args: &MatmulArgs) {
    let clusters = if device.cluster_blocks.iter().any(|&b| b > 0) {
        let held: Vec<String> = device.cluster_blocks.iter().map(u32::to_string).collect();
        format!("; blocks held at once in clusters of 1-8: {}", held.join(", "))
    } else {
        String::new()
    };
    println!("plans for {device_name} ({} SMs{clusters}), precision {}:", device.sm_count, args.precision);
    for &variant in &args.variant.0 {
        match plan_variant(device, variant, shape, args.precision, args.split_k, args.tile) {
            Ok(plan) => println!("{:<9} {shape}: {plan}", variant.name()),
            Err(e) => println!("{:<9} {shape}: no plan: {e}", variant.name()),
        }
    }
}

/// The variants `--variant` selected.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSelection(pub Vec<MatmulVariant>);

/// Parses `all` or a comma-separated list of variant names.
pub fn parse_variants(text: &str) -> Result<VariantSelection, String> {
    if text == "all" {
        return Ok(VariantSelection(MatmulVariant::ALL.to_vec()));
    }
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim) {
        let v = name.parse::<MatmulVariant>().map_err(|_| {
            let names: Vec<&str> = MatmulVariant::ALL.iter().map(|v| v.name()).collect();
            format!("unknown variant `{name}`: choose from {}, or all", names.join(", "))
        })?;
        if !chosen.contains(&v) {
            chosen.push(v);
        }
    }
    Ok(VariantSelection(chosen))
}

/// One line of the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// Variant or baseline name.
    pub name: String,
    /// Event timings (or one wall-clock run for the CPU), if it ran.
    pub timing: Option<Timing>,
    /// Error relative to sum |a*b|, when checked.
    pub error: Option<f64>,
    /// Why it did not run, or how it was measured.
    pub note: String,
    /// The precision of its products: its ratio is to the cuBLAS row of that precision's
    /// baseline, and its error bound that precision's.
    pub precision: Precision,
}

/// `A` and `B` from their files, with the shape they make; fails, naming the files, unless both
/// are valid matrices whose inner dimensions agree.
pub fn read_inputs(a_path: &Path, b_path: &Path) -> anyhow::Result<(Matrix, Matrix, MatmulShape)> {
    let (a, b) = (io::read_matrix(a_path)?, io::read_matrix(b_path)?);
    if a.cols != b.rows {
        return Err(Error::InvalidArgument(format!(
            "{} is {}x{} and {} is {}x{}: A's columns ({}) must equal B's rows ({})",
            a_path.display(),
            a.rows,
            a.cols,
            b_path.display(),
            b.rows,
            b.cols,
            a.cols,
            b.rows
        ))
        .into());
    }
    let shape = MatmulShape::new(a.rows, a.cols, b.cols).map_err(|e| {
        Error::InvalidArgument(format!("{} ({}x{}) times {}: {e}", a_path.display(), a.rows, a.cols, b_path.display()))
    })?;
    Ok((a, b, shape))
}

/// Copies of the user's `A` and `B` on the device: as many as timing rotates through to defeat
/// the L2 cache (copies at other addresses miss it as fresh values would) and free memory holds.
fn upload_copies(gpu: &Gpu, shape: MatmulShape, a: &[f32], b: &[f32]) -> anyhow::Result<Vec<DeviceMatrices>> {
    let info = gpu.info();
    let free = info.free_memory.saturating_sub(256 << 20);
    let count = rotation_sets(shape.bytes(), info.l2_bytes).min((free / shape.bytes().max(1)).max(1) as usize);
    gpu.ensure_fits(
        &format!("{count} copies of a {shape} matmul ({} each)", format_bytes(shape.bytes())),
        count as u64 * shape.bytes(),
    )?;
    Ok((0..count).map(|_| DeviceMatrices::upload(gpu, shape, a, b)).collect::<Result<_, _>>()?)
}

/// Runs the command.
pub fn run(device: usize, args: &MatmulArgs) -> anyhow::Result<()> {
    // Files and sizes are read and checked before the GPU is opened, so a bad one is reported as
    // such on any machine; the output's temporary file is created now so that an unwritable
    // destination fails before the work.
    let files = match (&args.a, &args.b) {
        (Some(a), Some(b)) => Some(read_inputs(a, b)?),
        _ => None,
    };
    let shape = match &files {
        Some((_, _, shape)) => *shape,
        None => MatmulShape::new(args.m.unwrap_or(0), args.k.unwrap_or(0), args.n.unwrap_or(0))?,
    };
    if let (true, Some(model)) = (args.plan, args.device_model) {
        // Planning is pure: a device model needs no GPU.
        print_plans(MatmulDevice::of_model(model), &model.info().name, shape, args);
        return Ok(());
    }
    let mut out = args.out.as_deref().map(OutputFile::create).transpose()?;
    let gpu = Gpu::open(device)?;
    let info = gpu.info();
    if args.plan {
        print_plans(MatmulDevice::of_gpu(&gpu), &info.name, shape, args);
        return Ok(());
    }
    // Timed as the shape sweep times: with tracking on, each launch's buffers cost the host an
    // event wait and record, and a product of a few microseconds would be timed at the host's pace.
    // SAFETY: every buffer, launch and cuBLAS call of this command goes on gpu's one stream,
    // which orders them; the guard is declared before the buffers, so it drops after them.
    let _one_stream = unsafe { UntrackedEvents::new(&gpu) };
    let (host_a, host_b, mut mats) = match files {
        Some((a, b, _)) => {
            let copies = upload_copies(&gpu, shape, &a.data, &b.data)?;
            (a.data, b.data, copies)
        }
        None => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed.unwrap_or_else(rand::random));
            let inputs = InputSets::upload(&gpu, shape, &mut rng)?;
            (inputs.a, inputs.b, inputs.sets)
        }
    };
    let inputs_from = match (&args.a, &args.b) {
        (Some(a), Some(b)) => format!("{} x {}", a.display(), b.display()),
        _ => "random inputs".to_string(),
    };
    let (sets, set_bytes) = (mats.len(), shape.bytes());
    println!(
        "device: {} (sm_{}{}, {} SMs); PTX {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.sm_count,
        gpu.ptx_info().summary()
    );
    println!(
        "matmul {shape} of {inputs_from} ({:.2} GFLOP, {} per input set): median of {} CUDA-event runs after {} warm-ups, inputs rotated over {sets} set(s)",
        shape.flops() / 1e9,
        format_bytes(set_bytes),
        args.repeat,
        args.warmup
    );
    if gpu.ptx_info().profile != "release" {
        println!(
            "note: the PTX is a checked build (bounds and overflow checks): build it with --release for representative times"
        );
    }
    // One float64 reference per precision that runs (BF16's multiplies the rounded inputs),
    // computed when first needed.
    let mut references: Vec<(Precision, Rc<MatmulReference>)> = Vec::new();
    let mut reference_for = |precision: Precision| -> Option<Rc<MatmulReference>> {
        if !args.check {
            return None;
        }
        if let Some((_, r)) = references.iter().find(|(p, _)| *p == precision) {
            return Some(r.clone());
        }
        eprintln!(
            "computing the float64 reference ({}) on {} CPU threads...",
            precision.name(),
            rayon::current_num_threads()
        );
        let (a, b) = (precision.reference_inputs(&host_a), precision.reference_inputs(&host_b));
        let r = Rc::new(MatmulReference::new(&a, &b, shape.m, shape.k, shape.n));
        references.push((precision, r.clone()));
        Some(r)
    };
    let reference = reference_for(Precision::Fp32);

    let (warmup, repeat) = (args.warmup as usize, args.repeat as usize);
    let mut rows = Vec::new();
    if shape.flops() <= CPU_TRIPLE_LOOP_MAX_FLOPS {
        let start = std::time::Instant::now();
        let c = matmul_cpu_triple_loop(&host_a, &host_b, shape.m, shape.k, shape.n);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        rows.push(Row {
            name: "cpu (Guide triple loop)".into(),
            timing: Timing::from_samples(vec![ms]),
            error: reference.as_ref().map(|r| r.max_error(&c)),
            note: "1 thread, 1 run, wall clock".into(),
            precision: Precision::Fp32,
        });
    } else {
        rows.push(Row {
            name: "cpu (Guide triple loop)".into(),
            timing: None,
            error: None,
            note: format!("skipped above {:.1} GFLOP", CPU_TRIPLE_LOOP_MAX_FLOPS / 1e9),
            precision: Precision::Fp32,
        });
    }
    for &variant in &args.variant.0 {
        let row = |timing, error, note, precision| Row { name: variant.name().into(), timing, error, note, precision };
        // The tensor-core kernels exist only on compute capability 9.0: elsewhere their row
        // says why, and the other variants still run.
        if let (true, Err(why)) = (variant.needs_tensor_cores(), gpu.hopper_status()) {
            rows.push(row(None, None, format!("not run: {why}"), variant.precision()));
            continue;
        }
        // Planned once: the check and every timed launch run this plan, so the planner's own
        // time stays out of the measurement. A narrow kernel's refusal of a wide shape is the
        // row's note; any other planning error ends the command.
        let plan =
            match plan_variant(MatmulDevice::of_gpu(&gpu), variant, shape, args.precision, args.split_k, args.tile) {
                Ok(plan) => plan,
                Err(e) if !variant.supports(shape) || (args.split_k.is_some() && !variant.splits_k()) => {
                    rows.push(row(None, None, e.to_string(), variant.precision()));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
        let options = PlanOptions {
            policy: args.precision,
            split: plan.split().filter(|_| args.split_k.is_some()),
            tile: args.tile,
            ..PlanOptions::default()
        };
        let gemm = matmul::plan_gemm(&gpu, variant, shape, options)?;
        // The planned kernel's precision: its bound and its cuBLAS baseline.
        let precision = gemm.precision();
        // Inputs F16 cannot hold (|x| >= 65520 rounds to infinity) are refused, not multiplied
        // as infinities: the row says which element, and the other variants still run.
        if let Some(refusal) = f16_refusal(&gpu, precision, &mut mats)? {
            rows.push(row(None, None, refusal, precision));
            continue;
        }
        let reference = match precision.reference_precision() {
            Precision::Fp32 => reference.clone(),
            p => reference_for(p),
        };
        // The first variant that runs computes the output file's C.
        let c = if reference.is_some() || out.is_some() {
            Some(matmul::run_plan(&gpu, &gemm, &mut mats[0])?)
        } else {
            None
        };
        let error = reference.as_ref().zip(c.as_ref()).map(|(r, c)| r.max_error(c));
        let bound = precision.tolerance(shape.k);
        if let (Some(file), Some(c)) = (out.take(), c) {
            // Written only once C passed its check: a wrong product never replaces a file.
            if reference.is_none() || error.is_some_and(|e| e <= bound) {
                let path = file.path().display().to_string();
                file.write_npy(&[shape.m as u64, shape.n as u64], &c)?;
                println!("wrote C ({}x{}, computed by {}) to {path}", shape.m, shape.n, variant.name());
            }
        }
        let timing = time_launches(&gpu, warmup, repeat, |i| matmul::launch_plan(&gpu, &gemm, &mut mats[i % sets]))?;
        let note = match variant {
            MatmulVariant::Auto => {
                let split = plan.split().filter(|s| s.splits > 1).map(|s| format!(", {} splits of k", s.splits));
                format!("{}: ran {}{}", args.precision, plan.variant().name(), split.unwrap_or_default())
            }
            MatmulVariant::WgmmaBf16 => "BF16 inputs (rounded once on the GPU, untimed), FP32 accumulate".into(),
            MatmulVariant::WgmmaF16 => "FP16 inputs (rounded once on the GPU, untimed), FP32 accumulate".into(),
            MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => {
                let split = plan.split().filter(|s| s.splits > 1).map(|s| format!(", {} splits of k", s.splits));
                let kind = if variant == MatmulVariant::DecodeBf16 { "BF16" } else { "FP16" };
                format!("{kind} inputs (rounded once, untimed), mma.sync for m <= 16{}", split.unwrap_or_default())
            }
            MatmulVariant::WgmmaTf32 => "TF32 tensor cores; B through registers, no transposition".into(),
            MatmulVariant::WgmmaTf32Transposed => "TF32 tensor cores; B transposed on the GPU, timed".into(),
            MatmulVariant::WgmmaTf32x3 => "split-TF32 (3xTF32) tensor cores; the split timed, vs cuBLAS FP32".into(),
            _ => String::new(),
        };
        rows.push(row(Some(timing), error, note, precision));
    }
    // One cuBLAS row per baseline precision of the variants that ran, FP32 always.
    let mut precisions = vec![Precision::Fp32];
    for row in &rows {
        let baseline = row.precision.baseline();
        if !precisions.contains(&baseline) && gpu.hopper_status().is_ok() {
            precisions.push(baseline);
        }
    }
    let blas = Sgemm::new(&gpu);
    for precision in precisions {
        // cublasGemmEx, then cuBLASLt with its heuristic's best algorithm (what PyTorch runs).
        for lt in [false, true] {
            let (name, note) = match (precision, lt) {
                (Precision::Fp32 | Precision::Tf32x3, false) => ("cublas sgemm", "FP32, no TF32"),
                (Precision::Bf16, false) => ("cublas bf16", "cublasGemmEx, BF16 inputs, FP32 compute"),
                (Precision::Fp16, false) => ("cublas fp16", "cublasGemmEx, FP16 inputs, FP32 compute"),
                (Precision::Tf32, false) => ("cublas tf32", "cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32"),
                (Precision::Fp32 | Precision::Tf32x3, true) => ("cublaslt fp32", "cuBLASLt, heuristic's best, FP32"),
                (Precision::Bf16, true) => ("cublaslt bf16", "cuBLASLt, heuristic's best, BF16 inputs"),
                (Precision::Fp16, true) => ("cublaslt fp16", "cuBLASLt, heuristic's best, FP16 inputs"),
                (Precision::Tf32, true) => ("cublaslt tf32", "cuBLASLt, heuristic's best, FAST_TF32"),
            };
            let row = |timing, error, note: String| Row { name: name.into(), timing, error, note, precision };
            let blas = match &blas {
                Ok(blas) if !lt || blas.has_lt() => blas,
                Ok(_) => {
                    rows.push(row(None, None, "unavailable: libcublasLt.so was not found".into()));
                    continue;
                }
                Err(e) => {
                    rows.push(row(None, None, format!("unavailable: {e}")));
                    continue;
                }
            };
            if let Some(refusal) = f16_refusal(&gpu, precision, &mut mats)? {
                rows.push(row(None, None, refusal));
                continue;
            }
            let reference = match precision.reference_precision() {
                Precision::Fp32 => reference.clone(),
                p => reference_for(p),
            };
            let run = |mats: &mut DeviceMatrices| {
                if lt { blas.run_lt(&gpu, precision, mats) } else { blas.run_in(&gpu, precision, mats) }
            };
            let error = match &reference {
                Some(r) => Some(r.max_error(&run(&mut mats[0])?)),
                None => None,
            };
            let timing = time_launches(&gpu, warmup, repeat, |i| -> anyhow::Result<()> {
                let mats = &mut mats[i % sets];
                if lt { blas.launch_lt(&gpu, precision, mats) } else { blas.launch_in(&gpu, precision, mats) }
            })?;
            rows.push(row(Some(timing), error, note.into()));
        }
    }

    print!("{}", render(shape, &rows));
    if args.check {
        let failed: Vec<String> = rows
            .iter()
            .filter(|row| row.error.is_some_and(|e| e > row.precision.tolerance(shape.k)))
            .map(|row| format!("{} (bound {:.2e})", row.name, row.precision.tolerance(shape.k)))
            .collect();
        if !failed.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "check failed: {} exceeded the error bound (k * f32::EPSILON; TF32 adds 2 * 2^-10 + 2^-20; TF32x3 is about (118 + k / 64) * f32::EPSILON)",
                failed.join(", ")
            ))
            .into());
        }
        println!(
            "check: every result within its bound of the float64 reference (error / sum|a*b|): FP32 and BF16 {:.2e} (BF16 against the product of the BF16-rounded inputs), TF32 {:.2e}, TF32x3 {:.2e}",
            Precision::Fp32.tolerance(shape.k),
            Precision::Tf32.tolerance(shape.k),
            Precision::Tf32x3.tolerance(shape.k)
        );
    }
    Ok(())
}

/// The report table: time, rate and ratio to the cuBLAS row of the row's baseline precision
/// ([`Precision::baseline`]) per row.
pub fn render(shape: MatmulShape, rows: &[Row]) -> String {
    let baseline_ms = |prefix: &str, p: Precision| {
        rows.iter()
            .find(|r| r.name.starts_with(prefix) && r.precision == p.baseline())
            .and_then(|r| r.timing)
            .map(|t| t.median_ms)
    };
    let cublas_ms = |p: Precision| baseline_ms("cublas ", p);
    let lt_ms = |p: Precision| baseline_ms("cublaslt ", p);
    let mut out = format!(
        "{:<24} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
        "variant", "median ms", "min ms", "max ms", "GFLOP/s", "x cuBLAS", "x cuBLASLt", "max error", "note"
    );
    for row in rows {
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let t = row.timing;
        out += &format!(
            "{:<24} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
            row.name,
            // To 0.1 us: the narrow and small products run in a few microseconds.
            cell(t.map(|t| format!("{:.4}", t.median_ms))),
            cell(t.map(|t| format!("{:.4}", t.min_ms))),
            cell(t.map(|t| format!("{:.4}", t.max_ms))),
            cell(t.map(|t| format!("{:.0}", shape.flops() / (t.median_ms * 1e6)))),
            cell(t.zip(cublas_ms(row.precision)).map(|(t, c)| format!("{:.2}", t.median_ms / c))),
            cell(t.zip(lt_ms(row.precision)).map(|(t, c)| format!("{:.2}", t.median_ms / c))),
            cell(row.error.map(|e| format!("{e:.1e}"))),
            row.note
        );
    }
    out
}

/// For FP16 rows, the note of a row not run because an input of some set is beyond F16's range
/// (the library's [`Error::OutOfRange`], naming the element); `None` when the row can run.
fn f16_refusal(gpu: &Gpu, precision: Precision, mats: &mut [DeviceMatrices]) -> Result<Option<String>, Error> {
    if precision != Precision::Fp16 {
        return Ok(None);
    }
    for m in mats {
        match m.f16_operands(gpu) {
            Ok(_) => {}
            Err(e @ Error::OutOfRange { .. }) => return Ok(Some(format!("not run: {e}"))),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn variant_accepts_all_single_names_and_lists() {
        assert_eq!(parse_variants("all").unwrap().0, MatmulVariant::ALL.to_vec());
        assert_eq!(parse_variants("tiled16").unwrap().0, vec![MatmulVariant::Tiled16]);
        assert_eq!(
            parse_variants("naive, tiled32,naive").unwrap().0,
            vec![MatmulVariant::Naive, MatmulVariant::Tiled32]
        );
        let err = parse_variants("tiled8").unwrap_err();
        assert!(err.contains("unknown variant `tiled8`") && err.contains("tiled32"), "{err}");
    }

    #[test]
    fn variant_help_names_every_variant() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let matmul = cli.find_subcommand("matmul").unwrap();
        let arg = matmul.get_arguments().find(|a| a.get_id() == "variant").unwrap();
        let help = arg.get_help().unwrap().to_string();
        for v in MatmulVariant::ALL {
            assert!(help.contains(v.name()), "--variant help does not name {}: {help}", v.name());
        }
    }

    #[test]
    fn matmul_command_line_parses_sizes_variant_repeat_and_check() {
        let cli = Cli::try_parse_from([
            "host",
            "matmul",
            "--m",
            "1000",
            "--k",
            "800",
            "--n",
            "1200",
            "--variant",
            "tiled32",
            "--repeat",
            "5",
            "--check",
        ])
        .unwrap();
        let Command::Matmul(args) = cli.command else { panic!("not matmul") };
        assert_eq!((args.m, args.k, args.n, args.repeat, args.check), (Some(1000), Some(800), Some(1200), 5, true));
        assert_eq!(args.variant.0, vec![MatmulVariant::Tiled32]);
        assert!(Cli::try_parse_from(["host", "matmul", "--m", "1", "--k", "1", "--n", "1", "--repeat", "0"]).is_err());
        assert!(Cli::try_parse_from(["host", "matmul", "--m", "1", "--k", "1"]).is_err());
    }

    #[test]
    fn zero_sizes_are_refused_before_a_gpu_is_needed() {
        let cli = Cli::try_parse_from(["host", "matmul", "--m", "8", "--k", "0", "--n", "8"]).unwrap();
        let Command::Matmul(args) = cli.command else { unreachable!() };
        let err = run(0, &args).unwrap_err().to_string();
        assert!(err.contains("k is 0"), "{err}");
    }

    #[test]
    fn split_k_overrides_the_planners_split_and_is_refused_for_kernels_without_one() {
        let shape = MatmulShape::new(64, 8192, 64).unwrap();
        let plan = |v, s| plan_variant(MatmulDevice::H100, v, shape, PrecisionPolicy::High, s, None);
        assert_eq!(plan(MatmulVariant::Auto, Some(64)).unwrap().split().unwrap(), SplitK { splits: 64, k_chunk: 128 });
        assert_eq!(plan(MatmulVariant::SgemmWarpTiled, Some(1)).unwrap().split().unwrap().splits, 1);
        assert!(plan(MatmulVariant::Auto, None).unwrap().split().unwrap().splits >= 128);
        // The tensor-core tile kernels take ranges of whole stages (64 BF16 columns, 32 TF32).
        assert_eq!(
            plan(MatmulVariant::WgmmaBf16, Some(4)).unwrap().split().unwrap(),
            SplitK { splits: 4, k_chunk: 2048 }
        );
        assert_eq!(
            plan(MatmulVariant::WgmmaTf32, Some(3)).unwrap().split().unwrap(),
            SplitK { splits: 3, k_chunk: 2752 }
        );
        // One tile in 4 splits: one cluster of 4 blocks adds them.
        let text = plan(MatmulVariant::WgmmaF16, Some(4)).unwrap().to_string();
        assert!(text.contains("split-K 4 x 2048 columns of A, added in clusters of 4 blocks"), "{text}");
        // 64 splits: more than a cluster holds, so the tile's last work item adds them.
        let text = plan(MatmulVariant::WgmmaF16, Some(64)).unwrap().to_string();
        assert!(text.contains("split-K 64 x 128 columns of A, added by each tile's last work item"), "{text}");
        let err = plan(MatmulVariant::Tiled32, Some(4)).unwrap_err().to_string();
        assert!(err.contains("tiled32 takes no split of k"), "{err}");
        assert_eq!(matmul_args(&["--m", "1", "--k", "1", "--n", "1", "--split-k", "3"]).split_k, Some(3));
        assert!(Cli::try_parse_from(["host", "matmul", "--m", "1", "--k", "1", "--n", "1", "--split-k", "0"]).is_err());
    }

    #[test]
    fn plans_for_a_device_model_need_no_gpu_and_the_longest_k_gets_a_plan_or_an_error() {
        let args = matmul_args(&[
            "--device-model",
            "h100",
            "--m",
            "1",
            "--k",
            "4294967295",
            "--n",
            "1",
            "--variant",
            "sgemm",
            "--plan",
        ]);
        assert_eq!(args.device_model, Some(DeviceModel::H100));
        // Runs without a driver: the plan is printed (or the refusal).
        run(0, &args).unwrap();
        let forced = matmul_args(&[
            "--device-model",
            "h200",
            "--m",
            "1",
            "--k",
            "4294967295",
            "--n",
            "1",
            "--variant",
            "sgemm",
            "--plan",
            "--split-k",
            "1",
        ]);
        run(0, &forced).unwrap();
        // About one split: as few as k allows, two.
        let plan = plan_variant(
            MatmulDevice::H100,
            MatmulVariant::Sgemm,
            forced_shape(),
            PrecisionPolicy::High,
            Some(1),
            None,
        )
        .unwrap();
        assert_eq!(plan.split().unwrap().splits, 2, "{plan}");
        assert!(
            Cli::try_parse_from(["host", "matmul", "--m", "1", "--k", "1", "--n", "1", "--device-model", "h100"])
                .is_err()
        );
    }

    fn forced_shape() -> MatmulShape {
        MatmulShape::new(1, u32::MAX as usize, 1).unwrap()
    }

    fn matmul_args(argv: &[&str]) -> MatmulArgs {
        let cli = Cli::try_parse_from(["host", "matmul"].iter().chain(argv)).unwrap();
        let Command::Matmul(args) = cli.command else { unreachable!() };
        args
    }

    #[test]
    fn matmul_takes_either_a_shape_or_two_files() {
        let args = matmul_args(&["--a", "a.npy", "--b", "b.npy", "--out", "c.npy", "--check"]);
        assert_eq!((args.a.unwrap(), args.b.unwrap(), args.m), (PathBuf::from("a.npy"), PathBuf::from("b.npy"), None));
        assert_eq!(args.out, Some(PathBuf::from("c.npy")));
        let parse = |argv: &[&str]| Cli::try_parse_from(["host", "matmul"].iter().chain(argv)).map(|_| ());
        assert!(parse(&["--a", "a.npy"]).is_err(), "--a without --b");
        assert!(parse(&["--a", "a.npy", "--b", "b.npy", "--m", "4"]).is_err(), "files and a shape");
        assert!(parse(&["--m", "4", "--k", "4", "--n", "4", "--out", "c.npy"]).is_err(), "--out of random inputs");
    }

    #[test]
    fn bad_input_files_are_reported_before_a_gpu_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a.npy"), dir.path().join("b.npy"), dir.path().join("c.npy"));
        io::write_matrix(&a, &Matrix::new(2, 3, vec![1.0; 6]).unwrap()).unwrap();
        io::write_matrix(&b, &Matrix::new(4, 2, vec![1.0; 8]).unwrap()).unwrap();
        let argv = |out: bool| {
            let mut v = vec!["--a", a.to_str().unwrap(), "--b", b.to_str().unwrap()];
            if out {
                v.extend(["--out", c.to_str().unwrap()]);
            }
            matmul_args(&v)
        };
        let err = run(0, &argv(true)).unwrap_err().to_string();
        assert!(
            err.contains("a.npy is 2x3 and") && err.contains("b.npy is 4x2") && err.contains("(3) must equal"),
            "{err}"
        );
        assert!(!c.exists(), "a failed run left {}", c.display());
        std::fs::remove_file(&b).unwrap();
        let err = run(0, &argv(false)).unwrap_err().to_string();
        assert!(err.contains("b.npy: no such file"), "{err}");
    }

    #[test]
    fn matrices_with_a_zero_dimension_are_refused_naming_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
        io::write_matrix(&a, &Matrix::new(2, 0, vec![]).unwrap()).unwrap();
        io::write_matrix(&b, &Matrix::new(0, 2, vec![]).unwrap()).unwrap();
        let err = read_inputs(&a, &b).unwrap_err().to_string();
        assert!(err.contains("a.npy (2x0) times") && err.contains("k is 0"), "{err}");
    }

    #[test]
    fn render_shows_rate_and_ratio_to_cublas_and_dashes_for_missing_values() {
        let shape = MatmulShape::new(1024, 1024, 1024).unwrap();
        let t = |ms| Timing::from_samples(vec![ms]);
        let rows = vec![
            Row {
                name: "tiled16".into(),
                timing: t(0.5),
                error: Some(1e-7),
                note: String::new(),
                precision: Precision::Fp32,
            },
            Row {
                name: "cublas sgemm".into(),
                timing: t(0.05),
                error: None,
                note: "FP32".into(),
                precision: Precision::Fp32,
            },
            Row { name: "cpu".into(), timing: None, error: None, note: "skipped".into(), precision: Precision::Fp32 },
            Row {
                name: "wgmma_bf16".into(),
                timing: t(0.004),
                error: None,
                note: String::new(),
                precision: Precision::Bf16,
            },
            Row {
                name: "cublas bf16".into(),
                timing: t(0.005),
                error: None,
                note: String::new(),
                precision: Precision::Bf16,
            },
            Row {
                name: "wgmma_tf32".into(),
                timing: t(0.01),
                error: None,
                note: String::new(),
                precision: Precision::Tf32,
            },
            Row {
                name: "wgmma_tf32x3".into(),
                timing: t(0.04),
                error: None,
                note: String::new(),
                precision: Precision::Tf32x3,
            },
        ];
        let text = render(shape, &rows);
        let tiled = text.lines().find(|l| l.starts_with("tiled16")).unwrap();
        assert!(tiled.contains("4295") && tiled.contains("10.00") && tiled.contains("1.0e-7"), "{tiled}");
        let bf16 = text.lines().find(|l| l.starts_with("wgmma_bf16")).unwrap();
        // Times to 0.1 us, so that a product of a few microseconds reads as such.
        assert!(bf16.contains(" 0.0040 "), "{bf16}");
        // Each row against the cuBLAS row of its own precision; none when that row is missing.
        assert!(bf16.contains(" 0.80 "), "{bf16}");
        let tf32 = text.lines().find(|l| l.starts_with("wgmma_tf32")).unwrap();
        assert!(!tf32.contains("0.20") && !tf32.contains("2.00"), "{tf32}");
        // Split-TF32 against cuBLAS FP32, its baseline.
        let x3 = text.lines().find(|l| l.starts_with("wgmma_tf32x3")).unwrap();
        assert!(x3.contains(" 0.80 "), "{x3}");
        assert!(text.lines().find(|l| l.starts_with("cpu")).unwrap().contains("-"));
    }
}
