//! Matrix products on the GPU: the problem shape, the table of kernel variants, and one launcher
//! that every caller (CLI, tests, benchmarks) goes through.

use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use crate::reference::random_matrix;
use crate::timing::rotation_sets;
use crate::{matmul_naive, matmul_tiled, sgemm};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// `C[m x n] = A[m x k] * B[k x n]`, row-major `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MatmulShape {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `A`, rows of `B`.
    pub k: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
}

impl MatmulShape {
    /// A shape whose sizes are all in `1..=u32::MAX` (the kernels take `u32` sizes).
    pub fn new(m: usize, k: usize, n: usize) -> Result<Self> {
        for (name, v) in [("m", m), ("k", k), ("n", n)] {
            if v == 0 {
                return Err(HostError::InvalidInput(format!("{name} is 0: every matrix dimension must be at least 1")));
            }
            if v > u32::MAX as usize {
                return Err(HostError::InvalidInput(format!(
                    "{name} = {v} exceeds the kernels' limit of {}",
                    u32::MAX
                )));
            }
        }
        Ok(Self { m, k, n })
    }

    /// Floating-point operations of one product: `2 * m * k * n`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.k as f64 * self.n as f64
    }

    /// Bytes of `A`, `B` and `C` together: the device memory one product needs.
    pub fn bytes(&self) -> u64 {
        4 * (self.m as u64 * self.k as u64 + self.k as u64 * self.n as u64 + self.m as u64 * self.n as u64)
    }

    /// Element counts of `A`, `B` and `C`.
    pub fn lens(&self) -> (usize, usize, usize) {
        (self.m * self.k, self.k * self.n, self.m * self.n)
    }

    /// Checks that host matrices have this shape's lengths.
    pub fn check_lens(&self, a: usize, b: usize, c: usize) -> Result<()> {
        let (la, lb, lc) = self.lens();
        if (a, b, c) != (la, lb, lc) {
            return Err(HostError::InvalidInput(format!(
                "matrix lengths A={a}, B={b}, C={c} do not match m={}, k={}, n={} (expected {la}, {lb}, {lc})",
                self.m, self.k, self.n
            )));
        }
        Ok(())
    }
}

impl std::fmt::Display for MatmulShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.k, self.n)
    }
}

/// The GPU matmul kernels: the one list that the CLI, the tests and the benchmarks iterate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatmulVariant {
    /// One thread per output, operands straight from global memory.
    Naive,
    /// The Guide's shared-memory tiles, 16x16.
    Tiled16,
    /// The Guide's shared-memory tiles, 32x32.
    Tiled32,
    /// 128x128 block tiles, an 8x8 register tile per thread, 16-byte loads, double-buffered
    /// shared memory.
    Sgemm,
}

impl MatmulVariant {
    /// Every variant, simplest first.
    pub const ALL: [Self; 4] = [Self::Naive, Self::Tiled16, Self::Tiled32, Self::Sgemm];

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Tiled16 => "tiled16",
            Self::Tiled32 => "tiled32",
            Self::Sgemm => "sgemm",
        }
    }

    /// The kernel's PTX symbol.
    pub fn kernel(self) -> &'static str {
        match self {
            Self::Naive => kernels::matmul_naive::KERNEL,
            Self::Tiled16 => kernels::matmul_tiled::KERNEL_TILE16,
            Self::Tiled32 => kernels::matmul_tiled::KERNEL_TILE32,
            Self::Sgemm => kernels::sgemm::KERNEL,
        }
    }

    /// Grid, block and shared memory for `shape`, from the kernel's own launch contract.
    pub fn plan(self, shape: MatmulShape) -> Result<LaunchConfig> {
        match self {
            Self::Naive => matmul_naive::plan(shape),
            Self::Tiled16 => matmul_tiled::plan(16, shape),
            Self::Tiled32 => matmul_tiled::plan(32, shape),
            Self::Sgemm => sgemm::plan(shape),
        }
    }
}

/// Largest grid extent along y (and z) that CUDA accepts.
pub const MAX_GRID_Y: u32 = 65_535;

/// A 2-D grid of `block_x x block_y` blocks covering `n` columns and `m` rows of `C`.
pub fn grid_over_c(shape: MatmulShape, block_x: u32, block_y: u32) -> Result<(u32, u32, u32)> {
    let gx = shape.n.div_ceil(block_x as usize);
    let gy = shape.m.div_ceil(block_y as usize);
    if gy > MAX_GRID_Y as usize || gx > i32::MAX as usize {
        return Err(HostError::InvalidInput(format!(
            "{shape} needs a grid of {gx} x {gy} blocks; CUDA allows at most {} x {MAX_GRID_Y}",
            i32::MAX
        )));
    }
    Ok((gx as u32, gy as u32, 1))
}

/// `A`, `B` and `C` on the device.
pub struct DeviceMatrices {
    /// The shape they hold.
    pub shape: MatmulShape,
    /// `A`, `m x k`.
    pub a: CudaSlice<f32>,
    /// `B`, `k x n`.
    pub b: CudaSlice<f32>,
    /// `C`, `m x n`.
    pub c: CudaSlice<f32>,
}

