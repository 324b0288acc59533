//! Segmented histograms, one per segment of the input in one launch: equal lengths or CSR-style
//! offsets ([`Segments`]), planner, launch and CPU reference for `kernels::histogram::segmented`.
//!
//! One tier: each block counts equal shares of the values into block-private counters in shared
//! memory and adds them into each segment's counters as it leaves the segment, so the bins of one
//! segment must fit one block (58,112 on an H100 or H200; larger per-segment histograms are a
//! launch per segment of the planner's tier). Copies of the counters cost a zeroing and a flush
//! per piece of a segment, so the planner allows copies only while they stay a small share of the
//! piece's work ([`max_copies_for`]).
//!
//! On request ([`LaunchRequest::warp_private`]) the warp-private kernels count instead: each warp
//! takes an equal share of the values and its own copy of the counters, and meets no block
//! barrier (a block's shared memory holds a copy per warp: blocks of fewer warps where the bins
//! are many).

use super::device_values::{DeviceValues, check_aligned, check_count, check_output, upload_values};
use super::tuning::{
    KernelLaunch, LaunchRequest, MAX_COPIES, Occupancy, choose_shape_per_warp, choose_shape_small_blocks,
};
use super::weighted::{for_each_bin, type_index};
use super::{Binning, HistogramLimits, InputType, Values, check_bins};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::{CudaStream, CudaView, CudaViewMut, PushKernelArg};
use kernels::histogram::segmented as kernel;
use std::sync::Arc;

/// How the input splits into segments (host-side, checked).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::segmented::Segments;
/// // CSR-style: values 0..3, none, then 3..6.
/// let offsets = Segments::Offsets(&[0, 3, 3, 6]);
/// assert_eq!(offsets.count(), 3);
/// offsets.check(6)?;
/// // 10 values in 4 segments of 3 (the last holds one).
/// assert_eq!(Segments::equal_count(10, 4)?, Segments::Equal { count: 4, len: 3 });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segments<'a> {
    /// `count` segments of `len` values (the last ones shorter, or empty, at the input's end).
    Equal {
        /// Segments.
        count: u64,
        /// Values per segment.
        len: u64,
    },
    /// Segment `s` is values `offsets[s]..offsets[s + 1]`: sorted offsets, the first 0, the last
    /// the input's length.
    Offsets(&'a [u64]),
}

