//! Launch planning for `kernels::histogram`: which tier (block shared memory, cluster distributed
//! shared memory, global memory), which cluster size, how many blocks, how much shared memory.
//!
//! [`plan_for`] is pure (device limits in, plan out) so its choices are unit-tested for the H100
//! and for smaller devices; [`plan`] takes the limits from the device and confirms cluster plans
//! with the driver's occupancy query.

use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUfunction_attribute as FnAttr};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use kernels::histogram::{KERNEL_CLUSTER, KERNEL_GLOBAL, KERNEL_SHARED, shared_bytes};
use std::ffi::c_void;

/// Where the counters live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistogramTier {
    /// One private histogram per block in its shared memory.
    Shared,
    /// One histogram per thread-block cluster, spread over its blocks' shared memory.
    Cluster,
    /// The counters in global memory, one atomic per value.
    Global,
}

impl HistogramTier {
    /// Every tier, fastest first.
    pub const ALL: [Self; 3] = [Self::Shared, Self::Cluster, Self::Global];

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Cluster => "cluster",
            Self::Global => "global",
        }
    }

    fn kernel(self) -> &'static str {
        match self {
            Self::Shared => KERNEL_SHARED,
            Self::Cluster => KERNEL_CLUSTER,
            Self::Global => KERNEL_GLOBAL,
        }
    }
}

/// The device limits the planner needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramLimits {
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Shared memory one block may opt in to, bytes.
    pub max_shared_per_block_optin: u32,
    /// Shared memory per multiprocessor, bytes.
    pub max_shared_per_sm: u32,
    /// Shared memory the system reserves per resident block, bytes.
    pub reserved_shared_per_block: u32,
    /// Resident threads per multiprocessor.
    pub max_threads_per_sm: u32,
    /// Largest cluster: 8 (portable) or 16 where the device allows non-portable sizes; 1 where
    /// the device has no clusters (before sm_90).
    pub max_cluster_size: u32,
}

impl HistogramLimits {
    /// An H100 SXM (80 GB HBM3), as its driver reports it.
    pub const H100: Self = Self {
        sm_count: 132,
        max_shared_per_block_optin: 232_448,
        max_shared_per_sm: 233_472,
        reserved_shared_per_block: 1024,
        max_threads_per_sm: 2048,
        max_cluster_size: 16,
    };

    /// Bins one block's shared memory holds.
    pub fn block_capacity(&self) -> u64 {
        (self.max_shared_per_block_optin / 4) as u64
    }

    /// Bins the largest cluster's distributed shared memory holds: the most a forced cluster
    /// tier takes.
    pub fn cluster_capacity(&self) -> u64 {
        self.max_cluster_size as u64 * self.block_capacity()
    }

    /// Bins the planner puts in the cluster tier on its own: clusters of up to
    /// [`MAX_AUTO_CLUSTER_SIZE`] blocks.
    pub fn auto_cluster_capacity(&self) -> u64 {
        self.max_cluster_size.min(MAX_AUTO_CLUSTER_SIZE) as u64 * self.block_capacity()
    }

    /// Reads the limits of the opened device; the largest cluster comes from the driver's
    /// occupancy query with non-portable sizes allowed.
    pub fn of(gpu: &Gpu) -> Result<Self> {
        let ctx = gpu.context();
        let attr = |a: Attr| ctx.attribute(a).map(|v| v as u32);
        let info = gpu.info();
        let max_cluster_size = if info.compute_capability.0 >= 9 {
            let cluster = gpu.function(KERNEL_CLUSTER)?;
            cluster.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
            let cfg = LaunchConfig { grid_dim: (16, 1, 1), block_dim: (THREADS_PER_BLOCK, 1, 1), shared_mem_bytes: 0 };
            cluster.occupancy_max_potential_cluster_size(cfg, gpu.stream())?.max(1)
        } else {
            1
        };
        Ok(Self {
            sm_count: info.sm_count,
            max_shared_per_block_optin: info.max_shared_per_block_optin,
            max_shared_per_sm: info.max_shared_per_sm,
            reserved_shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_cluster_size,
        })
    }
}

/// Threads per block unless the request names another count.
pub const THREADS_PER_BLOCK: u32 = 512;

/// What the caller fixes of a plan; `None` leaves the choice to the planner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanRequest {
    /// The tier.
    pub tier: Option<HistogramTier>,
    /// Blocks per cluster (cluster tier only).
    pub cluster_size: Option<u32>,
    /// Threads per block: a multiple of 32 up to 1024.
    pub threads_per_block: Option<u32>,
}

