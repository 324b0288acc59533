//! Histograms on device buffers: [`Histogram`] (planned once, counting values from any device
//! slice into `u32` or `u64` counters on the caller's stream, accumulating across calls) and
//! [`DeviceHistogram`] (values and counters owned, for the host-slice conveniences).

use super::launch::{BucketScratch, DeviceCounters, DeviceInput, launch_into};
use super::plan::{HistogramPlan, PlanRequest, check_bins};
use super::values::{Values, binning_for};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg};
use kernels::histogram::{Binning, InputType};

/// A Rust type the histogram kernels count: `u8`, `u16`, `i32` or `f32`.
///
/// ```
/// use hopper_kernels::histogram::{HistogramElement, InputType};
/// fn input_of<T: HistogramElement>(_: &[T]) -> InputType {
///     T::INPUT
/// }
/// assert_eq!(input_of(&[0u8]), InputType::U8);
/// assert_eq!(input_of(&[0.5f32]), InputType::F32);
/// ```
pub trait HistogramElement: DeviceRepr + Copy + 'static {
    /// The kernels' tag of this type.
    const INPUT: InputType;
}

impl HistogramElement for u8 {
    const INPUT: InputType = InputType::U8;
}

impl HistogramElement for u16 {
    const INPUT: InputType = InputType::U16;
}

impl HistogramElement for i32 {
    const INPUT: InputType = InputType::I32;
}

impl HistogramElement for f32 {
    const INPUT: InputType = InputType::F32;
}

/// A histogram planned once (bins, value type, `f32` range, tier) and counted on device buffers
/// as often as needed, on the stream of the [`Gpu`] each call is given, adding into the counters
/// it is given (zero them to start afresh): values from any cudarc slice or view, counts as `u32`
/// ([`Histogram::count`]) or `u64` ([`Histogram::count_u64`], any number of values).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{Histogram, HistogramScratch, InputType}};
/// let gpu = Gpu::open(0)?;
/// let h = Histogram::new(&gpu, InputType::I32, 4, None)?;
/// let values = gpu.stream().clone_htod(&[0i32, 1, 1, 7, -3])?;
/// let mut counts = gpu.stream().alloc_zeros::<u32>(4)?;
/// let mut scratch = HistogramScratch::default();
/// h.count(&gpu, &values, &mut counts, &mut scratch)?;
/// h.count(&gpu, &values, &mut counts, &mut scratch)?; // adds again
/// assert_eq!(gpu.stream().clone_dtoh(&counts)?, [4, 4, 0, 2]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Histogram {
    plan: HistogramPlan,
    binning: Binning,
    element: InputType,
}

/// What a [`Histogram`] needs between launches: the bucketed and sorted tiers' buffers, and the
/// `u32` counters of [`Histogram::count_u64`]; allocated by the first launch that needs them (so
/// make one launch before capturing a CUDA graph) and grown when a launch needs more. One per
/// stream that counts concurrently.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{Histogram, HistogramScratch, InputType}};
/// let gpu = Gpu::open(0)?;
/// let h = Histogram::new(&gpu, InputType::I32, 1 << 20, None)?; // the sorted tier: needs scratch
/// let values = gpu.upload(&vec![7i32; 1 << 24])?;
/// let mut counts = gpu.zeros::<u32>(1 << 20)?;
/// let mut scratch = HistogramScratch::default();
/// h.count(&gpu, &values, &mut counts, &mut scratch)?; // allocates the scratch
/// // Later launches reuse it, so they may be captured into a CUDA graph.
/// h.count(&gpu, &values, &mut counts, &mut scratch)?;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct HistogramScratch {
    buckets: Option<BucketScratch>,
    narrow: Option<CudaSlice<u32>>,
}

