//! Device matrices, input sets for timing, and the one launcher every caller goes through.

use super::plan::{MatmulDevice, MatmulPlan, plan};
use super::shape::MatmulShape;
use super::variant::MatmulVariant;
use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use crate::reference::random_matrix;
use crate::timing::rotation_sets;
use cudarc::driver::{CudaSlice, PushKernelArg};

/// `A`, `B` and `C` of one shape on the device, and what the kernels derive from them (split-K
/// workspace, the tensor-core kernels' operand copies and tensor maps). Built only by
/// [`DeviceMatrices::upload`]; `A` and `B` cannot be replaced or written afterwards, so nothing
/// derived from them can go stale, and `C` is written only by launches.
pub struct DeviceMatrices {
    pub(super) shape: MatmulShape,
    pub(super) a: CudaSlice<f32>,
    pub(super) b: CudaSlice<f32>,
    pub(super) c: CudaSlice<f32>,
    /// Split-K partial products, allocated by the first launch whose plan needs them.
    pub(super) workspace: Option<CudaSlice<f32>>,
    /// The tensor-core kernels' operand copies and tensor maps, made by their first launch.
    pub(super) tensor_core: super::wgmma::TensorCoreOperands,
}

impl DeviceMatrices {
    /// Uploads `A` and `B` and allocates `C`, after checking lengths and free device memory.
    pub fn upload(gpu: &Gpu, shape: MatmulShape, a: &[f32], b: &[f32]) -> Result<Self> {
        let (_, _, lc) = shape.lens();
        shape.check_lens(a.len(), b.len(), lc)?;
        gpu.ensure_fits(&format!("a {shape} matmul ({})", format_bytes(shape.bytes())), shape.bytes())?;
        Ok(Self {
            shape,
            a: gpu.upload(a)?,
            b: gpu.upload(b)?,
            c: gpu.zeros(lc)?,
            workspace: None,
            tensor_core: Default::default(),
        })
    }

    /// The shape the matrices hold.
    pub fn shape(&self) -> MatmulShape {
        self.shape
    }

    /// `A`, `m x k`, row-major.
    pub fn a(&self) -> &CudaSlice<f32> {
        &self.a
    }

    /// `B`, `k x n`, row-major.
    pub fn b(&self) -> &CudaSlice<f32> {
        &self.b
    }

    /// `C`, `m x n`, row-major, as the last launch wrote it.
    pub fn c(&self) -> &CudaSlice<f32> {
        &self.c
    }

    /// `A` and `B` to read and `C` to write, for a launch outside the planner (cuBLAS).
    pub(crate) fn operands_and_c(&mut self) -> (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>) {
        (&self.a, &self.b, &mut self.c)
    }

