//! Launch shapes from the driver's occupancy queries: threads per block, private copies of the
//! counters and the persistent grid of the histogram kernels, chosen per kernel and device
//! rather than from constants measured on one GPU.
//!
//! The rule ([`choose_shape`]): the histogram kernels stream their input, so what they need most is
//! loads in flight, which grow with the threads an SM keeps resident. Among the candidate block
//! sizes ([`THREAD_CANDIDATES`]) and copies (powers of two up to the most the caller allows),
//! take the shape with the most resident threads per SM by the driver's
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` (registers, shared memory and threads all
//! counted); among those, the most copies (fewer same-address and same-bank adds); among those,
//! the largest blocks (fewer blocks to flush their counters). The grid is then every resident
//! block: `blocks_per_sm * SMs`. A [`LaunchRequest`] fixes any of these, which is how `host bench
//! --histogram-sweep` measures the shapes the rule did not pick.
//!
//! The rule is pure over an [`Occupancy`], so it is tested on the CPU with [`ModelOccupancy`] (the
//! occupancy calculator's arithmetic for a given register count) and runs on the device with
//! [`DriverOccupancy`].

use super::HistogramLimits;
use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaFunction, LaunchConfig};

/// Block sizes the tuner tries, smallest first.
pub const THREAD_CANDIDATES: [u32; 4] = [256, 512, 768, 1024];

/// Block sizes the tuner tries for kernels whose shared memory is per warp
/// ([`choose_shape_per_warp`]), smallest first: small blocks too, so that counters that fill
/// much of a block's shared memory per warp still find a block that holds them.
pub const PER_WARP_THREAD_CANDIDATES: [u32; 7] = [32, 64, 128, 256, 512, 768, 1024];

/// The most private copies of a histogram per block: one per lane of a warp.
pub const MAX_COPIES: u32 = 32;

/// What the caller fixes of a launch of the weighted, edges, channels, 2-D or segmented kernels;
/// `None` leaves the choice to [`choose_shape`] and the feature's planner.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
/// let limits = HistogramLimits::H100;
/// // Fix blocks of 256 threads with 4 copies of the sums; the planner chooses the rest.
/// let request = LaunchRequest { threads_per_block: Some(256), copies: Some(4), ..LaunchRequest::default() };
/// let model = model_before_device(limits);
/// let plan = plan_weighted_for(&limits, &model, InputType::U8, Binning::integers(256), &request)?;
/// assert_eq!((plan.launch().threads(), plan.launch().copies()), (256, 4));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchRequest {
    /// Threads per block: a multiple of 32 from 32 to 1024.
    pub threads_per_block: Option<u32>,
    /// Private copies of the counters per block: a power of two from 1 to 32.
    pub copies: Option<u32>,
    /// Resident blocks per SM the grid assumes (at most what the driver reports): a smaller grid.
    pub blocks_per_sm: Option<u32>,
    /// Counters per 32-bit word as `log2` (0: `u32` counters; 1: 16-bit; 2: 8-bit), where the
    /// kernel takes packed counters (one channel, 2-D).
    pub packing: Option<u32>,
    /// Add every value into global memory instead of block-private copies (weighted and 2-D).
    pub global: Option<bool>,
    /// Warps whose 32 lanes hold one bin add once (weighted kernels).
    pub aggregate: Option<bool>,
    /// Sum the weights per block in `f32` partials (flushed into the `f64` sums) instead of
    /// `f64` ones (the weighted kernels' shared tier).
    pub f32_partials: Option<bool>,
    /// The segmented kernel alternates between two sets of counters, one block barrier per piece
    /// of a segment instead of two (`false`: one set).
    pub double_buffer: Option<bool>,
    /// The segmented kernel keeps private counters per warp and meets no block barrier
    /// (`kernels::histogram::segmented::WARP_KERNELS`; `false`: per block, as `double_buffer`
    /// says).
    pub warp_private: Option<bool>,
    /// The 2-D counting kernel in 16-bit digits flushes two adjacent counters per 64-bit atomic
    /// (`false`: one per counter).
    pub paired_flush: Option<bool>,
}

