//! A downstream program's pipeline on the GPU, through `hopper-kernels` only as a dependency:
//! its own CUDA context and stream, inputs uploaded once, three GEMMs in different layouts and
//! element types with an on-GPU BF16 conversion between two of them, a `u64` histogram of an
//! intermediate, and one download at the end. Every result is checked (float64 references,
//! cuBLAS's SGEMM on the same device buffers, the exact CPU histogram), then the chain is captured
//! into a CUDA graph and replayed: the replay must equal the eager run bit for bit.
//!
//! Prints one line per check and exits 0 when all hold, 1 (with the reason) otherwise.

use std::process::ExitCode;
use std::sync::Arc;

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use hopper_kernels::Gpu;
use hopper_kernels::histogram::{Histogram, HistogramScratch, InputType, Values, binning_for, histogram_cpu_of};
use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout, convert_matrix};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The chain's sizes: `D1 = A B` (`M x K` by `K x N`), `D2 = 0.5 X W^T + bias` (`X` = BF16 of
/// `D1`, `W` `P x N`), `E_i = F_i G_i` (`BATCH` F16 products `M x K` by `K x P`).
const M: usize = 512;
const K: usize = 384;
const N: usize = 256;
const P: usize = 192;
const BATCH: usize = 4;
const BINS: usize = 100;
const RANGE: (f32, f32) = (-80.0, 80.0);

type Failure = Box<dyn std::error::Error>;

/// Device buffers of the chain.
struct Buffers {
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    w: CudaSlice<bf16>,
    bias: CudaSlice<f32>,
    f: CudaSlice<f16>,
    g: CudaSlice<f16>,
    d1: CudaSlice<f32>,
    x: CudaSlice<bf16>,
    d2: CudaSlice<f32>,
    e: CudaSlice<f16>,
    counts: CudaSlice<u64>,
    workspace: CudaSlice<u8>,
}

/// What one run leaves, downloaded.
#[derive(PartialEq)]
struct Results {
    d1: Vec<f32>,
    x: Vec<bf16>,
    d2: Vec<f32>,
    e: Vec<f16>,
    counts: Vec<u64>,
}

/// The chain's plans, made once and launched as often as needed.
struct Chain {
    first: GemmPlan,
    second: GemmPlan,
    batched: GemmPlan,
    histogram: Histogram,
}

impl Chain {
    fn new(gpu: &Gpu) -> hopper_kernels::Result<Self> {
        // D1 (row-major f32) = A (row-major f32) B (column-major f32), under the default policy.
        let first = GemmDesc::new(M, N, K)
            .a(Layout::row_major(DType::F32))
            .b(Layout::col_major(DType::F32))
            .d(Layout::row_major(DType::F32));
        // D2 (column-major f32) = 0.5 X W^T + bias, X and W BF16.
        let second = GemmDesc::new(M, P, N)
            .transpose_b(true)
            .a(Layout::row_major(DType::Bf16))
            .b(Layout::row_major(DType::Bf16))
            .d(Layout::col_major(DType::F32))
            .alpha_beta(0.5, 1.0);
        // E_i = F_i G_i, F16 in and out, a strided batch.
        let batched = GemmDesc::new(M, P, K)
            .a(Layout::row_major(DType::F16))
            .b(Layout::row_major(DType::F16))
            .d(Layout::row_major(DType::F16))
            .batch(BATCH);
        Ok(Self {
            first: GemmPlan::new(gpu, first)?,
            second: GemmPlan::new(gpu, second)?,
            batched: GemmPlan::new(gpu, batched)?,
            histogram: Histogram::new(gpu, InputType::F32, BINS, Some(RANGE))?,
        })
    }

    fn workspace_bytes(&self) -> usize {
        [&self.first, &self.second, &self.batched].iter().map(|p| p.workspace_bytes()).max().unwrap_or(0).max(1)
    }

