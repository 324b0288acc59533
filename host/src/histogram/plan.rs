//! The pure planner: from the bin count, the request and the device's limits to the tier, its
//! grid, copies, buckets and shared memory ([`plan_for`]), with the reasons `--plan` prints.

use super::{HistogramLimits, HistogramTier};
use crate::error::{Error, Result, format_bytes};
use cudarc::driver::LaunchConfig;
use kernels::histogram::InputType;
use kernels::histogram::bucketed::{self, SCATTER_THREADS};
use kernels::histogram::packed;
use kernels::histogram::shared_bytes;
use kernels::histogram::sorted::{self};

/// Threads per block unless the request names another count.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, THREADS_PER_BLOCK, plan_for};
/// let p = plan_for(&HistogramLimits::H100, 1000, PlanRequest::default())?;
/// assert_eq!(p.threads_per_block(), THREADS_PER_BLOCK);
/// # Ok(()) }
/// ```
pub const THREADS_PER_BLOCK: u32 = 512;

/// What the caller fixes of a plan; `None` leaves the choice to the planner.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
/// // 65,536 bins in the global tier with 256-thread blocks, where the planner would sort.
/// let global = Some(HistogramTier::Global);
/// let request = PlanRequest { tier: global, threads_per_block: Some(256), ..PlanRequest::default() };
/// let p = plan_for(&HistogramLimits::H100, 65_536, request)?;
/// assert_eq!((p.tier(), p.threads_per_block()), (HistogramTier::Global, 256));
/// // What does not apply to the tier is refused, not dropped.
/// let copies = PlanRequest { copies: Some(4), ..request };
/// assert!(plan_for(&HistogramLimits::H100, 65_536, copies).unwrap_err().to_string().contains("shared tier only"));
/// # Ok(()) }
/// ```
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
    /// Bits per counter of the packed tier: 16, 8 (with its carry plane), 6 or 4 (with their
    /// carry table, in as many passes as hold the bins); by default the widest that holds them.
    pub counter_bits: Option<u32>,
}

/// Portable cluster size limit; larger clusters need the non-portable function attribute.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PORTABLE_CLUSTER_SIZE, PlanRequest, plan_for};
/// let cluster = PlanRequest { tier: Some(HistogramTier::Cluster), ..PlanRequest::default() };
/// // 500,000 bins need 9 blocks of 58,112: past the portable 8, within the H100's 16.
/// let p = plan_for(&HistogramLimits::H100, 500_000, cluster)?;
/// assert!(p.cluster_size() == 9 && p.cluster_size() > PORTABLE_CLUSTER_SIZE);
/// # Ok(()) }
/// ```
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;

/// The narrowest bucket the planner uses in the bucketed tier, in bits of the bin: 2^14
/// counters take 64 KiB, so three blocks of the bins pass share an SM.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, MIN_BUCKET_SHIFT, PlanRequest, plan_for};
/// let bucketed = PlanRequest { tier: Some(HistogramTier::Bucketed), ..PlanRequest::default() };
/// // Even 300 bins take buckets of 2^14 (one bucket).
/// assert_eq!(plan_for(&HistogramLimits::H100, 300, bucketed)?.bucket_shift(), MIN_BUCKET_SHIFT);
/// # Ok(()) }
/// ```
pub const MIN_BUCKET_SHIFT: u32 = 14;

/// Waves of resident blocks the sorted tier's bins pass runs: the kernel shares the grid out among
/// the buckets in proportion to their values, so a whole number of waves leaves no partial one
/// (the resident blocks plus one per bucket put a uniform input's 56 last blocks in a second
/// wave: 0.379 ms at 2^20 bins against 0.332 in one). Two waves of half-size parts let the SMs
/// even out skew, where one heavy bucket's blocks pile on some SMs: measured on the H100 (2^26
/// values, the final kernels) at 2^20 bins, uniform 0.346 ms against 0.336 in one wave, zipf
/// 0.377 against 0.440 (1.09x uniform against 1.31x), constant 0.283 against 0.272; at 262,144
/// bins zipf 0.332 against 0.364.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{BINS_PASS_WAVES, HistogramLimits, PlanRequest, plan_for};
/// // 2^20 bins, sorted: 3 bins-pass blocks fit an SM by shared memory, in 2 waves.
/// let p = plan_for(&HistogramLimits::H100, 1 << 20, PlanRequest::default())?;
/// assert_eq!(p.blocks(), BINS_PASS_WAVES * 3 * 132);
/// # Ok(()) }
/// ```
pub const BINS_PASS_WAVES: u32 = 2;

/// The narrowest bucket the planner uses in the sorted tier, in bits of the bin: every block of
/// its bins pass zeroes and flushes `2^shift` counters, which narrow buckets keep cheap, while
/// wide ones give each tile longer runs of keys to read and fewer buckets to rank. Measured on an
/// H100 (2^26 values, `host histogram --tier sorted --bucket-bits`, with the one-wave bins pass and
/// two-group ranking): at 2^20 bins 0.368 ms with buckets of 2^13 bins, 0.332 with 2^14, 0.361
/// with 2^15 (128 KiB of counters: one bins-pass block per SM). Before those, at 262,144 bins
/// 0.386, 0.378, 0.475; zipf at 65,536 bins 0.409, 0.388, 0.448.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, MIN_SORTED_SHIFT, PlanRequest, plan_for};
/// // One bin more than the packed tier takes on its own: sorted, in buckets of 2^14 bins.
/// let p = plan_for(&HistogramLimits::H100, 389_121, PlanRequest::default())?;
/// assert_eq!((p.tier(), p.bucket_shift()), (HistogramTier::Sorted, MIN_SORTED_SHIFT));
/// # Ok(()) }
/// ```
pub const MIN_SORTED_SHIFT: u32 = 14;

/// Static shared memory of the sorted tier's bins pass (its per-thread segment tables, two words a thread), bytes.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, SORTED_BINS_STATIC_SHARED, plan_for};
/// let h100 = HistogramLimits::H100;
/// let p = plan_for(&h100, 1 << 20, PlanRequest::default())?;
/// // Counters, segment tables and the system's reserve per block: 3 blocks per SM.
/// let per_block = p.shared_bytes() + SORTED_BINS_STATIC_SHARED + h100.reserved_shared_per_block;
/// assert_eq!(h100.max_shared_per_sm / per_block, 3);
/// # Ok(()) }
/// ```
pub const SORTED_BINS_STATIC_SHARED: u32 = 8368;

/// Static shared memory of the sorted tier's tile sort (bucket counters, offsets and the block's totals), bytes.
pub const TILE_SORT_STATIC_SHARED: u32 = 3088;