impl Segments<'_> {
    /// Segments.
    ///
    /// ```
    /// use hopper_kernels::histogram::segmented::Segments;
    /// assert_eq!(Segments::Offsets(&[0, 2, 5, 9]).count(), 3);
    /// assert_eq!(Segments::Equal { count: 7, len: 100 }.count(), 7);
    /// assert_eq!(Segments::Offsets(&[]).count(), 0); // refused by check
    /// ```
    pub fn count(&self) -> u64 {
        match self {
            Segments::Equal { count, .. } => *count,
            Segments::Offsets(o) => o.len().saturating_sub(1) as u64,
        }
    }

    /// `n` values cut into `count` segments of equal length (`ceil(n / count)`, the last ones
    /// shorter).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::Segments;
    /// assert_eq!(Segments::equal_count(10, 4)?, Segments::Equal { count: 4, len: 3 });
    /// // More segments than values: one value each, the last ones empty.
    /// assert_eq!(Segments::equal_count(2, 4)?, Segments::Equal { count: 4, len: 1 });
    /// let err = Segments::equal_count(10, 0).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid argument: 0 segments: use at least one");
    /// # Ok(()) }
    /// ```
    pub fn equal_count(n: u64, count: u64) -> Result<Self> {
        if count == 0 {
            return Err(Error::InvalidArgument("0 segments: use at least one".into()));
        }
        Ok(Segments::Equal { count, len: n.div_ceil(count).max(1) })
    }

    /// `n` values cut into segments of `len` (the last one shorter): `ceil(n / len)` of them.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::Segments;
    /// assert_eq!(Segments::equal_len(10, 4)?, Segments::Equal { count: 3, len: 4 });
    /// assert_eq!(Segments::equal_len(0, 4)?.count(), 0);
    /// assert!(Segments::equal_len(10, 0).unwrap_err().to_string().contains("a length of at least 1"));
    /// # Ok(()) }
    /// ```
    pub fn equal_len(n: u64, len: u64) -> Result<Self> {
        if len == 0 {
            return Err(Error::InvalidArgument("segments of 0 values: use a length of at least 1".into()));
        }
        Ok(Segments::Equal { count: n.div_ceil(len), len })
    }

    /// Fails unless these segments cover `n` values exactly: offsets sorted, from 0 to `n`; equal
    /// segments of a positive length that reach `n`.
    ///
    /// ```
    /// use hopper_kernels::histogram::segmented::Segments;
    /// assert!(Segments::Offsets(&[0, 2, 5]).check(5).is_ok());
    /// let err = |s: Segments, n| s.check(n).unwrap_err().to_string();
    /// assert!(err(Segments::Offsets(&[0]), 0).contains("at least two"));
    /// assert!(err(Segments::Offsets(&[1, 5]), 5).contains("they must run from 0 to the input's 5 values"));
    /// assert!(err(Segments::Offsets(&[0, 4, 3, 5]), 5).contains("offset 2 (3) is below offset 1 (4)"));
    /// let short = Segments::Equal { count: 3, len: 4 };
    /// assert!(err(short, 13).contains("3 segments of 4 values cover 12 of the 13 values"));
    /// ```
    pub fn check(&self, n: u64) -> Result<()> {
        match *self {
            Segments::Equal { count, len } => {
                if len == 0 || count == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{count} segments of {len} values: both must be positive"
                    )));
                }
                if count.saturating_mul(len) < n {
                    return Err(Error::InvalidArgument(format!(
                        "{count} segments of {len} values cover {} of the {n} values",
                        count * len
                    )));
                }
                Ok(())
            }
            Segments::Offsets(o) => {
                if o.len() < 2 {
                    return Err(Error::InvalidArgument(format!(
                        "{} offset(s): segments need at least two (the first 0, the last the input's length)",
                        o.len()
                    )));
                }
                if o[0] != 0 || o[o.len() - 1] != n {
                    return Err(Error::InvalidArgument(format!(
                        "offsets run from {} to {}: they must run from 0 to the input's {n} values",
                        o[0],
                        o[o.len() - 1]
                    )));
                }
                if let Some(i) = (1..o.len()).find(|&i| o[i] < o[i - 1]) {
                    return Err(Error::InvalidArgument(format!(
                        "offset {i} ({}) is below offset {} ({}): offsets must not decrease",
                        o[i],
                        i - 1,
                        o[i - 1]
                    )));
                }
                Ok(())
            }
        }
    }
}

/// Segments on the device: equal ones, or a device buffer of `count + 1` offsets.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::segmented::DeviceSegments;
/// let gpu = Gpu::open(0)?;
/// // Offsets uploaded once, for every launch over the same segments.
/// let offsets = gpu.upload(&[0u64, 3, 3, 6])?;
/// let by_offsets = DeviceSegments::Offsets(offsets.as_view());
/// let equal = DeviceSegments::Equal { count: 3, len: 2 };
/// assert_eq!((by_offsets.count(), equal.count()), (3, 3));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum DeviceSegments<'a> {
    /// `count` segments of `len` values.
    Equal {
        /// Segments.
        count: u64,
        /// Values per segment.
        len: u64,
    },
    /// `offsets.len() - 1` segments; offsets that are not sorted from 0 to the values' length give
    /// meaningless counts (never an access out of bounds: the kernel clamps each offset).
    Offsets(CudaView<'a, u64>),
}

impl DeviceSegments<'_> {
    /// Segments.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::segmented::DeviceSegments;
    /// let gpu = Gpu::open(0)?;
    /// let offsets = gpu.upload(&[0u64, 10, 20, 20, 35])?;
    /// assert_eq!(DeviceSegments::Offsets(offsets.as_view()).count(), 4);
    /// assert_eq!(DeviceSegments::Equal { count: 8, len: 5 }.count(), 8);
    /// # Ok(()) }
    /// ```
    pub fn count(&self) -> u64 {
        match self {
            DeviceSegments::Equal { count, .. } => *count,
            DeviceSegments::Offsets(o) => o.len().saturating_sub(1) as u64,
        }
    }
}

/// The most copies for segments of about `values_per_segment` values into `bins` bins: each piece
/// of a segment zeroes and reads `bins * copies` counters, which should stay within a thirty-second of
/// the piece's values (at least one copy). On the H200 (4,096 segments of 16,384 `i32` values, 256
/// bins, 256-thread blocks) 1, 2, 8 and 16 copies took 0.0928, 0.0932, 0.0957 and 0.0969 ms: the
/// zeroing and flush outweigh what copies save on adds to one bin.
///
/// ```
/// use hopper_kernels::histogram::segmented::max_copies_for;
/// // 256 bins x 2 copies x 32 = 16,384: the most for segments of 16,384 values.
/// assert_eq!(max_copies_for(256, 16_384), 2);
/// assert_eq!(max_copies_for(256, 1 << 20), 32);
/// assert_eq!(max_copies_for(256, 100), 1);
/// ```
pub fn max_copies_for(bins: u32, values_per_segment: u64) -> u32 {
    let mut copies = MAX_COPIES;
    while copies > 1 && bins as u64 * copies as u64 * 32 > values_per_segment {
        copies /= 2;
    }
    copies
}

