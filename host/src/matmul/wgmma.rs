//! Launch planning for `kernels::matmul::wgmma` (`wgmma_bf16`, `wgmma_tf32`): the persistent
//! grid, the operands in the layouts the TMA and `wgmma` take, and their tensor maps.
//!
//! - BF16: `A` and `B` rounded to BF16 on the GPU (`matmul_to_bf16`, the rounding of
//!   `half::bf16::from_f32`) into rows padded to 16 bytes (the TMA's stride rule), once per
//!   [`DeviceMatrices`], outside the timed launches, like the host-side rounding it stands for;
//!   cuBLAS's BF16 baseline multiplies the same copies. `B` stays row-major (N-major): the
//!   instruction's transpose bit takes it as it is.
//! - TF32: `wgmma` takes only K-major `B`, so every launch first writes `B^T` (`matmul_transpose`)
//!   and, when `k` is not a multiple of 4, `A` with rows padded to 16 bytes (`matmul_pad_rows`):
//!   that time is part of the measured time.
//! - Split-TF32 (`wgmma_tf32x3`): every launch first splits `A` and `B` into `A'` (`m x 3k`) and
//!   `B'` (`3k x n`) with `matmul_split_tf32x3` (part of the measured time), rows padded to 16
//!   bytes, then runs `wgmma_tf32_promoted` on `(m, 3k, n)`: `wgmma_tf32`'s product on 128 x 128
//!   tiles, whose tensor-core accumulation restarts every 96 of `3k` and is added into `f32`
//!   registers (the tensor cores add with truncation, which over all of `3k` drifts far past
//!   FP32's error on same-sign data). The order of the three k-blocks is [`Tf32x3Order`]. The
//!   buffers hold 3x the inputs and are allocated once per [`DeviceMatrices`], after checking
//!   free memory ([`ensure_tf32x3_fits`]).
//!
//! The tensor maps live in global memory (see `kernels::device::tma`), encoded once per
//! [`DeviceMatrices`] with `cuTensorMapEncodeTiled`.