/// Static shared memory of the bucketed tier's scatter, bytes.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, SCATTER_STATIC_SHARED, plan_for};
/// // A device with 64 KiB of shared memory per SM keeps one scatter block per SM.
/// let h100 = HistogramLimits::H100;
/// let small = HistogramLimits { max_shared_per_sm: 65_536, max_shared_per_block_optin: 49_152, ..h100 };
/// assert_eq!(small.max_shared_per_sm / (SCATTER_STATIC_SHARED + small.reserved_shared_per_block), 1);
/// let bucketed = PlanRequest { tier: Some(HistogramTier::Bucketed), ..PlanRequest::default() };
/// assert_eq!(plan_for(&small, 1 << 20, bucketed)?.scatter_blocks(), small.sm_count);
/// # Ok(()) }
/// ```
pub const SCATTER_STATIC_SHARED: u32 = 36_880;

/// Threads per block of the shared tier for `u8` values, 16 to a 16-byte load: on an H100,
/// 2^28 values in 256 bins took 0.099 ms with 1024 threads against 0.112 ms with 512.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, InputType, PlanRequest, U8_SHARED_THREADS, plan_for};
/// let u8s = PlanRequest { element: Some(InputType::U8), ..PlanRequest::default() };
/// assert_eq!(plan_for(&HistogramLimits::H100, 256, u8s)?.threads_per_block(), U8_SHARED_THREADS);
/// # Ok(()) }
/// ```
pub const U8_SHARED_THREADS: u32 = 1024;

/// Threads per block of the packed tier unless asked otherwise: one block per SM holds the
/// packed counters (up to 227 KiB), so the block is as large as an SM's threads allow to keep
/// loads in flight. On the H200 one-channel packed counters at 65,536 bins ran 132 blocks of
/// 1024 threads at 63% of the copy's bandwidth (2^26 `i32`), where the sorted tier ran at 21%.
/// The carry-table kernels (6- and 4-bit counters) take
/// [`carry_table_threads`](kernels::histogram::packed::carry_table_threads) (768 and 640), which
/// their registers allow; on an opened device the plan takes fewer wherever a
/// kernel's registers do not allow its threads ([`plan_with`](super::plan_with)).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PACKED_THREADS, PlanRequest, plan_for};
/// let p = plan_for(&HistogramLimits::H100, 65_536, PlanRequest::default())?;
/// assert_eq!((p.tier(), p.threads_per_block()), (HistogramTier::Packed, PACKED_THREADS));
/// # Ok(()) }
/// ```
pub const PACKED_THREADS: u32 = 1024;

/// The most bins the planner gives the packed tier on its own: one pass of 6- or 4-bit digits
/// with their carry table ([`kernels::histogram::packed::carry_table_capacity`]: 280,320 and
/// 389,120 bins in 227 KiB), or two passes while each holds no more bins than one block's 8-bit
/// digits with their carry plane ([`kernels::histogram::packed::carry_plane_capacity`]:
/// 154,964), whichever is more (389,120 bins on an H100 or H200). On the H200 (2^26 values) one
/// pass at 262,144 bins took 0.135 ms on uniform `i32` values against the sorted tier's 0.303
/// (zipf: 0.145), and at 300,000 bins (4-bit digits) 0.137 (zipf: 0.169 with the carry queues,
/// 0.321 before; a constant input 0.192); on the H100 two
/// passes took 0.277 ms at 300,000 bins against 0.312, but 0.356
/// at 524,288 against 0.315 (before the blocks' digits went to a sum kernel, 0.03 ms a pass at
/// 262,144 bins). The carry table keeps a digit's carries (one per 64 or 16 adds) in shared
/// memory, and warp-aggregated adds turn a constant input's 32 atomics on one word into one.
/// Plain 8-bit digits had sent each carry to two global counters from every SM: on the H200
/// (131,072 bins) 0.114 ms on uniform values but 0.463 on a constant input, where the sorted tier
/// took 0.263. Plain 8-bit digits (one pass up to four times one block's bins) are left to the
/// channels kernel (`--channels 1 --packing 2`).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, packed_auto_capacity, plan_for};
/// let h100 = HistogramLimits::H100;
/// let last = packed_auto_capacity(&h100) as usize;
/// assert_eq!(last, 389_120);
/// assert_eq!(plan_for(&h100, last, PlanRequest::default())?.tier(), HistogramTier::Packed);
/// assert_eq!(plan_for(&h100, last + 1, PlanRequest::default())?.tier(), HistogramTier::Sorted);
/// # Ok(()) }
/// ```
pub fn packed_auto_capacity(limits: &HistogramLimits) -> u64 {
    let capacity = limits.block_capacity();
    table_pass_capacity(limits).max(2 * packed::carry_plane_capacity(capacity)).min(packed_capacity(limits))
}

/// The most bins one pass of the packed tier holds in counters with a carry table: 6- or 4-bit,
/// whichever holds more (4-bit digits take half the room of 6-bit ones but a table four times
/// as large, so on a device with small blocks 6-bit digits hold more).
fn table_pass_capacity(limits: &HistogramLimits) -> u64 {
    let capacity = limits.block_capacity();
    packed::carry_table_capacity(capacity, packed::SIX_BIT_PACKING)
        .max(packed::carry_table_capacity(capacity, packed::FOUR_BIT_PACKING))
}

/// The most passes over the values the packed tier makes, each counting a window of the bins in
/// 6- or 4-bit counters with their carry table (the values outside it are left to the other
/// pass): two, up to 778,240 bins on an H100 or H200 ([`packed_capacity`]). Each pass reads the
/// values once, where the sorted tier reads them, writes half their bytes and reads those again;
/// two passes of 6-bit counters already lost to it at 524,288 bins on the H100 (0.356 ms against
/// 0.315), so the planner stops short of that on its own ([`packed_auto_capacity`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PACKED_MAX_PASSES, PlanRequest, plan_for};
/// let packed = PlanRequest { tier: Some(HistogramTier::Packed), ..PlanRequest::default() };
/// let p = plan_for(&HistogramLimits::H100, 524_288, packed)?;
/// assert_eq!((p.tier(), p.packed_passes(), p.bins_per_block()), (HistogramTier::Packed, PACKED_MAX_PASSES, 262_144));
/// # Ok(()) }
/// ```
pub const PACKED_MAX_PASSES: u32 = 2;

/// Private copies the shared tier keeps at most: one per lane of a warp.
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, MAX_COPIES, PlanRequest, copies_for, plan_for};
/// assert_eq!(copies_for(&HistogramLimits::H100, 256), MAX_COPIES);
/// let request = PlanRequest { copies: Some(2 * MAX_COPIES), ..PlanRequest::default() };
/// assert!(plan_for(&HistogramLimits::H100, 256, request).is_err());
/// ```
pub const MAX_COPIES: u32 = 32;

/// Blocks per SM the shared tier keeps resident when it chooses its copies: the copies take
/// what shared memory that many blocks leave.
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, SHARED_BLOCKS_PER_SM, copies_for};
/// let h100 = HistogramLimits::H100;
/// // A quarter of an SM's shared memory, less the reserve, holds 8 copies of 1024 bins, not 16.
/// let per_block = h100.max_shared_per_sm / SHARED_BLOCKS_PER_SM - h100.reserved_shared_per_block;
/// assert!(8 * 1024 * 4 <= per_block && 16 * 1024 * 4 > per_block);
/// assert_eq!(copies_for(&h100, 1024), 8);
/// ```
pub const SHARED_BLOCKS_PER_SM: u32 = 4;