/// Whether a plan for `bins` bins per segment takes the two-set kernel: as `request` says, else
/// where two sets of counters fit one block (one barrier per piece of a segment instead of two).
///
/// ```
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::segmented::uses_double_buffer;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let (limits, open) = (HistogramLimits::H100, LaunchRequest::default());
/// assert!(uses_double_buffer(&limits, 256, &open));
/// assert!(uses_double_buffer(&limits, 29_056, &open));
/// assert!(!uses_double_buffer(&limits, 29_057, &open));
/// assert!(!uses_double_buffer(&limits, 256, &LaunchRequest { double_buffer: Some(false), ..open }));
/// ```
pub fn uses_double_buffer(limits: &HistogramLimits, bins: u32, request: &LaunchRequest) -> bool {
    request.double_buffer.unwrap_or(2 * kernel::shared_bytes(bins, 1) <= limits.max_shared_per_block_optin as u64)
}

/// Whether a plan takes the warp-private kernel: as `request` says (default: no); fails where
/// the request also names the per-block kernels' sets of counters.
///
/// ```
/// use hopper_kernels::histogram::segmented::uses_warp_private;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// let open = LaunchRequest::default();
/// assert!(!uses_warp_private(&open).unwrap());
/// assert!(uses_warp_private(&LaunchRequest { warp_private: Some(true), ..open }).unwrap());
/// let both = LaunchRequest { warp_private: Some(true), double_buffer: Some(false), ..open };
/// assert!(uses_warp_private(&both).unwrap_err().to_string().contains("--double-buffer"));
/// ```
pub fn uses_warp_private(request: &LaunchRequest) -> Result<bool> {
    let warp = request.warp_private.unwrap_or(false);
    if warp && request.double_buffer.is_some() {
        return Err(Error::InvalidArgument(
            "--double-buffer chooses the sets of counters of the per-block segmented kernels; the warp-private kernel (--warp-private true) keeps one set per warp and meets no block barrier".into(),
        ));
    }
    Ok(warp)
}

/// The kernel of `element` values: warp-private, or per block with two sets of counters or one.
fn kernel_for(element: InputType, double_buffer: bool, warp_private: bool) -> &'static str {
    let i = type_index(element);
    if warp_private {
        kernel::WARP_KERNELS[i]
    } else if double_buffer {
        kernel::DOUBLE_KERNELS[i]
    } else {
        kernel::KERNELS[i]
    }
}

/// A planned segmented launch, built only by [`plan_segments_for`] / [`plan_segments`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::segmented::plan_segments_for;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// // 4096 histograms of 256 bins over 2^26 i32 values.
/// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
/// assert_eq!(
///     plan.to_string(),
///     "segmented tier (4096 segments x 256 bins, 2 sets of counters), histogram_segmented_double_i32: 528 blocks x 256 threads, \
///      4.00 KiB shared per block (2 copies)"
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentsPlan {
    launch: KernelLaunch,
    element: InputType,
    binning: Binning,
    segments: u64,
    double_buffer: bool,
    warp_private: bool,
    blocks_per_sm: u32,
}

impl SegmentsPlan {
    /// Whether the kernel alternates between two sets of counters (one barrier per piece).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan = |bins, request: &LaunchRequest| {
    ///     plan_segments_for(&limits, &model, InputType::I32, Binning::integers(bins), 64, 1 << 20, request)
    /// };
    /// assert!(plan(256, &LaunchRequest::default())?.double_buffer());
    /// let single = plan(256, &LaunchRequest { double_buffer: Some(false), ..Default::default() })?;
    /// assert!(!single.double_buffer());
    /// assert_eq!(single.launch().shared_bytes() * 2, plan(256, &LaunchRequest::default())?.launch().shared_bytes());
    /// // Two sets of the most bins a block holds do not fit: one set.
    /// assert!(!plan(58_112, &LaunchRequest::default())?.double_buffer());
    /// # Ok(()) }
    /// ```
    pub fn double_buffer(&self) -> bool {
        self.double_buffer
    }