/// Portable cluster size limit; larger clusters need the non-portable function attribute.
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;

/// The largest cluster the planner chooses on its own. In a cluster of `c` blocks, `(c - 1) / c`
/// of the adds cross the cluster's network; measured on an H100 (2^26 uniform values), clusters
/// of up to 4 beat global atomics (131,072 bins: cluster of 4 0.744 ms, global 0.863 ms) and a
/// cluster of 5 loses to them (262,144 bins: 0.876 ms against 0.801 ms).
pub const MAX_AUTO_CLUSTER_SIZE: u32 = 4;

/// A planned histogram launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HistogramPlan {
    /// Where the counters live.
    pub tier: HistogramTier,
    /// Blocks per cluster (1 outside the cluster tier).
    pub cluster_size: u32,
    /// Blocks in the grid (a multiple of `cluster_size`).
    pub blocks: u32,
    /// Threads per block.
    pub threads_per_block: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Bins each block holds in shared memory (0 for the global tier).
    pub bins_per_block: u32,
    /// Bins of the histogram.
    pub bins: u32,
}

impl std::fmt::Display for HistogramPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tier", self.tier.name())?;
        if self.tier == HistogramTier::Cluster {
            write!(f, ", cluster of {} blocks", self.cluster_size)?;
        }
        write!(f, ", {} blocks x {} threads", self.blocks, self.threads_per_block)?;
        if self.tier != HistogramTier::Global {
            write!(
                f,
                ", {} shared per block ({} bins each)",
                format_bytes(self.shared_bytes as u64),
                self.bins_per_block
            )?;
        }
        Ok(())
    }
}

/// Plans a histogram of `bins` bins for a device with `limits`: the shared tier when one block
/// holds every bin, else the cluster tier with the smallest cluster that holds them (the most
/// adds stay in the block's own shared memory) up to [`MAX_AUTO_CLUSTER_SIZE`] blocks, else the
/// global tier. The request can fix the
/// tier, the cluster size (cluster tier only) and the threads per block. The grid is persistent:
/// as many blocks as the device keeps resident at once, estimated from threads and shared memory.
pub fn plan_for(limits: &HistogramLimits, bins: usize, request: PlanRequest) -> Result<HistogramPlan> {
    let PlanRequest { tier: forced, cluster_size, threads_per_block } = request;
    let threads = threads_per_block.unwrap_or(THREADS_PER_BLOCK);
    if threads == 0 || threads > 1024 || threads % 32 != 0 {
        return Err(HostError::InvalidInput(format!(
            "{threads} threads per block: use a multiple of 32 from 32 to 1024"
        )));
    }
    check_bins(bins)?;
    let capacity = limits.block_capacity() as usize;
    if cluster_size.is_some() && forced.is_some_and(|t| t != HistogramTier::Cluster) {
        return Err(HostError::InvalidInput("--cluster applies to the cluster tier only".into()));
    }
    let tier = match (forced, cluster_size) {
        (Some(tier), _) => tier,
        (None, Some(_)) => HistogramTier::Cluster,
        (None, None) if bins <= capacity => HistogramTier::Shared,
        (None, None) if bins as u64 <= limits.auto_cluster_capacity() => HistogramTier::Cluster,
        (None, None) => HistogramTier::Global,
    };
    let bins32 = bins as u32;
    let persistent = |shared: u32, threads: u32, cluster: u32| -> u32 {
        let by_threads = limits.max_threads_per_sm / threads;
        let by_shared =
            if shared == 0 { u32::MAX } else { limits.max_shared_per_sm / (shared + limits.reserved_shared_per_block) };
        let per_sm = by_threads.min(by_shared).max(1);
        (limits.sm_count * per_sm / cluster).max(1) * cluster
    };
    match tier {
        HistogramTier::Shared => {
            if bins > capacity {
                return Err(HostError::InvalidInput(format!(
                    "{bins} bins need {} of shared memory per block, but a block of this device gets at most {} ({capacity} bins): use the cluster or global tier",
                    format_bytes(4 * bins as u64),
                    format_bytes(limits.max_shared_per_block_optin as u64)
                )));
            }
            let shared = shared_bytes(bins32);
            Ok(HistogramPlan {
                tier,
                cluster_size: 1,
                blocks: persistent(shared, threads, 1),
                threads_per_block: threads,
                shared_bytes: shared,
                bins_per_block: bins32,
                bins: bins32,
            })
        }
        HistogramTier::Cluster => {
            if bins > capacity && limits.max_cluster_size <= 1 {
                return Err(HostError::InvalidInput(
                    "this device has no thread-block clusters (sm_90 or later)".into(),
                ));
            }
            let smallest = bins.div_ceil(capacity) as u32;
            let size = match cluster_size {
                Some(c) if c == 0 || c > limits.max_cluster_size => {
                    return Err(HostError::InvalidInput(format!(
                        "cluster size {c}: this device allows 1 to {}",
                        limits.max_cluster_size
                    )));
                }
                Some(c) if c < smallest => {
                    return Err(HostError::InvalidInput(format!(
                        "{bins} bins do not fit in a cluster of {c} blocks ({} bins each): it needs at least {smallest}",
                        capacity
                    )));
                }
                Some(c) => c,
                None if smallest > limits.max_cluster_size => {
                    return Err(HostError::InvalidInput(format!(
                        "{bins} bins exceed the largest cluster's shared memory ({} bins in {} blocks): use the global tier",
                        limits.cluster_capacity(),
                        limits.max_cluster_size
                    )));
                }
                None => smallest.max(1),
            };
            let per_block = bins32.div_ceil(size);
            let shared = shared_bytes(per_block);
            Ok(HistogramPlan {
                tier,
                cluster_size: size,
                blocks: persistent(shared, threads, size),
                threads_per_block: threads,
                shared_bytes: shared,
                bins_per_block: per_block,
                bins: bins32,
            })
        }
        HistogramTier::Global => Ok(HistogramPlan {
            tier,
            cluster_size: 1,
            blocks: persistent(0, threads, 1),
            threads_per_block: threads,
            shared_bytes: 0,
            bins_per_block: 0,
            bins: bins32,
        }),
    }
}

