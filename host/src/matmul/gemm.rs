// Over 600 lines with its documentation: about 580 lines of code; the rest are doc comments with
// examples and 100 lines of unit tests.
//! [`GemmPlan`]: a [`GemmDesc`] checked and planned once, then launched on device buffers, on the
//! caller's stream, as often as needed.
//!
//! Planning reduces the descriptor to the problem the product kernels take, `C' = A' B'` with
//! `A'` (`m' x k`), `B'` (`k x n'`) and `C'` (`m' x n'`) row-major:
//! - a column-major `D` is computed as the row-major `D^T = op(B)^T op(A)^T` (cuBLAS's trick in
//!   reverse), so `m' = n`, `n' = m` and the operands swap;
//! - each of `A'` and `B'` is a user operand as it lies, or transposed; where the kernel takes that
//!   memory as it is (element type, leading dimension, alignment), it reads it in place, otherwise
//!   a conversion kernel (`kernels::matmul::convert`) writes the form it takes into the workspace;
//! - the kernel writes `D` itself when `D` is the `f32` row-major packed `C'` and `alpha = 1`,
//!   `beta = 0`; otherwise it writes `C'` into the workspace and the epilogue forms `D = alpha C'
//!   + beta C` in `D`'s type and layout.
//!
//! A batch runs its products one after another on the stream, each at its operands' strides, with
//! the one workspace. Everything the launch needs is looked up at planning: kernel functions,
//! their shared-memory attributes, the workspace's layout; tensor maps are encoded once per set
//! of buffer addresses and kept (they depend on nothing else). A plan captures its launches (one
//! kernel, or a conversion, a split's reduction, the epilogue, split-TF32's passes, a batch) into
//! a CUDA graph at its second launch on the same buffers and stream, and from then on launches
//! that graph: one graph launch's cost to the host instead of each kernel's, which is what a small
//! product's time is when launches follow each other (on the H200's host about 1.7 us against
//! 4.5 us a kernel launched directly). Not while the caller captures the stream: its graph then
//! takes the kernels themselves.

use super::desc::{DType, GemmDesc, Layout, Order};
use super::plan::{
    LD_MAX_K, M1_DECODE_MIN_B_ELEMENTS, M1_FEW_ROWS_MIN_B_ELEMENTS, MatmulDevice, MatmulPlan, N16_MIN_B_ELEMENTS,
    N16_MIN_WAVE_FILL, OperandType, PlanOptions, SHORT_K_TWO_COLUMNS_MAX_OUTPUTS, TileWidth, narrow_or_short_reason,
    packed_rows_copied, plan_with, plan_with_copies, takes_short_k, wave_fill,
};
use super::precision::PrecisionPolicy;
use super::shape::MatmulShape;
use super::variant::MatmulVariant;
use super::wgmma::{self, TensorMap2d};
use super::{Precision, launch};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::CUtensorMapDataType;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use kernels::device::tma::padded_row_len;
use kernels::matmul::convert;
use std::collections::HashMap;
use std::sync::Mutex;

/// How a product kernel takes an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `f32`, rows packed (the CUDA-core kernels, the split-TF32 split).
    F32Packed,
    /// BF16, rows packed (the CUDA-core kernels' BF16 symbols).
    Bf16Packed,
    /// F16, rows packed (the CUDA-core kernels' F16 symbols).
    F16Packed,
    /// `f32`, rows a multiple of 16 bytes (the TMA's stride rule).
    F32Rows16,
    /// `f32` rows of any length, read as they lie (the unaligned-`A` TF32 kernels'
    /// `A`: one product, not a batch of them).
    F32RowsAny,
    /// BF16, rows a multiple of 16 bytes.
    Bf16Rows16,
    /// F16, rows a multiple of 16 bytes.
    F16Rows16,
    /// BF16 rows of any length from any 2-byte boundary, read as they lie (the `_ld` kernels).
    Bf16RowsAny,
    /// F16 rows of any length, read as they lie (the `_ld` kernels).
    F16RowsAny,
}

impl Format {
    fn dtype(self) -> DType {
        match self {
            Self::F32Packed | Self::F32Rows16 | Self::F32RowsAny => DType::F32,
            Self::Bf16Packed | Self::Bf16Rows16 | Self::Bf16RowsAny => DType::Bf16,
            Self::F16Packed | Self::F16Rows16 | Self::F16RowsAny => DType::F16,
        }
    }

    /// Whether the kernel takes rows packed at the row length (a leading dimension of `cols`).
    fn packed(self) -> bool {
        matches!(self, Self::F32Packed | Self::Bf16Packed | Self::F16Packed)
    }

    /// The leading dimension it takes for rows of `cols` elements.
    fn ld(self, cols: usize) -> usize {
        match self {
            Self::F32Packed | Self::Bf16Packed | Self::F16Packed => cols,
            Self::F32Rows16 => padded_row_len(cols, 4),
            Self::F32RowsAny | Self::Bf16RowsAny | Self::F16RowsAny => cols,
            Self::Bf16Rows16 | Self::F16Rows16 => padded_row_len(cols, 2),
        }
    }

    /// Whether the TMA reads the operand at its base address, which must then be 16-byte
    /// aligned (checked at launch).
    fn tma_reads_base(self) -> bool {
        !self.packed() && !matches!(self, Self::Bf16RowsAny | Self::F16RowsAny)
    }

    /// The format of `dtype`'s rows of any length read as they lie by the `_ld` kernels, for the
    /// 16-bit types.
    fn rows_any(dtype: DType) -> Option<Self> {
        match dtype {
            DType::Bf16 => Some(Self::Bf16RowsAny),
            DType::F16 => Some(Self::F16RowsAny),
            DType::F32 => None,
        }
    }

    /// Whether memory of `dtype` with leading dimension `ld` and batch stride `stride` is taken
    /// as it lies (its base address checked at launch where the TMA reads it).
    fn takes_in_place(self, dtype: DType, ld: usize, stride: usize, batch: usize) -> bool {
        let bytes = |x: usize| x * dtype.size();
        if self == Self::F32RowsAny {
            return dtype == DType::F32 && batch == 1;
        }
        if matches!(self, Self::Bf16RowsAny | Self::F16RowsAny) {
            return dtype == self.dtype();
        }
        dtype == self.dtype()
            && (self.packed() || bytes(ld).is_multiple_of(16) && (batch == 1 || bytes(stride).is_multiple_of(16)))
    }

    /// Whether a canonical operand of `cols` columns, `transposed` or not, read from `layout` of
    /// `dims` (the user operand's rows and columns) in `batch` products, is read as it lies:
    /// otherwise a launch first converts it into the workspace.
    fn reads_in_place(self, layout: Layout, dims: (usize, usize), transposed: bool, cols: usize, batch: usize) -> bool {
        let (src_ld, src_stride) = (layout.leading(dims), layout.stride(dims));
        // In place: as it lies, packed for the CUDA-core kernels, any 16-byte stride for the TMA.
        !transposed
            && (src_ld == self.ld(cols) || !self.packed())
            && self.takes_in_place(layout.dtype, src_ld, src_stride, batch)
    }

    /// The tensor cores' format (`Rows16`) and the CUDA-core kernels' (`Packed`) of `dtype`.
    fn of(dtype: DType, tensor_cores: bool) -> Self {
        match (dtype, tensor_cores) {
            (DType::F32, true) => Self::F32Rows16,
            (DType::F32, false) => Self::F32Packed,
            (DType::Bf16, true) => Self::Bf16Rows16,
            (DType::Bf16, false) => Self::Bf16Packed,
            (DType::F16, true) => Self::F16Rows16,
            (DType::F16, false) => Self::F16Packed,
        }
    }
}

/// Which user operand a canonical operand comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    A,
    B,
}

/// One canonical operand (`A'` or `B'`): `rows x cols` row-major in the kernel's format, read
/// from a user operand as it lies or through a conversion into the workspace.
#[derive(Debug, Clone, Copy)]
struct OperandPlan {
    source: Source,
    /// The canonical operand is the source's row-major view transposed.
    transposed: bool,
    rows: usize,
    cols: usize,
    /// The source's leading dimension, elements.
    src_ld: usize,
    format: Format,
    /// The canonical leading dimension.
    ld: usize,
    /// The conversion kernel and the workspace offset it writes at; `None`: read in place.
    convert: Option<(&'static str, usize)>,
}

/// A pair kernel converting both operands in one launch: its name, launch and each operand's
/// grid (`[x_a, y_a, x_b, y_b]`).
type PairConvert = (&'static str, LaunchConfig, [u32; 4]);

/// Where both operands are converted by the same kernel (the same types), the pair kernel that
/// converts both in one launch (one launch's overhead less a product), unless their blocks
/// pass a 1-D grid's limit.
fn pair_convert(left: &OperandPlan, right: &OperandPlan) -> Option<PairConvert> {
    let ((ka, _), (kb, _)) = (left.convert?, right.convert?);
    let pair = convert::convert_pair_kernel(ka).filter(|_| ka == kb)?;
    let (cfg, grids) = super::convert::convert_pair_grid(
        (left.rows, left.cols, left.transposed),
        (right.rows, right.cols, right.transposed),
    )?;
    Some((pair, cfg, grids))
}

/// The epilogue `D = alpha C' + beta C`.
#[derive(Debug, Clone, Copy)]
struct EpiloguePlan {
    kernel: &'static str,
    /// Workspace offset of `C'` (`m' x n'` `f32`).
    acc: usize,
}

/// Workspace regions, bytes from its start (each 256-byte aligned).
#[derive(Debug, Clone, Copy, Default)]
struct Regions {
    split_k: usize,
    tf32x3_a: usize,
    tf32x3_b: usize,
    guard: usize,
    total: usize,
}

/// Grows a layout of 256-byte aligned regions.
struct Allocator(usize);

impl Allocator {
    fn take(&mut self, bytes: usize) -> usize {
        let at = self.0.next_multiple_of(256);
        self.0 = at + bytes;
        at
    }
}

/// A [`GemmDesc`] checked and planned for one GPU; see the [module documentation](self).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{GemmDesc, GemmPlan};
/// let gpu = Gpu::open(0)?;
/// let plan = GemmPlan::new(&gpu, GemmDesc::new(256, 256, 256))?;
/// let stream = gpu.stream();
/// let a = stream.clone_htod(&vec![1.0f32; 256 * 256])?;
/// let b = stream.clone_htod(&vec![0.5f32; 256 * 256])?;
/// let mut d = stream.alloc_zeros::<f32>(256 * 256)?;
/// let mut workspace = stream.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
/// for _ in 0..10 {
///     plan.launch(&gpu, &a, &b, &mut d, &mut workspace)?; // enqueued only
/// }
/// assert_eq!(stream.clone_dtoh(&d)?[0], 128.0);
/// # Ok(()) }
/// ```
pub struct GemmPlan {
    desc: GemmDesc,
    /// The canonical shape `m' x k x n'`.
    shape: MatmulShape,
    kernel: MatmulPlan,
    left: OperandPlan,
    right: OperandPlan,
    /// The right operand is `B'^T` (`n' x k`), for `wgmma_tf32_transposed`.
    right_transposed: bool,
    epilogue: Option<EpiloguePlan>,
    regions: Regions,
    /// Both operands converted by one launch where both are (`pair_convert`).
    pair_convert: Option<PairConvert>,
    functions: HashMap<&'static str, CudaFunction>,
    context: std::sync::Arc<cudarc::driver::CudaContext>,
    /// Tensor maps and replays, by the addresses they were made for.
    cache: Mutex<LaunchCache>,
    precision: Precision,
}

/// What a plan keeps between launches, under one lock: a replay's graph holds the device address
/// of its tensor maps, so both are made and dropped together.
#[derive(Default)]
struct LaunchCache {
    /// Tensor maps by the addresses they describe, uploaded once each, with their device address.
    maps: HashMap<[u64; 3], (CudaSlice<u64>, u64)>,
    /// A multi-launch plan's launches on one set of addresses and one stream: how far their
    /// replay has come.
    replays: HashMap<ReplayKey, Replay>,
}

/// Where a multi-launch plan's launches on one [`ReplayKey`] stand.
enum Replay {
    /// Launched directly once: the first launch makes what a capture cannot (tensor maps, split
    /// counters), the next captures.
    Once,
    /// Captured into a CUDA graph, launched as one.
    Graph(Graph),
    /// The capture failed (a stream that cannot be captured, such as the legacy default stream):
    /// launched directly from then on.
    Direct,
}

/// A captured graph, owned by a plan's [`LaunchCache`].
struct Graph(cudarc::driver::CudaGraph);

// SAFETY: a CUDA graph's handles belong to no thread; CUDA requires the calls on one graph to be
// serialized, and every use of a `Graph` is under its plan's `cache` lock.
unsafe impl Send for Graph {}

/// What a captured launch depends on besides the plan: the addresses of `A`, `B`, `C`, `D`, the
/// workspace and the stream's split counters, and the stream.
type ReplayKey = ([u64; 6], usize);

/// Where split-TF32's operands lie in a workspace: byte offsets of `A''` (`m' x ld_a` `f32`),
/// `B''` (`3k x ld_b`) and the guard's words (`kernels::matmul::tf32x3::GUARD_WORDS` `u32`).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{GemmDesc, GemmPlan};
/// let gpu = Gpu::open(0)?;
/// let plan = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096))?;
/// if let Some(r) = plan.tf32x3_regions() {
///     // A'' holds 3k = 12288 columns per row; the guard lies inside the workspace.
///     assert_eq!((r.ld_a, r.ld_b), (3 * 4096, 4096));
///     assert!(r.guard < plan.workspace_bytes());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tf32x3Regions {
    /// `A''`'s offset, bytes.
    pub a: usize,
    /// `A''`'s leading dimension, elements.
    pub ld_a: usize,
    /// `B''`'s offset, bytes.
    pub b: usize,
    /// `B''`'s leading dimension, elements.
    pub ld_b: usize,
    /// The guard's offset, bytes.
    pub guard: usize,
}

/// Most sets of buffer addresses whose tensor maps a plan keeps.
const MAP_CACHE_ENTRIES: usize = 1024;
/// Most sets of buffer addresses and streams whose launches a plan keeps for replay.
const REPLAY_CACHE_ENTRIES: usize = 64;

impl GemmPlan {
    /// Checks `desc` (the cuBLASLt/CUTLASS `can_implement`: dimensions, leading dimensions,
    /// element types, the kernel's limits) and plans it for `gpu`: nothing is enqueued. Every
    /// refusal names its reason.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout};
    /// let gpu = Gpu::open(0)?;
    /// // D (F16, column-major) = A B for BF16 A and B.
    /// let bf16 = Layout::row_major(DType::Bf16);
    /// let desc = GemmDesc::new(4096, 4096, 4096).a(bf16).b(bf16).d(Layout::col_major(DType::F16));
    /// let plan = GemmPlan::new(&gpu, desc)?;
    /// // A descriptor no kernel can run is refused with its reason, before anything is enqueued.
    /// let short = GemmDesc::new(64, 32, 128).a(Layout::row_major(DType::F32).ld(100));
    /// assert!(matches!(GemmPlan::new(&gpu, short), Err(Error::LeadingDimension { operand: "A", ld: 100, min: 128 })));
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &Gpu, desc: GemmDesc) -> Result<Self> {
        Self::new_for(gpu, desc, MatmulDevice::of_gpu(gpu))
    }

