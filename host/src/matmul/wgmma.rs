//! Launch planning for `kernels::matmul::wgmma` (`wgmma_bf16`, `wgmma_f16`, `wgmma_tf32`,
//! `wgmma_tf32_transposed`, `wgmma_tf32_promoted`): the persistent grid and the tensor maps of
//! the operands in the layouts the TMA and `wgmma` take (which [`super::GemmPlan`] prepares):
//!
//! - BF16 (and F16, `wgmma_f16`): `A` and `B` in BF16 (F16), rows a multiple of 16 bytes (the
//!   TMA's stride rule); `B` stays row-major (N-major): the instruction's transpose bit takes it
//!   as it is.
//! - TF32: `wgmma_tf32` takes `f32` `A` and `B` with rows of 16-byte multiples, `B` through
//!   registers; `wgmma_tf32_transposed` takes `B^T` (TF32 takes no transpose from shared memory).
//! - Split-TF32 (`wgmma_tf32x3`): `A''` (`m x 3k`) and `B''` (`3k x n`) written by
//!   `matmul_split_tf32x3` ([`tf32x3_layout`]), then `wgmma_tf32_promoted` on `(m, 3k, n)`:
//!   `wgmma_tf32`'s product on 128 x 128 tiles, whose tensor-core accumulation restarts every 96
//!   of `3k` and is added into `f32` registers (the tensor cores add with truncation, which over
//!   all of `3k` drifts far past FP32's error on same-sign data). The order of the three k-blocks
//!   is [`Tf32x3Order`].
//!
//! The tensor maps live in global memory (see `kernels::device::tma`), encoded with
//! `cuTensorMapEncodeTiled`.

use super::plan::MatmulDevice;
use super::shape::MatmulShape;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use cudarc::driver::{CudaSlice, LaunchConfig};
use kernels::device::tma::{MAX_BOX_DIM, STRIDE_GRANULE, SWIZZLE_128B_MAX_INNER_BYTES, padded_row_len};
use kernels::matmul::tf32x3;
use kernels::matmul::wgmma::{
    BF16_B_BOX_N, BLOCK_K_BYTES, BLOCK_M, BLOCK_N, DYNAMIC_SHARED_BYTES, EPILOGUE_BOX_M, EPILOGUE_BOX_N, Operand,
    PROMOTED_DYNAMIC_SHARED_BYTES, THREADS, a_box_rows,
};

/// The order of the three k-blocks of the split operands, which is the order in which
/// `wgmma_tf32_promoted` accumulates the three products (it walks `k` upwards, in runs added
/// into one `f32` sum per element). The small products are about `2^-11` of the big one:
/// accumulated first, their sum stays small and its rounding errors with it.
///
/// ```
/// use hopper_kernels::matmul::wgmma::{TF32X3_INTERLEAVE, Tf32x3Order};
/// assert_eq!(Tf32x3Order::DEFAULT, Tf32x3Order::SmallFirst);
/// // Whole blocks of k, or chunks of one stage each.
/// assert_eq!(Tf32x3Order::SmallFirst.chunk(1000), 1000);
/// assert_eq!(Tf32x3Order::InterleavedSmallFirst.chunk(1000), TF32X3_INTERLEAVE);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tf32x3Order {
    /// `[A_small B_big | A_big B_small | A_big B_big]`, each block all of `k`.
    SmallFirst,
    /// `[A_big B_big | A_big B_small | A_small B_big]`.
    SmallLast,
    /// [`Self::SmallFirst`] per chunk of [`TF32X3_INTERLEAVE`] of `k` (one stage of the kernel),
    /// as CUTLASS's 3xTF32 orders its three `mma` per step.
    InterleavedSmallFirst,
    /// [`Self::SmallLast`] per chunk of [`TF32X3_INTERLEAVE`].
    InterleavedSmallLast,
}

/// The `k` per interleaved chunk: `wgmma_tf32`'s 32 of `k` per stage.
///
/// ```
/// use hopper_kernels::matmul::wgmma::TF32X3_INTERLEAVE;
/// // A stage's 128 bytes of f32.
/// assert_eq!(TF32X3_INTERLEAVE, 32);
/// ```
pub const TF32X3_INTERLEAVE: u32 = BLOCK_K_BYTES / 4;

impl Tf32x3Order {
    /// Every order, for comparing them.
    pub const ALL: [Self; 4] =
        [Self::SmallFirst, Self::SmallLast, Self::InterleavedSmallFirst, Self::InterleavedSmallLast];
    /// The order `wgmma_tf32x3` runs.
    pub const DEFAULT: Self = Self::SmallFirst;

    /// `matmul_split_tf32x3`'s `small_parts` for `A'` (`B'` is always [`tf32x3::SPLIT_B`]).
    ///
    /// ```
    /// use hopper_kernels::matmul::wgmma::Tf32x3Order;
    /// // Bit i set: the i-th of the three k-blocks of A' holds A's small halves.
    /// assert_eq!(Tf32x3Order::SmallFirst.a_small_parts(), 0b001);
    /// assert_eq!(Tf32x3Order::InterleavedSmallLast.a_small_parts(), 0b100);
    /// ```
    pub fn a_small_parts(self) -> u32 {
        match self {
            Self::SmallFirst | Self::InterleavedSmallFirst => tf32x3::SPLIT_A_SMALL_FIRST,
            Self::SmallLast | Self::InterleavedSmallLast => tf32x3::SPLIT_A_SMALL_LAST,
        }
    }

