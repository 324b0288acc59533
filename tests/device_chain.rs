//! A caller's pipeline on device buffers, as a downstream library would write it: its own CUDA
//! context and stream, inputs uploaded once, a chain of GEMMs in several layouts and element
//! types, an on-GPU conversion between them and a histogram of an intermediate, all enqueued
//! without a synchronization, and the results downloaded once at the end. The chain is then
//! captured into a CUDA graph and replayed: the replay's results are bit for bit the eager run's.

use std::sync::Arc;

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use hopper_kernels::histogram::{Histogram, HistogramScratch, InputType, Values, binning_for, histogram_cpu_of};
use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout, convert_matrix};
use hopper_kernels::{Error, Gpu};
use rand::Rng;
use support::fresh_rng;

const M: usize = 192;
const K: usize = 256;
const N: usize = 160;
const P: usize = 96;
const BATCH: usize = 3;
const BINS: usize = 64;
/// Wide enough for every D2 value: D1's elements spread as sqrt(K / 9) ≈ 5.3, D2's as about 20.
const RANGE: (f32, f32) = (-200.0, 200.0);

/// The pipeline's device buffers: inputs, intermediates and outputs.
struct Buffers {
    /// `M x K` `f32`, row-major.
    a: CudaSlice<f32>,
    /// `K x N` `f32`, column-major.
    b: CudaSlice<f32>,
    /// `P x N` BF16, row-major: the second product reads it transposed.
    w: CudaSlice<bf16>,
    /// `M x P` `f32`, column-major: the second product's `C`.
    bias: CudaSlice<f32>,
    /// `BATCH` of `M x K` and `K x P` F16, row-major, packed.
    f: CudaSlice<f16>,
    g: CudaSlice<f16>,
    /// `D1 = A B`, `M x N` `f32` row-major.
    d1: CudaSlice<f32>,
    /// `D1` in BF16.
    x: CudaSlice<bf16>,
    /// `D2 = 0.5 X W^T + bias`, `M x P` `f32` column-major.
    d2: CudaSlice<f32>,
    /// `E = F G` per batch, F16.
    e: CudaSlice<f16>,
    /// The histogram of `D2`.
    counts: CudaSlice<u64>,
    workspace: CudaSlice<u8>,
}

/// What a run of the pipeline leaves, on the host.
#[derive(Debug, Clone, PartialEq)]
struct Results {
    d1: Vec<f32>,
    x: Vec<bf16>,
    d2: Vec<f32>,
    e: Vec<f16>,
    counts: Vec<u64>,
}

/// The pipeline's plans, made once.
struct Pipeline {
    first: GemmPlan,
    second: GemmPlan,
    batched: GemmPlan,
    histogram: Histogram,
}

impl Pipeline {
    fn new(gpu: &Gpu) -> Self {
        let first = GemmDesc::new(M, N, K)
            .a(Layout::row_major(DType::F32))
            .b(Layout::col_major(DType::F32))
            .d(Layout::row_major(DType::F32));
        let second = GemmDesc::new(M, P, N)
            .transpose_b(true)
            .a(Layout::row_major(DType::Bf16))
            .b(Layout::row_major(DType::Bf16))
            .d(Layout::col_major(DType::F32))
            .alpha_beta(0.5, 1.0);
        let batched = GemmDesc::new(M, P, K)
            .a(Layout::row_major(DType::F16))
            .b(Layout::row_major(DType::F16))
            .d(Layout::row_major(DType::F16))
            .batch(BATCH);
        Self {
            first: GemmPlan::new(gpu, first).unwrap(),
            second: GemmPlan::new(gpu, second).unwrap(),
            batched: GemmPlan::new(gpu, batched).unwrap(),
            histogram: Histogram::new(gpu, InputType::F32, BINS, Some(RANGE)).unwrap(),
        }
    }

    fn workspace_bytes(&self) -> usize {
        [&self.first, &self.second, &self.batched].iter().map(|p| p.workspace_bytes()).max().unwrap().max(1)
    }

    /// Enqueues the whole chain on `gpu`'s stream; nothing waits for the GPU.
    fn enqueue(&self, gpu: &Gpu, buf: &mut Buffers, scratch: &mut HistogramScratch) -> hopper_kernels::Result<()> {
        self.first.launch(gpu, &buf.a, &buf.b, &mut buf.d1, &mut buf.workspace)?;
        convert_matrix(gpu, &buf.d1, Layout::row_major(DType::F32), &mut buf.x, N, (M, N))?;
        self.second.launch_with_c(gpu, &buf.x, &buf.w, &buf.bias, &mut buf.d2, &mut buf.workspace)?;
        self.batched.launch(gpu, &buf.f, &buf.g, &mut buf.e, &mut buf.workspace)?;
        gpu.stream().memset_zeros(&mut buf.counts)?;
        self.histogram.count_u64(gpu, &buf.d2, &mut buf.counts, scratch)
    }
}

