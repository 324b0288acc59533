//! The host's cost of a planned launch: [`LAUNCHES`] back-to-back launches of one planned
//! 256³ GEMM ([`hopper_kernels::matmul::GemmPlan::launch`]: the buffer checks and the enqueue)
//! beside as many cuBLAS SGEMM calls on the same buffers, on the same stream.
//!
//! Only the enqueueing is timed, on the host's clock: the launches go in batches of [`BATCH`]
//! (few enough that the driver's launch queue never fills and blocks the host, which would time
//! the GPU instead), each batch timed alone, the stream drained between batches untimed. The
//! figure is the median batch's microseconds per call.

use super::report::{LaunchOverhead, PerCall};
use crate::gpu::Gpu;
use crate::matmul::{GemmDesc, GemmPlan};
use crate::timing::Timing;
use anyhow::Context;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use std::time::Instant;

/// Launches timed per library.
pub const LAUNCHES: usize = 10_000;
/// Launches per timed batch.
pub const BATCH: usize = 200;
/// The product's side.
pub const SIDE: usize = 256;

/// Times [`LAUNCHES`] planned launches and as many cuBLAS calls (without cuBLAS, its side is
/// absent and says why).
pub fn measure(gpu: &Gpu) -> anyhow::Result<LaunchOverhead> {
    let n = SIDE;
    let stream = gpu.stream();
    let a = stream.clone_htod(&vec![0.5f32; n * n])?;
    let b = stream.clone_htod(&vec![0.25f32; n * n])?;
    let mut d = stream.alloc_zeros::<f32>(n * n)?;
    let plan = GemmPlan::new(gpu, GemmDesc::new(n, n, n)).context("planning the 256^3 GEMM")?;
    let mut workspace = stream.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
    let ours = time_batches(gpu, || plan.launch(gpu, &a, &b, &mut d, &mut workspace).map_err(anyhow::Error::from))
        .context("timing planned launches")?;
    let got = stream.clone_dtoh(&d)?;
    anyhow::ensure!(got.iter().all(|&x| x == 32.0), "the planned launch's product is wrong (want 32 everywhere)");

    let cublas = match CudaBlas::new(stream.clone()) {
        Ok(blas) => {
            let cfg = GemmConfig {
                transa: cublasOperation_t::CUBLAS_OP_N,
                transb: cublasOperation_t::CUBLAS_OP_N,
                m: n as i32,
                n: n as i32,
                k: n as i32,
                alpha: 1.0f32,
                lda: n as i32,
                ldb: n as i32,
                beta: 0.0,
                ldc: n as i32,
            };
            let timing = time_batches(gpu, || {
                // SAFETY: a, b and d hold n x n f32 each, the sizes the configuration names.
                unsafe { blas.gemm(cfg, &b, &a, &mut d) }.map_err(anyhow::Error::from)
            })
            .context("timing cuBLAS calls")?;
            Ok(timing)
        }
        Err(e) => Err(format!("cuBLAS unavailable: {e}")),
    };
    Ok(LaunchOverhead::new(SIDE, LAUNCHES, BATCH, plan.to_string(), ours, cublas))
}

/// Microseconds per call of `launch` over [`LAUNCHES`] calls in batches of [`BATCH`], one
/// sample per batch, after one untimed batch; the stream is drained between batches.
fn time_batches(gpu: &Gpu, mut launch: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<PerCall> {
    for _ in 0..BATCH {
        launch()?;
    }
    gpu.synchronize()?;
    let mut samples = Vec::with_capacity(LAUNCHES / BATCH);
    for _ in 0..LAUNCHES / BATCH {
        let start = Instant::now();
        for _ in 0..BATCH {
            launch()?;
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
        gpu.synchronize()?;
    }
    // Timing's fields read as microseconds here: the samples are.
    let t = Timing::from_samples(samples).context("no batches")?;
    Ok(PerCall { median_us: t.median_ms, min_us: t.min_ms, max_us: t.max_ms })
}
