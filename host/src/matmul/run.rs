//! Row-major `f32` matrices owned on the device with the workspace their plans need: the
//! convenience the command line, the benchmark and the tests run [`GemmPlan`]s on. Any other
//! layout or element type goes to [`GemmPlan::launch`] directly.

use super::convert::convert_matrix;
use super::desc::{DType, GemmDesc, Layout};
use super::gemm::GemmPlan;
use super::precision::f16_range_violation;
use super::shape::MatmulShape;
use super::variant::MatmulVariant;
use super::{PlanOptions, PrecisionPolicy};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::CudaSlice;

/// `A`, `B` and `C` of one shape on the device (row-major, packed `f32`), and the workspace of the
/// plans launched on them, grown on first need. Built only by [`DeviceMatrices::upload`]; `A` and
/// `B` cannot be written afterwards, and `C` only by launches.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, MatmulVariant, run};
/// let gpu = Gpu::open(0)?;
/// let shape = MatmulShape::new(512, 256, 128)?;
/// let mut mats = DeviceMatrices::upload(&gpu, shape, &vec![1.0; 512 * 256], &vec![0.5; 256 * 128])?;
/// for variant in [MatmulVariant::Sgemm, MatmulVariant::SgemmWarpTiled] {
///     assert!(run(&gpu, variant, &mut mats)?.iter().all(|&c| c == 128.0));
/// }
/// # Ok(()) }
/// ```
pub struct DeviceMatrices {
    shape: MatmulShape,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
    workspace: Option<CudaSlice<u8>>,
    /// `A` and `B` rounded to BF16, made once by the first plan that takes them.
    bf16: Option<(CudaSlice<half::bf16>, CudaSlice<half::bf16>)>,
    /// `A` and `B` rounded to F16, likewise.
    f16: Option<(CudaSlice<half::f16>, CudaSlice<half::f16>)>,
    /// The first input that would round to an infinity in F16 (operand, index, value), found at
    /// upload: [`DeviceMatrices::f16_operands`] refuses to make F16 copies of such inputs.
    f16_overflow: Option<(&'static str, usize, f32)>,
}

impl DeviceMatrices {
    /// Uploads `A` and `B` and allocates `C` on `gpu`'s stream, after checking lengths and free
    /// device memory.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let shape = MatmulShape::new(2, 3, 4)?;
    /// let mats = DeviceMatrices::upload(&gpu, shape, &[1.0; 6], &[1.0; 12])?;
    /// assert_eq!(mats.c().len(), 8);
    /// assert!(DeviceMatrices::upload(&gpu, shape, &[1.0; 6], &[1.0; 11]).is_err()); // B is short
    /// # Ok(()) }
    /// ```
    pub fn upload(gpu: &Gpu, shape: MatmulShape, a: &[f32], b: &[f32]) -> Result<Self> {
        let (_, _, lc) = shape.lens();
        shape.check_lens(a.len(), b.len(), lc)?;
        gpu.ensure_fits(&format!("a {shape} matmul ({})", format_bytes(shape.bytes())), shape.bytes())?;
        let f16_overflow = f16_range_violation(a)
            .map(|(i, v)| ("A", i, v))
            .or_else(|| f16_range_violation(b).map(|(i, v)| ("B", i, v)));
        Ok(Self {
            shape,
            a: gpu.upload(a)?,
            b: gpu.upload(b)?,
            c: gpu.zeros(lc)?,
            workspace: None,
            bf16: None,
            f16: None,
            f16_overflow,
        })
    }

    /// The shape the matrices hold.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[1.0; 12])?;
    /// assert_eq!(mats.shape().to_string(), "2x3x4");
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> MatmulShape {
        self.shape
    }

    /// `A`, `m x k`, row-major.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// let mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &a, &[1.0; 12])?;
    /// assert_eq!(gpu.download(mats.a())?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// # Ok(()) }
    /// ```
    pub fn a(&self) -> &CudaSlice<f32> {
        &self.a
    }

    /// `B`, `k x n`, row-major.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[2.0; 12])?;
    /// assert_eq!(gpu.download(mats.b())?, [2.0; 12]);
    /// # Ok(()) }
    /// ```
    pub fn b(&self) -> &CudaSlice<f32> {
        &self.b
    }

    /// `C`, `m x n`, row-major, as the last launch wrote it.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, PlanOptions, MatmulVariant, launch_plan, plan_gemm};
    /// let gpu = Gpu::open(0)?;
    /// let shape = MatmulShape::new(2, 3, 4)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, shape, &[1.0; 6], &[1.0; 12])?;
    /// launch_plan(&gpu, &plan_gemm(&gpu, MatmulVariant::Auto, shape, PlanOptions::default())?, &mut mats)?;
    /// assert_eq!(gpu.download(mats.c())?, [3.0; 8]); // download waits for the launch
    /// # Ok(()) }
    /// ```
    pub fn c(&self) -> &CudaSlice<f32> {
        &self.c
    }

