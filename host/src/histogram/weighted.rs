//! Weighted histograms: planner, launch and CPU references for `kernels::histogram::weighted`.
//!
//! Each value adds its `f32` weight to its bin; the sums are `f64`, accumulated in `f64` from the
//! first addition (see the kernels' documentation for why and for the bound). Two modes:
//! - shared: the bins' `f64` sums fit in one block's shared memory (29,056 bins on an H100 or
//!   H200), in as many private copies as keep the most threads resident;
//! - global: every weight is one `red.global.add.f64` (any bin count; slower).
//!
//! The sorted, bucketed and cluster tiers of the unweighted histogram have no weighted form: the
//! first two keep only each value's bin (16 bits) on their way through the scratch buffers, where
//! a weight would triple the traffic, and clusters add remotely, where an `f64` compare-and-store
//! loop would cross the cluster network on every retry.

use super::device_values::{DeviceValues, check_aligned, check_count, check_output, upload_values};
use super::tuning::{KernelLaunch, LaunchRequest, MAX_COPIES, Occupancy, choose_shape};
use super::{Binning, Element, HistogramLimits, InputType, Values, check_bins};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::{CudaStream, CudaView, CudaViewMut, PushKernelArg};
use kernels::histogram::weighted as kernel;
use std::sync::Arc;

/// Where the weights are summed.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// use hopper_kernels::histogram::weighted::{WeightedMode, plan_weighted_for};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let mode = |bins| {
///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(bins), &LaunchRequest::default())
///         .map(|p| p.mode())
/// };
/// // 29,056 f64 sums fill one block's 227 KiB; one more and every weight goes to global memory.
/// assert_eq!(mode(29_056)?, WeightedMode::Shared);
/// assert_eq!(mode(29_057)?, WeightedMode::Global);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightedMode {
    /// Block-private `f64` sums in shared memory, added into the global sums at the end.
    Shared,
    /// Every weight added into the global sums.
    Global,
}

/// A planned weighted histogram launch, built only by [`plan_weighted_for`] / [`plan_weighted`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// use hopper_kernels::histogram::weighted::plan_weighted_for;
/// use hopper_kernels::gpu::DeviceModel;
/// // Planned for an H200 on any machine: 256 sums in 32 lane-private copies per block.
/// let limits = HistogramLimits::of_model(DeviceModel::H200);
/// let model = model_before_device(limits);
/// let plan = plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &LaunchRequest::default())?;
/// assert_eq!(
///     plan.to_string(),
///     "weighted shared tier (f64 sums), histogram_weighted_i32: 132 blocks x 1024 threads, \
///      64.00 KiB shared per block (32 copies)"
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedPlan {
    launch: KernelLaunch,
    element: InputType,
    binning: Binning,
    mode: WeightedMode,
    aggregate: bool,
    f32_partials: bool,
    blocks_per_sm: u32,
}