impl LaunchRequest {
    /// Fails unless the fixed threads and copies are ones the kernels take.
    ///
    /// ```
    /// use hopper_kernels::histogram::tuning::LaunchRequest;
    /// assert!(LaunchRequest { threads_per_block: Some(512), copies: Some(8), ..Default::default() }.check().is_ok());
    /// let err = LaunchRequest { threads_per_block: Some(48), ..Default::default() }.check().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid argument: 48 threads per block: use a multiple of 32 from 32 to 1024");
    /// assert!(LaunchRequest { copies: Some(3), ..Default::default() }.check().is_err());
    /// assert!(LaunchRequest { blocks_per_sm: Some(0), ..Default::default() }.check().is_err());
    /// ```
    pub fn check(&self) -> Result<()> {
        if let Some(t) = self.threads_per_block
            && (t == 0 || t > 1024 || t % 32 != 0)
        {
            return Err(Error::InvalidArgument(format!("{t} threads per block: use a multiple of 32 from 32 to 1024")));
        }
        if let Some(c) = self.copies
            && (c == 0 || c > MAX_COPIES || !c.is_power_of_two())
        {
            return Err(Error::InvalidArgument(format!("{c} copies: use a power of two from 1 to {MAX_COPIES}")));
        }
        if self.blocks_per_sm == Some(0) {
            return Err(Error::InvalidArgument("0 blocks per SM: a grid needs at least one".into()));
        }
        Ok(())
    }
}

/// How many blocks of a kernel one SM keeps resident.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, Occupancy, choose_shape};
/// // A kernel that only threads limit: 2048 resident per SM.
/// struct ThreadsOnly;
/// impl Occupancy for ThreadsOnly {
///     fn blocks_per_sm(&self, threads: u32, _shared: u32) -> hopper_kernels::Result<u32> {
///         Ok(2048 / threads)
///     }
/// }
/// let counters = |copies: u32| 1024 * copies as u64; // 256 u32 counters per copy
/// let request = LaunchRequest::default();
/// let shape = choose_shape(&ThreadsOnly, &HistogramLimits::H100, &counters, 32, &request, "256 bins")?;
/// // Every block size keeps 2048 threads resident: then the most copies, then the largest blocks.
/// assert_eq!((shape.threads, shape.copies, shape.blocks_per_sm), (1024, 32, 2));
/// # Ok(()) }
/// ```
pub trait Occupancy {
    /// Resident blocks of `threads` threads with `shared` bytes of dynamic shared memory (0 when
    /// not even one fits).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::HistogramLimits;
    /// use hopper_kernels::histogram::tuning::{ModelOccupancy, Occupancy};
    /// let model = ModelOccupancy { limits: HistogramLimits::H100, registers: 32 };
    /// assert_eq!(model.blocks_per_sm(256, 0)?, 8);
    /// // 100 KiB of shared memory each: two blocks share an SM's 228 KiB.
    /// assert_eq!(model.blocks_per_sm(256, 100 << 10)?, 2);
    /// // More shared memory than a block may have: none.
    /// assert_eq!(model.blocks_per_sm(256, 232_449)?, 0);
    /// # Ok(()) }
    /// ```
    fn blocks_per_sm(&self, threads: u32, shared: u32) -> Result<u32>;
}

/// The driver's occupancy calculator for one kernel of the loaded module.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::tuning::{DriverOccupancy, LaunchRequest, Occupancy, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
/// let gpu = Gpu::open(0)?;
/// let limits = HistogramLimits::of(&gpu)?;
/// let (binning, request) = (Binning::integers(256), LaunchRequest::default());
/// // The kernel's symbol from a plan on the model, then its residency from the driver.
/// let on_model = plan_weighted_for(&limits, &model_before_device(limits), InputType::U8, binning, &request)?;
/// let occupancy = DriverOccupancy::new(&gpu, on_model.launch().kernel())?;
/// println!("{} blocks of 256 threads per SM", occupancy.blocks_per_sm(256, 0)?);
/// let plan = plan_weighted_for(&limits, &occupancy, InputType::U8, binning, &request)?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub struct DriverOccupancy {
    function: CudaFunction,
}

impl DriverOccupancy {
    /// The occupancy of kernel `name` on `gpu`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// use hopper_kernels::histogram::tuning::{DriverOccupancy, Occupancy};
    /// let gpu = Gpu::open(0)?;
    /// let occupancy = DriverOccupancy::new(&gpu, "histogram_weighted_f32")?;
    /// // Blocks of 512 threads with 64 KiB of shared memory each, as the driver counts them.
    /// println!("{}", occupancy.blocks_per_sm(512, 64 << 10)?);
    /// // A name the loaded module lacks is an error, not a panic.
    /// assert!(matches!(DriverOccupancy::new(&gpu, "no_such_kernel"), Err(Error::KernelMissing { .. })));
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &Gpu, name: &'static str) -> Result<Self> {
        Ok(Self { function: gpu.function(name)? })
    }
}

impl Occupancy for DriverOccupancy {
    fn blocks_per_sm(&self, threads: u32, shared: u32) -> Result<u32> {
        // The query counts dynamic shared memory only up to the kernel's opt-in limit.
        self.function.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
        Ok(self.function.occupancy_max_active_blocks_per_multiprocessor(threads, shared as usize, None)?)
    }
}

