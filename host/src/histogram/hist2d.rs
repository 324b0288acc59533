//! Two-dimensional histograms of `f32` pairs (`numpy.histogram2d(x, y, bins=(bx, by),
//! range=((xlo, xhi), (ylo, yhi)))`), counts or weighted `f64` sums: checked bins ([`Bins2d`]),
//! planner, launches and CPU references for `kernels::histogram::hist2d`.
//!
//! Tiers (counts): `u32` counters in shared memory up to one block's capacity (58,112 bins on an
//! H100 or H200), then 16-bit and 8-bit packed counters (up to 116,224 and 232,448 bins: 256 x 256
//! takes 128 KiB of 16-bit digits), then global memory (one `red.global.add` per pair). Weighted
//! sums: `f64` in shared memory up to 29,056 bins, else global.

use super::device_values::{check_aligned, check_count, check_output};
use super::tuning::{KernelLaunch, LaunchRequest, MAX_COPIES, Occupancy, choose_shape};
use super::weighted::WeightedReference;
use super::{HistogramLimits, InputType, binning_for};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::{CudaStream, CudaView, CudaViewMut, PushKernelArg};
use kernels::histogram::hist2d::{self as kernel, Axis, bin_2d};
use kernels::histogram::packed::{self, MAX_PACKING};
use std::sync::Arc;

/// Even bins over two ranges, `bx * by` of them, checked like one-dimensional `f32` ranges.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_cpu};
/// // numpy.histogram2d(x, y, bins=(2, 3), range=((0, 1), (0, 3))).ravel()
/// let bins = Bins2d::new(2, 3, (0.0, 1.0), (0.0, 3.0))?;
/// let (x, y) = ([0.0, 0.5, 1.0, 0.2, f32::NAN, 0.7], [0.0, 2.9, 3.0, 3.5, 1.0, 1.5]);
/// assert_eq!(histogram2d_cpu(&x, &y, &bins), [1, 0, 0, 0, 1, 2]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bins2d {
    x: Axis,
    y: Axis,
}

impl Bins2d {
    /// `bx` bins over `x_range` by `by` bins over `y_range`: each axis as [`binning_for`] checks
    /// an `f32` range, and at most `i32::MAX` bins in all.
    ///
    /// ```
    /// use hopper_kernels::histogram::hist2d::Bins2d;
    /// let b = Bins2d::new(256, 128, (0.0, 1.0), (-1.0, 1.0)).unwrap();
    /// assert_eq!(b.bins(), 256 * 128);
    /// assert!(Bins2d::new(4, 4, (1.0, 0.0), (0.0, 1.0)).unwrap_err().to_string().contains("x: range"));
    /// ```
    pub fn new(bx: usize, by: usize, x_range: (f32, f32), y_range: (f32, f32)) -> Result<Self> {
        let axis = |bins: usize, range: (f32, f32), name: &str| {
            binning_for(InputType::F32, bins, Some(range))
                .map(|b| Axis { bins: b.nbins, lo: b.lo, hi: b.hi, scale: b.scale })
                .map_err(|e| {
                    Error::InvalidArgument(format!(
                        "{name}: {}",
                        e.to_string().trim_start_matches("invalid argument: ")
                    ))
                })
        };
        let (x, y) = (axis(bx, x_range, "x")?, axis(by, y_range, "y")?);
        let total = bx as u64 * by as u64;
        if total > i32::MAX as u64 {
            return Err(Error::InvalidArgument(format!("{bx} x {by} bins: at most {} bins in all", i32::MAX)));
        }
        Ok(Self { x, y })
    }

    /// Bins in all: `bx * by`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::Bins2d;
    /// assert_eq!(Bins2d::new(256, 128, (0.0, 1.0), (-1.0, 1.0))?.bins(), 32_768);
    /// // At most i32::MAX bins in all.
    /// let err = Bins2d::new(65_536, 65_536, (0.0, 1.0), (0.0, 1.0)).unwrap_err().to_string();
    /// assert!(err.contains("at most 2147483647 bins in all"), "{err}");
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.x.bins * self.y.bins
    }

    /// The x axis.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::Bins2d;
    /// let x = Bins2d::new(10, 4, (0.0, 5.0), (0.0, 1.0))?.x();
    /// assert_eq!((x.bins, x.lo, x.hi, x.scale), (10, 0.0, 5.0, 2.0));
    /// # Ok(()) }
    /// ```
    pub fn x(&self) -> Axis {
        self.x
    }

    /// The y axis.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::Bins2d;
    /// let y = Bins2d::new(10, 4, (0.0, 5.0), (-1.0, 1.0))?.y();
    /// assert_eq!((y.bins, y.lo, y.hi, y.scale), (4, -1.0, 1.0, 2.0));
    /// assert!(Bins2d::new(10, 4, (0.0, 5.0), (1.0, 1.0)).unwrap_err().to_string().contains("y: range"));
    /// # Ok(()) }
    /// ```
    pub fn y(&self) -> Axis {
        self.y
    }

    /// The bin (row-major, `ix * by + iy`) of a pair, `None` when either coordinate is out of its
    /// range or NaN.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::Bins2d;
    /// let bins = Bins2d::new(2, 3, (0.0, 1.0), (0.0, 3.0))?;
    /// // x's bin 1, y's bin 2: row-major 1 * 3 + 2.
    /// assert_eq!(bins.bin_of(0.7, 2.5), Some(5));
    /// assert_eq!(bins.bin_of(1.0, 3.0), Some(5)); // each range's top is in its last bin
    /// assert_eq!((bins.bin_of(1.1, 0.0), bins.bin_of(0.0, f32::NAN)), (None, None));
    /// # Ok(()) }
    /// ```
    pub fn bin_of(&self, x: f32, y: f32) -> Option<u32> {
        bin_2d(x, y, &self.x, &self.y)
    }
}

