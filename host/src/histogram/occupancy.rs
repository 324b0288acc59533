//! The plan for an opened device: every grid sized from the driver's occupancy query for the
//! kernel that will run (its registers included), and the functions with the attributes their
//! plans need.

use super::plan::*;
use super::{HistogramLimits, HistogramTier};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::{Gpu, cluster_attribute, launch_config_ex};
use cudarc::driver::CudaFunction;
use cudarc::driver::sys::{self, CUfunction_attribute as FnAttr};
use kernels::histogram::InputType;
use kernels::histogram::bucketed::{self, KERNEL_BUCKET_BINS, SCATTER_THREADS};
use kernels::histogram::shared_bytes;
use kernels::histogram::sorted::{self, KERNEL_SORTED_BINS};

/// Plans for the opened device: [`plan_for`] with its limits, then every grid from the driver's
/// occupancy query for the kernel that runs it (for the request's input type): its registers
/// limit residency as much as threads and shared memory do, and clusters must fit in one GPC,
/// which the estimate cannot see. Fails if the driver cannot keep a single block (or cluster)
/// of the plan resident.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{self, HistogramTier}};
/// let gpu = Gpu::open(0)?;
/// let plan = histogram::plan(&gpu, 1 << 20, None)?;
/// println!("{plan}"); // the tier, and grids the driver says stay resident
/// let forced = histogram::plan(&gpu, 1 << 20, Some(HistogramTier::Global))?;
/// assert_eq!(forced.tier(), HistogramTier::Global);
/// # Ok(()) }
/// ```
pub fn plan(gpu: &Gpu, bins: usize, forced: Option<HistogramTier>) -> Result<HistogramPlan> {
    plan_with(gpu, bins, PlanRequest { tier: forced, ..PlanRequest::default() })
}

/// [`plan`] with more of the plan fixed by the caller.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{self, InputType, PlanRequest}};
/// let gpu = Gpu::open(0)?;
/// // Grids sized by the occupancy of the u8 kernels.
/// let request = PlanRequest { element: Some(InputType::U8), ..PlanRequest::default() };
/// let plan = histogram::plan_with(&gpu, 256, request)?;
/// assert_eq!(plan.threads_per_block(), 1024);
/// # Ok(()) }
/// ```
pub fn plan_with(gpu: &Gpu, bins: usize, request: PlanRequest) -> Result<HistogramPlan> {
    let limits = HistogramLimits::of(gpu)?;
    // The shared tier's threads and copies from the occupancy query (tuning.rs).
    let request = super::tuning::shared_tier_request(gpu, &limits, bins, request)?;
    let mut plan = plan_for(&limits, bins, request)?;
    let element = request.element.unwrap_or(InputType::I32);
    let sms = limits.sm_count;
    // Blocks of `name` with `threads` threads and `shared` bytes of dynamic shared memory that
    // the whole device keeps resident.
    let resident = |name: &'static str, threads: u32, shared: u32| -> Result<u32> {
        let func = gpu.function(name)?;
        func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
        let per_sm = func.occupancy_max_active_blocks_per_multiprocessor(threads, shared as usize, None)?;
        if per_sm == 0 {
            return Err(Error::InvalidArgument(format!(
                "the driver cannot keep one block of {name} ({threads} threads, {} of shared memory) resident on this device: try fewer threads per block",
                format_bytes(shared as u64)
            )));
        }
        Ok(per_sm * sms)
    };
    let kernels = element.kernels();
    if plan.tier == HistogramTier::Packed && request.threads_per_block.is_none() {
        // The packed kernels' registers may not allow the planned block (the 6-bit kernels, which
        // read a counter's own carry-table slot, are capped at 768 threads): as many as fit.
        plan.threads_per_block = threads_that_fit(gpu, plan.kernel(element), plan.threads_per_block)?;
    }
    match plan.tier {
        HistogramTier::Shared | HistogramTier::Packed | HistogramTier::Global => {
            plan.blocks = resident(plan.kernel(element), plan.threads_per_block, plan.shared_bytes)?;
        }
        HistogramTier::Bucketed => {
            plan.blocks = resident(KERNEL_BUCKET_BINS, plan.threads_per_block, plan.shared_bytes)?;
            plan.scatter_blocks = resident(kernels.scatter, SCATTER_THREADS, 0)?;
            let count_shared = shared_bytes(bucketed::bucket_count(plan.bins, plan.bucket_shift) * plan.copies);
            plan.count_blocks = resident(kernels.shared, THREADS_PER_BLOCK, count_shared)?;
        }
        HistogramTier::Sorted => {
            let buckets = bucketed::bucket_count(plan.bins, plan.bucket_shift);
            let waves = request.bins_pass_waves.unwrap_or(BINS_PASS_WAVES);
            plan.blocks =
                (waves * resident(KERNEL_SORTED_BINS, plan.threads_per_block, plan.shared_bytes)?).max(buckets + 1);
            let threads = tile_sort_threads(gpu, element, plan.threads_per_block)?;
            plan.scatter_blocks = resident(kernels.tile_sort, threads, sorted::stage_bytes(threads, element.size()))?;
        }
        HistogramTier::Cluster => {}
    }
    if plan.tier == HistogramTier::Cluster {
        let func = prepared_function(gpu, &plan, element)?;
        let mut attr = cluster_attribute(plan.cluster_size);
        let config = launch_config_ex(plan.launch_config(), gpu.stream(), &mut attr);
        let mut clusters = 0;
        // SAFETY: valid function and configuration; writes one int.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, func.cu_function(), &config).result()? };
        if clusters <= 0 {
            return Err(Error::InvalidArgument(format!(
                "the driver cannot schedule a cluster of {} blocks with {} of shared memory each on this device",
                plan.cluster_size,
                format_bytes(plan.shared_bytes as u64)
            )));
        }
        plan.blocks = clusters as u32 * plan.cluster_size;
    }
    Ok(plan)
}

/// Threads per tile-sort block for `element` values: the plan's `threads`, or fewer (a multiple of
/// 32) where the kernel's registers do not allow that many in one block (the checked build's
/// `u8` kernel takes 145 registers: at most 448 threads).
pub(super) fn tile_sort_threads(gpu: &Gpu, element: InputType, threads: u32) -> Result<u32> {
    threads_that_fit(gpu, element.kernels().tile_sort, threads)
}

/// `threads`, or the most below it (a multiple of 32) that one block of `kernel` may have with
/// the kernel's registers.
pub(super) fn threads_that_fit(gpu: &Gpu, kernel: &'static str, threads: u32) -> Result<u32> {
    let most = gpu.function(kernel)?.get_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    let most = (most.max(0) as u32) / 32 * 32;
    if most == 0 {
        return Err(Error::InvalidArgument(format!("{kernel} cannot run a block of 32 threads on this device")));
    }
    Ok(threads.min(most))
}

/// The tier's kernel for `input` with the attributes its plan needs: dynamic shared memory above
/// 48 KiB, and non-portable cluster sizes above 8.
pub(super) fn prepared_function(gpu: &Gpu, plan: &HistogramPlan, input: InputType) -> Result<CudaFunction> {
    let func = gpu.function(plan.kernel(input))?;
    func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, plan.shared_bytes as i32)?;
    if plan.cluster_size > PORTABLE_CLUSTER_SIZE {
        func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
    }
    Ok(func)
}