    /// `matmul_split_tf32x3`'s `chunk` for inner dimension `k`.
    ///
    /// ```
    /// use hopper_kernels::matmul::wgmma::Tf32x3Order;
    /// assert_eq!(Tf32x3Order::SmallLast.chunk(4096), 4096);
    /// assert_eq!(Tf32x3Order::InterleavedSmallLast.chunk(4096), 32);
    /// ```
    pub fn chunk(self, k: u32) -> u32 {
        match self {
            Self::SmallFirst | Self::SmallLast => k,
            Self::InterleavedSmallFirst | Self::InterleavedSmallLast => TF32X3_INTERLEAVE,
        }
    }
}

/// One block per SM (a block takes most of an SM's shared memory), at most one per tile:
/// [`THREADS`] threads and [`DYNAMIC_SHARED_BYTES`] of dynamic shared memory. `wgmma_tf32` and
/// `wgmma_tf32_promoted` tile `C^T` (128 columns by 256 rows, or by 128) with `TF32_THREADS`
/// threads; `wgmma_tf32_promoted` takes [`PROMOTED_DYNAMIC_SHARED_BYTES`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, wgmma};
/// let bf16 = MatmulVariant::WgmmaBf16.kernel().unwrap();
/// // A persistent grid: one block per SM, of 2 consumer warpgroups and a producer warp ...
/// let big = wgmma::plan(MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H100, bf16)?;
/// assert_eq!((big.grid_dim, big.block_dim), ((132, 1, 1), (288, 1, 1)));
/// // ... and no more blocks than tiles of 128 x 256: 129 x 257 of C is 2 x 2.
/// let small = wgmma::plan(MatmulShape::new(129, 7, 257)?, MatmulDevice::H100, bf16)?;
/// assert_eq!(small.grid_dim, (4, 1, 1));
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, device: MatmulDevice, kernel: &str) -> Result<LaunchConfig> {
    plan_split(shape, device, kernel, 1)
}

/// The block tile of `kernel` over `C`: `(rows, columns)` (`wgmma_tf32` and
/// `wgmma_tf32_promoted` tile `C^T`, so their rows of `C` are the instruction's `n`).
///
/// ```
/// use hopper_kernels::matmul::wgmma;
/// assert_eq!(wgmma::tile_of("wgmma_bf16"), (128, 256));
/// assert_eq!(wgmma::tile_of("wgmma_f16_n128_rows"), (128, 128));
/// assert_eq!(wgmma::tile_of("wgmma_bf16_n64_cluster"), (128, 64));
/// assert_eq!(wgmma::tile_of("wgmma_f16_n128_ld"), (128, 128));
/// assert_eq!(wgmma::tile_of("wgmma_tf32"), (256, 128));
/// assert_eq!(wgmma::tile_of("wgmma_tf32_n128"), (128, 128));
/// assert_eq!(wgmma::tile_of("wgmma_tf32_n16"), (16, 128));
/// assert_eq!(wgmma::tile_of("wgmma_tf32_n64"), (128, 64));
/// assert_eq!(wgmma::tile_of("wgmma_tf32_n64_unaligned_a"), (128, 64));
/// assert_eq!(wgmma::tile_of("wgmma_bf16_n16"), (16, 128));
/// ```
pub fn tile_of(kernel: &str) -> (u32, u32) {
    use kernels::matmul::wgmma::{
        KERNEL_BF16_N16, KERNEL_BF16_N64, KERNEL_BF16_N64_CLUSTER, KERNEL_BF16_N64_LD, KERNEL_BF16_N64_ROWS,
        KERNEL_BF16_N128, KERNEL_BF16_N128_CLUSTER, KERNEL_BF16_N128_LD, KERNEL_BF16_N128_ROWS, KERNEL_F16_N16,
        KERNEL_F16_N64, KERNEL_F16_N64_CLUSTER, KERNEL_F16_N64_LD, KERNEL_F16_N64_ROWS, KERNEL_F16_N128,
        KERNEL_F16_N128_CLUSTER, KERNEL_F16_N128_LD, KERNEL_F16_N128_ROWS, KERNEL_TF32, KERNEL_TF32_N16,
        KERNEL_TF32_N64, KERNEL_TF32_N128, KERNEL_TF32_PROMOTED, N16_BLOCK_ROWS, N64_BLOCK_N, N128_BLOCK_N,
        PROMOTED_BLOCK_ROWS, TF32_N64_BLOCK_COLS, TF32_N64_BLOCK_ROWS,
    };
    // The unaligned-A kernels tile as the kernels they are made of.
    match kernels::matmul::wgmma::aligned_a_kernel(kernel) {
        KERNEL_TF32 => (BLOCK_N, BLOCK_M),
        KERNEL_TF32_N64 => (TF32_N64_BLOCK_ROWS, TF32_N64_BLOCK_COLS),
        KERNEL_TF32_N16 | KERNEL_BF16_N16 | KERNEL_F16_N16 => (N16_BLOCK_ROWS, BLOCK_M),
        KERNEL_TF32_PROMOTED | KERNEL_TF32_N128 => (PROMOTED_BLOCK_ROWS, BLOCK_M),
        KERNEL_BF16_N128
        | KERNEL_BF16_N128_ROWS
        | KERNEL_BF16_N128_CLUSTER
        | KERNEL_BF16_N128_LD
        | KERNEL_F16_N128
        | KERNEL_F16_N128_ROWS
        | KERNEL_F16_N128_CLUSTER
        | KERNEL_F16_N128_LD => (BLOCK_M, N128_BLOCK_N),
        KERNEL_BF16_N64
        | KERNEL_BF16_N64_ROWS
        | KERNEL_BF16_N64_CLUSTER
        | KERNEL_BF16_N64_LD
        | KERNEL_F16_N64
        | KERNEL_F16_N64_ROWS
        | KERNEL_F16_N64_CLUSTER
        | KERNEL_F16_N64_LD => (BLOCK_M, N64_BLOCK_N),
        _ => (BLOCK_M, BLOCK_N),
    }
}