/// Fails unless `bins` is a bin count some `i32` input can fill: 1 to `i32::MAX`.
pub fn check_bins(bins: usize) -> Result<()> {
    if bins == 0 {
        return Err(HostError::InvalidInput("bins is 0: a histogram needs at least one bin".into()));
    }
    if bins > i32::MAX as usize {
        return Err(HostError::InvalidInput(format!(
            "{bins} bins: values are i32, so at most {} bins can be hit",
            i32::MAX
        )));
    }
    Ok(())
}

/// Plans for the opened device: [`plan_for`] with its limits, then, for the cluster tier, the
/// grid from the driver's occupancy query (clusters must fit in one GPC, which the estimate
/// cannot see); fails if the driver cannot schedule a single such cluster.
pub fn plan(gpu: &Gpu, bins: usize, forced: Option<HistogramTier>) -> Result<HistogramPlan> {
    plan_with(gpu, bins, PlanRequest { tier: forced, ..PlanRequest::default() })
}

/// [`plan`] with more of the plan fixed by the caller.
pub fn plan_with(gpu: &Gpu, bins: usize, request: PlanRequest) -> Result<HistogramPlan> {
    let limits = HistogramLimits::of(gpu)?;
    let mut plan = plan_for(&limits, bins, request)?;
    if plan.tier == HistogramTier::Cluster {
        let func = prepared_function(gpu, &plan)?;
        let mut attr = cluster_attribute(plan.cluster_size);
        let config = cluster_launch_config(&plan, gpu, &mut attr);
        let mut clusters = 0;
        // SAFETY: valid function and configuration; writes one int.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, func.cu_function(), &config).result()? };
        if clusters <= 0 {
            return Err(HostError::InvalidInput(format!(
                "the driver cannot schedule a cluster of {} blocks with {} of shared memory each on this device",
                plan.cluster_size,
                format_bytes(plan.shared_bytes as u64)
            )));
        }
        plan.blocks = clusters as u32 * plan.cluster_size;
    }
    Ok(plan)
}

/// Where a GPU histogram's counts first differ from the CPU's, in words (for a failed check);
/// `None` when they are equal.
pub fn first_count_difference(got: &[u32], want: &[u32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} bins came back, {} expected", got.len(), want.len()));
    }
    let i = got.iter().zip(want).position(|(g, w)| g != w)?;
    let total: u64 = got.iter().map(|&c| c as u64).sum();
    let expected: u64 = want.iter().map(|&c| c as u64).sum();
    Some(format!("bin {i} holds {} instead of {}; {total} values counted of {expected}", got[i], want[i]))
}