/// A planned histogram launch.
/// Built only by the planner ([`plan_for`], [`plan`](super::plan()), [`plan_with`](super::plan_with)); its fields are read through
/// the accessors of the same names.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
/// let p = plan_for(&HistogramLimits::H100, 256, PlanRequest::default())?;
/// assert_eq!(
///     p.to_string(),
///     "shared tier, 528 blocks x 512 threads, 32.00 KiB shared per block (256 bins each, 32 copies)"
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HistogramPlan {
    /// Where the counters live.
    pub(super) tier: HistogramTier,
    /// Blocks per cluster (1 outside the cluster tier).
    pub(super) cluster_size: u32,
    /// Blocks in the grid (a multiple of `cluster_size`; the bins pass of the bucketed tier).
    pub(super) blocks: u32,
    /// Threads per block.
    pub(super) threads_per_block: u32,
    /// Dynamic shared memory per block, bytes.
    pub(super) shared_bytes: u32,
    /// Bins each block holds in shared memory (0 for the global tier; the bucket width for the
    /// bucketed tier).
    pub(super) bins_per_block: u32,
    /// Bins of the histogram.
    pub(super) bins: u32,
    /// Private interleaved copies of the histogram per block (shared tier; the bucket counts of
    /// the bucketed tier), 1 elsewhere.
    pub(super) copies: u32,
    /// Whether warps merge equal bins before adding.
    pub(super) aggregate: bool,
    /// Bits of the bin below the bucket (bucketed tier; 0 elsewhere).
    pub(super) bucket_shift: u32,
    /// Blocks of the first pass that reads the values: the bucketed tier's scatter, the sorted
    /// tier's tile sort (0 elsewhere).
    pub(super) scatter_blocks: u32,
    /// Blocks of the bucketed tier's bucket count pass (0 elsewhere).
    pub(super) count_blocks: u32,
    /// Counters per 32-bit word as `log2` (packed tier: 1 for 16-bit, 2 for 8-bit digits; 0
    /// elsewhere).
    pub(super) packing: u32,
    /// Whether the packed tier's 8-bit counters keep their carries in a carry plane
    /// ([`kernels::histogram::packed::CARRY_PLANE_PACKING`]).
    pub(super) carry_plane: bool,
    /// Passes of the packed tier over the values, each counting a window of `bins_per_block`
    /// bins (1 elsewhere).
    pub(super) passes: u32,
}

impl HistogramPlan {
    /// Where the counters live.
    ///
    /// ```
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let tier = |bins| plan_for(&HistogramLimits::H100, bins, PlanRequest::default()).unwrap().tier();
    /// assert_eq!(tier(58_112), HistogramTier::Shared); // one block's shared memory
    /// assert_eq!(tier(58_113), HistogramTier::Packed); // ... as 16-bit or 8-bit counters
    /// assert_eq!(tier(1 << 20), HistogramTier::Sorted);
    /// assert_eq!(tier((1 << 23) + 1), HistogramTier::Global); // past the sorted tier's buckets
    /// ```
    pub fn tier(&self) -> HistogramTier {
        self.tier
    }

    /// Blocks per cluster (1 outside the cluster tier).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let cluster = PlanRequest { tier: Some(HistogramTier::Cluster), ..PlanRequest::default() };
    /// // The smallest cluster whose blocks hold 131,071 bins (58,112 each).
    /// assert_eq!(plan_for(&HistogramLimits::H100, 131_071, cluster)?.cluster_size(), 3);
    /// assert_eq!(plan_for(&HistogramLimits::H100, 256, PlanRequest::default())?.cluster_size(), 1);
    /// # Ok(()) }
    /// ```
    pub fn cluster_size(&self) -> u32 {
        self.cluster_size
    }

    /// Blocks in the grid (a multiple of `cluster_size`; the bins pass of the bucketed tier).
    ///
    /// ```
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let blocks = |bins| plan_for(&HistogramLimits::H100, bins, PlanRequest::default()).unwrap().blocks();
    /// assert_eq!(blocks(256), 4 * 132); // 2048 threads per SM in blocks of 512
    /// assert_eq!(blocks(58_112), 132); // 227 KiB each: one per SM
    /// ```
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Threads per block.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let request = PlanRequest { threads_per_block: Some(1024), ..PlanRequest::default() };
    /// assert_eq!(plan_for(&HistogramLimits::H100, 256, request)?.threads_per_block(), 1024);
    /// let odd = PlanRequest { threads_per_block: Some(48), ..PlanRequest::default() };
    /// assert!(plan_for(&HistogramLimits::H100, 256, odd).unwrap_err().to_string().contains("multiple of 32"));
    /// # Ok(()) }
    /// ```
    pub fn threads_per_block(&self) -> u32 {
        self.threads_per_block
    }

    /// Dynamic shared memory per block, bytes.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// // 32 copies of 256 counters.
    /// assert_eq!(plan_for(&HistogramLimits::H100, 256, PlanRequest::default())?.shared_bytes(), 32 * 256 * 4);
    /// let global = PlanRequest { tier: Some(HistogramTier::Global), ..PlanRequest::default() };
    /// assert_eq!(plan_for(&HistogramLimits::H100, 256, global)?.shared_bytes(), 0);
    /// # Ok(()) }
    /// ```
    pub fn shared_bytes(&self) -> u32 {
        self.shared_bytes
    }

    /// Bins each block holds in shared memory (0 for the global tier; the bucket width for the
    /// bucketed tier).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// // 65,536 bins over a cluster of 4 blocks.
    /// let request = PlanRequest { cluster_size: Some(4), ..PlanRequest::default() };
    /// assert_eq!(plan_for(&HistogramLimits::H100, 65_536, request)?.bins_per_block(), 16_384);
    /// # Ok(()) }
    /// ```
    pub fn bins_per_block(&self) -> u32 {
        self.bins_per_block
    }

    /// Bins of the histogram.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// assert_eq!(plan_for(&HistogramLimits::H100, 1000, PlanRequest::default())?.bins(), 1000);
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// Private interleaved copies of the histogram per block (shared tier; the bucket counts of
    /// the bucketed tier), 1 elsewhere.
    ///
    /// ```
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let copies = |bins| plan_for(&HistogramLimits::H100, bins, PlanRequest::default()).unwrap().copies();
    /// assert_eq!((copies(256), copies(1024), copies(4096), copies(8192)), (32, 8, 2, 1));
    /// ```
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Whether warps merge equal bins before adding.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let h100 = HistogramLimits::H100;
    /// assert!(!plan_for(&h100, 256, PlanRequest::default())?.aggregate());
    /// // Clusters aggregate by default: remote adds to one address serialize.
    /// assert!(plan_for(&h100, 65_536, PlanRequest { cluster_size: Some(2), ..PlanRequest::default() })?.aggregate());
    /// # Ok(()) }
    /// ```
    pub fn aggregate(&self) -> bool {
        self.aggregate
    }

