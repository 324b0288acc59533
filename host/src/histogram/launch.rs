//! The launches of a planned histogram on device buffers: the tier's kernel (three passes for the
//! bucketed tier, two for the sorted), adding into counters without zeroing them.

use super::HistogramTier;
use super::occupancy::{prepared_function, threads_that_fit, tile_sort_threads};
use super::plan::*;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::gpu::launch_in_clusters;
use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use kernels::histogram::bucketed::{self, SCATTER_THREADS};
use kernels::histogram::sorted;
use kernels::histogram::{Binning, InputType};
use kernels::histogram::{channels, packed, shared_bytes};
use std::ffi::c_void;
use std::sync::Arc;

/// The bucketed and sorted tiers' buffers: each value's low bits (bucket after bucket, or tile
/// after tile sorted by bucket), per bucket its count and the scatter's cursor, and the sorted
/// tier's table of where each bucket starts in each tile, which the packed tier's 6-bit kernels
/// take for their blocks' counters. One per stream that launches these tiers; allocated by
/// [`launch_into`] on first use and grown when a launch needs more.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::cudarc::driver::{DevicePtr, DevicePtrMut};
/// use hopper_kernels::histogram::{self, Binning, BucketScratch, DeviceCounters, DeviceInput};
/// use hopper_kernels::histogram::{HistogramTier, InputType};
/// let gpu = Gpu::open(0)?;
/// let (n, bins) = (1 << 24, 1 << 20);
/// let plan = histogram::plan(&gpu, bins, Some(HistogramTier::Sorted))?;
/// let (values, mut counts) = (gpu.upload(&vec![5i32; n])?, gpu.zeros::<u32>(bins)?);
/// let (v, _v_sync) = values.device_ptr(gpu.stream());
/// let (c, _c_sync) = counts.device_ptr_mut(gpu.stream());
/// // SAFETY: n i32 and `bins` u32 in two allocations, written by nothing else meanwhile.
/// let input = unsafe { DeviceInput::new(v, InputType::I32, Binning::integers(bins as u32), n as u64) };
/// let counters = unsafe { DeviceCounters::new(c, bins) };
/// let mut scratch: Option<BucketScratch> = None; // one per stream
/// histogram::launch_into(&gpu, &plan, gpu.stream(), &input, counters, &mut scratch)?;
/// assert!(scratch.is_some()); // allocated by the first launch, reused by the next
/// # Ok(()) }
/// ```
pub struct BucketScratch {
    keys: CudaSlice<u16>,
    bucket_counts: CudaSlice<u32>,
    cursors: CudaSlice<u32>,
    table: CudaSlice<u32>,
}