/// Block tiles of `kernel` over `C` for `shape` ([`tile_of`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// // 24 x 171 of C: one tile of 128 x 256 for wgmma_bf16, two of 256 x 128 for wgmma_tf32.
/// let shape = MatmulShape::new(24, 13_368, 171)?;
/// assert_eq!((wgmma::tiles(shape, "wgmma_bf16"), wgmma::tiles(shape, "wgmma_tf32")), (1, 2));
/// // The unaligned-A kernels tile each of A's four classes of rows apart: 513 rows in 5 tiles of 128.
/// let tall = MatmulShape::new(513, 1031, 64)?;
/// assert_eq!((wgmma::tiles(tall, "wgmma_tf32_n64"), wgmma::tiles(tall, "wgmma_tf32_n64_unaligned_a")), (5, 5));
/// assert_eq!(wgmma::tiles(MatmulShape::new(600, 1031, 64)?, "wgmma_tf32_n64_unaligned_a"), 8);
/// # Ok(()) }
/// ```
pub fn tiles(shape: MatmulShape, kernel: &str) -> u64 {
    let (rows, cols) = tile_of(kernel);
    // The unaligned-A kernels tile each class of rows apart (up to 3 more row tiles).
    let row_tiles = if kernels::matmul::wgmma::aligned_a_kernel(kernel) != kernel && shape.m <= u32::MAX as usize {
        kernels::matmul::wgmma::class_row_tiles(shape.m as u32, rows) as u64
    } else {
        (shape.m as u64).div_ceil(rows as u64)
    };
    row_tiles * (shape.n as u64).div_ceil(cols as u64)
}

/// [`plan`] with `k` split in `splits` ranges: a persistent grid over `tiles x splits` work
/// items (one block per SM, at most one per item), each a tile's product over its range of
/// `k`, written as that split's partial product; for a `_cluster` kernel a block per work item,
/// launched in clusters of `splits` ([`cluster_blocks`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, wgmma};
/// // One tile in 42 splits: 42 blocks; 41 tiles in 3 splits: 123.
/// let one = wgmma::plan_split(MatmulShape::new(24, 13_368, 171)?, MatmulDevice::H200, "wgmma_bf16", 42)?;
/// assert_eq!(one.grid_dim, (42, 1, 1));
/// let tall = wgmma::plan_split(MatmulShape::new(5202, 3876, 1)?, MatmulDevice::H200, "wgmma_f16", 3)?;
/// assert_eq!(tall.grid_dim, (123, 1, 1));
/// // A cluster kernel: a block per work item, 32 tiles of 128 x 128 in 4 splits.
/// let cluster = wgmma::plan_split(MatmulShape::new(64, 4096, 4096)?, MatmulDevice::H200, "wgmma_bf16_n128_cluster", 4)?;
/// assert_eq!(cluster.grid_dim, (128, 1, 1));
/// # Ok(()) }
/// ```
pub fn plan_split(shape: MatmulShape, device: MatmulDevice, kernel: &str, splits: u32) -> Result<LaunchConfig> {
    use kernels::matmul::wgmma::{
        KERNEL_TF32, KERNEL_TF32_N64, KERNEL_TF32_N128, KERNEL_TF32_PROMOTED, N16_DYNAMIC_SHARED_BYTES,
        N128_DYNAMIC_SHARED_BYTES, TF32_N64_DYNAMIC_SHARED_BYTES, TF32_THREADS,
    };
    dim(shape.m, "m")?;
    dim(shape.n, "n")?;
    dim(shape.k, "k")?;
    let (rows, cols) = tile_of(kernel);
    // The `_ld` kernels add a producer warpgroup to their rows form's block.
    let ld = kernels::matmul::wgmma::is_ld_kernel(kernel);
    let threads_of = |t: u32| if ld { kernels::matmul::wgmma::LD_THREADS } else { t };
    let (threads, shared_mem_bytes) = match kernels::matmul::wgmma::aligned_a_kernel(kernel) {
        KERNEL_TF32 => (TF32_THREADS, DYNAMIC_SHARED_BYTES),
        KERNEL_TF32_N64 => (TF32_THREADS, TF32_N64_DYNAMIC_SHARED_BYTES),
        _ if rows == kernels::matmul::wgmma::N16_BLOCK_ROWS => (TF32_THREADS, N16_DYNAMIC_SHARED_BYTES),
        KERNEL_TF32_PROMOTED | KERNEL_TF32_N128 => (TF32_THREADS, PROMOTED_DYNAMIC_SHARED_BYTES),
        _ if cols == kernels::matmul::wgmma::N128_BLOCK_N => (threads_of(THREADS), N128_DYNAMIC_SHARED_BYTES),
        _ if cols == kernels::matmul::wgmma::N64_BLOCK_N => {
            (threads_of(THREADS), kernels::matmul::wgmma::N64_DYNAMIC_SHARED_BYTES)
        }
        _ => (THREADS, DYNAMIC_SHARED_BYTES),
    };
    // The kernels count work items (tiles x splits) in u32 and step through them by the grid.
    let tiles = tiles(shape, kernel);
    let work = tiles * splits.max(1) as u64;
    if work > i32::MAX as u64 {
        let split = if splits > 1 { format!(" x {splits} splits of k") } else { String::new() };
        return Err(Error::InvalidArgument(format!(
            "{shape} needs {tiles} tiles of {rows}x{cols}{split}: {kernel} takes at most {} work items",
            i32::MAX
        )));
    }
    // A cluster kernel's blocks each take one work item (its sum reuses the ring).
    let grid = if cluster_blocks(kernel, splits) > 1 { work as u32 } else { (work as u32).min(device.sm_count.max(1)) };
    Ok(LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes })
}

