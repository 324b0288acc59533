//! Launch planning for `kernels::histogram`: which tier (block shared memory, tile-sorted buckets,
//! cluster distributed shared memory, bucketed, global memory), which cluster size, how many private copies, how
//! many blocks, how much shared memory; and the typed inputs (`u8`, `u16`, `i32`, `f32` over a
//! range) the kernels count.
//!
//! [`plan_for`] is pure (device limits in, plan out) so its choices are unit-tested for the H100
//! and for smaller devices; [`plan`] takes the limits from the device and sizes every grid with
//! the driver's occupancy query for the kernel that will run (its registers included).

use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUfunction_attribute as FnAttr};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use kernels::histogram::bucketed::{self, KERNEL_BUCKET_BINS, SCATTER_THREADS};
use kernels::histogram::shared_bytes;
use kernels::histogram::sorted::{self, KERNEL_SORTED_BINS};
pub use kernels::histogram::{Binning, Element, InputType};
use std::ffi::c_void;
use std::sync::Arc;

mod values;
pub use values::{MAX_F32_BINS, Values, ValuesBuf, binning_for, histogram_cpu_of};

// Issue 22's features, one module per feature (planner, launch on device buffers, host-slice
// conveniences, CPU reference), and the occupancy-driven launch shapes they share.
pub mod channels;
pub mod device_values;
pub mod edges;
pub mod hist2d;
pub mod segmented;
pub mod tuning;
pub mod weighted;

/// Where the counters live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistogramTier {
    /// Private histograms per block in its shared memory.
    Shared,
    /// Values sorted by bucket of bins within tiles, then each bucket counted in shared memory:
    /// two passes.
    Sorted,
    /// One histogram per thread-block cluster, spread over its blocks' shared memory.
    Cluster,
    /// Values partitioned into buckets of bins by the high bits of their bin, each bucket then
    /// counted in shared memory: three passes.
    Bucketed,
    /// The counters in global memory, one atomic per value.
    Global,
}

impl HistogramTier {
    /// Every tier, in the planner's order of preference.
    pub const ALL: [Self; 5] = [Self::Shared, Self::Sorted, Self::Cluster, Self::Bucketed, Self::Global];

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Sorted => "sorted",
            Self::Cluster => "cluster",
            Self::Bucketed => "bucketed",
            Self::Global => "global",
        }
    }

    /// The kernel that counts (the bins pass for the bucketed and sorted tiers).
    fn kernel(self, input: InputType) -> &'static str {
        let k = input.kernels();
        match self {
            Self::Shared => k.shared,
            Self::Cluster => k.cluster,
            Self::Bucketed => KERNEL_BUCKET_BINS,
            Self::Sorted => KERNEL_SORTED_BINS,
            Self::Global => k.global,
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
    /// Private copies per block (shared tier only): a power of two from 1 to 32.
    pub copies: Option<u32>,
    /// Whether warps merge warp-uniform bins before adding.
    pub aggregate: Option<bool>,
    /// The input type, where the planner's choice depends on it (`u8` values take 1024-thread
    /// blocks in the shared tier; the sorted tier's tiles; the kernel whose occupancy sizes the
    /// grid); `None` plans for `i32`.
    pub element: Option<InputType>,
    /// Bits of the bin below the bucket (bucketed and sorted tiers): buckets of `2^bits` bins.
    pub bucket_shift: Option<u32>,
    /// Waves of resident blocks the sorted tier's bins pass runs (1 to 8; default
    /// [`BINS_PASS_WAVES`]).
    pub bins_pass_waves: Option<u32>,
}

/// Portable cluster size limit; larger clusters need the non-portable function attribute.
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;

/// The narrowest bucket the planner uses in the bucketed tier, in bits of the bin: 2^14
/// counters take 64 KiB, so three blocks of the bins pass share an SM.
pub const MIN_BUCKET_SHIFT: u32 = 14;

/// Waves of resident blocks the sorted tier's bins pass runs: the kernel shares the grid out among
/// the buckets in proportion to their values, so a whole number of waves leaves no partial one
/// (the resident blocks plus one per bucket put a uniform input's 56 last blocks in a second
/// wave: 0.379 ms at 2^20 bins against 0.332 in one). Two waves of half-size parts let the SMs
/// even out skew, where one heavy bucket's blocks pile on some SMs: measured on the H100 (2^26
/// values, the final kernels) at 2^20 bins, uniform 0.346 ms against 0.336 in one wave, zipf
/// 0.377 against 0.440 (1.09x uniform against 1.31x), constant 0.283 against 0.272; at 262,144
/// bins zipf 0.332 against 0.364.
pub const BINS_PASS_WAVES: u32 = 2;

/// The narrowest bucket the planner uses in the sorted tier, in bits of the bin: every block of
/// its bins pass zeroes and flushes `2^shift` counters, which narrow buckets keep cheap, while
/// wide ones give each tile longer runs of keys to read and fewer buckets to rank. Measured on an
/// H100 (2^26 values, `host histogram --tier sorted --bucket-bits`, with the one-wave bins pass and
/// two-group ranking): at 2^20 bins 0.368 ms with buckets of 2^13 bins, 0.332 with 2^14, 0.361
/// with 2^15 (128 KiB of counters: one bins-pass block per SM). Before those, at 262,144 bins
/// 0.386, 0.378, 0.475; zipf at 65,536 bins 0.409, 0.388, 0.448.
pub const MIN_SORTED_SHIFT: u32 = 14;

/// Static shared memory of the sorted tier's bins pass (its per-thread segment tables, two words a thread), bytes.
pub const SORTED_BINS_STATIC_SHARED: u32 = 8368;

/// Static shared memory of the sorted tier's tile sort (bucket counters, offsets and the block's totals), bytes.
pub const TILE_SORT_STATIC_SHARED: u32 = 3088;

/// Static shared memory of the bucketed tier's scatter, bytes.
pub const SCATTER_STATIC_SHARED: u32 = 36_880;

/// Threads per block of the shared tier for `u8` values, 16 to a 16-byte load: on an H100,
/// 2^28 values in 256 bins took 0.099 ms with 1024 threads against 0.112 ms with 512.
pub const U8_SHARED_THREADS: u32 = 1024;

/// Private copies the shared tier keeps at most: one per lane of a warp.
pub const MAX_COPIES: u32 = 32;

/// Blocks per SM the shared tier keeps resident when it chooses its copies: the copies take
/// what shared memory that many blocks leave.
pub const SHARED_BLOCKS_PER_SM: u32 = 4;