impl WeightedPlan {
    /// The kernel launch.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::U8, Binning::integers(256), &LaunchRequest::default())?;
    /// assert_eq!(plan.launch().kernel(), "histogram_weighted_u8");
    /// assert_eq!(plan.launch().config().shared_mem_bytes, plan.launch().shared_bytes());
    /// # Ok(()) }
    /// ```
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// The values' type.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let binning = Binning::range(100, 0.0, 1.0);
    /// let model = model_before_device(limits);
    /// let plan = plan_weighted_for(&limits, &model, InputType::F32, binning, &LaunchRequest::default())?;
    /// assert_eq!(plan.element(), InputType::F32);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// How values map to bins.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType};
    /// use hopper_kernels::histogram::{binning_for, weighted::plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let binning = binning_for(InputType::F32, 10, Some((0.0, 1.0)))?;
    /// let model = model_before_device(limits);
    /// let plan = plan_weighted_for(&limits, &model, InputType::F32, binning, &LaunchRequest::default())?;
    /// assert_eq!((plan.binning().lo, plan.binning().hi, plan.binning().scale), (0.0, 1.0, 10.0));
    /// # Ok(()) }
    /// ```
    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// Bins (and sums).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::U16, Binning::integers(1000), &LaunchRequest::default())?;
    /// assert_eq!(plan.bins(), 1000); // the sums buffer holds 1000 f64
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.binning.nbins
    }

    /// The bins the values can reach ([`reached_bins`]): those the kernel sums.
    fn reached(&self) -> u32 {
        reached_bins(self.element, self.binning.nbins)
    }

    /// Where the weights are summed.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::{WeightedMode, plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// // Sums that fit one block, added straight into global memory because the request says so.
    /// let global = LaunchRequest { global: Some(true), ..LaunchRequest::default() };
    /// let plan = plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &global)?;
    /// assert_eq!(plan.mode(), WeightedMode::Global);
    /// # Ok(()) }
    /// ```
    pub fn mode(&self) -> WeightedMode {
        self.mode
    }

    /// Whether warps whose lanes hold one bin add once.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let aggregate = |bins, request: &LaunchRequest| {
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(bins), request).map(|p| p.aggregate())
    /// };
    /// let open = LaunchRequest::default();
    /// // 32 copies: each lane of a warp adds into its own copy, so there is nothing to merge.
    /// assert!(!aggregate(256, &open)?);
    /// // One copy: lanes can share an address, so warps merge equal bins first.
    /// assert!(aggregate(29_056, &open)?);
    /// // The request decides where it names it.
    /// assert!(aggregate(256, &LaunchRequest { aggregate: Some(true), ..open })?);
    /// # Ok(()) }
    /// ```
    pub fn aggregate(&self) -> bool {
        self.aggregate
    }

    /// Partial sums added into each global sum: one per block and copy in shared mode, none in
    /// global mode; the `p` of [`kernel::error_bound`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &LaunchRequest::default())?;
    /// // 132 blocks of 32 copies each add a partial sum into every global sum.
    /// assert_eq!(plan.partial_sums(), 132 * 32);
    /// let global = LaunchRequest { global: Some(true), ..LaunchRequest::default() };
    /// let plan = plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &global)?;
    /// assert_eq!(plan.partial_sums(), 0);
    /// # Ok(()) }
    /// ```
    pub fn partial_sums(&self) -> u64 {
        match self.mode {
            WeightedMode::Shared => self.launch.blocks() as u64 * self.launch.copies() as u64,
            WeightedMode::Global => 0,
        }
    }

    /// Whether each block sums its weights in `f32` partials before the `f64` sums (the shared
    /// tier's choice where few copies of `f64` sums fit a block; see
    /// [`kernel::error_bound_f32_partials`] for its bound).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let f32_partials = |bins, request: &LaunchRequest| {
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(bins), request).map(|p| p.f32_partials())
    /// };
    /// // 32 copies of 256 f64 sums fit: f64 throughout.
    /// assert!(!f32_partials(256, &open)?);
    /// // 2 copies of 8,192 f64 sums fit: f32 partials (4 copies in the same bytes).
    /// assert!(f32_partials(8192, &open)?);
    /// // The request decides where it names it.
    /// assert!(!f32_partials(8192, &LaunchRequest { f32_partials: Some(false), ..open })?);
    /// # Ok(()) }
    /// ```
    pub fn f32_partials(&self) -> bool {
        self.f32_partials
    }

    /// The most adds one `f32` partial takes for `n` values (the `adds` of
    /// [`kernel::error_bound_f32_partials`]): each thread of the grid takes at most
    /// `ceil((n / 4) / grid threads)` groups of 4 values and one of the last `n % 4`, and
    /// `threads / copies` lanes of a block share a copy. `0` without `f32` partials.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let request = LaunchRequest { f32_partials: Some(true), threads_per_block: Some(1024), copies: Some(4), ..Default::default() };
    /// let plan = plan_weighted_for(&limits, &model_before_device(limits), InputType::I32, Binning::integers(8192), &request)?;
    /// assert_eq!((plan.launch().blocks(), plan.launch().threads()), (132, 1024));
    /// // 2^26 values: 2^24 groups over 135,168 threads, at most 125 groups (500 values) per
    /// // thread, 256 lanes per copy; one more value per lane where n % 4 != 0.
    /// assert_eq!(plan.adds_per_partial(1 << 26), 256 * 500);
    /// assert_eq!(plan.adds_per_partial((1 << 26) + 3), 256 * 501);
    /// assert_eq!(plan.adds_per_partial(0), 0);
    /// # Ok(()) }
    /// ```
    pub fn adds_per_partial(&self, n: u64) -> u64 {
        if !self.f32_partials || n == 0 {
            return 0;
        }
        let grid = self.launch.blocks() as u64 * self.launch.threads() as u64;
        let per_lane = kernel::GROUP * (n / kernel::GROUP).div_ceil(grid) + u64::from(!n.is_multiple_of(kernel::GROUP));
        per_lane * (self.launch.threads() / self.launch.copies()).max(1) as u64
    }

    /// The bound this plan's sums keep for `n` values, for [`WeightedReference::first_difference_by`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::{SumBound, plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan = plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &LaunchRequest::default())?;
    /// assert_eq!(plan.sum_bound(1000), SumBound { partials: 132 * 32, f32_adds: None });
    /// # Ok(()) }
    /// ```
    pub fn sum_bound(&self, n: u64) -> SumBound {
        SumBound { partials: self.partial_sums(), f32_adds: self.f32_partials.then(|| self.adds_per_partial(n)) }
    }

    /// Why this plan, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// use hopper_kernels::histogram::weighted::plan_weighted_for;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(29_057), &LaunchRequest::default())?;
    /// let reason = plan.reason(&limits);
    /// assert!(reason.starts_with("29057 f64 sums: every weight is one red.global.add.f64"), "{reason}");
    /// assert!(reason.contains("at most 29056 bins of sums"), "{reason}");
    /// # Ok(()) }
    /// ```
    pub fn reason(&self, limits: &HistogramLimits) -> String {
        let bins = self.reached();
        let resident = self.blocks_per_sm * self.launch.threads();
        let reach = if bins < self.bins() {
            format!(
                "{} values reach only the first {bins} of the {} bins (the others stay 0), so only those are summed: ",
                self.element.name(),
                self.bins()
            )
        } else {
            String::new()
        };
        reach
            + &match self.mode {
                WeightedMode::Shared if self.f32_partials => format!(
                    "{bins} f32 partial sums x {} copies ({}) per block, added into the f64 sums at the end ({}; the f64 sums fit {} copies of {bins} bins, and at 8,192 bins 2 f64 copies ran at half the copy bandwidth on the H200: a 64-bit compare-and-store loop conflicts in twice the banks of a 32-bit one, and half the bytes per copy doubles the copies); weights of magnitude 2^95 or more, infinities and NaN go to the f64 sums directly; {} blocks of {} threads per SM ({resident} resident threads) is the occupancy query's best shape, then the most copies",
                    self.launch.copies(),
                    format_bytes(self.launch.shared_bytes() as u64),
                    if f64_copies_that_fit(limits, bins) < F64_MIN_COPIES {
                        "fewer than 8 copies of f64 sums fit one block"
                    } else {
                        "as requested"
                    },
                    f64_copies_that_fit(limits, bins),
                    self.blocks_per_sm,
                    self.launch.threads()
                ),
                WeightedMode::Shared => format!(
                    "{bins} f64 sums x {} copies ({}) fit in one block's shared memory (at most {} bins of one copy); {} blocks of {} threads per SM ({resident} resident threads) is the occupancy query's best shape, then the most copies (lanes of a warp add into different copies, so no compare-and-store loop waits on another lane)",
                    self.launch.copies(),
                    format_bytes(self.launch.shared_bytes() as u64),
                    max_shared_bins(limits),
                    self.blocks_per_sm,
                    self.launch.threads()
                ),
                WeightedMode::Global => format!(
                    "{bins} f64 sums: every weight is one red.global.add.f64 ({}; one block's shared memory holds at most {} bins of sums); {} blocks of {} threads per SM from the occupancy query",
                    if bins as u64 <= max_shared_bins(limits) { "as requested" } else { "more than one block holds" },
                    max_shared_bins(limits),
                    self.blocks_per_sm,
                    self.launch.threads()
                ),
            }
    }
}

