//! Interleaved multi-channel histograms (CUB's `MultiHistogramEven`: RGBA pixels read once, one
//! histogram per channel) and one-channel histograms through the same kernels, with packed
//! counters past one block's capacity: planner, launch and CPU reference for
//! `kernels::histogram::channels`.
//!
//! Every channel is binned like a one-channel histogram of its type (integers: value `v` in bin
//! `v`, clamped; `f32`: even bins over a range), with the same `bins` for every channel. The
//! counters of the `active` channels (RGB of RGBA: 3 of 4) live in one block's shared memory;
//! with one channel they may be packed two (16-bit) or four (8-bit) to a word, so that one block
//! holds twice or four times the bins (116,224 or 232,448 on an H100 or H200), counts staying exact
//! through every carry (`kernels::histogram::packed`).

use super::device_values::{DeviceValues, check_aligned, check_count, check_output, upload_values};
use super::tuning::{KernelLaunch, LaunchRequest, MAX_COPIES, Occupancy, choose_shape};
use super::weighted::{for_each_bin, type_index};
use super::{Binning, HistogramLimits, InputType, Values, check_bins};
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use crate::histogram::BucketScratch;
use crate::histogram::stream::ChunkKernel;
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, PushKernelArg};
use kernels::histogram::channels::{self as kernel, MAX_CHANNELS, MAX_PACKING};
use kernels::histogram::packed;
use std::sync::Arc;

/// How values interleave: `channels` channels (value `i` of channel `i % channels`), of which the
/// first `active` get a histogram.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, Values, channels::{ChannelLayout, channels_histogram_cpu}};
/// // RGB of RGBA pixels: values 0, 4, 8... are red, 3, 7, 11... alpha (no histogram).
/// let rgb = ChannelLayout::new(4, 3)?;
/// let pixels = [255u8, 0, 0, 255, 0, 255, 0, 128];
/// let counts = channels_histogram_cpu(Values::U8(&pixels), &Binning::integers(256), rgb, 0);
/// assert_eq!(counts.len(), 3 * 256);
/// assert_eq!((counts[255], counts[256 + 255], counts[2 * 256]), (1, 1, 2));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLayout {
    channels: u32,
    active: u32,
}

impl ChannelLayout {
    /// `channels` from 1 to 4, `active` from 1 to `channels`.
    ///
    /// ```
    /// use hopper_kernels::histogram::channels::ChannelLayout;
    /// let rgb_of_rgba = ChannelLayout::new(4, 3).unwrap();
    /// assert_eq!((rgb_of_rgba.channels(), rgb_of_rgba.active()), (4, 3));
    /// assert!(ChannelLayout::new(5, 5).is_err());
    /// ```
    pub fn new(channels: u32, active: u32) -> Result<Self> {
        if channels == 0 || channels > MAX_CHANNELS {
            return Err(Error::InvalidArgument(format!(
                "{channels} channels: the kernels take 1 to {MAX_CHANNELS} interleaved channels"
            )));
        }
        if active == 0 || active > channels {
            return Err(Error::InvalidArgument(format!(
                "{active} active channels of {channels}: use 1 to {channels} (the first ones get histograms)"
            )));
        }
        Ok(Self { channels, active })
    }

    /// One channel: a plain histogram.
    pub const ONE: Self = Self { channels: 1, active: 1 };

    /// Interleaved channels.
    ///
    /// ```
    /// use hopper_kernels::histogram::channels::ChannelLayout;
    /// assert_eq!(ChannelLayout::new(4, 3).unwrap().channels(), 4);
    /// assert_eq!(ChannelLayout::ONE.channels(), 1);
    /// ```
    pub fn channels(&self) -> u32 {
        self.channels
    }

