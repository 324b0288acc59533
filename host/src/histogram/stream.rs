//! Histograms of inputs larger than the GPU: a file is cut into chunks ([`plan_chunks`]) and each
//! chunk into pieces ([`plan_pieces`]), pure and tested on the CPU. Producer threads prepare the
//! pieces ahead, each taking the next piece not yet taken ([`ReadMode::Copy`], the default: readers
//! copy pieces of the mapped file into pinned buffers; [`ReadMode::Pinned`]: readers `pread` them
//! into pinned buffers; [`ReadMode::Mapped`]: lockers page-lock each piece of the mapped file in
//! place; [`ReadMode::Mixed`]: lockers and copying readers). Each chunk goes to one of two or more
//! streams, each with a chunk buffer on the device: a reader enqueues its piece's copy there
//! itself, as soon as the piece is in its pinned buffer, and the main thread enqueues the locked
//! pieces' copies in order; once every piece of a chunk is enqueued, the main thread counts the
//! chunk on its stream with the planned kernel, into one set of counters. Copies of one chunk
//! overlap the counting of the previous one and the preparation of the next ones.
//! [`StreamPhases`] says where the time went.
//!
//! Counters are `u32`: before the values counted into them could exceed `u32::MAX` (a bin could
//! overflow), they are added into `u64` totals on the host and zeroed; [`plan_chunks`] marks
//! those chunks.

use crate::error::{Error, Result, format_bytes};
use crate::gpu::Gpu;
use crate::histogram::{
    self, Binning, BucketScratch, DeviceCounters, DeviceInput, HistogramPlan, InputType, Values, ValuesBuf,
};
use crate::io::DataFile;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, PinnedHostSlice, sys};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Instant;

/// Chunk size unless the caller names one.
///
/// ```
/// use hopper_kernels::histogram::stream::{DEFAULT_CHUNK_BYTES, StreamOptions, chunk_bytes_for};
/// assert_eq!(StreamOptions::default().chunk_bytes, DEFAULT_CHUNK_BYTES);
/// // A device with 141 GB free takes the default; one with 600 MiB free, less.
/// assert_eq!(chunk_bytes_for(141 << 30, 2), DEFAULT_CHUNK_BYTES);
/// assert!(chunk_bytes_for(600 << 20, 2) < DEFAULT_CHUNK_BYTES);
/// ```
pub const DEFAULT_CHUNK_BYTES: u64 = 256 << 20;

/// Piece size unless the caller names one. With [`READER_BUFFERS`] buffers per reader, the
/// default readers' pinned buffers (96 MiB) fit in the last-level cache of the H100 machine's CPU
/// (300 MiB), where the copy engine may find a piece just written without another pass over host
/// memory: a probe of 12 copying threads with pieces of 4 MiB streamed 49.6 GB/s (0.90 of the
/// pinned copy), of 2 MiB 46.2, with non-temporal stores (which bypass the cache) 42.4.
///
/// ```
/// use hopper_kernels::histogram::stream::{DEFAULT_PIECE_BYTES, READER_BUFFERS, StreamOptions};
/// let o = StreamOptions::default();
/// // The default readers' pinned buffers: 12 readers x 2 buffers x 4 MiB = 96 MiB.
/// assert_eq!(o.readers as u64 * READER_BUFFERS as u64 * DEFAULT_PIECE_BYTES, 96 << 20);
/// ```
pub const DEFAULT_PIECE_BYTES: u64 = 4 << 20;

/// Pinned buffers of a piece each per reader: one is filled while the other's copy runs.
///
/// ```
/// use hopper_kernels::histogram::stream::{READER_BUFFERS, StreamOptions};
/// // Each reader fills one pinned buffer while the other's copy runs.
/// let o = StreamOptions::default();
/// assert_eq!(READER_BUFFERS as u64 * o.piece_bytes, 8 << 20);
/// ```
pub const READER_BUFFERS: usize = 2;

/// Most values the counters take between two flushes into the host's `u64` totals: then no
/// `u32` bin can overflow, whatever the values.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::stream::{FLUSH_LIMIT, plan_chunks};
/// // 10 billion values in chunks of 2^30: the u32 counters are flushed after every 3 chunks
/// // (4 would pass 2^32 - 1), and after the last.
/// let chunks = plan_chunks(10_000_000_000, 1 << 30, 0, FLUSH_LIMIT)?;
/// let flushed: Vec<usize> = chunks.iter().filter(|c| c.flush_after).map(|c| c.index).collect();
/// assert_eq!(flushed, [2, 5, 9]);
/// # Ok(()) }
/// ```
pub const FLUSH_LIMIT: u64 = u32::MAX as u64;

/// One chunk of the input.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::stream::{Chunk, plan_chunks};
/// // 10 values in chunks of 4, the first shorter by a lead of 1 value.
/// let chunks = plan_chunks(10, 4, 1, u32::MAX as u64)?;
/// assert_eq!(chunks[1], Chunk { index: 1, first: 3, len: 4, flush_after: false });
/// assert_eq!(chunks.iter().map(|c| c.len).collect::<Vec<_>>(), [3, 4, 3]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Position in the input, from 0.
    pub index: usize,
    /// First value.
    pub first: u64,
    /// Values in the chunk.
    pub len: u64,
    /// Whether the counters are added into the totals and zeroed after this chunk: after the
    /// last chunk, and before the values since the last flush would pass the flush limit.
    pub flush_after: bool,
}

/// Cuts `n` values into chunks of `chunk` values (the first one shorter by `lead` values, the
/// last one ragged), flushing the counters before more than `flush_limit` values are counted
/// into them. No chunks for `n = 0`.
///
/// ```
/// use hopper_kernels::histogram::stream::plan_chunks;
/// let chunks = plan_chunks(10, 4, 0, u32::MAX as u64).unwrap();
/// let lens: Vec<u64> = chunks.iter().map(|c| c.len).collect();
/// assert_eq!(lens, [4, 4, 2]);
/// assert!(chunks[2].flush_after);
/// ```
pub fn plan_chunks(n: u64, chunk: u64, lead: u64, flush_limit: u64) -> Result<Vec<Chunk>> {
    if chunk == 0 {
        return Err(Error::InvalidArgument("a chunk of 0 values: chunks need at least one value".into()));
    }
    if chunk > flush_limit {
        return Err(Error::InvalidArgument(format!(
            "chunks of {chunk} values exceed the {flush_limit} values the u32 counters take between flushes"
        )));
    }
    if lead >= chunk {
        return Err(Error::InvalidArgument(format!("a lead of {lead} values leaves nothing of a {chunk}-value chunk")));
    }
    let mut chunks = Vec::with_capacity(n.div_ceil(chunk) as usize + 1);
    let mut since_flush = 0u64;
    let mut first = 0u64;
    while first < n {
        let index = chunks.len();
        let len = (if index == 0 { chunk - lead } else { chunk }).min(n - first);
        since_flush += len;
        let next = (first + len < n).then(|| chunk.min(n - first - len));
        let flush_after = next.is_none_or(|next| since_flush + next > flush_limit);
        if flush_after {
            since_flush = 0;
        }
        chunks.push(Chunk { index, first, len, flush_after });
        first += len;
    }
    Ok(chunks)
}

/// Parses a byte count with an optional binary unit: `4096`, `64KiB`, `256MiB`, `1GiB` (also
/// `K`, `M`, `G`, `KB`, `MB`, `GB`, read as binary units).
///
/// ```
/// use hopper_kernels::histogram::stream::parse_bytes;
/// assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
/// assert_eq!(parse_bytes("4096"), Ok(4096));
/// assert_eq!(parse_bytes("1 g"), Ok(1 << 30)); // binary units, any case
/// assert!(parse_bytes("12 parsecs").unwrap_err().contains("unknown unit"));
/// ```
pub fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a size such as 256MiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (use B, KiB, MiB or GiB)")),
    };
    number.checked_mul(1 << shift).ok_or_else(|| format!("`{text}` is too large"))
}

/// Checks a chunk (or piece) size for a read mode: a positive multiple of [`PAGE_BYTES`] when
/// pieces are locked in place (whole pages), of 16 bytes otherwise (whole 16-byte loads).
///
/// ```
/// use hopper_kernels::histogram::stream::{PAGE_BYTES, ReadMode, check_chunk_bytes};
/// assert!(check_chunk_bytes(256 << 20, ReadMode::Mapped).is_ok());
/// assert!(check_chunk_bytes(PAGE_BYTES + 16, ReadMode::Pinned).is_ok());
/// assert!(check_chunk_bytes(PAGE_BYTES + 16, ReadMode::Mapped).is_err());
/// ```
pub fn check_chunk_bytes(chunk_bytes: u64, read: ReadMode) -> Result<()> {
    let granule = if read.locks() { PAGE_BYTES } else { 16 };
    if chunk_bytes < granule || !chunk_bytes.is_multiple_of(granule) {
        return Err(Error::InvalidArgument(format!(
            "a chunk of {chunk_bytes} bytes: use a positive multiple of {granule} bytes ({})",
            if read.locks() { "whole pages, locked in place" } else { "whole 16-byte loads" }
        )));
    }
    Ok(())
}