    fn new_for(gpu: &Gpu, desc: GemmDesc, device: MatmulDevice) -> Result<Self> {
        let skeleton = Skeleton::new(&desc, device)?;
        let mut functions = HashMap::new();
        for name in skeleton.kernel_names() {
            functions.insert(name, gpu.function(name)?);
        }
        // The tensor-core kernels take more than 48 KiB of dynamic shared memory: allowed once.
        let cfg = skeleton.kernel.launch_config();
        if skeleton.kernel.variant().needs_tensor_cores() {
            // The plan's kernel and the row-staged form its launch may take instead (the same
            // shared memory).
            for name in std::iter::once(skeleton.kernel.kernel()).chain(skeleton.row_staged_form()) {
                functions[name].set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_mem_bytes as i32,
                )?;
            }
        }
        let Skeleton { desc, shape, kernel, left, right, right_transposed, epilogue, regions, pair_convert, precision } =
            skeleton;
        Ok(Self {
            desc,
            shape,
            kernel,
            left,
            right,
            right_transposed,
            epilogue,
            regions,
            pair_convert,
            functions,
            context: gpu.context().clone(),
            cache: Mutex::new(LaunchCache::default()),
            precision,
        })
    }

    /// The descriptor.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{GemmDesc, GemmPlan}};
    /// let gpu = Gpu::open(0)?;
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(256, 128, 64).batch(4))?;
    /// assert_eq!((plan.desc().k, plan.desc().batch), (64, 4));
    /// # Ok(()) }
    /// ```
    pub fn desc(&self) -> &GemmDesc {
        &self.desc
    }

    /// The product kernel's plan, on the canonical shape ([`GemmPlan::canonical_shape`]).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{GemmDesc, GemmPlan}};
    /// let gpu = Gpu::open(0)?;
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096))?;
    /// println!("{}", plan.kernel_plan()); // the kernel, its grid, its split of k and why
    /// # Ok(()) }
    /// ```
    pub fn kernel_plan(&self) -> &MatmulPlan {
        &self.kernel
    }

    /// `m' x k x n'` of the row-major product the kernels compute (`n x k x m` when `D` is
    /// column-major).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout, MatmulShape};
    /// let gpu = Gpu::open(0)?;
    /// // A column-major D is computed as the row-major D^T: m' = n, n' = m.
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(300, 200, 100).d(Layout::col_major(DType::F32)))?;
    /// assert_eq!(plan.canonical_shape(), MatmulShape::new(200, 100, 300)?);
    /// # Ok(()) }
    /// ```
    pub fn canonical_shape(&self) -> MatmulShape {
        self.shape
    }

    /// The precision of the products: the kernel's for `f32` operands (BF16 or FP16 for `f32`
    /// rounded on the GPU for `wgmma_bf16` or `wgmma_f16`); BF16 and F16 operands are multiplied
    /// exactly and accumulated in `f32`: FP32's, BF16's or FP16's bound, all the accumulation's.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout, Precision, PrecisionPolicy};
    /// let gpu = Gpu::open(0)?;
    /// let fp32 = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096).policy(PrecisionPolicy::Highest))?;
    /// assert_eq!(fp32.precision(), Precision::Fp32);
    /// // BF16 operands are multiplied exactly: BF16's bound is the f32 accumulation's.
    /// let bf16 = Layout::row_major(DType::Bf16);
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096).a(bf16).b(bf16))?;
    /// assert_eq!(plan.precision().tolerance(4096), Precision::Fp32.tolerance(4096));
    /// // F16 operands take wgmma_f16 where BF16 ones take wgmma_bf16.
    /// let f16 = Layout::row_major(DType::F16);
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096).a(f16).b(f16))?;
    /// assert_eq!(plan.precision(), Precision::Fp16);
    /// # Ok(()) }
    /// ```
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Bytes of workspace a launch needs (possibly 0).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{GemmDesc, GemmPlan}};
    /// let gpu = Gpu::open(0)?;
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(512, 512, 512))?;
    /// // At least one byte: cudarc refuses empty allocations.
    /// let workspace = gpu.stream().alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
    /// # Ok(()) }
    /// ```
    pub fn workspace_bytes(&self) -> usize {
        self.regions.total
    }

    /// For a `wgmma_tf32x3` plan, where a launch leaves the split operands and the guard in the
    /// workspace (what the tests read back to check the split bit for bit).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{GemmDesc, GemmPlan, PrecisionPolicy};
    /// let gpu = Gpu::open(0)?;
    /// let fp32 = GemmPlan::new(&gpu, GemmDesc::new(4096, 4096, 4096).policy(PrecisionPolicy::Highest))?;
    /// assert!(fp32.tf32x3_regions().is_none());
    /// # Ok(()) }
    /// ```
    pub fn tf32x3_regions(&self) -> Option<Tf32x3Regions> {
        (self.kernel.variant() == MatmulVariant::WgmmaTf32x3).then(|| {
            let (ld_a, ld_b, _) = wgmma::tf32x3_layout(self.shape);
            Tf32x3Regions { a: self.regions.tf32x3_a, ld_a, b: self.regions.tf32x3_b, ld_b, guard: self.regions.guard }
        })
    }

    /// Enqueues `D = alpha op(A) op(B) + beta D` (`D` read where `beta != 0`) on `gpu`'s stream;
    /// see [`GemmPlan::launch_with_c`].
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{GemmDesc, GemmPlan};
    /// let gpu = Gpu::open(0)?;
    /// let s = gpu.stream();
    /// // D = 2 A^T B + D, A stored 64 x 32.
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(32, 16, 64).transpose_a(true).alpha_beta(2.0, 1.0))?;
    /// let (a, b) = (s.clone_htod(&[1.0f32; 64 * 32])?, s.clone_htod(&[0.5f32; 64 * 16])?);
    /// let mut d = s.clone_htod(&[1.0f32; 32 * 16])?;
    /// let mut workspace = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
    /// plan.launch(&gpu, &a, &b, &mut d, &mut workspace)?;
    /// assert!(s.clone_dtoh(&d)?.iter().all(|&x| x == 65.0)); // 2 * 64 * 0.5 + 1
    /// # Ok(()) }
    /// ```
    pub fn launch<TA: super::GemmElement, TB: super::GemmElement, TD: super::GemmElement>(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<TA>,
        b: &impl DevicePtr<TB>,
        d: &mut impl DevicePtrMut<TD>,
        workspace: &mut impl DevicePtrMut<u8>,
    ) -> Result<()> {
        self.enqueue(gpu, a, b, None::<&CudaSlice<TD>>, d, workspace)
    }

    /// Enqueues `D = alpha op(A) op(B) + beta C` on `gpu`'s stream, after checking the buffers
    /// against the descriptor: element types, lengths for the layouts and batch, the workspace's
    /// size, and that `D` overlaps none of the buffers the launch reads (`C` only by being `D`).
    /// Nothing is synchronized: the call returns once the work is enqueued.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{GemmDesc, GemmPlan};
    /// let gpu = Gpu::open(0)?;
    /// let s = gpu.stream();
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(32, 16, 64).alpha_beta(1.0, -1.0))?; // D = A B - C
    /// let (a, b) = (s.clone_htod(&[1.0f32; 32 * 64])?, s.clone_htod(&[1.0f32; 64 * 16])?);
    /// let c = s.clone_htod(&[4.0f32; 32 * 16])?;
    /// let mut d = s.alloc_zeros::<f32>(32 * 16)?;
    /// let mut workspace = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
    /// plan.launch_with_c(&gpu, &a, &b, &c, &mut d, &mut workspace)?;
    /// assert!(s.clone_dtoh(&d)?.iter().all(|&x| x == 60.0));
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn launch_with_c<TA: super::GemmElement, TB: super::GemmElement, TD: super::GemmElement>(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<TA>,
        b: &impl DevicePtr<TB>,
        c: &impl DevicePtr<TD>,
        d: &mut impl DevicePtrMut<TD>,
        workspace: &mut impl DevicePtrMut<u8>,
    ) -> Result<()> {
        self.enqueue(gpu, a, b, Some(c), d, workspace)
    }

    fn enqueue<TA: super::GemmElement, TB: super::GemmElement, TD: super::GemmElement>(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<TA>,
        b: &impl DevicePtr<TB>,
        c: Option<&impl DevicePtr<TD>>,
        d: &mut impl DevicePtrMut<TD>,
        workspace: &mut impl DevicePtrMut<u8>,
    ) -> Result<()> {
        let desc = &self.desc;
        for (operand, expected, got) in [("A", desc.a.dtype, TA::DTYPE), ("B", desc.b.dtype, TB::DTYPE)] {
            if expected != got {
                return Err(Error::DTypeMismatch { operand, expected, got });
            }
        }
        if desc.d.dtype != TD::DTYPE {
            return Err(Error::DTypeMismatch { operand: "D", expected: desc.d.dtype, got: TD::DTYPE });
        }
        if !std::sync::Arc::ptr_eq(gpu.context(), &self.context) {
            return Err(Error::InvalidArgument("the plan was made for another CUDA context".into()));
        }
        let batch = desc.batch;
        let needed = [
            ("A", a.len(), desc.a.needed_elements(desc.a_rows_cols(), batch)),
            ("B", b.len(), desc.b.needed_elements(desc.b_rows_cols(), batch)),
            ("D", d.len(), desc.d.needed_elements(desc.d_rows_cols(), batch)),
            ("workspace", workspace.len(), self.regions.total),
        ];
        for (buffer, len, needed) in needed {
            if len < needed {
                return Err(Error::BufferTooSmall { buffer, len, needed });
            }
        }
        if let Some(c) = c
            && c.len() < desc.d.needed_elements(desc.d_rows_cols(), batch)
        {
            let needed = desc.d.needed_elements(desc.d_rows_cols(), batch);
            return Err(Error::BufferTooSmall { buffer: "C", len: c.len(), needed });
        }
        let (a_len, b_len, d_len) = (a.len(), b.len(), d.len());
        let c_len = c.map_or(0, |c| c.len());
        let stream = gpu.stream();
        let (a_ptr, _a_sync) = a.device_ptr(stream);
        let (b_ptr, _b_sync) = b.device_ptr(stream);
        let c_ptr = c.map(|c| c.device_ptr(stream));
        let (d_ptr, _d_sync) = d.device_ptr_mut(stream);
        let (ws_ptr, _ws_sync) = workspace.device_ptr_mut(stream);
        let ranges = Ranges {
            a: (a_ptr, a_len * TA::DTYPE.size()),
            b: (b_ptr, b_len * TB::DTYPE.size()),
            d: (d_ptr, d_len * TD::DTYPE.size()),
            workspace: (ws_ptr, self.regions.total),
        };
        ranges.check(c_ptr.as_ref().map(|(p, _)| (*p, c_len * TD::DTYPE.size())))?;
        let c_addr = c_ptr.as_ref().map_or(d_ptr, |(p, _)| *p);
        let at = |i: usize| Addresses {
            a: a_ptr + (i * desc.a.stride(desc.a_rows_cols()) * TA::DTYPE.size()) as u64,
            b: b_ptr + (i * desc.b.stride(desc.b_rows_cols()) * TB::DTYPE.size()) as u64,
            c: c_addr + (i * desc.d.stride(desc.d_rows_cols()) * TD::DTYPE.size()) as u64,
            d: d_ptr + (i * desc.d.stride(desc.d_rows_cols()) * TD::DTYPE.size()) as u64,
            workspace: ws_ptr,
        };
        let mut cache = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if gpu.is_capturing()? {
            return self.enqueue_batch(gpu, &mut cache, batch, at);
        }
        let key = ([a_ptr, b_ptr, c_addr, d_ptr, ws_ptr, gpu.split_counters_address()], stream.cu_stream() as usize);
        match cache.replays.get(&key) {
            Some(Replay::Graph(graph)) => return Ok(graph.0.launch()?),
            Some(Replay::Direct) => {}
            Some(Replay::Once) => match self.capture(gpu, &mut cache, batch, at) {
                Some(graph) => {
                    graph.launch()?;
                    cache.replays.insert(key, Replay::Graph(Graph(graph)));
                    return Ok(());
                }
                None => {
                    cache.replays.insert(key, Replay::Direct);
                }
            },
            None => {
                if cache.replays.len() >= REPLAY_CACHE_ENTRIES {
                    // A caller with fresh buffers at every launch: dropping a graph in flight is
                    // safe (the driver frees it when it completes).
                    cache.replays.clear();
                }
                cache.replays.insert(key, Replay::Once);
            }
        }
        self.enqueue_batch(gpu, &mut cache, batch, at)
    }

    /// The batch's products at `at(i)`, one after another, launched directly.
    fn enqueue_batch(
        &self,
        gpu: &Gpu,
        cache: &mut LaunchCache,
        batch: usize,
        at: impl Fn(usize) -> Addresses,
    ) -> Result<()> {
        (0..batch).try_for_each(|i| self.enqueue_one(gpu, cache, at(i)))
    }

    /// The batch's launches on `at`'s addresses captured into a CUDA graph (nothing runs):
    /// replayed, they cost the host one graph launch (about 1.7 us on the H200's host) instead of
    /// each kernel's (about 4.5 us), where a small product's back-to-back time is the host's, so a
    /// plan of one kernel replays too. `None` where the capture did not begin or complete (a
    /// stream that cannot be captured, a launch that needed to allocate first): nothing was
    /// enqueued, and the caller launches directly, which reports any error of the launches
    /// themselves.
    fn capture(
        &self,
        gpu: &Gpu,
        cache: &mut LaunchCache,
        batch: usize,
        at: impl Fn(usize) -> Addresses,
    ) -> Option<cudarc::driver::CudaGraph> {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        let stream = gpu.stream();
        // Thread-local: other threads' work on the context is not drawn into the capture.
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).ok()?;
        let enqueued = self.enqueue_batch(gpu, cache, batch, at);
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        match (enqueued, graph) {
            (Ok(()), Ok(graph)) => graph,
            _ => None,
        }
    }

    /// One product of the batch, at `at`.
    fn enqueue_one(&self, gpu: &Gpu, cache: &mut LaunchCache, at: Addresses) -> Result<()> {
        // Each operand's address for the product kernel, and its conversion's kernel and source
        // where it has one.
        let operand = |o: &OperandPlan| -> Result<(u64, Option<(&'static str, u64)>)> {
            let src = match o.source {
                Source::A => at.a,
                Source::B => at.b,
            };
            let Some((kernel, offset)) = o.convert else {
                if o.format.tma_reads_base() && !src.is_multiple_of(16) {
                    return Err(Error::Unsupported(format!(
                        "{:?}'s address {src:#x} is not 16-byte aligned, which the tensor-core kernels' TMA needs (allocations are; keep views at 16-byte offsets)",
                        o.source
                    )));
                }
                return Ok((src, None));
            };
            Ok((at.workspace + offset as u64, Some((kernel, src))))
        };
        // The conversion's kernel arguments after its source and destination.
        let shape_args =
            |o: &OperandPlan| (o.rows as u32, o.cols as u32, o.src_ld as u32, o.transposed as u32, o.ld as u32);
        let ((a, a_convert), (b, b_convert)) = (operand(&self.left)?, operand(&self.right)?);
        match (a_convert, b_convert, self.pair_convert) {
            (Some((_, a_src)), Some((_, b_src)), Some((kernel, cfg, [xa, ya, xb, yb]))) => {
                let ((ra, ca, la, ta, lda), (rb, cb, lb, tb, ldb)) = (shape_args(&self.left), shape_args(&self.right));
                let mut builder = gpu.stream().launch_builder(&self.functions[kernel]);
                builder.arg(&a_src).arg(&a).arg(&ra).arg(&ca).arg(&la).arg(&ta).arg(&lda).arg(&xa).arg(&ya);
                builder.arg(&b_src).arg(&b).arg(&rb).arg(&cb).arg(&lb).arg(&tb).arg(&ldb).arg(&xb).arg(&yb);
                // SAFETY: the pair kernel's contract, each operand's as the single kernel's below,
                // with each one's grid (convert_pair_grid) and a 1-D grid of their blocks.
                unsafe { builder.launch(cfg) }?;
            }
            _ => {
                for (o, dst, convert) in [(&self.left, a, a_convert), (&self.right, b, b_convert)] {
                    let Some((kernel, src)) = convert else { continue };
                    let (rows, cols, src_ld, transposed, ld) = shape_args(o);
                    let mut builder = gpu.stream().launch_builder(&self.functions[kernel]);
                    builder.arg(&src).arg(&dst).arg(&rows).arg(&cols).arg(&src_ld).arg(&transposed).arg(&ld);
                    // SAFETY: the convert kernel's contract: the source holds the rows x cols matrix
                    // at its leading dimension (lengths checked against the descriptor), the
                    // destination is the workspace region the plan laid out for rows x ld
                    // elements, disjoint from every operand (checked); the block is TILE x
                    // TILE_ROWS.
                    unsafe { builder.launch(super::convert::convert_grid(o.rows, o.cols, o.transposed)) }?;
                }
            }
        }
        let c = match self.epilogue {
            Some(e) => at.workspace + e.acc as u64,
            None => at.d,
        };
        let product = launch::Product {
            a,
            b,
            c,
            ld_a: self.left.ld,
            ld_b: self.right.ld,
            split_k: at.workspace + self.regions.split_k as u64,
            tf32x3: (at.workspace + self.regions.tf32x3_a as u64, at.workspace + self.regions.tf32x3_b as u64),
            guard: at.workspace + self.regions.guard as u64,
        };
        launch::product(gpu, &self.kernel, &self.functions, &product, self.right_transposed, |addresses, list| {
            self.tensor_maps(gpu, cache, addresses, list)
        })?;
        if let Some(e) = self.epilogue {
            let (m, n) = (self.shape.m as u32, self.shape.n as u32);
            let ld = self.desc.d.leading(self.desc.d_rows_cols()) as u32;
            let (alpha, beta) = (self.desc.alpha, self.desc.beta);
            let mut builder = gpu.stream().launch_builder(&self.functions[e.kernel]);
            builder.arg(&c).arg(&at.c).arg(&at.d).arg(&m).arg(&n).arg(&ld).arg(&ld).arg(&alpha).arg(&beta);
            // SAFETY: the epilogue's contract: C' is the workspace's m' x n' f32 region written
            // above on this stream; C and D hold the m' x n' row-major view at D's leading
            // dimension (lengths checked), D overlaps neither C' nor, but exactly, C.
            unsafe { builder.launch(epilogue_grid(self.shape.m * self.shape.n, gpu.info().sm_count)) }?;
        }
        Ok(())
    }

    /// The device copy of the tensor maps `list` describes, uploaded on first use of these
    /// `addresses`.
    fn tensor_maps(
        &self,
        gpu: &Gpu,
        cache: &mut LaunchCache,
        addresses: [u64; 3],
        list: &[(TensorMap2d, u64, CUtensorMapDataType)],
    ) -> Result<u64> {
        if let Some((m, ptr)) = cache.maps.get(&addresses) {
            // On the stream that uploaded them, stream order covers the upload and the free, and
            // the address kept saves cudarc's event wait and record (a microsecond of the host's
            // time a launch); another stream goes through them.
            if std::sync::Arc::ptr_eq(m.stream(), gpu.stream()) {
                return Ok(*ptr);
            }
            // A capture may not wait on the upload's event, recorded outside it.
            gpu.ensure_not_capturing("a GEMM plan's tensor maps uploaded on another stream")?;
            return Ok(m.device_ptr(gpu.stream()).0);
        }
        gpu.ensure_not_capturing("a GEMM plan's tensor maps for new buffer addresses")?;
        if cache.maps.len() >= MAP_CACHE_ENTRIES {
            // The replays read these maps, and a replay on another stream than the maps' would
            // not wait for their stream-ordered free: everything the plan launched ends first.
            self.context.synchronize()?;
            *cache = LaunchCache::default();
        }
        let uploaded = wgmma::upload_maps(gpu, list)?;
        let ptr = uploaded.device_ptr(gpu.stream()).0;
        cache.maps.insert(addresses, (uploaded, ptr));
        Ok(ptr)
    }
}