impl std::fmt::Display for WeightedPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.mode {
            WeightedMode::Shared => "shared",
            WeightedMode::Global => "global",
        };
        let sums = if self.f32_partials { "f32 partials, f64 sums" } else { "f64 sums" };
        write!(f, "weighted {mode} tier ({sums}), {}", self.launch)?;
        if self.aggregate {
            write!(f, ", warp-aggregated adds")?;
        }
        Ok(())
    }
}

/// Below this many copies of `f64` sums per block the shared tier sums in `f32` partials by
/// default.
pub const F64_MIN_COPIES: u32 = 8;

/// Copies (a power of two up to 32) of `bins` `f64` sums that one block's shared memory holds.
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, weighted::f64_copies_that_fit};
/// assert_eq!(f64_copies_that_fit(&HistogramLimits::H100, 256), 32);
/// assert_eq!(f64_copies_that_fit(&HistogramLimits::H100, 8192), 2);
/// assert_eq!(f64_copies_that_fit(&HistogramLimits::H100, 29_057), 0);
/// ```
pub fn f64_copies_that_fit(limits: &HistogramLimits, bins: u32) -> u32 {
    let fit = limits.max_shared_per_block_optin as u64 / kernel::shared_bytes(bins, 1).max(1);
    if fit == 0 { 0 } else { (1u64 << fit.ilog2()).min(MAX_COPIES as u64) as u32 }
}

/// How far a plan's sums may be from the exact ones: what [`kernel::error_bound`] (`f64` sums) or
/// [`kernel::error_bound_f32_partials`] (`f32` partials) needs beyond each bin's own count and
/// absolute sum.
///
/// ```
/// use hopper_kernels::histogram::weighted::SumBound;
/// let f64_sums = SumBound { partials: 10, f32_adds: None };
/// assert_eq!(f64_sums.of(3, 2e16), kernels::histogram::weighted::error_bound(3, 10, 2e16));
/// // An f32 partial never takes more adds than the bin has values.
/// let f32_partials = SumBound { partials: 10, f32_adds: Some(1 << 20) };
/// assert_eq!(f32_partials.of(3, 1.0), kernels::histogram::weighted::error_bound_f32_partials(3, 10, 3, 1.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumBound {
    /// Partial sums added into each global sum.
    pub partials: u64,
    /// With `f32` partials, the most adds one of them takes.
    pub f32_adds: Option<u64>,
}

impl SumBound {
    /// The bound for a bin of `values` values whose weights' absolute values sum to `abs_sum`.
    ///
    /// ```
    /// use hopper_kernels::histogram::weighted::SumBound;
    /// assert_eq!(SumBound { partials: 0, f32_adds: Some(7) }.of(0, 0.0), 0.0);
    /// ```
    pub fn of(&self, values: u64, abs_sum: f64) -> f64 {
        match self.f32_adds {
            None => kernel::error_bound(values, self.partials, abs_sum),
            Some(adds) => kernel::error_bound_f32_partials(values, self.partials, adds.min(values), abs_sum),
        }
    }
}

/// Whether a plan for `bins` bins takes the `f32`-partials kernel: never in the global tier (as
/// the request or the bin count decides it); else as the request says, or where fewer than
/// [`F64_MIN_COPIES`] copies of `f64` sums fit one block, which leaves a warp's lanes on few
/// copies, where 64-bit compare-and-store loops conflict.
///
/// ```
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::weighted::uses_f32_partials;
/// let (limits, open) = (HistogramLimits::H100, LaunchRequest::default());
/// assert!(!uses_f32_partials(&limits, 256, &open));
/// assert!(uses_f32_partials(&limits, 8192, &open));
/// assert!(!uses_f32_partials(&limits, 100_000, &open)); // the global tier
/// assert!(!uses_f32_partials(&limits, 8192, &LaunchRequest { global: Some(true), ..open }));
/// assert!(uses_f32_partials(&limits, 256, &LaunchRequest { f32_partials: Some(true), ..open }));
/// ```
pub fn uses_f32_partials(limits: &HistogramLimits, bins: u32, request: &LaunchRequest) -> bool {
    let global = request.global.unwrap_or(bins as u64 > max_shared_bins(limits));
    !global && request.f32_partials.unwrap_or(f64_copies_that_fit(limits, bins) < F64_MIN_COPIES)
}

/// The kernel of `element` values, with `f32` partials or `f64` sums.
fn kernel_for(element: InputType, f32_partials: bool) -> &'static str {
    let i = type_index(element);
    if f32_partials { kernel::PARTIALS_KERNELS[i] } else { kernel::KERNELS[i] }
}

/// The bins that values of `element` can reach among `bins` integer bins: a `u8` value `v` counts
/// in bin `v` (clamped into the last bin), so bytes reach at most the first 256 bins, `u16` values
/// the first 65,536; `i32` and `f32` values reach them all. The weighted kernels sum only these:
/// 4,096 bins of bytes plan as 256, in 32 lane-private copies of `f64` sums instead of 8 copies of
/// `f32` partials (H200, 2^26 bytes drawn in [0, 4096) and clamped, so 94% of them 255: 0.658 ms
/// against 1.27; uniform bytes in 256 bins take 0.096).
///
/// ```
/// use hopper_kernels::histogram::{InputType, weighted::reached_bins};
/// assert_eq!(reached_bins(InputType::U8, 4096), 256);
/// assert_eq!(reached_bins(InputType::U8, 100), 100);
/// assert_eq!(reached_bins(InputType::U16, 100_000), 65_536);
/// assert_eq!(reached_bins(InputType::I32, 100_000), 100_000);
/// assert_eq!(reached_bins(InputType::F32, 4096), 4096);
/// ```
pub fn reached_bins(element: InputType, bins: u32) -> u32 {
    match element {
        InputType::U8 => bins.min(256),
        InputType::U16 => bins.min(65_536),
        InputType::I32 | InputType::F32 => bins,
    }
}