/// How to stream.
///
/// ```
/// use hopper_kernels::histogram::stream::{ReadMode, StreamOptions, check_chunk_bytes};
/// // Page-locked chunks of 64 MiB in place, on three streams.
/// let o = StreamOptions { chunk_bytes: 64 << 20, streams: 3, read: ReadMode::Mapped, ..StreamOptions::default() };
/// assert!(check_chunk_bytes(o.chunk_bytes, o.read).is_ok());
/// assert_eq!(StreamOptions::default().read, ReadMode::Copy);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes per chunk: a multiple of [`PAGE_BYTES`] when chunks are locked in place, of 16 when
    /// only read into pinned buffers (see [`check_chunk_bytes`]); smaller files take one chunk of
    /// their own size.
    pub chunk_bytes: u64,
    /// CUDA streams the chunks alternate over (at least 2), each with its device buffer.
    pub streams: usize,
    /// Threads that page-lock chunks of the mapped file in place ([`ReadMode::Mapped`] and
    /// [`ReadMode::Mixed`]).
    pub lockers: usize,
    /// Threads that each read whole chunks into pinned buffers ([`ReadMode::Pinned`] and
    /// [`ReadMode::Mixed`]).
    pub readers: usize,
    /// Bytes per piece: chunks are locked, read and copied in pieces of this size where it
    /// divides them (see [`piece_bytes_for`]), whole chunks otherwise. Each reader has
    /// [`READER_BUFFERS`] pinned buffers of a piece.
    pub piece_bytes: u64,
    /// Pieces page-locked in place at once (at least `streams` and `lockers`).
    pub ahead: usize,
    /// How chunks reach the copy engine.
    pub read: ReadMode,
}

/// How a streamed file's chunks reach the copy engine.
///
/// ```
/// use hopper_kernels::histogram::stream::ReadMode;
/// assert_eq!("Pinned".parse::<ReadMode>(), Ok(ReadMode::Pinned));
/// assert_eq!(ReadMode::Mixed.to_string(), "mixed");
/// assert!("mmap".parse::<ReadMode>().unwrap_err().contains("choose from mapped, pinned, copy, mixed"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// The file is mapped, and each chunk's pages are page-locked in place (read-only), so the
    /// copy engine reads the page cache directly: no CPU copy of the data.
    Mapped,
    /// Reader threads copy each chunk into pinned buffers (`pread`), which the copy engine reads:
    /// one more pass over host memory, but no mapping of the file.
    Pinned,
    /// Reader threads copy each piece of the mapped file into pinned buffers, which the copy
    /// engine reads: no system call and no driver call but the copy per piece.
    Copy,
    /// Lockers and copying readers at once, each taking the next piece not yet taken.
    Mixed,
}

named_enum!(ReadMode, "read mode");

impl ReadMode {
    /// Every mode.
    pub const ALL: [Self; 4] = [Self::Mapped, Self::Pinned, Self::Copy, Self::Mixed];

    /// The name `--read` takes.
    ///
    /// ```
    /// use hopper_kernels::histogram::stream::ReadMode;
    /// let names: Vec<&str> = ReadMode::ALL.iter().map(|m| m.name()).collect();
    /// assert_eq!(names, ["mapped", "pinned", "copy", "mixed"]);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Mapped => "mapped",
            Self::Pinned => "pinned",
            Self::Copy => "copy",
            Self::Mixed => "mixed",
        }
    }

    /// Whether chunks are page-locked in place (then they start on [`PAGE_BYTES`] boundaries).
    ///
    /// ```
    /// use hopper_kernels::histogram::stream::ReadMode;
    /// let locking: Vec<ReadMode> = ReadMode::ALL.into_iter().filter(|m| m.locks()).collect();
    /// assert_eq!(locking, [ReadMode::Mapped, ReadMode::Mixed]);
    /// ```
    pub fn locks(self) -> bool {
        matches!(self, ReadMode::Mapped | ReadMode::Mixed)
    }

    /// Whether chunks are read or copied into pinned buffers.
    ///
    /// ```
    /// use hopper_kernels::histogram::stream::ReadMode;
    /// let reading: Vec<ReadMode> = ReadMode::ALL.into_iter().filter(|m| m.reads()).collect();
    /// assert_eq!(reading, [ReadMode::Pinned, ReadMode::Copy, ReadMode::Mixed]);
    /// ```
    pub fn reads(self) -> bool {
        self != ReadMode::Mapped
    }

    /// Whether readers copy from the mapped file (rather than `pread` it).
    ///
    /// ```
    /// use hopper_kernels::histogram::stream::ReadMode;
    /// assert!(ReadMode::Copy.copies_mapping() && ReadMode::Mixed.copies_mapping());
    /// assert!(!ReadMode::Pinned.copies_mapping()); // pread instead
    /// ```
    pub fn copies_mapping(self) -> bool {
        matches!(self, ReadMode::Copy | ReadMode::Mixed)
    }
}

/// The chunk for `streams` streams on a device with `free_memory` bytes free: at most
/// [`DEFAULT_CHUNK_BYTES`], small enough that a chunk per stream fits beside the counters with
/// room to spare, and a whole number of [`PAGE_BYTES`] (at least one).
///
/// ```
/// use hopper_kernels::histogram::stream::{PAGE_BYTES, chunk_bytes_for};
/// assert_eq!(chunk_bytes_for(80 << 30, 2), 256 << 20);
/// // 600 MiB free: a chunk per stream, and as much again to spare, in whole pages.
/// assert_eq!(chunk_bytes_for(600 << 20, 2), 100 << 20);
/// assert_eq!(chunk_bytes_for(1 << 20, 4), PAGE_BYTES); // at least a page
/// ```
pub fn chunk_bytes_for(free_memory: u64, streams: usize) -> u64 {
    let fits = DEFAULT_CHUNK_BYTES.min(free_memory / (2 * streams as u64 + 2));
    (fits / PAGE_BYTES * PAGE_BYTES).max(PAGE_BYTES)
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            streams: 2,
            lockers: 4,
            readers: 12,
            piece_bytes: DEFAULT_PIECE_BYTES,
            ahead: 16,
            read: ReadMode::Copy,
        }
    }
}

/// What a streamed histogram measured.
///
/// ```
/// use hopper_kernels::histogram::stream::{StreamPhases, StreamReport};
/// let report = StreamReport {
///     counts: vec![1_000_000_000, 0],
///     values: 1_000_000_000,
///     bytes: 4_000_000_000,
///     chunks: 15,
///     chunk_values: 1 << 26,
///     last_chunk_values: 1_000_000_000 - 14 * (1 << 26),
///     seconds: 0.5,
///     phases: StreamPhases::default(),
/// };
/// assert_eq!(report.gb_per_s(), 8.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StreamReport {
    /// Counts per bin.
    pub counts: Vec<u64>,
    /// Values counted.
    pub values: u64,
    /// Bytes of input read from the file and copied to the device.
    pub bytes: u64,
    /// Chunks.
    pub chunks: usize,
    /// Values per chunk (the first chunk of a mapped `.npy` file holds fewer, by its header's
    /// offset into its page; the last chunk may hold fewer).
    pub chunk_values: u64,
    /// Values in the last chunk (0 without chunks).
    pub last_chunk_values: u64,
    /// Wall time from the first read to the last count on the device, seconds.
    pub seconds: f64,
    /// Where the time went.
    pub phases: StreamPhases,
}

/// Where a streamed run's time went: seconds summed over the threads that spent them (so a
/// phase on several threads may exceed the wall time), and the pieces each path prepared.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram, io::DataFile};
/// use hopper_kernels::histogram::stream::{self, StreamOptions};
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// let file = DataFile::open(Path::new("values.npy"), None)?;
/// let binning = histogram::binning_for(file.element().input_type(), 256, None)?;
/// let plan = histogram::plan(&gpu, 256, None)?;
/// let report = stream::histogram_file(&gpu, &plan, &file, binning, StreamOptions::default())?;
/// let p = report.phases;
/// println!("{} pieces locked ({:.3} s), {} read ({:.3} s)", p.locked_pieces, p.lock_s, p.read_pieces, p.read_s);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamPhases {
    /// Mapping the file and allocating the pinned buffers, before the timed part.
    pub setup_s: f64,
    /// Pieces page-locked in place.
    pub locked_pieces: usize,
    /// In `cuMemHostRegister`, over all lockers.
    pub lock_s: f64,
    /// Lockers waiting for room among the chunks locked at once.
    pub lock_wait_s: f64,
    /// Pieces read into pinned buffers.
    pub read_pieces: usize,
    /// In `pread`, over all readers.
    pub read_s: f64,
    /// Readers waiting for their buffer's last copy, or for their chunk's device buffer to be
    /// free (its last chunk's count enqueued).
    pub read_wait_s: f64,
    /// The main thread waiting for the next piece in order to be prepared.
    pub ready_wait_s: f64,
    /// Enqueuing copies (readers and the main thread) and kernels (the main thread), flushes of
    /// the counters included.
    pub issue_s: f64,
    /// The unlocker waiting for locked pieces' copies to finish.
    pub copy_wait_s: f64,
    /// In `cuMemHostUnregister`.
    pub unlock_s: f64,
}