    /// `wgmma_tf32x3`'s split operands, once a launch has made them.
    pub fn split_operands(&self) -> Option<&super::wgmma::Tf32x3Operands> {
        self.tensor_core.tf32x3.as_ref()
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

/// What the planner needs of `gpu`.
pub fn device_of(gpu: &Gpu) -> MatmulDevice {
    MatmulDevice { sm_count: gpu.info().sm_count, tensor_cores: gpu.hopper_status().is_ok() }
}

/// Launches `variant` on the matrices as the planner plans it under the default policy
/// (asynchronously, on the GPU's stream).
pub fn launch(gpu: &Gpu, variant: MatmulVariant, mats: &mut DeviceMatrices) -> Result<()> {
    launch_plan(gpu, &plan(variant, mats.shape, device_of(gpu))?, mats)
}

/// Launches `plan` on the matrices (asynchronously, on the GPU's stream): the kernel, then the
/// split-K reduction when the plan splits `k`; for `wgmma_tf32x3` its scan, split, product and
/// guarded FP32 fallback. The first launch that needs a workspace allocates it (after checking
/// free memory). Fails without launching anything when the plan is for another shape.
pub fn launch_plan(gpu: &Gpu, plan: &MatmulPlan, mats: &mut DeviceMatrices) -> Result<()> {
    if plan.shape() != mats.shape {
        return Err(HostError::InvalidInput(format!(
            "a plan for {} launched on matrices of {}",
            plan.shape(),
            mats.shape
        )));
    }
    match plan.precision() {
        super::Precision::Fp32 => launch_fp32(gpu, plan, mats, 0),
        super::Precision::Tf32x3 => super::wgmma::launch_tf32x3(gpu, plan, mats, super::wgmma::Tf32x3Order::DEFAULT),
        _ => super::wgmma::launch(gpu, plan.kernel(), plan.launch_config(), mats),
    }
}

/// Launches an FP32 `plan`: its kernel and, with a split, the reduction. `guard` is 0 (they run)
/// or the device address of a split-TF32 guard (they run only on its FP32 path).
pub(super) fn launch_fp32(gpu: &Gpu, plan: &MatmulPlan, mats: &mut DeviceMatrices, guard: u64) -> Result<()> {
    let shape = mats.shape;
    let (m, k, n) = (shape.m as u32, shape.k as u32, shape.n as u32);
    let func = gpu.function(plan.kernel())?;
    let workspace_floats = plan.workspace_floats();
    if workspace_floats > mats.workspace.as_ref().map_or(0, |w| w.len()) {
        let bytes = 4 * workspace_floats as u64;
        gpu.ensure_fits(&format!("the split-K workspace of a {shape} matmul ({})", format_bytes(bytes)), bytes)?;
        mats.workspace = Some(gpu.zeros(workspace_floats)?);
    }
    let (split, reduce) = (plan.split(), plan.reduce());
    // With a split the kernel writes its partial products to the workspace, and the reduction
    // below writes C; without one it writes C.
    let out = match (&reduce, mats.workspace.as_mut()) {
        (Some(_), Some(workspace)) => workspace,
        _ => &mut mats.c,
    };
    let k_chunk = split.map(|s| s.k_chunk);
    let mut launch = gpu.stream().launch_builder(&func);
    launch.arg(&mats.a).arg(&mats.b).arg(out).arg(&m).arg(&k).arg(&n);
    // Only the kernels that split k take its chunk length and a guard.
    if let Some(k_chunk) = &k_chunk {
        launch.arg(k_chunk).arg(&guard);
    }
    // SAFETY: the kernel contracts (kernels::matmul docs): A and B hold m*k and k*n f32 (checked
    // at upload), the plan is for this shape (checked by launch_plan); the output is C (m*n) or,
    // with a split, the workspace of splits*m*n (sized above), a separate allocation; the planner
    // gives the kernel's block shape, a grid z equal to the splits, and a k_chunk that is a
    // positive multiple of 8; the guard is 0 or the scan's, written earlier on this stream.
    unsafe { launch.launch(plan.launch_config()) }?;
    if let (Some(split), Some(cfg), Some(workspace)) = (split, reduce, mats.workspace.as_ref()) {
        let reduce = gpu.function(kernels::matmul::split_k::KERNEL)?;
        let len = u32::try_from(shape.m as u64 * shape.n as u64).map_err(|_| {
            HostError::InvalidInput(format!("{shape}: the split-K reduction takes at most {} outputs", u32::MAX))
        })?;
        let splits = split.splits;
        let mut launch = gpu.stream().launch_builder(&reduce);
        launch.arg(workspace).arg(&mut mats.c).arg(&len).arg(&splits).arg(&guard);
        // SAFETY: the workspace holds splits*m*n floats written by the kernel above on the same
        // stream, C holds m*n; they are separate allocations; the guard as above.
        unsafe { launch.launch(cfg) }?;
    }
    Ok(())
}

/// Runs `variant` once (default policy) on poisoned `C` and returns `C`.
pub fn run(gpu: &Gpu, variant: MatmulVariant, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
    run_plan(gpu, &plan(variant, mats.shape, device_of(gpu))?, mats)
}

/// Runs `plan` once on poisoned `C` and returns `C`.
pub fn run_plan(gpu: &Gpu, plan: &MatmulPlan, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
    mats.poison_c(gpu)?;
    launch_plan(gpu, plan, mats)?;
    gpu.synchronize()?;
    gpu.download(&mats.c)
}