/// Bins of `f64` sums one block's shared memory holds (one copy).
///
/// ```
/// use hopper_kernels::histogram::{HistogramLimits, weighted::max_shared_bins};
/// // 227 KiB of 8-byte sums.
/// assert_eq!(max_shared_bins(&HistogramLimits::H100), 29_056);
/// ```
pub fn max_shared_bins(limits: &HistogramLimits) -> u64 {
    limits.max_shared_per_block_optin as u64 / 8
}

/// The index of `t` in [`InputType::ALL`], the order of every kernel table.
pub(crate) fn type_index(t: InputType) -> usize {
    InputType::ALL.iter().position(|&x| x == t).expect("every type is in ALL")
}

/// Plans a weighted histogram of `element` values by `binning` on a device with `limits` whose
/// kernel residency `occupancy` reports: the shared mode when the sums fit one block, else the
/// global mode; `request` can force either (`global`), and fix threads, copies (shared mode) and
/// warp aggregation (default: on wherever lanes can share an address, i.e. below 32 copies).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// use hopper_kernels::histogram::weighted::{WeightedMode, plan_weighted_for};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// let plan = |bins, request: &LaunchRequest| {
///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(bins), request)
/// };
/// let shared = plan(256, &open)?;
/// assert_eq!((shared.mode(), shared.launch().copies(), shared.aggregate()), (WeightedMode::Shared, 32, false));
/// let global = plan(100_000, &open)?;
/// assert_eq!((global.mode(), global.launch().shared_bytes()), (WeightedMode::Global, 0));
/// // What cannot be done is refused, saying why.
/// let forced = LaunchRequest { global: Some(false), ..open };
/// assert!(plan(100_000, &forced).unwrap_err().to_string().contains("use the global tier"));
/// let packed = LaunchRequest { packing: Some(1), ..open };
/// assert!(plan(256, &packed).unwrap_err().to_string().contains("--packing applies to counts"));
/// assert!(plan(0, &open).is_err());
/// # Ok(()) }
/// ```
pub fn plan_weighted_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    element: InputType,
    binning: Binning,
    request: &LaunchRequest,
) -> Result<WeightedPlan> {
    check_bins(binning.nbins as usize)?;
    if request.packing.is_some() {
        return Err(Error::InvalidArgument("--packing applies to counts, not to weighted sums".into()));
    }
    let bins = reached_bins(element, binning.nbins);
    let fits = bins as u64 <= max_shared_bins(limits);
    let global = request.global.unwrap_or(!fits);
    if !global && !fits {
        return Err(Error::InvalidArgument(format!(
            "{bins} bins of f64 sums need {} of shared memory per block, but a block of this device gets at most {} ({} bins): use the global tier (every weight added into global memory)",
            format_bytes(8 * bins as u64),
            format_bytes(limits.max_shared_per_block_optin as u64),
            max_shared_bins(limits)
        )));
    }
    if global && request.copies.is_some_and(|c| c != 1) {
        return Err(Error::InvalidArgument("--copies applies to the shared tier's block-private sums only".into()));
    }
    if global && request.f32_partials == Some(true) {
        return Err(Error::InvalidArgument(
            "--f32-partials applies to the shared tier's block-private sums only".into(),
        ));
    }
    let what = format!("a weighted histogram of {bins} bins");
    let f32_partials = uses_f32_partials(limits, bins, request);
    let shape = if global {
        choose_shape(occupancy, limits, &|_| 0, 1, request, &what)?
    } else if f32_partials {
        choose_shape(occupancy, limits, &|c| kernel::f32_partial_bytes(bins, c), MAX_COPIES, request, &what)?
    } else {
        choose_shape(occupancy, limits, &|c| kernel::shared_bytes(bins, c), MAX_COPIES, request, &what)?
    };
    Ok(WeightedPlan {
        launch: KernelLaunch::new(kernel_for(element, f32_partials), shape, limits.sm_count),
        element,
        binning,
        mode: if global { WeightedMode::Global } else { WeightedMode::Shared },
        aggregate: request.aggregate.unwrap_or(global || shape.copies < MAX_COPIES),
        f32_partials,
        blocks_per_sm: shape.blocks_per_sm,
    })
}

/// [`plan_weighted_for`] on the opened device, with its occupancy query for the kernel.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{HistogramLimits, InputType, binning_for, weighted::plan_weighted};
/// let gpu = Gpu::open(0)?;
/// let binning = binning_for(InputType::F32, 4096, Some((-1.0, 1.0)))?;
/// let plan = plan_weighted(&gpu, InputType::F32, binning, &LaunchRequest::default())?;
/// println!("{plan}: {}", plan.reason(&HistogramLimits::of(&gpu)?));
/// # Ok(()) }
/// ```
pub fn plan_weighted(gpu: &Gpu, element: InputType, binning: Binning, request: &LaunchRequest) -> Result<WeightedPlan> {
    let limits = HistogramLimits::of(gpu)?;
    let kernel = kernel_for(element, uses_f32_partials(&limits, reached_bins(element, binning.nbins), request));
    let occupancy = super::tuning::DriverOccupancy::new(gpu, kernel)?;
    plan_weighted_for(&limits, &occupancy, element, binning, request)
}