impl StreamReport {
    /// Input bytes per second over the whole run, GB/s (10^9 bytes).
    ///
    /// ```
    /// use hopper_kernels::histogram::stream::{StreamPhases, StreamReport};
    /// let report = |bytes, seconds| StreamReport {
    ///     counts: vec![],
    ///     values: bytes / 4,
    ///     bytes,
    ///     chunks: 1,
    ///     chunk_values: bytes / 4,
    ///     last_chunk_values: bytes / 4,
    ///     seconds,
    ///     phases: StreamPhases::default(),
    /// };
    /// assert_eq!(report(50_000_000_000, 1.0).gb_per_s(), 50.0);
    /// assert_eq!(report(0, 0.0).gb_per_s(), 0.0); // an empty file took no time
    /// ```
    pub fn gb_per_s(&self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds / 1e9 } else { 0.0 }
    }
}

/// A pinned host buffer and the event recorded after its last copy to the device, which the
/// reader waits on before filling it again.
struct Staging {
    /// Owns the allocation.
    _host: PinnedHostSlice<u8>,
    /// The buffer's first byte and length, read once: cudarc's accessors synchronize an event
    /// first, one more driver call per use.
    ptr: usize,
    len: usize,
    copied: CudaEvent,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The buffer is freed after this; a copy from it may still be in flight (a buffer left
        // in a channel when the run ends or fails), and freeing under a DMA read is undefined.
        let _ = self.copied.synchronize();
    }
}

/// Pieces a reader reads a chunk in (and the CPU reference reads the file in, in parallel):
/// large enough for sequential reads, small enough to spread over every core.
const READ_PIECE_VALUES: usize = (4 << 20) / 4;

/// What counts the chunks of a streamed file: the values' histogram under a [`HistogramPlan`]
/// ([`histogram_file`]), or a feature's kernel (bin edges, channels) that reads one stream of
/// values into `u32` counters.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::cudarc::driver::{CudaSlice, CudaStream};
/// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsPlan, launch_channels, plan_channels_for};
/// use hopper_kernels::histogram::device_values::DeviceValues;
/// use hopper_kernels::histogram::stream::ChunkKernel;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{Binning, BucketScratch, HistogramLimits, InputType};
/// use std::sync::Arc;
/// // Interleaved channels, each chunk counted from the channel of its first value (what
/// // `channels::ChannelsChunks` does).
/// struct Pixels<'a>(&'a ChannelsPlan);
/// impl ChunkKernel for Pixels<'_> {
///     fn element(&self) -> InputType {
///         self.0.element()
///     }
///     fn counters(&self) -> usize {
///         self.0.counters() as usize
///     }
///     fn count(
///         &self,
///         gpu: &Gpu,
///         stream: &Arc<CudaStream>,
///         chunk: &CudaSlice<u8>,
///         first: u64,
///         n: u64,
///         counts: &mut CudaSlice<u32>,
///         _scratch: &mut Option<BucketScratch>,
///     ) -> hopper_kernels::Result<()> {
///         let values = DeviceValues::from_bytes(chunk.as_view(), self.0.element(), n)?;
///         let phase = (first % self.0.layout().channels() as u64) as u32;
///         launch_channels(gpu, self.0, stream, &values, phase, &mut counts.as_view_mut())
///     }
/// }
/// let limits = HistogramLimits::H100;
/// let (rgba, binning, request) = (ChannelLayout::new(4, 4)?, Binning::integers(256), LaunchRequest::default());
/// let plan = plan_channels_for(&limits, &model_before_device(limits), InputType::U8, binning, rgba, &request)?;
/// let kernel = Pixels(&plan);
/// assert_eq!((kernel.element(), kernel.counters()), (InputType::U8, 4 * 256));
/// # Ok(()) }
/// ```
pub trait ChunkKernel {
    /// The values' type the kernel counts.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, plan_channels_for};
    /// use hopper_kernels::histogram::stream::ChunkKernel;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let (one, request) = (ChannelLayout::ONE, LaunchRequest::default());
    /// let model = model_before_device(limits);
    /// let plan = plan_channels_for(&limits, &model, InputType::U16, Binning::integers(4096), one, &request)?;
    /// // Streaming refuses a file of another type.
    /// assert_eq!(ChannelsChunks { plan: &plan }.element(), InputType::U16);
    /// # Ok(()) }
    /// ```
    fn element(&self) -> InputType;
    /// Counters the chunks add into (and the totals the report returns).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, plan_channels_for};
    /// use hopper_kernels::histogram::stream::ChunkKernel;
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{Binning, HistogramLimits, InputType};
    /// let limits = HistogramLimits::H100;
    /// let (rgb, request) = (ChannelLayout::new(4, 3)?, LaunchRequest::default());
    /// let model = model_before_device(limits);
    /// let plan = plan_channels_for(&limits, &model, InputType::U8, Binning::integers(256), rgb, &request)?;
    /// // Three histograms of 256 bins: the report's counts hold 768 totals.
    /// assert_eq!(ChannelsChunks { plan: &plan }.counters(), 768);
    /// # Ok(()) }
    /// ```
    fn counters(&self) -> usize;
    /// Enqueues on `stream` the count of the first `n` values of `chunk` (value 0 of the chunk
    /// is value `first` of the file), adding into `counts`; `scratch` is the stream's own for
    /// kernels that need one.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, plan_channels};
    /// use hopper_kernels::histogram::stream::ChunkKernel;
    /// use hopper_kernels::histogram::tuning::LaunchRequest;
    /// use hopper_kernels::histogram::{Binning, InputType};
    /// let gpu = Gpu::open(0)?;
    /// let rgba = ChannelLayout::new(4, 4)?;
    /// let plan = plan_channels(&gpu, InputType::U8, Binning::integers(256), rgba, &LaunchRequest::default())?;
    /// let kernel = ChannelsChunks { plan: &plan };
    /// let chunk = gpu.upload(&[0u8, 1, 2, 3, 4, 5, 6, 7])?;
    /// let mut counts = gpu.zeros::<u32>(kernel.counters())?;
    /// // The chunk starts at value 2 of the file: its value 0 is blue, its value 2 red.
    /// kernel.count(&gpu, gpu.stream(), &chunk, 2, 8, &mut counts, &mut None)?;
    /// let counts = gpu.download(&counts)?;
    /// assert_eq!((counts[2 * 256], counts[3 * 256 + 1], counts[2]), (1, 1, 1));
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)]
    fn count(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        chunk: &CudaSlice<u8>,
        first: u64,
        n: u64,
        counts: &mut CudaSlice<u32>,
        scratch: &mut Option<BucketScratch>,
    ) -> Result<()>;
}

/// The values' histogram under a plan, as a [`ChunkKernel`].
struct PlannedHistogram<'a> {
    plan: &'a HistogramPlan,
    element: InputType,
    binning: Binning,
}

impl ChunkKernel for PlannedHistogram<'_> {
    fn element(&self) -> InputType {
        self.element
    }

    fn counters(&self) -> usize {
        self.plan.bins() as usize
    }

    fn count(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        chunk: &CudaSlice<u8>,
        _first: u64,
        n: u64,
        counts: &mut CudaSlice<u32>,
        scratch: &mut Option<BucketScratch>,
    ) -> Result<()> {
        if n > (chunk.len() / self.element.size() as usize) as u64 {
            return Err(Error::BufferTooSmall {
                buffer: "chunk",
                len: chunk.len() / self.element.size() as usize,
                needed: n as usize,
            });
        }
        let (values, _values_sync) = chunk.device_ptr(stream);
        let bins = counts.len();
        let (counters, _counts_sync) = counts.device_ptr_mut(stream);
        // SAFETY: the chunk buffer (an allocation: 16-byte aligned) holds n values (checked
        // above), copied on this stream before; the counters hold bins u32; both outlive the
        // enqueue.
        let (input, counters) =
            unsafe { (DeviceInput::new(values, self.element, self.binning, n), DeviceCounters::new(counters, bins)) };
        histogram::launch_into(gpu, self.plan, stream, &input, counters, scratch)
    }
}

/// The histogram of every value in `file` with the planned kernel, streamed in chunks; see the
/// module documentation. The counts are exact: the same as the CPU's for any input size.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{self, stream::{self, StreamOptions}};
/// use hopper_kernels::{Gpu, io::{DataFile, ElementType}};
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// // A raw file of little-endian u16 values, far larger than the GPU's memory.
/// let file = DataFile::open(Path::new("big.u16"), Some(ElementType::U16))?;
/// let binning = histogram::binning_for(file.element().input_type(), 65_536, None)?;
/// let plan = histogram::plan(&gpu, 65_536, None)?;
/// let report = stream::histogram_file(&gpu, &plan, &file, binning, StreamOptions::default())?;
/// assert_eq!(report.counts.iter().sum::<u64>(), file.len());
/// println!("{:.1} GB/s", report.gb_per_s());
/// # Ok(()) }
/// ```
pub fn histogram_file(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    binning: Binning,
    options: StreamOptions,
) -> Result<StreamReport> {
    histogram_file_with_progress(gpu, plan, file, binning, options, &mut |_| {})
}