/// Blocks per cluster of `kernel`'s launch in `splits` splits of `k`: `splits` for the
/// `_cluster` kernels (a cluster's blocks are one tile's splits), otherwise 1 (no clusters).
///
/// ```
/// use hopper_kernels::matmul::wgmma::cluster_blocks;
/// assert_eq!(cluster_blocks("wgmma_bf16_n128_cluster", 4), 4);
/// assert_eq!(cluster_blocks("wgmma_bf16_n128_rows", 4), 1);
/// ```
pub fn cluster_blocks(kernel: &str, splits: u32) -> u32 {
    let cluster = kernels::matmul::wgmma::cluster_kernel(kernel).is_some_and(|c| c == kernel);
    if cluster { splits.max(1) } else { 1 }
}

/// [`plan`] of `wgmma_tf32x3`'s product, `wgmma_tf32_promoted` (which depends on `m` and `n`
/// only), after checking that the tripled `k` fits the kernels' sizes.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, wgmma};
/// // C^T in 128 x 128 tiles: 257 columns of C in 3, 129 rows in 2.
/// let cfg = wgmma::plan_tf32x3(MatmulShape::new(129, 7, 257)?, MatmulDevice::H100)?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((6, 1, 1), (384, 1, 1)));
/// // The split operands' inner dimension, 3k, must fit the kernels' sizes.
/// let long = MatmulShape::new(1, 800_000_000, 1)?;
/// assert!(wgmma::plan_tf32x3(long, MatmulDevice::H100).unwrap_err().to_string().contains("3k"));
/// # Ok(()) }
/// ```
pub fn plan_tf32x3(shape: MatmulShape, device: MatmulDevice) -> Result<LaunchConfig> {
    dim(3 * shape.k, "3k (the split operands' inner dimension)")?;
    plan(shape, device, kernels::matmul::wgmma::KERNEL_TF32_PROMOTED)
}

/// `value` as the kernels' `u32`, or an error naming the dimension.
fn dim(value: usize, what: &str) -> Result<u32> {
    u32::try_from(value)
        .ok()
        .filter(|&v| v < i32::MAX as u32)
        .ok_or_else(|| Error::InvalidArgument(format!("{what} = {value} exceeds the tensor-core kernels' 2^31 - 1")))
}

/// A 2-D tensor map's shape: `dims` and `box_dims` innermost first, the row stride in bytes.
///
/// ```
/// use hopper_kernels::matmul::wgmma::TensorMap2d;
/// // 64 x 64 BF16 elements, rows of 128 bytes, copied in one 64 x 64 box.
/// let map = TensorMap2d { dims: [64, 64], row_stride_bytes: 128, box_dims: [64, 64], elem_bytes: 2 };
/// assert!(map.check().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorMap2d {
    /// Elements along the inner (contiguous) and outer dimension.
    pub dims: [u64; 2],
    /// Bytes from one row to the next.
    pub row_stride_bytes: u64,
    /// The box each copy moves, inner first.
    pub box_dims: [u32; 2],
    /// Bytes per element.
    pub elem_bytes: u32,
}