impl BucketScratch {
    /// Makes `scratch` hold at least `keys` keys and `table` table entries (reallocating both when
    /// either is short, each at least as long as before), checking free memory first.
    fn ensure<'a>(gpu: &Gpu, scratch: &'a mut Option<Self>, keys: u64, table: u64) -> Result<&'a mut Self> {
        let held = scratch.as_ref().map_or((0, 0), |s| (s.keys.len() as u64, s.table.len() as u64));
        let (keys, table) = (keys.max(8), table.max(1));
        if held.0 < keys || held.1 < table {
            let (keys, table) = (keys.max(held.0), table.max(held.1));
            gpu.ensure_not_capturing("the bucketed, sorted and 6-bit packed histogram tiers' scratch")?;
            *scratch = None;
            let buckets = bucketed::MAX_BUCKETS as u64;
            gpu.ensure_fits(
                &format!("the histogram tiers' scratch for {keys} keys and {table} table entries"),
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

/// Values on the device as the kernels read them: a device address that holds `n` values of
/// `element` (16-byte aligned where the kernels read 16 bytes at a time), counted by `binning`.
/// Built only by [`DeviceInput::new`] (or from a checked device slice by [`super::Histogram`]),
/// so a launch can trust it.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::cudarc::driver::DevicePtr;
/// use hopper_kernels::histogram::{Binning, DeviceInput, InputType};
/// let gpu = Gpu::open(0)?;
/// let values = gpu.upload(&[1.5f32, 2.5, 9.0])?;
/// let (address, _sync) = values.device_ptr(gpu.stream());
/// // SAFETY: `values` holds 3 f32, 16-byte aligned (an allocation), unwritten until the launches end.
/// let input = unsafe { DeviceInput::new(address, InputType::F32, Binning::range(4, 0.0, 4.0), 3) };
/// assert_eq!((input.element(), input.len()), (InputType::F32, 3));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DeviceInput {
    address: u64,
    element: InputType,
    binning: Binning,
    n: u64,
}

impl DeviceInput {
    /// Values at `address`, `n` of `element`, counted by `binning`.
    ///
    /// # Safety
    /// `address` is a live device allocation of this context holding at least `n` values of
    /// `element`, 16-byte aligned, and nothing writes it until the launches that read it finish.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::cudarc::driver::DevicePtr;
    /// use hopper_kernels::histogram::{Binning, DeviceInput, InputType};
    /// let gpu = Gpu::open(0)?;
    /// let values = gpu.upload(&[0u8; 4096])?;
    /// let (address, _sync) = values.device_ptr(gpu.stream());
    /// // SAFETY: the first 1024 of the 4096 bytes; an allocation is 16-byte aligned; nothing writes it.
    /// let input = unsafe { DeviceInput::new(address, InputType::U8, Binning::integers(256), 1024) };
    /// # Ok(()) }
    /// ```
    pub unsafe fn new(address: u64, element: InputType, binning: Binning, n: u64) -> Self {
        Self { address, element, binning, n }
    }

    /// The values' type.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::cudarc::driver::DevicePtr;
    /// use hopper_kernels::histogram::{Binning, DeviceInput, InputType};
    /// let gpu = Gpu::open(0)?;
    /// let values = gpu.upload(&[1u16, 2, 3])?;
    /// let (address, _sync) = values.device_ptr(gpu.stream());
    /// // SAFETY: 3 u16 of an allocation, unwritten until the launches end.
    /// let input = unsafe { DeviceInput::new(address, InputType::U16, Binning::integers(4), 3) };
    /// assert_eq!(input.element(), InputType::U16);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// How many values.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::cudarc::driver::DevicePtr;
    /// use hopper_kernels::histogram::{Binning, DeviceInput, InputType};
    /// let gpu = Gpu::open(0)?;
    /// let values = gpu.upload(&[1i32, 2, 3])?;
    /// let (address, _sync) = values.device_ptr(gpu.stream());
    /// // SAFETY: 3 i32 of an allocation, unwritten until the launches end.
    /// let input = unsafe { DeviceInput::new(address, InputType::I32, Binning::integers(4), 3) };
    /// assert_eq!(input.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether there are none.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::cudarc::driver::DevicePtr;
    /// use hopper_kernels::histogram::{Binning, DeviceInput, InputType};
    /// let gpu = Gpu::open(0)?;
    /// let values = gpu.zeros::<i32>(16)?;
    /// let (address, _sync) = values.device_ptr(gpu.stream());
    /// // SAFETY: no values are read.
    /// let input = unsafe { DeviceInput::new(address, InputType::I32, Binning::integers(4), 0) };
    /// assert!(input.is_empty()); // launch_into launches nothing for it
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Counters on the device: `bins` `u32` at a device address.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::cudarc::driver::DevicePtrMut;
/// use hopper_kernels::histogram::DeviceCounters;
/// let gpu = Gpu::open(0)?;
/// let mut counts = gpu.zeros::<u32>(256)?;
/// let (address, _sync) = counts.device_ptr_mut(gpu.stream());
/// // SAFETY: 256 u32 of an allocation that only histogram launches write while they run.
/// let counters = unsafe { DeviceCounters::new(address, 256) };
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DeviceCounters {
    address: u64,
    bins: usize,
}

impl DeviceCounters {
    /// `bins` counters at `address`.
    ///
    /// # Safety
    /// `address` is a live device allocation of this context holding at least `bins` `u32`, that
    /// nothing but histogram launches writes while they run.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::cudarc::driver::DevicePtrMut;
    /// use hopper_kernels::histogram::DeviceCounters;
    /// let gpu = Gpu::open(0)?;
    /// let mut counts = gpu.zeros::<u32>(1024)?;
    /// let (address, _sync) = counts.device_ptr_mut(gpu.stream());
    /// // SAFETY: the first 256 of 1024 u32, written only by histogram launches while they run.
    /// let counters = unsafe { DeviceCounters::new(address, 256) };
    /// # Ok(()) }
    /// ```
    pub unsafe fn new(address: u64, bins: usize) -> Self {
        Self { address, bins }
    }
}

/// Enqueues the planned kernel on `stream`, adding the counts of the `input` values into
/// `counts` without zeroing them first: several launches, on any streams, add into one set of
/// counters (the kernels add atomically). The bucketed tier keeps its buffers in `scratch`, one
/// per stream. Nothing is launched for `n = 0`; more than `u32::MAX` values are refused (the
/// counts and the bucketed tier's offsets are `u32`).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::cudarc::driver::{DevicePtr, DevicePtrMut};
/// use hopper_kernels::histogram::{self, Binning, DeviceCounters, DeviceInput, InputType};
/// let gpu = Gpu::open(0)?;
/// let plan = histogram::plan(&gpu, 4, None)?;
/// let values = gpu.upload(&[0i32, 1, 1, 3])?;
/// let mut counts = gpu.zeros::<u32>(4)?;
/// {
///     let (v, _v_sync) = values.device_ptr(gpu.stream());
///     let (c, _c_sync) = counts.device_ptr_mut(gpu.stream());
///     // SAFETY: 4 i32 and 4 u32 of two allocations, neither written by anything else meanwhile.
///     let input = unsafe { DeviceInput::new(v, InputType::I32, Binning::integers(4), 4) };
///     let counters = unsafe { DeviceCounters::new(c, 4) };
///     // Twice, adding into the same counters.
///     histogram::launch_into(&gpu, &plan, gpu.stream(), &input, counters, &mut None)?;
///     histogram::launch_into(&gpu, &plan, gpu.stream(), &input, counters, &mut None)?;
/// }
/// assert_eq!(gpu.download(&counts)?, [2, 4, 0, 2]);
/// # Ok(()) }
/// ```
pub fn launch_into(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput,
    counts: DeviceCounters,
    scratch: &mut Option<BucketScratch>,
) -> Result<()> {
    check_launch(plan, counts.bins, input.binning, input.n)?;
    let n = input.n;
    if n == 0 {
        return Ok(());
    }
    let func = prepared_function(gpu, plan, input.element)?;
    let Binning { nbins, lo, hi, scale } = input.binning;
    let aggregate = plan.aggregate() as u32;
    let (bytes, counts) = (&input.address, &counts.address);
    match plan.tier() {
        HistogramTier::Shared if !plan.aggregate() => {
            let mut launch = stream.launch_builder(&func);
            let (active, phase, copies) = (1u32, 0u32, plan.copies());
            launch.arg(bytes).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
            launch.arg(&active).arg(&phase).arg(&copies);
            // SAFETY: kernel contract (kernels::histogram::channels, one channel, packing 0):
            // input holds n values of the kernel's type (checked above), counts holds nbins
            // counters, copies is a power of two up to 32 and the launch provides nbins * copies
            // * 4 bytes of shared memory.
            unsafe { launch.launch(plan.launch_config()) }?;
        }
        HistogramTier::Shared => {
            let mut launch = stream.launch_builder(&func);
            let shift = 0u32;
            launch.arg(bytes).arg(&n).arg(counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
            let copies = plan.copies();
            launch.arg(&shift).arg(&copies).arg(&aggregate);
            // SAFETY: kernel contract (kernels::histogram): input holds n values of the kernel's
            // type (checked above), counts holds nbins counters, copies is a power of two up to
            // 32 and the launch provides nbins * copies * 4 bytes of shared memory.
            unsafe { launch.launch(plan.launch_config()) }?;
        }
        HistogramTier::Packed => {
            let (copies, mode, window) = (1u32, plan.packed_mode(), plan.bins_per_block());
            // Counters with a carry table (6- and 4-bit) store each block's digits to a scratch
            // table, which a second kernel sums into the counts; the other packings add their own.
            let packing = plan.packing();
            let mut table_digits = match channels::packed_sum_kernel(packing) {
                Some(sum) => {
                    let words = packed::words_for(window, packing);
                    let s = BucketScratch::ensure(gpu, scratch, 0, plan.blocks() as u64 * words as u64)?;
                    Some((s, gpu.function(sum)?))
                }
                None => None,
            };
            // A plan made for another input type may give this type's kernel more threads than
            // its registers allow (the carry-table kernels take 768): as many as fit, as the tile
            // sort does.
            let threads = threads_that_fit(gpu, plan.kernel(input.element), plan.threads_per_block())?;
            let config = LaunchConfig { block_dim: (threads, 1, 1), ..plan.launch_config() };
            // One pass per window of the bins, each into its own slice of the counts.
            let mut first = 0u32;
            while first < nbins {
                let len = window.min(nbins - first);
                let at = *counts + 4 * first as u64;
                let mut launch = stream.launch_builder(&func);
                launch.arg(bytes).arg(&n).arg(&at).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
                // The carry-table kernels hold one copy and take no copy count.
                if table_digits.is_none() {
                    launch.arg(&copies);
                }
                launch.arg(&mode).arg(&first).arg(&len);
                if let Some((s, _)) = table_digits.as_mut() {
                    launch.arg(&mut s.table);
                }
                // SAFETY: kernel contract (kernels::histogram::channels, one channel): input holds
                // n values of the kernel's type (checked above); `at` holds the counters of bins
                // first..first + len (first + len <= nbins, the counters' length); the launch
                // provides the planner's shared_bytes: packed::counter_bytes(window, packing, 1)
                // (len <= window), plus packed::carry_plane_bytes(window) with the carry plane or
                // packed::carry_table_bytes(packing) with 6- or 4-bit counters
                // (histogram_packed6_*, histogram_packed4_*), whose scratch table holds
                // words_for(window) >= words_for(len) words for each of the grid's blocks.
                unsafe { launch.launch(config) }?;
                if let Some((s, sum)) = table_digits.as_ref() {
                    let (blocks, len_words) = (plan.blocks(), packed::words_for(len, packing));
                    let mut launch = stream.launch_builder(sum);
                    launch.arg(&s.table).arg(&blocks).arg(&len_words).arg(&len).arg(&at);
                    let cfg = LaunchConfig {
                        grid_dim: (len_words.div_ceil(channels::PACKED6_SUM_THREADS), channels::PACKED6_SUM_SLICES, 1),
                        block_dim: (channels::PACKED6_SUM_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    // SAFETY: kernel contract (histogram_packed6_sum_blocks and packed4): the count before it
                    // on this stream stored words_for(len) words for each of its `blocks` blocks
                    // (the plan's grid) into the scratch table; `at` holds len counters.
                    unsafe { launch.launch(cfg) }?;
                }
                first += len;
            }
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
            let threads = tile_sort_threads(gpu, input.element, plan.threads_per_block())?;
            let tile = sorted::tile_values(threads, input.element.size());
            let tiles = sorted::tiles(n, tile);
            let buckets = bucketed::bucket_count(nbins, plan.bucket_shift());
            let s = BucketScratch::ensure(gpu, scratch, sorted::keys_len(n, tile), sorted::table_len(buckets, tiles))?;
            launch_sorted(gpu, plan, stream, input, counts, s, &func, threads)?;
        }
        HistogramTier::Cluster => {
            let (mut input_ptr, mut n, mut counts, mut nbins, mut lo, mut hi, mut scale, mut per_block, mut aggregate) =
                (*bytes, n, *counts, nbins, lo, hi, scale, plan.bins_per_block(), aggregate);
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
            // SAFETY: kernel contract: the parameters match histogram_cluster_*'s signature, the
            // grid is a multiple of the cluster size, cluster_size * bins_per_block >= bins, and
            // the dynamic shared memory is bins_per_block * 4 bytes.
            unsafe { launch_in_clusters(&func, plan.launch_config(), stream, plan.cluster_size(), &mut params) }?;
        }
    }
    Ok(())
}

/// Fails unless a launch of `plan` can count `n` values by `binning` into `counts` counters: the
/// bin counts agree, and `n` fits the kernels' `u32` counts and the bucketed tier's `u32` offsets.
fn check_launch(plan: &HistogramPlan, counts: usize, binning: Binning, n: u64) -> Result<()> {
    if plan.bins() as usize != counts || binning.nbins != plan.bins() {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} bins, the counters hold {counts} and the binning has {}",
            plan.bins(),
            binning.nbins
        )));
    }
    if n > u32::MAX as u64 {
        return Err(Error::LimitExceeded {
            what: "values in one launch (the counters are u32)".into(),
            value: n,
            limit: u32::MAX as u64,
        });
    }
    Ok(())
}

/// The bucketed tier's three passes on `stream`; `bins_pass` is the prepared bins-pass kernel.
fn launch_bucketed(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput,
    counts: &u64,
    s: &mut BucketScratch,
    bins_pass: &CudaFunction,
) -> Result<()> {
    stream.memset_zeros(&mut s.bucket_counts)?;
    stream.memset_zeros(&mut s.cursors)?;
    let (element, n) = (input.element, input.n);
    let Binning { nbins, lo, hi, scale } = input.binning;
    let (shift, copies, no_aggregate) = (plan.bucket_shift(), plan.copies(), 0u32);
    let buckets = bucketed::bucket_count(nbins, shift);
    let count_pass = gpu.function(element.kernels().shared)?;
    let count_shared = shared_bytes(buckets * copies);
    count_pass.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, count_shared as i32)?;
    let mut launch = stream.launch_builder(&count_pass);
    launch.arg(&input.address).arg(&n).arg(&mut s.bucket_counts).arg(&nbins).arg(&lo).arg(&hi).arg(&scale);
    launch.arg(&shift).arg(&copies).arg(&no_aggregate);
    let cfg = LaunchConfig {
        grid_dim: (plan.count_blocks(), 1, 1),
        block_dim: (THREADS_PER_BLOCK, 1, 1),
        shared_mem_bytes: count_shared,
    };
    // SAFETY: kernel contract (kernels::histogram) with `shift`: bucket_counts holds
    // ((nbins - 1) >> shift) + 1 <= MAX_BUCKETS counters, and the launch provides that many
    // times `copies` (a power of two up to 32) times 4 bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    let scatter = gpu.function(element.kernels().scatter)?;
    let mut launch = stream.launch_builder(&scatter);
    launch.arg(&input.address).arg(&n).arg(&nbins).arg(&lo).arg(&hi).arg(&scale).arg(&shift);
    launch.arg(&s.bucket_counts).arg(&mut s.cursors).arg(&mut s.keys);
    let cfg = LaunchConfig {
        grid_dim: (plan.scatter_blocks(), 1, 1),
        block_dim: (SCATTER_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: kernel contract (kernels::histogram::bucketed): the bucket counts are complete
    // (same stream), cursors are zeroed, keys holds n u16, the block has SCATTER_THREADS threads.
    unsafe { launch.launch(cfg) }?;
    let aggregate = plan.aggregate() as u32;
    let mut launch = stream.launch_builder(bins_pass);
    launch.arg(&s.keys).arg(&s.bucket_counts).arg(counts).arg(&nbins).arg(&shift).arg(&aggregate);
    let cfg = plan.launch_config();
    // SAFETY: kernel contract: keys and bucket counts are complete, counts holds nbins zeroed
    // counters, the launch provides 2^shift * 4 bytes of shared memory.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// The sorted tier's two passes on `stream`; `bins_pass` is the prepared bins-pass kernel, and
/// the tile sort runs `threads` threads per block (from `tile_sort_threads`).
#[allow(clippy::too_many_arguments)]
fn launch_sorted(
    gpu: &Gpu,
    plan: &HistogramPlan,
    stream: &Arc<CudaStream>,
    input: &DeviceInput,
    counts: &u64,
    s: &mut BucketScratch,
    bins_pass: &CudaFunction,
    threads: u32,
) -> Result<()> {
    stream.memset_zeros(&mut s.bucket_counts)?;
    let (element, n) = (input.element, input.n);
    let Binning { nbins, lo, hi, scale } = input.binning;
    let shift = plan.bucket_shift();
    let buckets = bucketed::bucket_count(nbins, shift);
    if plan.blocks() <= buckets {
        return Err(Error::InvalidArgument(format!(
            "the sorted tier's bins pass needs more than {buckets} blocks; the plan has {}",
            plan.blocks()
        )));
    }
    let tile = sorted::tile_values(threads, element.size());
    let stage = sorted::stage_bytes(threads, element.size());
    let tile_sort = gpu.function(element.kernels().tile_sort)?;
    tile_sort.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, stage as i32)?;
    let mut launch = stream.launch_builder(&tile_sort);
    launch.arg(&input.address).arg(&n).arg(&nbins).arg(&lo).arg(&hi).arg(&scale).arg(&shift);
    launch.arg(&mut s.keys).arg(&mut s.table).arg(&mut s.bucket_counts);
    let tiles = sorted::tiles(n, tile);
    let cfg = LaunchConfig {
        grid_dim: ((plan.scatter_blocks() as u64).min(tiles) as u32, 1, 1),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_need_matching_bins_and_at_most_u32_max_values() {
        let plan = plan_for(&crate::histogram::HistogramLimits::H100, 256, PlanRequest::default()).unwrap();
        let b = Binning::integers(256);
        assert!(check_launch(&plan, 256, b, 4).is_ok());
        assert!(check_launch(&plan, 256, b, 0).is_ok());
        let err = |r: Result<()>| r.unwrap_err().to_string();
        assert!(err(check_launch(&plan, 255, b, 4)).contains("the counters hold 255"));
        assert!(err(check_launch(&plan, 256, Binning::integers(7), 4)).contains("binning has 7"));
        let max = u32::MAX as u64;
        assert!(check_launch(&plan, 256, b, max).is_ok());
        let over = err(check_launch(&plan, 256, b, max + 1));
        assert!(over.contains("counters are u32"), "{over}");
    }
}