/// The occupancy calculator's arithmetic for a kernel of `registers` registers per thread on a
/// device with `limits`: the least of the blocks that threads, shared memory and registers allow
/// (registers allocated per warp in units of 256, 64 Ki registers per SM, at most 32 blocks).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::{ModelOccupancy, Occupancy};
/// let model = |registers| ModelOccupancy { limits: HistogramLimits::H100, registers };
/// // 32 registers a thread: the SM's 2048 threads, as two blocks of 1024.
/// assert_eq!(model(32).blocks_per_sm(1024, 0)?, 2);
/// // 40 registers: a block of 1024 threads takes 40 Ki of the 64 Ki registers; three of 512 fit.
/// assert_eq!(model(40).blocks_per_sm(1024, 0)?, 1);
/// assert_eq!(model(40).blocks_per_sm(512, 0)?, 3);
/// // 96 registers: a block of 1024 threads needs more registers than an SM has.
/// assert_eq!(model(96).blocks_per_sm(1024, 0)?, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ModelOccupancy {
    /// The device.
    pub limits: HistogramLimits,
    /// Registers per thread.
    pub registers: u32,
}

impl Occupancy for ModelOccupancy {
    fn blocks_per_sm(&self, threads: u32, shared: u32) -> Result<u32> {
        let l = &self.limits;
        if shared > l.max_shared_per_block_optin {
            return Ok(0);
        }
        let sm = kernels::occupancy::SmResources {
            max_threads: l.max_threads_per_sm,
            max_shared: l.max_shared_per_sm,
            reserved_shared_per_block: l.reserved_shared_per_block,
        };
        Ok(kernels::occupancy::blocks_per_sm(sm, self.registers, shared, threads))
    }
}

/// A launch shape: threads per block, copies, and the resident blocks per SM that set the grid.
///
/// ```
/// use hopper_kernels::histogram::tuning::Shape;
/// // Three blocks of 512 threads per SM, each with 8 copies of 256 u32 counters.
/// let shape = Shape { threads: 512, copies: 8, blocks_per_sm: 3, shared_bytes: 8 * 256 * 4 };
/// assert_eq!(shape.resident_threads(), 1536);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Threads per block.
    pub threads: u32,
    /// Private copies per block.
    pub copies: u32,
    /// Blocks per SM the grid assumes.
    pub blocks_per_sm: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl Shape {
    /// Threads resident per SM.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::HistogramLimits;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, ModelOccupancy, choose_shape};
    /// let model = ModelOccupancy { limits: HistogramLimits::H100, registers: 40 };
    /// let counters = |copies: u32| 4 * 256 * copies as u64;
    /// let shape = choose_shape(&model, &HistogramLimits::H100, &counters, 32, &LaunchRequest::default(), "256 bins")?;
    /// // Two blocks of 768 threads keep more resident than one of 1024.
    /// assert_eq!((shape.threads, shape.blocks_per_sm, shape.resident_threads()), (768, 2, 1536));
    /// # Ok(()) }
    /// ```
    pub fn resident_threads(&self) -> u32 {
        self.threads * self.blocks_per_sm
    }
}

/// Picks a shape for a kernel whose dynamic shared memory is `shared_for(copies)` bytes, with at
/// most `max_copies` copies (a power of two), by the rule in the module documentation; the request
/// fixes threads, copies or blocks per SM. `what` names the histogram in errors. Fails when no
/// shape keeps even one block resident, saying what did not fit.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, ModelOccupancy, choose_shape};
/// let (limits, open) = (HistogramLimits::H100, LaunchRequest::default());
/// let model = ModelOccupancy { limits, registers: 32 };
/// // 256 u32 counters per copy: 32 copies (32 KiB) still leave two blocks of 1024 threads per SM.
/// let small = |copies: u32| 4 * 256 * copies as u64;
/// let s = choose_shape(&model, &limits, &small, 32, &open, "256 bins")?;
/// assert_eq!((s.threads, s.copies, s.blocks_per_sm, s.shared_bytes), (1024, 32, 2, 32 << 10));
/// // 8192 counters per copy: copies that cost residency lose, so 2 (64 KiB) rather than 32.
/// let large = |copies: u32| 4 * 8192 * copies as u64;
/// let s = choose_shape(&model, &limits, &large, 32, &open, "8192 bins")?;
/// assert_eq!((s.resident_threads(), s.copies), (2048, 2));
/// // A request fixes what it names.
/// let fixed = LaunchRequest { threads_per_block: Some(256), copies: Some(4), blocks_per_sm: Some(2), ..open };
/// let s = choose_shape(&model, &limits, &small, 32, &fixed, "256 bins")?;
/// assert_eq!((s.threads, s.copies, s.blocks_per_sm), (256, 4, 2));
/// // Nothing fits: the error says what and how much.
/// let err = choose_shape(&model, &limits, &|_| 300 << 10, 1, &open, "65536 f64 sums").unwrap_err();
/// assert!(err.to_string().contains("65536 f64 sums: no block of 256 or 512 or 768 or 1024 threads with 300.00 KiB"));
/// # Ok(()) }
/// ```
pub fn choose_shape(
    occupancy: &dyn Occupancy,
    limits: &HistogramLimits,
    shared_for: &dyn Fn(u32) -> u64,
    max_copies: u32,
    request: &LaunchRequest,
    what: &str,
) -> Result<Shape> {
    choose(occupancy, limits, &|_, c| shared_for(c), &THREAD_CANDIDATES, max_copies, request, what, true)
}