impl std::fmt::Display for GemmPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.desc;
        let name = |o: &OperandPlan| match (o.source, o.transposed) {
            (Source::A, false) => "A",
            (Source::A, true) => "A^T",
            (Source::B, false) => "B",
            (Source::B, true) => "B^T",
        };
        write!(f, "{} product{} of {}", d.batch, if d.batch == 1 { "" } else { "s" }, self.shape)?;
        for (label, o) in [("A'", &self.left), ("B'", &self.right)] {
            match (o.convert, self.pair_convert) {
                (Some(_), Some((pair, _, _))) => write!(f, "; {label} = {} via {pair}", name(o))?,
                (Some((kernel, _)), None) => write!(f, "; {label} = {} via {kernel}", name(o))?,
                (None, _) => write!(f, "; {label} = {} in place", name(o))?,
            }
        }
        write!(f, "; {}", self.kernel)?;
        if let Some(e) = self.epilogue {
            write!(f, "; then {} (alpha {}, beta {})", e.kernel, d.alpha, d.beta)?;
        }
        Ok(())
    }
}

/// Device addresses of one product of a batch.
#[derive(Clone, Copy)]
struct Addresses {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    workspace: u64,
}

/// The byte ranges a launch touches.
struct Ranges {
    a: (u64, usize),
    b: (u64, usize),
    d: (u64, usize),
    workspace: (u64, usize),
}