/// Where a 2-D histogram accumulates.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, Tier2d, plan_2d_for};
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::HistogramLimits;
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// let tier = |b: usize| {
///     let bins = Bins2d::new(b, b, (0.0, 1.0), (0.0, 1.0))?;
///     plan_2d_for(&limits, &model, bins, false, &open).map(|p| p.tier())
/// };
/// // u32 counters up to 58,112 bins, then 16-bit and 8-bit digits, then global memory.
/// assert_eq!(tier(128)?, Tier2d::Shared { packing: 0 });
/// assert_eq!(tier(256)?, Tier2d::Shared { packing: 1 });
/// assert_eq!(tier(480)?, Tier2d::Shared { packing: 2 });
/// assert_eq!(tier(1024)?, Tier2d::Global);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier2d {
    /// Block-private counters (`u32`, or packed `2^packing` to a word) or `f64` sums in shared
    /// memory.
    Shared {
        /// Counters per word as `log2` (0 for sums).
        packing: u32,
    },
    /// Every pair added into global memory.
    Global,
}

/// A planned 2-D launch, built only by [`plan_2d_for`] / [`plan_2d`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, Tier2d, plan_2d_for};
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::HistogramLimits;
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// // 256 x 256 counts: 65,536 counters as 16-bit digits, 128 KiB per block.
/// let plan = plan_2d_for(&limits, &model, Bins2d::new(256, 256, (0.0, 1.0), (0.0, 1.0))?, false, &open)?;
/// assert_eq!(
///     plan.to_string(),
///     "2-D shared tier (16-bit packed counters), 256 x 256 bins, histogram_2d_f32: 132 blocks x 1024 threads, \
///      128.00 KiB shared per block"
/// );
/// assert_eq!(plan.tier(), Tier2d::Shared { packing: 1 });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hist2dPlan {
    launch: KernelLaunch,
    bins: Bins2d,
    tier: Tier2d,
    weighted: bool,
    aggregate: bool,
    paired_flush: bool,
    blocks_per_sm: u32,
}

/// Whether a plan takes the paired-flush counting kernel ([`kernel::KERNEL_PAIRED_FLUSH`]): counts
/// (not sums) in the shared tier's 16-bit digits, when the request asks for it. Not by default:
/// on the H200 (256 x 256 bins, 2^26 pairs) it ran 0.188 ms, as the one-counter flush did.
///
/// ```
/// use hopper_kernels::histogram::hist2d::{Tier2d, uses_paired_flush};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let open = LaunchRequest::default();
/// assert!(!uses_paired_flush(Tier2d::Shared { packing: 1 }, false, &open));
/// let on = LaunchRequest { paired_flush: Some(true), ..open };
/// assert!(uses_paired_flush(Tier2d::Shared { packing: 1 }, false, &on));
/// assert!(!uses_paired_flush(Tier2d::Shared { packing: 0 }, false, &on));
/// assert!(!uses_paired_flush(Tier2d::Shared { packing: 1 }, true, &on));
/// assert!(!uses_paired_flush(Tier2d::Global, false, &on));
/// ```
pub fn uses_paired_flush(tier: Tier2d, weighted: bool, request: &LaunchRequest) -> bool {
    !weighted && tier == (Tier2d::Shared { packing: 1 }) && request.paired_flush.unwrap_or(false)
}

impl Hist2dPlan {
    /// Whether the counters' flush adds two adjacent counters per 64-bit atomic.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let bins = Bins2d::new(256, 256, (0.0, 1.0), (0.0, 1.0))?;
    /// let on = LaunchRequest { paired_flush: Some(true), ..Default::default() };
    /// assert!(plan_2d_for(&limits, &model, bins, false, &on)?.paired_flush());
    /// let plan = plan_2d_for(&limits, &model, bins, false, &LaunchRequest::default())?;
    /// assert_eq!((plan.paired_flush(), plan.launch().kernel()), (false, "histogram_2d_f32"));
    /// # Ok(()) }
    /// ```
    pub fn paired_flush(&self) -> bool {
        self.paired_flush
    }