use super::plan::{MatmulDevice, MatmulPlan};
use super::run::DeviceMatrices;
use super::shape::MatmulShape;
use crate::error::{HostError, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use kernels::device::tma::{MAX_BOX_DIM, STRIDE_GRANULE, SWIZZLE_128B_MAX_INNER_BYTES, padded_row_len};
use kernels::matmul::wgmma::{
    BF16_B_BOX_N, BLOCK_K_BYTES, BLOCK_M, BLOCK_N, DYNAMIC_SHARED_BYTES, EPILOGUE_BOX_M, EPILOGUE_BOX_N, Operand,
    PROMOTED_BLOCK_ROWS, PROMOTED_DYNAMIC_SHARED_BYTES, THREADS,
};
use kernels::matmul::{operands, tf32x3};

/// The operands one [`DeviceMatrices`] has prepared for the tensor-core kernels.
#[derive(Default)]
pub struct TensorCoreOperands {
    /// BF16 copies of `A` and `B` and their tensor maps.
    pub bf16: Option<Bf16Operands>,
    /// TF32 buffers (`B^T`, padded `A`) and their tensor maps.
    pub tf32: Option<Tf32Operands>,
    /// `wgmma_tf32`'s buffers (`A` and `B` with rows padded to 16 bytes, when they are not)
    /// and tensor maps.
    pub tf32_rs: Option<Tf32RsOperands>,
    /// `wgmma_tf32x3`'s split operands and their tensor maps.
    pub tf32x3: Option<Tf32x3Operands>,
}

/// The split operands of `wgmma_tf32x3`: `A'` (`m x ld_a`, `ld_a >= 3k`) and `B'` (`3k x
/// ld_b`), rows padded to 16 bytes, their tensor maps, and the guard its scan writes
/// (`kernels::matmul::tf32x3`); the contents are written by every launch.
pub struct Tf32x3Operands {
    a: CudaSlice<f32>,
    ld_a: usize,
    b: CudaSlice<f32>,
    ld_b: usize,
    maps: CudaSlice<u64>,
    guard: CudaSlice<u32>,
}

impl Tf32x3Operands {
    /// `A'` and its row length.
    pub fn a(&self) -> (&CudaSlice<f32>, usize) {
        (&self.a, self.ld_a)
    }

    /// `B'` and its row length.
    pub fn b(&self) -> (&CudaSlice<f32>, usize) {
        (&self.b, self.ld_b)
    }

    /// The guard's words (`kernels::matmul::tf32x3::GUARD_WORDS`) as the last scan left them.
    pub fn guard(&self) -> &CudaSlice<u32> {
        &self.guard
    }
}

/// The order of the three k-blocks of the split operands, which is the order in which
/// `wgmma_tf32_promoted` accumulates the three products (it walks `k` upwards, in runs added
/// into one `f32` sum per element). The small products are about `2^-11` of the big one:
/// accumulated first, their sum stays small and its rounding errors with it.
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
pub const TF32X3_INTERLEAVE: u32 = BLOCK_K_BYTES / 4;

impl Tf32x3Order {
    /// Every order, for comparing them.
    pub const ALL: [Self; 4] =
        [Self::SmallFirst, Self::SmallLast, Self::InterleavedSmallFirst, Self::InterleavedSmallLast];
    /// The order `wgmma_tf32x3` runs.
    pub const DEFAULT: Self = Self::SmallFirst;

    /// `matmul_split_tf32x3`'s `small_parts` for `A'` (`B'` is always [`tf32x3::SPLIT_B`]).
    pub fn a_small_parts(self) -> u32 {
        match self {
            Self::SmallFirst | Self::InterleavedSmallFirst => tf32x3::SPLIT_A_SMALL_FIRST,
            Self::SmallLast | Self::InterleavedSmallLast => tf32x3::SPLIT_A_SMALL_LAST,
        }
    }

    /// `matmul_split_tf32x3`'s `chunk` for inner dimension `k`.
    pub fn chunk(self, k: u32) -> u32 {
        match self {
            Self::SmallFirst | Self::SmallLast => k,
            Self::InterleavedSmallFirst | Self::InterleavedSmallLast => TF32X3_INTERLEAVE,
        }
    }
}

/// `A` (`m x lda`) and `B` (`k x ldb`) with rows padded to 16 bytes, for the dimensions that
/// need it (`None`: the original is used), for `wgmma_tf32`.
pub struct Tf32RsOperands {
    a_padded: Option<CudaSlice<f32>>,
    b_padded: Option<CudaSlice<f32>>,
    ld_a: usize,
    ld_b: usize,
    maps: CudaSlice<u64>,
}

/// `A` (`m x lda`) and `B` (`k x ldb`) rounded to BF16, rows padded with zeros to 16 bytes.
pub struct Bf16Operands {
    /// `A` in BF16 bits.
    pub a: CudaSlice<u16>,
    /// Row length of `a`.
    pub lda: usize,
    /// `B` in BF16 bits.
    pub b: CudaSlice<u16>,
    /// Row length of `b`.
    pub ldb: usize,
    maps: CudaSlice<u64>,
}

/// `B^T` (`n x ldb`) and, when `k` is not a multiple of 4, `A` (`m x lda`), in `f32`.
pub struct Tf32Operands {
    bt: CudaSlice<f32>,
    ld: usize,
    a_padded: Option<CudaSlice<f32>>,
    maps: CudaSlice<u64>,
}

/// One block per SM (a block takes most of an SM's shared memory), at most one per tile:
/// [`THREADS`] threads and [`DYNAMIC_SHARED_BYTES`] of dynamic shared memory. `wgmma_tf32` and
/// `wgmma_tf32_promoted` tile `C^T` (128 columns by 256 rows, or by 128) with `TF32_THREADS`
/// threads; `wgmma_tf32_promoted` takes [`PROMOTED_DYNAMIC_SHARED_BYTES`].
pub fn plan(shape: MatmulShape, device: MatmulDevice, kernel: &str) -> Result<LaunchConfig> {
    use kernels::matmul::wgmma::{KERNEL_TF32, KERNEL_TF32_PROMOTED, PROMOTED_BLOCK_ROWS, TF32_THREADS};
    let (m, n) = (dim(shape.m, "m")? as u64, dim(shape.n, "n")? as u64);
    dim(shape.k, "k")?;
    // Tiles of (rows of C) x (columns of C).
    let ((rows, cols), threads, shared_mem_bytes) = match kernel {
        KERNEL_TF32 => ((BLOCK_N, BLOCK_M), TF32_THREADS, DYNAMIC_SHARED_BYTES),
        KERNEL_TF32_PROMOTED => ((PROMOTED_BLOCK_ROWS, BLOCK_M), TF32_THREADS, PROMOTED_DYNAMIC_SHARED_BYTES),
        _ => ((BLOCK_M, BLOCK_N), THREADS, DYNAMIC_SHARED_BYTES),
    };
    // The kernels count tiles in u32 and step through them by the grid.
    let tiles = m.div_ceil(rows as u64) * n.div_ceil(cols as u64);
    if tiles > i32::MAX as u64 {
        return Err(HostError::InvalidInput(format!(
            "{shape} needs {tiles} tiles of {rows}x{cols}: {kernel} takes at most {}",
            i32::MAX
        )));
    }
    Ok(LaunchConfig {
        grid_dim: ((tiles as u32).min(device.sm_count.max(1)), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes,
    })
}

/// [`plan`] of `wgmma_tf32x3`'s product, `wgmma_tf32_promoted` (which depends on `m` and `n`
/// only), after checking that the tripled `k` fits the kernels' sizes.
pub fn plan_tf32x3(shape: MatmulShape, device: MatmulDevice) -> Result<LaunchConfig> {
    dim(3 * shape.k, "3k (the split operands' inner dimension)")?;
    plan(shape, device, kernels::matmul::wgmma::KERNEL_TF32_PROMOTED)
}

/// `value` as the kernels' `u32`, or an error naming the dimension.
fn dim(value: usize, what: &str) -> Result<u32> {
    u32::try_from(value)
        .ok()
        .filter(|&v| v < i32::MAX as u32)
        .ok_or_else(|| HostError::InvalidInput(format!("{what} = {value} exceeds the tensor-core kernels' 2^31 - 1")))
}

/// A 2-D tensor map's shape: `dims` and `box_dims` innermost first, the row stride in bytes.
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
        problem.map_or(Ok(()), |p| Err(HostError::InvalidInput(format!("tensor map {self:?}: {p}"))))
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
/// lengths (elements): `A` is `m x lda`, K-major; `B` is `k x ldb` N-major (BF16) or `B^T`,
/// `n x ldb` K-major (TF32).
pub fn tensor_maps(shape: MatmulShape, op: Operand, lda: usize, ldb: usize) -> [TensorMap2d; 2] {
    let eb = op.bytes();
    let (m, k, n) = (shape.m as u64, shape.k as u64, shape.n as u64);
    let a = TensorMap2d {
        dims: [k, m],
        row_stride_bytes: (lda * eb as usize) as u64,
        box_dims: [BLOCK_K_BYTES / eb, BLOCK_M],
        elem_bytes: eb,
    };
    let b = match op {
        Operand::Bf16 => TensorMap2d {
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

fn device_address<T>(gpu: &Gpu, buf: &CudaSlice<T>) -> u64 {
    let (ptr, _sync) = buf.device_ptr(gpu.stream());
    ptr
}

/// Encodes the maps and uploads them (128 bytes each, allocation-aligned, so 64-byte aligned).
fn upload_maps(gpu: &Gpu, maps: &[(TensorMap2d, u64, CUtensorMapDataType)]) -> Result<CudaSlice<u64>> {
    let mut words = Vec::with_capacity(16 * maps.len());
    for &(map, base, data_type) in maps {
        words.extend_from_slice(&encode(base, map, data_type)?.opaque);
    }
    gpu.upload(&words)
}

/// The element type of an operand's tensor map.
fn data_type(op: Operand) -> CUtensorMapDataType {
    match op {
        Operand::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Operand::Tf32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    }
}

/// The map `wgmma_bf16` stores `C` through (`m x n` `f32`, boxes of 64 rows by 32 columns),
/// when its rows are a multiple of 16 bytes (the TMA's stride rule; otherwise the kernel stores
/// directly and reads no map).
pub fn c_map(shape: MatmulShape) -> Option<TensorMap2d> {
    shape.n.is_multiple_of(4).then(|| TensorMap2d {
        dims: [shape.n as u64, shape.m as u64],
        row_stride_bytes: (shape.n * 4) as u64,
        box_dims: [EPILOGUE_BOX_N, EPILOGUE_BOX_M],
        elem_bytes: 4,
    })
}

/// A grid-stride launch of `threads`-thread blocks over `elements`, a few waves of blocks.
fn copy_grid(elements: usize, gpu: &Gpu) -> LaunchConfig {
    let blocks = elements.div_ceil(operands::COPY_THREADS as usize).min(gpu.info().sm_count as usize * 16).max(1);
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (operands::COPY_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// The BF16 operands of `mats`, rounded and uploaded with their maps on first use.
pub fn bf16_operands<'a>(gpu: &Gpu, mats: &'a mut DeviceMatrices) -> Result<&'a Bf16Operands> {
    if mats.tensor_core.bf16.is_none() {
        let s = mats.shape;
        let (lda, ldb) = (padded_row_len(s.k, 2), padded_row_len(s.n, 2));
        let bytes = 2 * (s.m * lda + s.k * ldb) as u64;
        gpu.ensure_fits(&format!("the BF16 copies of a {s} matmul's A and B ({bytes} bytes)"), bytes)?;
        let mut a = gpu.zeros::<u16>(s.m * lda)?;
        let mut b = gpu.zeros::<u16>(s.k * ldb)?;
        let func = gpu.function(operands::KERNEL_TO_BF16)?;
        for (src, dst, rows, cols, ld) in [(&mats.a, &mut a, s.m, s.k, lda), (&mats.b, &mut b, s.k, s.n, ldb)] {
            let (rows, cols, ld32) = (rows as u32, cols as u32, ld as u32);
            let mut launch = gpu.stream().launch_builder(&func);
            launch.arg(src).arg(dst).arg(&rows).arg(&cols).arg(&ld32);
            // SAFETY: src holds rows*cols f32 (A or B), dst rows*ld u16 (allocated above), ld >=
            // cols; separate allocations.
            unsafe { launch.launch(copy_grid(rows as usize * ld, gpu)) }?;
        }
        let [map_a, map_b] = tensor_maps(s, Operand::Bf16, lda, ldb);
        let bf16 = data_type(Operand::Bf16);
        let mut list = vec![(map_a, device_address(gpu, &a), bf16), (map_b, device_address(gpu, &b), bf16)];
        if let Some(map_c) = c_map(s) {
            list.push((map_c, device_address(gpu, &mats.c), data_type(Operand::Tf32)));
        }
        let maps = upload_maps(gpu, &list)?;
        mats.tensor_core.bf16 = Some(Bf16Operands { a, lda, b, ldb, maps });
    }
    Ok(mats.tensor_core.bf16.as_ref().expect("prepared above"))
}

/// The TF32 buffers of `mats` and their maps, allocated on first use (their contents are
/// written by every launch).
fn tf32_operands<'a>(gpu: &Gpu, mats: &'a mut DeviceMatrices) -> Result<&'a Tf32Operands> {
    if mats.tensor_core.tf32.is_none() {
        let s = mats.shape;
        let ld = padded_row_len(s.k, 4);
        let pad_a = ld != s.k;
        let bytes = 4 * (s.n * ld + if pad_a { s.m * ld } else { 0 }) as u64;
        gpu.ensure_fits(&format!("the TF32 operand copies of a {s} matmul ({bytes} bytes)"), bytes)?;
        let bt = gpu.zeros::<f32>(s.n * ld)?;
        let a_padded = if pad_a { Some(gpu.zeros::<f32>(s.m * ld)?) } else { None };
        let a_base = device_address(gpu, a_padded.as_ref().unwrap_or(&mats.a));
        let [map_a, map_bt] = tensor_maps(s, Operand::Tf32, ld, ld);
        let f32 = data_type(Operand::Tf32);
        let maps = upload_maps(gpu, &[(map_a, a_base, f32), (map_bt, device_address(gpu, &bt), f32)])?;
        mats.tensor_core.tf32 = Some(Tf32Operands { bt, ld, a_padded, maps });
    }
    Ok(mats.tensor_core.tf32.as_ref().expect("prepared above"))
}

/// The maps of `wgmma_tf32` (`a_box_rows` [`BLOCK_N`]) and `wgmma_tf32_promoted`
/// ([`PROMOTED_BLOCK_ROWS`]): `A` (`m x ld_a`, K-major: the instruction's `B`) in boxes of 32 of
/// K by `a_box_rows` rows, and `B` (`k x ld_b`, N-major: loaded into the instruction's `A`
/// registers) in boxes of 32 columns by 32 of K.
pub fn tensor_maps_rs(shape: MatmulShape, ld_a: usize, ld_b: usize, a_box_rows: u32) -> [TensorMap2d; 2] {
    let (m, k, n) = (shape.m as u64, shape.k as u64, shape.n as u64);
    [
        TensorMap2d { dims: [k, m], row_stride_bytes: (ld_a * 4) as u64, box_dims: [32, a_box_rows], elem_bytes: 4 },
        TensorMap2d {
            dims: [n, k],
            row_stride_bytes: (ld_b * 4) as u64,
            box_dims: [kernels::matmul::wgmma::TF32_B_BOX_N, 32],
            elem_bytes: 4,
        },
    ]
}

/// `wgmma_tf32`'s padded copies (allocated on first use; written by every launch) and maps.
fn tf32_rs_operands<'a>(gpu: &Gpu, mats: &'a mut DeviceMatrices) -> Result<&'a Tf32RsOperands> {
    if mats.tensor_core.tf32_rs.is_none() {
        let s = mats.shape;
        let (ld_a, ld_b) = (padded_row_len(s.k, 4), padded_row_len(s.n, 4));
        let bytes = 4 * (if ld_a != s.k { s.m * ld_a } else { 0 } + if ld_b != s.n { s.k * ld_b } else { 0 }) as u64;
        gpu.ensure_fits(&format!("the padded TF32 operands of a {s} matmul ({bytes} bytes)"), bytes)?;
        let a_padded = if ld_a != s.k { Some(gpu.zeros::<f32>(s.m * ld_a)?) } else { None };
        let b_padded = if ld_b != s.n { Some(gpu.zeros::<f32>(s.k * ld_b)?) } else { None };
        let bases = [
            device_address(gpu, a_padded.as_ref().unwrap_or(&mats.a)),
            device_address(gpu, b_padded.as_ref().unwrap_or(&mats.b)),
        ];
        let [map_a, map_b] = tensor_maps_rs(s, ld_a, ld_b, BLOCK_N);
        let f32 = data_type(Operand::Tf32);
        let maps = upload_maps(gpu, &[(map_a, bases[0], f32), (map_b, bases[1], f32)])?;
        mats.tensor_core.tf32_rs = Some(Tf32RsOperands { a_padded, b_padded, ld_a, ld_b, maps });
    }
    Ok(mats.tensor_core.tf32_rs.as_ref().expect("prepared above"))
}

/// The row lengths of `A'` and `B'` (rows padded to 16 bytes) and the bytes of both.
pub fn tf32x3_layout(shape: MatmulShape) -> (usize, usize, u64) {
    let (ld_a, ld_b) = (padded_row_len(3 * shape.k, 4), padded_row_len(shape.n, 4));
    (ld_a, ld_b, 4 * (shape.m as u64 * ld_a as u64 + 3 * shape.k as u64 * ld_b as u64))
}

/// Checks that the split operands of a `shape` product fit in free device memory: an error
/// naming them and their size otherwise.
pub fn ensure_tf32x3_fits(gpu: &Gpu, shape: MatmulShape) -> Result<()> {
    let bytes = tf32x3_layout(shape).2;
    gpu.ensure_fits(
        &format!(
            "the split-TF32 operands of a {shape} matmul (A' {} x {}, B' {} x {}: {})",
            shape.m,
            3 * shape.k,
            3 * shape.k,
            shape.n,
            crate::error::format_bytes(bytes)
        ),
        bytes,
    )
}

/// `wgmma_tf32x3`'s split operands (allocated on first use; written by every launch) and maps.
fn tf32x3_operands<'a>(gpu: &Gpu, mats: &'a mut DeviceMatrices) -> Result<&'a mut Tf32x3Operands> {
    if mats.tensor_core.tf32x3.is_none() {
        let s = mats.shape;
        ensure_tf32x3_fits(gpu, s)?;
        let (ld_a, ld_b, _) = tf32x3_layout(s);
        let a = gpu.zeros::<f32>(s.m * ld_a)?;
        let b = gpu.zeros::<f32>(3 * s.k * ld_b)?;
        let tripled = MatmulShape::new(s.m, 3 * s.k, s.n)?;
        let [map_a, map_b] = tensor_maps_rs(tripled, ld_a, ld_b, PROMOTED_BLOCK_ROWS);
        let f32 = data_type(Operand::Tf32);
        let maps = upload_maps(gpu, &[(map_a, device_address(gpu, &a), f32), (map_b, device_address(gpu, &b), f32)])?;
        let guard = gpu.zeros::<u32>(tf32x3::GUARD_WORDS)?;
        mats.tensor_core.tf32x3 = Some(Tf32x3Operands { a, ld_a, b, ld_b, maps, guard });
    }
    Ok(mats.tensor_core.tf32x3.as_mut().expect("prepared above"))
}