    /// Whether the warp-private kernel counts: counters per warp, no block barriers
    /// ([`LaunchRequest::warp_private`]).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let warp = LaunchRequest { warp_private: Some(true), ..Default::default() };
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &warp)?;
    /// assert!(plan.warp_private() && !plan.double_buffer());
    /// assert_eq!(plan.launch().kernel(), "histogram_segmented_warp_i32");
    /// // One copy of 256 counters for each warp of the block.
    /// assert_eq!(plan.launch().shared_bytes(), plan.launch().threads() / 32 * 1024);
    /// // The planner's default stays the per-block kernel.
    /// let open = LaunchRequest::default();
    /// assert!(!plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?.warp_private());
    /// # Ok(()) }
    /// ```
    pub fn warp_private(&self) -> bool {
        self.warp_private
    }

    /// The kernel launch.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// // Blocks of 256 threads: the kernel meets a barrier at every piece of a segment.
    /// assert_eq!((plan.launch().kernel(), plan.launch().threads()), ("histogram_segmented_double_i32", 256));
    /// # Ok(()) }
    /// ```
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// The values' type.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// assert_eq!(plan.element(), InputType::I32);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// How values map to bins (every segment alike).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// assert_eq!(plan.binning(), Binning::integers(256));
    /// # Ok(()) }
    /// ```
    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// Segments.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// assert_eq!(plan.segments(), 4096);
    /// # Ok(()) }
    /// ```
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Counters of the output: `segments * bins`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// assert_eq!(plan.counters(), 4096 * 256); // the counts buffer, segment after segment
    /// # Ok(()) }
    /// ```
    pub fn counters(&self) -> u64 {
        self.segments * self.binning.nbins as u64
    }

    /// Why this plan, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::segmented::plan_segments_for;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let open = LaunchRequest::default();
    /// // 4096 histograms of 256 bins over 2^26 i32 values.
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
    /// let reason = plan.reason(&limits);
    /// assert!(reason.starts_with("4096 segments of 256 bins each (at most 58112 bins per segment"), "{reason}");
    /// assert!(reason.contains("2 copies keep the zeroing and flush per piece within a thirty-second of its values"));
    /// # Ok(()) }
    /// ```
    pub fn reason(&self, limits: &HistogramLimits) -> String {
        if self.warp_private {
            return format!(
                "{} segments of {} bins each, by the warp-private kernel as requested (at most {} bins per segment: one copy in a block of one warp): every warp counts an equal share of the values into {} of its own, flushing them into each segment it leaves with no block barrier (a warp waits only for its own loads and atomics); {} blocks of {} threads per SM ({} resident threads, {} per block) from the occupancy query",
                self.segments,
                self.binning.nbins,
                limits.block_capacity(),
                if self.launch.copies() == 1 {
                    "one private copy of the counters".to_string()
                } else {
                    format!("{} private copies of the counters", self.launch.copies())
                },
                self.blocks_per_sm,
                self.launch.threads(),
                self.blocks_per_sm * self.launch.threads(),
                format_bytes(self.launch.shared_bytes() as u64)
            );
        }
        format!(
            "{} segments of {} bins each (at most {} bins per segment: one block's shared memory); every block counts an equal share of the values, whatever the segments' lengths, flushing its counters into each segment it leaves; {}; {} copies keep the zeroing and flush per piece within a thirty-second of its values; {} blocks of {} threads per SM ({} resident threads) from the occupancy query",
            self.segments,
            self.binning.nbins,
            limits.block_capacity(),
            if self.double_buffer {
                "two sets of counters, alternating by piece: one barrier per piece (the next piece adds into the other set while this one is flushed)"
            } else {
                "one set of counters: two barriers per piece (after the adds, after the flush)"
            },
            self.launch.copies(),
            self.blocks_per_sm,
            self.launch.threads(),
            self.blocks_per_sm * self.launch.threads()
        )
    }
}

impl std::fmt::Display for SegmentsPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sets = if self.warp_private {
            ", counters per warp"
        } else if self.double_buffer {
            ", 2 sets of counters"
        } else {
            ""
        };
        write!(f, "segmented tier ({} segments x {} bins{sets}), {}", self.segments, self.binning.nbins, self.launch)
    }
}