    /// The kernel launch.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let bins = Bins2d::new(64, 64, (0.0, 1.0), (0.0, 1.0))?;
    /// assert_eq!(plan_2d_for(&limits, &model, bins, false, &open)?.launch().kernel(), "histogram_2d_f32");
    /// assert_eq!(plan_2d_for(&limits, &model, bins, true, &open)?.launch().kernel(), "histogram_2d_weighted_f32");
    /// # Ok(()) }
    /// ```
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// The bins.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let bins = Bins2d::new(100, 50, (0.0, 1.0), (0.0, 1.0))?;
    /// let plan = plan_2d_for(&limits, &model, bins, false, &open)?;
    /// assert_eq!((plan.bins(), plan.bins().bins()), (bins, 5000)); // the output holds 5000 counts
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> Bins2d {
        self.bins
    }

    /// Where it accumulates.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, Tier2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let bins = Bins2d::new(64, 64, (0.0, 1.0), (0.0, 1.0))?;
    /// // Any bin count can go to global memory on request.
    /// let global = LaunchRequest { global: Some(true), ..open };
    /// assert_eq!(plan_2d_for(&limits, &model, bins, false, &global)?.tier(), Tier2d::Global);
    /// # Ok(()) }
    /// ```
    pub fn tier(&self) -> Tier2d {
        self.tier
    }

    /// Whether it sums weights (else counts).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let bins = Bins2d::new(64, 64, (0.0, 1.0), (0.0, 1.0))?;
    /// assert!(plan_2d_for(&limits, &model, bins, true, &open)?.weighted());
    /// assert!(!plan_2d_for(&limits, &model, bins, false, &open)?.weighted());
    /// # Ok(()) }
    /// ```
    pub fn weighted(&self) -> bool {
        self.weighted
    }

    /// Partial sums added into each global sum (weighted shared tier: one per block and copy).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, Tier2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 64 x 64 f64 sums: 4 copies of 32 KiB per block, 132 blocks.
    /// let plan = plan_2d_for(&limits, &model, Bins2d::new(64, 64, (0.0, 1.0), (0.0, 1.0))?, true, &open)?;
    /// assert_eq!((plan.launch().copies(), plan.partial_sums()), (4, 132 * 4));
    /// let plan = plan_2d_for(&limits, &model, Bins2d::new(256, 256, (0.0, 1.0), (0.0, 1.0))?, true, &open)?;
    /// assert_eq!((plan.tier(), plan.partial_sums()), (Tier2d::Global, 0));
    /// # Ok(()) }
    /// ```
    pub fn partial_sums(&self) -> u64 {
        match self.tier {
            Tier2d::Shared { .. } => self.launch.blocks() as u64 * self.launch.copies() as u64,
            Tier2d::Global => 0,
        }
    }

    /// Why this plan, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::HistogramLimits;
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// let plan = plan_2d_for(&limits, &model, Bins2d::new(1024, 1024, (0.0, 1.0), (0.0, 1.0))?, false, &open)?;
    /// let reason = plan.reason(&limits);
    /// assert!(reason.starts_with("1024 x 1024 = 1048576 bins: every pair adds into global memory"), "{reason}");
    /// assert!(reason.contains("at most 232448 8-bit counters"), "{reason}");
    /// # Ok(()) }
    /// ```
    pub fn reason(&self, limits: &HistogramLimits) -> String {
        let (bx, by, total) = (self.bins.x.bins, self.bins.y.bins, self.bins.bins());
        let shape = format!(
            "{} blocks of {} threads per SM ({} resident threads) is the occupancy query's best shape",
            self.blocks_per_sm,
            self.launch.threads(),
            self.blocks_per_sm * self.launch.threads()
        );
        match (self.tier, self.weighted) {
            (Tier2d::Shared { packing: 0 }, false) => format!(
                "{bx} x {by} = {total} u32 counters x {} copies fit in one block's shared memory ({} counters); {shape}",
                self.launch.copies(),
                limits.block_capacity()
            ),
            (Tier2d::Shared { packing }, false) => format!(
                "{bx} x {by} = {total} counters exceed one block's {} u32 counters: packed {} to a word ({}-bit digits, carries corrected exactly), {} per block; {}; {shape}",
                limits.block_capacity(),
                packed::per_word(packing),
                packed::digit_bits(packing),
                format_bytes(self.launch.shared_bytes() as u64),
                if self.paired_flush {
                    "each block flushes a word's two counters in one 64-bit atomic (half the global atomics of one per counter; exact while each count stays below 2^32)"
                } else {
                    "each block flushes one atomic per counter"
                }
            ),
            (Tier2d::Shared { .. }, true) => format!(
                "{bx} x {by} = {total} f64 sums x {} copies fit in one block's shared memory; {shape}",
                self.launch.copies()
            ),
            (Tier2d::Global, _) => format!(
                "{bx} x {by} = {total} bins: every pair adds into global memory (one block holds at most {} {}); {shape}",
                if self.weighted { limits.max_shared_per_block_optin as u64 / 8 } else { 4 * limits.block_capacity() },
                if self.weighted { "f64 sums" } else { "8-bit counters" }
            ),
        }
    }
}