/// [`histogram_file`], calling `progress` with the bytes of each chunk once it is counted (on the
/// calling thread): a progress bar's feed.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{self, stream::{self, StreamOptions}};
/// use hopper_kernels::{Gpu, io::DataFile};
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// let file = DataFile::open(Path::new("values.npy"), None)?;
/// let binning = histogram::binning_for(file.element().input_type(), 1024, None)?;
/// let plan = histogram::plan(&gpu, 1024, None)?;
/// let mut done = 0;
/// let mut progress = |bytes| {
///     done += bytes;
///     eprint!("\r{:.0}%", 100.0 * done as f64 / file.bytes() as f64);
/// };
/// stream::histogram_file_with_progress(&gpu, &plan, &file, binning, StreamOptions::default(), &mut progress)?;
/// # Ok(()) }
/// ```
pub fn histogram_file_with_progress(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    binning: Binning,
    options: StreamOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<StreamReport> {
    let kernel = PlannedHistogram { plan, element: file.element().input_type(), binning };
    histogram_file_with(gpu, &kernel, file, options, progress)
}

/// Every value of `file` counted by `kernel` (whose type must be the file's), streamed in chunks
/// as [`histogram_file`] streams them: the counters are flushed into `u64` totals before any
/// could overflow, so the counts are exact for any input size. `progress` gets the bytes of each
/// chunk once it is counted.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::channels::{ChannelLayout, ChannelsChunks, plan_channels};
/// use hopper_kernels::histogram::stream::{StreamOptions, file_counts_cpu, histogram_file_with};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{Binning, histogram_cpu_of};
/// use hopper_kernels::io::DataFile;
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// // An int32 file of any size, 100,000 bins: one channel in 16-bit packed counters.
/// let file = DataFile::open(Path::new("ids.npy"), None)?;
/// let binning = Binning::integers(100_000);
/// let one = ChannelLayout::ONE;
/// let plan = plan_channels(&gpu, file.element().input_type(), binning, one, &LaunchRequest::default())?;
/// let mut done = 0;
/// let kernel = ChannelsChunks { plan: &plan };
/// let report = histogram_file_with(&gpu, &kernel, &file, StreamOptions::default(), &mut |bytes| done += bytes)?;
/// assert_eq!(done, file.bytes());
/// let cpu = file_counts_cpu(&file, plan.counters() as usize, |_, values| histogram_cpu_of(values, &binning))?;
/// assert_eq!(report.counts, cpu);
/// # Ok(()) }
/// ```
pub fn histogram_file_with(
    gpu: &Gpu,
    kernel: &dyn ChunkKernel,
    file: &DataFile,
    options: StreamOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<StreamReport> {
    let element = file.element().input_type();
    if kernel.element() != element {
        return Err(Error::InvalidArgument(format!(
            "the kernel counts {} values, {} holds {}",
            kernel.element().name(),
            file.path().display(),
            element.name()
        )));
    }
    let size = element.size() as u64;
    let StreamOptions { chunk_bytes, streams: stream_count, lockers, readers, piece_bytes, ahead, read } = options;
    let lockers = if read.locks() { lockers } else { 0 };
    let readers = if read.reads() { readers } else { 0 };
    if stream_count < 2
        || (read.locks() && lockers == 0)
        || (lockers > 0 && ahead < stream_count.max(lockers))
        || (read.reads() && readers == 0)
    {
        return Err(Error::InvalidArgument(format!(
            "{stream_count} streams, {lockers} lockers, {readers} readers and {ahead} chunks locked ahead ({read:?}): streaming needs at least 2 streams, a thread for each way of reading, and room to lock a chunk per stream and per locker"
        )));
    }
    check_chunk_bytes(chunk_bytes, read)?;
    check_chunk_bytes(piece_bytes, read)?;
    let bins = kernel.counters();
    let n = file.len();
    // Mapped chunks start on page boundaries of the file (their pages are locked one chunk at a
    // time, and a page cannot be locked twice), so the first chunk is shorter by the data's offset
    // into its page.
    let lead = if read.locks() { file.data_offset() % PAGE_BYTES / size } else { 0 };
    let chunk_values = chunk_bytes / size;
    let chunks = plan_chunks(n, chunk_values, lead, FLUSH_LIMIT)?;
    let chunk_values = chunk_values.min(n.max(16 / size));
    let mut totals = vec![0u64; bins];
    if chunks.is_empty() {
        return Ok(StreamReport {
            counts: totals,
            values: 0,
            bytes: 0,
            chunks: 0,
            chunk_values,
            last_chunk_values: 0,
            seconds: 0.0,
            phases: StreamPhases::default(),
        });
    }
    let pieces = plan_pieces(&chunks, piece_bytes_for(chunk_bytes, piece_bytes) / size, lead)?;
    let capacity = chunks.iter().map(|c| c.len).max().unwrap_or(1) as usize;
    let piece_capacity = pieces.iter().map(|p| p.len).max().unwrap_or(1) as usize;
    gpu.ensure_fits(
        &format!("{stream_count} chunk buffers of {} and {bins} counters", format_bytes(size * capacity as u64)),
        size * stream_count as u64 * capacity as u64 + 4 * bins as u64,
    )?;
    let ctx = gpu.context();
    let streams: Vec<Arc<CudaStream>> = (0..stream_count).map(|_| ctx.new_stream()).collect::<Result<_, _>>()?;
    let device: Vec<CudaSlice<u8>> =
        (0..stream_count).map(|_| gpu.zeros(size as usize * capacity)).collect::<Result<_>>()?;
    let device_ptrs = device.iter().zip(&streams).map(|(d, s)| d.device_ptr(s).0).collect();
    let mut counter = Counter {
        lanes: Arc::new(Lanes { streams, device_ptrs, lane_bytes: size as usize * capacity, size: size as usize }),
        device,
        scratch: (0..stream_count).map(|_| None).collect(),
        element,
        counts: gpu.zeros(bins)?,
        totals: &mut totals,
        progress,
    };
    // The zeroed buffers and counters are complete before the streams use them.
    gpu.synchronize()?;
    let setup = Instant::now();
    let mut start = setup;
    let tallies = Tally::default();
    let producers =
        Producers { from_map: read.copies_mapping(), lockers, window: ahead, readers, capacity: piece_capacity };
    let result = stream_chunks(gpu, kernel, file, &chunks, &pieces, &mut counter, producers, &tallies, &mut start);
    let seconds = start.elapsed().as_secs_f64();
    let setup_s = (start - setup).as_secs_f64();
    result?;
    Ok(StreamReport {
        counts: totals,
        values: n,
        bytes: size * n,
        chunks: chunks.len(),
        chunk_values,
        last_chunk_values: chunks.last().map_or(0, |c| c.len),
        seconds,
        phases: tallies.phases(setup_s),
    })
}

/// Page size the mapped mode aligns chunks to (the largest base page of common systems, so that
/// chunk boundaries are page boundaries on 4 KiB-page systems too); mapped chunks are multiples.
///
/// ```
/// use hopper_kernels::histogram::stream::{PAGE_BYTES, ReadMode, check_chunk_bytes};
/// // Locked chunks are whole 64 KiB pages; chunks read into pinned buffers, whole 16-byte loads.
/// assert!(check_chunk_bytes(3 * PAGE_BYTES, ReadMode::Mixed).is_ok());
/// assert!(check_chunk_bytes(PAGE_BYTES / 2, ReadMode::Mixed).is_err());
/// assert!(check_chunk_bytes(PAGE_BYTES / 2, ReadMode::Copy).is_ok());
/// ```
pub const PAGE_BYTES: u64 = 64 << 10;

/// The smallest page size of the systems the host runs on (x86-64 and Arm64): a mapping is
/// readable to a multiple of it past a file's end.
const MIN_PAGE_BYTES: u64 = 4 << 10;

/// Where pieces are copied: a stream per slot and its chunk buffer on the device. Readers and the
/// main thread enqueue copies into it at once.
struct Lanes {
    streams: Vec<Arc<CudaStream>>,
    /// The chunk buffers' device addresses, for copies enqueued without cudarc's per-use event
    /// tracking (three more driver calls per copy, each waiting behind any page-locking in
    /// progress).
    device_ptrs: Vec<sys::CUdeviceptr>,
    /// Bytes of each chunk buffer.
    lane_bytes: usize,
    /// Bytes per value.
    size: usize,
}

impl Lanes {
    /// Copies the piece's values from `host` (page-locked, so the copy is asynchronous) to its
    /// place in its chunk's buffer, on the chunk's stream, and records `copied` after the copy.
    /// The chunk's stream must have the count of the slot's previous chunk enqueued already
    /// (see [`copies_wait_for_counts`]).
    fn copy(&self, piece: Piece, chunk: Chunk, host: &[u8], copied: &CudaEvent) -> Result<()> {
        let slot = chunk.index % self.streams.len();
        let (offset, len) = (self.size * (piece.first - chunk.first) as usize, self.size * piece.len as usize);
        assert!(offset + len <= self.lane_bytes && len <= host.len(), "a piece lies in its chunk");
        // SAFETY: `host` holds `len` page-locked bytes that stay so until `copied` completes
        // (their unlocking or refilling waits for it); the destination lies in this slot's
        // buffer, which this slot's stream alone uses, in order: the copies of one chunk go to
        // disjoint places, after the count of the slot's previous chunk.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                self.device_ptrs[slot] + offset as u64,
                host.as_ptr().cast(),
                len,
                self.streams[slot].cu_stream(),
            )
            .result()
        }?;
        copied.record(&self.streams[slot])?;
        Ok(())
    }
}