    /// Channels with a histogram, the first ones.
    ///
    /// ```
    /// use hopper_kernels::histogram::channels::ChannelLayout;
    /// assert_eq!(ChannelLayout::new(4, 3).unwrap().active(), 3);
    /// let err = ChannelLayout::new(3, 4).unwrap_err().to_string();
    /// assert!(err.contains("4 active channels of 3: use 1 to 3"), "{err}");
    /// ```
    pub fn active(&self) -> u32 {
        self.active
    }
}

/// A planned channels launch, built only by [`plan_channels_for`] / [`plan_channels`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let rgba = ChannelLayout::new(4, 4)?;
/// let plan =
///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
/// assert_eq!(
///     plan.to_string(),
///     "channels tier (4 of 4 channels), histogram_channels4_u8: 132 blocks x 1024 threads, \
///      128.00 KiB shared per block (32 copies)"
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelsPlan {
    launch: KernelLaunch,
    element: InputType,
    binning: Binning,
    layout: ChannelLayout,
    packing: u32,
    blocks_per_sm: u32,
}

impl ChannelsPlan {
    /// The kernel launch.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let rgba = ChannelLayout::new(4, 4)?;
    /// let plan =
    ///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
    /// assert_eq!(plan.launch().kernel(), "histogram_channels4_u8");
    /// // 32 copies of 4 x 256 u32 counters.
    /// assert_eq!(plan.launch().shared_bytes(), 32 * 4 * 256 * 4);
    /// # Ok(()) }
    /// ```
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// The values' type.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let rgba = ChannelLayout::new(4, 4)?;
    /// let plan =
    ///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
    /// assert_eq!(plan.element(), InputType::U8);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// How values map to bins (every channel alike).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, binning_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// // Two interleaved f32 channels (x, y, x, y...), 64 bins each over [-1, 1].
    /// let binning = binning_for(InputType::F32, 64, Some((-1.0, 1.0)))?;
    /// let xy = ChannelLayout::new(2, 2)?;
    /// let plan = plan_channels_for(&limits, &model, InputType::F32, binning, xy, &LaunchRequest::default())?;
    /// assert_eq!(plan.binning(), binning);
    /// # Ok(()) }
    /// ```
    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// The channels.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let rgb = ChannelLayout::new(4, 3)?;
    /// let plan =
    ///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgb, &LaunchRequest::default())?;
    /// assert_eq!(plan.layout(), rgb);
    /// # Ok(()) }
    /// ```
    pub fn layout(&self) -> ChannelLayout {
        self.layout
    }

    /// Counters per word, as `log2`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let one = ChannelLayout::ONE;
    /// let packing = |bins| {
    ///     plan_channels_for(&limits, &model, InputType::I32, Binning::integers(bins), one, &LaunchRequest::default())
    ///         .map(|p| p.packing())
    /// };
    /// // u32 counters up to one block's 58,112; then 16-bit digits up to 116,224; then 8-bit.
    /// assert_eq!((packing(58_112)?, packing(58_113)?, packing(116_225)?), (0, 1, 2));
    /// # Ok(()) }
    /// ```
    pub fn packing(&self) -> u32 {
        self.packing
    }

    /// Counters of the output: `active * bins`, channel after channel.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let rgb = ChannelLayout::new(4, 3)?;
    /// let plan =
    ///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgb, &LaunchRequest::default())?;
    /// assert_eq!(plan.counters(), 3 * 256);
    /// # Ok(()) }
    /// ```
    pub fn counters(&self) -> u64 {
        self.layout.active as u64 * self.binning.nbins as u64
    }

