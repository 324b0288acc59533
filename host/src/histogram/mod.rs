//! Launch planning for `kernels::histogram`: which tier (block shared memory, tile-sorted buckets,
//! cluster distributed shared memory, bucketed, global memory), which cluster size, how many private copies, how
//! many blocks, how much shared memory; and the typed inputs (`u8`, `u16`, `i32`, `f32` over a
//! range) the kernels count.
//!
//! [`plan_for`] is pure (device limits in, plan out) so its choices are unit-tested for the H100
//! and for smaller devices; [`plan`] takes the limits from the device and sizes every grid with
//! the driver's occupancy query for the kernel that will run (its registers included).
//!
//! The house: [`HistogramTier`] here; the device limits ([`HistogramLimits`], `limits.rs`); the
//! pure planner ([`plan_for`], `plan.rs`); the plan sized by the driver's occupancy queries
//! ([`plan`], `occupancy.rs`); the launches on device addresses (`launch.rs`); the
//! device-resident API ([`Histogram`], `device.rs`); typed inputs and CPU counts (`values.rs`);
//! files larger than the GPU ([`stream`]).

use kernels::histogram::bucketed::KERNEL_BUCKET_BINS;
use kernels::histogram::sorted::KERNEL_SORTED_BINS;
pub use kernels::histogram::{Binning, Element, InputType};

mod device;
mod launch;
mod limits;
mod occupancy;
mod plan;
pub mod stream;
mod values;

// The features beyond counting one stream into even bins, one module per feature (planner,
// launch on device buffers, host-slice conveniences, CPU reference), and the occupancy-driven
// launch shapes they share.
pub mod channels;
pub mod device_values;
pub mod edges;
pub mod hist2d;
pub mod segmented;
pub mod tuning;
pub mod weighted;

pub use device::{
    COUNT_U64_CHUNK, DeviceHistogram, Histogram, HistogramElement, HistogramScratch, first_count_difference, launch,
    run,
};
pub use launch::{BucketScratch, DeviceCounters, DeviceInput, launch_into};
pub use limits::HistogramLimits;
pub use occupancy::{plan, plan_with};
pub use plan::*;
pub use values::{MAX_F32_BINS, Values, ValuesBuf, binning_for, histogram_cpu_of};

/// Where the counters live.
///
/// ```
/// use hopper_kernels::histogram::HistogramTier;
/// assert_eq!("Sorted".parse::<HistogramTier>(), Ok(HistogramTier::Sorted));
/// assert_eq!(HistogramTier::Cluster.to_string(), "cluster");
/// let err = "smem".parse::<HistogramTier>().unwrap_err();
/// assert_eq!(err, "unknown histogram tier `smem`: choose from shared, packed, sorted, cluster, bucketed, global");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistogramTier {
    /// Private histograms per block in its shared memory.
    Shared,
    /// Private histograms per block in its shared memory with the counters packed two or four to a
    /// word (16- or 8-bit digits whose carries are corrected exactly): two or four times the
    /// shared tier's bins, one pass.
    Packed,
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

named_enum!(HistogramTier, "histogram tier");

impl HistogramTier {
    /// Every tier, in the planner's order of preference.
    pub const ALL: [Self; 6] = [Self::Shared, Self::Packed, Self::Sorted, Self::Cluster, Self::Bucketed, Self::Global];

    /// The name the CLI and reports use.
    ///
    /// ```
    /// use hopper_kernels::histogram::HistogramTier;
    /// let names: Vec<&str> = HistogramTier::ALL.iter().map(|t| t.name()).collect();
    /// assert_eq!(names, ["shared", "packed", "sorted", "cluster", "bucketed", "global"]);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Packed => "packed",
            Self::Sorted => "sorted",
            Self::Cluster => "cluster",
            Self::Bucketed => "bucketed",
            Self::Global => "global",
        }
    }

    /// The kernel that counts (the bins pass for the bucketed and sorted tiers); `packing` picks
    /// the packed tier's kernel (1: 16-bit counters, 2: 8-bit, `SIX_BIT_PACKING`: 6-bit,
    /// `FOUR_BIT_PACKING`: 4-bit).
    fn kernel(self, input: InputType, packing: u32) -> &'static str {
        let k = input.kernels();
        match self {
            Self::Shared => k.shared,
            Self::Packed => {
                let t = weighted::type_index(input);
                if packing == kernels::histogram::packed::SIX_BIT_PACKING {
                    kernels::histogram::channels::PACKED6_KERNELS[t]
                } else if packing == kernels::histogram::packed::FOUR_BIT_PACKING {
                    kernels::histogram::channels::PACKED4_KERNELS[t]
                } else {
                    kernels::histogram::channels::kernel(1, packing, t)
                        .unwrap_or(kernels::histogram::channels::PACKED_KERNELS[t])
                }
            }
            Self::Cluster => k.cluster,
            Self::Bucketed => KERNEL_BUCKET_BINS,
            Self::Sorted => KERNEL_SORTED_BINS,
            Self::Global => k.global,
        }
    }
}