/// [`choose_shape`] for a kernel whose dynamic shared memory grows with its block:
/// `shared_for(threads, copies)` bytes (the warp-private segmented kernel keeps counters per
/// warp), over the block sizes of [`PER_WARP_THREAD_CANDIDATES`]. Fails when no block size holds
/// the counters of its warps.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, ModelOccupancy, choose_shape_per_warp};
/// let (limits, open) = (HistogramLimits::H100, LaunchRequest::default());
/// let model = ModelOccupancy { limits, registers: 40 };
/// // 256 counters per warp (1 KiB): registers decide, and 25 blocks of 64 threads keep more
/// // resident (1600) than blocks of 256 or more (1536).
/// let small = |threads: u32, copies: u32| (threads / 32) as u64 * 4 * 256 * copies as u64;
/// let s = choose_shape_per_warp(&model, &limits, &small, 1, &open, "256 bins")?;
/// assert_eq!((s.threads, s.blocks_per_sm, s.copies, s.shared_bytes), (64, 25, 1, 2048));
/// // 8,192 counters per warp (32 KiB): six warps per SM share its shared memory.
/// let large = |threads: u32, copies: u32| (threads / 32) as u64 * 4 * 8192 * copies as u64;
/// let s = choose_shape_per_warp(&model, &limits, &large, 1, &open, "8192 bins")?;
/// assert_eq!((s.threads, s.blocks_per_sm), (64, 3));
/// // More than one warp's counters fit in a block: none.
/// let err = choose_shape_per_warp(&model, &limits, &|t, _| (t / 32) as u64 * 300_000, 1, &open, "too many");
/// assert!(err.unwrap_err().to_string().contains("too many: no block of 32 or 64"));
/// # Ok(()) }
/// ```
pub fn choose_shape_per_warp(
    occupancy: &dyn Occupancy,
    limits: &HistogramLimits,
    shared_for: &dyn Fn(u32, u32) -> u64,
    max_copies: u32,
    request: &LaunchRequest,
    what: &str,
) -> Result<Shape> {
    choose(occupancy, limits, shared_for, &PER_WARP_THREAD_CANDIDATES, max_copies, request, what, true)
}

/// [`choose_shape`], but among shapes of equal residency and copies the smallest blocks: for
/// kernels that meet block barriers often (the segmented kernel, twice per piece of a segment),
/// where more, smaller blocks per SM keep loads in flight while one block waits at a barrier.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::HistogramLimits;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, ModelOccupancy, choose_shape, choose_shape_small_blocks};
/// let (limits, open) = (HistogramLimits::H100, LaunchRequest::default());
/// let model = ModelOccupancy { limits, registers: 40 };
/// let counters = |copies: u32| 4 * 256 * copies as u64;
/// // 1536 resident threads either way: six blocks of 256 rather than two of 768.
/// let small = choose_shape_small_blocks(&model, &limits, &counters, 8, &open, "segments")?;
/// assert_eq!((small.threads, small.blocks_per_sm, small.copies), (256, 6, 8));
/// let large = choose_shape(&model, &limits, &counters, 8, &open, "segments")?;
/// assert_eq!((large.threads, large.blocks_per_sm), (768, 2));
/// assert_eq!(small.resident_threads(), large.resident_threads());
/// # Ok(()) }
/// ```
pub fn choose_shape_small_blocks(
    occupancy: &dyn Occupancy,
    limits: &HistogramLimits,
    shared_for: &dyn Fn(u32) -> u64,
    max_copies: u32,
    request: &LaunchRequest,
    what: &str,
) -> Result<Shape> {
    choose(occupancy, limits, &|_, c| shared_for(c), &THREAD_CANDIDATES, max_copies, request, what, false)
}