/// Input values and counters on the device.
pub struct DeviceHistogram {
    input: CudaSlice<i32>,
    n: usize,
    counts: CudaSlice<u32>,
}

impl DeviceHistogram {
    /// Uploads `values` and allocates `bins` counters, after checking sizes and free memory.
    pub fn upload(gpu: &Gpu, values: &[i32], bins: usize) -> Result<Self> {
        check_bins(bins)?;
        if values.len() > u32::MAX as usize {
            return Err(HostError::InvalidInput(format!(
                "{} values: counts are u32, so at most {} values",
                values.len(),
                u32::MAX
            )));
        }
        let bytes = 4 * (values.len().max(1) as u64 + bins as u64);
        gpu.ensure_fits(&format!("a histogram of {} values into {bins} bins", values.len()), bytes)?;
        // An empty input still gets a one-element buffer: no kernel reads it (n = 0 launches none).
        let input = if values.is_empty() { gpu.zeros(1)? } else { gpu.upload(values)? };
        Ok(Self { input, n: values.len(), counts: gpu.zeros(bins)? })
    }

    /// Number of input values.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no input values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.counts.len()
    }
}

/// Zeroes the counters and enqueues the planned kernel on the GPU's stream.
pub fn launch(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<()> {
    if plan.bins as usize != h.bins() {
        return Err(HostError::InvalidInput(format!(
            "the plan is for {} bins, the buffers hold {}",
            plan.bins,
            h.bins()
        )));
    }
    gpu.stream().memset_zeros(&mut h.counts)?;
    if h.n == 0 {
        return Ok(());
    }
    let func = prepared_function(gpu, plan)?;
    let n = h.n as u64;
    match plan.tier {
        HistogramTier::Shared | HistogramTier::Global => {
            let cfg = LaunchConfig {
                grid_dim: (plan.blocks, 1, 1),
                block_dim: (plan.threads_per_block, 1, 1),
                shared_mem_bytes: plan.shared_bytes,
            };
            let mut launch = gpu.stream().launch_builder(&func);
            launch.arg(&h.input).arg(&n).arg(&mut h.counts).arg(&plan.bins);
            // SAFETY: kernel contract (kernels::histogram): input holds n values, counts holds
            // `bins` counters, and the launch provides bins * 4 bytes of shared memory (shared tier).
            unsafe { launch.launch(cfg) }?;
        }
        HistogramTier::Cluster => {
            let stream = gpu.stream();
            let (input, _input_sync) = h.input.device_ptr(stream);
            let (counts, _counts_sync) = h.counts.device_ptr_mut(stream);
            let (mut input, mut n, mut counts, mut bins, mut per_block) =
                (input, n, counts, plan.bins, plan.bins_per_block);
            let mut params: [*mut c_void; 5] = [
                (&mut input as *mut u64).cast(),
                (&mut n as *mut u64).cast(),
                (&mut counts as *mut u64).cast(),
                (&mut bins as *mut u32).cast(),
                (&mut per_block as *mut u32).cast(),
            ];
            let mut attr = cluster_attribute(plan.cluster_size);
            let config = cluster_launch_config(plan, gpu, &mut attr);
            // SAFETY: kernel contract: the parameters match histogram_cluster's signature, the
            // grid is a multiple of the cluster size, cluster_size * bins_per_block >= bins, and
            // the dynamic shared memory is bins_per_block * 4 bytes.
            unsafe {
                sys::cuLaunchKernelEx(&config, func.cu_function(), params.as_mut_ptr(), std::ptr::null_mut())
                    .result()?
            };
        }
    }
    Ok(())
}

/// Runs the planned kernel once and returns the counts.
pub fn run(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<Vec<u32>> {
    launch(gpu, plan, h)?;
    gpu.synchronize()?;
    gpu.download(&h.counts)
}

/// The tier's kernel with the attributes its plan needs: dynamic shared memory above 48 KiB, and
/// non-portable cluster sizes above 8.
fn prepared_function(gpu: &Gpu, plan: &HistogramPlan) -> Result<CudaFunction> {
    let func = gpu.function(plan.tier.kernel())?;
    func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, plan.shared_bytes as i32)?;
    if plan.cluster_size > PORTABLE_CLUSTER_SIZE {
        func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
    }
    Ok(func)
}

/// The plan as a `cuLaunchKernelEx` configuration carrying `cluster` (which must outlive it).
fn cluster_launch_config(plan: &HistogramPlan, gpu: &Gpu, cluster: &mut sys::CUlaunchAttribute) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: plan.blocks,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: plan.threads_per_block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: plan.shared_bytes,
        hStream: gpu.stream().cu_stream(),
        attrs: cluster,
        numAttrs: 1,
    }
}

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` of `size x 1 x 1` blocks.
fn cluster_attribute(size: u32) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero launch attribute is a valid value of this plain C union.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = size;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

#[cfg(test)]
mod tests {
    use super::*;
    use HistogramTier::*;

    const H100: HistogramLimits = HistogramLimits::H100;
    /// A smaller device: 48 KiB of shared memory per block, portable clusters of up to 8.
    const SMALL: HistogramLimits = HistogramLimits {
        sm_count: 20,
        max_shared_per_block_optin: 49_152,
        max_shared_per_sm: 65_536,
        reserved_shared_per_block: 1024,
        max_threads_per_sm: 1536,
        max_cluster_size: 8,
    };

    #[test]
    fn one_block_capacity_is_the_last_bin_count_of_the_shared_tier() {
        let capacity = H100.block_capacity() as usize;
        assert_eq!(capacity, 58_112);
        let at = plan_for(&H100, capacity, PlanRequest::default()).unwrap();
        assert_eq!((at.tier, at.shared_bytes, at.bins_per_block), (Shared, 232_448, 58_112));
        let above = plan_for(&H100, capacity + 1, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.cluster_size, above.bins_per_block), (Cluster, 2, 29_057));
    }

    #[test]
    fn four_blocks_capacity_is_the_last_bin_count_the_planner_puts_in_a_cluster() {
        let four = H100.auto_cluster_capacity() as usize;
        assert_eq!(four, 4 * 58_112);
        let at = plan_for(&H100, four, PlanRequest::default()).unwrap();
        assert_eq!((at.tier, at.cluster_size, at.bins_per_block), (Cluster, 4, 58_112));
        assert_eq!(plan_for(&H100, four + 1, PlanRequest::default()).unwrap().tier, Global);
    }

    #[test]
    fn full_cluster_capacity_is_the_last_bin_count_of_a_forced_cluster_tier() {
        let full = H100.cluster_capacity() as usize;
        assert_eq!(full, 16 * 58_112);
        let cluster = PlanRequest { tier: Some(Cluster), ..PlanRequest::default() };
        let at = plan_for(&H100, full, cluster).unwrap();
        assert_eq!((at.tier, at.cluster_size, at.bins_per_block), (Cluster, 16, 58_112));
        assert!(plan_for(&H100, full + 1, cluster).is_err());
        assert_eq!(plan_for(&H100, full, PlanRequest::default()).unwrap().tier, Global);
    }

    #[test]
    fn planner_picks_the_smallest_cluster_that_holds_the_bins() {
        assert_eq!(plan_for(&H100, 65_536, PlanRequest::default()).unwrap().cluster_size, 2);
        assert_eq!(plan_for(&H100, 131_072, PlanRequest::default()).unwrap().cluster_size, 3);
        assert_eq!(plan_for(&H100, 196_608, PlanRequest::default()).unwrap().cluster_size, 4);
        assert_eq!(plan_for(&H100, 262_144, PlanRequest::default()).unwrap().tier, Global);
        assert_eq!(plan_for(&H100, 256, PlanRequest::default()).unwrap().tier, Shared);
        assert_eq!(plan_for(&H100, 1 << 20, PlanRequest::default()).unwrap().tier, Global);
    }

    #[test]
    fn smaller_device_moves_every_boundary_down() {
        assert_eq!(SMALL.block_capacity(), 12_288);
        assert_eq!(plan_for(&SMALL, 12_288, PlanRequest::default()).unwrap().tier, Shared);
        let above = plan_for(&SMALL, 12_289, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.cluster_size), (Cluster, 2));
        assert_eq!(plan_for(&SMALL, 4 * 12_288, PlanRequest::default()).unwrap().cluster_size, 4);
        assert_eq!(plan_for(&SMALL, 4 * 12_288 + 1, PlanRequest::default()).unwrap().tier, Global);
        let forced = PlanRequest { tier: Some(Cluster), ..PlanRequest::default() };
        assert_eq!(plan_for(&SMALL, 8 * 12_288, forced).unwrap().cluster_size, 8);
        assert!(plan_for(&SMALL, 8 * 12_288 + 1, forced).is_err());
    }

    #[test]
    fn grid_is_persistent_and_a_multiple_of_the_cluster() {
        // 256 bins: threads limit residency to 2048 / 512 = 4 blocks per SM.
        assert_eq!(plan_for(&H100, 256, PlanRequest::default()).unwrap().blocks, 4 * 132);
        // 58112 bins: one block's 227 KiB leave room for one block per SM.
        assert_eq!(plan_for(&H100, 58_112, PlanRequest::default()).unwrap().blocks, 132);
        let c = plan_for(&H100, 131_072, PlanRequest::default()).unwrap();
        assert_eq!(c.blocks % c.cluster_size, 0);
        assert_eq!(plan_for(&H100, 1 << 20, PlanRequest::default()).unwrap().blocks, 4 * 132);
    }

    #[test]
    fn forced_tiers_that_cannot_hold_the_bins_are_clear_errors() {
        let err = plan_for(&H100, 58_113, PlanRequest { tier: Some(Shared), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("58113 bins need") && err.contains("cluster or global tier"), "{err}");
        let err = plan_for(&H100, 16 * 58_112 + 1, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("largest cluster") && err.contains("global tier"), "{err}");
        let err = plan_for(&H100, 131_072, PlanRequest { cluster_size: Some(2), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 3"), "{err}");
        let err = plan_for(&H100, 1000, PlanRequest { cluster_size: Some(17), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("allows 1 to 16"), "{err}");
        assert!(
            plan_for(&H100, 1000, PlanRequest { tier: Some(Global), cluster_size: Some(2), ..PlanRequest::default() })
                .is_err()
        );
    }

    #[test]
    fn forced_tiers_that_hold_the_bins_are_honoured() {
        let g = plan_for(&H100, 256, PlanRequest { tier: Some(Global), ..PlanRequest::default() }).unwrap();
        assert_eq!((g.tier, g.shared_bytes), (Global, 0));
        let c = plan_for(&H100, 256, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() }).unwrap();
        assert_eq!((c.tier, c.cluster_size, c.bins_per_block), (Cluster, 1, 256));
        let guide = plan_for(&H100, 65_536, PlanRequest { cluster_size: Some(4), ..PlanRequest::default() }).unwrap();
        assert_eq!((guide.cluster_size, guide.bins_per_block, guide.shared_bytes), (4, 16_384, 65_536));
    }

    #[test]
    fn threads_per_block_are_validated_and_set_the_residency() {
        let t = |n| PlanRequest { threads_per_block: Some(n), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 256, t(1024)).unwrap().blocks, 2 * 132);
        assert_eq!(plan_for(&H100, 256, t(1024)).unwrap().threads_per_block, 1024);
        for bad in [0, 48, 1056] {
            assert!(plan_for(&H100, 256, t(bad)).unwrap_err().to_string().contains("multiple of 32"), "{bad}");
        }
    }

    #[test]
    fn count_differences_name_the_first_wrong_bin_and_the_totals() {
        assert_eq!(first_count_difference(&[1, 2, 3], &[1, 2, 3]), None);
        let d = first_count_difference(&[1, 0, 3], &[1, 2, 3]).unwrap();
        assert!(d.starts_with("bin 1 holds 0 instead of 2; 4 values counted of 6"), "{d}");
        assert!(first_count_difference(&[1], &[1, 0]).unwrap().contains("1 bins came back, 2 expected"));
    }

    #[test]
    fn zero_and_unreachable_bin_counts_are_rejected() {
        assert!(plan_for(&H100, 0, PlanRequest::default()).unwrap_err().to_string().contains("at least one bin"));
        assert!(
            plan_for(&H100, i32::MAX as usize + 1, PlanRequest::default()).unwrap_err().to_string().contains("i32")
        );
    }

    #[test]
    fn plan_description_names_tier_cluster_blocks_and_shared_memory() {
        let text = plan_for(&H100, 65_536, PlanRequest { cluster_size: Some(4), ..PlanRequest::default() })
            .unwrap()
            .to_string();
        assert!(text.starts_with("cluster tier, cluster of 4 blocks"), "{text}");
        assert!(
            text.contains("x 512 threads") && text.contains("64.00 KiB shared per block (16384 bins each)"),
            "{text}"
        );
    }
}