impl Ranges {
    /// Refuses overlaps where a launch writes one buffer while it reads another: `D` and the
    /// workspace against `A`, `B` and each other; `C` against `D` unless it is `D` itself.
    fn check(&self, c: Option<(u64, usize)>) -> Result<()> {
        let overlap =
            |(p, n): (u64, usize), (q, m): (u64, usize)| n > 0 && m > 0 && p < q + m as u64 && q < p + n as u64;
        let written = [("D", self.d), ("workspace", self.workspace)];
        let mut read = vec![("A", self.a), ("B", self.b)];
        if let Some(c) = c
            && c.0 != self.d.0
        {
            read.push(("C", c));
        }
        for (w, wr) in written {
            for &(r, rr) in &read {
                if overlap(wr, rr) {
                    return Err(Error::Overlap { written: w, read: r });
                }
            }
        }
        if overlap(self.d, self.workspace) {
            return Err(Error::Overlap { written: "D", read: "workspace" });
        }
        Ok(())
    }
}

/// The epilogue's grid-stride launch over `elements`.
fn epilogue_grid(elements: usize, sm_count: u32) -> LaunchConfig {
    let threads = convert::EPILOGUE_THREADS as usize;
    let blocks = elements.div_ceil(threads).clamp(1, 16 * sm_count.max(1) as usize) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (convert::EPILOGUE_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// What a plan is made of, before the GPU's functions are looked up: pure, so that planning is
/// tested (and `--plan` works) without a GPU.
struct Skeleton {
    desc: GemmDesc,
    shape: MatmulShape,
    kernel: MatmulPlan,
    left: OperandPlan,
    right: OperandPlan,
    right_transposed: bool,
    epilogue: Option<EpiloguePlan>,
    regions: Regions,
    /// Both operands converted by one launch where both are ([`pair_convert`]).
    pair_convert: Option<PairConvert>,
    precision: Precision,
}

impl Skeleton {
    fn new(desc: &GemmDesc, device: MatmulDevice) -> Result<Self> {
        check(desc)?;
        // The canonical problem: D row-major, or D^T = op(B)^T op(A)^T.
        let col_major = desc.d.order == Order::ColMajor;
        let (m, n, k) = if col_major { (desc.n, desc.m, desc.k) } else { (desc.m, desc.n, desc.k) };
        let shape = MatmulShape::new(m, k, n)?;
        // op(X) = S_X or S_X^T, where S_X is X's memory read row-major at its leading dimension.
        let flips = |t: bool, l: &Layout| t ^ (l.order == Order::ColMajor);
        let (a_t, b_t) = (flips(desc.transpose_a, &desc.a), flips(desc.transpose_b, &desc.b));
        let (left_src, left_t, right_src, right_t) =
            if col_major { (Source::B, !b_t, Source::A, !a_t) } else { (Source::A, a_t, Source::B, b_t) };
        let inputs = desc.a.dtype;
        let layout_of = |s: Source| match s {
            Source::A => (desc.a, desc.a_rows_cols()),
            Source::B => (desc.b, desc.b_rows_cols()),
        };
        let copies_in = |format: Format| {
            [(left_src, left_t, k), (right_src, right_t, n)]
                .into_iter()
                .filter(|&(source, transposed, cols)| {
                    let (layout, dims) = layout_of(source);
                    !format.reads_in_place(layout, dims, transposed, cols, desc.batch)
                })
                .count()
        };
        let cuda_core_copies = copies_in(Format::of(inputs, false));
        let tma_copies = copies_in(Format::of(inputs, true));
        let tma_copy_more = tma_copies > cuda_core_copies;
        // The 16-bit tile kernels' `_ld` forms read rows of any length as they lie up to
        // LD_MAX_K, where both operands are untransposed (MatmulPlan::with_ld): planned as
        // copying nothing, unless the kernel chosen then has no such form (128 x 256 tiles),
        // which is planned again as copying.
        let ld_format = Format::rows_any(inputs).filter(|&f| k <= LD_MAX_K && copies_in(f) == 0);
        let ld_copy_more = ld_format.map_or(tma_copy_more, |f| copies_in(f) > cuda_core_copies);
        let (mut variant, mut kernel) = choose_kernel(desc, shape, device, inputs, ld_copy_more)?;
        // Where the TMA stores C' (rows of 16-byte multiples) and k is short enough that the
        // store is the time, the 128 x 256 tiles' TMA stores outrun the `_ld` form's 128 x 128
        // tiles by more than the copy costs (H200, BF16, 8840x28x6664: 0.074 ms with the copy of
        // A against 0.102 on the `_ld` form; cuBLASLt 0.097).
        let store_bound_tma =
            super::wgmma::c_map(shape).is_some() && k <= kernels::matmul::wgmma::ROW_ORDER_MAX_K as usize;
        let no_ld_form =
            ld_copy_more != tma_copy_more && variant.needs_tensor_cores() && kernel.with_ld(device).is_none();
        if no_ld_form && store_bound_tma {
            (variant, kernel) = choose_kernel(desc, shape, device, inputs, tma_copy_more)?;
        } else if no_ld_form {
            // The 128 x 128 tiles' `_ld` form where the planner's own tiles have none: on the
            // H200 it beat both those tiles' copy and `short_k` (BF16, µs: 7700x26x433 11.2
            // against 13.6 and 15.7, 2455x19x3667 23.1 against 24.6 and 25.4, 8841x28x6665 140.8
            // against 151.7); unless a tile was asked for or it splits k, planned as copying.
            let n128 = (desc.tile.is_none())
                .then(|| choose_kernel(&desc.tile(Some(TileWidth::N128)), shape, device, inputs, ld_copy_more))
                .transpose()?
                .filter(|(_, p)| p.with_ld(device).is_some());
            (variant, kernel) = match n128 {
                Some((v, p)) => {
                    let why = p.reason().replacen(
                        "n128 tiles requested",
                        "tiles of 128x128, whose _ld form reads rows of any length as they lie (the planner's \
                         128x256 tiles would copy them first)",
                        1,
                    );
                    (v, p.with_reason(why))
                }
                None => choose_kernel(desc, shape, device, inputs, tma_copy_more)?,
            };
        }
        let (left_format, right_format, right_transposed) = formats(variant, kernel.operand_type());
        // TF32's tile kernels read an f32 A' whose rows the TMA cannot take as they lie in four
        // classes of rows instead of copying it, where it has the rows for that.
        let (left_layout, left_dims) = layout_of(left_src);
        let unaligned = variant == MatmulVariant::WgmmaTf32
            && !left_format.reads_in_place(left_layout, left_dims, left_t, k, desc.batch)
            && Format::F32RowsAny.reads_in_place(left_layout, left_dims, left_t, k, desc.batch);
        let (kernel, left_format) = match kernel.with_unaligned_a(device).filter(|_| unaligned) {
            Some(in_place) => (in_place, Format::F32RowsAny),
            None => (kernel, left_format),
        };
        // The 16-bit tile kernels' `_ld` forms read both operands as they lie (`ld_format`)
        // where the TMA would first need a copy of either (a 16-bit tile kernel's formats are
        // `Format::of(inputs, true)`).
        let (kernel, left_format, right_format) = match (ld_format, kernel.with_ld(device)) {
            (Some(f), Some(ld)) if tma_copies > 0 => (ld, f, f),
            _ => (kernel, left_format, right_format),
        };
        let precision = match inputs {
            DType::F32 => kernel.precision(),
            DType::Bf16 if variant.precision() == Precision::Bf16 => Precision::Bf16,
            DType::F16 if variant.precision() == Precision::Fp16 => Precision::Fp16,
            // 16-bit operands are exact in TF32 and in f32: the products are exact.
            DType::Bf16 | DType::F16 => Precision::Fp32,
        };
        let mut alloc = Allocator(0);
        let mut operand = |source: Source, transposed: bool, rows: usize, cols: usize, format: Format| {
            let (layout, dims) = layout_of(source);
            let src_ld = layout.leading(dims);
            let ld = format.ld(cols);
            let convert = if format.reads_in_place(layout, dims, transposed, cols, desc.batch) {
                None
            } else {
                let kernel = convert::convert_kernel(layout.dtype.name(), format.dtype().name()).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "{variant} takes {} operands; {source:?} is {}",
                        format.dtype(),
                        layout.dtype
                    ))
                })?;
                Some((kernel, alloc.take(rows * ld * format.dtype().size())))
            };
            let ld = if convert.is_some() { ld } else { src_ld };
            Ok::<_, Error>(OperandPlan { source, transposed, rows, cols, src_ld, format, ld, convert })
        };
        let left = operand(left_src, left_t, m, k, left_format)?;
        // wgmma_tf32_transposed takes B'^T (n' x k).
        let right = if right_transposed {
            operand(right_src, !right_t, n, k, right_format)?
        } else {
            operand(right_src, right_t, k, n, right_format)?
        };
        let direct = desc.d.dtype == DType::F32
            && desc.d.leading(desc.d_rows_cols()) == n
            && desc.alpha == 1.0
            && desc.beta == 0.0;
        let epilogue = if direct {
            None
        } else {
            let kernel = convert::epilogue_kernel(desc.d.dtype.name()).expect("an epilogue per output type");
            Some(EpiloguePlan { kernel, acc: alloc.take(m * n * 4) })
        };
        let mut regions = Regions { split_k: alloc.take(4 * kernel.workspace_floats()), ..Regions::default() };
        if variant == MatmulVariant::WgmmaTf32x3 {
            let (ld_a, ld_b, _) = wgmma::tf32x3_layout(shape);
            regions.tf32x3_a = alloc.take(4 * m * ld_a);
            regions.tf32x3_b = alloc.take(4 * 3 * k * ld_b);
            regions.guard = alloc.take(4 * kernels::matmul::tf32x3::GUARD_WORDS);
        }
        regions.total = alloc.0;
        let pair_convert = pair_convert(&left, &right);
        Ok(Self {
            desc: *desc,
            shape,
            kernel,
            left,
            right,
            right_transposed,
            epilogue,
            regions,
            pair_convert,
            precision,
        })
    }

    /// The row-staged form of a kernel that stores C' through the TMA, which a launch runs
    /// instead where D's address is not 16-byte aligned (`launch::product`); `None` for a kernel
    /// that has none (it is its own).
    fn row_staged_form(&self) -> Option<&'static str> {
        let kernel = self.kernel.kernel();
        Some(kernels::matmul::wgmma::rows_kernel(kernel)).filter(|&rows| rows != kernel)
    }

    /// Every kernel a launch of this plan may run.
    fn kernel_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = launch::kernels_of(&self.kernel);
        names.extend(self.row_staged_form());
        match self.pair_convert {
            Some((pair, _, _)) => names.push(pair),
            None => names.extend(self.left.convert.iter().chain(&self.right.convert).map(|(k, _)| *k)),
        }
        names.extend(self.epilogue.iter().map(|e| e.kernel));
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// The descriptor's own rules: dimensions, leading dimensions, element types, the kernels' `u32`
/// sizes.
fn check(desc: &GemmDesc) -> Result<()> {
    for (name, v) in [("m", desc.m), ("n", desc.n), ("k", desc.k), ("batch", desc.batch)] {
        if v == 0 {
            return Err(Error::ZeroDimension { name });
        }
        if v > u32::MAX as usize {
            return Err(Error::LimitExceeded { what: name.into(), value: v as u64, limit: u32::MAX as u64 });
        }
    }
    for (operand, layout, dims) in
        [("A", &desc.a, desc.a_rows_cols()), ("B", &desc.b, desc.b_rows_cols()), ("D", &desc.d, desc.d_rows_cols())]
    {
        let min = match layout.order {
            Order::RowMajor => dims.1,
            Order::ColMajor => dims.0,
        };
        let ld = layout.leading(dims);
        if ld < min {
            return Err(Error::LeadingDimension { operand, ld, min });
        }
        if ld > u32::MAX as usize {
            return Err(Error::LimitExceeded {
                what: format!("{operand}'s leading dimension"),
                value: ld as u64,
                limit: u32::MAX as u64,
            });
        }
        let needed = layout.needed_elements(dims, desc.batch);
        if needed as u128 * layout.dtype.size() as u128 >= (1u128 << 62) {
            return Err(Error::LimitExceeded {
                what: format!("{operand}'s elements"),
                value: needed as u64,
                limit: (1u64 << 62) / layout.dtype.size() as u64,
            });
        }
    }
    if desc.a.dtype != desc.b.dtype {
        return Err(Error::Unsupported(format!(
            "A is {} and B is {}: the kernels multiply operands of one type",
            desc.a.dtype, desc.b.dtype
        )));
    }
    if !desc.alpha.is_finite() || !desc.beta.is_finite() {
        return Err(Error::InvalidArgument(format!("alpha = {} and beta = {} must be finite", desc.alpha, desc.beta)));
    }
    Ok(())
}