impl std::fmt::Display for Hist2dPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.weighted { "f64 sums" } else { "counts" };
        match self.tier {
            Tier2d::Shared { packing: 0 } => write!(f, "2-D shared tier ({what})")?,
            Tier2d::Shared { packing } => {
                write!(f, "2-D shared tier ({}-bit packed counters)", packed::digit_bits(packing))?
            }
            Tier2d::Global => write!(f, "2-D global tier ({what})")?,
        }
        write!(f, ", {} x {} bins, {}", self.bins.x.bins, self.bins.y.bins, self.launch)?;
        if self.weighted && self.aggregate {
            write!(f, ", warp-aggregated adds")?;
        }
        Ok(())
    }
}

/// Plans a 2-D histogram of `bins` (counts, or `weighted` sums) on a device with `limits`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, Tier2d, plan_2d_for};
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::HistogramLimits;
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// let bins = Bins2d::new(256, 256, (0.0, 1.0), (0.0, 1.0))?;
/// assert_eq!(plan_2d_for(&limits, &model, bins, false, &open)?.tier(), Tier2d::Shared { packing: 1 });
/// // f64 sums fit one block up to 29,056 bins: 65,536 are added in global memory.
/// assert_eq!(plan_2d_for(&limits, &model, bins, true, &open)?.tier(), Tier2d::Global);
/// // 8-bit digits on request; u32 counters do not fit, and sums are not packed.
/// let packed8 = LaunchRequest { packing: Some(2), ..open };
/// assert_eq!(plan_2d_for(&limits, &model, bins, false, &packed8)?.tier(), Tier2d::Shared { packing: 2 });
/// let unpacked = LaunchRequest { packing: Some(0), ..open };
/// let err = plan_2d_for(&limits, &model, bins, false, &unpacked).unwrap_err().to_string();
/// assert!(err.contains("do not fit one block's shared memory as 32-bit counters"), "{err}");
/// assert!(plan_2d_for(&limits, &model, bins, true, &packed8).is_err());
/// # Ok(()) }
/// ```
pub fn plan_2d_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    bins: Bins2d,
    weighted: bool,
    request: &LaunchRequest,
) -> Result<Hist2dPlan> {
    let total = bins.bins() as u64;
    let capacity = limits.block_capacity();
    let what = format!("a 2-D histogram of {} x {} bins", bins.x.bins, bins.y.bins);
    let kernel_name = if weighted { kernel::KERNEL_WEIGHTED } else { kernel::KERNEL };
    if weighted && request.packing.is_some() {
        return Err(Error::InvalidArgument("--packing applies to counts, not to weighted sums".into()));
    }
    if !weighted && request.aggregate.is_some() {
        return Err(Error::InvalidArgument("--aggregate applies to weighted sums".into()));
    }
    let tier = if weighted {
        let fits = 8 * total <= limits.max_shared_per_block_optin as u64;
        match request.global {
            Some(true) => Tier2d::Global,
            Some(false) if !fits => {
                return Err(Error::InvalidArgument(format!(
                    "{what}: {total} f64 sums need {}, a block gets at most {}: use the global tier",
                    format_bytes(8 * total),
                    format_bytes(limits.max_shared_per_block_optin as u64)
                )));
            }
            _ if fits => Tier2d::Shared { packing: 0 },
            _ => Tier2d::Global,
        }
    } else {
        let packing = match request.packing {
            Some(p) if p > MAX_PACKING => {
                return Err(Error::InvalidArgument(format!("packing {p}: use 0, 1 or 2")));
            }
            Some(p) => Some(p),
            None => packed::narrowest_packing(total, 0, capacity),
        };
        match (request.global, packing) {
            (Some(true), _) => {
                if request.packing.is_some() {
                    return Err(Error::InvalidArgument("--packing applies to the shared tier's counters".into()));
                }
                Tier2d::Global
            }
            (_, Some(p)) if packed::fits(total, p, capacity) => Tier2d::Shared { packing: p },
            (Some(false), _) | (_, Some(_)) => {
                return Err(Error::InvalidArgument(format!(
                    "{what}: {total} counters do not fit one block's shared memory{} (at most {} 8-bit counters): use the global tier",
                    packing.map_or(String::new(), |p| format!(" as {}-bit counters", packed::digit_bits(p))),
                    4 * capacity
                )));
            }
            (None, None) => Tier2d::Global,
        }
    };
    if tier == Tier2d::Global && request.copies.is_some_and(|c| c != 1) {
        return Err(Error::InvalidArgument("--copies applies to the shared tier".into()));
    }
    let shape = match tier {
        Tier2d::Global => choose_shape(occupancy, limits, &|_| 0, 1, request, &what)?,
        Tier2d::Shared { packing } if !weighted => choose_shape(
            occupancy,
            limits,
            &|c| kernel::count_shared_bytes(total as u32, packing, c),
            MAX_COPIES,
            request,
            &what,
        )?,
        Tier2d::Shared { .. } => {
            choose_shape(occupancy, limits, &|c| kernel::sum_shared_bytes(total as u32, c), MAX_COPIES, request, &what)?
        }
    };
    let paired_flush = uses_paired_flush(tier, weighted, request);
    let kernel_name = if paired_flush { kernel::KERNEL_PAIRED_FLUSH } else { kernel_name };
    Ok(Hist2dPlan {
        launch: KernelLaunch::new(kernel_name, shape, limits.sm_count),
        bins,
        tier,
        weighted,
        aggregate: weighted && request.aggregate.unwrap_or(tier == Tier2d::Global || shape.copies < MAX_COPIES),
        paired_flush,
        blocks_per_sm: shape.blocks_per_sm,
    })
}