    /// Bits of the bin below the bucket (bucketed tier; 0 elsewhere).
    ///
    /// ```
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let shift = |bins| plan_for(&HistogramLimits::H100, bins, PlanRequest::default()).unwrap().bucket_shift();
    /// assert_eq!(shift(256), 0); // the shared tier has no buckets
    /// assert_eq!(shift(1 << 20), 14);
    /// assert_eq!(shift((256 << 14) + 1), 15); // past 256 buckets of 2^14 the buckets widen
    /// ```
    pub fn bucket_shift(&self) -> u32 {
        self.bucket_shift
    }

    /// Blocks of the first pass that reads the values: the bucketed tier's scatter, the sorted
    /// tier's tile sort (0 elsewhere).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// // The sorted tier's tile sort: 4 blocks of 512 threads per SM.
    /// assert_eq!(plan_for(&HistogramLimits::H100, 1 << 20, PlanRequest::default())?.scatter_blocks(), 4 * 132);
    /// assert_eq!(plan_for(&HistogramLimits::H100, 256, PlanRequest::default())?.scatter_blocks(), 0);
    /// # Ok(()) }
    /// ```
    pub fn scatter_blocks(&self) -> u32 {
        self.scatter_blocks
    }

    /// Blocks of the bucketed tier's bucket count pass (0 elsewhere).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let bucketed = PlanRequest { tier: Some(HistogramTier::Bucketed), ..PlanRequest::default() };
    /// assert_eq!(plan_for(&HistogramLimits::H100, 1 << 20, bucketed)?.count_blocks(), 4 * 132);
    /// assert_eq!(plan_for(&HistogramLimits::H100, 1 << 20, PlanRequest::default())?.count_blocks(), 0);
    /// # Ok(()) }
    /// ```
    pub fn count_blocks(&self) -> u32 {
        self.count_blocks
    }

    /// The packing code of the counters: 1 (16-bit digits), 2 (8-bit digits),
    /// [`SIX_BIT_PACKING`](kernels::histogram::packed::SIX_BIT_PACKING) or
    /// [`FOUR_BIT_PACKING`](kernels::histogram::packed::FOUR_BIT_PACKING) in the packed tier, 0
    /// (whole `u32` counters) elsewhere.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let h100 = HistogramLimits::H100; // 58,112 u32 counters per block
    /// let packing = |bins| plan_for(&h100, bins, PlanRequest::default()).map(|p| p.packing());
    /// assert_eq!((packing(58_112)?, packing(58_113)?, packing(116_224)?, packing(116_225)?), (0, 1, 1, 2));
    /// // 8-bit digits with their carry plane up to 154,964 bins, then 6-bit digits with their
    /// // carry table (SIX_BIT_PACKING, 4) up to 280,320, then 4-bit ones (FOUR_BIT_PACKING, 3)
    /// // up to 389,120; then sorted.
    /// assert_eq!((packing(154_964)?, packing(154_965)?, packing(280_320)?, packing(280_321)?), (2, 4, 4, 3));
    /// assert_eq!((packing(389_120)?, packing(389_121)?), (3, 0));
    /// # Ok(()) }
    /// ```
    pub fn packing(&self) -> u32 {
        self.packing
    }

    /// Whether the packed tier's 8-bit counters keep their carries in a carry plane in shared
    /// memory after them (4-bit digits, [`kernels::histogram::packed::CARRY_PLANE_PACKING`]): the
    /// planner's choice wherever both fit one block.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let h100 = HistogramLimits::H100;
    /// let p = plan_for(&h100, 131_072, PlanRequest::default())?;
    /// assert_eq!((p.tier(), p.packing(), p.carry_plane(), p.shared_bytes()), (HistogramTier::Packed, 2, true, 192 << 10));
    /// assert!(!plan_for(&h100, 65_536, PlanRequest::default())?.carry_plane()); // 16-bit digits
    /// let packed = PlanRequest { tier: Some(HistogramTier::Packed), ..PlanRequest::default() };
    /// assert!(!plan_for(&h100, 262_144, packed)?.carry_plane()); // 6-bit digits: a carry table
    /// # Ok(()) }
    /// ```
    pub fn carry_plane(&self) -> bool {
        self.carry_plane
    }

    /// Passes of the packed tier over the values ([`PACKED_MAX_PASSES`] at most), each counting
    /// the next window of [`bins_per_block`](Self::bins_per_block) bins; 1 elsewhere.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
    /// let packed = PlanRequest { tier: Some(HistogramTier::Packed), ..PlanRequest::default() };
    /// let passes = |bins| plan_for(&HistogramLimits::H100, bins, packed).map(|p| p.packed_passes());
    /// assert_eq!((passes(131_072)?, passes(389_120)?, passes(389_121)?), (1, 1, 2));
    /// // 6-bit counters take two passes where 4-bit ones take one.
    /// let six = PlanRequest { counter_bits: Some(6), ..packed };
    /// assert_eq!(plan_for(&HistogramLimits::H100, 300_000, six)?.packed_passes(), 2);
    /// # Ok(()) }
    /// ```
    pub fn packed_passes(&self) -> u32 {
        self.passes
    }

    /// The `mode` argument of the packed kernel ([`kernels::histogram::packed::mode`]): the
    /// packing, warp aggregation and carry plane of this plan.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// use kernels::histogram::packed::mode;
    /// let p = plan_for(&HistogramLimits::H100, 131_072, PlanRequest::default())?;
    /// assert_eq!(p.packed_mode(), mode(2, true, true));
    /// # Ok(()) }
    /// ```
    pub fn packed_mode(&self) -> u32 {
        packed::mode(self.packing, self.aggregate, self.carry_plane)
    }

    /// The PTX symbol of the kernel that counts `input` values (the bins pass, in the bucketed
    /// and sorted tiers). The shared tier counts through the one-channel kernel of
    /// `kernels::histogram::channels`, whose input loop keeps the next step's loads in flight
    /// while it counts ([`kernels::histogram::pipelined`]): on the H200 (2^26 values) it ran `f32`
    /// at 256 bins in 0.065 ms against the first shared kernel's 0.076 and `i32` in 0.064 against
    /// 0.065. Warp-aggregated adds, which only the first kernel makes, keep it.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, PlanRequest, plan_for};
    /// let h100 = HistogramLimits::H100;
    /// let plan = |bins, aggregate| plan_for(&h100, bins, PlanRequest { aggregate, ..PlanRequest::default() });
    /// assert_eq!(plan(256, None)?.kernel(InputType::F32), "histogram_channels1_f32");
    /// assert_eq!(plan(256, Some(true))?.kernel(InputType::F32), "histogram_shared_f32");
    /// // The packed tier: 16-bit counters have a kernel of their own, without the carry plane.
    /// assert_eq!(plan(65_536, None)?.kernel(InputType::I32), "histogram_packed16_i32");
    /// assert_eq!(plan(131_072, None)?.kernel(InputType::I32), "histogram_packed_i32");
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self, input: InputType) -> &'static str {
        match self.tier {
            HistogramTier::Shared => shared_tier_kernel(input, self.aggregate),
            tier => tier.kernel(input, self.packing),
        }
    }
}