/// Chunks whose count must be enqueued before a piece of chunk `chunk` may be copied to its
/// slot of `streams`: the slot's previous chunk (`chunk - streams`) and all before it, so that
/// the copy, later on the slot's stream, cannot overwrite values not yet counted.
///
/// ```
/// use hopper_kernels::histogram::stream::copies_wait_for_counts;
/// assert_eq!(copies_wait_for_counts(1, 2), 0);
/// assert_eq!(copies_wait_for_counts(2, 2), 1);
/// assert_eq!(copies_wait_for_counts(7, 3), 5);
/// ```
pub fn copies_wait_for_counts(chunk: usize, streams: usize) -> usize {
    (chunk + 1).saturating_sub(streams)
}

/// How many chunks have their count enqueued, for readers waiting to copy into a chunk buffer.
struct Counted {
    chunks: Mutex<usize>,
    changed: Condvar,
}

impl Counted {
    /// Waits until at least `chunks` chunks have their count enqueued; `false` if `stop` is set
    /// (see [`Counted::wake`]).
    fn wait_for(&self, chunks: usize, stop: &AtomicBool) -> bool {
        let Ok(mut counted) = self.chunks.lock() else { return false };
        while *counted < chunks && !stop.load(Ordering::Relaxed) {
            let Ok(next) = self.changed.wait(counted) else { return false };
            counted = next;
        }
        !stop.load(Ordering::Relaxed)
    }

    /// Records that `chunks` chunks have their count enqueued.
    fn set(&self, chunks: usize) {
        if let Ok(mut counted) = self.chunks.lock() {
            *counted = chunks;
        }
        self.changed.notify_all();
    }

    /// Wakes every waiter to see that `stop` was set. Taking the lock first means no waiter is
    /// between its check of `stop` and its wait.
    fn wake(&self) {
        let _held = self.chunks.lock();
        self.changed.notify_all();
    }
}

/// The device side of a stream: a stream and buffer per slot, one set of counters, and the
/// host's `u64` totals they are flushed into.
struct Counter<'a> {
    lanes: Arc<Lanes>,
    /// A chunk's bytes per stream.
    device: Vec<CudaSlice<u8>>,
    /// The bucketed and sorted tiers' buffers per stream.
    scratch: Vec<Option<BucketScratch>>,
    element: InputType,
    counts: CudaSlice<u32>,
    totals: &'a mut Vec<u64>,
    progress: &'a mut dyn FnMut(u64),
}

impl Counter<'_> {
    /// Counts the chunk, copied to its buffer, on its stream, and flushes the counters into the
    /// totals when the plan says so.
    fn count(&mut self, gpu: &Gpu, kernel: &dyn ChunkKernel, chunk: Chunk) -> Result<()> {
        let slot = chunk.index % self.lanes.streams.len();
        let stream = &self.lanes.streams[slot];
        kernel.count(
            gpu,
            stream,
            &self.device[slot],
            chunk.first,
            chunk.len,
            &mut self.counts,
            &mut self.scratch[slot],
        )?;
        if chunk.flush_after {
            self.synchronize()?;
            let stream = &self.lanes.streams[0];
            let partial = stream.clone_dtoh(&self.counts)?;
            stream.memset_zeros(&mut self.counts)?;
            stream.synchronize()?;
            for (t, p) in self.totals.iter_mut().zip(partial) {
                *t += p as u64;
            }
        }
        (self.progress)(self.element.size() as u64 * chunk.len);
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        for s in &self.lanes.streams {
            s.synchronize()?;
        }
        Ok(())
    }
}

/// Seconds summed into a [`StreamPhases`] by the threads that spend them.
#[derive(Default)]
struct Tally {
    locked_pieces: AtomicUsize,
    lock_ns: AtomicU64,
    lock_wait_ns: AtomicU64,
    read_pieces: AtomicUsize,
    read_ns: AtomicU64,
    read_wait_ns: AtomicU64,
    ready_wait_ns: AtomicU64,
    issue_ns: AtomicU64,
    copy_wait_ns: AtomicU64,
    unlock_ns: AtomicU64,
}

/// Adds the time since `since` to `into`.
fn tally(into: &AtomicU64, since: Instant) {
    into.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

impl Tally {
    fn phases(&self, setup_s: f64) -> StreamPhases {
        let s = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 * 1e-9;
        StreamPhases {
            setup_s,
            locked_pieces: self.locked_pieces.load(Ordering::Relaxed),
            lock_s: s(&self.lock_ns),
            lock_wait_s: s(&self.lock_wait_ns),
            read_pieces: self.read_pieces.load(Ordering::Relaxed),
            read_s: s(&self.read_ns),
            read_wait_s: s(&self.read_wait_ns),
            ready_wait_s: s(&self.ready_wait_ns),
            issue_s: s(&self.issue_ns),
            copy_wait_s: s(&self.copy_wait_ns),
            unlock_s: s(&self.unlock_ns),
        }
    }
}

/// A piece of a chunk: what a locker locks or a reader reads, and the main thread copies to its
/// place in the chunk's device buffer. Small pieces keep each driver call short (the driver
/// serializes page-locking, unlocking and enqueuing copies) and the pinned buffers few.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::stream::{Piece, plan_chunks, plan_pieces};
/// // Chunks of 4 values in pieces of 2, the first chunk shorter by a lead of 1.
/// let pieces = plan_pieces(&plan_chunks(10, 4, 1, u32::MAX as u64)?, 2, 1)?;
/// assert_eq!(pieces[1], Piece { index: 1, chunk: 0, first: 1, len: 2 });
/// assert_eq!(pieces.iter().map(|p| p.len).collect::<Vec<_>>(), [1, 2, 2, 2, 2, 1]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Position among all pieces, from 0.
    pub index: usize,
    /// The chunk it belongs to.
    pub chunk: usize,
    /// First value.
    pub first: u64,
    /// Values in the piece.
    pub len: u64,
}

/// Cuts each chunk into pieces of `piece` values on the grid the chunks are cut on (boundaries
/// at multiples of `piece` values past the first chunk's `lead`), so that pieces, like chunks,
/// start on page boundaries when `piece` values are whole pages. Every chunk's pieces tile it
/// in order.
///
/// ```
/// use hopper_kernels::histogram::stream::{plan_chunks, plan_pieces};
/// let chunks = plan_chunks(10, 4, 0, u32::MAX as u64).unwrap();
/// let pieces = plan_pieces(&chunks, 2, 0).unwrap();
/// let lens: Vec<u64> = pieces.iter().map(|p| p.len).collect();
/// assert_eq!(lens, [2, 2, 2, 2, 2]);
/// ```
pub fn plan_pieces(chunks: &[Chunk], piece: u64, lead: u64) -> Result<Vec<Piece>> {
    if piece == 0 || lead >= piece {
        return Err(Error::InvalidArgument(format!(
            "pieces of {piece} values with a lead of {lead}: pieces need more values than the lead"
        )));
    }
    let mut pieces = Vec::new();
    for c in chunks {
        let (mut first, end) = (c.first, c.first + c.len);
        while first < end {
            let boundary = ((first + lead) / piece + 1) * piece - lead;
            let len = boundary.min(end) - first;
            pieces.push(Piece { index: pieces.len(), chunk: c.index, first, len });
            first += len;
        }
    }
    Ok(pieces)
}

/// The piece size for `chunk_bytes`-byte chunks: `want` bytes when they divide a chunk, else
/// whole chunks.
///
/// ```
/// use hopper_kernels::histogram::stream::piece_bytes_for;
/// assert_eq!(piece_bytes_for(256 << 20, 64 << 20), 64 << 20);
/// assert_eq!(piece_bytes_for(96 << 20, 64 << 20), 96 << 20);
/// ```
pub fn piece_bytes_for(chunk_bytes: u64, want: u64) -> u64 {
    if want > 0 && want < chunk_bytes && chunk_bytes.is_multiple_of(want) { want } else { chunk_bytes }
}