fn draw<T>(rng: &mut impl Rng, len: usize, from: impl Fn(f32) -> T) -> Vec<T> {
    (0..len).map(|_| from(rng.random_range(-1.0f32..1.0))).collect()
}

/// A context with a stream of its own, event tracking off (one stream orders everything, and a
/// stream capture may not wait on events recorded outside it), as a graph-capturing caller runs.
fn own_stream() -> (Arc<CudaStream>, Gpu) {
    let ctx = hopper_kernels::gpu::open_context(0).unwrap_or_else(|e| panic!("GPU tests need a CUDA device: {e}"));
    // SAFETY: called before any buffer of this context exists; every launch and copy of the test
    // goes on the one stream made here, whose order is all the synchronization they need.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let gpu = Gpu::from_stream(stream.clone()).unwrap();
    (stream, gpu)
}

fn download(stream: &Arc<CudaStream>, buf: &Buffers) -> Results {
    Results {
        d1: stream.clone_dtoh(&buf.d1).unwrap(),
        x: stream.clone_dtoh(&buf.x).unwrap(),
        d2: stream.clone_dtoh(&buf.d2).unwrap(),
        e: stream.clone_dtoh(&buf.e).unwrap(),
        counts: stream.clone_dtoh(&buf.counts).unwrap(),
    }
}