/// Enqueues the planned kernel on `stream`: adds each of the `values`' weights (`weights[i]` for
/// value `i`; as many weights as values) into `sums` (`bins` `f64`), without zeroing them first,
/// so that launches accumulate. Both inputs must start 16-byte aligned; nothing is launched for no
/// values.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::device_values::DeviceValues;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::weighted::{launch_weighted, plan_weighted};
/// use hopper_kernels::histogram::{Binning, InputType};
/// let gpu = Gpu::open(0)?;
/// let plan = plan_weighted(&gpu, InputType::I32, Binning::integers(4), &LaunchRequest::default())?;
/// let values = gpu.upload(&[0i32, 1, 1, 9])?;
/// let weights = gpu.upload(&[0.5f32, 1.0, 2.0, -1.0])?;
/// let mut sums = gpu.zeros::<f64>(4)?;
/// let input = DeviceValues::i32(&values.as_view());
/// launch_weighted(&gpu, &plan, gpu.stream(), &input, &weights.as_view(), &mut sums.as_view_mut())?;
/// // Launches add into the sums: a second one doubles them.
/// launch_weighted(&gpu, &plan, gpu.stream(), &input, &weights.as_view(), &mut sums.as_view_mut())?;
/// assert_eq!(gpu.download(&sums)?, [1.0, 6.0, 0.0, -2.0]);
/// // One weight per value.
/// let short = weights.slice(0..3);
/// assert!(launch_weighted(&gpu, &plan, gpu.stream(), &input, &short, &mut sums.as_view_mut()).is_err());
/// # Ok(()) }
/// ```
pub fn launch_weighted(
    gpu: &Gpu,
    plan: &WeightedPlan,
    stream: &Arc<CudaStream>,
    values: &DeviceValues<'_>,
    weights: &CudaView<'_, f32>,
    sums: &mut CudaViewMut<'_, f64>,
) -> Result<()> {
    if values.element() != plan.element {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} values, the buffer holds {}",
            plan.element.name(),
            values.element().name()
        )));
    }
    let n = values.len();
    if weights.len() as u64 != n {
        return Err(Error::InvalidArgument(format!(
            "{n} values and {} weights: give one weight per value",
            weights.len()
        )));
    }
    check_output(sums.len(), plan.bins() as u64, "weighted sums")?;
    check_count(n)?;
    if n == 0 {
        return Ok(());
    }
    check_aligned(values.bytes(), stream, "the values")?;
    check_aligned(weights, stream, "the weights")?;
    let func = plan.launch.prepared(gpu)?;
    // The kernel sums the bins the values reach, the first of the buffer's.
    let Binning { lo, hi, scale, .. } = plan.binning;
    let nbins = plan.reached();
    let (copies, global, aggregate) =
        (plan.launch.copies(), (plan.mode == WeightedMode::Global) as u32, plan.aggregate as u32);
    let mut launch = stream.launch_builder(&func);
    launch.arg(values.bytes()).arg(weights).arg(&n).arg(sums).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
    launch.arg(&copies).arg(&global).arg(&aggregate);
    // SAFETY: kernel contract (kernels::histogram::weighted): n values and n weights, both 16-byte
    // aligned (checked), n <= u32::MAX, sums holds nbins f64 (the plan's bins, checked, which are
    // at least the reached nbins), copies is a power of two up to 32
    // (the plan) and the launch provides nbins * copies * 8 bytes of shared memory in shared mode
    // (nbins * copies * 4 for the f32-partials kernel, which the plan takes only in shared mode).
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// The weighted histogram of `values` by `binning` on the GPU: `weights[i]` summed per bin in
/// `f64` (see [`kernel`] for the error bound), on the GPU's stream.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Values, binning_for, weighted::weighted_histogram};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let binning = binning_for(hopper_kernels::histogram::InputType::U8, 4, None)?;
/// let sums = weighted_histogram(&gpu, Values::U8(&[0, 1, 1, 9]), &[0.5, 1.0, 2.0, -1.0], binning)?;
/// assert_eq!(sums, [0.5, 3.0, 0.0, -1.0]);
/// # Ok(()) }
/// ```
pub fn weighted_histogram(gpu: &Gpu, values: Values<'_>, weights: &[f32], binning: Binning) -> Result<Vec<f64>> {
    let n = values.len();
    if weights.len() != n {
        return Err(Error::InvalidArgument(format!(
            "{n} values and {} weights: give one weight per value",
            weights.len()
        )));
    }
    let plan = plan_weighted(gpu, values.element(), binning, &LaunchRequest::default())?;
    let bins = binning.nbins as usize;
    let input = upload_values(gpu, values, 4 * n as u64 + 8 * bins as u64, "a weighted histogram")?;
    let w = if weights.is_empty() { gpu.zeros::<f32>(4)? } else { gpu.upload(weights)? };
    let mut sums = gpu.zeros::<f64>(bins)?;
    let values = DeviceValues::from_bytes(input.as_view(), plan.element, n as u64)?;
    launch_weighted(gpu, &plan, gpu.stream(), &values, &w.slice(0..n), &mut sums.as_view_mut())?;
    gpu.synchronize()?;
    gpu.download(&sums)
}

/// Calls `f(i, bin)` for every value in order, with its bin by `binning` (`None` where it is not
/// counted).
pub(crate) fn for_each_bin(values: Values<'_>, binning: &Binning, mut f: impl FnMut(usize, Option<u32>)) {
    fn each<T: Element>(values: &[T], binning: &Binning, f: &mut impl FnMut(usize, Option<u32>)) {
        for (i, v) in values.iter().enumerate() {
            f(i, v.bin(binning));
        }
    }
    match values {
        Values::U8(v) => each(v, binning, &mut f),
        Values::U16(v) => each(v, binning, &mut f),
        Values::I32(v) => each(v, binning, &mut f),
        Values::F32(v) => each(v, binning, &mut f),
    }
}

/// The weighted histogram on the CPU, `numpy.histogram(weights=)`'s sums computed to about twice
/// `f64`'s precision (each bin's sum in double-double arithmetic: off by at most about `m *
/// 2^-106` of the bin's sum of absolute weights for `m` values, far below the GPU's bound) and
/// rounded to `f64`; with it, the sum of absolute weights and the count of each bin, for
/// [`kernel::error_bound`].
///
/// ```
/// use hopper_kernels::histogram::{Binning, Values, weighted::weighted_histogram_cpu};
/// // Integers clamp into the edge bins: 9 sums into bin 3.
/// let r = weighted_histogram_cpu(Values::U8(&[0, 1, 1, 9]), &[0.5, 1.0, 2.0, -1.0], &Binning::integers(4));
/// assert_eq!(r.sums, [0.5, 3.0, 0.0, -1.0]);
/// assert_eq!(r.abs_sums, [0.5, 3.0, 0.0, 1.0]);
/// assert_eq!(r.counts, [1, 2, 0, 1]);
/// // f32 values outside the range, and NaN, add nothing.
/// let r = weighted_histogram_cpu(Values::F32(&[0.25, 2.0, f32::NAN]), &[1.0, 1.0, 1.0], &Binning::range(2, 0.0, 1.0));
/// assert_eq!(r.sums, [1.0, 0.0]);
/// ```
pub fn weighted_histogram_cpu(values: Values<'_>, weights: &[f32], binning: &Binning) -> WeightedReference {
    let mut bins = vec![None; values.len()];
    for_each_bin(values, binning, |i, bin| bins[i] = bin);
    WeightedReference::from_bins(binning.nbins as usize, bins.into_iter().zip(weights.iter().copied()))
}