    /// The workspace, as the last launch left it (its layout is the plan's).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, MatmulVariant, run};
    /// let gpu = Gpu::open(0)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[1.0; 12])?;
    /// assert!(mats.workspace().is_none()); // grown by the first launch
    /// run(&gpu, MatmulVariant::Auto, &mut mats)?;
    /// assert!(mats.workspace().is_some());
    /// # Ok(()) }
    /// ```
    pub fn workspace(&self) -> Option<&CudaSlice<u8>> {
        self.workspace.as_ref()
    }

    /// `A` and `B` to read and `C` to write, for a launch outside the planner (cuBLAS).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[1.0; 12])?;
    /// let (a, b, c) = mats.operands_and_c();
    /// // ... a cuBLAS sgemm reading `a` and `b`, writing `c` ...
    /// assert_eq!((a.len(), b.len(), c.len()), (6, 12, 8));
    /// # Ok(()) }
    /// ```
    pub fn operands_and_c(&mut self) -> (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>) {
        (&self.a, &self.b, &mut self.c)
    }

    /// `A` and `B` rounded to BF16 (to nearest, ties to even), made on the first call: the
    /// operands of `wgmma_bf16`'s plans and of cuBLAS's BF16 baseline (`A` and `B` are never
    /// written afterwards, so the copies stay theirs).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(1, 1, 1)?, &[1.0 + 1.0 / 1024.0], &[3.0])?;
    /// let (a, _b) = mats.bf16_operands(&gpu)?;
    /// assert_eq!(gpu.download(a)?, [half::bf16::ONE]); // rounded to 8 bits
    /// # Ok(()) }
    /// ```
    pub fn bf16_operands(&mut self, gpu: &Gpu) -> Result<(&CudaSlice<half::bf16>, &CudaSlice<half::bf16>)> {
        if self.bf16.is_none() {
            let s = self.shape;
            let f32 = Layout::row_major(DType::F32);
            let mut a = gpu.zeros::<half::bf16>(s.m * s.k)?;
            let mut b = gpu.zeros::<half::bf16>(s.k * s.n)?;
            convert_matrix(gpu, &self.a, f32, &mut a, s.k, (s.m, s.k))?;
            convert_matrix(gpu, &self.b, f32, &mut b, s.n, (s.k, s.n))?;
            self.bf16 = Some((a, b));
        }
        let (a, b) = self.bf16.as_ref().expect("made above");
        Ok((a, b))
    }

    /// `A` and `B` rounded to F16 (to nearest, ties to even), made on the first call: the
    /// operands of `wgmma_f16`'s plans and of cuBLAS's FP16 baseline. Refused with
    /// [`Error::OutOfRange`] (the first offending element, `A`'s before `B`'s) when an input is
    /// finite but beyond F16's range (`|x| >= 65520`, which rounds to an infinity): the product
    /// would silently hold infinities or NaN where the `f32` inputs have none.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let shape = MatmulShape::new(1, 1, 1)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, shape, &[1.0 + 1.0 / 4096.0], &[3.0])?;
    /// let (a, _b) = mats.f16_operands(&gpu)?;
    /// assert_eq!(gpu.download(a)?, [half::f16::ONE]); // rounded to 10 bits
    /// let mut big = DeviceMatrices::upload(&gpu, shape, &[1.0], &[1.0e5])?;
    /// assert!(matches!(big.f16_operands(&gpu), Err(Error::OutOfRange { operand: "B", index: 0, .. })));
    /// # Ok(()) }
    /// ```
    pub fn f16_operands(&mut self, gpu: &Gpu) -> Result<(&CudaSlice<half::f16>, &CudaSlice<half::f16>)> {
        if let Some((operand, index, value)) = self.f16_overflow {
            return Err(Error::OutOfRange { operand, index, value, dtype: DType::F16 });
        }
        if self.f16.is_none() {
            let s = self.shape;
            let f32 = Layout::row_major(DType::F32);
            let mut a = gpu.zeros::<half::f16>(s.m * s.k)?;
            let mut b = gpu.zeros::<half::f16>(s.k * s.n)?;
            convert_matrix(gpu, &self.a, f32, &mut a, s.k, (s.m, s.k))?;
            convert_matrix(gpu, &self.b, f32, &mut b, s.n, (s.k, s.n))?;
            self.f16 = Some((a, b));
        }
        let (a, b) = self.f16.as_ref().expect("made above");
        Ok((a, b))
    }