impl Histogram {
    /// Plans a histogram of `element` values into `bins` bins for `gpu`: integers count value
    /// `v` in bin `v` (clamped into the edge bins); `f32` values need `range` (even bins over it,
    /// `numpy.histogram`'s: `HI` in the last bin, values outside and NaN not counted).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{Histogram, HistogramScratch, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// // numpy.histogram(values, bins=4, range=(0, 1)): NaN and values outside are not counted.
    /// let h = Histogram::new(&gpu, InputType::F32, 4, Some((0.0, 1.0)))?;
    /// let values = gpu.upload(&[0.0f32, 0.3, 0.6, 1.0, 1.5, f32::NAN])?;
    /// let mut counts = gpu.zeros::<u32>(4)?;
    /// h.count(&gpu, &values, &mut counts, &mut HistogramScratch::default())?;
    /// assert_eq!(gpu.download(&counts)?, [1, 1, 1, 1]);
    /// // f32 values need a range; integers take none.
    /// assert!(Histogram::new(&gpu, InputType::F32, 4, None).is_err());
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &Gpu, element: InputType, bins: usize, range: Option<(f32, f32)>) -> Result<Self> {
        Self::with_request(gpu, element, bins, range, PlanRequest::default())
    }

    /// [`Histogram::new`] with more of the plan fixed by `request` (tier, threads, copies...).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{Histogram, HistogramTier, InputType, PlanRequest};
    /// let gpu = Gpu::open(0)?;
    /// let request = PlanRequest { tier: Some(HistogramTier::Global), ..PlanRequest::default() };
    /// let h = Histogram::with_request(&gpu, InputType::U16, 65_536, None, request)?;
    /// assert_eq!(h.plan().tier(), HistogramTier::Global);
    /// # Ok(()) }
    /// ```
    pub fn with_request(
        gpu: &Gpu,
        element: InputType,
        bins: usize,
        range: Option<(f32, f32)>,
        request: PlanRequest,
    ) -> Result<Self> {
        let binning = binning_for(element, bins, range)?;
        let plan = super::plan_with(gpu, bins, PlanRequest { element: Some(element), ..request })?;
        Ok(Self { plan, binning, element })
    }

    /// The plan every launch runs.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{Histogram, HistogramTier, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// let h = Histogram::new(&gpu, InputType::U8, 256, None)?;
    /// assert_eq!(h.plan().tier(), HistogramTier::Shared);
    /// println!("{}", h.plan());
    /// # Ok(()) }
    /// ```
    pub fn plan(&self) -> &HistogramPlan {
        &self.plan
    }

    /// How values map to bins.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{Histogram, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// let h = Histogram::new(&gpu, InputType::F32, 10, Some((-1.0, 1.0)))?;
    /// assert_eq!((h.binning().lo, h.binning().hi, h.binning().scale), (-1.0, 1.0, 5.0));
    /// # Ok(()) }
    /// ```
    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// The number of bins (and of counters).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{Histogram, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// let h = Histogram::new(&gpu, InputType::I32, 1000, None)?;
    /// let counts = gpu.zeros::<u64>(h.bins())?;
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> usize {
        self.binning.nbins as usize
    }

    /// The checked input of `values`.
    fn input<T: HistogramElement>(
        &self,
        gpu: &Gpu,
        values: &impl DevicePtr<T>,
        first: u64,
        n: u64,
    ) -> Result<DeviceInput> {
        if T::INPUT != self.element {
            return Err(Error::InvalidArgument(format!(
                "the histogram counts {} values, the buffer holds {}",
                self.element.name(),
                T::INPUT.name()
            )));
        }
        let (address, _sync) = values.device_ptr(gpu.stream());
        if !address.is_multiple_of(16) {
            return Err(Error::Unsupported(format!(
                "the values' address {address:#x} is not 16-byte aligned, which the histogram kernels read at (allocations are; keep views at 16-byte offsets)"
            )));
        }
        let at = address + first * self.element.size() as u64;
        // SAFETY: the slice holds values.len() >= first + n values of T at `address` (the callers'
        // ranges), 16-byte aligned (checked above, and `first` is a multiple of 16 bytes), and the
        // borrow of the slice outlives the enqueue.
        Ok(unsafe { DeviceInput::new(at, self.element, self.binning, n) })
    }

    /// Adds the counts of every value in `values` into `counts` (`u32`: at most `u32::MAX`
    /// values per call), enqueued on `gpu`'s stream.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu, histogram::{Histogram, HistogramScratch, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// let h = Histogram::new(&gpu, InputType::U8, 256, None)?;
    /// let values = gpu.upload(&[1u8, 1, 255])?;
    /// let mut counts = gpu.zeros::<u32>(256)?;
    /// h.count(&gpu, &values, &mut counts, &mut HistogramScratch::default())?;
    /// assert_eq!(gpu.download(&counts)?[..2], [0, 2]);
    /// // Buffers are checked before anything is enqueued.
    /// let mut short = gpu.zeros::<u32>(255)?;
    /// let err = h.count(&gpu, &values, &mut short, &mut HistogramScratch::default()).unwrap_err();
    /// assert!(matches!(err, Error::BufferTooSmall { buffer: "counts", len: 255, needed: 256 }));
    /// # Ok(()) }
    /// ```
    pub fn count<T: HistogramElement>(
        &self,
        gpu: &Gpu,
        values: &impl DevicePtr<T>,
        counts: &mut impl DevicePtrMut<u32>,
        scratch: &mut HistogramScratch,
    ) -> Result<()> {
        if counts.len() < self.bins() {
            return Err(Error::BufferTooSmall { buffer: "counts", len: counts.len(), needed: self.bins() });
        }
        let input = self.input(gpu, values, 0, values.len() as u64)?;
        let (address, _sync) = counts.device_ptr_mut(gpu.stream());
        // SAFETY: `counts` holds at least bins u32 (checked above) and is borrowed mutably until
        // the enqueue returns.
        let counters = unsafe { DeviceCounters::new(address, self.bins()) };
        launch_into(gpu, &self.plan, gpu.stream(), &input, counters, &mut scratch.buckets)
    }

    /// Adds the counts of every value in `values` into `counts` (`u64`: any number of values),
    /// enqueued on `gpu`'s stream: launches of at most [`COUNT_U64_CHUNK`] values each count into
    /// the scratch's `u32` counters, which are then added into `counts`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{Histogram, HistogramScratch, InputType}};
    /// let gpu = Gpu::open(0)?;
    /// // 5 * 2^30 bytes: more values than a u32 counter holds, all in one bin.
    /// let h = Histogram::new(&gpu, InputType::U8, 256, None)?;
    /// let values = gpu.zeros::<u8>(5 << 30)?;
    /// let mut counts = gpu.zeros::<u64>(256)?;
    /// h.count_u64(&gpu, &values, &mut counts, &mut HistogramScratch::default())?;
    /// assert_eq!(gpu.download(&counts)?[0], 5 << 30);
    /// # Ok(()) }
    /// ```
    pub fn count_u64<T: HistogramElement>(
        &self,
        gpu: &Gpu,
        values: &impl DevicePtr<T>,
        counts: &mut impl DevicePtrMut<u64>,
        scratch: &mut HistogramScratch,
    ) -> Result<()> {
        let bins = self.bins();
        if counts.len() < bins {
            return Err(Error::BufferTooSmall { buffer: "counts", len: counts.len(), needed: bins });
        }
        if scratch.narrow.as_ref().is_none_or(|c| c.len() < bins) {
            gpu.ensure_not_capturing("a histogram's u64 counting scratch")?;
            scratch.narrow = Some(gpu.zeros(bins)?);
        }
        let widen = gpu.function(kernels::histogram::KERNEL_WIDEN_ADD)?;
        let total = values.len() as u64;
        let mut first = 0;
        while first < total {
            let n = (total - first).min(COUNT_U64_CHUNK);
            let input = self.input(gpu, values, first, n)?;
            let narrow = scratch.narrow.as_mut().expect("allocated above");
            gpu.stream().memset_zeros(narrow)?;
            let (address, _sync) = narrow.device_ptr_mut(gpu.stream());
            // SAFETY: the scratch's counters hold at least bins u32 (allocated above).
            let counters = unsafe { DeviceCounters::new(address, bins) };
            launch_into(gpu, &self.plan, gpu.stream(), &input, counters, &mut scratch.buckets)?;
            let bins32 = bins as u32;
            let (totals, _totals_sync) = counts.device_ptr_mut(gpu.stream());
            let mut builder = gpu.stream().launch_builder(&widen);
            builder.arg(&address).arg(&totals).arg(&bins32);
            let blocks = (bins as u32).div_ceil(256).clamp(1, 16 * gpu.info().sm_count.max(1));
            let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: the kernel contract: narrow holds bins u32 counted above on this stream,
            // counts at least bins u64 (checked above); separate allocations.
            unsafe { builder.launch(cfg) }?;
            first += n;
        }
        Ok(())
    }
}