/// What [`weighted_histogram_cpu`] computes per bin.
///
/// ```
/// use hopper_kernels::histogram::{Binning, Values, weighted::weighted_histogram_cpu};
/// let r = weighted_histogram_cpu(Values::I32(&[0, 0, 1]), &[2.0, -3.0, 0.5], &Binning::integers(2));
/// assert_eq!((r.sums[0], r.abs_sums[0], r.counts[0]), (-1.0, 5.0, 2));
/// // The GPU's sums are checked against it within the bound of their partial sums.
/// assert_eq!(r.first_difference(&[-1.0, 0.5], 4224), None);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedReference {
    /// The sums of the weights, to `f64`'s precision.
    pub sums: Vec<f64>,
    /// The sums of the weights' absolute values.
    pub abs_sums: Vec<f64>,
    /// The values counted.
    pub counts: Vec<u64>,
}

impl WeightedReference {
    /// The exact sums of `bins` bins from (bin, weight) pairs (`None`: not counted), each bin's
    /// sum in double-double arithmetic (Knuth's TwoSum), rounded to `f64` at the end.
    ///
    /// ```
    /// use hopper_kernels::histogram::weighted::WeightedReference;
    /// // 1e16 + 1 - 1e16 in f64 gives 0 (1 is below half an ulp of 1e16); the reference keeps the 1.
    /// let r = WeightedReference::from_bins(2, [(Some(0), 1e16), (Some(0), 1.0), (None, 7.0), (Some(0), -1e16)]);
    /// assert_eq!(1e16f64 + 1.0 - 1e16, 0.0);
    /// assert_eq!(r.sums, [1.0, 0.0]);
    /// assert_eq!(r.counts, [3, 0]);
    /// // Infinite weights make infinite sums, as numpy's; inf and -inf in one bin make NaN.
    /// let inf = f32::INFINITY;
    /// let items = [(Some(0), inf), (Some(0), 1.0), (Some(1), -inf), (Some(2), inf), (Some(2), -inf)];
    /// let r = WeightedReference::from_bins(3, items);
    /// assert_eq!((r.sums[0], r.sums[1]), (f64::INFINITY, f64::NEG_INFINITY));
    /// assert!(r.sums[2].is_nan());
    /// ```
    pub fn from_bins(bins: usize, items: impl IntoIterator<Item = (Option<u32>, f32)>) -> Self {
        let mut r = WeightedReference { sums: vec![0.0; bins], abs_sums: vec![0.0; bins], counts: vec![0; bins] };
        let mut low = vec![0.0f64; bins];
        for (bin, w) in items {
            if let Some(b) = bin {
                let (b, w) = (b as usize, w as f64);
                // hi + lo is exactly the sum so far.
                let s = r.sums[b] + w;
                let v = s - r.sums[b];
                low[b] += (r.sums[b] - (s - v)) + (w - v);
                r.sums[b] = s;
                r.abs_sums[b] += w.abs();
                r.counts[b] += 1;
            }
        }
        for (s, l) in r.sums.iter_mut().zip(low) {
            *s += if s.is_finite() { l } else { 0.0 };
        }
        r
    }

    /// The first bin whose GPU sum `got` differs from the reference by more than
    /// [`kernel::error_bound`] with `partials` partial sums, in words; `None` when all are within.
    ///
    /// ```
    /// use hopper_kernels::histogram::weighted::WeightedReference;
    /// let r = WeightedReference::from_bins(1, [(Some(0), 1e16), (Some(0), 1.0), (Some(0), -1e16)]);
    /// // The bound: 1.01 * (3 values + 10 partial sums) * 2^-53 * 2e16, about 29.
    /// assert_eq!(r.first_difference(&[1.0 + 16.0], 10), None);
    /// let d = r.first_difference(&[1.0 + 64.0], 10).unwrap();
    /// assert!(d.starts_with("bin 0 sums 6.5e1 instead of 1e0: off by 6.4e1"), "{d}");
    /// assert_eq!(r.first_difference(&[], 10).unwrap(), "0 sums came back, 1 expected");
    /// // An infinite sum is matched only by the same infinity: the bound (infinite) allows no other.
    /// let inf = WeightedReference::from_bins(1, [(Some(0), f32::INFINITY), (Some(0), 2.0)]);
    /// assert_eq!(inf.first_difference(&[f64::INFINITY], 10), None);
    /// assert!(inf.first_difference(&[1e300], 10).is_some());
    /// ```
    pub fn first_difference(&self, got: &[f64], partials: u64) -> Option<String> {
        self.first_difference_by(got, &SumBound { partials, f32_adds: None })
    }