/// A piece prepared for the copy engine: its pages of the mapped file locked in place (their
/// first byte), for the main thread to copy, or read into a pinned buffer and its copy enqueued
/// by its reader.
enum Ready {
    Locked(Piece, usize, CudaEvent),
    Copied(Piece),
}

impl Ready {
    fn index(&self) -> usize {
        match self {
            Ready::Locked(p, ..) | Ready::Copied(p) => p.index,
        }
    }
}

/// A piece's pages of the mapped file, page-locked for the copy engine, and the event recorded
/// after its copy.
struct Locked {
    /// The first byte of the locked pages.
    pages: usize,
    copied: CudaEvent,
}

/// The page range `[start, end)` of the mapping that a piece of `len` values from value `first`
/// locks: from its first value's page to the next piece's first page (its last value's page
/// end, for the last piece).
fn locked_range(first: u64, len: u64, data_offset: u64, size: u64, last: bool) -> (u64, u64) {
    let start = data_offset + size * first;
    let end = data_offset + size * (first + len);
    (start / PAGE_BYTES * PAGE_BYTES, if last { end.div_ceil(PAGE_BYTES) * PAGE_BYTES } else { end })
}

/// Unlocks pages locked by `cuMemHostRegister`.
///
/// # Safety
/// `pages` is the first byte of a locked range, and no copy from it is in flight.
unsafe fn unlock(pages: usize) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostUnregister(pages as *mut std::ffi::c_void).result() }?;
    Ok(())
}

/// How the pieces are prepared: `lockers` threads page-lock pieces of the mapped file in place
/// (at most `window` at once), `readers` threads read pieces into [`READER_BUFFERS`] pinned
/// buffers of `capacity` values each; each takes the next piece not yet taken, so the faster
/// path takes more.
struct Producers {
    /// Readers copy from the mapped file rather than `pread`.
    from_map: bool,
    lockers: usize,
    window: usize,
    readers: usize,
    capacity: usize,
}