/// A planned histogram launch.
/// Built only by the planner ([`plan_for`], [`plan`], [`plan_with`]); its fields are read through
/// the accessors of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HistogramPlan {
    /// Where the counters live.
    tier: HistogramTier,
    /// Blocks per cluster (1 outside the cluster tier).
    cluster_size: u32,
    /// Blocks in the grid (a multiple of `cluster_size`; the bins pass of the bucketed tier).
    blocks: u32,
    /// Threads per block.
    threads_per_block: u32,
    /// Dynamic shared memory per block, bytes.
    shared_bytes: u32,
    /// Bins each block holds in shared memory (0 for the global tier; the bucket width for the
    /// bucketed tier).
    bins_per_block: u32,
    /// Bins of the histogram.
    bins: u32,
    /// Private interleaved copies of the histogram per block (shared tier; the bucket counts of
    /// the bucketed tier), 1 elsewhere.
    copies: u32,
    /// Whether warps merge equal bins before adding.
    aggregate: bool,
    /// Bits of the bin below the bucket (bucketed tier; 0 elsewhere).
    bucket_shift: u32,
    /// Blocks of the first pass that reads the values: the bucketed tier's scatter, the sorted
    /// tier's tile sort (0 elsewhere).
    scatter_blocks: u32,
    /// Blocks of the bucketed tier's bucket count pass (0 elsewhere).
    count_blocks: u32,
}

impl HistogramPlan {
    /// Where the counters live.
    pub fn tier(&self) -> HistogramTier {
        self.tier
    }

    /// Blocks per cluster (1 outside the cluster tier).
    pub fn cluster_size(&self) -> u32 {
        self.cluster_size
    }

    /// Blocks in the grid (a multiple of `cluster_size`; the bins pass of the bucketed tier).
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u32 {
        self.threads_per_block
    }

    /// Dynamic shared memory per block, bytes.
    pub fn shared_bytes(&self) -> u32 {
        self.shared_bytes
    }

    /// Bins each block holds in shared memory (0 for the global tier; the bucket width for the
    /// bucketed tier).
    pub fn bins_per_block(&self) -> u32 {
        self.bins_per_block
    }

    /// Bins of the histogram.
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// Private interleaved copies of the histogram per block (shared tier; the bucket counts of
    /// the bucketed tier), 1 elsewhere.
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Whether warps merge equal bins before adding.
    pub fn aggregate(&self) -> bool {
        self.aggregate
    }

    /// Bits of the bin below the bucket (bucketed tier; 0 elsewhere).
    pub fn bucket_shift(&self) -> u32 {
        self.bucket_shift
    }

    /// Blocks of the first pass that reads the values: the bucketed tier's scatter, the sorted
    /// tier's tile sort (0 elsewhere).
    pub fn scatter_blocks(&self) -> u32 {
        self.scatter_blocks
    }

    /// Blocks of the bucketed tier's bucket count pass (0 elsewhere).
    pub fn count_blocks(&self) -> u32 {
        self.count_blocks
    }
}

impl std::fmt::Display for HistogramPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tier", self.tier.name())?;
        match self.tier {
            HistogramTier::Cluster => write!(f, ", cluster of {} blocks", self.cluster_size)?,
            HistogramTier::Bucketed => write!(
                f,
                ", {} buckets of {} bins; count {} blocks; scatter {} blocks x {} threads; bins pass",
                bucketed::bucket_count(self.bins, self.bucket_shift),
                1u32 << self.bucket_shift,
                self.count_blocks,
                self.scatter_blocks,
                SCATTER_THREADS
            )?,
            HistogramTier::Sorted => write!(
                f,
                ", {} buckets of {} bins; tile sort {} blocks x {} threads; bins pass",
                bucketed::bucket_count(self.bins, self.bucket_shift),
                1u32 << self.bucket_shift,
                self.scatter_blocks,
                self.threads_per_block
            )?,
            _ => {}
        }
        write!(f, ", {} blocks x {} threads", self.blocks, self.threads_per_block)?;
        if self.tier != HistogramTier::Global {
            write!(
                f,
                ", {} shared per block ({} bins each",
                format_bytes(self.shared_bytes as u64),
                self.bins_per_block
            )?;
            if self.tier == HistogramTier::Shared && self.copies > 1 {
                write!(f, ", {} copies", self.copies)?;
            }
            write!(f, ")")?;
        }
        if self.aggregate {
            write!(f, ", warp-aggregated adds")?;
        }
        Ok(())
    }
}

impl HistogramPlan {
    /// The grid of the tier's kernel (the bins pass, in the bucketed and sorted tiers): `blocks`
    /// blocks of `threads_per_block`, with `shared_bytes` of dynamic shared memory.
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (self.threads_per_block, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        }
    }

    /// Why the planner chose this tier, in words (for `--plan`).
    pub fn reason(&self, limits: &HistogramLimits, forced: bool) -> String {
        if forced {
            return format!("{} tier as requested", self.tier.name());
        }
        let bins = self.bins;
        match self.tier {
            HistogramTier::Shared => format!(
                "{bins} bins fit in one block's shared memory ({} bins); {} interleaved copies fill what {} blocks per SM leave",
                limits.block_capacity(),
                self.copies,
                SHARED_BLOCKS_PER_SM
            ),
            HistogramTier::Sorted => format!(
                "{bins} bins exceed one block ({} bins) and fit the sorted tier's {} ({} buckets of up to {} bins): on an H100 it beat clusters, the bucketed tier and global atomics at every bin count from 65,536 to 2^20 (2^26 values: 0.302 ms against a cluster's 0.421 at 65,536; 0.335 against 0.669 bucketed and 0.790 global at 2^20), within 1.01x of its uniform time on zipf values at 65,536 bins where a cluster took 1.63x (1.32x at 2^20, where its bins pass waits on the hot bins' shared atomics)",
                limits.block_capacity(),
                limits.bucketed_capacity(),
                bucketed::MAX_BUCKETS,
                1u64 << limits.max_bucket_shift()
            ),
            HistogramTier::Cluster => format!(
                "{bins} bins: the smallest cluster that holds them ({} bins per block)",
                limits.block_capacity()
            ),
            HistogramTier::Bucketed => format!("{bins} bins in buckets of {} bins", 1u64 << self.bucket_shift),
            HistogramTier::Global => format!(
                "{bins} bins exceed the sorted tier's {} ({} buckets of {} bins)",
                limits.bucketed_capacity(),
                bucketed::MAX_BUCKETS,
                1u64 << limits.max_bucket_shift()
            ),
        }
    }
}

/// The shared tier's private copies for `bins` bins: the most (a power of two up to
/// [`MAX_COPIES`]) that still let [`SHARED_BLOCKS_PER_SM`] blocks share an SM, at least 1.
pub fn copies_for(limits: &HistogramLimits, bins: u32) -> u32 {
    let per_block = (limits.max_shared_per_sm / SHARED_BLOCKS_PER_SM).saturating_sub(limits.reserved_shared_per_block);
    let mut copies = MAX_COPIES;
    while copies > 1 && (bins as u64) * copies as u64 * 4 > per_block as u64 {
        copies /= 2;
    }
    copies
}