/// Values per launch of [`Histogram::count_u64`]: the most `u32` counters take, rounded down to
/// a multiple of 16 bytes of every value type (so every launch's first value stays aligned).
///
/// ```
/// use hopper_kernels::histogram::COUNT_U64_CHUNK;
/// // Fits the u32 counters, and every launch after the first starts 16-byte aligned for any type.
/// assert!(COUNT_U64_CHUNK <= u32::MAX as u64);
/// assert!([1, 2, 4].iter().all(|size| (COUNT_U64_CHUNK * size).is_multiple_of(16)));
/// ```
pub const COUNT_U64_CHUNK: u64 = u32::MAX as u64 / 16 * 16;

/// Where a GPU histogram's counts first differ from the CPU's, in words (for a failed check);
/// `None` when they are equal.
///
/// ```
/// use hopper_kernels::histogram::first_count_difference;
/// assert_eq!(first_count_difference(&[1, 2, 3], &[1, 2, 3]), None);
/// let d = first_count_difference(&[1, 0, 3], &[1, 2, 3]).unwrap();
/// assert_eq!(d, "bin 1 holds 0 instead of 2; 4 values counted of 6");
/// ```
pub fn first_count_difference(got: &[u32], want: &[u32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} bins came back, {} expected", got.len(), want.len()));
    }
    let i = got.iter().zip(want).position(|(g, w)| g != w)?;
    let total: u64 = got.iter().map(|&c| c as u64).sum();
    let expected: u64 = want.iter().map(|&c| c as u64).sum();
    Some(format!("bin {i} holds {} instead of {}; {total} values counted of {expected}", got[i], want[i]))
}