/// The rule of [`choose_shape`] over the block sizes `candidates` (unless the request fixes one),
/// with `shared_for(threads, copies)` bytes of shared memory per block.
#[allow(clippy::too_many_arguments)]
fn choose(
    occupancy: &dyn Occupancy,
    limits: &HistogramLimits,
    shared_for: &dyn Fn(u32, u32) -> u64,
    candidates: &[u32],
    max_copies: u32,
    request: &LaunchRequest,
    what: &str,
    larger_blocks: bool,
) -> Result<Shape> {
    request.check()?;
    let threads: Vec<u32> = match request.threads_per_block {
        Some(t) => vec![t],
        None => candidates.to_vec(),
    };
    let copies: Vec<u32> = match request.copies {
        Some(c) => vec![c],
        None => (0..=MAX_COPIES.trailing_zeros()).map(|k| 1 << k).filter(|&c| c <= max_copies.max(1)).collect(),
    };
    let mut best: Option<Shape> = None;
    let mut smallest = u64::MAX;
    for &c in &copies {
        for &t in &threads {
            let shared = shared_for(t, c);
            smallest = smallest.min(shared);
            if shared > limits.max_shared_per_block_optin as u64 {
                continue;
            }
            let fit = occupancy.blocks_per_sm(t, shared as u32)?;
            if fit == 0 {
                continue;
            }
            let per_sm = request.blocks_per_sm.map_or(fit, |b| b.min(fit));
            let shape = Shape { threads: t, copies: c, blocks_per_sm: per_sm, shared_bytes: shared as u32 };
            // The block size's rank: larger or smaller blocks first among equals.
            let rank = |s: &Shape| if larger_blocks { s.threads } else { u32::MAX - s.threads };
            let better = match best {
                None => true,
                Some(b) => {
                    (shape.resident_threads(), shape.copies, rank(&shape)) > (b.resident_threads(), b.copies, rank(&b))
                }
            };
            if better {
                best = Some(shape);
            }
        }
    }
    best.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what}: no block of {} threads with {} of shared memory stays resident on this device (a block gets at most {})",
            threads.iter().map(u32::to_string).collect::<Vec<_>>().join(" or "),
            format_bytes(smallest),
            format_bytes(limits.max_shared_per_block_optin as u64)
        ))
    })
}

/// A planned launch of one kernel: its symbol and grid, checked by the planner that built it.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
/// let limits = HistogramLimits::H100;
/// let binning = Binning::integers(256);
/// let plan =
///     plan_weighted_for(&limits, &model_before_device(limits), InputType::I32, binning, &LaunchRequest::default())?;
/// assert_eq!(
///     plan.launch().to_string(),
///     "histogram_weighted_i32: 132 blocks x 1024 threads, 64.00 KiB shared per block (32 copies)"
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLaunch {
    kernel: &'static str,
    blocks: u32,
    threads: u32,
    shared_bytes: u32,
    copies: u32,
}

impl KernelLaunch {
    /// A launch of `kernel` on `sm_count` SMs in `shape`.
    pub(crate) fn new(kernel: &'static str, shape: Shape, sm_count: u32) -> Self {
        Self {
            kernel,
            blocks: (shape.blocks_per_sm * sm_count).max(1),
            threads: shape.threads,
            shared_bytes: shape.shared_bytes,
            copies: shape.copies,
        }
    }