/// The product kernel for the canonical shape: the descriptor's, or `auto`'s for the operands'
/// type. `f32` plans under its policy. BF16 and F16 take the tensor cores (`wgmma_bf16`,
/// `wgmma_f16`; with `m' <= 16` and rows of `B'` in whole 16-byte vectors their 16-row tiles
/// where those fill the SMs ([`N16_MIN_WAVE_FILL`]), else `decode_bf16` or `decode_f16`),
/// except one row of a `B'` of [`M1_FEW_ROWS_MIN_B_ELEMENTS`] or more, which `few_rows` streams
/// faster on the CUDA cores, and one row of fewer than [`M1_DECODE_MIN_B_ELEMENTS`], which
/// takes the CUDA-core plan below,
/// unless [`narrow_or_short_reason`] gives a reason (a side or `k` of at most 16) or `short_k`
/// takes `k` of 17 to 32 on rows the tensor-core plan alone would copy ([`takes_short_k`]), and otherwise
/// the CUDA-core kernels on the 16-bit operands as they lie (exact products, the FP32 bound);
/// `f32` under `medium` leaves its one TF32 pass for the FP32 kernels by that rule, by the rule
/// for small products (decided by the descriptor's layouts: `tensor_cores_copy_more`, the
/// tensor-core plan would convert more operands before its launch than the CUDA-core kernels
/// would) or by its shape's. A named 16-bit kernel takes its
/// own type or `f32` (rounded to it on the GPU), never the other 16-bit type; a named CUDA-core
/// kernel that reads 16-bit operands (`sgemm`, `few_rows`, `few_cols`, `short_k`) reads them as they lie.
fn choose_kernel(
    desc: &GemmDesc,
    shape: MatmulShape,
    device: MatmulDevice,
    inputs: DType,
    tensor_cores_copy_more: bool,
) -> Result<(MatmulVariant, MatmulPlan)> {
    let sixteen_bit = match inputs {
        DType::F32 => None,
        DType::Bf16 => Some(OperandType::Bf16),
        DType::F16 => Some(OperandType::F16),
    };
    // The CUDA-core kernels read 16-bit operands as they lie (on_operands below); few_rows
    // splits k by the blocks its kernel of that type keeps on an SM.
    let operands = sixteen_bit.unwrap_or_default();
    let options = PlanOptions { policy: desc.policy, split: desc.split_k, tile: desc.tile, operands };
    if desc.variant != MatmulVariant::Auto || inputs == DType::F32 {
        if desc.variant.precision() == Precision::Bf16 && inputs == DType::F16 {
            return Err(Error::Unsupported(format!(
                "{} multiplies BF16 operands; F16 ones would lose 3 mantissa bits: use wgmma_f16 or auto",
                desc.variant
            )));
        }
        if desc.variant.precision() == Precision::Fp16 && inputs == DType::Bf16 {
            return Err(Error::Unsupported(format!(
                "{} multiplies F16 operands; BF16 ones beyond F16's range (65504) would overflow: use wgmma_bf16, \
                 decode_bf16 or auto",
                desc.variant
            )));
        }
        // medium's one TF32 pass leaves small products to the FP32 kernels where packed rows of
        // the shape would be copied (plan_with's rule) or the descriptor's layouts would be.
        let copy_more = packed_rows_copied(shape) || tensor_cores_copy_more;
        let mut plan = plan_with_copies(desc.variant, shape, device, options, copy_more)?;
        let reads_16_bit = matches!(
            plan.variant(),
            MatmulVariant::Sgemm | MatmulVariant::FewRows | MatmulVariant::FewCols | MatmulVariant::ShortK
        );
        if let (Some(t), true) = (sixteen_bit, reads_16_bit) {
            plan = plan.on_operands(t)?;
        }
        return Ok((plan.variant(), plan));
    }
    let t = sixteen_bit.expect("f32 operands are planned above");
    // No rule for small products here: a 16-bit copy is cheap and the tensor cores beat sgemm on
    // 16-bit operands at every small size measured (plan::CUDA_CORE_MAX_MACS).
    // The CUDA-core plan of the 16-bit operands: the FP32 planner's kernel on them.
    let policy = PrecisionPolicy::Highest;
    let cuda_core_plan = || plan_with(MatmulVariant::Auto, shape, device, PlanOptions { policy, ..options });
    let narrow_or_short = narrow_or_short_reason(shape, device);
    // Past narrow_or_short_reason's k (and only with tensor cores, which it also decides), short_k
    // still takes rows the tensor cores alone would copy first, where the CUDA-core planner then
    // takes it itself (few_cols comes first for n <= 32).
    let short_k_plan = (narrow_or_short.is_none() && tensor_cores_copy_more && takes_short_k(shape))
        .then(cuda_core_plan)
        .and_then(Result::ok)
        .filter(|p| p.variant() == MatmulVariant::ShortK);
    let cuda_cores = narrow_or_short.or_else(|| {
        short_k_plan.as_ref().map(|_| {
            format!(
                "k = {} <= {}, k or n not a multiple of 4 and C of at most {SHORT_K_TWO_COLUMNS_MAX_OUTPUTS} elements: \
                 short_k writes C in one launch where the tensor cores would first copy both operands",
                shape.k,
                kernels::matmul::short_k::MAX_K
            )
        })
    });
    let (tiles_variant, decode_variant, kind) = if inputs == DType::Bf16 {
        (MatmulVariant::WgmmaBf16, MatmulVariant::DecodeBf16, "BF16")
    } else {
        (MatmulVariant::WgmmaF16, MatmulVariant::DecodeF16, "F16")
    };
    // The planner's reason of a named variant opens with "{variant} requested"; here auto chose it.
    let chosen_by_auto =
        |plan: &MatmulPlan, variant: MatmulVariant| plan.reason().replacen(&format!("{variant} requested; "), "", 1);
    // 16-bit decode shapes (m' <= 16): the decode kernel of the operands' type, which streams B
    // at the memory's bandwidth, where B's rows are whole 16-byte vectors (its loads' unit);
    // other rows would be copied into such rows at every launch, which costs more than few_rows
    // reading them as they lie.
    let decode_rows = shape.n.is_multiple_of(8);
    let b_elements = shape.k as u128 * shape.n as u128;
    let large_b = b_elements >= N16_MIN_B_ELEMENTS as u128;
    let decode_shape = device.tensor_cores && shape.m <= kernels::matmul::decode::MAX_M as usize && decode_rows;
    // One row of a small B: the CUDA-core plan below (few_rows, or few_cols for n <= 16).
    let too_small_for_decode = decode_shape && shape.m == 1 && b_elements < M1_DECODE_MIN_B_ELEMENTS as u128;
    if shape.m == 1 && b_elements >= M1_FEW_ROWS_MIN_B_ELEMENTS as u128 && desc.tile.is_none() {
        let plan = plan_with(
            MatmulVariant::FewRows,
            shape,
            device,
            PlanOptions { policy: PrecisionPolicy::Highest, ..options },
        )?;
        let split_why = chosen_by_auto(&plan, MatmulVariant::FewRows);
        let why = format!(
            "auto: {kind} operands, m = 1: memory-bound on B, few_rows on the CUDA cores reading {kind} as it lies \
             (exact products), with a split that fills one wave of its blocks; {split_why}"
        );
        let plan = plan.on_operands(t)?.with_reason(why);
        return Ok((plan.variant(), plan));
    }
    if decode_shape && !too_small_for_decode {
        // The TMA pipeline of the 16-row tensor-core tiles streams B faster where its work items
        // fill the SMs (plan::N16_MIN_WAVE_FILL).
        let n16 = PlanOptions { tile: Some(TileWidth::N16), ..options };
        if desc.tile.is_none() && large_b {
            let plan = plan_with(tiles_variant, shape, device, n16)?;
            let items = wgmma::tiles(shape, plan.kernel()) * plan.split().map_or(1, |s| s.splits as u64);
            let fill = wave_fill(items, device.sm_count.max(1) as u64);
            if fill >= N16_MIN_WAVE_FILL {
                let split_why = chosen_by_auto(&plan, tiles_variant);
                let why = format!(
                    "auto: {kind} operands, m = {} <= 16: B streamed through the TMA, {items} work items fill {:.0}% \
                     of the SMs' last wave; {split_why}",
                    shape.m,
                    100.0 * fill
                );
                let plan = plan.with_reason(why);
                return Ok((plan.variant(), plan));
            }
        }
        let plan = plan_with(decode_variant, shape, device, options)?;
        let split_why = chosen_by_auto(&plan, decode_variant);
        let why = format!(
            "auto: {kind} operands, m = {} <= {}: memory-bound on B, {decode_variant} on {kind} as it lies; {split_why}",
            shape.m,
            kernels::matmul::decode::MAX_M,
        );
        let plan = plan.with_reason(why);
        return Ok((plan.variant(), plan));
    }
    let cuda_cores = cuda_cores.map(|why| {
        if too_small_for_decode {
            format!("{why}; B of {b_elements} elements < {M1_DECODE_MIN_B_ELEMENTS}: too few for the decode kernel")
        } else {
            why
        }
    });
    let Some(why) = cuda_cores else {
        let plan = plan_with(tiles_variant, shape, device, PlanOptions { policy, ..options })?;
        let split_why = chosen_by_auto(&plan, tiles_variant);
        let macs = shape.macs();
        let why = format!("auto: {} operands, {macs} multiply-adds on the tensor cores; {split_why}", t.name());
        let plan = plan.with_reason(why);
        return Ok((plan.variant(), plan));
    };
    // The CUDA cores: the FP32 planner's kernel on the 16-bit operands. Its warp-tiled kernel
    // reads f32 only; sgemm takes its shapes.
    let mut plan = match short_k_plan {
        Some(plan) => plan,
        None => cuda_core_plan()?,
    };
    if plan.variant() == MatmulVariant::SgemmWarpTiled {
        plan = plan_with(MatmulVariant::Sgemm, shape, device, PlanOptions { policy, ..options })?;
    }
    let why = format!("auto: {} operands on the CUDA cores ({why}), exact products; {}", t.name(), plan.reason());
    let plan = plan.on_operands(t)?.with_reason(why);
    Ok((plan.variant(), plan))
}

/// How `variant`, reading `operands`, takes `A'` and `B'`, and whether it takes `B'^T`.
fn formats(variant: MatmulVariant, operands: OperandType) -> (Format, Format, bool) {
    match variant {
        MatmulVariant::WgmmaBf16 | MatmulVariant::DecodeBf16 => (Format::Bf16Rows16, Format::Bf16Rows16, false),
        MatmulVariant::WgmmaF16 | MatmulVariant::DecodeF16 => (Format::F16Rows16, Format::F16Rows16, false),
        MatmulVariant::WgmmaTf32 => (Format::F32Rows16, Format::F32Rows16, false),
        MatmulVariant::WgmmaTf32Transposed => (Format::F32Rows16, Format::F32Rows16, true),
        _ => match operands {
            OperandType::F32 => (Format::F32Packed, Format::F32Packed, false),
            OperandType::Bf16 => (Format::Bf16Packed, Format::Bf16Packed, false),
            OperandType::F16 => (Format::F16Packed, Format::F16Packed, false),
        },
    }
}

impl MatmulDevice {
    /// What the planner needs of `gpu`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{GemmDesc, MatmulDevice, describe_plan};
    /// let gpu = Gpu::open(0)?;
    /// let device = MatmulDevice::of_gpu(&gpu);
    /// assert_eq!(device.tensor_cores, gpu.hopper_status().is_ok());
    /// println!("{}", describe_plan(&GemmDesc::new(4096, 4096, 4096), device)?);
    /// # Ok(()) }
    /// ```
    pub fn of_gpu(gpu: &Gpu) -> Self {
        let tensor_cores = gpu.hopper_status().is_ok();
        let mut cluster_blocks = [0; 8];
        if tensor_cores {
            for (i, blocks) in cluster_blocks.iter_mut().enumerate() {
                // A device that cannot tell runs no cluster sums.
                *blocks = tile_cluster_blocks(gpu, i as u32 + 1).unwrap_or(0);
            }
        }
        Self { sm_count: gpu.info().sm_count, tensor_cores, cluster_blocks }
    }
}