/// Plans `segments` histograms of `element` values by `binning` over `values` values on a device
/// with `limits`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::segmented::plan_segments_for;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// // Segments of 16,384 values: 2 copies of 256 counters.
/// let plan = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(256), 4096, 1 << 26, &open)?;
/// assert_eq!((plan.launch().copies(), plan.counters()), (2, 4096 * 256));
/// // Segments of 1,000 values: one copy.
/// let plan = plan_segments_for(&limits, &model, InputType::U8, Binning::integers(256), 3, 3000, &open)?;
/// assert_eq!(plan.launch().copies(), 1);
/// // A segment's bins must fit one block; segments there must be.
/// let err = plan_segments_for(&limits, &model, InputType::I32, Binning::integers(58_113), 2, 100, &open).unwrap_err();
/// assert!(err.to_string().contains("histogram larger segments one launch each"), "{err}");
/// assert!(plan_segments_for(&limits, &model, InputType::I32, Binning::integers(4), 0, 100, &open).is_err());
/// # Ok(()) }
/// ```
pub fn plan_segments_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    element: InputType,
    binning: Binning,
    segments: u64,
    values: u64,
    request: &LaunchRequest,
) -> Result<SegmentsPlan> {
    check_bins(binning.nbins as usize)?;
    if request.packing.is_some() || request.global.is_some() || request.aggregate.is_some() {
        return Err(Error::InvalidArgument(
            "--packing, the global tier and --aggregate do not apply to segments (u32 counters in shared memory)"
                .into(),
        ));
    }
    if segments == 0 {
        return Err(Error::InvalidArgument("0 segments: use at least one".into()));
    }
    let bins = binning.nbins;
    if bins as u64 > limits.block_capacity() {
        return Err(Error::InvalidArgument(format!(
            "{bins} bins per segment: the segmented kernel keeps one segment's counters in one block's shared memory ({} bins on this device); histogram larger segments one launch each",
            limits.block_capacity()
        )));
    }
    if segments.checked_mul(bins as u64).is_none_or(|c| c > isize::MAX as u64 / 4) {
        return Err(Error::InvalidArgument(format!("{segments} segments of {bins} bins: too many counters")));
    }
    let per_segment = values.div_ceil(segments).max(1);
    let warp_private = uses_warp_private(request)?;
    let double_buffer = !warp_private && uses_double_buffer(limits, bins, request);
    let sets = if double_buffer { 2 } else { 1 };
    let what = format!("{segments} segmented histograms of {bins} bins");
    let shape = if warp_private {
        // One copy per warp unless the request asks for more: the flush of each piece of a
        // warp's share reads every copy, and a warp's pieces are short (its share of the values).
        let what = format!("{what}, their copies per warp");
        choose_shape_per_warp(occupancy, limits, &|t, c| kernel::warp_shared_bytes(bins, c, t), 1, request, &what)?
    } else {
        // Block barriers at every piece of a segment: smaller blocks keep the SM's loads going
        // while one of them waits.
        choose_shape_small_blocks(
            occupancy,
            limits,
            &|c| sets * kernel::shared_bytes(bins, c),
            max_copies_for(bins, per_segment),
            request,
            &what,
        )?
    };
    Ok(SegmentsPlan {
        launch: KernelLaunch::new(kernel_for(element, double_buffer, warp_private), shape, limits.sm_count),
        element,
        binning,
        segments,
        double_buffer,
        warp_private,
        blocks_per_sm: shape.blocks_per_sm,
    })
}

/// [`plan_segments_for`] on the opened device, with its occupancy query for the kernel.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::segmented::plan_segments;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, InputType};
/// let gpu = Gpu::open(0)?;
/// let plan =
///     plan_segments(&gpu, InputType::U16, Binning::integers(1024), 10_000, 1 << 28, &LaunchRequest::default())?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn plan_segments(
    gpu: &Gpu,
    element: InputType,
    binning: Binning,
    segments: u64,
    values: u64,
    request: &LaunchRequest,
) -> Result<SegmentsPlan> {
    let limits = HistogramLimits::of(gpu)?;
    let warp_private = uses_warp_private(request)?;
    let double_buffer = !warp_private && uses_double_buffer(&limits, binning.nbins, request);
    let kernel = kernel_for(element, double_buffer, warp_private);
    let occupancy = super::tuning::DriverOccupancy::new(gpu, kernel)?;
    plan_segments_for(&limits, &occupancy, element, binning, segments, values, request)
}