/// [`plan_2d_for`] on the opened device, with its occupancy query for the kernel.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::hist2d::{Bins2d, plan_2d};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let gpu = Gpu::open(0)?;
/// let bins = Bins2d::new(256, 256, (-1.0, 1.0), (-1.0, 1.0))?;
/// let plan = plan_2d(&gpu, bins, false, &LaunchRequest::default())?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn plan_2d(gpu: &Gpu, bins: Bins2d, weighted: bool, request: &LaunchRequest) -> Result<Hist2dPlan> {
    let limits = HistogramLimits::of(gpu)?;
    let occupancy =
        super::tuning::DriverOccupancy::new(gpu, if weighted { kernel::KERNEL_WEIGHTED } else { kernel::KERNEL })?;
    let plan = plan_2d_for(&limits, &occupancy, bins, weighted, request)?;
    if !plan.paired_flush {
        return Ok(plan);
    }
    // The same tier, shaped by the paired-flush kernel's own residency.
    let occupancy = super::tuning::DriverOccupancy::new(gpu, kernel::KERNEL_PAIRED_FLUSH)?;
    plan_2d_for(&limits, &occupancy, bins, weighted, request)
}

/// Checks the pair inputs of a launch: as many `y` (and weights) as `x`, aligned, countable.
fn check_pairs(
    stream: &CudaStream,
    x: &CudaView<'_, f32>,
    y: &CudaView<'_, f32>,
    w: Option<&CudaView<'_, f32>>,
) -> Result<u64> {
    let n = x.len() as u64;
    if y.len() as u64 != n || w.is_some_and(|w| w.len() as u64 != n) {
        return Err(Error::InvalidArgument(format!(
            "{n} x, {} y{}: give one of each per pair",
            y.len(),
            w.map_or(String::new(), |w| format!(" and {} weights", w.len()))
        )));
    }
    check_count(n)?;
    if n > 0 {
        check_aligned(x, stream, "x")?;
        check_aligned(y, stream, "y")?;
        if let Some(w) = w {
            check_aligned(w, stream, "the weights")?;
        }
    }
    Ok(n)
}