impl TensorMap2d {
    /// Checks the rules `cuTensorMapEncodeTiled` enforces for a 128-byte swizzled map, so that a
    /// violation is our error with a reason instead of the driver's bare `CUDA_ERROR_INVALID_VALUE`.
    ///
    /// ```
    /// use hopper_kernels::matmul::wgmma::TensorMap2d;
    /// let good = TensorMap2d { dims: [64, 64], row_stride_bytes: 128, box_dims: [64, 64], elem_bytes: 2 };
    /// assert!(good.check().is_ok());
    /// let err = |map: TensorMap2d| map.check().unwrap_err().to_string();
    /// assert!(err(TensorMap2d { row_stride_bytes: 130, ..good }).contains("not a multiple of 16"));
    /// assert!(err(TensorMap2d { row_stride_bytes: 112, ..good }).contains("shorter than a row"));
    /// assert!(err(TensorMap2d { box_dims: [128, 64], ..good }).contains("exceed the 128-byte swizzle"));
    /// ```
    pub fn check(&self) -> Result<()> {
        let problem = if !self.row_stride_bytes.is_multiple_of(STRIDE_GRANULE as u64) {
            Some(format!("row stride {} bytes is not a multiple of {STRIDE_GRANULE}", self.row_stride_bytes))
        } else if self.row_stride_bytes < self.dims[0] * self.elem_bytes as u64 {
            Some(format!("row stride {} bytes is shorter than a row", self.row_stride_bytes))
        } else if self.dims.iter().any(|&d| d == 0 || d > 1 << 32) {
            Some(format!("dimensions {:?} outside 1..=2^32", self.dims))
        } else if self.box_dims.iter().any(|&b| b == 0 || b as usize > MAX_BOX_DIM) {
            Some(format!("box {:?} outside 1..={MAX_BOX_DIM}", self.box_dims))
        } else if (self.box_dims[0] * self.elem_bytes) as usize > SWIZZLE_128B_MAX_INNER_BYTES {
            Some(format!("box rows of {} bytes exceed the 128-byte swizzle", self.box_dims[0] * self.elem_bytes))
        } else {
            None
        };
        problem.map_or(Ok(()), |p| Err(Error::InvalidArgument(format!("tensor map {self:?}: {p}"))))
    }
}