    /// Enqueues the chain on `gpu`'s stream; nothing here waits for the GPU.
    fn enqueue(&self, gpu: &Gpu, buf: &mut Buffers, scratch: &mut HistogramScratch) -> hopper_kernels::Result<()> {
        self.first.launch(gpu, &buf.a, &buf.b, &mut buf.d1, &mut buf.workspace)?;
        convert_matrix(gpu, &buf.d1, Layout::row_major(DType::F32), &mut buf.x, N, (M, N))?;
        self.second.launch_with_c(gpu, &buf.x, &buf.w, &buf.bias, &mut buf.d2, &mut buf.workspace)?;
        self.batched.launch(gpu, &buf.f, &buf.g, &mut buf.e, &mut buf.workspace)?;
        gpu.stream().memset_zeros(&mut buf.counts)?;
        self.histogram.count_u64(gpu, &buf.d2, &mut buf.counts, scratch)
    }
}

fn download(stream: &Arc<CudaStream>, buf: &Buffers) -> Result<Results, Failure> {
    Ok(Results {
        d1: stream.clone_dtoh(&buf.d1)?,
        x: stream.clone_dtoh(&buf.x)?,
        d2: stream.clone_dtoh(&buf.d2)?,
        e: stream.clone_dtoh(&buf.e)?,
        counts: stream.clone_dtoh(&buf.counts)?,
    })
}

/// The largest error of `got(r, c)` against the float64 `terms(r, c)` (value, sum of
/// magnitudes), relative to the bound `bound * magnitude + unit * |value|`: at most 1 passes.
fn worst(
    (rows, cols): (usize, usize),
    got: impl Fn(usize, usize) -> f64,
    terms: impl Fn(usize, usize) -> (f64, f64),
    bound: f64,
    unit: f64,
) -> f64 {
    let mut worst = 0.0f64;
    for r in 0..rows {
        for c in 0..cols {
            let (want, magnitude) = terms(r, c);
            let allowed = bound * magnitude + unit * want.abs() + 1e-30;
            worst = worst.max((got(r, c) - want).abs() / allowed);
        }
    }
    worst
}

fn check(what: &str, ratio: f64) -> Result<(), Failure> {
    println!("{what}: largest error {ratio:.3} of the bound");
    if ratio <= 1.0 { Ok(()) } else { Err(format!("{what} exceeds its bound ({ratio:.3}x)").into()) }
}