    /// The kernel's PTX symbol.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
    /// let limits = HistogramLimits::H100;
    /// let plan =
    ///     plan_edges_for(&limits, &model_before_device(limits), InputType::U16, 100, &LaunchRequest::default())?;
    /// // The symbol in the embedded PTX: one kernel per input type.
    /// assert_eq!(plan.launch().kernel(), "histogram_edges_u16");
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self) -> &'static str {
        self.kernel
    }

    /// Blocks in the grid.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, segmented::plan_segments_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let (binning, open) = (Binning::integers(256), LaunchRequest::default());
    /// let plan = plan_segments_for(&limits, &model, InputType::I32, binning, 4096, 1 << 26, &open)?;
    /// // A persistent grid: every resident block, 4 per SM on 132 SMs.
    /// assert_eq!(plan.launch().blocks(), 4 * 132);
    /// # Ok(()) }
    /// ```
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Threads per block.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let request = LaunchRequest { threads_per_block: Some(512), ..LaunchRequest::default() };
    /// let (model, binning) = (model_before_device(limits), Binning::range(64, 0.0, 1.0));
    /// let plan = plan_weighted_for(&limits, &model, InputType::F32, binning, &request)?;
    /// assert_eq!(plan.launch().threads(), 512);
    /// # Ok(()) }
    /// ```
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Dynamic shared memory per block, bytes.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &LaunchRequest::default())?;
    /// // 32 copies of 256 f64 sums.
    /// assert_eq!(plan.launch().shared_bytes(), 32 * 256 * 8);
    /// // The global mode keeps no sums in shared memory.
    /// let global = LaunchRequest { global: Some(true), ..LaunchRequest::default() };
    /// let plan = plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &global)?;
    /// assert_eq!(plan.launch().shared_bytes(), 0);
    /// # Ok(()) }
    /// ```
    pub fn shared_bytes(&self) -> u32 {
        self.shared_bytes
    }

    /// Private copies of the counters per block.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let copies = |bins| {
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(bins), &LaunchRequest::default())
    ///         .map(|p| p.launch().copies())
    /// };
    /// // One copy per lane of a warp where they fit; two copies of 29,056 f32 partial sums fill
    /// // a block.
    /// assert_eq!((copies(256)?, copies(29_056)?), (32, 2));
    /// # Ok(()) }
    /// ```
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// The grid as cudarc's launch configuration.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType, weighted::plan_weighted_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan =
    ///     plan_weighted_for(&limits, &model, InputType::I32, Binning::integers(256), &LaunchRequest::default())?;
    /// let config = plan.launch().config();
    /// assert_eq!((config.grid_dim, config.block_dim, config.shared_mem_bytes), ((132, 1, 1), (1024, 1, 1), 65_536));
    /// # Ok(()) }
    /// ```
    pub fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        }
    }

    /// The kernel with its dynamic shared memory limit raised to this launch's.
    pub(crate) fn prepared(&self, gpu: &Gpu) -> Result<CudaFunction> {
        let func = gpu.function(self.kernel)?;
        func.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared_bytes as i32)?;
        Ok(func)
    }
}

impl std::fmt::Display for KernelLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} blocks x {} threads", self.kernel, self.blocks, self.threads)?;
        if self.shared_bytes > 0 {
            write!(f, ", {} shared per block", format_bytes(self.shared_bytes as u64))?;
            if self.copies > 1 {
                write!(f, " ({} copies)", self.copies)?;
            }
        }
        Ok(())
    }
}

/// The occupancy [`choose_shape`] plans with before a GPU is opened (argument checks): an
/// H100-class device and a kernel of 64 registers.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::gpu::DeviceModel;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
/// // Plans for an H200 on a machine without one (`--plan --device-model h200`).
/// let limits = HistogramLimits::of_model(DeviceModel::H200);
/// let model = model_before_device(limits);
/// assert_eq!(model.registers, 64);
/// let plan = plan_edges_for(&limits, &model, InputType::F32, 256, &LaunchRequest::default())?;
/// assert_eq!(
///     plan.to_string(),
///     "edges tier (256 bins, a table of 4096 cells), histogram_edges_f32: 132 blocks x 1024 threads, \
///      49.51 KiB shared per block (32 copies)"
/// );
/// # Ok(()) }
/// ```
pub fn model_before_device(limits: HistogramLimits) -> ModelOccupancy {
    ModelOccupancy { limits, registers: 64 }
}

/// The request with the shared tier's threads and copies filled in from the occupancy query of
/// the input type's shared-tier kernel, where the planner will take the shared tier (the bins fit
/// one block and no other tier or cluster is asked for) and the request leaves either open; other
/// requests unchanged. This replaces the constants measured on an H100 (1,024 threads for `u8`,
/// copies that leave room for 4 blocks per SM) by [`choose_shape`]'s rule on the device that runs.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::tuning::shared_tier_request;
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, InputType, PlanRequest, plan_for};
/// let gpu = Gpu::open(0)?;
/// let limits = HistogramLimits::of(&gpu)?;
/// let open = PlanRequest { element: Some(InputType::U8), ..PlanRequest::default() };
/// // Threads and copies from the occupancy of the u8 shared-tier kernel on this GPU.
/// let request = shared_tier_request(&gpu, &limits, 256, open)?;
/// assert!(request.threads_per_block.is_some() && request.copies.is_some());
/// let plan = plan_for(&limits, 256, request)?;
/// assert_eq!(plan.tier(), HistogramTier::Shared);
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn shared_tier_request(
    gpu: &Gpu,
    limits: &HistogramLimits,
    bins: usize,
    request: super::PlanRequest,
) -> Result<super::PlanRequest> {
    if !takes_shared_tier(limits, bins, &request) {
        return Ok(request);
    }
    let element = request.element.unwrap_or(super::InputType::I32);
    // The occupancy of the kernel the plan launches: the pipelined one-channel kernel unless
    // warp-aggregated adds are asked for (the shared tier's default is not to aggregate). The
    // aggregating kernel's 40 registers gave u8 blocks of 768 threads (1,536 per SM) where the
    // pipelined kernel's 32 keep 2,048.
    let kernel = super::plan::shared_tier_kernel(element, request.aggregate == Some(true));
    let occupancy = DriverOccupancy::new(gpu, kernel)?;
    shared_tier_request_for(limits, &occupancy, bins, request)
}