    /// Fills `C` with NaN so that any element a kernel fails to write fails the check.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{DeviceMatrices, MatmulShape}};
    /// let gpu = Gpu::open(0)?;
    /// let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[1.0; 12])?;
    /// mats.poison_c(&gpu)?;
    /// assert!(gpu.download(mats.c())?.iter().all(|c| c.is_nan()));
    /// # Ok(()) }
    /// ```
    pub fn poison_c(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_u32_pattern(&mut self.c, f32::NAN.to_bits())
    }
}

/// The plan of `variant` for `C = A B` on `shape` (row-major, `f32` `C`), under `options`:
/// `f32` operands, or for the BF16 variants (`wgmma_bf16`, `decode_bf16`) and `wgmma_f16` the
/// matrices' BF16 or F16 copies ([`DeviceMatrices::bf16_operands`], [`DeviceMatrices::f16_operands`]).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{MatmulShape, MatmulVariant, PlanOptions, plan_gemm};
/// let gpu = Gpu::open(0)?;
/// let plan = plan_gemm(&gpu, MatmulVariant::WgmmaBf16, MatmulShape::new(4096, 4096, 4096)?, PlanOptions::default())?;
/// assert_eq!(plan.desc().a.dtype.name(), "bf16"); // runs on the matrices' BF16 copies
/// # Ok(()) }
/// ```
pub fn plan_gemm(gpu: &Gpu, variant: MatmulVariant, shape: MatmulShape, options: PlanOptions) -> Result<GemmPlan> {
    let mut desc = GemmDesc::new(shape.m, shape.n, shape.k)
        .variant(variant)
        .policy(options.policy)
        .split_k(options.split)
        .tile(options.tile);
    let operands = match variant.precision() {
        super::Precision::Bf16 => Some(DType::Bf16),
        super::Precision::Fp16 => Some(DType::F16),
        _ => None,
    };
    if let Some(dtype) = operands {
        desc = desc.a(Layout::row_major(dtype)).b(Layout::row_major(dtype));
    }
    GemmPlan::new(gpu, desc)
}

/// Enqueues `plan` on the matrices (on `gpu`'s stream), growing their workspace first if the plan
/// needs more (after checking free memory).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, MatmulVariant, PlanOptions, launch_plan, plan_gemm};
/// let gpu = Gpu::open(0)?;
/// let shape = MatmulShape::new(1024, 1024, 1024)?;
/// let mut mats = DeviceMatrices::upload(&gpu, shape, &vec![1.0; 1 << 20], &vec![1.0; 1 << 20])?;
/// let plan = plan_gemm(&gpu, MatmulVariant::Auto, shape, PlanOptions::default())?;
/// for _ in 0..10 {
///     launch_plan(&gpu, &plan, &mut mats)?; // enqueued only
/// }
/// gpu.synchronize()?;
/// # Ok(()) }
/// ```
pub fn launch_plan(gpu: &Gpu, plan: &GemmPlan, mats: &mut DeviceMatrices) -> Result<()> {
    let bytes = plan.workspace_bytes().max(1);
    if mats.workspace.as_ref().is_none_or(|w| w.len() < bytes) {
        gpu.ensure_fits(&format!("the workspace of a {} matmul", mats.shape), bytes as u64)?;
        mats.workspace = Some(gpu.zeros(bytes)?);
    }
    match plan.desc().a.dtype {
        DType::Bf16 => {
            mats.bf16_operands(gpu)?;
        }
        DType::F16 => {
            mats.f16_operands(gpu)?;
        }
        DType::F32 => {}
    }
    let workspace = mats.workspace.as_mut().expect("allocated above");
    match (plan.desc().a.dtype, &mats.bf16, &mats.f16) {
        (DType::Bf16, Some((a, b)), _) => plan.launch(gpu, a, b, &mut mats.c, workspace),
        (DType::F16, _, Some((a, b))) => plan.launch(gpu, a, b, &mut mats.c, workspace),
        _ => plan.launch(gpu, &mats.a, &mats.b, &mut mats.c, workspace),
    }
}

/// Runs `plan` once on poisoned `C` and returns `C` (synchronizing the stream).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, MatmulVariant, PlanOptions, plan_gemm, run_plan};
/// let gpu = Gpu::open(0)?;
/// let shape = MatmulShape::new(2, 3, 4)?;
/// let mut mats = DeviceMatrices::upload(&gpu, shape, &[1.0; 6], &[2.0; 12])?;
/// let plan = plan_gemm(&gpu, MatmulVariant::Naive, shape, PlanOptions::default())?;
/// assert_eq!(run_plan(&gpu, &plan, &mut mats)?, [6.0; 8]);
/// # Ok(()) }
/// ```
pub fn run_plan(gpu: &Gpu, plan: &GemmPlan, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
    mats.poison_c(gpu)?;
    launch_plan(gpu, plan, mats)?;
    gpu.synchronize()?;
    gpu.download(&mats.c)
}

/// Runs `variant` once (default policy) on poisoned `C` and returns `C`.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, MatmulVariant, run};
/// let gpu = Gpu::open(0)?;
/// let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(2, 3, 4)?, &[1.0; 6], &[2.0; 12])?;
/// assert_eq!(run(&gpu, MatmulVariant::Tiled16, &mut mats)?, [6.0; 8]);
/// # Ok(()) }
/// ```
pub fn run(gpu: &Gpu, variant: MatmulVariant, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
    let plan = plan_gemm(
        gpu,
        variant,
        mats.shape,
        PlanOptions { policy: PrecisionPolicy::default(), split: None, tile: None, ..PlanOptions::default() },
    )?;
    run_plan(gpu, &plan, mats)
}