fn run() -> Result<(), Failure> {
    // The caller's own context and stream. Event tracking off: one stream orders every launch and
    // copy, and a stream capture may not wait on events recorded outside it.
    let ctx = hopper_kernels::gpu::open_context(0)?;
    // SAFETY: before any buffer of this context exists; everything below runs on one stream.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let gpu = Gpu::from_stream(stream.clone())?;
    let (major, minor) = gpu.info().compute_capability;
    println!("{} (compute capability {major}.{minor}), PTX {}", gpu.info().name, gpu.ptx_info().profile);

    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut draw = |len: usize| (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<f32>>();
    let (a, b, bias) = (draw(M * K), draw(K * N), draw(M * P));
    let w: Vec<bf16> = draw(P * N).into_iter().map(bf16::from_f32).collect();
    let f: Vec<f16> = draw(BATCH * M * K).into_iter().map(f16::from_f32).collect();
    let g: Vec<f16> = draw(BATCH * K * P).into_iter().map(f16::from_f32).collect();

    let chain = Chain::new(&gpu)?;
    let mut buf = Buffers {
        a: stream.clone_htod(&a)?,
        b: stream.clone_htod(&b)?,
        w: stream.clone_htod(&w)?,
        bias: stream.clone_htod(&bias)?,
        f: stream.clone_htod(&f)?,
        g: stream.clone_htod(&g)?,
        d1: stream.alloc_zeros(M * N)?,
        x: stream.alloc_zeros(M * N)?,
        d2: stream.alloc_zeros(M * P)?,
        e: stream.alloc_zeros(BATCH * M * P)?,
        counts: stream.alloc_zeros(BINS)?,
        workspace: stream.alloc_zeros(chain.workspace_bytes())?,
    };
    let mut scratch = HistogramScratch::default();
    chain.enqueue(&gpu, &mut buf, &mut scratch)?;
    let eager = download(&stream, &buf)?;
    println!("plans: D1 {}; D2 {}; E {}", chain.first, chain.second, chain.batched);

    let bound = |plan: &GemmPlan| plan.precision().tolerance(plan.desc().k);
    check(
        "D1 = A B (f32) vs float64",
        worst(
            (M, N),
            |r, c| eager.d1[r * N + c] as f64,
            |r, c| {
                let t = (0..K).map(|i| a[r * K + i] as f64 * b[c * K + i] as f64);
                (t.clone().sum(), t.map(f64::abs).sum())
            },
            bound(&chain.first),
            0.0,
        ),
    )?;

    // cuBLAS on the same device buffers: row-major D1 = A B is column-major D1^T = B^T A^T.
    let blas = CudaBlas::new(stream.clone())?;
    let mut theirs = stream.alloc_zeros::<f32>(M * N)?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: N as i32,
        n: M as i32,
        k: K as i32,
        alpha: 1.0f32,
        lda: K as i32,
        ldb: K as i32,
        beta: 0.0,
        ldc: N as i32,
    };
    // SAFETY: b holds K x N column-major (ld K), a M x K row-major (ld K), theirs M x N.
    unsafe { blas.gemm(cfg, &buf.b, &buf.a, &mut theirs) }?;
    let theirs = stream.clone_dtoh(&theirs)?;
    let allowed = 2.0 * bound(&chain.first) * K as f64;
    let apart = eager.d1.iter().zip(&theirs).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max);
    check("D1 vs cuBLAS SGEMM", apart / allowed)?;

    let rounded = eager.x.iter().zip(&eager.d1).all(|(x, d)| x.to_bits() == bf16::from_f32(*d).to_bits());
    println!("X = bf16(D1): {}", if rounded { "every element rounded to nearest even" } else { "WRONG" });
    if !rounded {
        return Err("the BF16 conversion differs from round-to-nearest-even".into());
    }

    check(
        "D2 = 0.5 X W^T + bias (bf16 in, column-major f32 out) vs float64",
        worst(
            (M, P),
            |r, c| eager.d2[c * M + r] as f64,
            |r, c| {
                let t = (0..N).map(|i| 0.5 * eager.x[r * N + i].to_f64() * w[c * N + i].to_f64());
                let bias = bias[c * M + r] as f64;
                (t.clone().sum::<f64>() + bias, t.map(f64::abs).sum::<f64>() + bias.abs())
            },
            bound(&chain.second),
            0.0,
        ),
    )?;

    let mut batched = 0.0f64;
    for i in 0..BATCH {
        batched = batched.max(worst(
            (M, P),
            |r, c| eager.e[i * M * P + r * P + c].to_f64(),
            |r, c| {
                let t = (0..K).map(|j| f[i * M * K + r * K + j].to_f64() * g[i * K * P + j * P + c].to_f64());
                (t.clone().sum(), t.map(f64::abs).sum())
            },
            bound(&chain.batched),
            1.0 / 2048.0,
        ));
    }
    check(&format!("E = F G ({BATCH} f16 products) vs float64"), batched)?;

    let binning = binning_for(InputType::F32, BINS, Some(RANGE))?;
    let want: Vec<u64> = histogram_cpu_of(Values::F32(&eager.d2), &binning).into_iter().map(u64::from).collect();
    let counted: u64 = eager.counts.iter().sum();
    println!(
        "histogram of D2: {counted} values in {BINS} bins, {}",
        if eager.counts == want { "exact" } else { "WRONG" }
    );
    if eager.counts != want {
        return Err("the histogram differs from the CPU's".into());
    }

    // Capture the same chain once, replay it twice over wiped outputs.
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    let captured = chain.enqueue(&gpu, &mut buf, &mut scratch);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0))?;
    captured?;
    let graph = graph.ok_or("the capture recorded nothing")?;
    for replay in 1..=2 {
        for out in [&mut buf.d1, &mut buf.d2] {
            gpu.fill_u32_pattern(out, f32::NAN.to_bits())?;
        }
        stream.memset_zeros(&mut buf.x)?;
        stream.memset_zeros(&mut buf.e)?;
        stream.memset_zeros(&mut buf.counts)?;
        graph.launch()?;
        let same = download(&stream, &buf)? == eager;
        println!("graph replay {replay}: {}", if same { "bit for bit the eager run" } else { "DIFFERS" });
        if !same {
            return Err(format!("graph replay {replay} differs from the eager run").into());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("device-chain: every check passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("device-chain: {e}");
            ExitCode::FAILURE
        }
    }
}