/// Whether the plain histogram's planner takes the shared tier for `request` and leaves its
/// threads or copies open.
fn takes_shared_tier(limits: &HistogramLimits, bins: usize, request: &super::PlanRequest) -> bool {
    bins >= 1
        && bins as u64 <= limits.block_capacity()
        && matches!(request.tier, None | Some(super::HistogramTier::Shared))
        && request.cluster_size.is_none()
        && (request.threads_per_block.is_none() || request.copies.is_none())
}

/// [`shared_tier_request`] over any [`Occupancy`] (pure: tested with [`ModelOccupancy`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{ModelOccupancy, shared_tier_request_for};
/// use hopper_kernels::histogram::{HistogramLimits, HistogramTier, PlanRequest, plan_for};
/// let limits = HistogramLimits::H100;
/// // A shared-tier kernel of 40 registers: 768-thread blocks keep 1536 threads per SM, where
/// // 1024-thread blocks keep 1024.
/// let model = ModelOccupancy { limits, registers: 40 };
/// let request = shared_tier_request_for(&limits, &model, 256, PlanRequest::default())?;
/// assert_eq!((request.threads_per_block, request.copies), (Some(768), Some(32)));
/// let plan = plan_for(&limits, 256, request)?;
/// assert_eq!((plan.tier(), plan.threads_per_block(), plan.copies()), (HistogramTier::Shared, 768, 32));
/// // Requests for another tier are left as they are.
/// let sorted = PlanRequest { tier: Some(HistogramTier::Sorted), ..PlanRequest::default() };
/// assert_eq!(shared_tier_request_for(&limits, &model, 256, sorted)?, sorted);
/// # Ok(()) }
/// ```
pub fn shared_tier_request_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    bins: usize,
    request: super::PlanRequest,
) -> Result<super::PlanRequest> {
    if !takes_shared_tier(limits, bins, &request) {
        return Ok(request);
    }
    let launch =
        LaunchRequest { threads_per_block: request.threads_per_block, copies: request.copies, ..Default::default() };
    let shape = choose_shape(
        occupancy,
        limits,
        &|c| kernels::histogram::shared_bytes(bins as u32) as u64 * c as u64,
        MAX_COPIES,
        &launch,
        &format!("{bins} bins in the shared tier"),
    )?;
    Ok(super::PlanRequest { threads_per_block: Some(shape.threads), copies: Some(shape.copies), ..request })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: HistogramLimits = HistogramLimits::H100;

    fn model(registers: u32) -> ModelOccupancy {
        ModelOccupancy { limits: H100, registers }
    }

    #[test]
    fn the_model_takes_the_least_of_threads_shared_memory_and_registers() {
        let m = model(32);
        assert_eq!(m.blocks_per_sm(1024, 0).unwrap(), 2);
        assert_eq!(m.blocks_per_sm(256, 0).unwrap(), 8);
        assert_eq!(m.blocks_per_sm(256, 100 << 10).unwrap(), 2);
        assert_eq!(model(40).blocks_per_sm(1024, 0).unwrap(), 1);
        assert_eq!(model(40).blocks_per_sm(512, 0).unwrap(), 3);
        assert_eq!(model(96).blocks_per_sm(1024, 0).unwrap(), 0);
        assert_eq!(m.blocks_per_sm(256, 232_449).unwrap(), 0);
    }

    #[test]
    fn the_shape_with_the_most_resident_threads_wins_then_the_most_copies() {
        let shared = |c: u32| 4 * 256 * c as u64;
        // 32 registers: 2048 threads in any block size; 32 copies (32 KiB) still fit 2 x 1024.
        let s = choose_shape(&model(32), &H100, &shared, 32, &LaunchRequest::default(), "x").unwrap();
        assert_eq!((s.resident_threads(), s.copies, s.threads), (2048, 32, 1024));
        // 40 registers: 1024-thread blocks leave 1024 threads per SM, 256, 512 and 768-thread ones
        // 1536; the largest of those wins.
        let s = choose_shape(&model(40), &H100, &shared, 32, &LaunchRequest::default(), "x").unwrap();
        assert_eq!((s.threads, s.blocks_per_sm, s.copies), (768, 2, 32));
        // Copies that cost residency lose: 8192 bins x 4 copies = 128 KiB leaves one block per SM.
        let big = |c: u32| 4 * 8192 * c as u64;
        let s = choose_shape(&model(32), &H100, &big, 32, &LaunchRequest::default(), "x").unwrap();
        assert_eq!((s.resident_threads(), s.copies), (2048, 2));
    }

    #[test]
    fn barrier_heavy_kernels_take_the_smallest_blocks_among_equals() {
        let shared = |c: u32| 4 * 256 * c as u64;
        let s = choose_shape_small_blocks(&model(40), &H100, &shared, 8, &LaunchRequest::default(), "x").unwrap();
        assert_eq!((s.threads, s.blocks_per_sm, s.copies), (256, 6, 8));
    }

    #[test]
    fn requests_fix_threads_copies_and_blocks_and_bad_ones_are_refused() {
        let shared = |c: u32| 4 * 256 * c as u64;
        let r = LaunchRequest {
            threads_per_block: Some(256),
            copies: Some(4),
            blocks_per_sm: Some(2),
            ..Default::default()
        };
        let s = choose_shape(&model(32), &H100, &shared, 32, &r, "x").unwrap();
        assert_eq!((s.threads, s.copies, s.blocks_per_sm, s.shared_bytes), (256, 4, 2, 4096));
        let bad = |r: LaunchRequest| choose_shape(&model(32), &H100, &shared, 32, &r, "x").unwrap_err().to_string();
        assert!(bad(LaunchRequest { threads_per_block: Some(48), ..Default::default() }).contains("multiple of 32"));
        assert!(bad(LaunchRequest { copies: Some(3), ..Default::default() }).contains("power of two"));
        assert!(bad(LaunchRequest { blocks_per_sm: Some(0), ..Default::default() }).contains("at least one"));
        let huge = |_: u32| 300u64 << 10;
        let err = choose_shape(&model(32), &H100, &huge, 1, &LaunchRequest::default(), "65536 f64 sums").unwrap_err();
        assert!(err.to_string().contains("65536 f64 sums") && err.to_string().contains("300.00 KiB"), "{err}");
    }

    #[test]
    fn the_shared_tiers_threads_and_copies_come_from_the_occupancy_of_its_kernel() {
        use crate::histogram::{HistogramTier, PlanRequest, plan_for};
        let open = PlanRequest::default();
        // 40 registers (the release u8 kernel): 768-thread blocks keep 1536 threads per SM where
        // 1024-thread blocks keep 1024.
        let r = shared_tier_request_for(&H100, &model(40), 256, open).unwrap();
        assert_eq!((r.threads_per_block, r.copies), (Some(768), Some(32)));
        let plan = plan_for(&H100, 256, r).unwrap();
        assert_eq!((plan.tier, plan.threads_per_block, plan.copies), (HistogramTier::Shared, 768, 32));
        // 8192 bins: one copy of 32 KiB per block; two keep 1536 threads per SM as well.
        let r = shared_tier_request_for(&H100, &model(40), 8192, open).unwrap();
        assert_eq!(r.copies, Some(2));
        // Fixed threads and copies, other tiers and bins past one block are left alone.
        let fixed = PlanRequest { threads_per_block: Some(256), copies: Some(4), ..open };
        assert_eq!(shared_tier_request_for(&H100, &model(40), 256, fixed).unwrap(), fixed);
        let sorted = PlanRequest { tier: Some(HistogramTier::Sorted), ..open };
        assert_eq!(shared_tier_request_for(&H100, &model(40), 256, sorted).unwrap(), sorted);
        assert_eq!(shared_tier_request_for(&H100, &model(40), 100_000, open).unwrap(), open);
        let threads = PlanRequest { threads_per_block: Some(1024), ..open };
        assert_eq!(shared_tier_request_for(&H100, &model(40), 256, threads).unwrap().copies, Some(32));
    }

    #[test]
    fn launches_describe_their_grid_and_shared_memory() {
        let shape = Shape { threads: 512, copies: 8, blocks_per_sm: 3, shared_bytes: 8192 };
        let l = KernelLaunch::new("histogram_channels1_u8", shape, 132);
        assert_eq!(l.blocks(), 396);
        assert_eq!(
            l.to_string(),
            "histogram_channels1_u8: 396 blocks x 512 threads, 8.00 KiB shared per block (8 copies)"
        );
        assert_eq!(l.config().shared_mem_bytes, 8192);
    }
}