/// Checks `got` (`rows x cols`, element `(r, c)` at `index(r, c)`) against the float64 sums of
/// `terms(r, c)`, within `bound` of the sum of magnitudes plus `unit` of the value.
fn check_product(
    what: &str,
    (rows, cols): (usize, usize),
    got: impl Fn(usize, usize) -> f64,
    terms: impl Fn(usize, usize) -> (f64, f64),
    bound: f64,
    unit: f64,
) {
    for r in 0..rows {
        for c in 0..cols {
            let (want, magnitude) = terms(r, c);
            let g = got(r, c);
            let tol = bound * magnitude + unit * want.abs() + 1e-30;
            assert!(
                (g - want).abs() <= tol,
                "{what}[{r}][{c}] = {g}, want {want} (error {:.2e} > {tol:.2e})",
                (g - want).abs()
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_chain_on_the_callers_stream_downloads_once_matches_references_and_replays_as_a_graph() {
    let (stream, gpu) = own_stream();
    let mut rng = fresh_rng("device chain");
    let a = draw(&mut rng, M * K, |x| x);
    let b = draw(&mut rng, K * N, |x| x);
    let w = draw(&mut rng, P * N, bf16::from_f32);
    let bias = draw(&mut rng, M * P, |x| x);
    let f = draw(&mut rng, BATCH * M * K, f16::from_f32);
    let g = draw(&mut rng, BATCH * K * P, f16::from_f32);
    let pipeline = Pipeline::new(&gpu);
    let mut buf = Buffers {
        a: stream.clone_htod(&a).unwrap(),
        b: stream.clone_htod(&b).unwrap(),
        w: stream.clone_htod(&w).unwrap(),
        bias: stream.clone_htod(&bias).unwrap(),
        f: stream.clone_htod(&f).unwrap(),
        g: stream.clone_htod(&g).unwrap(),
        d1: stream.alloc_zeros(M * N).unwrap(),
        x: stream.alloc_zeros(M * N).unwrap(),
        d2: stream.alloc_zeros(M * P).unwrap(),
        e: stream.alloc_zeros(BATCH * M * P).unwrap(),
        counts: stream.alloc_zeros(BINS).unwrap(),
        workspace: stream.alloc_zeros(pipeline.workspace_bytes()).unwrap(),
    };
    let mut scratch = HistogramScratch::default();
    pipeline.enqueue(&gpu, &mut buf, &mut scratch).unwrap();
    let eager = download(&stream, &buf);

    // D1 = A B against float64, and against cuBLAS's SGEMM of the same device buffers.
    let bound = |plan: &GemmPlan| plan.precision().tolerance(plan.desc().k);
    check_product(
        "D1",
        (M, N),
        |r, c| eager.d1[r * N + c] as f64,
        |r, c| {
            let t = (0..K).map(|i| a[r * K + i] as f64 * b[c * K + i] as f64);
            (t.clone().sum(), t.map(f64::abs).sum())
        },
        bound(&pipeline.first),
        0.0,
    );
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let mut theirs = stream.alloc_zeros::<f32>(M * N).unwrap();
    // Row-major D1 = A B is column-major D1^T = B^T A^T: B (col-major K x N) read transposed.
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
    // SAFETY: b holds K x N (column-major, ld K), a holds M x K (row-major, ld K), theirs M x N.
    unsafe { blas.gemm(cfg, &buf.b, &buf.a, &mut theirs) }.unwrap();
    let theirs = stream.clone_dtoh(&theirs).unwrap();
    let scale = K as f64;
    let tol = 2.0 * bound(&pipeline.first) * scale;
    for (j, (x, y)) in eager.d1.iter().zip(&theirs).enumerate() {
        assert!((*x as f64 - *y as f64).abs() <= tol, "D1 element {j}: ours {x}, cuBLAS {y}");
    }

    // X = bf16(D1), rounded to nearest even, exactly.
    for (j, (x, d)) in eager.x.iter().zip(&eager.d1).enumerate() {
        assert_eq!(x.to_bits(), bf16::from_f32(*d).to_bits(), "X element {j} of D1 = {d}");
    }

    // D2 = 0.5 X W^T + bias (column-major), products of X as stored.
    check_product(
        "D2",
        (M, P),
        |r, c| eager.d2[c * M + r] as f64,
        |r, c| {
            let t = (0..N).map(|i| 0.5 * eager.x[r * N + i].to_f64() * w[c * N + i].to_f64());
            let magnitude = t.clone().map(f64::abs).sum::<f64>() + (bias[c * M + r] as f64).abs();
            (t.sum::<f64>() + bias[c * M + r] as f64, magnitude)
        },
        bound(&pipeline.second),
        0.0,
    );

    // E = F G per batch, rounded to F16.
    for i in 0..BATCH {
        check_product(
            &format!("E batch {i}"),
            (M, P),
            |r, c| eager.e[i * M * P + r * P + c].to_f64(),
            |r, c| {
                let t = (0..K).map(|j| f[i * M * K + r * K + j].to_f64() * g[i * K * P + j * P + c].to_f64());
                (t.clone().sum(), t.map(f64::abs).sum())
            },
            bound(&pipeline.batched),
            1.0 / 2048.0,
        );
    }

    // The histogram of D2 as the GPU left it, exactly.
    let binning = binning_for(InputType::F32, BINS, Some(RANGE)).unwrap();
    let want: Vec<u64> = histogram_cpu_of(Values::F32(&eager.d2), &binning).into_iter().map(u64::from).collect();
    assert_eq!(eager.counts, want, "histogram of D2");
    assert_eq!(eager.counts.iter().sum::<u64>(), (M * P) as u64, "every D2 value lies in the range");

    // The same chain, captured once and replayed twice over poisoned outputs: bit for bit.
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    let captured = pipeline.enqueue(&gpu, &mut buf, &mut scratch);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0)).unwrap();
    captured.unwrap();
    let graph = graph.expect("the capture recorded the chain");
    for replay in 0..2 {
        for out in [&mut buf.d1, &mut buf.d2] {
            gpu.fill_u32_pattern(out, f32::NAN.to_bits()).unwrap();
        }
        stream.memset_zeros(&mut buf.x).unwrap();
        stream.memset_zeros(&mut buf.e).unwrap();
        stream.memset_zeros(&mut buf.counts).unwrap();
        graph.launch().unwrap();
        let replayed = download(&stream, &buf);
        assert!(replayed == eager, "replay {replay} of the captured chain differs from the eager run");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_launch_that_would_allocate_during_a_capture_is_refused_with_the_reason() {
    let (stream, gpu) = own_stream();
    let histogram = Histogram::new(&gpu, InputType::I32, 8, None).unwrap();
    let values = stream.clone_htod(&[1i32; 64]).unwrap();
    let mut counts = stream.alloc_zeros::<u64>(8).unwrap();
    let mut scratch = HistogramScratch::default();
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    let refused = histogram.count_u64(&gpu, &values, &mut counts, &mut scratch);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0)).unwrap();
    assert!(matches!(refused, Err(Error::NeedsLaunchBeforeCapture { .. })), "{refused:?}");
    drop(graph);
    // Outside the capture the same call allocates and counts.
    histogram.count_u64(&gpu, &values, &mut counts, &mut scratch).unwrap();
    assert_eq!(stream.clone_dtoh(&counts).unwrap(), [0, 64, 0, 0, 0, 0, 0, 0]);
}

/// A build that found ptxas embeds its cubins, and on a GPU of their compute capability the
/// library loads them, with no PTX for the driver to compile (about 90 s on a first load). A
/// build without ptxas cannot check this, and the test fails saying so rather than pass.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_cubin_assembled_at_build_time_is_what_a_compute_capability_9_0_gpu_loads() {
    use hopper_kernels::ptx::{self, ModuleCode};
    assert!(
        ptx::embedded_cubin().is_some(),
        "this build embeds no cubin: build with ptxas (PTXAS, PATH or a CUDA toolkit) to check its loading"
    );
    let gpu = Gpu::open(0).unwrap();
    let forced = std::env::var_os("CUDA_FORCE_PTX_JIT").is_some_and(|v| v == "1");
    let want = if gpu.info().compute_capability == (9, 0) && !forced { ModuleCode::Cubin } else { ModuleCode::Ptx };
    assert_eq!(gpu.ptx_info().code, Some(want), "{}", gpu.ptx_info().summary());
}