/// Enqueues the planned kernel on `stream`: counts each segment of `values` into its `bins`
/// counters of `counts` (`segments * bins` `u32`, segment after segment), without zeroing them.
/// Values must start 16-byte aligned (offsets 8-byte); nothing is launched for no values.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::device_values::DeviceValues;
/// use hopper_kernels::histogram::segmented::{DeviceSegments, Segments, launch_segments, plan_segments};
/// use hopper_kernels::histogram::segmented::segmented_histogram_cpu;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, InputType, Values};
/// let gpu = Gpu::open(0)?;
/// let v = [0u8, 1, 1, 3, 2, 2];
/// let (binning, offsets) = (Binning::integers(4), [0u64, 3, 3, 6]);
/// Segments::Offsets(&offsets).check(v.len() as u64)?; // the kernel does not check them
/// let plan = plan_segments(&gpu, InputType::U8, binning, 3, v.len() as u64, &LaunchRequest::default())?;
/// let (values, device_offsets) = (gpu.upload(&v)?, gpu.upload(&offsets)?);
/// let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
/// let segments = DeviceSegments::Offsets(device_offsets.as_view());
/// let input = DeviceValues::u8(&values.as_view());
/// launch_segments(&gpu, &plan, gpu.stream(), &input, &segments, &mut counts.as_view_mut())?;
/// let want = segmented_histogram_cpu(Values::U8(&v), &binning, Segments::Offsets(&offsets));
/// assert_eq!(gpu.download(&counts)?, want);
/// # Ok(()) }
/// ```
pub fn launch_segments(
    gpu: &Gpu,
    plan: &SegmentsPlan,
    stream: &Arc<CudaStream>,
    values: &DeviceValues<'_>,
    segments: &DeviceSegments<'_>,
    counts: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    if values.element() != plan.element {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} values, the buffer holds {}",
            plan.element.name(),
            values.element().name()
        )));
    }
    if segments.count() != plan.segments {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} segments, {} were given",
            plan.segments,
            segments.count()
        )));
    }
    check_output(counts.len(), plan.counters(), "counts")?;
    let n = values.len();
    check_count(n)?;
    if n == 0 {
        return Ok(());
    }
    check_aligned(values.bytes(), stream, "the values")?;
    let func = plan.launch.prepared(gpu)?;
    let Binning { nbins, lo, hi, scale } = plan.binning;
    let (count, copies) = (plan.segments, plan.launch.copies());
    let mut launch = stream.launch_builder(&func);
    launch.arg(values.bytes()).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale).arg(&count);
    match segments {
        DeviceSegments::Equal { len, .. } => {
            if *len == 0 {
                return Err(Error::InvalidArgument("segments of 0 values: use a length of at least 1".into()));
            }
            // With equal segments the kernel never reads the offsets pointer: any will do.
            launch.arg(len).arg(values.bytes());
        }
        DeviceSegments::Offsets(offsets) => {
            launch.arg(&0u64).arg(offsets);
        }
    }
    launch.arg(&copies);
    // SAFETY: kernel contract (kernels::histogram::segmented): n <= u32::MAX values, 16-byte
    // aligned (checked); counts holds segments * nbins u32 (checked); offsets (when read) hold
    // segments + 1 u64 of a cudarc allocation (8-byte aligned); any offset values are safe (the
    // kernel clamps them); copies is a power of two up to 32 and the launch provides nbins *
    // copies * 4 bytes of shared memory, twice that for the two-set kernel, that for each warp of
    // the block for the warp-private kernel (the plan: warp_shared_bytes).
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// One histogram per segment of `values` on the GPU, segment after segment (`segments.count() *
/// bins` counts), on the GPU's stream.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, Values, segmented::{Segments, segmented_histogram}};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let v = [0u8, 1, 1, 3, 2, 2];
/// let counts = segmented_histogram(&gpu, Values::U8(&v), Binning::integers(4), Segments::Offsets(&[0, 3, 3, 6]))?;
/// assert_eq!(counts, [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1]);
/// # Ok(()) }
/// ```
pub fn segmented_histogram(
    gpu: &Gpu,
    values: Values<'_>,
    binning: Binning,
    segments: Segments<'_>,
) -> Result<Vec<u32>> {
    let n = values.len() as u64;
    segments.check(n)?;
    let plan = plan_segments(gpu, values.element(), binning, segments.count(), n, &LaunchRequest::default())?;
    let input = upload_values(gpu, values, 4 * plan.counters() + 8 * (segments.count() + 1), "a segmented histogram")?;
    let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
    let values = DeviceValues::from_bytes(input.as_view(), plan.element, n)?;
    let offsets;
    let device = match segments {
        Segments::Equal { count, len } => DeviceSegments::Equal { count, len },
        Segments::Offsets(o) => {
            offsets = gpu.upload(o)?;
            DeviceSegments::Offsets(offsets.as_view())
        }
    };
    launch_segments(gpu, &plan, gpu.stream(), &values, &device, &mut counts.as_view_mut())?;
    gpu.synchronize()?;
    gpu.download(&counts)
}