/// Enqueues the planned (counting) kernel on `stream`: counts the pairs `(x[i], y[i])` into
/// `counts` (`bx * by` `u32`, row-major), without zeroing them first.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_cpu, launch_2d, plan_2d};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let gpu = Gpu::open(0)?;
/// let bins = Bins2d::new(2, 2, (0.0, 1.0), (0.0, 1.0))?;
/// let plan = plan_2d(&gpu, bins, false, &LaunchRequest::default())?;
/// let (x, y) = ([0.1f32, 0.9, 1.0, 2.0], [0.1f32, 0.1, 1.0, 0.5]);
/// let (dx, dy) = (gpu.upload(&x)?, gpu.upload(&y)?);
/// let mut counts = gpu.zeros::<u32>(bins.bins() as usize)?;
/// launch_2d(&gpu, &plan, gpu.stream(), &dx.as_view(), &dy.as_view(), &mut counts.as_view_mut())?;
/// assert_eq!(gpu.download(&counts)?, histogram2d_cpu(&x, &y, &bins));
/// # Ok(()) }
/// ```
pub fn launch_2d(
    gpu: &Gpu,
    plan: &Hist2dPlan,
    stream: &Arc<CudaStream>,
    x: &CudaView<'_, f32>,
    y: &CudaView<'_, f32>,
    counts: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    if plan.weighted {
        return Err(Error::InvalidArgument("the plan sums weights: launch it with launch_2d_weighted".into()));
    }
    check_output(counts.len(), plan.bins.bins() as u64, "counts")?;
    let n = check_pairs(stream, x, y, None)?;
    if n == 0 {
        return Ok(());
    }
    let func = plan.launch.prepared(gpu)?;
    let (ax, ay) = (plan.bins.x, plan.bins.y);
    let (packing, global) = match plan.tier {
        Tier2d::Shared { packing } => (packing, 0u32),
        Tier2d::Global => (0, 1),
    };
    let copies = plan.launch.copies();
    let mut launch = stream.launch_builder(&func);
    launch.arg(x).arg(y).arg(&n).arg(counts);
    launch.arg(&ax.bins).arg(&ax.lo).arg(&ax.hi).arg(&ax.scale);
    launch.arg(&ay.bins).arg(&ay.lo).arg(&ay.hi).arg(&ay.scale);
    launch.arg(&copies).arg(&packing).arg(&global);
    // SAFETY: kernel contract (kernels::histogram::hist2d): n <= u32::MAX pairs, x and y 16-byte
    // aligned (checked); counts holds bx * by u32 (checked), bx * by < 2^31 (Bins2d); copies is a
    // power of two up to 32 and the launch provides count_shared_bytes(bins, packing, copies) in
    // the shared tier (the plan).
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// Enqueues the planned weighted kernel on `stream`: adds `w[i]` of each pair into `sums` (`bx *
/// by` `f64`, row-major), without zeroing them first.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_weighted_cpu, launch_2d_weighted, plan_2d};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let gpu = Gpu::open(0)?;
/// let bins = Bins2d::new(2, 2, (0.0, 1.0), (0.0, 1.0))?;
/// let plan = plan_2d(&gpu, bins, true, &LaunchRequest::default())?;
/// let (x, y, w) = ([0.1f32, 0.9, 0.9], [0.1f32, 0.1, 0.2], [1.0f32, 0.25, 0.5]);
/// let (dx, dy, dw) = (gpu.upload(&x)?, gpu.upload(&y)?, gpu.upload(&w)?);
/// let mut sums = gpu.zeros::<f64>(bins.bins() as usize)?;
/// let (vx, vy, vw) = (dx.as_view(), dy.as_view(), dw.as_view());
/// launch_2d_weighted(&gpu, &plan, gpu.stream(), &vx, &vy, &vw, &mut sums.as_view_mut())?;
/// let sums = gpu.download(&sums)?;
/// assert_eq!(sums, [1.0, 0.0, 0.75, 0.0]);
/// let reference = histogram2d_weighted_cpu(&x, &y, &w, &bins);
/// assert_eq!(reference.first_difference(&sums, plan.partial_sums()), None);
/// # Ok(()) }
/// ```
pub fn launch_2d_weighted(
    gpu: &Gpu,
    plan: &Hist2dPlan,
    stream: &Arc<CudaStream>,
    x: &CudaView<'_, f32>,
    y: &CudaView<'_, f32>,
    w: &CudaView<'_, f32>,
    sums: &mut CudaViewMut<'_, f64>,
) -> Result<()> {
    if !plan.weighted {
        return Err(Error::InvalidArgument("the plan counts pairs: launch it with launch_2d".into()));
    }
    check_output(sums.len(), plan.bins.bins() as u64, "sums")?;
    let n = check_pairs(stream, x, y, Some(w))?;
    if n == 0 {
        return Ok(());
    }
    let func = plan.launch.prepared(gpu)?;
    let (ax, ay) = (plan.bins.x, plan.bins.y);
    let global = (plan.tier == Tier2d::Global) as u32;
    let (copies, aggregate) = (plan.launch.copies(), plan.aggregate as u32);
    let mut launch = stream.launch_builder(&func);
    launch.arg(x).arg(y).arg(w).arg(&n).arg(sums);
    launch.arg(&ax.bins).arg(&ax.lo).arg(&ax.hi).arg(&ax.scale);
    launch.arg(&ay.bins).arg(&ay.lo).arg(&ay.hi).arg(&ay.scale);
    launch.arg(&copies).arg(&global).arg(&aggregate);
    // SAFETY: kernel contract: n pairs and weights, 16-byte aligned (checked); sums holds bx * by
    // f64; copies and shared memory as planned.
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// The 2-D histogram of pairs `(x[i], y[i])` on the GPU: `bx * by` counts, row-major
/// (`numpy.histogram2d`'s `H.ravel()`).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let bins = Bins2d::new(2, 2, (0.0, 1.0), (0.0, 1.0))?;
/// assert_eq!(histogram2d(&gpu, &[0.1, 0.9, 1.0, 2.0], &[0.1, 0.1, 1.0, 0.5], bins)?, [1, 0, 1, 1]);
/// # Ok(()) }
/// ```
pub fn histogram2d(gpu: &Gpu, x: &[f32], y: &[f32], bins: Bins2d) -> Result<Vec<u32>> {
    let plan = plan_2d(gpu, bins, false, &LaunchRequest::default())?;
    let (dx, dy) = upload_pairs(gpu, x, y, None, 4 * bins.bins() as u64)?;
    let mut counts = gpu.zeros::<u32>(bins.bins() as usize)?;
    launch_2d(gpu, &plan, gpu.stream(), &dx.0.slice(0..dx.1), &dy.0.slice(0..dy.1), &mut counts.as_view_mut())?;
    gpu.synchronize()?;
    gpu.download(&counts)
}

/// The weighted 2-D histogram: `w[i]` summed per bin of `(x[i], y[i])` in `f64`.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_weighted};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let bins = Bins2d::new(2, 2, (0.0, 1.0), (0.0, 1.0))?;
/// let sums = histogram2d_weighted(&gpu, &[0.1, 0.9, 1.0, 2.0], &[0.1, 0.1, 1.0, 0.5], &[1.0, 2.0, 0.5, 8.0], bins)?;
/// assert_eq!(sums, [1.0, 0.0, 2.0, 0.5]);
/// # Ok(()) }
/// ```
pub fn histogram2d_weighted(gpu: &Gpu, x: &[f32], y: &[f32], w: &[f32], bins: Bins2d) -> Result<Vec<f64>> {
    let plan = plan_2d(gpu, bins, true, &LaunchRequest::default())?;
    if w.len() != x.len() {
        return Err(Error::InvalidArgument(format!(
            "{} pairs and {} weights: give one weight per pair",
            x.len(),
            w.len()
        )));
    }
    let (dx, dy) = upload_pairs(gpu, x, y, Some(w), 8 * bins.bins() as u64)?;
    let dw = if w.is_empty() { gpu.zeros::<f32>(4)? } else { gpu.upload(w)? };
    let mut sums = gpu.zeros::<f64>(bins.bins() as usize)?;
    let n = dx.1;
    launch_2d_weighted(
        gpu,
        &plan,
        gpu.stream(),
        &dx.0.slice(0..n),
        &dy.0.slice(0..n),
        &dw.slice(0..n),
        &mut sums.as_view_mut(),
    )?;
    gpu.synchronize()?;
    gpu.download(&sums)
}

type Uploaded = (cudarc::driver::CudaSlice<f32>, usize);

/// `x` and `y` on the device (each at least 4 values, so that no buffer is empty), checked for
/// equal lengths and free memory.
fn upload_pairs(gpu: &Gpu, x: &[f32], y: &[f32], w: Option<&[f32]>, extra: u64) -> Result<(Uploaded, Uploaded)> {
    if x.len() != y.len() {
        return Err(Error::InvalidArgument(format!("{} x and {} y: give one of each per pair", x.len(), y.len())));
    }
    check_count(x.len() as u64)?;
    let streams = 2 + w.is_some() as u64;
    gpu.ensure_fits("a 2-D histogram", streams * 4 * x.len().max(4) as u64 + extra)?;
    let up = |v: &[f32]| -> Result<Uploaded> {
        Ok((if v.is_empty() { gpu.zeros::<f32>(4)? } else { gpu.upload(v)? }, v.len()))
    };
    Ok((up(x)?, up(y)?))
}

/// The 2-D histogram on the CPU, as numpy counts it (each axis by the kernels' formula).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_cpu};
/// let bins = Bins2d::new(2, 2, (0.0, 1.0), (0.0, 1.0))?;
/// // (1.0, 1.0) is in the last bin of both axes; (2.0, 0.5) is outside x's range.
/// assert_eq!(histogram2d_cpu(&[0.1, 0.9, 1.0, 2.0], &[0.1, 0.1, 1.0, 0.5], &bins), [1, 0, 1, 1]);
/// # Ok(()) }
/// ```
pub fn histogram2d_cpu(x: &[f32], y: &[f32], bins: &Bins2d) -> Vec<u32> {
    let mut counts = vec![0u32; bins.bins() as usize];
    for (&a, &b) in x.iter().zip(y) {
        if let Some(bin) = bins.bin_of(a, b) {
            counts[bin as usize] += 1;
        }
    }
    counts
}

/// The weighted 2-D histogram on the CPU, summed exactly ([`WeightedReference::from_bins`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::hist2d::{Bins2d, histogram2d_weighted_cpu};
/// let bins = Bins2d::new(2, 3, (0.0, 1.0), (0.0, 3.0))?;
/// let (x, y) = ([0.0, 0.5, 1.0, 0.2, f32::NAN, 0.7], [0.0, 2.9, 3.0, 3.5, 1.0, 1.5]);
/// let r = histogram2d_weighted_cpu(&x, &y, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &bins);
/// assert_eq!(r.sums, [1.0, 0.0, 0.0, 0.0, 6.0, 5.0]);
/// assert_eq!(r.counts, [1, 0, 0, 0, 1, 2]);
/// # Ok(()) }
/// ```
pub fn histogram2d_weighted_cpu(x: &[f32], y: &[f32], w: &[f32], bins: &Bins2d) -> WeightedReference {
    WeightedReference::from_bins(
        bins.bins() as usize,
        x.iter().zip(y).zip(w).map(|((&a, &b), &wv)| (bins.bin_of(a, b), wv)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::tuning::ModelOccupancy;

    const H100: HistogramLimits = HistogramLimits::H100;

    fn plan(bx: usize, by: usize, weighted: bool, request: LaunchRequest) -> Result<Hist2dPlan> {
        let occupancy = ModelOccupancy { limits: H100, registers: 64 };
        plan_2d_for(&H100, &occupancy, Bins2d::new(bx, by, (0.0, 1.0), (0.0, 1.0)).unwrap(), weighted, &request)
    }

    #[test]
    fn axes_are_checked_like_one_dimensional_ranges() {
        assert!(Bins2d::new(0, 4, (0.0, 1.0), (0.0, 1.0)).is_err());
        assert!(
            Bins2d::new(4, 4, (0.0, 1.0), (0.0, f32::NAN))
                .unwrap_err()
                .to_string()
                .starts_with("invalid argument: y: range")
        );
        assert!(Bins2d::new(65_536, 65_536, (0.0, 1.0), (0.0, 1.0)).unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn the_tier_follows_the_bin_count_from_u32_to_packed_to_global() {
        assert_eq!(plan(128, 128, false, LaunchRequest::default()).unwrap().tier(), Tier2d::Shared { packing: 0 });
        let p = plan(256, 256, false, LaunchRequest::default()).unwrap();
        assert_eq!((p.tier(), p.launch().shared_bytes()), (Tier2d::Shared { packing: 1 }, 128 << 10));
        assert!(p.to_string().starts_with("2-D shared tier (16-bit packed counters), 256 x 256 bins"), "{p}");
        assert!(p.reason(&H100).contains("packed 2 to a word"), "{}", p.reason(&H100));
        assert_eq!(plan(480, 480, false, LaunchRequest::default()).unwrap().tier(), Tier2d::Shared { packing: 2 });
        assert_eq!(plan(1024, 1024, false, LaunchRequest::default()).unwrap().tier(), Tier2d::Global);
        let forced = LaunchRequest { global: Some(false), ..Default::default() };
        assert!(plan(1024, 1024, false, forced).unwrap_err().to_string().contains("global tier"));
        let packed8 = LaunchRequest { packing: Some(2), ..Default::default() };
        assert_eq!(plan(256, 256, false, packed8).unwrap().tier(), Tier2d::Shared { packing: 2 });
        let too_few = LaunchRequest { packing: Some(0), ..Default::default() };
        assert!(plan(256, 256, false, too_few).unwrap_err().to_string().contains("as 32-bit counters"));
    }

    #[test]
    fn weighted_sums_take_shared_memory_up_to_one_block_of_f64() {
        let p = plan(64, 64, true, LaunchRequest::default()).unwrap();
        assert_eq!(p.tier(), Tier2d::Shared { packing: 0 });
        assert_eq!(p.launch().kernel(), kernel::KERNEL_WEIGHTED);
        assert_eq!(plan(256, 256, true, LaunchRequest::default()).unwrap().tier(), Tier2d::Global);
        assert!(plan(64, 64, true, LaunchRequest { packing: Some(1), ..Default::default() }).is_err());
        assert!(plan(64, 64, false, LaunchRequest { aggregate: Some(true), ..Default::default() }).is_err());
    }

    #[test]
    fn the_cpu_reference_counts_pairs_inside_both_ranges_row_major() {
        let bins = Bins2d::new(2, 3, (0.0, 1.0), (0.0, 3.0)).unwrap();
        let x = [0.0, 0.5, 1.0, 0.2, f32::NAN, 0.7];
        let y = [0.0, 2.9, 3.0, 3.5, 1.0, 1.5];
        assert_eq!(histogram2d_cpu(&x, &y, &bins), [1, 0, 0, 0, 1, 2]);
        let r = histogram2d_weighted_cpu(&x, &y, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &bins);
        assert_eq!(r.sums, [1.0, 0.0, 0.0, 0.0, 6.0, 5.0]);
    }
}