impl DeviceMatrices {
    /// Uploads `A` and `B` and allocates `C`, after checking lengths and free device memory.
    pub fn upload(gpu: &Gpu, shape: MatmulShape, a: &[f32], b: &[f32]) -> Result<Self> {
        shape.check_lens(a.len(), b.len(), shape.m * shape.n)?;
        gpu.ensure_fits(&format!("a {shape} matmul ({})", format_bytes(shape.bytes())), shape.bytes())?;
        Ok(Self { shape, a: gpu.upload(a)?, b: gpu.upload(b)?, c: gpu.zeros(shape.m * shape.n)? })
    }

    /// Fills `C` with NaN so that any element a kernel fails to write fails the check.
    pub fn poison_c(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_u32_pattern(&mut self.c, f32::NAN.to_bits())
    }
}

/// Random inputs of `shape` on the device, in as many copies as timing needs to rotate through
/// (`timing::rotation_sets`) and free memory holds; `A` and `B` of the first copy are also
/// returned on the host for checking.
pub struct InputSets {
    /// Host `A` of `sets[0]`.
    pub a: Vec<f32>,
    /// Host `B` of `sets[0]`.
    pub b: Vec<f32>,
    /// The device copies, each with fresh random `A` and `B` and its own `C`.
    pub sets: Vec<DeviceMatrices>,
}

impl InputSets {
    /// Draws and uploads the sets, after checking that all of them fit in free device memory.
    pub fn upload(gpu: &Gpu, shape: MatmulShape, rng: &mut impl rand::Rng) -> Result<Self> {
        let info = gpu.info();
        let set_bytes = shape.bytes();
        let free = info.free_memory.saturating_sub(256 << 20);
        let count = rotation_sets(set_bytes, info.l2_bytes).min((free / set_bytes.max(1)).max(1) as usize);
        let what = format!("{count} input set(s) of a {shape} matmul ({} each)", format_bytes(set_bytes));
        gpu.ensure_fits(&what, count as u64 * set_bytes)?;
        let (la, lb, _) = shape.lens();
        let (a, b) = (random_matrix(rng, la), random_matrix(rng, lb));
        let mut sets = vec![DeviceMatrices::upload(gpu, shape, &a, &b)?];
        for _ in 1..count {
            sets.push(DeviceMatrices::upload(gpu, shape, &random_matrix(rng, la), &random_matrix(rng, lb))?);
        }
        Ok(Self { a, b, sets })
    }
}

/// Launches `variant` on the matrices (asynchronously, on the GPU's stream).
pub fn launch(gpu: &Gpu, variant: MatmulVariant, mats: &mut DeviceMatrices) -> Result<()> {
    let cfg = variant.plan(mats.shape)?;
    let func = gpu.function(variant.kernel())?;
    let (m, k, n) = (mats.shape.m as u32, mats.shape.k as u32, mats.shape.n as u32);
    let mut launch = gpu.stream().launch_builder(&func);
    launch.arg(&mats.a).arg(&mats.b).arg(&mut mats.c).arg(&m).arg(&k).arg(&n);
    // SAFETY: the kernel contract (matmul_naive / matmul_tiled / sgemm docs): A, B, C hold m*k,
    // k*n, m*n f32 (checked at upload), C is a separate allocation, and `plan` uses the kernel's
    // block shape.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// Runs `variant` once on poisoned `C` and returns `C`.
pub fn run(gpu: &Gpu, variant: MatmulVariant, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
    mats.poison_c(gpu)?;
    launch(gpu, variant, mats)?;
    gpu.synchronize()?;
    gpu.download(&mats.c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_rejects_zero_and_oversized_dimensions() {
        let err = MatmulShape::new(4, 0, 4).unwrap_err().to_string();
        assert!(err.contains("k is 0"), "{err}");
        assert!(MatmulShape::new(1, 1, u32::MAX as usize + 1).unwrap_err().to_string().contains("n ="));
        assert!(MatmulShape::new(1, 1, 1).is_ok());
    }

    #[test]
    fn shape_counts_flops_and_bytes() {
        let s = MatmulShape::new(1000, 800, 1200).unwrap();
        assert_eq!(s.flops(), 2.0 * 1000.0 * 800.0 * 1200.0);
        assert_eq!(s.bytes(), 4 * (1000 * 800 + 800 * 1200 + 1000 * 1200));
        assert!(s.check_lens(800_000, 960_000, 1_200_000).is_ok());
        assert!(s.check_lens(800_000, 960_001, 1_200_000).unwrap_err().to_string().contains("do not match"));
    }

    #[test]
    fn every_variant_names_a_kernel_the_ptx_declares() {
        for v in MatmulVariant::ALL {
            assert!(kernels::KERNEL_NAMES.contains(&v.kernel()), "{}", v.name());
        }
    }

    #[test]
    fn grid_covers_ragged_edges_with_columns_on_x() {
        let s = MatmulShape::new(17, 5, 33).unwrap();
        assert_eq!(grid_over_c(s, 16, 16).unwrap(), (3, 2, 1));
        let tall = MatmulShape::new(16 * 65_536, 1, 1).unwrap();
        assert!(grid_over_c(tall, 16, 16).unwrap_err().to_string().contains("grid"));
    }
}