/// The segments' histograms on the CPU: `count * bins` counts, segment after segment.
///
/// ```
/// use hopper_kernels::histogram::{Binning, Values, segmented::{Segments, segmented_histogram_cpu}};
/// let v = [0i32, 1, 1, 3, 2, 2, 9];
/// let b = Binning::integers(4);
/// // Segments 0..3, 3..3 (empty) and 3..7; 9 is clamped into bin 3.
/// let counts = segmented_histogram_cpu(Values::I32(&v), &b, Segments::Offsets(&[0, 3, 3, 7]));
/// assert_eq!(counts, [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2]);
/// let equal = segmented_histogram_cpu(Values::I32(&v), &b, Segments::Equal { count: 3, len: 3 });
/// assert_eq!(equal, [1, 2, 0, 0, 0, 0, 2, 1, 0, 0, 0, 1]);
/// ```
pub fn segmented_histogram_cpu(values: Values<'_>, binning: &Binning, segments: Segments<'_>) -> Vec<u32> {
    let bins = binning.nbins as usize;
    let n = values.len() as u64;
    let count = segments.count();
    let off = |s: u64| match segments {
        Segments::Equal { len, .. } => (s.saturating_mul(len)).min(n),
        Segments::Offsets(o) => o[s as usize].min(n),
    };
    let mut counts = vec![0u32; count as usize * bins];
    let mut s = 0u64;
    for_each_bin(values, binning, |i, bin| {
        let i = i as u64;
        while s < count && off(s + 1) <= i {
            s += 1;
        }
        if let Some(b) = bin
            && s < count
            && off(s) <= i
        {
            counts[s as usize * bins + b as usize] += 1;
        }
    });
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::tuning::ModelOccupancy;

    const H100: HistogramLimits = HistogramLimits::H100;

    #[test]
    fn segments_are_checked_against_the_input() {
        assert!(Segments::Offsets(&[0, 2, 5]).check(5).is_ok());
        assert!(Segments::Offsets(&[0]).check(0).unwrap_err().to_string().contains("at least two"));
        assert!(Segments::Offsets(&[1, 5]).check(5).unwrap_err().to_string().contains("from 0 to the input's 5"));
        assert!(Segments::Offsets(&[0, 4, 3, 5]).check(5).unwrap_err().to_string().contains("offset 2 (3) is below"));
        assert!(Segments::Equal { count: 3, len: 4 }.check(13).unwrap_err().to_string().contains("cover 12 of the 13"));
        assert_eq!(Segments::equal_count(10, 4).unwrap(), Segments::Equal { count: 4, len: 3 });
        assert_eq!(Segments::equal_len(10, 4).unwrap(), Segments::Equal { count: 3, len: 4 });
        assert!(Segments::equal_count(10, 0).is_err() && Segments::equal_len(10, 0).is_err());
    }

    #[test]
    fn the_cpu_reference_counts_each_segment_and_leaves_empty_ones_zero() {
        let v = [0i32, 1, 1, 3, 2, 2, 9];
        let b = Binning::integers(4);
        let counts = segmented_histogram_cpu(Values::I32(&v), &b, Segments::Offsets(&[0, 3, 3, 7]));
        assert_eq!(counts, [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2]);
        let equal = segmented_histogram_cpu(Values::I32(&v), &b, Segments::Equal { count: 3, len: 3 });
        assert_eq!(equal, [1, 2, 0, 0, 0, 0, 2, 1, 0, 0, 0, 1]);
        let past_end = segmented_histogram_cpu(Values::I32(&v), &b, Segments::Equal { count: 4, len: 3 });
        assert_eq!(&past_end[12..], [0, 0, 0, 0]);
    }

    #[test]
    fn the_warp_private_kernel_runs_only_on_request_with_counters_sized_per_warp() {
        let occupancy = ModelOccupancy { limits: H100, registers: 40 };
        let warp = LaunchRequest { warp_private: Some(true), ..Default::default() };
        let plan = |element, bins, segments, values, request: &LaunchRequest| {
            plan_segments_for(&H100, &occupancy, element, Binning::integers(bins), segments, values, request)
        };
        let p = plan(InputType::I32, 256, 4096, 1 << 26, &warp).unwrap();
        assert!(p.warp_private() && !p.double_buffer());
        assert_eq!((p.launch().kernel(), p.launch().copies()), ("histogram_segmented_warp_i32", 1));
        assert_eq!(p.launch().shared_bytes() as u64, kernel::warp_shared_bytes(256, 1, p.launch().threads()));
        // 40 registers: 25 blocks of 64 threads (1,600 resident threads), where blocks of 256 keep
        // 1,536: with no block barriers small blocks cost nothing, and they waste fewer registers.
        assert_eq!((p.launch().threads(), p.blocks_per_sm), (64, 25));
        assert!(
            p.to_string().starts_with(
                "segmented tier (4096 segments x 256 bins, counters per warp), histogram_segmented_warp_i32"
            ),
            "{p}"
        );
        assert!(p.reason(&H100).contains("no block barrier"), "{}", p.reason(&H100));
        assert!(!plan(InputType::I32, 256, 4096, 1 << 26, &LaunchRequest::default()).unwrap().warp_private());
        for (element, name) in InputType::ALL.into_iter().zip(kernel::WARP_KERNELS) {
            assert_eq!(plan(element, 256, 3, 1000, &warp).unwrap().launch().kernel(), name);
        }
        // The request fixes threads and copies per warp: 16 warps x 4 copies x 1 KiB.
        let fixed = LaunchRequest { threads_per_block: Some(512), copies: Some(4), ..warp };
        let p = plan(InputType::U8, 256, 4096, 1 << 26, &fixed).unwrap();
        assert_eq!((p.launch().threads(), p.launch().copies(), p.launch().shared_bytes()), (512, 4, 64 << 10));
        // Many bins: blocks of fewer warps hold their copies (16,384 bins: 64 KiB a warp).
        let p = plan(InputType::I32, 16_384, 64, 1 << 20, &warp).unwrap();
        assert_eq!((p.launch().threads(), p.launch().shared_bytes()), (32, 64 << 10));
        // The most bins of any segment: one warp's copy fills a block.
        let p = plan(InputType::I32, 58_112, 2, 1 << 20, &warp).unwrap();
        assert_eq!((p.launch().threads(), p.launch().shared_bytes()), (32, 58_112 * 4));
        // A fixed block whose warps' counters do not fit, and requests that exclude each other.
        let err = plan(InputType::I32, 16_384, 64, 1 << 20, &LaunchRequest { threads_per_block: Some(1024), ..warp });
        assert!(err.unwrap_err().to_string().contains("copies per warp: no block of 1024 threads"));
        let both = LaunchRequest { double_buffer: Some(true), ..warp };
        assert!(plan(InputType::I32, 256, 4096, 1 << 26, &both).unwrap_err().to_string().contains("--double-buffer"));
        let off = LaunchRequest { warp_private: Some(false), double_buffer: Some(false), ..Default::default() };
        assert_eq!(
            plan(InputType::I32, 256, 4096, 1 << 26, &off).unwrap().launch().kernel(),
            "histogram_segmented_i32"
        );
    }

    #[test]
    fn copies_stay_within_a_thirty_second_of_a_segments_values() {
        assert_eq!(max_copies_for(256, 16_384), 2);
        assert_eq!(max_copies_for(256, 1 << 20), 32);
        assert_eq!(max_copies_for(256, 100), 1);
        let occupancy = ModelOccupancy { limits: H100, registers: 40 };
        let p = plan_segments_for(
            &H100,
            &occupancy,
            InputType::I32,
            Binning::integers(256),
            4096,
            1 << 26,
            &LaunchRequest::default(),
        )
        .unwrap();
        assert_eq!((p.launch().copies(), p.counters()), (2, 4096 * 256));
        assert!(p.to_string().starts_with("segmented tier (4096 segments x 256 bins, 2 sets of counters)"), "{p}");
        assert!(p.double_buffer() && p.reason(&H100).contains("one barrier per piece"), "{}", p.reason(&H100));
        let single = LaunchRequest { double_buffer: Some(false), ..Default::default() };
        let s = plan_segments_for(&H100, &occupancy, InputType::I32, Binning::integers(256), 4096, 1 << 26, &single);
        let s = s.unwrap();
        assert!(!s.double_buffer() && s.reason(&H100).contains("two barriers per piece"));
        assert_eq!(2 * s.launch().shared_bytes(), p.launch().shared_bytes());
        let err = plan_segments_for(
            &H100,
            &occupancy,
            InputType::I32,
            Binning::integers(58_113),
            2,
            100,
            &LaunchRequest::default(),
        );
        assert!(err.unwrap_err().to_string().contains("one launch each"));
        assert!(
            plan_segments_for(
                &H100,
                &occupancy,
                InputType::I32,
                Binning::integers(4),
                0,
                100,
                &LaunchRequest::default()
            )
            .is_err()
        );
    }
}