/// `cuTensorMapEncodeTiled` of a 2-D tensor at device address `base`, 128-byte swizzled,
/// zeros outside the tensor.
fn encode(base: u64, map: TensorMap2d, data_type: CUtensorMapDataType) -> Result<CUtensorMap> {
    map.check()?;
    let mut out = std::mem::MaybeUninit::<CUtensorMap>::uninit();
    let element_strides = [1u32, 1];
    // SAFETY: every pointer addresses a local array of the rank's length (strides: rank - 1);
    // `base` is a live device allocation of at least dims[1] rows of `row_stride_bytes`, 16-byte
    // aligned (cudaMalloc), and the map outlives no allocation it is used with (it is re-encoded
    // with each DeviceMatrices).
    unsafe {
        sys::cuTensorMapEncodeTiled(
            out.as_mut_ptr(),
            data_type,
            2,
            base as *mut std::ffi::c_void,
            map.dims.as_ptr(),
            [map.row_stride_bytes].as_ptr(),
            map.box_dims.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
        Ok(out.assume_init())
    }
}

/// The tensor maps of `A` and `B` for `op`, given the operands' device addresses and row
/// lengths (elements): `A` is `m x lda`, K-major, in boxes of the kernel's `tile_rows` rows
/// ([`tile_of`]; fewer where `m` is smaller: [`a_box_rows`]); `B` is `k x ldb` N-major (BF16,
/// F16) or `B^T`, `n x ldb` K-major (TF32).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// use kernels::matmul::wgmma::Operand; // the `kernels` crate's operand types
/// // BF16 operands of 1000 x 801 x 1203, rows padded to 16 bytes (808 and 1208 elements).
/// let [a, b] = wgmma::tensor_maps(MatmulShape::new(1000, 801, 1203)?, Operand::Bf16, 808, 1208, 128);
/// assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([801, 1000], 1616, [64, 128]));
/// assert_eq!((b.dims, b.row_stride_bytes, b.box_dims), ([1203, 801], 2416, [64, 64]));
/// assert!(a.check().is_ok() && b.check().is_ok());
/// // F16 operands take the same boxes.
/// assert_eq!(wgmma::tensor_maps(MatmulShape::new(1000, 801, 1203)?, Operand::F16, 808, 1208, 128), [a, b]);
/// // 64 rows of A fill half a tile: a box of 64 rows, none past A's last.
/// let [a, _] = wgmma::tensor_maps(MatmulShape::new(64, 801, 1203)?, Operand::Bf16, 808, 1208, 128);
/// assert_eq!(a.box_dims, [64, 64]);
/// // The 16-row tiles: boxes of 16 rows, or of 8 for 3 rows.
/// let [a, _] = wgmma::tensor_maps(MatmulShape::new(3, 801, 1203)?, Operand::Bf16, 808, 1208, 16);
/// assert_eq!(a.box_dims, [64, 8]);
/// # Ok(()) }
/// ```
pub fn tensor_maps(shape: MatmulShape, op: Operand, lda: usize, ldb: usize, tile_rows: u32) -> [TensorMap2d; 2] {
    let eb = op.bytes();
    let (m, k, n) = (shape.m as u64, shape.k as u64, shape.n as u64);
    let a = TensorMap2d {
        dims: [k, m],
        row_stride_bytes: (lda * eb as usize) as u64,
        box_dims: [BLOCK_K_BYTES / eb, a_box_rows(shape.m as u32, tile_rows)],
        elem_bytes: eb,
    };
    let b = match op {
        Operand::Bf16 | Operand::F16 => TensorMap2d {
            dims: [n, k],
            row_stride_bytes: (ldb * 2) as u64,
            box_dims: [BF16_B_BOX_N, BLOCK_K_BYTES / 2],
            elem_bytes: 2,
        },
        Operand::Tf32 => TensorMap2d {
            dims: [k, n],
            row_stride_bytes: (ldb * 4) as u64,
            box_dims: [BLOCK_K_BYTES / 4, BLOCK_N],
            elem_bytes: 4,
        },
    };
    [a, b]
}

/// Encodes the maps and uploads them (128 bytes each, allocation-aligned, so 64-byte aligned).
pub(super) fn upload_maps(gpu: &Gpu, maps: &[(TensorMap2d, u64, CUtensorMapDataType)]) -> Result<CudaSlice<u64>> {
    let mut words = Vec::with_capacity(16 * maps.len());
    for &(map, base, data_type) in maps {
        words.extend_from_slice(&encode(base, map, data_type)?.opaque);
    }
    gpu.upload(&words)
}

/// The map `wgmma_bf16` and `wgmma_f16` store `C` through (`m x n` `f32`, boxes of 64 rows by 32 columns),
/// when its rows are a multiple of 16 bytes (the TMA's stride rule; otherwise the kernel stores
/// directly and reads no map).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// let c = wgmma::c_map(MatmulShape::new(2100, 70, 300)?).unwrap();
/// assert_eq!((c.dims, c.row_stride_bytes, c.box_dims), ([300, 2100], 1200, [32, 64]));
/// // Rows of 257 floats are not a multiple of 16 bytes: no map, the kernel stores directly.
/// assert!(wgmma::c_map(MatmulShape::new(129, 7, 257)?).is_none());
/// # Ok(()) }
/// ```
pub fn c_map(shape: MatmulShape) -> Option<TensorMap2d> {
    shape.n.is_multiple_of(4).then(|| TensorMap2d {
        dims: [shape.n as u64, shape.m as u64],
        row_stride_bytes: (shape.n * 4) as u64,
        box_dims: [EPILOGUE_BOX_N, EPILOGUE_BOX_M],
        elem_bytes: 4,
    })
}

/// The maps of `wgmma_tf32` (`a_box_rows` [`BLOCK_N`]) and `wgmma_tf32_promoted`
/// ([`PROMOTED_BLOCK_ROWS`](kernels::matmul::wgmma::PROMOTED_BLOCK_ROWS)): `A` (`m x ld_a`, K-major: the instruction's `B`) in boxes of 32 of
/// K by the tile's `tile_rows` rows (fewer where `m` is smaller: [`a_box_rows`]), and `B` (`k x
/// ld_b`, N-major: loaded into the instruction's `A` registers) in boxes of 32 columns by 32 of K.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// // wgmma_tf32's maps of 1000 x 801 x 1203 (rows of 804 and 1204 floats), 256 rows of A per box.
/// let [a, b] = wgmma::tensor_maps_rs(MatmulShape::new(1000, 801, 1203)?, 804, 1204, 256);
/// assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([801, 1000], 3216, [32, 256]));
/// assert_eq!((b.dims, b.row_stride_bytes, b.box_dims), ([1203, 801], 4816, [32, 32]));
/// assert!(a.check().is_ok() && b.check().is_ok());
/// // Four rows: a box of 8 (one swizzle atom), the tile's other rows zero in shared memory.
/// let [a, _] = wgmma::tensor_maps_rs(MatmulShape::new(4, 801, 1203)?, 804, 1204, 16);
/// assert_eq!(a.box_dims, [32, 8]);
/// # Ok(()) }
/// ```
pub fn tensor_maps_rs(shape: MatmulShape, ld_a: usize, ld_b: usize, tile_rows: u32) -> [TensorMap2d; 2] {
    let (m, k, n) = (shape.m as u64, shape.k as u64, shape.n as u64);
    [
        TensorMap2d {
            dims: [k, m],
            row_stride_bytes: (ld_a * 4) as u64,
            box_dims: [32, a_box_rows(shape.m as u32, tile_rows)],
            elem_bytes: 4,
        },
        TensorMap2d {
            dims: [n, k],
            row_stride_bytes: (ld_b * 4) as u64,
            box_dims: [kernels::matmul::wgmma::TF32_B_BOX_N, 32],
            elem_bytes: 4,
        },
    ]
}

/// The maps of the unaligned-`A` TF32 kernels
/// ([`KERNEL_TF32_UNALIGNED_A`](kernels::matmul::wgmma::KERNEL_TF32_UNALIGNED_A)) for `A` at byte
/// address `a` with rows `ld_a` elements apart (any length): four of `A`, one per class of rows
/// ([`class_rows`](kernels::matmul::wgmma::class_rows)), each with the byte address it starts at
/// (the class's first row, rounded down to 16 bytes); `B`'s as for `wgmma_tf32`; and the
/// classes' offsets, the kernels' `a_offsets` argument.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// // 600 x 1031 x 257 from A at 0x10000: rows of 1031 floats, class r starting 3r (mod 4) past a boundary.
/// let (a, b, offsets) = wgmma::tensor_maps_unaligned_a(MatmulShape::new(600, 1031, 257)?, 0x10000, 1031, 260, 128);
/// assert_eq!(offsets, 0x01_02_03_00);
/// let (class1, base1) = a[1];
/// assert_eq!((base1, class1.dims, class1.row_stride_bytes), (0x10000 + 4 * (1031 - 3), [1034, 150], 16 * 1031));
/// assert!(a.iter().all(|&(map, base)| map.check().is_ok() && base % 16 == 0));
/// assert_eq!((b.dims, b.box_dims), ([257, 1031], [32, 32]));
/// # Ok(()) }
/// ```
pub fn tensor_maps_unaligned_a(
    shape: MatmulShape,
    a: u64,
    ld_a: usize,
    ld_b: usize,
    tile_rows: u32,
) -> ([(TensorMap2d, u64); 4], TensorMap2d, u32) {
    use kernels::matmul::wgmma::{class_offsets, class_rows};
    let offsets = class_offsets(a, ld_a as u64);
    let [_, map_b] = tensor_maps_rs(shape, ld_a, ld_b, tile_rows);
    let class = |r: u32| {
        let offset = (offsets >> (8 * r)) & 3;
        let map = TensorMap2d {
            dims: [(shape.k + offset as usize) as u64, class_rows(shape.m as u32, r).max(1) as u64],
            row_stride_bytes: 16 * ld_a as u64,
            box_dims: [32, a_box_rows(shape.m as u32, tile_rows)],
            elem_bytes: 4,
        };
        (map, a + 4 * (r as u64 * ld_a as u64) - 4 * offset as u64)
    };
    ([class(0), class(1), class(2), class(3)], map_b, offsets)
}

/// The row lengths of `A'` and `B'` (rows padded to 16 bytes) and the bytes of both.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, wgmma};
/// // A' is 1000 x 3k (2403, padded to 2404); B' is 3k x 1203 (padded to 1204).
/// let (ld_a, ld_b, bytes) = wgmma::tf32x3_layout(MatmulShape::new(1000, 801, 1203)?);
/// assert_eq!((ld_a, ld_b), (2404, 1204));
/// assert_eq!(bytes, 4 * (1000 * 2404 + 2403 * 1204));
/// # Ok(()) }
/// ```
pub fn tf32x3_layout(shape: MatmulShape) -> (usize, usize, u64) {
    let (ld_a, ld_b) = (padded_row_len(3 * shape.k, 4), padded_row_len(shape.n, 4));
    (ld_a, ld_b, 4 * (shape.m as u64 * ld_a as u64 + 3 * shape.k as u64 * ld_b as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_is_one_block_per_sm_at_most_one_per_tile() {
        let bf16 = kernels::matmul::wgmma::KERNEL_BF16;
        let big = plan(MatmulShape::new(4096, 4096, 4096).unwrap(), MatmulDevice::H100, bf16).unwrap();
        assert_eq!(
            (big.grid_dim, big.block_dim, big.shared_mem_bytes),
            ((132, 1, 1), (288, 1, 1), DYNAMIC_SHARED_BYTES)
        );
        let small = plan(MatmulShape::new(129, 7, 257).unwrap(), MatmulDevice::H100, bf16).unwrap();
        assert_eq!(small.grid_dim, (4, 1, 1));
        // Transposed tiles: 257 columns in 3 tiles of 128, 129 rows in 1 of 256.
        let rs = plan(MatmulShape::new(129, 7, 257).unwrap(), MatmulDevice::H100, kernels::matmul::wgmma::KERNEL_TF32);
        assert_eq!((rs.as_ref().unwrap().grid_dim, rs.unwrap().block_dim), ((3, 1, 1), (384, 1, 1)));
        assert!(plan(MatmulShape::new(1 << 31, 1, 1).unwrap(), MatmulDevice::H100, bf16).is_err());
    }

    #[test]
    fn maps_of_ragged_shapes_pad_rows_to_16_bytes_and_keep_true_dims() {
        let s = MatmulShape::new(1000, 801, 1203).unwrap();
        let (lda, ldb) = (padded_row_len(s.k, 2), padded_row_len(s.n, 2));
        assert_eq!((lda, ldb), (808, 1208));
        let [a, b] = tensor_maps(s, Operand::Bf16, lda, ldb, BLOCK_M);
        assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([801, 1000], 1616, [64, 128]));
        assert_eq!((b.dims, b.row_stride_bytes, b.box_dims), ([1203, 801], 2416, [64, 64]));
        a.check().unwrap();
        b.check().unwrap();
        // F16: the same element size, the same boxes.
        assert_eq!(tensor_maps(s, Operand::F16, lda, ldb, BLOCK_M), [a, b]);
        let ld = padded_row_len(s.k, 4);
        let [a, bt] = tensor_maps(s, Operand::Tf32, ld, ld, BLOCK_M);
        assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([801, 1000], 3216, [32, 128]));
        assert_eq!((bt.dims, bt.row_stride_bytes, bt.box_dims), ([801, 1203], 3216, [32, 256]));
        bt.check().unwrap();
    }

    #[test]
    fn c_map_exists_only_for_rows_of_16_byte_multiples() {
        assert!(c_map(MatmulShape::new(129, 7, 257).unwrap()).is_none());
        assert!(c_map(MatmulShape::new(129, 7, 258).unwrap()).is_none());
        let c = c_map(MatmulShape::new(2100, 70, 300).unwrap()).unwrap();
        assert_eq!((c.dims, c.row_stride_bytes, c.box_dims), ([300, 2100], 1200, [32, 64]));
        c.check().unwrap();
        assert_eq!(c.box_dims[0] * c.box_dims[1] * 4, kernels::matmul::wgmma::EPILOGUE_BOX_BYTES);
    }

    #[test]
    fn split_operands_triple_k_with_rows_padded_to_16_bytes() {
        let s = MatmulShape::new(1000, 801, 1203).unwrap();
        let (ld_a, ld_b, bytes) = tf32x3_layout(s);
        assert_eq!((ld_a, ld_b), (2404, 1204));
        assert_eq!(bytes, 4 * (1000 * 2404 + 2403 * 1204));
        let [a, b] = tensor_maps_rs(
            MatmulShape::new(s.m, 3 * s.k, s.n).unwrap(),
            ld_a,
            ld_b,
            kernels::matmul::wgmma::PROMOTED_BLOCK_ROWS,
        );
        assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([2403, 1000], 9616, [32, 128]));
        assert_eq!((b.dims, b.row_stride_bytes), ([1203, 2403], 4816));
        a.check().unwrap();
        b.check().unwrap();
        // 4096^3: three times A and B, 384 MiB.
        assert_eq!(tf32x3_layout(MatmulShape::new(4096, 4096, 4096).unwrap()).2, 6 * 4096 * 4096 * 4);
    }

    #[test]
    fn tf32x3_plan_takes_one_block_per_128x128_tile_up_to_the_sms_and_refuses_a_tripled_k_past_the_kernels_sizes() {
        let s = MatmulShape::new(129, 7, 257).unwrap();
        let x3 = plan_tf32x3(s, MatmulDevice::H100).unwrap();
        // C^T tiles: 257 columns of C in 3 of 128, 129 rows in 2 of 128.
        assert_eq!(
            (x3.grid_dim, x3.block_dim, x3.shared_mem_bytes),
            ((6, 1, 1), (384, 1, 1), PROMOTED_DYNAMIC_SHARED_BYTES)
        );
        assert_eq!(
            plan_tf32x3(MatmulShape::new(4096, 4096, 4096).unwrap(), MatmulDevice::H100).unwrap().grid_dim,
            (132, 1, 1)
        );
        let long = MatmulShape::new(1, 800_000_000, 1).unwrap();
        assert!(plan(long, MatmulDevice::H100, kernels::matmul::wgmma::KERNEL_TF32).is_ok());
        let err = plan_tf32x3(long, MatmulDevice::H100).unwrap_err().to_string();
        assert!(err.contains("3k"), "{err}");
    }

    #[test]
    fn every_order_pairs_the_blocks_of_a_and_b_into_the_three_products() {
        use tf32x3::{SPLIT_B, tf32x3_position};
        for order in Tf32x3Order::ALL {
            for k in [1u32, 31, 32, 33, 100] {
                let chunk = order.chunk(k);
                // Position j of A' and of B' hold halves of the same k index: one small at most,
                // and each k index gets all three pairings but small * small.
                let mut pairs = vec![[false; 3]; k as usize];
                for kk in 0..k {
                    for part in 0..3 {
                        let j = tf32x3_position(kk, part, k, chunk);
                        assert!(j < 3 * k);
                        let (a_small, b_small) = (order.a_small_parts() >> part & 1, SPLIT_B >> part & 1);
                        assert!(a_small + b_small <= 1, "{order:?}: small * small at {j}");
                        pairs[kk as usize][(2 * a_small + b_small) as usize] = true;
                    }
                }
                assert!(pairs.iter().all(|p| p.iter().all(|&x| x)), "{order:?}, k {k}");
            }
        }
        assert_eq!(Tf32x3Order::SmallFirst.chunk(1000), 1000);
        assert_eq!(Tf32x3Order::InterleavedSmallLast.chunk(1000), 32);
    }

    #[test]
    fn map_check_names_each_rule_the_driver_enforces() {
        let good = TensorMap2d { dims: [64, 64], row_stride_bytes: 128, box_dims: [64, 64], elem_bytes: 2 };
        good.check().unwrap();
        let err = |m: TensorMap2d| m.check().unwrap_err().to_string();
        assert!(err(TensorMap2d { row_stride_bytes: 130, ..good }).contains("multiple of 16"));
        assert!(err(TensorMap2d { row_stride_bytes: 112, ..good }).contains("shorter than a row"));
        assert!(err(TensorMap2d { box_dims: [64, 257], ..good }).contains("box"));
        assert!(err(TensorMap2d { box_dims: [128, 64], ..good }).contains("128-byte swizzle"));
        assert!(err(TensorMap2d { dims: [0, 64], ..good }).contains("dimensions"));
    }
}