/// Input values and counters owned on the device: the host-slice conveniences' and the tests'.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::{self, DeviceHistogram, PlanRequest};
/// let gpu = Gpu::open(0)?;
/// let plan = histogram::plan_with(&gpu, 4, PlanRequest::default())?;
/// let mut h = DeviceHistogram::upload(&gpu, &[0, 1, 1, 7, -3], 4)?;
/// assert_eq!(histogram::run(&gpu, &plan, &mut h)?, [2, 2, 0, 1]);
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu, histogram::DeviceHistogram};
    /// let gpu = Gpu::open(0)?;
    /// let h = DeviceHistogram::upload(&gpu, &[3, 1, 4, 1, 5], 8)?;
    /// assert_eq!((h.len(), h.bins()), (5, 8));
    /// assert!(matches!(DeviceHistogram::upload(&gpu, &[1], 0), Err(Error::ZeroDimension { name: "bins" })));
    /// # Ok(()) }
    /// ```
    pub fn upload(gpu: &Gpu, values: &[i32], bins: usize) -> Result<Self> {
        check_bins(bins)?;
        Self::upload_values(gpu, Values::I32(values), Binning::integers(bins as u32))
    }

    /// Uploads values of any input type, counted by `binning` ([`binning_for`] checks it).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{self, DeviceHistogram, InputType, PlanRequest, Values, binning_for};
    /// let gpu = Gpu::open(0)?;
    /// let binning = binning_for(InputType::F32, 2, Some((0.0, 1.0)))?;
    /// let mut h = DeviceHistogram::upload_values(&gpu, Values::F32(&[0.1, 0.7, 0.9]), binning)?;
    /// let request = PlanRequest { element: Some(InputType::F32), ..PlanRequest::default() };
    /// let plan = histogram::plan_with(&gpu, 2, request)?;
    /// assert_eq!(histogram::run(&gpu, &plan, &mut h)?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn upload_values(gpu: &Gpu, values: Values<'_>, binning: Binning) -> Result<Self> {
        let bins = binning.nbins as usize;
        check_bins(bins)?;
        if values.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
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
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::DeviceHistogram};
    /// let gpu = Gpu::open(0)?;
    /// assert_eq!(DeviceHistogram::upload(&gpu, &[1, 2, 3], 4)?.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no input values.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::{self, DeviceHistogram}};
    /// let gpu = Gpu::open(0)?;
    /// let mut h = DeviceHistogram::upload(&gpu, &[], 4)?;
    /// assert!(h.is_empty());
    /// assert_eq!(histogram::run(&gpu, &histogram::plan(&gpu, 4, None)?, &mut h)?, [0; 4]); // no launch
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of bins.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, histogram::DeviceHistogram};
    /// let gpu = Gpu::open(0)?;
    /// assert_eq!(DeviceHistogram::upload(&gpu, &[1, 2, 3], 4)?.bins(), 4);
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> usize {
        self.counts.len()
    }

    /// The input type.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{Binning, DeviceHistogram, InputType, Values};
    /// let gpu = Gpu::open(0)?;
    /// let h = DeviceHistogram::upload_values(&gpu, Values::U16(&[1, 2]), Binning::integers(4))?;
    /// assert_eq!(h.element(), InputType::U16);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }
}

