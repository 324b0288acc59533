//! What the planner needs to know of a device, read off it or given for a model.

use super::plan::THREADS_PER_BLOCK;
use crate::error::Result;
use crate::gpu::Gpu;
use cudarc::driver::LaunchConfig;
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUfunction_attribute as FnAttr};
use kernels::histogram::InputType;
use kernels::histogram::bucketed::{self};

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
    /// The limits of a device model (both Hopper models have the same SMs).
    pub fn of_model(model: crate::gpu::DeviceModel) -> Self {
        match model {
            crate::gpu::DeviceModel::H100 | crate::gpu::DeviceModel::H200 => Self::H100,
        }
    }

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

    /// The widest bucket (bits of the bin) whose counters fit one block's shared memory.
    pub fn max_bucket_shift(&self) -> u32 {
        (self.block_capacity().max(1).ilog2()).min(16)
    }

    /// Bins the bucketed and sorted tiers hold: [`bucketed::MAX_BUCKETS`] buckets of the widest
    /// width.
    pub fn bucketed_capacity(&self) -> u64 {
        bucketed::MAX_BUCKETS as u64 * (1u64 << self.max_bucket_shift())
    }

    /// Reads the limits of the opened device; the largest cluster comes from the driver's
    /// occupancy query with non-portable sizes allowed.
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