/// Plans a histogram of `bins` bins for a device with `limits`: the shared tier when one block
/// holds every bin, else the sorted tier while its buckets hold the bins, else the global tier
/// (the cluster and bucketed tiers only when asked for). The request can fix the tier, the
/// cluster size (cluster tier only), the threads per block, the copies (shared tier only), the
/// bucket width (bucketed and sorted tiers) and warp aggregation. The grid is persistent: as many
/// blocks as the device keeps resident at once, estimated here from threads and shared memory
/// ([`plan_with`] replaces the estimate with the driver's occupancy for the kernel's registers).
pub fn plan_for(limits: &HistogramLimits, bins: usize, request: PlanRequest) -> Result<HistogramPlan> {
    let PlanRequest {
        tier: forced,
        cluster_size,
        threads_per_block,
        copies,
        aggregate,
        element,
        bucket_shift,
        bins_pass_waves,
    } = request;
    let waves = bins_pass_waves.unwrap_or(BINS_PASS_WAVES);
    if !(1..=8).contains(&waves) {
        return Err(HostError::InvalidInput(format!("{waves} waves of the bins pass: use 1 to 8")));
    }
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
    if let Some(c) = copies
        && (c == 0 || c > MAX_COPIES || !c.is_power_of_two())
    {
        return Err(HostError::InvalidInput(format!("{c} copies: use a power of two from 1 to {MAX_COPIES}")));
    }
    let tier = match (forced, cluster_size) {
        (Some(tier), _) => tier,
        (None, Some(_)) => HistogramTier::Cluster,
        (None, None) if bins <= capacity => HistogramTier::Shared,
        (None, None) if bins as u64 <= limits.bucketed_capacity() => HistogramTier::Sorted,
        (None, None) => HistogramTier::Global,
    };
    if bucket_shift.is_some() && !matches!(tier, HistogramTier::Bucketed | HistogramTier::Sorted) {
        return Err(HostError::InvalidInput(format!(
            "--bucket-bits applies to the bucketed and sorted tiers only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    if bins_pass_waves.is_some() && tier != HistogramTier::Sorted {
        return Err(HostError::InvalidInput(format!(
            "--waves applies to the sorted tier only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    if copies.is_some() && tier != HistogramTier::Shared {
        return Err(HostError::InvalidInput(format!(
            "--copies applies to the shared tier only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    let bins32 = bins as u32;
    let persistent = |shared: u32, threads: u32, cluster: u32| -> u32 {
        let by_threads = limits.max_threads_per_sm / threads;
        let by_shared =
            if shared == 0 { u32::MAX } else { limits.max_shared_per_sm / (shared + limits.reserved_shared_per_block) };
        let per_sm = by_threads.min(by_shared).max(1);
        (limits.sm_count * per_sm / cluster).max(1) * cluster
    };
    let base = HistogramPlan {
        tier,
        cluster_size: 1,
        blocks: 0,
        threads_per_block: threads,
        shared_bytes: 0,
        bins_per_block: 0,
        bins: bins32,
        copies: 1,
        aggregate: aggregate.unwrap_or(false),
        bucket_shift: 0,
        scatter_blocks: 0,
        count_blocks: 0,
    };
    let element = element.unwrap_or(InputType::I32);
    match tier {
        HistogramTier::Shared => {
            if bins > capacity {
                return Err(HostError::InvalidInput(format!(
                    "{bins} bins need {} of shared memory per block, but a block of this device gets at most {} ({capacity} bins): use the cluster, bucketed or global tier",
                    format_bytes(4 * bins as u64),
                    format_bytes(limits.max_shared_per_block_optin as u64)
                )));
            }
            let threads = match (threads_per_block, element) {
                (None, InputType::U8) => U8_SHARED_THREADS,
                _ => threads,
            };
            let copies = copies.unwrap_or_else(|| copies_for(limits, bins32));
            if bins * copies as usize > capacity {
                return Err(HostError::InvalidInput(format!(
                    "{copies} copies of {bins} bins need {} of shared memory per block, but a block of this device gets at most {}",
                    format_bytes(4 * (bins * copies as usize) as u64),
                    format_bytes(limits.max_shared_per_block_optin as u64)
                )));
            }
            let shared = shared_bytes(bins32 * copies);
            Ok(HistogramPlan {
                blocks: persistent(shared, threads, 1),
                threads_per_block: threads,
                shared_bytes: shared,
                bins_per_block: bins32,
                copies,
                ..base
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
                        "{bins} bins exceed the largest cluster's shared memory ({} bins in {} blocks): use the bucketed or global tier",
                        limits.cluster_capacity(),
                        limits.max_cluster_size
                    )));
                }
                None => smallest.max(1),
            };
            let per_block = bins32.div_ceil(size);
            let shared = shared_bytes(per_block);
            Ok(HistogramPlan {
                // Free on uniform values (65,536 bins: 0.422 against 0.421 ms) and 4x faster on a
                // constant input (0.246 against 0.980 ms): remote adds to one address serialize.
                aggregate: aggregate.unwrap_or(true),
                cluster_size: size,
                blocks: persistent(shared, threads, size),
                shared_bytes: shared,
                bins_per_block: per_block,
                ..base
            })
        }
        HistogramTier::Bucketed => {
            let shift = bucket_shift_for(limits, bins32, bucket_shift, MIN_BUCKET_SHIFT, tier)?;
            let shared = shared_bytes(1 << shift);
            let count_shared = shared_bytes(bucketed::bucket_count(bins32, shift) * MAX_COPIES);
            Ok(HistogramPlan {
                blocks: persistent(shared, threads, 1),
                shared_bytes: shared,
                bins_per_block: 1 << shift,
                copies: MAX_COPIES,
                // Off: same-address adds within a warp cost little in a block's own shared memory
                // (2^20 bins: 0.832 ms uniform, 0.668 constant), and the test costs 3% on uniform.
                bucket_shift: shift,
                scatter_blocks: persistent(SCATTER_STATIC_SHARED, SCATTER_THREADS, 1),
                count_blocks: persistent(count_shared, THREADS_PER_BLOCK, 1),
                ..base
            })
        }
        HistogramTier::Sorted => {
            if threads > sorted::MAX_THREADS {
                return Err(HostError::InvalidInput(format!(
                    "{threads} threads per block: the sorted tier takes at most {}",
                    sorted::MAX_THREADS
                )));
            }
            let shift = bucket_shift_for(limits, bins32, bucket_shift, MIN_SORTED_SHIFT, tier)?;
            let shared = shared_bytes(1 << shift);
            let stage = sorted::stage_bytes(threads, element.size()) + TILE_SORT_STATIC_SHARED;
            Ok(HistogramPlan {
                // Whole waves (BINS_PASS_WAVES), at least one block per bucket beyond the share.
                blocks: (waves * persistent(shared + SORTED_BINS_STATIC_SHARED, threads, 1))
                    .max(bucketed::bucket_count(bins32, shift) + 1),
                shared_bytes: shared,
                bins_per_block: 1 << shift,
                bucket_shift: shift,
                scatter_blocks: persistent(stage, threads, 1),
                ..base
            })
        }
        HistogramTier::Global => Ok(HistogramPlan { blocks: persistent(0, threads, 1), ..base }),
    }
}

/// The bucket width, in bits of the bin, for `bins` bins in `tier` (bucketed or sorted): the
/// requested one, checked, or the narrowest from `min_shift` with at most
/// [`bucketed::MAX_BUCKETS`] buckets whose counters fit one block's shared memory.
fn bucket_shift_for(
    limits: &HistogramLimits,
    bins: u32,
    requested: Option<u32>,
    min_shift: u32,
    tier: HistogramTier,
) -> Result<u32> {
    let widest = limits.max_bucket_shift();
    if let Some(shift) = requested {
        if shift == 0 || shift > widest {
            return Err(HostError::InvalidInput(format!(
                "buckets of 2^{shift} bins: use 1 to {widest} bits (2^{widest} counters fill one block's shared memory)"
            )));
        }
        let buckets = bucketed::bucket_count(bins, shift);
        if buckets > bucketed::MAX_BUCKETS {
            return Err(HostError::InvalidInput(format!(
                "{bins} bins in buckets of 2^{shift} make {buckets} buckets; the {} tier takes at most {}: use at least {} bits",
                tier.name(),
                bucketed::MAX_BUCKETS,
                bucketed::bucket_shift(bins, 1).map_or(widest, |s| s)
            )));
        }
        return Ok(shift);
    }
    bucketed::bucket_shift(bins, min_shift.min(widest)).filter(|&s| s <= widest).ok_or_else(|| {
        HostError::InvalidInput(format!(
            "{bins} bins exceed the {} tier's {} ({} buckets of {} bins in one block's shared memory): use the global tier",
            tier.name(),
            limits.bucketed_capacity(),
            bucketed::MAX_BUCKETS,
            1u64 << widest
        ))
    })
}

/// Fails unless `bins` is a bin count the kernels address: 1 to `i32::MAX`.
pub fn check_bins(bins: usize) -> Result<()> {
    if bins == 0 {
        return Err(HostError::InvalidInput("bins is 0: a histogram needs at least one bin".into()));
    }
    if bins > i32::MAX as usize {
        return Err(HostError::InvalidInput(format!(
            "{bins} bins: values are at most 32 bits, so at most {} bins can be hit",
            i32::MAX
        )));
    }
    Ok(())
}

/// Plans for the opened device: [`plan_for`] with its limits, then every grid from the driver's
/// occupancy query for the kernel that runs it (for the request's input type): its registers
/// limit residency as much as threads and shared memory do, and clusters must fit in one GPC,
/// which the estimate cannot see. Fails if the driver cannot keep a single block (or cluster)
/// of the plan resident.
pub fn plan(gpu: &Gpu, bins: usize, forced: Option<HistogramTier>) -> Result<HistogramPlan> {
    plan_with(gpu, bins, PlanRequest { tier: forced, ..PlanRequest::default() })
}

/// [`plan`] with more of the plan fixed by the caller.
pub fn plan_with(gpu: &Gpu, bins: usize, request: PlanRequest) -> Result<HistogramPlan> {
    let limits = HistogramLimits::of(gpu)?;
    // The shared tier's threads and copies from the occupancy query (tuning.rs).
    let request = tuning::shared_tier_request(gpu, &limits, bins, request)?;
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
            return Err(HostError::InvalidInput(format!(
                "the driver cannot keep one block of {name} ({threads} threads, {} of shared memory) resident on this device: try fewer threads per block",
                format_bytes(shared as u64)
            )));
        }
        Ok(per_sm * sms)
    };
    let kernels = element.kernels();
    match plan.tier {
        HistogramTier::Shared | HistogramTier::Global => {
            plan.blocks = resident(plan.tier.kernel(element), plan.threads_per_block, plan.shared_bytes)?;
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
        let config = cluster_launch_config(&plan, gpu.stream(), &mut attr);
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

/// The bucketed and sorted tiers' buffers: each value's low bits (bucket after bucket, or tile
/// after tile sorted by bucket), per bucket its count and the scatter's cursor, and the sorted
/// tier's table of where each bucket starts in each tile. One per stream that launches these
/// tiers; allocated by [`launch_into`] on first use and grown when a launch needs more.
pub struct BucketScratch {
    keys: CudaSlice<u16>,
    bucket_counts: CudaSlice<u32>,
    cursors: CudaSlice<u32>,
    table: CudaSlice<u32>,
}

impl BucketScratch {
    /// Makes `scratch` hold at least `keys` keys and `table` table entries (reallocating both when
    /// either is short), checking free memory first.
    fn ensure<'a>(gpu: &Gpu, scratch: &'a mut Option<Self>, keys: u64, table: u64) -> Result<&'a mut Self> {
        let (keys, table) = (keys.max(8), table.max(1));
        if scratch.as_ref().is_none_or(|s| (s.keys.len() as u64) < keys || (s.table.len() as u64) < table) {
            *scratch = None;
            let buckets = bucketed::MAX_BUCKETS as u64;
            gpu.ensure_fits(
                &format!("the bucketed tiers' scratch for {keys} keys and {table} table entries"),
                2 * keys + 4 * table + 8 * buckets,
            )?;
            *scratch = Some(Self {
                keys: gpu.zeros(keys as usize)?,
                bucket_counts: gpu.zeros(buckets as usize)?,
                cursors: gpu.zeros(buckets as usize)?,
                table: gpu.zeros(table as usize)?,
            });
        }
        Ok(scratch.as_mut().expect("allocated above"))
    }
}

/// Input values and counters on the device.
pub struct DeviceHistogram {
    input: CudaSlice<u8>,
    element: InputType,
    n: usize,
    binning: Binning,
    counts: CudaSlice<u32>,
    scratch: Option<BucketScratch>,
}

impl DeviceHistogram {
    /// Uploads `i32` values and allocates `bins` counters, after checking sizes and free memory.
    pub fn upload(gpu: &Gpu, values: &[i32], bins: usize) -> Result<Self> {
        check_bins(bins)?;
        Self::upload_values(gpu, Values::I32(values), Binning::integers(bins as u32))
    }

    /// Uploads values of any input type, counted by `binning` ([`binning_for`] checks it).
    pub fn upload_values(gpu: &Gpu, values: Values<'_>, binning: Binning) -> Result<Self> {
        let bins = binning.nbins as usize;
        check_bins(bins)?;
        if values.len() > u32::MAX as usize {
            return Err(HostError::InvalidInput(format!(
                "{} values: counts are u32, so at most {} values",
                values.len(),
                u32::MAX
            )));
        }
        let bytes = values.bytes().len().max(16) as u64 + 4 * bins as u64;
        gpu.ensure_fits(&format!("a histogram of {} values into {bins} bins", values.len()), bytes)?;
        // An empty input still gets a small buffer: no kernel reads it (n = 0 launches none).
        let input = if values.is_empty() { gpu.zeros(16)? } else { gpu.upload(values.bytes())? };
        Ok(Self { input, element: values.element(), n: values.len(), binning, counts: gpu.zeros(bins)?, scratch: None })
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

    /// The input type.
    pub fn element(&self) -> InputType {
        self.element
    }
}

/// Zeroes the counters and enqueues the planned kernel (three for the bucketed tier) on the
/// GPU's stream.
pub fn launch(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<()> {
    gpu.stream().memset_zeros(&mut h.counts)?;
    let input = DeviceInput { bytes: &h.input, element: h.element, binning: h.binning, n: h.n as u64 };
    launch_into(gpu, plan, gpu.stream(), &input, &mut h.counts, &mut h.scratch)
}

/// Values on the device as the kernels read them.
#[derive(Clone, Copy)]
pub struct DeviceInput<'a> {
    /// The values' bytes, from the start of the buffer (16-byte aligned).
    pub bytes: &'a CudaSlice<u8>,
    /// Their type.
    pub element: InputType,
    /// How they map to bins.
    pub binning: Binning,
    /// How many of them to count, from the first: at most `u32::MAX`.
    pub n: u64,
}

/// Enqueues the planned kernel on `stream`, adding the counts of the `input` values into `counts`
/// without zeroing them first: several launches, on any streams, add into one set of counters
/// (the kernels add atomically). The bucketed tier keeps its buffers in `scratch`, one per
/// stream. Nothing is launched for `n = 0`; more than `u32::MAX` values are refused (the counts
/// and the bucketed tier's offsets are `u32`).
pub fn launch_into(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput<'_>,
    counts: &mut CudaSlice<u32>,
    scratch: &mut Option<BucketScratch>,
) -> Result<()> {
    check_launch(plan, counts.len(), input.binning, input.element, input.n, input.bytes.len())?;
    let n = input.n;
    if n == 0 {
        return Ok(());
    }
    let func = prepared_function(gpu, plan, input.element)?;
    let Binning { nbins, lo, hi, scale } = input.binning;
    let aggregate = plan.aggregate as u32;
    let bytes = input.bytes;
    match plan.tier {
        HistogramTier::Shared => {
            let mut launch = stream.launch_builder(&func);
            let shift = 0u32;
            launch.arg(bytes).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
            launch.arg(&shift).arg(&plan.copies).arg(&aggregate);
            // SAFETY: kernel contract (kernels::histogram): input holds n values of the kernel's
            // type (checked above), counts holds nbins counters, copies is a power of two up to
            // 32 and the launch provides nbins * copies * 4 bytes of shared memory.
            unsafe { launch.launch(plan.launch_config()) }?;
        }
        HistogramTier::Global => {
            let mut launch = stream.launch_builder(&func);
            launch.arg(bytes).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
            launch.arg(&aggregate);
            // SAFETY: kernel contract: input holds n values, counts holds nbins counters.
            unsafe { launch.launch(LaunchConfig { shared_mem_bytes: 0, ..plan.launch_config() }) }?;
        }
        HistogramTier::Bucketed => {
            let s = BucketScratch::ensure(gpu, scratch, n, 1)?;
            launch_bucketed(gpu, plan, stream, input, counts, s, &func)?;
        }
        HistogramTier::Sorted => {
            let threads = tile_sort_threads(gpu, input.element, plan.threads_per_block)?;
            let tile = sorted::tile_values(threads, input.element.size());
            let tiles = sorted::tiles(n, tile);
            let buckets = bucketed::bucket_count(nbins, plan.bucket_shift);
            let s = BucketScratch::ensure(gpu, scratch, sorted::keys_len(n, tile), sorted::table_len(buckets, tiles))?;
            launch_sorted(gpu, plan, stream, input, counts, s, &func, threads)?;
        }
        HistogramTier::Cluster => {
            let (input_ptr, _input_sync) = bytes.device_ptr(stream);
            let (counts, _counts_sync) = counts.device_ptr_mut(stream);
            let (mut input_ptr, mut n, mut counts, mut nbins, mut lo, mut hi, mut scale, mut per_block, mut aggregate) =
                (input_ptr, n, counts, nbins, lo, hi, scale, plan.bins_per_block, aggregate);
            let mut params: [*mut c_void; 9] = [
                (&mut input_ptr as *mut u64).cast(),
                (&mut n as *mut u64).cast(),
                (&mut counts as *mut u64).cast(),
                (&mut nbins as *mut u32).cast(),
                (&mut lo as *mut f32).cast(),
                (&mut hi as *mut f32).cast(),
                (&mut scale as *mut f32).cast(),
                (&mut per_block as *mut u32).cast(),
                (&mut aggregate as *mut u32).cast(),
            ];
            let mut attr = cluster_attribute(plan.cluster_size);
            let config = cluster_launch_config(plan, stream, &mut attr);
            // SAFETY: kernel contract: the parameters match histogram_cluster_*'s signature, the
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

/// Fails unless a launch of `plan` can count `n` values of `element` from an input buffer of
/// `input_bytes` bytes into `counts` counters by `binning`: the bin counts agree, the buffer holds
/// the values, and `n` fits the kernels' `u32` counts and the bucketed tier's `u32` offsets.
fn check_launch(
    plan: &HistogramPlan,
    counts: usize,
    binning: Binning,
    element: InputType,
    n: u64,
    input_bytes: usize,
) -> Result<()> {
    if plan.bins as usize != counts || binning.nbins != plan.bins {
        return Err(HostError::InvalidInput(format!(
            "the plan is for {} bins, the buffers hold {counts} and the binning has {}",
            plan.bins, binning.nbins
        )));
    }
    if n > u32::MAX as u64 {
        return Err(HostError::InvalidInput(format!(
            "{n} values in one launch: counts are u32, so at most {} values",
            u32::MAX
        )));
    }
    if n * element.size() as u64 > input_bytes as u64 {
        return Err(HostError::InvalidInput(format!(
            "{n} {} values asked of an input buffer of {input_bytes} bytes",
            element.name()
        )));
    }
    Ok(())
}

/// The bucketed tier's three passes on `stream`; `bins_pass` is the prepared bins-pass kernel.
fn launch_bucketed(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput<'_>,
    counts: &mut CudaSlice<u32>,
    s: &mut BucketScratch,
    bins_pass: &CudaFunction,
) -> Result<()> {
    stream.memset_zeros(&mut s.bucket_counts)?;
    stream.memset_zeros(&mut s.cursors)?;
    let (element, n) = (input.element, input.n);
    let Binning { nbins, lo, hi, scale } = input.binning;
    let (shift, copies, no_aggregate) = (plan.bucket_shift, plan.copies, 0u32);
    let buckets = bucketed::bucket_count(nbins, shift);
    let count_pass = gpu.function(element.kernels().shared)?;
    let count_shared = shared_bytes(buckets * copies);
    count_pass.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, count_shared as i32)?;
    let mut launch = stream.launch_builder(&count_pass);
    launch.arg(input.bytes).arg(&n).arg(&mut s.bucket_counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
    launch.arg(&shift).arg(&copies).arg(&no_aggregate);
    let cfg = LaunchConfig {
        grid_dim: (plan.count_blocks, 1, 1),
        block_dim: (THREADS_PER_BLOCK, 1, 1),
        shared_mem_bytes: count_shared,
    };
    // SAFETY: kernel contract (kernels::histogram) with `shift`: bucket_counts holds
    // ((nbins - 1) >> shift) + 1 <= MAX_BUCKETS counters, and the launch provides that many
    // times `copies` (a power of two up to 32) times 4 bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    let scatter = gpu.function(element.kernels().scatter)?;
    let mut launch = stream.launch_builder(&scatter);
    launch.arg(input.bytes).arg(&n).arg(&nbins).arg(&lo).arg(&hi).arg(&scale).arg(&shift);
    launch.arg(&s.bucket_counts).arg(&mut s.cursors).arg(&mut s.keys);
    let cfg =
        LaunchConfig { grid_dim: (plan.scatter_blocks, 1, 1), block_dim: (SCATTER_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: kernel contract (kernels::histogram::bucketed): the bucket counts are complete
    // (same stream), cursors are zeroed, keys holds n u16, the block has SCATTER_THREADS threads.
    unsafe { launch.launch(cfg) }?;
    let aggregate = plan.aggregate as u32;
    let mut launch = stream.launch_builder(bins_pass);
    launch.arg(&s.keys).arg(&s.bucket_counts).arg(counts).arg(&nbins).arg(&shift).arg(&aggregate);
    let cfg = plan.launch_config();
    // SAFETY: kernel contract: keys and bucket counts are complete, counts holds nbins zeroed
    // counters, the launch provides 2^shift * 4 bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// Threads per tile-sort block for `element` values: the plan's `threads`, or fewer (a multiple of
/// 32) where the kernel's registers do not allow that many in one block (the checked build's
/// `u8` kernel takes 145 registers: at most 448 threads).
fn tile_sort_threads(gpu: &Gpu, element: InputType, threads: u32) -> Result<u32> {
    let kernel = element.kernels().tile_sort;
    let most = gpu.function(kernel)?.get_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    let most = (most.max(0) as u32) / 32 * 32;
    if most == 0 {
        return Err(HostError::InvalidInput(format!("{kernel} cannot run a block of 32 threads on this device")));
    }
    Ok(threads.min(most))
}

/// The sorted tier's two passes on `stream`; `bins_pass` is the prepared bins-pass kernel, and
/// the tile sort runs `threads` threads per block (from [`tile_sort_threads`]).
#[allow(clippy::too_many_arguments)]
fn launch_sorted(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput<'_>,
    counts: &mut CudaSlice<u32>,
    s: &mut BucketScratch,
    bins_pass: &CudaFunction,
    threads: u32,
) -> Result<()> {
    stream.memset_zeros(&mut s.bucket_counts)?;
    let (element, n) = (input.element, input.n);
    let Binning { nbins, lo, hi, scale } = input.binning;
    let shift = plan.bucket_shift;
    let buckets = bucketed::bucket_count(nbins, shift);
    if plan.blocks <= buckets {
        return Err(HostError::InvalidInput(format!(
            "the sorted tier's bins pass needs more than {buckets} blocks; the plan has {}",
            plan.blocks
        )));
    }
    let tile = sorted::tile_values(threads, element.size());
    let stage = sorted::stage_bytes(threads, element.size());
    let tile_sort = gpu.function(element.kernels().tile_sort)?;
    tile_sort.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, stage as i32)?;
    let mut launch = stream.launch_builder(&tile_sort);
    launch.arg(input.bytes).arg(&n).arg(&nbins).arg(&lo).arg(&hi).arg(&scale).arg(&shift);
    launch.arg(&mut s.keys).arg(&mut s.table).arg(&mut s.bucket_counts);
    let tiles = sorted::tiles(n, tile);
    let cfg = LaunchConfig {
        grid_dim: ((plan.scatter_blocks as u64).min(tiles) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: stage,
    };
    // SAFETY: kernel contract (kernels::histogram::sorted): input holds n <= u32::MAX values
    // (check_launch), keys holds keys_len(n, tile) u16, table table_len(buckets, tiles) u32
    // (BucketScratch::ensure), the totals are zeroed, buckets <= MAX_BUCKETS (the plan), threads
    // is a multiple of 32 up to MAX_THREADS (the plan) that the kernel's registers allow, and the
    // launch provides stage_bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    let mut launch = stream.launch_builder(bins_pass);
    launch.arg(&s.keys).arg(&s.table).arg(&s.bucket_counts).arg(counts).arg(&nbins).arg(&shift).arg(&n).arg(&tile);
    let cfg = plan.launch_config();
    // SAFETY: kernel contract: the tile sort completed on this stream with the same n, shift and
    // tile; counts holds nbins counters; the grid has more than `buckets` blocks and the launch
    // provides 2^shift * 4 bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// Runs the planned kernel once and returns the counts.
pub fn run(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<Vec<u32>> {
    launch(gpu, plan, h)?;
    gpu.synchronize()?;
    gpu.download(&h.counts)
}

/// The tier's kernel for `input` with the attributes its plan needs: dynamic shared memory above
/// 48 KiB, and non-portable cluster sizes above 8.
fn prepared_function(gpu: &Gpu, plan: &HistogramPlan, input: InputType) -> Result<CudaFunction> {
    let func = gpu.function(plan.tier.kernel(input))?;
    func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, plan.shared_bytes as i32)?;
    if plan.cluster_size > PORTABLE_CLUSTER_SIZE {
        func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
    }
    Ok(func)
}

/// The plan as a `cuLaunchKernelEx` configuration carrying `cluster` (which must outlive it).
fn cluster_launch_config(
    plan: &HistogramPlan,
    stream: &CudaStream,
    cluster: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: plan.blocks,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: plan.threads_per_block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: plan.shared_bytes,
        hStream: stream.cu_stream(),
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
        assert_eq!((above.tier, above.bucket_shift, above.bins_per_block), (Sorted, 14, 16_384));
        let cluster = plan_for(&H100, capacity + 1, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() });
        assert_eq!(cluster.unwrap().cluster_size, 2);
    }

    #[test]
    fn the_planner_sorts_every_bin_count_above_one_block_that_its_buckets_hold() {
        let sorted = |bins| plan_for(&H100, bins, PlanRequest::default()).unwrap();
        for bins in [58_113, 65_536, 131_072, 1 << 20, 256 << 14] {
            let p = sorted(bins);
            assert_eq!((p.tier, p.bucket_shift, p.aggregate), (Sorted, 14, false), "{bins}");
        }
        // Past 256 buckets of 2^14 bins the buckets widen, up to what one block holds.
        assert_eq!(sorted((256 << 14) + 1).bucket_shift, 15);
        assert_eq!(sorted(256 << 15).bucket_shift, 15);
        assert_eq!(sorted((256 << 15) + 1).tier, Global);
        assert!(plan_for(&H100, 256, PlanRequest::default()).unwrap().tier == Shared);
    }

    #[test]
    fn the_sorted_plans_bins_pass_is_two_waves_of_resident_blocks() {
        let p = plan_for(&H100, 1 << 20, PlanRequest::default()).unwrap();
        // 64 KiB of counters and the segment tables per block: shared memory allows 3 blocks per
        // SM (the compiled kernel's registers allow 2, which plan_with asks the driver for).
        assert_eq!((p.shared_bytes, p.blocks), (65_536, 2 * 3 * 132));
        // A grid smaller than the buckets still has one block per bucket and one to share.
        let tiny = HistogramLimits { sm_count: 1, ..H100 };
        assert_eq!(plan_for(&tiny, 256 << 14, PlanRequest::default()).unwrap().blocks, 257);
        // Each tile-sort block stages 4096 i32 keys and their ranks (16 KiB): 4 blocks per SM.
        assert_eq!((p.threads_per_block, p.scatter_blocks), (512, 4 * 132));
        let u8s = plan_for(&H100, 1 << 20, PlanRequest { element: Some(InputType::U8), ..PlanRequest::default() });
        assert_eq!(u8s.unwrap().threads_per_block, 512, "u8 takes 1024 threads in the shared tier only");
        let text = p.to_string();
        assert!(
            text.starts_with("sorted tier, 64 buckets of 16384 bins; tile sort 528 blocks x 512 threads"),
            "{text}"
        );
        let too_wide = PlanRequest { threads_per_block: Some(1024), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 1 << 20, too_wide).unwrap().threads_per_block, 1024);
    }

    #[test]
    fn requested_bucket_widths_are_checked_against_the_bucket_count_and_one_block() {
        let bits = |b| PlanRequest { bucket_shift: Some(b), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 1 << 20, bits(14)).unwrap().bucket_shift, 14);
        let few = plan_for(&H100, 1 << 20, bits(11)).unwrap_err().to_string();
        assert!(few.contains("512 buckets") && few.contains("at least 12 bits"), "{few}");
        assert!(plan_for(&H100, 1 << 20, bits(16)).unwrap_err().to_string().contains("use 1 to 15 bits"));
        assert!(plan_for(&H100, 1 << 20, bits(0)).is_err());
        let forced = PlanRequest { tier: Some(Bucketed), ..bits(13) };
        assert_eq!(plan_for(&H100, 1 << 20, forced).unwrap().bucket_shift, 13);
        let shared = plan_for(&H100, 256, bits(12)).unwrap_err().to_string();
        assert!(shared.contains("bucketed and sorted tiers only") && shared.contains("shared tier"), "{shared}");
    }

    #[test]
    fn the_bucketed_tier_holds_256_buckets_of_the_widest_power_of_two_a_block_holds() {
        assert_eq!(H100.max_bucket_shift(), 15);
        assert_eq!(H100.bucketed_capacity(), 256 << 15);
        let forced = PlanRequest { tier: Some(Bucketed), ..PlanRequest::default() };
        let p = plan_for(&H100, 1 << 20, forced).unwrap();
        assert_eq!((p.tier, p.bucket_shift, p.shared_bytes, p.bins_per_block), (Bucketed, 14, 65_536, 16_384));
        // Estimates from threads and shared memory; plan_with asks the driver, which also counts
        // registers (the scatter's 115 leave room for one block per SM).
        assert_eq!((p.blocks, p.scatter_blocks, p.count_blocks), (3 * 132, 4 * 132, 4 * 132));
        let widest = plan_for(&H100, 256 << 15, forced).unwrap();
        assert_eq!((widest.tier, widest.bucket_shift), (Bucketed, 15));
        let err = plan_for(&H100, (256 << 15) + 1, forced).unwrap_err().to_string();
        assert!(err.contains("exceed the bucketed tier") && err.contains("global tier"), "{err}");
        assert_eq!(plan_for(&H100, 300, forced).unwrap().bucket_shift, 14);
    }

    #[test]
    fn shared_tier_copies_fill_what_four_blocks_per_sm_leave() {
        assert_eq!(copies_for(&H100, 256), 32);
        assert_eq!(copies_for(&H100, 1024), 8);
        assert_eq!(copies_for(&H100, 4096), 2);
        assert_eq!(copies_for(&H100, 8192), 1);
        assert_eq!(copies_for(&H100, 58_112), 1);
        let p = plan_for(&H100, 256, PlanRequest::default()).unwrap();
        assert_eq!((p.copies, p.shared_bytes, p.blocks), (32, 32_768, 4 * 132));
        let one = plan_for(&H100, 256, PlanRequest { copies: Some(1), ..PlanRequest::default() }).unwrap();
        assert_eq!((one.copies, one.shared_bytes), (1, 1024));
        let too_many = PlanRequest { copies: Some(32), ..PlanRequest::default() };
        assert!(plan_for(&H100, 8192, too_many).unwrap_err().to_string().contains("32 copies of 8192 bins"));
        for bad in [0, 3, 64] {
            let r = PlanRequest { copies: Some(bad), ..PlanRequest::default() };
            assert!(plan_for(&H100, 256, r).unwrap_err().to_string().contains("power of two"), "{bad}");
        }
    }

    #[test]
    fn copies_are_refused_wherever_the_plan_is_not_the_shared_tier() {
        let two = PlanRequest { copies: Some(2), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 4096, two).unwrap().copies, 2);
        // The planner's own choice above one block's capacity: the copies would be dropped.
        for (bins, tier) in [(100_000, "sorted"), (1 << 20, "sorted"), ((256 << 15) + 1, "global")] {
            let err = plan_for(&H100, bins, two).unwrap_err().to_string();
            assert!(err.contains("shared tier only") && err.contains(&format!("the {tier} tier")), "{err}");
        }
        let with_cluster = PlanRequest { cluster_size: Some(2), ..two };
        assert!(plan_for(&H100, 4096, with_cluster).unwrap_err().to_string().contains("shared tier only"));
        let forced = PlanRequest { tier: Some(Global), ..two };
        assert!(plan_for(&H100, 256, forced).unwrap_err().to_string().contains("shared tier only"));
    }

    #[test]
    fn copies_for_a_device_whose_reserve_exceeds_a_quarter_of_its_shared_memory_is_one() {
        let tiny = HistogramLimits { max_shared_per_sm: 2048, reserved_shared_per_block: 1024, ..SMALL };
        assert_eq!(copies_for(&tiny, 1), 1);
    }

    #[test]
    fn u8_values_take_1024_thread_blocks_in_the_shared_tier_unless_asked_otherwise() {
        let u8s = PlanRequest { element: Some(InputType::U8), ..PlanRequest::default() };
        let p = plan_for(&H100, 256, u8s).unwrap();
        assert_eq!((p.threads_per_block, p.blocks, p.copies), (1024, 2 * 132, 32));
        let asked = plan_for(&H100, 256, PlanRequest { threads_per_block: Some(256), ..u8s }).unwrap();
        assert_eq!(asked.threads_per_block, 256);
        assert_eq!(plan_for(&H100, 256, PlanRequest::default()).unwrap().threads_per_block, 512);
    }

    #[test]
    fn plan_reason_names_the_capacity_or_crossover_that_decided() {
        let why = |bins| plan_for(&H100, bins, PlanRequest::default()).unwrap().reason(&H100, false);
        assert!(why(256).contains("fit in one block") && why(256).contains("32 interleaved copies"), "{}", why(256));
        assert!(why(100_000).contains("exceed one block (58112 bins)"), "{}", why(100_000));
        assert!(why(1 << 20).contains("fit the sorted tier's 8388608"), "{}", why(1 << 20));
        assert!(why(1 << 24).contains("exceed the sorted tier"), "{}", why(1 << 24));
        let forced = plan_for(&H100, 256, PlanRequest { tier: Some(Global), ..PlanRequest::default() }).unwrap();
        assert_eq!(forced.reason(&H100, true), "global tier as requested");
    }

    #[test]
    fn full_cluster_capacity_is_the_last_bin_count_of_a_forced_cluster_tier() {
        let full = H100.cluster_capacity() as usize;
        assert_eq!(full, 16 * 58_112);
        let cluster = PlanRequest { tier: Some(Cluster), ..PlanRequest::default() };
        let at = plan_for(&H100, full, cluster).unwrap();
        assert_eq!((at.tier, at.cluster_size, at.bins_per_block), (Cluster, 16, 58_112));
        assert!(plan_for(&H100, full + 1, cluster).is_err());
        assert_eq!(plan_for(&H100, full, PlanRequest::default()).unwrap().tier, Sorted);
    }

    #[test]
    fn planner_picks_the_smallest_cluster_that_holds_the_bins() {
        let forced = PlanRequest { tier: Some(Cluster), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 65_536, forced).unwrap().cluster_size, 2);
        assert_eq!(plan_for(&H100, 131_071, forced).unwrap().cluster_size, 3);
        assert_eq!(plan_for(&H100, 196_608, forced).unwrap().cluster_size, 4);
        assert_eq!(plan_for(&H100, 256, forced).unwrap().cluster_size, 1);
    }

    #[test]
    fn smaller_device_moves_every_boundary_down() {
        assert_eq!(SMALL.block_capacity(), 12_288);
        assert_eq!(plan_for(&SMALL, 12_288, PlanRequest::default()).unwrap().tier, Shared);
        let above = plan_for(&SMALL, 12_289, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.bucket_shift), (Sorted, 13));
        // 12,288 bins per block: buckets of 2^13 bins are the widest, 256 of them 2^21 bins.
        let wide = plan_for(&SMALL, 1 << 21, PlanRequest::default()).unwrap();
        assert_eq!((wide.tier, wide.bucket_shift), (Sorted, 13));
        assert_eq!(plan_for(&SMALL, (1 << 21) + 1, PlanRequest::default()).unwrap().tier, Global);
        assert_eq!(copies_for(&SMALL, 256), 8);
        let forced = PlanRequest { tier: Some(Cluster), ..PlanRequest::default() };
        assert_eq!(plan_for(&SMALL, 8 * 12_288, forced).unwrap().cluster_size, 8);
        assert!(plan_for(&SMALL, 8 * 12_288 + 1, forced).is_err());
    }

    #[test]
    fn grid_is_persistent_and_a_multiple_of_the_cluster() {
        // 256 bins: threads limit residency to 2048 / 512 = 4 blocks per SM.
        assert_eq!(plan_for(&H100, 256, PlanRequest::default()).unwrap().blocks, 4 * 132);
        // 58112 bins: one block's 227 KiB leave room for one block per SM.
        assert_eq!(plan_for(&H100, 58_112, PlanRequest::default()).unwrap().copies, 1);
        assert_eq!(plan_for(&H100, 58_112, PlanRequest::default()).unwrap().blocks, 132);
        let c = plan_for(&H100, 131_072, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() }).unwrap();
        assert_eq!(c.blocks % c.cluster_size, 0);
        let global = PlanRequest { tier: Some(Global), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 1 << 20, global).unwrap().blocks, 4 * 132);
    }

    #[test]
    fn forced_tiers_that_cannot_hold_the_bins_are_clear_errors() {
        let err = plan_for(&H100, 58_113, PlanRequest { tier: Some(Shared), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("58113 bins need") && err.contains("cluster, bucketed or global tier"), "{err}");
        let err = plan_for(&H100, 16 * 58_112 + 1, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("largest cluster") && err.contains("bucketed or global tier"), "{err}");
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
    fn launches_need_matching_bins_an_input_that_holds_the_values_and_at_most_u32_max_of_them() {
        let plan = plan_for(&H100, 256, PlanRequest::default()).unwrap();
        let b = Binning::integers(256);
        assert!(check_launch(&plan, 256, b, InputType::I32, 4, 16).is_ok());
        assert!(check_launch(&plan, 256, b, InputType::U8, 0, 16).is_ok());
        let err = |r: Result<()>| r.unwrap_err().to_string();
        assert!(err(check_launch(&plan, 255, b, InputType::I32, 4, 16)).contains("the buffers hold 255"));
        assert!(err(check_launch(&plan, 256, Binning::integers(7), InputType::I32, 4, 16)).contains("binning has 7"));
        assert!(err(check_launch(&plan, 256, b, InputType::I32, 5, 16)).contains("5 i32 values asked"));
        let max = u32::MAX as u64;
        assert!(check_launch(&plan, 256, b, InputType::U8, max, max as usize).is_ok());
        let over = err(check_launch(&plan, 256, b, InputType::U8, max + 1, usize::MAX));
        assert!(over.contains("counts are u32"), "{over}");
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
            plan_for(&H100, i32::MAX as usize + 1, PlanRequest::default()).unwrap_err().to_string().contains("32 bits")
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