    /// Why this plan, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let one = ChannelLayout::ONE;
    /// let binning = Binning::integers(65_536);
    /// let plan = plan_channels_for(&limits, &model, InputType::I32, binning, one, &LaunchRequest::default())?;
    /// let reason = plan.reason(&limits);
    /// let packed = "65536 counters exceed one block's 58112 u32 counters, so they are packed 2 to a word";
    /// assert!(reason.contains(packed), "{reason}");
    /// # Ok(()) }
    /// ```
    pub fn reason(&self, limits: &HistogramLimits) -> String {
        let counters = self.counters();
        let fit = match self.packing {
            0 => format!("{counters} u32 counters x {} copies fit in one block's shared memory", self.launch.copies()),
            p => format!(
                "{counters} counters exceed one block's {} u32 counters, so they are packed {} to a word ({}-bit digits, carries corrected exactly)",
                limits.block_capacity(),
                packed::per_word(p),
                packed::digit_bits(p)
            ),
        };
        format!(
            "{} of {} channel(s) read at once; {fit}; {} blocks of {} threads per SM ({} resident threads) is the occupancy query's best shape, then the most copies; the input loop keeps the next 32 bytes per thread in flight while it counts",
            self.layout.active,
            self.layout.channels,
            self.blocks_per_sm,
            self.launch.threads(),
            self.blocks_per_sm * self.launch.threads()
        )
    }
}

impl std::fmt::Display for ChannelsPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.layout.channels == 1 {
            write!(f, "channels tier (one channel")?;
        } else {
            write!(f, "channels tier ({} of {} channels", self.layout.active, self.layout.channels)?;
        }
        if self.packing > 0 {
            write!(f, ", {}-bit packed counters", packed::digit_bits(self.packing))?;
        }
        write!(f, "), {}", self.launch)
    }
}

/// Plans a histogram of each active channel of interleaved `element` values by `binning`: `u32`
/// counters where `active * bins` fit one block, else (one channel only) the narrowest packing
/// that fits; `request` can fix the packing, threads, copies and blocks per SM.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels_for};
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// // RGBA pixels: one kernel reads all four channels, 32 copies of their counters per block.
/// let rgba = ChannelLayout::new(4, 4)?;
/// let plan = plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgba, &open)?;
/// assert_eq!((plan.launch().kernel(), plan.counters(), plan.launch().copies()), ("histogram_channels4_u8", 1024, 32));
/// // One channel past one block's u32 counters: 16-bit packed counters.
/// let one = ChannelLayout::ONE;
/// let plan = plan_channels_for(&limits, &model, InputType::I32, Binning::integers(65_536), one, &open)?;
/// assert_eq!((plan.launch().kernel(), plan.packing()), ("histogram_packed16_i32", 1));
/// // Packing is for one channel; past 8-bit digits a block holds no more.
/// let two = ChannelLayout::new(2, 2)?;
/// let err = plan_channels_for(&limits, &model, InputType::U16, Binning::integers(65_536), two, &open).unwrap_err();
/// assert!(err.to_string().contains("packing applies to one channel only"), "{err}");
/// let err = plan_channels_for(&limits, &model, InputType::I32, Binning::integers(232_449), one, &open).unwrap_err();
/// assert!(err.to_string().contains("use the sorted tier"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan_channels_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    element: InputType,
    binning: Binning,
    layout: ChannelLayout,
    request: &LaunchRequest,
) -> Result<ChannelsPlan> {
    check_bins(binning.nbins as usize)?;
    if request.global.is_some() || request.aggregate.is_some() {
        return Err(Error::InvalidArgument(
            "the global tier and --aggregate do not apply to the channels kernels (shared counters only)".into(),
        ));
    }
    let counters = layout.active as u64 * binning.nbins as u64;
    let capacity = limits.block_capacity();
    let packing = match request.packing {
        Some(p) if p > MAX_PACKING => {
            return Err(Error::InvalidArgument(format!("packing {p}: use 0 (u32 counters), 1 (16-bit) or 2 (8-bit)")));
        }
        Some(p) => p,
        None => packed::narrowest_packing(counters, 0, capacity).unwrap_or(MAX_PACKING),
    };
    if !kernel::supported(layout.channels, packing) {
        return Err(Error::InvalidArgument(format!(
            "{} channels with packed counters: packing applies to one channel only ({counters} counters of {} channels need {} as u32, a block holds {})",
            layout.channels,
            layout.active,
            format_bytes(4 * counters),
            format_bytes(limits.max_shared_per_block_optin as u64)
        )));
    }
    if !packed::fits(counters, packing, capacity) {
        return Err(Error::InvalidArgument(format!(
            "{counters} counters in {}-bit digits need {} of shared memory, but a block of this device gets at most {}{}",
            packed::digit_bits(packing),
            format_bytes(packed::counter_bytes(counters as u32, packing, 1)),
            format_bytes(limits.max_shared_per_block_optin as u64),
            if layout.channels == 1 {
                ": use the sorted tier (a plain histogram)"
            } else {
                ": use fewer bins or channels"
            }
        )));
    }
    let counters = counters as u32;
    let kernel = kernel::kernel(layout.channels, packing, type_index(element)).expect("supported above");
    let shape = choose_shape(
        occupancy,
        limits,
        &|c| kernel::shared_bytes(counters, packing, c),
        MAX_COPIES,
        request,
        &format!("{counters} counters of {} channel(s)", layout.active),
    )?;
    Ok(ChannelsPlan {
        launch: KernelLaunch::new(kernel, shape, limits.sm_count),
        element,
        binning,
        layout,
        packing,
        blocks_per_sm: shape.blocks_per_sm,
    })
}