/// The grid of `matmul_split_tf32x3` for `shape` on `sm_count` SMs: `A` and `B` in one launch
/// (`blockIdx.z`), a few blocks per SM each (`kernels::matmul::tf32x3::split_grid_blocks`).
pub fn split_grid(shape: MatmulShape, sm_count: u32) -> LaunchConfig {
    let widest = shape.k.max(shape.n).min(u32::MAX as usize) as u32;
    let most_rows = shape.m.max(shape.k).min(u32::MAX as usize) as u32;
    let grid_dim = tf32x3::split_grid_blocks(widest, most_rows, sm_count);
    LaunchConfig { grid_dim, block_dim: (tf32x3::SPLIT_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Launches a `wgmma_tf32x3` plan on the matrices: the split of `A` and `B` into blocks in
/// `order` with the guard's range reduction and decision (pass 0), the scaled split where the
/// decision needs one (pass 1), `wgmma_tf32_promoted` on `(m, 3k, n)`, and the plan's FP32
/// fallback, which runs only where the guard refused the split path; all on the stream, with no
/// synchronisation.
pub fn launch_tf32x3(gpu: &Gpu, plan: &MatmulPlan, mats: &mut DeviceMatrices, order: Tf32x3Order) -> Result<()> {
    let fallback = plan.fallback().ok_or_else(|| {
        HostError::InvalidInput(format!("{}: a split-TF32 plan without its FP32 fallback", plan.variant().name()))
    })?;
    let cfg = plan.launch_config();
    let s = mats.shape;
    let k3 = dim(3 * s.k, "3k (the split operands' inner dimension)")?;
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    let product = gpu.function(kernels::matmul::wgmma::KERNEL_TF32_PROMOTED)?;
    product.set_attribute(
        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        cfg.shared_mem_bytes as i32,
    )?;
    let split = gpu.function(tf32x3::KERNEL_SPLIT)?;
    tf32x3_operands(gpu, mats)?;
    let ops = mats.tensor_core.tf32x3.as_mut().expect("prepared above");
    // Pass 0 reduces into zeroed words and counts its blocks from zero.
    gpu.fill_u32_pattern(&mut ops.guard, 0)?;
    let (chunk, parts) = (order.chunk(k), order.a_small_parts());
    let (ld_a, ld_b) = (ops.ld_a as u32, ops.ld_b as u32);
    let grid = split_grid(s, gpu.info().sm_count);
    for pass in [0u32, 1] {
        let mut launch = gpu.stream().launch_builder(&split);
        launch.arg(&mats.a).arg(&mats.b).arg(&mut ops.a).arg(&mut ops.b).arg(&m).arg(&k).arg(&n);
        launch.arg(&ld_a).arg(&ld_b).arg(&parts).arg(&chunk).arg(&pass).arg(&mut ops.guard);
        // SAFETY: A and B hold m*k and k*n f32; A' (m x ld_a, ld_a >= 3k) and B' (3k x ld_b, ld_b
        // >= n), rows padded to 16 bytes, were allocated for this shape by tf32x3_operands,
        // separate allocations; 3k < 2^31 (checked above); chunk >= 1; the guard was zeroed above
        // on this stream before pass 0, and pass 1 follows it; the grid is split_grid's.
        unsafe { launch.launch(grid) }?;
    }
    let mut launch = gpu.stream().launch_builder(&product);
    launch.arg(&ops.maps).arg(&mut mats.c).arg(&m).arg(&k3).arg(&n).arg(&ops.guard);
    // SAFETY: the kernel contract (kernels::matmul::wgmma, wgmma_tf32_promoted) on (m, 3k, n):
    // the maps describe A' and B' (written above on this stream) in the boxes tensor_maps_rs
    // gives for PROMOTED_BLOCK_ROWS; C holds m*n f32 and overlaps neither; the plan gives
    // TF32_THREADS threads and PROMOTED_DYNAMIC_SHARED_BYTES, allowed by the attribute above;
    // the guard was written by the scan above.
    unsafe { launch.launch(cfg) }?;
    let guard = device_address(gpu, &ops.guard);
    super::run::launch_fp32(gpu, fallback, mats, guard)
}

/// Copies `src` (`rows x cols`) into rows of `ld` (`matmul_pad_rows`), on the stream.
fn pad_rows(
    gpu: &Gpu,
    src: &CudaSlice<f32>,
    dst: &mut CudaSlice<f32>,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<()> {
    let pad = gpu.function(operands::KERNEL_PAD)?;
    let (r, c, l) = (rows as u32, cols as u32, ld as u32);
    let mut launch = gpu.stream().launch_builder(&pad);
    launch.arg(src).arg(dst).arg(&r).arg(&c).arg(&l);
    // SAFETY: src holds rows*cols f32, dst rows*ld with ld >= cols; separate allocations.
    unsafe { launch.launch(copy_grid(rows * cols, gpu)) }?;
    Ok(())
}

/// Launches `kernel` (`wgmma_bf16` or `wgmma_tf32`) with `cfg` on the matrices, preparing its
/// operands first (TF32: the transposition, and the padding of `A`, on every launch).
pub fn launch(gpu: &Gpu, kernel: &'static str, cfg: LaunchConfig, mats: &mut DeviceMatrices) -> Result<()> {
    let func = gpu.function(kernel)?;
    let s = mats.shape;
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    func.set_attribute(
        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        cfg.shared_mem_bytes as i32,
    )?;
    if kernel == kernels::matmul::wgmma::KERNEL_TF32 {
        tf32_rs_operands(gpu, mats)?;
        let ops = mats.tensor_core.tf32_rs.as_mut().expect("prepared above");
        if let Some(a_padded) = ops.a_padded.as_mut() {
            pad_rows(gpu, &mats.a, a_padded, s.m, s.k, ops.ld_a)?;
        }
        if let Some(b_padded) = ops.b_padded.as_mut() {
            pad_rows(gpu, &mats.b, b_padded, s.k, s.n, ops.ld_b)?;
        }
        let mut launch = gpu.stream().launch_builder(&func);
        launch.arg(&ops.maps).arg(&mut mats.c).arg(&m).arg(&k).arg(&n);
        // SAFETY: the kernel contract (kernels::matmul::wgmma, wgmma_tf32): the maps describe
        // A and B (or their padded copies, written above on this stream) in the boxes
        // tensor_maps_rs gives; C holds m*n f32 and overlaps none of them; the plan gives
        // TF32_THREADS threads and DYNAMIC_SHARED_BYTES, allowed by the attribute above.
        unsafe { launch.launch(cfg) }?;
        return Ok(());
    }
    if kernel == kernels::matmul::wgmma::KERNEL_BF16 {
        bf16_operands(gpu, mats)?;
    } else {
        tf32_operands(gpu, mats)?;
        let transpose = gpu.function(operands::KERNEL_TRANSPOSE)?;
        let tf32 = mats.tensor_core.tf32.as_mut().expect("prepared above");
        let ld = tf32.ld as u32;
        let tile = operands::TILE;
        let grid = LaunchConfig {
            grid_dim: (n.div_ceil(tile), k.div_ceil(tile), 1),
            block_dim: (tile, operands::TRANSPOSE_ROWS, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = gpu.stream().launch_builder(&transpose);
        launch.arg(&mats.b).arg(&mut tf32.bt).arg(&k).arg(&n).arg(&ld);
        // SAFETY: B holds k*n f32; bt holds n*ld with ld >= k; separate allocations; the block is
        // TILE x TRANSPOSE_ROWS.
        unsafe { launch.launch(grid) }?;
        if let Some(a_padded) = tf32.a_padded.as_mut() {
            let pad = gpu.function(operands::KERNEL_PAD)?;
            let mut launch = gpu.stream().launch_builder(&pad);
            launch.arg(&mats.a).arg(a_padded).arg(&m).arg(&k).arg(&ld);
            // SAFETY: A holds m*k f32; a_padded holds m*ld with ld >= k; separate allocations.
            unsafe { launch.launch(copy_grid(s.m * s.k, gpu)) }?;
        }
    }
    let maps = match (&mats.tensor_core.bf16, &mats.tensor_core.tf32) {
        (Some(b), _) if kernel == kernels::matmul::wgmma::KERNEL_BF16 => &b.maps,
        (_, Some(t)) => &t.maps,
        _ => unreachable!("prepared above"),
    };
    let mut launch = gpu.stream().launch_builder(&func);
    launch.arg(maps).arg(&mut mats.c).arg(&m).arg(&k).arg(&n);
    // SAFETY: the kernel contract (kernels::matmul::wgmma): the maps describe the prepared
    // operands (A, B or B^T in the boxes and swizzle tensor_maps gives; for BF16 with n % 4 == 0
    // also C, mats.c as c_map gives), which stay allocated in `mats` and were written earlier on
    // this stream; C holds m*n f32 and overlaps none of the operands;
    // the plan gives THREADS threads and DYNAMIC_SHARED_BYTES, allowed by the attribute above.
    unsafe { launch.launch(cfg) }?;
    Ok(())
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
        let [a, b] = tensor_maps(s, Operand::Bf16, lda, ldb);
        assert_eq!((a.dims, a.row_stride_bytes, a.box_dims), ([801, 1000], 1616, [64, 128]));
        assert_eq!((b.dims, b.row_stride_bytes, b.box_dims), ([1203, 801], 2416, [64, 64]));
        a.check().unwrap();
        b.check().unwrap();
        let ld = padded_row_len(s.k, 4);
        let [a, bt] = tensor_maps(s, Operand::Tf32, ld, ld);
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
        let [a, b] = tensor_maps_rs(MatmulShape::new(s.m, 3 * s.k, s.n).unwrap(), ld_a, ld_b, PROMOTED_BLOCK_ROWS);
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
    fn split_grid_takes_both_operands_in_a_few_blocks_per_sm() {
        let g = split_grid(MatmulShape::new(4096, 4096, 4096).unwrap(), 132);
        // 4096 columns in 4 blocks of 1024, 264 rows of blocks: 8 blocks per SM and operand.
        assert_eq!((g.grid_dim, g.block_dim), ((4, 264, 2), (tf32x3::SPLIT_THREADS, 1, 1)));
        assert_eq!(split_grid(MatmulShape::new(1, 1, 1).unwrap(), 132).grid_dim, (1, 1, 2));
        let wide = split_grid(MatmulShape::new(3, 5, 10_000_000).unwrap(), 132);
        assert_eq!(wide.grid_dim, (1056, 1, 2));
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
