//! The README's quick start: a GEMM planned once and launched on the caller's own stream, a
//! histogram of its output on the same stream, one download at the end.
//! `cargo run --release -p hopper-kernels --example quick_start`

use hopper_kernels::Gpu;
use hopper_kernels::histogram::{Histogram, HistogramScratch, InputType};
use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout};

fn main() -> hopper_kernels::Result<()> {
    // Your own context and stream (or `Gpu::open(0)` for a stream of the library's).
    let ctx = hopper_kernels::gpu::open_context(0)?;
    let stream = ctx.new_stream()?;
    let gpu = Gpu::from_stream(stream.clone())?;

    let (m, n, k) = (2048, 1024, 512);
    let a = stream.clone_htod(&vec![0.5f32; m * k])?; // m x k, row-major
    let b = stream.clone_htod(&vec![0.25f32; k * n])?; // k x n, column-major
    let mut d = stream.alloc_zeros::<f32>(m * n)?;

    // D = A B under the default `high` precision policy; the plan checks the descriptor once.
    let plan = GemmPlan::new(&gpu, GemmDesc::new(m, n, k).b(Layout::col_major(DType::F32)))?;
    let mut workspace = stream.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
    plan.launch(&gpu, &a, &b, &mut d, &mut workspace)?; // enqueued on `stream`

    // A histogram of D over [0, 128) in 256 bins, into u64 counters, on the same stream.
    let histogram = Histogram::new(&gpu, InputType::F32, 256, Some((0.0, 128.0)))?;
    let mut counts = stream.alloc_zeros::<u64>(histogram.bins())?;
    histogram.count_u64(&gpu, &d, &mut counts, &mut HistogramScratch::default())?;

    let counts = stream.clone_dtoh(&counts)?; // the one download: it waits for the stream
    assert_eq!(counts[128], (m * n) as u64); // every element of D is 512 * 0.5 * 0.25 = 64
    println!("{plan}");
    Ok(())
}