/// Zeroes the counters and enqueues the planned kernel (three for the bucketed tier) on the
/// GPU's stream.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{self, DeviceHistogram}};
/// let gpu = Gpu::open(0)?;
/// let plan = histogram::plan(&gpu, 256, None)?;
/// let mut h = DeviceHistogram::upload(&gpu, &vec![9; 1 << 20], 256)?;
/// for _ in 0..10 {
///     histogram::launch(&gpu, &plan, &mut h)?; // zeroes the counters and counts again: enqueued only
/// }
/// gpu.synchronize()?;
/// # Ok(()) }
/// ```
pub fn launch(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<()> {
    gpu.stream().memset_zeros(&mut h.counts)?;
    let (input, _input_sync) = h.input.device_ptr(gpu.stream());
    let bins = h.counts.len();
    let (counts, _counts_sync) = h.counts.device_ptr_mut(gpu.stream());
    // SAFETY: the owned input holds n values of the element (uploaded by upload_values, an
    // allocation, so 16-byte aligned) and the owned counters bins u32; both borrowed until the
    // enqueue returns.
    let (input, counters) =
        unsafe { (DeviceInput::new(input, h.element, h.binning, h.n as u64), DeviceCounters::new(counts, bins)) };
    launch_into(gpu, plan, gpu.stream(), &input, counters, &mut h.scratch)
}

/// Runs the planned kernel once and returns the counts.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::{self, DeviceHistogram}};
/// let gpu = Gpu::open(0)?;
/// let plan = histogram::plan(&gpu, 256, None)?;
/// let mut h = DeviceHistogram::upload(&gpu, &vec![9; 1 << 20], 256)?;
/// assert_eq!(histogram::run(&gpu, &plan, &mut h)?[9], 1 << 20);
/// # Ok(()) }
/// ```
pub fn run(gpu: &Gpu, plan: &HistogramPlan, h: &mut DeviceHistogram) -> Result<Vec<u32>> {
    launch(gpu, plan, h)?;
    gpu.synchronize()?;
    gpu.download(&h.counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_differences_name_the_first_wrong_bin_and_the_totals() {
        assert_eq!(first_count_difference(&[1, 2, 3], &[1, 2, 3]), None);
        let d = first_count_difference(&[1, 0, 3], &[1, 2, 3]).unwrap();
        assert!(d.starts_with("bin 1 holds 0 instead of 2; 4 values counted of 6"), "{d}");
        assert!(first_count_difference(&[1], &[1, 0]).unwrap().contains("1 bins came back, 2 expected"));
    }

    #[test]
    fn u64_counting_launches_start_on_16_byte_boundaries_of_every_type() {
        for size in [1u64, 2, 4] {
            assert_eq!(COUNT_U64_CHUNK * size % 16, 0);
        }
        assert!(COUNT_U64_CHUNK <= u32::MAX as u64);
    }
}