    /// [`first_difference`](Self::first_difference) under a plan's [`SumBound`]
    /// ([`WeightedPlan::sum_bound`]), `f32` partials included.
    ///
    /// ```
    /// use hopper_kernels::histogram::weighted::{SumBound, WeightedReference};
    /// let r = WeightedReference::from_bins(1, (0..1000).map(|_| (Some(0), 0.1f32)));
    /// // 1000 f32 adds of 0.1: off by up to about 1000 * 2^-24 * 100 = 6e-3.
    /// let f32_sum = (0..1000).fold(0.0f32, |s, _| s + 0.1) as f64;
    /// assert!((f32_sum - r.sums[0]).abs() > 1e-6);
    /// assert_eq!(r.first_difference_by(&[f32_sum], &SumBound { partials: 1, f32_adds: Some(1000) }), None);
    /// assert!(r.first_difference_by(&[f32_sum], &SumBound { partials: 1, f32_adds: None }).is_some());
    /// ```
    pub fn first_difference_by(&self, got: &[f64], bound: &SumBound) -> Option<String> {
        if got.len() != self.sums.len() {
            return Some(format!("{} sums came back, {} expected", got.len(), self.sums.len()));
        }
        (0..got.len()).find_map(|b| {
            let bound = bound.of(self.counts[b], self.abs_sums[b]);
            let (g, w) = (got[b], self.sums[b]);
            let ok = g == w || (g.is_nan() && w.is_nan()) || (w.is_finite() && (g - w).abs() <= bound);
            (!ok).then(|| {
                format!("bin {b} sums {g:e} instead of {w:e}: off by {:e}, the bound is {bound:e}", (g - w).abs())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::tuning::ModelOccupancy;

    const H100: HistogramLimits = HistogramLimits::H100;

    fn plan(bins: u32, request: LaunchRequest) -> Result<WeightedPlan> {
        let occupancy = ModelOccupancy { limits: H100, registers: 72 };
        plan_weighted_for(&H100, &occupancy, InputType::I32, Binning::integers(bins), &request)
    }

    #[test]
    fn sums_that_fit_one_block_take_the_shared_tier_in_lane_private_copies() {
        let p = plan(256, LaunchRequest::default()).unwrap();
        // 72 registers: 768 threads per SM in any block size but 1024; 32 copies of 2 KiB fit.
        assert_eq!((p.mode(), p.launch().copies(), p.aggregate()), (WeightedMode::Shared, 32, false));
        assert_eq!(p.launch().threads() * p.launch().blocks() / 132, 768);
        assert_eq!(p.partial_sums(), p.launch().blocks() as u64 * 32);
        assert!(!p.f32_partials() && p.to_string().contains("(f64 sums)"), "{p}");
        let f64_sums = LaunchRequest { f32_partials: Some(false), ..Default::default() };
        let big = plan(29_056, f64_sums).unwrap();
        assert_eq!((big.mode(), big.launch().copies(), big.aggregate()), (WeightedMode::Shared, 1, true));
        assert!(big.reason(&H100).contains("fit in one block"), "{}", big.reason(&H100));
        // By default the same bins sum in f32 partials: two copies in the same 227 KiB.
        let big = plan(29_056, LaunchRequest::default()).unwrap();
        assert_eq!((big.mode(), big.launch().copies(), big.f32_partials()), (WeightedMode::Shared, 2, true));
        assert_eq!(big.launch().shared_bytes(), 227 << 10);
    }

    #[test]
    fn few_copies_of_f64_sums_switch_the_shared_tier_to_f32_partials_and_the_request_decides() {
        // 8 copies of 2,048 f64 sums fit 227 KiB (f64); 4 of 4,096 do not reach 8 (f32).
        assert_eq!(f64_copies_that_fit(&H100, 2048), 8);
        assert!(!plan(2048, LaunchRequest::default()).unwrap().f32_partials());
        let p = plan(4096, LaunchRequest::default()).unwrap();
        assert!(p.f32_partials(), "{p}");
        assert!(p.to_string().starts_with("weighted shared tier (f32 partials, f64 sums)"), "{p}");
        let reason = p.reason(&H100);
        assert!(reason.contains("fewer than 8 copies of f64 sums fit one block"), "{reason}");
        // 72 registers: 768 resident threads; 8,192 f32 partials x 4 copies = 128 KiB.
        let p = plan(8192, LaunchRequest::default()).unwrap();
        assert_eq!((p.launch().copies(), p.launch().shared_bytes()), (4, 128 << 10));
        let forced = plan(256, LaunchRequest { f32_partials: Some(true), ..Default::default() }).unwrap();
        assert!(forced.f32_partials() && forced.reason(&H100).contains("as requested"));
        let err = plan(256, LaunchRequest { f32_partials: Some(true), global: Some(true), ..Default::default() });
        assert!(err.unwrap_err().to_string().contains("shared tier"));
        // The global tier has no partials, whatever the bin count.
        let g = plan(100_000, LaunchRequest::default()).unwrap();
        assert!(!g.f32_partials() && g.sum_bound(1 << 20).f32_adds.is_none());
    }

    /// The kernel's arithmetic on the CPU: `weights` of one bin dealt round-robin into
    /// `partials` `f32` partials (those not below the limit, and non-finite ones, straight into
    /// the `f64` sum), the partials then added in `f64` in the order `order` gives.
    fn f32_partials_sum(weights: &[f32], partials: usize, order: &[usize]) -> f64 {
        let limit = kernel::F32_PARTIAL_LIMIT;
        let mut p = vec![0.0f32; partials];
        let mut direct = 0.0f64;
        for (i, &w) in weights.iter().enumerate() {
            if w < limit && w > -limit {
                p[i % partials] += w;
            } else {
                direct += w as f64;
            }
        }
        order.iter().fold(direct, |s, &k| s + p[k] as f64)
    }

    #[test]
    fn the_f32_partials_bound_holds_for_adversarial_weights_summed_as_the_kernel_does() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(22);
        let big = 2f32.powi(94);
        let sets: Vec<(&str, Vec<f32>)> = vec![
            ("tenths", vec![0.1; 100_000]),
            ("cancelling pairs", (0..100_000).map(|i| if i % 2 == 0 { 1e7 } else { -1e7 + 0.5 }).collect()),
            ("one huge, many small", (0..50_000).map(|i| if i == 7 { 3e38 } else { 1e-3 }).collect()),
            ("near the limit", (0..50_000).map(|i| if i % 3 == 0 { big } else { -big * 0.75 }).collect()),
            ("at and past the limit", (0..1000).map(|i| if i % 2 == 0 { 2f32.powi(95) } else { -1.0 }).collect()),
            ("f32::MAX both signs", (0..1000).map(|i| if i % 2 == 0 { f32::MAX } else { -f32::MAX }).collect()),
            ("subnormal", (0..100_000).map(|i| f32::from_bits(1 + (i % 1000))).collect()),
            (
                "exponents 2^-60 .. 2^60",
                (0..100_000).map(|_| rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-60..=60))).collect(),
            ),
        ];
        for (name, w) in sets {
            let want = WeightedReference::from_bins(1, w.iter().map(|&x| (Some(0), x)));
            for partials in [1usize, 4, 132 * 4] {
                let mut order: Vec<usize> = (0..partials).collect();
                for _ in 0..3 {
                    // Any order of the f64 adds.
                    for i in (1..order.len()).rev() {
                        order.swap(i, rng.random_range(0..=i));
                    }
                    let got = f32_partials_sum(&w, partials, &order);
                    let adds = w.len().div_ceil(partials) as u64;
                    let bound = SumBound { partials: partials as u64, f32_adds: Some(adds) };
                    assert_eq!(want.first_difference_by(&[got], &bound), None, "{name}, {partials} partials");
                }
            }
        }
        // The bound is not vacuous: summing 0.1 in one f32 partial misses the exact sum by more
        // than the f64 bound allows.
        let tenths = vec![0.1f32; 100_000];
        let want = WeightedReference::from_bins(1, tenths.iter().map(|&x| (Some(0), x)));
        let got = f32_partials_sum(&tenths, 1, &[0]);
        assert!(want.first_difference(&[got], 1).is_some());
        // Infinities and NaN come out as in f64.
        let special = [f32::INFINITY, 1.0, f32::NEG_INFINITY];
        assert!(f32_partials_sum(&special, 2, &[0, 1]).is_nan());
        assert_eq!(f32_partials_sum(&special[..2], 2, &[1, 0]), f64::INFINITY);
    }

    #[test]
    fn the_adds_of_one_f32_partial_bound_every_thread_of_a_copy() {
        let p = plan(8192, LaunchRequest { threads_per_block: Some(256), copies: Some(4), ..Default::default() });
        let p = p.unwrap();
        let (blocks, threads, copies) = (p.launch().blocks() as u64, 256u64, 4u64);
        for n in [1u64, 3, 4, 5, 1000, (1 << 20) + 1, 1 << 26] {
            // Simulate the kernel's assignment: thread t of the grid takes groups t, t + grid, ...
            // and value 4 * (n / 4) + t of the tail; its copy is its lane % copies.
            let grid = blocks * threads;
            let groups = n / 4;
            let mut most = 0;
            for t in [0u64, 1, 7, 8, 31, 255] {
                let mine = groups / grid + u64::from(t < groups % grid);
                let tail = u64::from(4 * groups + t < n);
                most = most.max(4 * mine + tail);
            }
            let lanes_per_copy = threads / copies;
            assert!(p.adds_per_partial(n) >= most * lanes_per_copy, "n {n}");
            assert!(p.adds_per_partial(n) <= (most + 4) * lanes_per_copy, "n {n}");
        }
    }

    #[test]
    fn byte_values_plan_only_the_256_bins_they_reach() {
        let (limits, model) = (H100, ModelOccupancy { limits: H100, registers: 72 });
        let plan = |element, bins| {
            plan_weighted_for(&limits, &model, element, Binning::integers(bins), &LaunchRequest::default()).unwrap()
        };
        let (wide, narrow) = (plan(InputType::U8, 4096), plan(InputType::U8, 256));
        assert_eq!(wide.bins(), 4096);
        assert_eq!(wide.launch(), narrow.launch());
        assert!(!wide.f32_partials && wide.mode() == WeightedMode::Shared);
        let reason = wide.reason(&limits);
        assert!(reason.starts_with("u8 values reach only the first 256 of the 4096 bins"), "{reason}");
        // Past the shared capacity, bytes still fit one block; i32 values go global.
        assert_eq!(plan(InputType::U8, 100_000).mode(), WeightedMode::Shared);
        assert_eq!(plan(InputType::I32, 100_000).mode(), WeightedMode::Global);
        assert!(plan(InputType::I32, 4096).reason(&limits).starts_with("4096 "));
    }

    #[test]
    fn sums_beyond_one_block_go_to_global_memory_and_forcing_shared_is_refused() {
        let p = plan(29_057, LaunchRequest::default()).unwrap();
        assert_eq!((p.mode(), p.partial_sums(), p.launch().shared_bytes()), (WeightedMode::Global, 0, 0));
        assert!(p.to_string().starts_with("weighted global tier (f64 sums), histogram_weighted_i32"), "{p}");
        let err = plan(29_057, LaunchRequest { global: Some(false), ..Default::default() }).unwrap_err().to_string();
        assert!(err.contains("29057 bins of f64 sums") && err.contains("global tier"), "{err}");
        let err = plan(256, LaunchRequest { global: Some(true), copies: Some(4), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("shared tier"), "{err}");
        assert!(plan(256, LaunchRequest { packing: Some(1), ..Default::default() }).is_err());
        assert!(plan(0, LaunchRequest::default()).is_err());
    }

    #[test]
    fn the_cpu_reference_sums_exactly_and_bounds_the_gpus_error() {
        let binning = Binning::integers(2);
        let values = [0i32, 1, 0, 1, 0, 7];
        let weights = [1e16f32, 1.0, -1e16, 2.5, 1.0, f32::NAN];
        let r = weighted_histogram_cpu(Values::I32(&values), &weights, &binning);
        // Bin 0: 1e16 - 1e16 + 1 = 1 exactly (a plain f64 sum in this order gives 1 too; in the
        // order 1e16 + 1 - 1e16 it would give 0).
        assert_eq!(r.sums[0], 1.0);
        assert!(r.sums[1].is_nan());
        assert_eq!(r.counts, [3, 3]);
        assert_eq!(r.abs_sums[0], 2.0 * (1e16f32 as f64) + 1.0);
        let good = [1.0, f64::NAN];
        assert_eq!(r.first_difference(&good, 10), None);
        // The bound: 1.01 * (3 values + 10 partials) * 2^-53 * 2e16, about 29.
        let off = [1.0 + 64.0, f64::NAN];
        let d = r.first_difference(&off, 10).unwrap();
        assert!(d.starts_with("bin 0 sums"), "{d}");
        assert!(r.first_difference(&[1.0], 0).unwrap().contains("1 sums came back"));
    }
}
