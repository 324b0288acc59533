//! What the planner needs to know of a device, read off it or given for a model.

use super::plan::THREADS_PER_BLOCK;
use crate::error::Result;
use crate::gpu::Gpu;
use cudarc::driver::LaunchConfig;
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUfunction_attribute as FnAttr};
use kernels::histogram::InputType;
use kernels::histogram::bucketed::{self};

/// The device limits the planner needs.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
/// // A smaller GPU: 48 KiB of shared memory per block, clusters of up to 8.
/// let small = HistogramLimits {
///     sm_count: 20,
///     max_shared_per_block_optin: 49_152,
///     max_shared_per_sm: 65_536,
///     reserved_shared_per_block: 1024,
///     max_threads_per_sm: 1536,
///     max_cluster_size: 8,
/// };
/// assert_eq!(small.block_capacity(), 12_288);
/// assert_eq!(plan_for(&small, 12_289, PlanRequest::default())?.tier(), HistogramTier::Packed);
/// // Two passes of 8-bit counters with their carry plane: 2 x 32,768 bins.
/// assert_eq!(plan_for(&small, 2 * 32_768 + 1, PlanRequest::default())?.tier(), HistogramTier::Sorted);
/// # Ok(()) }
/// ```
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
    /// The limits of a device model (both Hopper models have the same SMs).
    ///
    /// ```
    /// use hopper_kernels::{gpu::DeviceModel, histogram::HistogramLimits};
    /// assert_eq!(HistogramLimits::of_model(DeviceModel::H200), HistogramLimits::H100);
    /// assert_eq!(HistogramLimits::of_model(DeviceModel::H200).sm_count, DeviceModel::H200.info().sm_count);
    /// ```
    pub fn of_model(model: crate::gpu::DeviceModel) -> Self {
        match model {
            crate::gpu::DeviceModel::H100 | crate::gpu::DeviceModel::H200 => Self::H100,
        }
    }

    /// An H100 SXM (80 GB HBM3), as its driver reports it.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let h100 = HistogramLimits::H100;
    /// assert_eq!((h100.sm_count, h100.max_cluster_size), (132, 16));
    /// assert_eq!(h100.max_shared_per_block_optin, 227 * 1024);
    /// ```
    pub const H100: Self = Self {
        sm_count: 132,
        max_shared_per_block_optin: 232_448,
        max_shared_per_sm: 233_472,
        reserved_shared_per_block: 1024,
        max_threads_per_sm: 2048,
        max_cluster_size: 16,
    };

    /// Bins one block's shared memory holds.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramLimits;
    /// // 227 KiB of 4-byte counters.
    /// assert_eq!(HistogramLimits::H100.block_capacity(), 58_112);
    /// ```
    pub fn block_capacity(&self) -> u64 {
        (self.max_shared_per_block_optin / 4) as u64
    }

    /// Bins the largest cluster's distributed shared memory holds: the most a forced cluster
    /// tier takes.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramLimits;
    /// assert_eq!(HistogramLimits::H100.cluster_capacity(), 16 * 58_112);
    /// ```
    pub fn cluster_capacity(&self) -> u64 {
        self.max_cluster_size as u64 * self.block_capacity()
    }

    /// The widest bucket (bits of the bin) whose counters fit one block's shared memory.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramLimits;
    /// // 2^15 counters (128 KiB) fit in one block; 2^16 do not.
    /// assert_eq!(HistogramLimits::H100.max_bucket_shift(), 15);
    /// ```
    pub fn max_bucket_shift(&self) -> u32 {
        (self.block_capacity().max(1).ilog2()).min(16)
    }

    /// Bins the bucketed and sorted tiers hold: [`bucketed::MAX_BUCKETS`] buckets of the widest
    /// width.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramLimits;
    /// // 256 buckets of 2^15 bins.
    /// assert_eq!(HistogramLimits::H100.bucketed_capacity(), 1 << 23);
    /// ```
    pub fn bucketed_capacity(&self) -> u64 {
        bucketed::MAX_BUCKETS as u64 * (1u64 << self.max_bucket_shift())
    }

    /// Reads the limits of the opened device; the largest cluster comes from the driver's
    /// occupancy query with non-portable sizes allowed.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{HistogramLimits, PlanRequest, plan_for}};
    /// let gpu = Gpu::open(0)?;
    /// let limits = HistogramLimits::of(&gpu)?;
    /// println!("{}", plan_for(&limits, 1 << 20, PlanRequest::default())?);
    /// # Ok(()) }
    /// ```
    pub fn of(gpu: &Gpu) -> Result<Self> {
        let ctx = gpu.context();
        let attr = |a: Attr| ctx.attribute(a).map(|v| v as u32);
        let info = gpu.info();
        let max_cluster_size = if info.compute_capability.0 >= 9 {
            let cluster = gpu.function(InputType::I32.kernels().cluster)?;
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