/// Prepares the pieces on the producer threads (readers also enqueue their pieces' copies), and
/// copies the locked pieces and counts the chunks in order on the main thread; an unlocker thread
/// waits for each locked piece's copy and unlocks its pages, so the main thread never waits on a
/// copy or an unlock. The mapping and the pinned buffers are set up first, and `clock` restarted
/// after them.
#[allow(clippy::too_many_arguments)]
fn stream_chunks(
    gpu: &Gpu,
    kernel: &dyn ChunkKernel,
    file: &DataFile,
    chunks: &[Chunk],
    pieces: &[Piece],
    counter: &mut Counter,
    producers: Producers,
    tallies: &Tally,
    clock: &mut Instant,
) -> Result<()> {
    let Producers { lockers, window, readers, capacity, from_map } = producers;
    let ctx = gpu.context();
    let size = file.element().size() as usize;
    let handle = file.reopen()?;
    let map = if lockers > 0 || from_map {
        // SAFETY: a read-only mapping of a file this process does not write. Another process
        // that truncated the file during the run could make reads past its new end fault; that
        // is the documented limit of mapped reads (ReadMode::Pinned has none).
        Some(
            unsafe { memmap2::Mmap::map(&handle) }
                .map_err(|e| Error::File { path: file.path().to_path_buf(), problem: format!("cannot map it: {e}") })?,
        )
    } else {
        None
    };
    let base = map.as_ref().map_or(0, |m| m.as_ptr() as usize);
    let map_len = map.as_ref().map_or(0, |m| m.len() as u64);
    let data_offset = file.data_offset();
    let last = pieces.len() - 1;
    let region = |p: Piece| {
        let (start, end) = locked_range(p.first, p.len, data_offset, size as u64, p.index == last);
        // The mapping ends at the system page after the file's end, which may be short of a
        // PAGE_BYTES boundary. Rounding to 4 KiB, the smallest page of any system we run on,
        // never passes that end, whatever the system's page size.
        (base + start as usize, (end.min(map_len.div_ceil(MIN_PAGE_BYTES) * MIN_PAGE_BYTES) - start) as usize)
    };
    let mut staging = (0..readers)
        .map(|_| {
            (0..READER_BUFFERS)
                .map(|_| {
                    // SAFETY: plain page-locked memory (no flags: not write-combined, as the
                    // readers write and the cache keeps it); a reader fills each buffer before
                    // any copy reads it.
                    let host = unsafe { ctx.alloc_pinned_with_flags::<u8>(size * capacity, 0) }?;
                    let (ptr, len) = (host.as_ptr()? as usize, host.len());
                    let copied = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?;
                    Ok(Staging { _host: host, ptr, len, copied })
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    // A token per piece that may be locked at once: the event its copy records, reused.
    let (token_tx, token_rx) = mpsc::channel::<CudaEvent>();
    for _ in 0..if lockers > 0 { window } else { 0 } {
        let event = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?;
        token_tx.send(event).expect("the receiver lives in this scope");
    }
    // Unbounded: readers run ahead of the main thread by up to `streams` chunks (their copies
    // wait for counts, not for the main thread's receipts), and one that stops never waits to send.
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Ready>>();
    let (unlock_tx, unlock_rx) = mpsc::channel::<Locked>();
    let token_rx = Mutex::new(token_rx);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let counts_enqueued = Counted { chunks: Mutex::new(0), changed: Condvar::new() };
    let lanes = counter.lanes.clone();
    let stream_count = lanes.streams.len();
    let mut early = BTreeMap::new();
    *clock = Instant::now();
    let result = std::thread::scope(|scope| -> Result<()> {
        let (token_rx, next, stop, handle, counts_enqueued, lanes) =
            (&token_rx, &next, &stop, &handle, &counts_enqueued, &lanes);
        // Owns the tokens: once the main thread stops sending it pieces and it has unlocked
        // them all, the tokens close and lockers waiting for one stop.
        let unlocker = scope.spawn(move || -> Result<()> {
            let tokens = token_tx;
            let mut outcome = ctx.bind_to_thread().map_err(Error::from);
            for done in unlock_rx {
                let waited = Instant::now();
                let synced = done.copied.synchronize();
                tally(&tallies.copy_wait_ns, waited);
                let unlocking = Instant::now();
                // SAFETY: locked by a locker; its copy is done (the main thread synchronized the
                // streams first had enqueuing it failed).
                let unlocked = unsafe { unlock(done.pages) };
                tally(&tallies.unlock_ns, unlocking);
                outcome = outcome.and(synced.map_err(Error::from)).and(unlocked);
                let _ = tokens.send(done.copied);
            }
            outcome
        });
        for _ in 0..lockers {
            let ready_tx = ready_tx.clone();
            scope.spawn(move || {
                if ctx.bind_to_thread().is_err() {
                    return;
                }
                loop {
                    let waited = Instant::now();
                    let Some(event) = token_rx.lock().ok().and_then(|rx| rx.recv().ok()) else { return };
                    tally(&tallies.lock_wait_ns, waited);
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Some(&piece) = pieces.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                    let (pages, bytes) = region(piece);
                    let locking = Instant::now();
                    // SAFETY: `pages..pages + bytes` lies in the live mapping (rounded to whole
                    // pages of it), and no other piece locks any of these pages.
                    let locked = unsafe {
                        sys::cuMemHostRegister_v2(
                            pages as *mut std::ffi::c_void,
                            bytes,
                            sys::CU_MEMHOSTREGISTER_READ_ONLY,
                        )
                        .result()
                    };
                    tally(&tallies.lock_ns, locking);
                    tallies.locked_pieces.fetch_add(1, Ordering::Relaxed);
                    let sent = match locked {
                        Ok(()) => ready_tx.send(Ok(Ready::Locked(piece, pages, event))).is_ok(),
                        Err(e) => {
                            let _ = ready_tx.send(Err(Error::InvalidArgument(format!(
                                "cannot page-lock the mapped file for the copy engine ({e}): use --read pinned"
                            ))));
                            return;
                        }
                    };
                    if !sent {
                        // The main thread has stopped: nothing will copy these pages.
                        // SAFETY: locked just above; no copy from them was enqueued.
                        let _ = unsafe { unlock(pages) };
                        return;
                    }
                }
            });
        }
        for mut buffers in staging.drain(..) {
            let ready_tx = ready_tx.clone();
            scope.spawn(move || {
                if let Err(e) = ctx.bind_to_thread() {
                    let _ = ready_tx.send(Err(e.into()));
                    return;
                }
                for turn in 0.. {
                    let buf = &mut buffers[turn % READER_BUFFERS];
                    let waited = Instant::now();
                    // The buffer's last copy is done before it is written again.
                    let synced = buf.copied.synchronize();
                    tally(&tallies.read_wait_ns, waited);
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Some(&piece) = pieces.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                    let reading = Instant::now();
                    let filled = synced.map_err(Error::from).and_then(|()| {
                        if from_map {
                            let first = base + data_offset as usize + size * piece.first as usize;
                            // SAFETY: the piece's bytes lie in the mapping, which outlives this
                            // use; only reads happen through it. The buffer is this reader's
                            // alone, and its last copy is done.
                            unsafe {
                                let src = std::slice::from_raw_parts(first as *const u8, size * piece.len as usize);
                                std::slice::from_raw_parts_mut(buf.ptr as *mut u8, src.len()).copy_from_slice(src);
                            }
                            Ok(())
                        } else {
                            fill(file, handle, buf, piece)
                        }
                    });
                    tally(&tallies.read_ns, reading);
                    tallies.read_pieces.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = filled {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                    let chunk = chunks[piece.chunk];
                    let waited = Instant::now();
                    // Pieces are taken in order, so the chunks waited for have all their pieces
                    // taken by readers that wait only for earlier chunks: no wait is circular.
                    if !counts_enqueued.wait_for(copies_wait_for_counts(chunk.index, stream_count), stop) {
                        return;
                    }
                    tally(&tallies.read_wait_ns, waited);
                    let issuing = Instant::now();
                    // SAFETY: the buffer's own bytes; this reader is done writing them.
                    let host = unsafe { std::slice::from_raw_parts(buf.ptr as *const u8, buf.len) };
                    let copied = lanes.copy(piece, chunk, host, &buf.copied);
                    tally(&tallies.issue_ns, issuing);
                    let failed = copied.is_err();
                    if ready_tx.send(copied.map(|()| Ready::Copied(piece))).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(ready_tx);
        let counted = (|| -> Result<()> {
            // The copies are enqueued through the driver directly, on this thread's context.
            ctx.bind_to_thread()?;
            let mut pieces = pieces.iter().peekable();
            for &chunk in chunks {
                while let Some(&piece) = pieces.next_if(|p| p.chunk == chunk.index) {
                    let waited = Instant::now();
                    while !early.contains_key(&piece.index) {
                        let got = ready_rx
                            .recv()
                            .map_err(|_| Error::InvalidArgument("the file readers stopped".into()))??;
                        early.insert(got.index(), got);
                    }
                    tally(&tallies.ready_wait_ns, waited);
                    let issuing = Instant::now();
                    match early.remove(&piece.index).expect("found above") {
                        Ready::Locked(piece, pages, copied) => {
                            let first = base + data_offset as usize + size * piece.first as usize;
                            // SAFETY: the piece's bytes lie in the mapping; the mapping outlives
                            // this use, and only reads happen through it.
                            let host =
                                unsafe { std::slice::from_raw_parts(first as *const u8, size * piece.len as usize) };
                            let copying = counter.lanes.copy(piece, chunk, host, &copied);
                            if copying.is_err() {
                                // A copy may be in flight without its event: wait for it before
                                // the pages are unlocked.
                                let _ = counter.synchronize();
                            }
                            unlock_tx
                                .send(Locked { pages, copied })
                                .expect("the unlocker runs until this closure ends");
                            copying?;
                        }
                        Ready::Copied(_) => {}
                    }
                    tally(&tallies.issue_ns, issuing);
                }
                let issuing = Instant::now();
                counter.count(gpu, kernel, chunk)?;
                counts_enqueued.set(chunk.index + 1);
                tally(&tallies.issue_ns, issuing);
            }
            Ok(())
        })();
        stop.store(true, Ordering::Relaxed);
        counts_enqueued.wake();
        // Every locked piece's copy is enqueued; the unlocker unlocks them as they finish.
        let synced = counter.synchronize();
        drop(unlock_tx);
        let unlocked = unlocker.join().unwrap_or_else(|_| Err(Error::InvalidArgument("the unlocker panicked".into())));
        counted.and(synced).and(unlocked)
    });
    // Pieces prepared but never copied: locked ones are unlocked (one failed unlock neither skips
    // the others nor hides the error that came first), filled buffers freed (their drop waits for
    // any copy).
    let mut unlocked = Ok(());
    for ready in early.into_values().chain(ready_rx.try_iter().filter_map(|r| r.ok())) {
        if let Ready::Locked(_, pages, _) = ready {
            // SAFETY: locked by a locker; no copy from it was enqueued.
            unlocked = unlocked.and(unsafe { unlock(pages) });
        }
    }
    result.and(unlocked)
}

/// Fills `buf` with the piece's values, in reads of [`READ_PIECE_VALUES`] in order on this thread.
fn fill(file: &DataFile, handle: &std::fs::File, buf: &mut Staging, piece: Piece) -> Result<()> {
    let size = file.element().size() as usize;
    // SAFETY: the buffer's own bytes, which this reader alone holds; its last copy is done.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.ptr as *mut u8, buf.len) };
    let out = &mut out[..size * piece.len as usize];
    for (i, part) in out.chunks_mut(size * READ_PIECE_VALUES).enumerate() {
        file.read_bytes_at(handle, piece.first + (i * READ_PIECE_VALUES) as u64, part)?;
    }
    Ok(())
}

/// The pinned host-to-device copy bandwidth, GB/s: `repeat` copies of `bytes` from page-locked
/// memory, timed with CUDA events after one untimed copy. The ceiling a streamed input can reach.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::stream::pinned_h2d_gb_per_s};
/// let gpu = Gpu::open(0)?;
/// // 20 copies of 256 MiB: the most a streamed histogram can read per second.
/// println!("{:.1} GB/s", pinned_h2d_gb_per_s(&gpu, 256 << 20, 20)?);
/// # Ok(()) }
/// ```
pub fn pinned_h2d_gb_per_s(gpu: &Gpu, bytes: u64, repeat: usize) -> Result<f64> {
    let len = (bytes / 4).max(1) as usize;
    let ctx = gpu.context();
    // SAFETY: plain page-locked memory, filled below before it is copied.
    let mut host = unsafe { ctx.alloc_pinned_with_flags::<u32>(len, 0) }?;
    host.as_mut_slice()?.fill(1);
    let mut dev: CudaSlice<u32> = gpu.zeros(len)?;
    let stream = gpu.stream();
    stream.memcpy_htod(&host, &mut dev)?;
    let start = stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    for _ in 0..repeat.max(1) {
        stream.memcpy_htod(&host, &mut dev)?;
    }
    let end = stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    let ms = start.elapsed_ms(&end)? as f64;
    Ok((4 * len * repeat.max(1)) as f64 / (ms * 1e-3) / 1e9)
}

/// The exact histogram of every value in `file` on the CPU (all cores, the file read in pieces),
/// binned like the kernels ([`histogram::histogram_cpu_of`]): the reference a streamed histogram
/// must equal.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, stream::histogram_file_cpu};
/// use hopper_kernels::io::{DataFile, write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("values.npy");
/// write_npy(&path, &[2, 3], &[0i32, 1, 1, 5, -2, 3])?;
/// let file = DataFile::open(&path, None)?;
/// assert_eq!(histogram_file_cpu(&file, &Binning::integers(4))?, [2, 2, 0, 2]);
/// # Ok(()) }
/// ```
pub fn histogram_file_cpu(file: &DataFile, binning: &Binning) -> Result<Vec<u64>> {
    histogram::check_bins(binning.nbins as usize)?;
    file_counts_cpu(file, binning.nbins as usize, |_, values| histogram::histogram_cpu_of(values, binning))
}

/// `counters` counts of every value in `file` on the CPU: the file is read in pieces on all
/// cores, `count(first, values)` counts each piece (whose value 0 is value `first` of the file),
/// and the pieces' counts are added in `u64`. The reference of the streamed features.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::channels::{ChannelLayout, channels_histogram_cpu};
/// use hopper_kernels::histogram::{Binning, Values, stream::file_counts_cpu};
/// use hopper_kernels::io::{DataFile, write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("pixels.npy");
/// let pixels: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
/// write_npy(&path, &[1000, 4], &pixels)?;
/// let file = DataFile::open(&path, None)?;
/// let (rgba, binning) = (ChannelLayout::new(4, 4)?, Binning::integers(256));
/// // A piece whose value 0 is value `first` of the file starts in channel `first % 4`.
/// let counts = file_counts_cpu(&file, 4 * 256, |first, values| {
///     channels_histogram_cpu(values, &binning, rgba, (first % 4) as u32)
/// })?;
/// let whole = channels_histogram_cpu(Values::U8(&pixels), &binning, rgba, 0);
/// assert_eq!(counts, whole.into_iter().map(u64::from).collect::<Vec<_>>());
/// # Ok(()) }
/// ```
pub fn file_counts_cpu(
    file: &DataFile,
    counters: usize,
    count: impl Fn(u64, Values<'_>) -> Vec<u32> + Sync,
) -> Result<Vec<u64>> {
    let handle = file.reopen()?;
    let piece = READ_PIECE_VALUES as u64;
    let pieces = file.len().div_ceil(piece);
    let element = file.element().input_type();
    (0..pieces)
        .into_par_iter()
        .map(|i| -> Result<Vec<u64>> {
            let first = i * piece;
            let len = piece.min(file.len() - first) as usize;
            let values = match element {
                InputType::U8 => ValuesBuf::U8(vec![0; len]),
                InputType::U16 => ValuesBuf::U16(vec![0; len]),
                InputType::I32 => ValuesBuf::I32(vec![0; len]),
                InputType::F32 => ValuesBuf::F32(vec![0.0; len]),
            };
            let mut values = values;
            let bytes: &mut [u8] = match &mut values {
                ValuesBuf::U8(v) => v,
                ValuesBuf::U16(v) => bytemuck::cast_slice_mut(v),
                ValuesBuf::I32(v) => bytemuck::cast_slice_mut(v),
                ValuesBuf::F32(v) => bytemuck::cast_slice_mut(v),
            };
            file.read_bytes_at(&handle, first, bytes)?;
            Ok(count(first, values.as_values()).into_iter().map(u64::from).collect())
        })
        .try_reduce(
            || vec![0u64; counters],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                Ok(a)
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::ElementType;

    #[test]
    fn cpu_file_histogram_counts_every_value_of_a_file_of_several_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let n = 2 * READ_PIECE_VALUES + 3;
        let values: Vec<i32> = (0..n as i32).map(|i| i % 7 - 1).collect();
        std::fs::write(&path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let file = DataFile::open_raw(&path, ElementType::I32).unwrap();
        let want: Vec<u64> = crate::reference::histogram_cpu(&values, 5).into_iter().map(u64::from).collect();
        assert_eq!(histogram_file_cpu(&file, &Binning::integers(5)).unwrap(), want);
    }

    fn lens(chunks: &[Chunk]) -> Vec<u64> {
        chunks.iter().map(|c| c.len).collect()
    }

    #[test]
    fn no_values_make_no_chunks() {
        assert!(plan_chunks(0, 16, 0, FLUSH_LIMIT).unwrap().is_empty());
    }

    #[test]
    fn chunks_cover_the_input_in_order_with_a_ragged_last_chunk() {
        let chunks = plan_chunks(10, 4, 0, FLUSH_LIMIT).unwrap();
        assert_eq!(lens(&chunks), [4, 4, 2]);
        assert_eq!(chunks.iter().map(|c| c.first).collect::<Vec<_>>(), [0, 4, 8]);
        assert_eq!(chunks.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(chunks.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, false, true]);
    }

    #[test]
    fn an_input_of_whole_chunks_ends_on_a_full_chunk() {
        assert_eq!(lens(&plan_chunks(12, 4, 0, FLUSH_LIMIT).unwrap()), [4, 4, 4]);
        assert_eq!(lens(&plan_chunks(4, 4, 0, FLUSH_LIMIT).unwrap()), [4]);
        assert_eq!(lens(&plan_chunks(3, 4, 0, FLUSH_LIMIT).unwrap()), [3]);
        assert_eq!(lens(&plan_chunks(5, 4, 0, FLUSH_LIMIT).unwrap()), [4, 1]);
    }

    #[test]
    fn counters_are_flushed_before_they_could_overflow() {
        // A limit of 10 values: 4 + 4 fit, a third chunk would make 12.
        let chunks = plan_chunks(20, 4, 0, 10).unwrap();
        assert_eq!(chunks.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, true, false, true, true]);
        // Chunks that exactly fill the limit flush after it.
        let exact = plan_chunks(20, 5, 0, 10).unwrap();
        assert_eq!(exact.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, true, false, true]);
        // 2^32 values (a 16 GiB i32 file) in 256 MiB chunks: one flush before the u32 limit.
        let big = plan_chunks(1 << 32, 1 << 26, 0, FLUSH_LIMIT).unwrap();
        assert_eq!(big.len(), 64);
        let flushes: Vec<usize> = big.iter().filter(|c| c.flush_after).map(|c| c.index).collect();
        assert_eq!(flushes, [62, 63]);
        let mut since = 0;
        for c in &big {
            since += c.len;
            assert!(since <= FLUSH_LIMIT);
            if c.flush_after {
                since = 0;
            }
        }
    }

    #[test]
    fn a_lead_shortens_the_first_chunk_so_the_others_start_on_chunk_boundaries() {
        let chunks = plan_chunks(20, 8, 3, FLUSH_LIMIT).unwrap();
        assert_eq!(lens(&chunks), [5, 8, 7]);
        assert_eq!(chunks.iter().map(|c| c.first + 3).collect::<Vec<_>>(), [3, 8, 16]);
        assert_eq!(lens(&plan_chunks(4, 8, 3, FLUSH_LIMIT).unwrap()), [4]);
        assert!(plan_chunks(20, 8, 8, FLUSH_LIMIT).is_err());
    }

    #[test]
    fn mapped_chunks_lock_disjoint_whole_pages() {
        let p = PAGE_BYTES;
        // A .npy header of 128 bytes: the first chunk is shorter by 32 values.
        let chunks = plan_chunks(3 * p / 4, p / 4, 128 / 4, FLUSH_LIMIT).unwrap();
        let last = chunks.len() - 1;
        let ranges: Vec<(u64, u64)> =
            chunks.iter().map(|&c| locked_range(c.first, c.len, 128, 4, c.index == last)).collect();
        assert_eq!(ranges, [(0, p), (p, 2 * p), (2 * p, 3 * p), (3 * p, 4 * p)]);
        // Chunks of two pages in pieces of one lock disjoint single pages.
        let chunks = plan_chunks(6 * p / 4, p / 2, 128 / 4, FLUSH_LIMIT).unwrap();
        let pieces = plan_pieces(&chunks, p / 4, 128 / 4).unwrap();
        let last = pieces.len() - 1;
        let ranges: Vec<(u64, u64)> =
            pieces.iter().map(|q| locked_range(q.first, q.len, 128, 4, q.index == last)).collect();
        let pages: Vec<(u64, u64)> = (0..7).map(|i| (i * p, (i + 1) * p)).collect();
        assert_eq!(ranges, pages);
    }

    #[test]
    fn pieces_tile_each_chunk_in_order_on_the_chunk_grid() {
        // Chunks of 8 values after a lead of 3 (5, 8, 8, 4 values), pieces of 4.
        let chunks = plan_chunks(25, 8, 3, FLUSH_LIMIT).unwrap();
        let pieces = plan_pieces(&chunks, 4, 3).unwrap();
        let got: Vec<(usize, u64, u64)> = pieces.iter().map(|p| (p.chunk, p.first, p.len)).collect();
        assert_eq!(got, [(0, 0, 1), (0, 1, 4), (1, 5, 4), (1, 9, 4), (2, 13, 4), (2, 17, 4), (3, 21, 4)]);
        assert!(pieces.iter().enumerate().all(|(i, p)| p.index == i));
        for c in &chunks {
            let of: Vec<&Piece> = pieces.iter().filter(|p| p.chunk == c.index).collect();
            assert_eq!(of[0].first, c.first);
            assert_eq!(of.iter().map(|p| p.len).sum::<u64>(), c.len);
            assert!(of.windows(2).all(|w| w[0].first + w[0].len == w[1].first));
        }
        // A piece as long as the chunk: a piece per chunk.
        assert_eq!(plan_pieces(&chunks, 8, 3).unwrap().len(), chunks.len());
        assert!(plan_pieces(&chunks, 0, 0).is_err());
        assert!(plan_pieces(&chunks, 3, 3).is_err());
        assert!(plan_pieces(&[], 4, 0).unwrap().is_empty());
    }

    #[test]
    fn pieces_divide_chunks_or_are_whole_chunks() {
        assert_eq!(piece_bytes_for(256 << 20, 64 << 20), 64 << 20);
        assert_eq!(piece_bytes_for(256 << 20, 256 << 20), 256 << 20);
        assert_eq!(piece_bytes_for(64 << 20, 256 << 20), 64 << 20);
        assert_eq!(piece_bytes_for(192 << 20, 128 << 20), 192 << 20);
        assert_eq!(piece_bytes_for(1 << 20, 0), 1 << 20);
    }

    #[test]
    fn zero_and_oversized_chunks_are_refused() {
        assert!(plan_chunks(10, 0, 0, FLUSH_LIMIT).unwrap_err().to_string().contains("at least one value"));
        assert!(plan_chunks(10, 11, 0, 10).unwrap_err().to_string().contains("between flushes"));
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("256M"), Ok(256 << 20));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert!(parse_bytes("MiB").unwrap_err().contains("not a size"));
        assert!(parse_bytes("12 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_bytes("99999999999999GiB").unwrap_err().contains("too large"));
    }

    #[test]
    fn chunks_shrink_to_fit_free_memory_in_whole_pages() {
        assert_eq!(chunk_bytes_for(u64::MAX / 8, 2), DEFAULT_CHUNK_BYTES);
        // 6 shares of 60 MiB: 10 MiB, a whole number of pages.
        let free = 60 << 20;
        assert_eq!(chunk_bytes_for(free, 2), 10 << 20);
        assert_eq!(chunk_bytes_for(free, 2) % PAGE_BYTES, 0);
        assert_eq!(chunk_bytes_for(0, 2), PAGE_BYTES);
        assert!(chunk_bytes_for(free, 4) < chunk_bytes_for(free, 2));
    }
}