/// The shared tier's counting kernel for `input`: the pipelined one-channel kernel, or with
/// warp-aggregated adds the first kernel, which alone makes them.
pub(super) fn shared_tier_kernel(input: InputType, aggregate: bool) -> &'static str {
    if aggregate {
        input.kernels().shared
    } else {
        kernels::histogram::channels::KERNELS[0][super::weighted::type_index(input)]
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
            if self.tier == HistogramTier::Packed {
                write!(f, ", {}-bit counters", packed::digit_bits(self.packing))?;
                if self.carry_plane {
                    write!(f, " and a 4-bit carry plane")?;
                }
                if packed::has_carry_table(self.packing) {
                    write!(f, " and a carry table")?;
                }
                // The kernel family: 16-, 6- and 4-bit counters have kernels of their own.
                let family = match self.packing {
                    1 => "histogram_packed16_*",
                    packed::SIX_BIT_PACKING => "histogram_packed6_*",
                    packed::FOUR_BIT_PACKING => "histogram_packed4_*",
                    _ => "histogram_packed_*",
                };
                write!(f, " in {family}")?;
                if self.passes > 1 {
                    write!(f, "; {} passes over the values", self.passes)?;
                }
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
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let cfg = plan_for(&HistogramLimits::H100, 256, PlanRequest::default())?.launch_config();
    /// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((528, 1, 1), (512, 1, 1), 32_768));
    /// # Ok(()) }
    /// ```
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (self.threads_per_block, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        }
    }

    /// Why the planner chose this tier, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{HistogramLimits, PlanRequest, plan_for};
    /// let h100 = HistogramLimits::H100;
    /// let why = plan_for(&h100, 100_000, PlanRequest::default())?.reason(&h100, false);
    /// assert!(why.starts_with("100000 bins exceed one block's 58112 u32 counters, so they are packed 2 to a word"), "{why}");
    /// let why = plan_for(&h100, 1 << 20, PlanRequest::default())?.reason(&h100, false);
    /// assert!(why.starts_with("1048576 bins exceed what the packed tier takes on its own (389120 bins"), "{why}");
    /// let why = plan_for(&h100, 131_072, PlanRequest::default())?.reason(&h100, false);
    /// assert!(why.contains("4-bit carry plane") && why.contains("warps merge"), "{why}");
    /// assert_eq!(plan_for(&h100, 256, PlanRequest::default())?.reason(&h100, true), "shared tier as requested");
    /// # Ok(()) }
    /// ```
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
            HistogramTier::Packed => format!(
                "{bins} bins exceed one block's {} u32 counters, so they are packed {} to a word ({}-bit digits, carries corrected exactly{}): {} (H200, 2^26 i32 at 65,536 bins: 0.100 ms against 0.308; plain 8-bit digits at 131,072 bins: 0.114 against 0.304 on uniform values){}",
                limits.block_capacity(),
                packed::per_word(self.packing),
                packed::digit_bits(self.packing),
                if self.carry_plane {
                    " in a 4-bit carry plane in shared memory, so that a skewed or constant input reaches global memory once per 4,096 adds to a bin, not twice per 256"
                } else if self.packing == packed::SIX_BIT_PACKING {
                    " in a carry table in shared memory, 1,024 slots of a counter and its count, so that a skewed or constant input's carries, one per 64 adds to a bin, stay off the global counters, and a bin that carried adds its later values in its slot"
                } else if self.packing == packed::FOUR_BIT_PACKING {
                    " in a carry table in shared memory, 4,096 slots of a counter and its count, so that a skewed or constant input's carries, one per 16 adds to a bin, stay off the global counters, and a bin that carried adds its later values in its slot; 4-bit digits hold more bins than 6-bit ones with their table"
                } else {
                    ""
                },
                if self.passes > 1 {
                    format!(
                        "{} passes over the values, each counting {} of the bins (one block holds {} in {}-bit counters and their carry table); each pass reads the values once, where the sorted tier reads them, writes and reads half their bytes again and is bound by its ranking",
                        self.passes,
                        self.bins_per_block,
                        packed::carry_table_capacity(limits.block_capacity(), self.packing),
                        packed::digit_bits(self.packing)
                    )
                } else {
                    "one pass over the values, where the sorted tier makes two".to_string()
                },
                if self.aggregate {
                    "; warps merge the lanes of lane 0's bin into one add (a constant input: one shared atomic per warp and value, not 32 on one word)"
                } else {
                    ""
                }
            ),
            HistogramTier::Sorted => format!(
                "{bins} bins exceed what the packed tier takes on its own ({} bins: one pass of 6- or 4-bit counters with their carry table, or two passes of as many bins as 8-bit counters with their carry plane hold) and fit the sorted tier's {} ({} buckets of up to {} bins): on an H100 it beat clusters, the bucketed tier and global atomics at every bin count from 65,536 to 2^20 (2^26 values: 0.302 ms against a cluster's 0.421 at 65,536; 0.335 against 0.669 bucketed and 0.790 global at 2^20), within 1.01x of its uniform time on zipf values at 65,536 bins where a cluster took 1.63x (1.32x at 2^20, where its bins pass waits on the hot bins' shared atomics)",
                packed_auto_capacity(limits),
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
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, copies_for};
/// let h100 = HistogramLimits::H100;
/// assert_eq!((copies_for(&h100, 256), copies_for(&h100, 1024), copies_for(&h100, 8192)), (32, 8, 1));
/// ```
pub fn copies_for(limits: &HistogramLimits, bins: u32) -> u32 {
    let per_block = (limits.max_shared_per_sm / SHARED_BLOCKS_PER_SM).saturating_sub(limits.reserved_shared_per_block);
    let mut copies = MAX_COPIES;
    while copies > 1 && (bins as u64) * copies as u64 * 4 > per_block as u64 {
        copies /= 2;
    }
    copies
}

/// Plans a histogram of `bins` bins for a device with `limits`: the shared tier when one block
/// holds every bin, else the packed tier while 16-bit counters, 8-bit ones with their carry plane
/// or 6-bit ones with their carry table ([`packed_auto_capacity`]) hold them, else the sorted tier while its buckets hold the bins, else the global tier
/// (the cluster and bucketed tiers only when asked for). The request can fix the tier, the
/// cluster size (cluster tier only), the threads per block, the copies (shared tier only), the
/// bucket width (bucketed and sorted tiers) and warp aggregation. The grid is persistent: as many
/// blocks as the device keeps resident at once, estimated here from threads and shared memory
/// ([`plan_with`](super::plan_with) replaces the estimate with the driver's occupancy for the kernel's registers).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier::*, PlanRequest, plan_for};
/// let h100 = HistogramLimits::H100;
/// let tier = |bins| plan_for(&h100, bins, PlanRequest::default()).map(|p| p.tier());
/// assert_eq!((tier(256)?, tier(100_000)?, tier(1 << 20)?, tier(1 << 24)?), (Shared, Packed, Sorted, Global));
/// // A forced tier that cannot hold the bins is an error that says which tiers can.
/// let shared = PlanRequest { tier: Some(Shared), ..PlanRequest::default() };
/// let err = plan_for(&h100, 100_000, shared).unwrap_err().to_string();
/// assert!(err.contains("use the cluster, bucketed or global tier"), "{err}");
/// # Ok(()) }
/// ```
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
        counter_bits,
    } = request;
    let waves = bins_pass_waves.unwrap_or(BINS_PASS_WAVES);
    if !(1..=8).contains(&waves) {
        return Err(Error::InvalidArgument(format!("{waves} waves of the bins pass: use 1 to 8")));
    }
    let threads = threads_per_block.unwrap_or(THREADS_PER_BLOCK);
    if threads == 0 || threads > 1024 || threads % 32 != 0 {
        return Err(Error::InvalidArgument(format!(
            "{threads} threads per block: use a multiple of 32 from 32 to 1024"
        )));
    }
    check_bins(bins)?;
    let capacity = limits.block_capacity() as usize;
    // Every tier keeps at least one 4-byte counter a block in shared memory, and sizes its
    // clusters and buckets by how many a block holds.
    if capacity == 0 {
        return Err(Error::InvalidArgument(format!(
            "this device gives a block {} bytes of shared memory, too few for one 4-byte counter",
            limits.max_shared_per_block_optin
        )));
    }
    if cluster_size.is_some() && forced.is_some_and(|t| t != HistogramTier::Cluster) {
        return Err(Error::InvalidArgument("--cluster applies to the cluster tier only".into()));
    }
    if let Some(c) = copies
        && (c == 0 || c > MAX_COPIES || !c.is_power_of_two())
    {
        return Err(Error::InvalidArgument(format!("{c} copies: use a power of two from 1 to {MAX_COPIES}")));
    }
    let tier = match (forced, cluster_size) {
        (Some(tier), _) => tier,
        (None, Some(_)) => HistogramTier::Cluster,
        (None, None) if bins <= capacity => HistogramTier::Shared,
        (None, None) if bins as u64 <= packed_auto_capacity(limits) => HistogramTier::Packed,
        (None, None) if bins as u64 <= limits.bucketed_capacity() => HistogramTier::Sorted,
        (None, None) => HistogramTier::Global,
    };
    if bucket_shift.is_some() && !matches!(tier, HistogramTier::Bucketed | HistogramTier::Sorted) {
        return Err(Error::InvalidArgument(format!(
            "--bucket-bits applies to the bucketed and sorted tiers only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    if bins_pass_waves.is_some() && tier != HistogramTier::Sorted {
        return Err(Error::InvalidArgument(format!(
            "--waves applies to the sorted tier only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    if counter_bits.is_some() && tier != HistogramTier::Packed {
        return Err(Error::InvalidArgument(format!(
            "--counter-bits applies to the packed tier only, and {bins} bins take the {} tier",
            tier.name()
        )));
    }
    if copies.is_some() && tier != HistogramTier::Shared {
        return Err(Error::InvalidArgument(format!(
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
        packing: 0,
        carry_plane: false,
        passes: 1,
    };
    let element = element.unwrap_or(InputType::I32);
    match tier {
        HistogramTier::Shared => {
            if bins > capacity {
                return Err(Error::InvalidArgument(format!(
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
                return Err(Error::InvalidArgument(format!(
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
                return Err(Error::InvalidArgument("this device has no thread-block clusters (sm_90 or later)".into()));
            }
            let smallest = bins.div_ceil(capacity) as u32;
            let size = match cluster_size {
                Some(c) if c == 0 || c > limits.max_cluster_size => {
                    return Err(Error::InvalidArgument(format!(
                        "cluster size {c}: this device allows 1 to {}",
                        limits.max_cluster_size
                    )));
                }
                Some(c) if c < smallest => {
                    return Err(Error::InvalidArgument(format!(
                        "{bins} bins do not fit in a cluster of {c} blocks ({} bins each): it needs at least {smallest}",
                        capacity
                    )));
                }
                Some(c) => c,
                None if smallest > limits.max_cluster_size => {
                    return Err(Error::InvalidArgument(format!(
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
                return Err(Error::InvalidArgument(format!(
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
        HistogramTier::Packed => {
            let plane_capacity = packed::carry_plane_capacity(capacity as u64);
            let table_capacity = |packing: u32| packed::carry_table_capacity(capacity as u64, packing).max(1);
            let (six, four) = (packed::SIX_BIT_PACKING, packed::FOUR_BIT_PACKING);
            // 16-bit digits where they fit one block, else 8-bit digits with their carry plane,
            // else 6-bit digits with their carry table (carries kept in shared memory), else
            // 4-bit ones with theirs in as few passes as hold the bins.
            let bits = match counter_bits {
                Some(b @ (16 | 8 | 6 | 4)) => b,
                Some(b) => {
                    return Err(Error::InvalidArgument(format!(
                        "{b}-bit counters: the packed tier has 16-, 8-, 6- and 4-bit counters"
                    )));
                }
                None if packed::fits(bins as u64, 1, capacity as u64) => 16,
                None if bins as u64 <= plane_capacity => 8,
                None if bins as u64 <= table_capacity(six) => 6,
                None if table_capacity(four) >= table_capacity(six) => 4,
                None => 6,
            };
            let one_block = |fits: bool, what: &str| {
                if fits {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument(format!(
                        "{bins} bins do not fit one block's {} in {what}: use 6- or 4-bit counters",
                        format_bytes(limits.max_shared_per_block_optin as u64)
                    )))
                }
            };
            let (packing, carry_plane, passes) = match bits {
                16 => {
                    one_block(packed::fits(bins as u64, 1, capacity as u64), "16-bit counters")?;
                    (1, false, 1)
                }
                8 => {
                    one_block(bins as u64 <= plane_capacity, "8-bit counters with their carry plane")?;
                    (2, true, 1)
                }
                6 => (six, false, (bins as u64).div_ceil(table_capacity(six)) as u32),
                _ => (four, false, (bins as u64).div_ceil(table_capacity(four)) as u32),
            };
            if passes > PACKED_MAX_PASSES {
                return Err(Error::InvalidArgument(format!(
                    "{bins} bins exceed the packed tier's {} in {bits}-bit counters ({PACKED_MAX_PASSES} passes of {} bins, one block's {} with their carry table): use the sorted, bucketed or global tier",
                    PACKED_MAX_PASSES as u64 * table_capacity(packing),
                    table_capacity(packing),
                    format_bytes(limits.max_shared_per_block_optin as u64)
                )));
            }
            let window = bins32.div_ceil(passes);
            let table = packed::has_carry_table(packing);
            let most = if table { packed::carry_table_threads(packing) } else { PACKED_THREADS };
            let threads = threads_per_block.unwrap_or(most);
            let carry_bytes = if carry_plane {
                packed::carry_plane_bytes(window)
            } else if table {
                packed::carry_table_bytes(packing)
            } else {
                0
            };
            let shared = (packed::counter_bytes(window, packing, 1) + carry_bytes) as u32;
            Ok(HistogramPlan {
                blocks: persistent(shared, threads, 1),
                threads_per_block: threads,
                shared_bytes: shared,
                bins_per_block: window,
                packing,
                carry_plane,
                passes,
                // With the carry plane: a constant input's 32 lanes on one word cost 2.8x, and
                // each of their carries a trip to global memory. 16-bit digits: off, as merging
                // cost uniform values more than it saved a constant input (H200, 65,536 bins:
                // 0.146 ms uniform and 0.144 constant merged, 0.119 uniform unmerged).
                aggregate: aggregate.unwrap_or(packing != 1),
                ..base
            })
        }
        HistogramTier::Global => Ok(HistogramPlan { blocks: persistent(0, threads, 1), ..base }),
    }
}

/// The most bins the packed tier holds on a device with `limits`: [`PACKED_MAX_PASSES`] passes
/// over the values, each of as many bins as one block holds in 6- or 4-bit counters with their
/// carry table, whichever holds more.
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, packed_capacity};
/// assert_eq!(packed_capacity(&HistogramLimits::H100), 2 * 389_120);
/// ```
pub fn packed_capacity(limits: &HistogramLimits) -> u64 {
    PACKED_MAX_PASSES as u64 * table_pass_capacity(limits)
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
            return Err(Error::InvalidArgument(format!(
                "buckets of 2^{shift} bins: use 1 to {widest} bits (2^{widest} counters fill one block's shared memory)"
            )));
        }
        let buckets = bucketed::bucket_count(bins, shift);
        if buckets > bucketed::MAX_BUCKETS {
            return Err(Error::InvalidArgument(format!(
                "{bins} bins in buckets of 2^{shift} make {buckets} buckets; the {} tier takes at most {}: use at least {} bits",
                tier.name(),
                bucketed::MAX_BUCKETS,
                bucketed::bucket_shift(bins, 1).map_or(widest, |s| s)
            )));
        }
        return Ok(shift);
    }
    bucketed::bucket_shift(bins, min_shift.min(widest)).filter(|&s| s <= widest).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{bins} bins exceed the {} tier's {} ({} buckets of {} bins in one block's shared memory): use the global tier",
            tier.name(),
            limits.bucketed_capacity(),
            bucketed::MAX_BUCKETS,
            1u64 << widest
        ))
    })
}

/// Fails unless `bins` is a bin count the kernels address: 1 to `i32::MAX`.
///
/// ```
/// use hopper_kernels::{Error, histogram::check_bins};
/// assert!(check_bins(1).is_ok() && check_bins(i32::MAX as usize).is_ok());
/// assert!(matches!(check_bins(0), Err(Error::ZeroDimension { name: "bins" })));
/// assert!(check_bins(i32::MAX as usize + 1).is_err()); // no 32-bit value reaches the bin
/// ```
pub fn check_bins(bins: usize) -> Result<()> {
    if bins == 0 {
        return Err(Error::ZeroDimension { name: "bins" });
    }
    if bins > i32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "{bins} bins: values are at most 32 bits, so at most {} bins can be hit",
            i32::MAX
        )));
    }
    Ok(())
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
    fn a_device_whose_blocks_hold_no_counter_is_refused_with_the_reason() {
        for shared in [0, 3] {
            let limits = HistogramLimits { max_shared_per_block_optin: shared, ..H100 };
            for tier in std::iter::once(None).chain(HistogramTier::ALL.map(Some)) {
                let err = plan_for(&limits, 1, PlanRequest { tier, ..PlanRequest::default() }).unwrap_err();
                assert_eq!(
                    err.to_string(),
                    format!(
                        "invalid argument: this device gives a block {shared} bytes of shared memory, too few for one \
                         4-byte counter"
                    ),
                    "{tier:?}"
                );
            }
        }
        // One counter's room passes this check (whatever a tier then makes of it).
        let four = HistogramLimits { max_shared_per_block_optin: 4, ..H100 };
        if let Err(e) = plan_for(&four, 1, PlanRequest::default()) {
            assert!(!e.to_string().contains("too few for one"), "{e}");
        }
    }

    #[test]
    fn one_block_capacity_is_the_last_bin_count_of_the_shared_tier() {
        let capacity = H100.block_capacity() as usize;
        assert_eq!(capacity, 58_112);
        let at = plan_for(&H100, capacity, PlanRequest::default()).unwrap();
        assert_eq!((at.tier, at.shared_bytes, at.bins_per_block), (Shared, 232_448, 58_112));
        let above = plan_for(&H100, capacity + 1, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.packing, above.bins_per_block), (Packed, 1, 58_113));
        assert_eq!((above.threads_per_block, above.shared_bytes), (PACKED_THREADS, 29_057 * 4));
        let cluster = plan_for(&H100, capacity + 1, PlanRequest { tier: Some(Cluster), ..PlanRequest::default() });
        assert_eq!(cluster.unwrap().cluster_size, 2);
    }

    #[test]
    fn the_planner_packs_counters_up_to_its_carry_plane_capacity_then_sorts_what_buckets_hold() {
        let sorted = |bins| plan_for(&H100, bins, PlanRequest::default()).unwrap();
        for (bins, packing, plane) in [
            (58_113, 1, false),
            (65_536, 1, false),
            (116_224, 1, false),
            (116_225, 2, true),
            (131_072, 2, true),
            (154_964, 2, true),
        ] {
            let p = sorted(bins);
            // Merged warp adds with the carry plane only.
            assert_eq!(
                (p.tier, p.packing, p.carry_plane, p.blocks, p.aggregate),
                (Packed, packing, plane, 132, plane),
                "{bins}"
            );
            let plane_bytes = if plane { packed::carry_plane_bytes(bins as u32) } else { 0 };
            assert_eq!(p.shared_bytes as u64, packed::counter_bytes(bins as u32, packing, 1) + plane_bytes, "{bins}");
            assert!(p.shared_bytes as u64 <= H100.max_shared_per_block_optin as u64, "{bins}");
            // The plan names the kernels that run: 16-bit counters have their own.
            let kernels =
                if plane { "and a 4-bit carry plane in histogram_packed_*" } else { "in histogram_packed16_*" };
            assert!(p.to_string().contains(&format!("{}-bit counters {kernels}", 16 / packing)), "{p}");
        }
        // Past the plane's capacity: 6-bit digits with their carry table in one pass up to
        // 280,320 bins, then 4-bit ones with theirs, in one pass up to 389,120 bins, then two,
        // each over half the bins (rounded up); the planner's own choice too, with merged warp
        // adds.
        let packed_tier = PlanRequest { tier: Some(Packed), ..PlanRequest::default() };
        let (six, four) = (packed::SIX_BIT_PACKING, packed::FOUR_BIT_PACKING);
        for (bins, packing, passes, window) in [
            (154_965, six, 1, 154_965),
            (262_144, six, 1, 262_144),
            (280_320, six, 1, 280_320),
            (280_321, four, 1, 280_321),
            (389_120, four, 1, 389_120),
            (389_121, four, 2, 194_561),
            (778_240, four, 2, 389_120),
        ] {
            let p = plan_for(&H100, bins, packed_tier).unwrap();
            if bins <= 389_120 {
                assert_eq!(sorted(bins), p, "{bins}");
            }
            assert_eq!(
                (p.tier, p.packing, p.carry_plane, p.passes, p.bins_per_block, p.aggregate),
                (Packed, packing, false, passes, window, true)
            );
            let table_bytes = packed::carry_table_bytes(packing);
            assert_eq!(p.shared_bytes as u64, packed::counter_bytes(window, packing, 1) + table_bytes, "{bins}");
            assert!(p.shared_bytes <= H100.max_shared_per_block_optin);
            let (bits, family) = if packing == six { (6, "packed6") } else { (4, "packed4") };
            let named = format!("{bits}-bit counters and a carry table in histogram_{family}_*");
            assert!(p.to_string().contains(&named), "{p}");
            assert_eq!(p.kernel(InputType::U16), format!("histogram_{family}_u16"));
        }
        let forced = PlanRequest { tier: Some(Packed), aggregate: Some(false), ..PlanRequest::default() };
        assert!(!plan_for(&H100, 262_144, forced).unwrap().aggregate);
        let err = plan_for(&H100, 778_241, forced).unwrap_err().to_string();
        assert!(err.contains("exceed the packed tier's 778240 in 4-bit counters (2 passes"), "{err}");
        for bins in [389_121, 778_241, 1 << 20, 256 << 14] {
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
        for (bins, tier) in [(100_000, "packed"), (1 << 20, "sorted"), ((256 << 15) + 1, "global")] {
            let err = plan_for(&H100, bins, two).unwrap_err().to_string();
            assert!(err.contains("shared tier only") && err.contains(&format!("the {tier} tier")), "{err}");
        }
        let with_cluster = PlanRequest { cluster_size: Some(2), ..two };
        assert!(plan_for(&H100, 4096, with_cluster).unwrap_err().to_string().contains("shared tier only"));
        let forced = PlanRequest { tier: Some(Global), ..two };
        assert!(plan_for(&H100, 256, forced).unwrap_err().to_string().contains("shared tier only"));
    }

    #[test]
    fn a_forced_packed_tier_takes_the_narrowest_digits_that_fit_and_refuses_more_bins() {
        let packed = PlanRequest { tier: Some(Packed), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 256, packed).unwrap().packing, 1);
        assert_eq!(plan_for(&H100, 154_964, packed).unwrap().packing, 2);
        assert_eq!(plan_for(&H100, 154_965, packed).unwrap().packing, packed::SIX_BIT_PACKING);
        assert_eq!(plan_for(&H100, 280_321, packed).unwrap().packing, packed::FOUR_BIT_PACKING);
        let err = plan_for(&H100, 778_241, packed).unwrap_err().to_string();
        assert!(err.contains("exceed the packed tier's 778240") && err.contains("use the sorted"), "{err}");
        let threads = plan_for(&H100, 65_536, PlanRequest { threads_per_block: Some(512), ..packed }).unwrap();
        assert_eq!(threads.threads_per_block, 512);
    }

    #[test]
    fn counter_bits_pick_the_packed_digits_and_are_refused_where_they_cannot_hold_the_bins() {
        let bits = |b: u32| PlanRequest { tier: Some(Packed), counter_bits: Some(b), ..PlanRequest::default() };
        let (six, four) = (packed::SIX_BIT_PACKING, packed::FOUR_BIT_PACKING);
        let p = plan_for(&H100, 262_144, bits(4)).unwrap();
        assert_eq!((p.packing, p.passes, p.bins_per_block), (four, 1, 262_144));
        assert_eq!(p.shared_bytes as u64, 131_072 + packed::carry_table_bytes(four));
        assert_eq!(plan_for(&H100, 100_000, bits(6)).unwrap().packing, six);
        assert_eq!((plan_for(&H100, 300_000, bits(6)).unwrap().passes), 2);
        assert_eq!(plan_for(&H100, 131_072, bits(8)).unwrap().packing, 2);
        assert_eq!(plan_for(&H100, 65_536, bits(16)).unwrap().packing, 1);
        let err = plan_for(&H100, 131_072, bits(16)).unwrap_err().to_string();
        assert!(err.contains("do not fit one block") && err.contains("16-bit"), "{err}");
        let err = plan_for(&H100, 262_144, bits(5)).unwrap_err().to_string();
        assert!(err.contains("5-bit counters"), "{err}");
        let sorted = PlanRequest { tier: Some(Sorted), counter_bits: Some(4), ..PlanRequest::default() };
        assert!(plan_for(&H100, 1 << 20, sorted).unwrap_err().to_string().contains("packed tier only"));
        // Unforced, they apply where the planner takes the packed tier.
        let auto = PlanRequest { counter_bits: Some(4), ..PlanRequest::default() };
        assert_eq!(plan_for(&H100, 200_000, auto).unwrap().packing, four);
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
        assert!(why(100_000).contains("exceed one block's 58112 u32 counters"), "{}", why(100_000));
        assert!(why(131_072).contains("8-bit digits") && why(131_072).contains("carry plane"), "{}", why(131_072));
        let packed_tier = PlanRequest { tier: Some(Packed), ..PlanRequest::default() };
        assert!(why(262_144).contains("6-bit digits") && why(262_144).contains("carry table"), "{}", why(262_144));
        assert!(why(300_000).contains("4-bit digits") && why(300_000).contains("4,096 slots"), "{}", why(300_000));
        let two = plan_for(&H100, 500_000, packed_tier).unwrap().reason(&H100, false);
        assert!(two.contains("2 passes over the values, each counting 250000"), "{two}");
        assert!(why(389_121).contains("fit the sorted tier"), "{}", why(389_121));
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
        assert_eq!((above.tier, above.packing), (Packed, 1));
        let above = plan_for(&SMALL, 2 * 12_288 + 1, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.packing, above.carry_plane), (Packed, 2, true));
        let above = plan_for(&SMALL, 32_768 + 1, PlanRequest::default()).unwrap();
        assert_eq!((above.tier, above.packing, above.passes), (Packed, packed::SIX_BIT_PACKING, 1));
        assert_eq!(above.threads_per_block, packed::CARRY_TABLE_THREADS);
        // Its blocks hold more 6-bit digits with their table than 4-bit ones with theirs and
        // the warps' carry queues: 22,528.
        let four = PlanRequest { tier: Some(Packed), counter_bits: Some(4), ..PlanRequest::default() };
        assert_eq!(plan_for(&SMALL, 22_528, four).unwrap().bins_per_block, 22_528);
        assert_eq!(plan_for(&SMALL, 22_529, four).unwrap().passes, 2);
        assert_eq!(packed_auto_capacity(&SMALL), 2 * 32_768);
        let above = plan_for(&SMALL, 2 * 32_768 + 1, PlanRequest::default()).unwrap();
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
    fn zero_and_unreachable_bin_counts_are_rejected() {
        let err = plan_for(&H100, 0, PlanRequest::default()).unwrap_err();
        assert!(matches!(err, Error::ZeroDimension { name: "bins" }), "{err}");
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