/// Blocks of the `_cluster` tensor-core kernels that run at once on `gpu` in clusters of `size`.
fn tile_cluster_blocks(gpu: &Gpu, size: u32) -> Result<u32> {
    use kernels::matmul::wgmma::{KERNEL_BF16_N128_CLUSTER, N128_DYNAMIC_SHARED_BYTES, THREADS};
    let func = gpu.function(KERNEL_BF16_N128_CLUSTER)?;
    func.set_attribute(
        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        N128_DYNAMIC_SHARED_BYTES as i32,
    )?;
    let mut attr = crate::gpu::cluster_attribute(size);
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (size, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: N128_DYNAMIC_SHARED_BYTES,
    };
    let config = crate::gpu::launch_config_ex(cfg, gpu.stream(), &mut attr);
    let mut clusters = 0;
    // SAFETY: a loaded function and a configuration that outlives the call; writes one int.
    unsafe { cudarc::driver::sys::cuOccupancyMaxActiveClusters(&mut clusters, func.cu_function(), &config).result()? };
    Ok(clusters.max(0) as u32 * size)
}

/// Plans `desc` for a device the planner knows without a GPU (for `--plan` and tests): the
/// plan's description, or why there is none.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{DType, GemmDesc, Layout, MatmulDevice, MatmulVariant, describe_plan};
/// // Row-major A and B, a column-major D: D^T = B^T A^T, both operands transposed into the workspace.
/// let desc = GemmDesc::new(300, 200, 100).d(Layout::col_major(DType::F32)).variant(MatmulVariant::Sgemm);
/// let text = describe_plan(&desc, MatmulDevice::H100)?;
/// assert!(text.starts_with("1 product(s) of 200x100x300: sgemm: grid 10x7x"), "{text}"); // 32 x 32 tiles
/// // One launch converts both (the pair kernel of their types).
/// assert!(text.contains("A' and B' via matmul_convert_pair_f32_f32"), "{text}");
/// // Refusals are the plan's: operands of two types.
/// let mixed = GemmDesc::new(64, 64, 64).a(Layout::row_major(DType::Bf16));
/// assert!(describe_plan(&mixed, MatmulDevice::H100).unwrap_err().to_string().contains("A is bf16 and B is f32"));
/// # Ok(()) }
/// ```
pub fn describe_plan(desc: &GemmDesc, device: MatmulDevice) -> Result<String> {
    let s = Skeleton::new(desc, device)?;
    let mut text = format!("{} product(s) of {}: {}", desc.batch, s.shape, s.kernel);
    match s.pair_convert {
        Some((pair, _, _)) => text += &format!("; A' and B' via {pair}"),
        None => {
            for (label, o) in [("A'", &s.left), ("B'", &s.right)] {
                if let Some((kernel, _)) = o.convert {
                    text += &format!("; {label} via {kernel}");
                }
            }
        }
    }
    if let Some(e) = s.epilogue {
        text += &format!("; then {}", e.kernel);
    }
    text += &format!("; workspace {} bytes", s.regions.total);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skeleton(desc: GemmDesc) -> Skeleton {
        Skeleton::new(&desc, MatmulDevice::H200).unwrap()
    }

    #[test]
    fn a_plan_can_be_shared_between_threads_with_its_replays() {
        fn shared<T: Send + Sync>() {}
        shared::<GemmPlan>();
    }

    #[test]
    fn tensor_core_descriptors_get_the_split_of_k_with_its_partials_in_the_workspace() {
        use crate::matmul::SplitK;
        let rows = |t| Layout::row_major(t);
        // (m, n, k): GemmDesc's order. Named kernels with alpha, beta and C: a split of k, its
        // partials beside the epilogue's accumulator.
        for (variant, t) in [
            (MatmulVariant::WgmmaBf16, DType::Bf16),
            (MatmulVariant::WgmmaF16, DType::F16),
            (MatmulVariant::WgmmaTf32, DType::F32),
        ] {
            let desc = GemmDesc::new(24, 171, 13_368).variant(variant).a(rows(t)).b(rows(t)).alpha_beta(1.5, -1.0);
            let s = skeleton(desc);
            let split = s.kernel.split().unwrap();
            assert!(split.splits > 1 && s.kernel.is_split(), "{}", s.kernel);
            assert!(s.epilogue.is_some());
            assert!(s.regions.total >= 4 * split.splits as usize * 24 * 171 + 4 * 24 * 171, "{}", s.regions.total);
            assert_eq!(s.regions.total, s.regions.split_k + 4 * s.kernel.workspace_floats(), "the partials come last");
            // A forced split through the descriptor, and one the kernel cannot take.
            let forced = SplitK::about_in(13_368, 5, 1, variant.split_granule());
            assert_eq!(skeleton(desc.split_k(Some(forced))).kernel.split(), Some(forced));
            let bad = desc.split_k(Some(SplitK { splits: 3, k_chunk: 4464 }));
            let err = Skeleton::new(&bad, MatmulDevice::H200).err().unwrap().to_string();
            assert!(err.contains("whole stages"), "{err}");
        }
        // auto: BF16 and F16 operands where `high` takes the tensor cores (80 tiles of 128 x 128),
        // which are 40 tiles of wgmma's 128 x 256: k is split.
        for t in [DType::Bf16, DType::F16] {
            let s = skeleton(GemmDesc::new(1024, 1280, 16_384).a(rows(t)).b(rows(t)));
            assert!(matches!(s.kernel.variant(), MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16), "{}", s.kernel);
            assert!(s.kernel.split().unwrap().splits > 1, "{}", s.kernel);
        }
        // f32 under `medium`: wgmma_tf32, split the same way.
        let s = skeleton(GemmDesc::new(1024, 1280, 16_384).policy(PrecisionPolicy::Medium));
        assert_eq!(s.kernel.variant(), MatmulVariant::WgmmaTf32, "{}", s.kernel);
        assert!(s.kernel.split().unwrap().splits > 1, "{}", s.kernel);
        let text =
            describe_plan(&GemmDesc::new(1024, 1280, 16_384).policy(PrecisionPolicy::Medium), MatmulDevice::H200);
        assert!(text.unwrap().contains("split-K"));
    }

    #[test]
    fn packed_row_major_f32_runs_in_place_with_no_epilogue_and_no_workspace_but_the_kernels() {
        let s = skeleton(GemmDesc::new(300, 200, 100).variant(MatmulVariant::Sgemm));
        assert!(s.left.convert.is_none() && s.right.convert.is_none() && s.epilogue.is_none());
        assert_eq!(s.regions.total, 4 * s.kernel.workspace_floats());
        assert_eq!((s.shape.m, s.shape.k, s.shape.n), (300, 100, 200));
    }

    #[test]
    fn a_column_major_d_swaps_the_operands_and_transposes_the_problem() {
        let col = Layout::col_major(DType::F32);
        let s = skeleton(GemmDesc::new(300, 200, 100).a(col).b(col).d(col).variant(MatmulVariant::Sgemm));
        // D^T = B^T A^T: column-major B (100 x 200) read row-major is B^T, as the kernel takes it.
        assert_eq!((s.shape.m, s.shape.k, s.shape.n), (200, 100, 300));
        assert_eq!((s.left.source, s.left.transposed, s.left.convert.is_none()), (Source::B, false, true));
        assert_eq!((s.right.source, s.right.transposed, s.right.convert.is_none()), (Source::A, false, true));
        assert!(s.epilogue.is_none());
    }

    #[test]
    fn tf32_reads_an_a_of_unaligned_rows_as_it_lies_where_it_has_four_tiles_of_rows() {
        let tf32 = |desc: GemmDesc| skeleton(desc.variant(MatmulVariant::WgmmaTf32));
        // Rows of 11159 floats: A in four classes of rows, not copied; B's rows of 27 are.
        let s = tf32(GemmDesc::new(6358, 27, 11_159));
        assert!(s.kernel.kernel().ends_with("_unaligned_a"), "{}", s.kernel);
        assert!(s.left.convert.is_none() && s.right.convert.is_some());
        assert_eq!((s.left.format, s.left.ld), (Format::F32RowsAny, 11_159));
        let text =
            describe_plan(&GemmDesc::new(6358, 27, 11_159).variant(MatmulVariant::WgmmaTf32), MatmulDevice::H200);
        assert!(text.unwrap().contains("A read as it lies in four classes of rows"));
        // Under four tiles of rows, A is copied into 16-byte rows for the usual kernel.
        let s = tf32(GemmDesc::new(300, 64, 1031));
        assert_eq!(s.kernel.kernel(), "wgmma_tf32_n64");
        assert!(s.left.convert.is_some());
        // 16-byte rows need neither; a leading dimension of any length is read in place.
        let aligned = tf32(GemmDesc::new(6358, 27, 11_160));
        assert!(!aligned.kernel.kernel().ends_with("_unaligned_a") && aligned.left.convert.is_none());
        let s = tf32(GemmDesc::new(6358, 27, 1000).a(Layout::row_major(DType::F32).ld(1001)));
        assert!(s.kernel.kernel().ends_with("_unaligned_a") && s.left.convert.is_none() && s.left.ld == 1001);
        // A transposed A, a batch or BF16 operands: the copy.
        assert!(tf32(GemmDesc::new(6358, 27, 11_159).transpose_a(true)).left.convert.is_some());
        assert!(tf32(GemmDesc::new(6358, 27, 11_159).batch(2)).left.convert.is_some());
        // The planned split covers the 3 columns the classes' maps may start early.
        let s = tf32(GemmDesc::new(6358, 27, 11_159));
        let split = s.kernel.split().unwrap();
        assert!(split.splits * split.k_chunk >= 11_159 + 3);
        assert_eq!(s.kernel.workspace_floats(), split.splits as usize * 6358 * 27);
    }

    #[test]
    fn sixteen_bit_short_k_on_unaligned_rows_stays_on_the_cuda_cores_up_to_its_output_bound() {
        for dtype in [DType::Bf16, DType::F16] {
            let rows = Layout::row_major(dtype);
            // GemmDesc takes (m, n, k).
            let plan = |m, n, k| skeleton(GemmDesc::new(m, n, k).a(rows).b(rows)).kernel;
            // Where the tensor cores would copy them first (a transposed A, which the `_ld`
            // kernels do not read).
            let transposed = |m, n, k| {
                let a = Layout::row_major(dtype);
                skeleton(GemmDesc::new(m, n, k).transpose_a(true).a(a).b(rows)).kernel
            };
            for (m, n, k) in [(2455, 3667, 19), (1812, 494, 27), (7700, 433, 26)] {
                let p = transposed(m, n, k);
                assert_eq!(p.variant(), MatmulVariant::ShortK, "{p}");
                assert!(p.reason().contains("short_k writes C in one launch"), "{p}");
            }
            // As they lie, the `_ld` tile kernels read them: 128 x 64 tiles where the planner
            // takes them, 128 x 128 where the row-staged epilogue's stores are the time.
            let p = plan(1812, 494, 27);
            assert!(p.kernel().ends_with("_n64_ld") && p.reason().contains("read as they lie"), "{p}");
            for (m, n, k) in [(2455, 3667, 19), (7700, 433, 26)] {
                let p = plan(m, n, k);
                assert!(p.kernel().ends_with("_n128_ld") && p.reason().contains("read as they lie"), "{p}");
                assert!(p.reason().contains("128-column tiles a row of tiles at a time store fastest"), "{p}");
            }
            // Where the TMA stores C (rows of 16-byte multiples), the 128 x 256 tiles from copies.
            let p = plan(8840, 6664, 28);
            assert_eq!(p.kernel(), if dtype == DType::Bf16 { "wgmma_bf16" } else { "wgmma_f16" }, "{p}");
            // Past 2^24 elements of C, or on 16-byte rows, or past k = 32: the tensor cores.
            for (m, n, k) in [(8841, 6665, 28), (2456, 3672, 24), (2455, 3667, 33)] {
                assert_ne!(plan(m, n, k).variant(), MatmulVariant::ShortK, "{m}x{k}x{n}");
            }
        }
    }

    #[test]
    fn transposes_leading_dimensions_and_other_types_go_through_the_workspace() {
        let s = skeleton(GemmDesc::new(64, 32, 128).transpose_a(true).variant(MatmulVariant::Sgemm));
        assert!(s.left.transposed && s.left.convert.unwrap().0 == "matmul_convert_f32_f32");
        let s =
            skeleton(GemmDesc::new(64, 32, 128).b(Layout::row_major(DType::F32).ld(40)).variant(MatmulVariant::Sgemm));
        assert!(s.right.convert.is_some() && s.left.convert.is_none());
        let bf16 = Layout::row_major(DType::Bf16);
        // sgemm reads BF16 as it lies; a transposed BF16 operand is copied as BF16.
        let s = skeleton(GemmDesc::new(64, 32, 128).a(bf16).b(bf16).variant(MatmulVariant::Sgemm));
        assert!(s.left.convert.is_none() && s.right.convert.is_none());
        // 64 x 32 of C, 128 deep: a small product, two 32 x 64 tiles of 4 x 4 a thread.
        assert_eq!((s.kernel.kernel(), s.precision), ("sgemm_4x4_bf16_32x64", Precision::Fp32));
        let s = skeleton(GemmDesc::new(64, 32, 128).a(bf16).b(bf16).transpose_b(true).variant(MatmulVariant::Sgemm));
        assert_eq!(s.right.convert.unwrap().0, "matmul_convert_bf16_bf16");
        // Kernels that read f32 only take BF16 widened in the workspace.
        let s = skeleton(GemmDesc::new(64, 32, 128).a(bf16).b(bf16).variant(MatmulVariant::SgemmWarpTiled));
        assert_eq!(s.left.convert.unwrap().0, "matmul_convert_bf16_f32");
        // BF16 in BF16 on the tensor cores: in place.
        let s = skeleton(GemmDesc::new(4096, 4096, 4096).a(bf16).b(bf16));
        assert_eq!(s.kernel.variant(), MatmulVariant::WgmmaBf16);
        assert!(s.left.convert.is_none() && s.right.convert.is_none());
        assert_eq!(s.precision, Precision::Bf16);
        // F16 in F16 on the tensor cores, in place, where BF16 would take wgmma_bf16.
        let f16 = Layout::row_major(DType::F16);
        let s = skeleton(GemmDesc::new(4096, 4096, 4096).a(f16).b(f16));
        assert_eq!(s.kernel.variant(), MatmulVariant::WgmmaF16);
        assert!(s.left.convert.is_none() && s.right.convert.is_none());
        assert_eq!(s.precision, Precision::Fp16);
    }

    #[test]
    fn narrow_and_short_16_bit_products_run_on_the_cuda_cores_reading_the_operands_as_they_lie() {
        let bf16 = Layout::row_major(DType::Bf16);
        let plan = |m, n, k| skeleton(GemmDesc::new(m, n, k).a(bf16).b(bf16));
        // (m, n, k) as GemmDesc takes them, and the kernel auto runs.
        for ((m, n, k), kernel) in [
            // k = 2 and n = 326 off the 16-byte path: short_k.
            ((49, 326, 2), "matmul_short_k_bf16"),
            // Small products with no side of 16 or less take the tensor cores, rows of 326 or 250
            // BF16 copied into 16-byte rows (tiles of 128 x 64: the most blocks) ...
            ((49, 326, 300), "wgmma_bf16_n64_rows"),
            ((256, 256, 250), "wgmma_bf16_n64"),
            // ... as do whole 16-byte rows, in place.
            ((256, 256, 256), "wgmma_bf16_n64"),
            ((64, 64, 64), "wgmma_bf16_n64"),
            ((5202, 1, 3876), "matmul_few_cols_bf16_1"),
            ((1, 10_925, 4344), "matmul_few_rows_bf16_1"),
            // One row of a small B (2^16 elements): few_rows, not the decode kernel's two
            // column strips after a copy of A's row of 673 BF16.
            ((1, 88, 673), "matmul_few_rows_bf16_1"),
            ((15, 6999, 15_019), "matmul_few_rows_bf16_16"),
            // n a multiple of 8: decode_bf16 reads B's rows as they lie where B is too small
            // for the 16-row tiles' launch (one row of it: few_rows) ...
            ((2, 2048, 4096), kernels::matmul::decode::KERNEL),
            ((1, 2048, 4096), "matmul_few_rows_bf16_1"),
            // ... and so does the 16-row tensor-core kernel, whose 32 tiles in 4 splits fill the
            // SMs, as do 112 tiles unsplit ...
            ((1, 4096, 4096), "wgmma_bf16_n16"),
            ((1, 14336, 4096), "wgmma_bf16_n16"),
            // ... but one row of a B of 2^27 elements or more streams faster through few_rows,
            // split to fill a wave.
            ((1, 28672, 8192), "matmul_few_rows_bf16_1"),
            // k <= 16 over millions of outputs: writing C bounds the time, short_k writes it
            // faster than the tensor cores' epilogue.
            ((5006, 6049, 6), "matmul_short_k_bf16"),
            // Rows of 6665 floats are not 16-byte aligned: the row-staged epilogue, and with
            // k <= 128 the 128 x 128 tiles' `_ld` form, which reads such rows without a copy.
            ((8841, 6665, 28), "wgmma_bf16_n128_ld"),
            // BF16 keeps the tensor cores where B would be copied: its sgemm is slower still.
            ((29, 15_107, 3987), "wgmma_bf16_n128_rows"),
            ((4096, 4096, 4096), "wgmma_bf16"),
        ] {
            let s = plan(m, n, k);
            assert_eq!(s.kernel.kernel(), kernel, "{m}x{n}x{k}: {}", s.kernel);
            if kernel.starts_with("sgemm") || kernel.starts_with("matmul_few") || kernel.starts_with("matmul_short_k") {
                assert!(s.left.convert.is_none() && s.right.convert.is_none(), "{m}x{n}x{k}");
                assert_eq!(s.precision, Precision::Fp32);
                assert!(s.kernel.reason().contains("on the CUDA cores"), "{}", s.kernel.reason());
            }
        }
        // Without tensor cores every shape runs on the CUDA cores, on BF16 as it lies (warp-tiled
        // sizes on sgemm, the CUDA-core kernel that reads BF16).
        let none = MatmulDevice { tensor_cores: false, ..MatmulDevice::H200 };
        let s = Skeleton::new(&GemmDesc::new(4096, 4096, 4096).a(bf16).b(bf16), none).unwrap();
        assert_eq!(s.kernel.kernel(), "sgemm_bf16");
        // A forced split of k stays with the plan auto chose: here the tensor cores, in clusters
        // of the split's blocks.
        let split = crate::matmul::SplitK { splits: 4, k_chunk: 64 };
        let s = skeleton(GemmDesc::new(100, 100, 256).a(bf16).b(bf16).split_k(Some(split)));
        assert_eq!((s.kernel.kernel(), s.kernel.split()), ("wgmma_bf16_n64_cluster", Some(split)));
    }

    #[test]
    fn small_tf32_products_leave_the_tensor_cores_only_where_those_would_copy_more_operands() {
        let bf16 = Layout::row_major(DType::Bf16);
        let variant = |d: GemmDesc| skeleton(d).kernel.variant();
        // 16-bit operands take the tensor cores at every small size, copies or not.
        let s = skeleton(GemmDesc::new(256, 256, 256).a(bf16).b(bf16));
        assert_eq!(s.kernel.variant(), MatmulVariant::WgmmaBf16, "{}", s.kernel);
        assert!(s.left.convert.is_none() && s.right.convert.is_none());
        assert_eq!(variant(GemmDesc::new(100, 250, 256).a(bf16).b(bf16)), MatmulVariant::WgmmaBf16);
        assert_eq!(variant(GemmDesc::new(256, 256, 250).a(bf16).b(bf16).transpose_a(true)), MatmulVariant::WgmmaBf16);
        // f32 under medium: one TF32 pass where it copies no more, the FP32 kernels where it does
        // and the product is small with fewer than 128 rows or 32 columns.
        let medium = |d: GemmDesc| skeleton(d.policy(PrecisionPolicy::Medium));
        assert_eq!(medium(GemmDesc::new(256, 256, 256)).kernel.variant(), MatmulVariant::WgmmaTf32);
        assert_eq!(medium(GemmDesc::new(256, 256, 256).transpose_a(true)).kernel.variant(), MatmulVariant::WgmmaTf32);
        assert_eq!(medium(GemmDesc::new(256, 256, 250)).kernel.variant(), MatmulVariant::WgmmaTf32);
        // Packed rows of 250 f32 (1000 bytes): the tensor cores alone would copy B.
        let s = medium(GemmDesc::new(100, 256, 250));
        assert_eq!(s.kernel.variant(), MatmulVariant::Sgemm, "{}", s.kernel);
        assert!(s.kernel.reason().starts_with("medium, not TF32 (6400000 multiply-adds"), "{}", s.kernel.reason());
        assert!(s.kernel.reason().contains("FP32 FMA"), "{}", s.kernel.reason());
        // 128 rows or more: the tensor cores, copies and all.
        assert_eq!(medium(GemmDesc::new(128, 256, 250)).kernel.variant(), MatmulVariant::WgmmaTf32);
        // Above 2^25 multiply-adds the copy pays for itself.
        assert_eq!(medium(GemmDesc::new(100, 1024, 1000)).kernel.variant(), MatmulVariant::WgmmaTf32);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Small 16-bit products whose every side is above 16 run on the tensor cores whatever
        /// their layouts (copies included), but for `k` of at most 32 where `short_k` takes them
        /// ([`takes_short_k`]: rows the tensor cores alone would copy).
        #[test]
        fn small_16_bit_products_with_no_narrow_side_run_on_the_tensor_cores_in_every_layout(
            (m, n, k) in (17usize..=300, 17usize..=300, 17usize..=300),
            f16 in proptest::bool::ANY,
            (ta, tb, col_d) in (proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
            (pad_a, pad_b) in (0usize..=9, 0usize..=9),
        ) {
            let dtype = if f16 { DType::F16 } else { DType::Bf16 };
            let layout = |rows: usize, cols: usize, transposed: bool, pad: usize| {
                let cols = if transposed { rows } else { cols };
                Layout::row_major(dtype).ld(cols + pad)
            };
            let d = if col_d { Layout::col_major(DType::F32) } else { Layout::row_major(DType::F32) };
            let desc = GemmDesc::new(m, n, k)
                .transpose_a(ta)
                .transpose_b(tb)
                .a(layout(m, k, ta, pad_a))
                .b(layout(k, n, tb, pad_b))
                .d(d);
            let tiles = if f16 { MatmulVariant::WgmmaF16 } else { MatmulVariant::WgmmaBf16 };
            let auto = skeleton(desc);
            let short_k = auto.kernel.variant() == MatmulVariant::ShortK && k <= kernels::matmul::short_k::MAX_K as usize;
            proptest::prop_assert!(auto.kernel.variant() == tiles || short_k, "{}", auto.kernel);
        }
    }

    #[test]
    fn f16_operands_take_wgmma_f16_wherever_bf16_ones_take_wgmma_bf16() {
        let (bf16, f16) = (Layout::row_major(DType::Bf16), Layout::row_major(DType::F16));
        let shapes =
            [(1, 1, 1), (17, 65, 33), (256, 256, 256), (1000, 1200, 800), (4097, 8193, 129), (4096, 4096, 4096)];
        for (m, n, k) in shapes {
            for policy in PrecisionPolicy::ALL {
                let b = skeleton(GemmDesc::new(m, n, k).a(bf16).b(bf16).policy(policy));
                let h = skeleton(GemmDesc::new(m, n, k).a(f16).b(f16).policy(policy));
                let on_tensor_cores = b.kernel.variant() == MatmulVariant::WgmmaBf16;
                assert_eq!(h.kernel.variant() == MatmulVariant::WgmmaF16, on_tensor_cores, "{m}x{n}x{k} {policy}");
                if on_tensor_cores {
                    assert_eq!(h.precision, Precision::Fp16);
                    let cfg = |s: &Skeleton| {
                        let c = s.kernel.launch_config();
                        (c.grid_dim, c.block_dim, c.shared_mem_bytes)
                    };
                    assert_eq!(cfg(&h), cfg(&b));
                } else if b.kernel.variant() != MatmulVariant::DecodeBf16 {
                    // Elsewhere both run the CUDA-core kernels on their 16-bit operands as they
                    // lie, exact products (but BF16 decode shapes, which take decode_bf16).
                    assert_eq!(h.kernel.variant(), b.kernel.variant(), "{m}x{n}x{k} {policy}");
                    assert!(h.left.convert.is_none() && h.right.convert.is_none(), "{m}x{n}x{k}");
                    assert!(h.kernel.kernel().contains("_f16") && b.kernel.kernel().contains("_bf16"));
                    assert_eq!((h.precision, b.precision), (Precision::Fp32, Precision::Fp32));
                }
            }
        }
        // wgmma_f16 named: F16 in place (rows of 16-byte multiples), or converted where they are
        // not; f32 rounded to F16 on the GPU, under FP16's bound, as wgmma_bf16 takes f32.
        let named = |desc: GemmDesc| skeleton(desc.variant(MatmulVariant::WgmmaF16));
        let s = named(GemmDesc::new(17, 65, 129).a(f16).b(f16));
        assert_eq!((s.kernel.variant(), s.precision), (MatmulVariant::WgmmaF16, Precision::Fp16));
        assert_eq!(s.left.convert.unwrap().0, "matmul_convert_f16_f16", "129 halves are not 16-byte rows");
        assert_eq!(s.left.ld, 136);
        // Up to k = LD_MAX_K the `_ld` kernels read such rows as they lie.
        let s = named(GemmDesc::new(17, 65, 33).a(f16).b(f16));
        assert!(s.kernel.kernel().ends_with("_ld") && s.left.convert.is_none() && s.right.convert.is_none());
        assert_eq!((s.left.ld, s.right.ld, s.precision), (33, 65, Precision::Fp16));
        let s = named(GemmDesc::new(64, 64, 64).a(f16).b(f16));
        assert!(s.left.convert.is_none() && s.right.convert.is_none());
        let s = named(GemmDesc::new(64, 64, 64));
        assert_eq!(s.left.convert.unwrap().0, "matmul_convert_f32_f16");
        assert_eq!(s.right.convert.unwrap().0, "matmul_convert_f32_f16");
        assert_eq!(s.precision, Precision::Fp16);
        let text = describe_plan(&GemmDesc::new(64, 64, 64).variant(MatmulVariant::WgmmaF16), MatmulDevice::H200);
        assert!(text.unwrap().contains("wgmma_f16"));
    }

    #[test]
    fn bf16_decode_shapes_run_decode_bf16_or_the_16_row_tiles_under_auto_where_there_are_tensor_cores() {
        let bf16 = Layout::row_major(DType::Bf16);
        // B of 2^23 elements: under the 16-row tiles' least, decode_bf16 in place.
        let s = skeleton(GemmDesc::new(16, 2048, 4096).a(bf16).b(bf16));
        assert_eq!(s.kernel.variant(), MatmulVariant::DecodeBf16);
        assert!(s.left.convert.is_none() && s.right.convert.is_none(), "BF16 read in place");
        assert_eq!(s.precision, Precision::Bf16);
        assert!(s.kernel.reason().contains("m = 16 <= 16"), "{}", s.kernel.reason());
        let text = describe_plan(&GemmDesc::new(2, 2048, 4096).a(bf16).b(bf16), MatmulDevice::H200).unwrap();
        assert!(text.contains("decode_bf16: grid "), "{text}");
        assert!(text.contains("auto: BF16 operands, m = 2 <= 16") && !text.contains("requested"), "{text}");
        // One row of it: few_rows, whose split fills the SMs where the decode kernel's 32
        // column strips would not.
        let text = describe_plan(&GemmDesc::new(1, 2048, 4096).a(bf16).b(bf16), MatmulDevice::H200).unwrap();
        assert!(text.contains("few_rows: grid ") && text.contains("B of 8388608 elements < 16777216"), "{text}");
        // One row of a small B with at most 16 columns: few_cols, as the CUDA-core plan has it.
        let s = skeleton(GemmDesc::new(1, 8, 8340).a(bf16).b(bf16));
        assert_eq!(s.kernel.kernel(), "matmul_few_cols_bf16_8");
        // 14336 columns: 112 tiles of the 16-row kernel, unsplit, 85% of the SMs.
        let s = skeleton(GemmDesc::new(16, 14336, 4096).a(bf16).b(bf16));
        assert_eq!((s.kernel.kernel(), s.kernel.split().map(|s| s.splits)), ("wgmma_bf16_n16", Some(1)));
        assert!(s.kernel.reason().contains("112 work items fill 85% of the SMs' last wave"), "{}", s.kernel.reason());
        // A column-major D: the canonical m' is n.
        let s = skeleton(GemmDesc::new(14336, 8, 4096).a(bf16).b(bf16).d(Layout::col_major(DType::F32)));
        assert_eq!(s.kernel.kernel(), "wgmma_bf16_n16");
        let s = skeleton(GemmDesc::new(2048, 8, 4096).a(bf16).b(bf16).d(Layout::col_major(DType::F32)));
        assert_eq!(s.kernel.variant(), MatmulVariant::DecodeBf16);
        // 4096 columns: 32 tiles of the 16-row kernel in 4 splits fill 128 of 132 SMs, the
        // partials in the workspace.
        let s = skeleton(GemmDesc::new(1, 4096, 4096).a(bf16).b(bf16));
        assert_eq!((s.kernel.kernel(), s.kernel.split().map(|s| s.splits)), ("wgmma_bf16_n16", Some(4)));
        assert!(s.left.convert.is_none() && s.right.convert.is_none(), "BF16 read in place");
        assert!(s.regions.total >= 4 * 4096 * 4);
        assert!(s.kernel.reason().contains("128 work items fill 97% of the SMs' last wave"), "{}", s.kernel.reason());
        // One row of a B of 2^27 elements or more: few_rows' 16-bit kernel, split into one wave
        // of its blocks (9 per SM, 56 per split: 21 splits), reading B in place.
        let s = skeleton(GemmDesc::new(1, 28672, 8192).a(bf16).b(bf16));
        assert_eq!((s.kernel.kernel(), s.kernel.split().map(|s| s.splits)), ("matmul_few_rows_bf16_1", Some(21)));
        assert!(s.left.convert.is_none() && s.right.convert.is_none(), "BF16 read in place");
        assert!(s.kernel.reason().contains("auto: BF16 operands, m = 1: memory-bound on B"), "{}", s.kernel.reason());
        let f16 = Layout::row_major(DType::F16);
        assert_eq!(skeleton(GemmDesc::new(1, 28672, 8192).a(f16).b(f16)).kernel.kernel(), "matmul_few_rows_f16_1");
        assert_eq!(skeleton(GemmDesc::new(16, 4096, 14336).a(f16).b(f16)).kernel.kernel(), "wgmma_f16_n16");
        assert_eq!(skeleton(GemmDesc::new(16, 14336, 4096).a(f16).b(f16)).kernel.kernel(), "wgmma_f16_n16");
        // 17 rows, F16 operands, or no tensor cores: not decode_bf16.
        assert_ne!(skeleton(GemmDesc::new(17, 2048, 4096).a(bf16).b(bf16)).kernel.variant(), MatmulVariant::DecodeBf16);
        // F16 operands take the F16 decode kernel, in place as well.
        let s = skeleton(GemmDesc::new(16, 2048, 4096).a(f16).b(f16));
        assert_eq!(s.kernel.variant(), MatmulVariant::DecodeF16);
        assert!(s.left.convert.is_none() && s.right.convert.is_none(), "F16 read in place");
        assert_eq!(s.precision, Precision::Fp16);
        assert!(s.kernel.reason().contains("auto: F16 operands, m = 16 <= 16"), "{}", s.kernel.reason());
        let cuda_cores = MatmulDevice { sm_count: 132, tensor_cores: false, cluster_blocks: [0; 8] };
        let s = Skeleton::new(&GemmDesc::new(16, 2048, 4096).a(bf16).b(bf16), cuda_cores).unwrap();
        assert_ne!(s.kernel.variant(), MatmulVariant::DecodeBf16);
    }

    #[test]
    fn decode_bf16_refuses_tall_products_and_f16_operands() {
        let err = |d: GemmDesc| Skeleton::new(&d, MatmulDevice::H200).err().unwrap().to_string();
        let bf16 = Layout::row_major(DType::Bf16);
        let e = err(GemmDesc::new(17, 64, 64).a(bf16).b(bf16).variant(MatmulVariant::DecodeBf16));
        assert!(e.contains("at most 16 rows"), "{e}");
        let f16 = Layout::row_major(DType::F16);
        let e = err(GemmDesc::new(4, 64, 64).a(f16).b(f16).variant(MatmulVariant::DecodeBf16));
        assert!(e.contains("decode_bf16 multiplies BF16 operands"), "{e}");
        // f32 operands are rounded to BF16 into the workspace, as for wgmma_bf16.
        let s = skeleton(GemmDesc::new(4, 64, 64).variant(MatmulVariant::DecodeBf16));
        assert_eq!(s.left.convert.unwrap().0, "matmul_convert_f32_bf16");
        // And decode_f16 refuses BF16 operands, and rounds f32 ones to F16.
        let e = err(GemmDesc::new(4, 64, 64).a(bf16).b(bf16).variant(MatmulVariant::DecodeF16));
        assert!(e.contains("decode_f16 multiplies F16 operands"), "{e}");
        let s = skeleton(GemmDesc::new(4, 64, 64).variant(MatmulVariant::DecodeF16));
        assert_eq!(s.left.convert.unwrap().0, "matmul_convert_f32_f16");
    }

    #[test]
    fn alpha_beta_and_16_bit_outputs_take_the_epilogue() {
        for desc in [
            GemmDesc::new(8, 8, 8).alpha_beta(2.0, 0.0),
            GemmDesc::new(8, 8, 8).alpha_beta(1.0, 1.0),
            GemmDesc::new(8, 8, 8).d(Layout::row_major(DType::Bf16)),
            GemmDesc::new(8, 8, 8).d(Layout::row_major(DType::F32).ld(9)),
        ] {
            let s = skeleton(desc);
            let e = s.epilogue.unwrap();
            assert!(e.acc + 8 * 8 * 4 <= s.regions.total);
        }
    }

    #[test]
    fn the_descriptor_is_checked_before_anything_is_planned() {
        let err = |d: GemmDesc| Skeleton::new(&d, MatmulDevice::H200).err().unwrap();
        assert!(matches!(err(GemmDesc::new(0, 1, 1)), Error::ZeroDimension { name: "m" }));
        assert!(matches!(err(GemmDesc::new(1, 1, 1).batch(0)), Error::ZeroDimension { name: "batch" }));
        let e = err(GemmDesc::new(4, 4, 8).a(Layout::row_major(DType::F32).ld(7)));
        assert!(matches!(e, Error::LeadingDimension { operand: "A", ld: 7, min: 8 }), "{e}");
        let e = err(GemmDesc::new(4, 4, 8).b(Layout::row_major(DType::Bf16)));
        assert!(e.to_string().contains("A is f32 and B is bf16"), "{e}");
        let f16 = Layout::row_major(DType::F16);
        let e = err(GemmDesc::new(4, 4, 8).a(f16).b(f16).variant(MatmulVariant::WgmmaBf16));
        assert!(e.to_string().contains("F16"), "{e}");
        let bf16 = Layout::row_major(DType::Bf16);
        let e = err(GemmDesc::new(4, 4, 8).a(bf16).b(bf16).variant(MatmulVariant::WgmmaF16));
        assert!(matches!(&e, Error::Unsupported(m) if m.contains("wgmma_f16 multiplies F16")), "{e}");
        assert!(matches!(err(GemmDesc::new(4, 4, 4).alpha_beta(f32::NAN, 0.0)), Error::InvalidArgument(_)));
    }

    #[test]
    fn overlapping_buffers_are_refused_and_in_place_c_is_not() {
        let r = Ranges { a: (0, 100), b: (100, 100), d: (300, 100), workspace: (500, 100) };
        assert!(r.check(None).is_ok());
        assert!(r.check(Some((300, 100))).is_ok(), "C is D: in place");
        assert!(matches!(r.check(Some((350, 100))), Err(Error::Overlap { written: "D", read: "C" })));
        let r = Ranges { a: (0, 100), b: (100, 100), d: (150, 100), workspace: (500, 100) };
        assert!(matches!(r.check(None), Err(Error::Overlap { written: "D", read: "B" })));
        let r = Ranges { a: (0, 100), b: (100, 100), d: (300, 100), workspace: (350, 100) };
        assert!(matches!(r.check(None), Err(Error::Overlap { written: "D", read: "workspace" })));
    }

    #[test]
    fn batches_of_tensor_core_operands_with_misaligned_strides_are_copied() {
        let bf16 = Layout::row_major(DType::Bf16);
        let odd = GemmDesc::new(4096, 4096, 4096).a(bf16.batch_stride(4096 * 4096 + 1)).b(bf16).batch(2);
        let s = skeleton(odd);
        assert!(s.left.convert.is_some() && s.right.convert.is_none());
    }
}