/// [`plan_channels_for`] on the opened device, with its occupancy query for the kernel that runs.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::channels::{ChannelLayout, plan_channels};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let gpu = Gpu::open(0)?;
/// let rgba = ChannelLayout::new(4, 4)?;
/// let plan = plan_channels(&gpu, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
/// println!("{plan}: {}", plan.reason(&HistogramLimits::of(&gpu)?));
/// # Ok(()) }
/// ```
pub fn plan_channels(
    gpu: &Gpu,
    element: InputType,
    binning: Binning,
    layout: ChannelLayout,
    request: &LaunchRequest,
) -> Result<ChannelsPlan> {
    let limits = HistogramLimits::of(gpu)?;
    // The packing (and so the kernel) does not depend on the occupancy: plan once on a model to
    // learn which kernel runs, then again on the driver's query for that kernel.
    let model = super::tuning::model_before_device(limits);
    let kernel = plan_channels_for(&limits, &model, element, binning, layout, request)?.launch.kernel();
    let occupancy = super::tuning::DriverOccupancy::new(gpu, kernel)?;
    plan_channels_for(&limits, &occupancy, element, binning, layout, request)
}

/// Enqueues the planned kernel on `stream`: counts each active channel of `values` (value `i` of
/// channel `(phase + i) % channels`) into `counts` (`active * bins` `u32`, channel after channel),
/// without zeroing them first. Values must start 16-byte aligned; nothing is launched for none.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::channels::{ChannelLayout, channels_histogram_cpu, launch_channels, plan_channels};
/// use hopper_kernels::histogram::device_values::DeviceValues;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, InputType, Values};
/// let gpu = Gpu::open(0)?;
/// let (rgb, binning) = (ChannelLayout::new(4, 3)?, Binning::integers(256));
/// let plan = plan_channels(&gpu, InputType::U8, binning, rgb, &LaunchRequest::default())?;
/// let pixels: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
/// let values = gpu.upload(&pixels)?;
/// let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
/// launch_channels(&gpu, &plan, gpu.stream(), &DeviceValues::u8(&values.as_view()), 0, &mut counts.as_view_mut())?;
/// assert_eq!(gpu.download(&counts)?, channels_histogram_cpu(Values::U8(&pixels), &binning, rgb, 0));
/// # Ok(()) }
/// ```
pub fn launch_channels(
    gpu: &Gpu,
    plan: &ChannelsPlan,
    stream: &Arc<CudaStream>,
    values: &DeviceValues<'_>,
    phase: u32,
    counts: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    if values.element() != plan.element {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} values, the buffer holds {}",
            plan.element.name(),
            values.element().name()
        )));
    }
    if phase >= plan.layout.channels {
        return Err(Error::InvalidArgument(format!(
            "phase {phase}: the first value's channel is below {}",
            plan.layout.channels
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
    let (active, copies, packing) = (plan.layout.active, plan.launch.copies(), plan.packing);
    let mut launch = stream.launch_builder(&func);
    launch.arg(values.bytes()).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
    if packing == 0 {
        launch.arg(&active).arg(&phase).arg(&copies);
    } else {
        // Every bin in one pass: the window is the whole binning.
        launch.arg(&copies).arg(&packing).arg(&0u32).arg(&nbins);
    }
    // SAFETY: kernel contract (kernels::histogram::channels): n <= u32::MAX values, 16-byte
    // aligned; counts holds active * nbins u32; the kernel is the one for this channel count and
    // packing (supported), active <= channels, phase < channels (checked); copies is a power of
    // two up to 32 and the launch provides shared_bytes(counters, packing, copies) (the plan).
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// One histogram per active channel of interleaved `values` (whole pixels: a multiple of
/// `channels` values), on the GPU's stream; channel after channel, `bins` counts each.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, Values, channels::{ChannelLayout, channels_histogram}};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let rgba = [255u8, 0, 0, 255, 0, 255, 0, 128];
/// let counts = channels_histogram(&gpu, Values::U8(&rgba), Binning::integers(256), ChannelLayout::new(4, 3)?)?;
/// assert_eq!((counts[255], counts[256], counts[256 + 255]), (1, 1, 1));
/// # Ok(()) }
/// ```
pub fn channels_histogram(gpu: &Gpu, values: Values<'_>, binning: Binning, layout: ChannelLayout) -> Result<Vec<u32>> {
    check_whole_pixels(values.len() as u64, layout)?;
    let plan = plan_channels(gpu, values.element(), binning, layout, &LaunchRequest::default())?;
    let input = upload_values(gpu, values, 4 * plan.counters(), "a channels histogram")?;
    let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
    let values = DeviceValues::from_bytes(input.as_view(), plan.element, values.len() as u64)?;
    launch_channels(gpu, &plan, gpu.stream(), &values, 0, &mut counts.as_view_mut())?;
    gpu.synchronize()?;
    gpu.download(&counts)
}

/// Fails unless `n` values are whole pixels of `layout`'s channels.
///
/// ```
/// use hopper_kernels::histogram::channels::{ChannelLayout, check_whole_pixels};
/// let rgba = ChannelLayout::new(4, 4).unwrap();
/// assert!(check_whole_pixels(12, rgba).is_ok());
/// let err = check_whole_pixels(13, rgba).unwrap_err().to_string();
/// assert_eq!(err, "invalid argument: 13 values are not whole pixels of 4 channels (1 left over)");
/// ```
pub fn check_whole_pixels(n: u64, layout: ChannelLayout) -> Result<()> {
    if !n.is_multiple_of(layout.channels as u64) {
        return Err(Error::InvalidArgument(format!(
            "{n} values are not whole pixels of {} channels ({} left over)",
            layout.channels,
            n % layout.channels as u64
        )));
    }
    Ok(())
}

/// The channels' histograms on the CPU (value `i` of channel `(phase + i) % channels`), as the
/// kernels count them: `active * bins` counts, channel after channel.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, Values, channels::{ChannelLayout, channels_histogram_cpu}};
/// let v = [0u8, 1, 2, 3, 4, 5, 255, 7, 8];
/// let layout = ChannelLayout::new(3, 2)?; // 3 channels, histograms of the first 2
/// // Channel 0: 0, 3, 255 (clamped into bin 3); channel 1: 1, 4, 7.
/// let counts = channels_histogram_cpu(Values::U8(&v), &Binning::integers(4), layout, 0);
/// assert_eq!(counts, [1, 0, 0, 2, 0, 1, 0, 2]);
/// // Phase 2: value 0 is channel 2 (no histogram); channel 0 is 1, 4, 7; channel 1 is 2, 5, 8.
/// let shifted = channels_histogram_cpu(Values::U8(&v), &Binning::integers(4), layout, 2);
/// assert_eq!(shifted, [0, 1, 0, 2, 0, 0, 1, 2]);
/// # Ok(()) }
/// ```
pub fn channels_histogram_cpu(values: Values<'_>, binning: &Binning, layout: ChannelLayout, phase: u32) -> Vec<u32> {
    let bins = binning.nbins as usize;
    let mut counts = vec![0u32; layout.active as usize * bins];
    for_each_bin(values, binning, |i, bin| {
        let c = kernel::channel_of(i as u64, phase, layout.channels);
        if let Some(b) = bin
            && c < layout.active
        {
            counts[c as usize * bins + b as usize] += 1;
        }
    });
    counts
}

/// Counting channels as a [`ChunkKernel`]: the chunks of a streamed file
/// ([`crate::histogram::stream::histogram_file_with`]), each with the phase of its first value.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, plan_channels_for};
/// use hopper_kernels::histogram::stream::ChunkKernel;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let rgb = ChannelLayout::new(4, 3)?;
/// let plan =
///     plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgb, &LaunchRequest::default())?;
/// let kernel = ChannelsChunks { plan: &plan };
/// assert_eq!((kernel.element(), kernel.counters()), (InputType::U8, 768));
/// # Ok(()) }
/// ```
///
/// Streaming a file of RGBA pixels on the GPU:
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, check_whole_pixels, plan_channels};
/// use hopper_kernels::histogram::stream::{StreamOptions, histogram_file_with};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, InputType};
/// use hopper_kernels::io::{DataFile, ElementType};
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// let file = DataFile::open(Path::new("frames.rgba"), Some(ElementType::U8))?;
/// let rgba = ChannelLayout::new(4, 4)?;
/// check_whole_pixels(file.len(), rgba)?;
/// let plan = plan_channels(&gpu, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
/// let report =
///     histogram_file_with(&gpu, &ChannelsChunks { plan: &plan }, &file, StreamOptions::default(), &mut |_| {})?;
/// let alpha = &report.counts[3 * 256..];
/// println!("opaque pixels: {}", alpha[255]);
/// # Ok(()) }
/// ```
pub struct ChannelsChunks<'a> {
    /// The plan.
    pub plan: &'a ChannelsPlan,
}

impl ChunkKernel for ChannelsChunks<'_> {
    fn element(&self) -> InputType {
        self.plan.element
    }

    fn counters(&self) -> usize {
        self.plan.counters() as usize
    }

    fn count(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        chunk: &CudaSlice<u8>,
        first: u64,
        n: u64,
        counts: &mut CudaSlice<u32>,
        _scratch: &mut Option<BucketScratch>,
    ) -> Result<()> {
        let values = DeviceValues::from_bytes(chunk.as_view(), self.plan.element, n)?;
        let phase = (first % self.plan.layout.channels as u64) as u32;
        launch_channels(gpu, self.plan, stream, &values, phase, &mut counts.as_view_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::tuning::ModelOccupancy;

    const H100: HistogramLimits = HistogramLimits::H100;

    fn plan(bins: u32, layout: ChannelLayout, element: InputType, request: LaunchRequest) -> Result<ChannelsPlan> {
        let occupancy = ModelOccupancy { limits: H100, registers: 32 };
        plan_channels_for(&H100, &occupancy, element, Binning::integers(bins), layout, &request)
    }

    #[test]
    fn layouts_are_checked() {
        assert!(ChannelLayout::new(0, 0).unwrap_err().to_string().contains("1 to 4"));
        assert!(ChannelLayout::new(3, 4).unwrap_err().to_string().contains("4 active channels of 3"));
        assert!(check_whole_pixels(12, ChannelLayout::new(4, 4).unwrap()).is_ok());
        assert!(
            check_whole_pixels(13, ChannelLayout::new(4, 4).unwrap()).unwrap_err().to_string().contains("1 left over")
        );
    }

    #[test]
    fn rgba_u8_takes_the_four_channel_kernel_with_lane_private_copies() {
        let p = plan(256, ChannelLayout::new(4, 4).unwrap(), InputType::U8, LaunchRequest::default()).unwrap();
        assert_eq!(p.launch().kernel(), "histogram_channels4_u8");
        // 32 registers: 2048 threads per SM in two blocks of 1024, whose 16 copies (64 KiB each)
        // fit beside each other where 32 (128 KiB) would leave one block per SM.
        assert_eq!((p.counters(), p.packing(), p.launch().copies()), (1024, 0, 16));
        assert_eq!((p.launch().threads(), p.launch().blocks()), (1024, 2 * 132));
        assert!(p.to_string().starts_with("channels tier (4 of 4 channels), histogram_channels4_u8"), "{p}");
        let rgb = plan(256, ChannelLayout::new(4, 3).unwrap(), InputType::U8, LaunchRequest::default()).unwrap();
        assert_eq!(rgb.counters(), 768);
    }

    #[test]
    fn one_channel_past_one_block_packs_its_counters() {
        let one = ChannelLayout::ONE;
        assert_eq!(plan(58_112, one, InputType::I32, LaunchRequest::default()).unwrap().packing(), 0);
        let p = plan(65_536, one, InputType::I32, LaunchRequest::default()).unwrap();
        assert_eq!(
            (p.packing(), p.launch().kernel(), p.launch().shared_bytes()),
            (1, "histogram_packed16_i32", 128 << 10)
        );
        assert!(
            p.to_string().starts_with("channels tier (one channel, 16-bit packed counters), histogram_packed16_i32"),
            "{p}"
        );
        assert!(p.reason(&H100).contains("packed 2 to a word (16-bit digits"), "{}", p.reason(&H100));
        assert_eq!(plan(116_224, one, InputType::I32, LaunchRequest::default()).unwrap().packing(), 1);
        assert_eq!(plan(116_225, one, InputType::I32, LaunchRequest::default()).unwrap().packing(), 2);
        let err = plan(232_449, one, InputType::I32, LaunchRequest::default()).unwrap_err().to_string();
        assert!(err.contains("sorted tier"), "{err}");
        let forced = LaunchRequest { packing: Some(2), ..Default::default() };
        assert_eq!(plan(256, one, InputType::U8, forced).unwrap().launch().kernel(), "histogram_packed_u8");
        let forced = LaunchRequest { packing: Some(1), ..Default::default() };
        assert_eq!(plan(256, one, InputType::F32, forced).unwrap().launch().kernel(), "histogram_packed16_f32");
        let multi = plan(65_536, ChannelLayout::new(2, 2).unwrap(), InputType::U16, LaunchRequest::default());
        assert!(multi.unwrap_err().to_string().contains("packing applies to one channel only"));
        assert!(plan(256, one, InputType::U8, LaunchRequest { packing: Some(3), ..Default::default() }).is_err());
    }

    #[test]
    fn the_cpu_reference_counts_each_active_channel_from_the_phase() {
        let v = [0u8, 1, 2, 3, 4, 5, 255, 7, 8];
        let three = ChannelLayout::new(3, 2).unwrap();
        let counts = channels_histogram_cpu(Values::U8(&v), &Binning::integers(4), three, 0);
        // Channel 0: 0, 3, 255 -> bins 0, 3, 3; channel 1: 1, 4, 7 -> bins 1, 3, 3.
        assert_eq!(counts, [1, 0, 0, 2, 0, 1, 0, 2]);
        let shifted = channels_histogram_cpu(Values::U8(&v), &Binning::integers(4), three, 2);
        // Phase 2: value 0 is channel 2 (inactive); channel 0: 1, 4, 7; channel 1: 2, 5, 8.
        assert_eq!(shifted, [0, 1, 0, 2, 0, 0, 1, 2]);
    }
}
