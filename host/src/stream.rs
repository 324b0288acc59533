//! Histograms of inputs larger than the GPU: a file is cut into chunks ([`plan_chunks`], pure and
//! tested on the CPU), `readers` threads prepare the chunks ahead ([`ReadMode::Mapped`], the
//! default: each chunk's pages of the mapped file are page-locked in place; [`ReadMode::Pinned`]:
//! each chunk is read into a pinned host buffer by all cores at once, so page-cache reads keep up
//! with the copies), and the main thread copies each chunk on one of two or more streams and
//! counts it there with the planned kernel, into one set of counters. Copies of one chunk overlap
//! the counting of the previous one and the preparation of the next ones.
//!
//! Counters are `u32`: before the values counted into them could exceed `u32::MAX` (a bin could
//! overflow), they are added into `u64` totals on the host and zeroed; [`plan_chunks`] marks
//! those chunks.

use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use crate::histogram::{self, Binning, BucketScratch, DeviceInput, HistogramPlan, InputType, ValuesBuf};
use crate::io::DataFile;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice, sys};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

/// Chunk size unless the caller names one.
pub const DEFAULT_CHUNK_BYTES: u64 = 256 << 20;

/// Most values the counters take between two flushes into the host's `u64` totals: then no
/// `u32` bin can overflow, whatever the values.
pub const FLUSH_LIMIT: u64 = u32::MAX as u64;

/// One chunk of the input.
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
/// use host::stream::plan_chunks;
/// let chunks = plan_chunks(10, 4, 0, u32::MAX as u64).unwrap();
/// let lens: Vec<u64> = chunks.iter().map(|c| c.len).collect();
/// assert_eq!(lens, [4, 4, 2]);
/// assert!(chunks[2].flush_after);
/// ```
pub fn plan_chunks(n: u64, chunk: u64, lead: u64, flush_limit: u64) -> Result<Vec<Chunk>> {
    if chunk == 0 {
        return Err(HostError::InvalidInput("a chunk of 0 values: chunks need at least one value".into()));
    }
    if chunk > flush_limit {
        return Err(HostError::InvalidInput(format!(
            "chunks of {chunk} values exceed the {flush_limit} values the u32 counters take between flushes"
        )));
    }
    if lead >= chunk {
        return Err(HostError::InvalidInput(format!(
            "a lead of {lead} values leaves nothing of a {chunk}-value chunk"
        )));
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

/// Checks a chunk size for a read mode: a positive multiple of [`PAGE_BYTES`] when mapped (chunks
/// lock whole pages in place), of 16 bytes when pinned (whole 16-byte loads).
///
/// ```
/// use host::stream::{PAGE_BYTES, ReadMode, check_chunk_bytes};
/// assert!(check_chunk_bytes(256 << 20, ReadMode::Mapped).is_ok());
/// assert!(check_chunk_bytes(PAGE_BYTES + 16, ReadMode::Pinned).is_ok());
/// assert!(check_chunk_bytes(PAGE_BYTES + 16, ReadMode::Mapped).is_err());
/// ```
pub fn check_chunk_bytes(chunk_bytes: u64, read: ReadMode) -> Result<()> {
    let granule = match read {
        ReadMode::Pinned => 16,
        ReadMode::Mapped => PAGE_BYTES,
    };
    if chunk_bytes < granule || !chunk_bytes.is_multiple_of(granule) {
        return Err(HostError::InvalidInput(format!(
            "a chunk of {chunk_bytes} bytes: use a positive multiple of {granule} bytes ({})",
            if read == ReadMode::Mapped { "whole pages, locked in place" } else { "whole 16-byte loads" }
        )));
    }
    Ok(())
}

/// How to stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes per chunk: a multiple of [`PAGE_BYTES`] when mapped, of 16 when pinned (see
    /// [`check_chunk_bytes`]); smaller files take one chunk of their own size.
    pub chunk_bytes: u64,
    /// CUDA streams the chunks alternate over (at least 2), each with its device buffer.
    pub streams: usize,
    /// Reader threads, each filling its own chunk (all share the cores through rayon, so one
    /// chunk's last pieces never leave the cores idle).
    pub readers: usize,
    /// Pinned host buffers the readers fill ahead, or chunks page-locked at once when mapped (at
    /// least `streams` and `readers`).
    pub pinned_buffers: usize,
    /// How chunks reach the copy engine.
    pub read: ReadMode,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
}

/// How a streamed file's chunks reach the copy engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadMode {
    /// The file is mapped, and each chunk's pages are page-locked in place (read-only), so the
    /// copy engine reads the page cache directly: no CPU copy of the data.
    Mapped,
    /// Reader threads copy each chunk into pinned buffers (`pread`), which the copy engine reads:
    /// one more pass over host memory, but no mapping of the file.
    Pinned,
}

/// The chunk for `streams` streams on a device with `free_memory` bytes free: at most
/// [`DEFAULT_CHUNK_BYTES`], small enough that a chunk per stream fits beside the counters with
/// room to spare, and a whole number of [`PAGE_BYTES`] (at least one).
pub fn chunk_bytes_for(free_memory: u64, streams: usize) -> u64 {
    let fits = DEFAULT_CHUNK_BYTES.min(free_memory / (2 * streams as u64 + 2));
    (fits / PAGE_BYTES * PAGE_BYTES).max(PAGE_BYTES)
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            streams: 2,
            readers: 4,
            pinned_buffers: 7,
            read: ReadMode::Mapped,
            progress: false,
        }
    }
}

/// What a streamed histogram measured.
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
}

impl StreamReport {
    /// Input bytes per second over the whole run, GB/s (10^9 bytes).
    pub fn gb_per_s(&self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds / 1e9 } else { 0.0 }
    }
}

/// A pinned host buffer and the event recorded after its last copy to the device, which the
/// reader waits on before filling it again.
struct Staging {
    host: PinnedHostSlice<u8>,
    copied: CudaEvent,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The buffer is freed after this; a copy from it may still be in flight (a buffer left
        // in a channel when the run ends or fails), and freeing under a DMA read is undefined.
        let _ = self.copied.synchronize();
    }
}

/// Pieces one buffer is read in, in parallel: large enough for sequential reads, small enough
/// that every core gets several of a chunk.
const READ_PIECE_VALUES: usize = (4 << 20) / 4;

/// The histogram of every value in `file` with the planned kernel, streamed in chunks; see the
/// module documentation. The counts are exact: the same as the CPU's for any input size.
pub fn histogram_file(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    binning: Binning,
    options: StreamOptions,
) -> Result<StreamReport> {
    let element = file.element().input_type();
    let size = element.size() as u64;
    let StreamOptions { chunk_bytes, streams: stream_count, readers, pinned_buffers, read, progress } = options;
    if stream_count < 2 || readers == 0 || pinned_buffers < stream_count.max(readers) {
        return Err(HostError::InvalidInput(format!(
            "{stream_count} streams, {readers} readers and {pinned_buffers} pinned buffers: streaming needs at least 2 streams, a reader, and a buffer per stream and per reader"
        )));
    }
    check_chunk_bytes(chunk_bytes, read)?;
    let bins = plan.bins as usize;
    let n = file.len();
    // Mapped chunks start on page boundaries of the file (their pages are locked one chunk at a
    // time, and a page cannot be locked twice), so the first chunk is shorter by the data's offset
    // into its page.
    let lead = match read {
        ReadMode::Pinned => 0,
        ReadMode::Mapped => file.data_offset() % PAGE_BYTES / size,
    };
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
        });
    }
    let capacity = chunks.iter().map(|c| c.len).max().unwrap_or(1) as usize;
    gpu.ensure_fits(
        &format!("{stream_count} chunk buffers of {} and {bins} counters", format_bytes(size * capacity as u64)),
        size * stream_count as u64 * capacity as u64 + 4 * bins as u64,
    )?;
    let ctx = gpu.context();
    let mut counter = Counter {
        streams: (0..stream_count).map(|_| ctx.new_stream()).collect::<Result<_, _>>()?,
        device: (0..stream_count).map(|_| gpu.zeros(size as usize * capacity)).collect::<Result<_>>()?,
        scratch: (0..stream_count).map(|_| None).collect(),
        element,
        binning,
        counts: gpu.zeros(bins)?,
        totals: &mut totals,
        bar: progress.then(|| progress_bar(file.bytes())),
    };
    // The zeroed buffers and counters are complete before the streams use them.
    gpu.synchronize()?;
    let start = Instant::now();
    let result = match read {
        ReadMode::Pinned => stream_pinned(gpu, plan, file, &chunks, &mut counter, readers, pinned_buffers, capacity),
        ReadMode::Mapped => stream_mapped(gpu, plan, file, &chunks, &mut counter, readers, pinned_buffers),
    };
    let seconds = start.elapsed().as_secs_f64();
    if let Some(bar) = counter.bar.take() {
        bar.finish_and_clear();
    }
    result?;
    Ok(StreamReport {
        counts: totals,
        values: n,
        bytes: size * n,
        chunks: chunks.len(),
        chunk_values,
        last_chunk_values: chunks.last().map_or(0, |c| c.len),
        seconds,
    })
}

/// Page size the mapped mode aligns chunks to (the largest base page of common systems, so that
/// chunk boundaries are page boundaries on 4 KiB-page systems too); mapped chunks are multiples.
pub const PAGE_BYTES: u64 = 64 << 10;

/// The smallest page size of the systems the host runs on (x86-64 and Arm64): a mapping is
/// readable to a multiple of it past a file's end.
const MIN_PAGE_BYTES: u64 = 4 << 10;

/// The device side of a stream: a stream and buffer per slot, one set of counters, and the
/// host's `u64` totals they are flushed into.
struct Counter<'a> {
    streams: Vec<Arc<CudaStream>>,
    /// A chunk's bytes per stream.
    device: Vec<CudaSlice<u8>>,
    /// The bucketed and sorted tiers' buffers per stream.
    scratch: Vec<Option<BucketScratch>>,
    element: InputType,
    binning: Binning,
    counts: CudaSlice<u32>,
    totals: &'a mut Vec<u64>,
    bar: Option<indicatif::ProgressBar>,
}

impl Counter<'_> {
    /// Copies the chunk's values from `host` (page-locked, so the copy is asynchronous) on its
    /// slot's stream, records `copied` after the copy, counts the chunk there, and flushes the
    /// counters into the totals when the plan says so.
    fn count(&mut self, gpu: &Gpu, plan: &HistogramPlan, chunk: Chunk, host: &[u8], copied: &CudaEvent) -> Result<()> {
        let slot = chunk.index % self.streams.len();
        let stream = &self.streams[slot];
        let len = chunk.len as usize * self.element.size() as usize;
        stream.memcpy_htod(&host[..len], &mut self.device[slot].slice_mut(..len))?;
        copied.record(stream)?;
        let input =
            DeviceInput { bytes: &self.device[slot], element: self.element, binning: self.binning, n: chunk.len };
        histogram::launch_into(gpu, plan, stream, &input, &mut self.counts, &mut self.scratch[slot])?;
        if chunk.flush_after {
            self.synchronize()?;
            let partial = self.streams[0].clone_dtoh(&self.counts)?;
            self.streams[0].memset_zeros(&mut self.counts)?;
            self.streams[0].synchronize()?;
            for (t, p) in self.totals.iter_mut().zip(partial) {
                *t += p as u64;
            }
        }
        if let Some(bar) = &self.bar {
            bar.inc(self.element.size() as u64 * chunk.len);
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        for s in &self.streams {
            s.synchronize()?;
        }
        Ok(())
    }
}

/// [`ReadMode::Pinned`]: reader threads copy chunks from the file into pinned buffers.
#[allow(clippy::too_many_arguments)]
fn stream_pinned(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    chunks: &[Chunk],
    counter: &mut Counter,
    readers: usize,
    pinned_buffers: usize,
    capacity: usize,
) -> Result<()> {
    let ctx = gpu.context();
    let (free_tx, free_rx) = mpsc::channel::<Staging>();
    for _ in 0..pinned_buffers {
        // SAFETY: plain page-locked memory (no flags: not write-combined, as the readers write it
        // through the kernel's copy); a reader fills each buffer before any copy reads it.
        let host = unsafe { ctx.alloc_pinned_with_flags::<u8>(file.element().size() as usize * capacity, 0) }?;
        free_tx.send(Staging { host, copied: ctx.new_event(None)? }).expect("the receiver lives in this scope");
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<(Chunk, Staging)>>(pinned_buffers);
    let free_rx = Mutex::new(free_rx);
    let next = AtomicUsize::new(0);
    let reader_file = file.reopen()?;
    std::thread::scope(|scope| -> Result<()> {
        // Owned by this closure, so that its return (an error included) closes both channels and
        // a reader waiting on either stops rather than holding up the scope.
        let (free_tx, full_rx) = (free_tx, full_rx);
        let (free_rx, next, reader_file) = (&free_rx, &next, &reader_file);
        for _ in 0..readers {
            let full_tx = full_tx.clone();
            // A reader takes a free buffer before the next chunk, so the lowest chunk not yet
            // counted always holds a buffer: the main thread, which counts in order, never waits
            // on a chunk that waits on it.
            scope.spawn(move || {
                loop {
                    let Some(mut buf) = free_rx.lock().ok().and_then(|rx| rx.recv().ok()) else { return };
                    let Some(&chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                    let filled = fill(file, reader_file, &mut buf, chunk).map(|()| (chunk, buf));
                    let failed = filled.is_err();
                    if full_tx.send(filled).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(full_tx);
        let mut early = BTreeMap::new();
        for &chunk in chunks {
            let buf = loop {
                if let Some(buf) = early.remove(&chunk.index) {
                    break buf;
                }
                let (got, buf) =
                    full_rx.recv().map_err(|_| HostError::InvalidInput("the file readers stopped".into()))??;
                early.insert(got.index, buf);
            };
            counter.count(gpu, plan, chunk, buf.host.as_slice()?, &buf.copied)?;
            // A reader waits on `copied` before it refills this buffer; if they have stopped, the
            // buffer is simply dropped.
            let _ = free_tx.send(buf);
        }
        Ok(())
    })
}

/// A chunk's pages of the mapped file, page-locked for the copy engine.
struct Locked {
    /// The first byte of the locked pages.
    pages: usize,
    copied: CudaEvent,
}

/// The page range `[start, end)` of the mapping that chunk `c` locks: from its first value's
/// page to the next chunk's first page (its last value's page end, for the last chunk).
fn locked_range(c: Chunk, data_offset: u64, size: u64, last: bool) -> (u64, u64) {
    let start = data_offset + size * c.first;
    let end = data_offset + size * (c.first + c.len);
    (start / PAGE_BYTES * PAGE_BYTES, if last { end.div_ceil(PAGE_BYTES) * PAGE_BYTES } else { end })
}

/// [`ReadMode::Mapped`]: the file is mapped; reader threads lock each chunk's pages in place
/// (`cuMemHostRegister`, read-only), at most `window` chunks at once, and the copy engine reads
/// the page cache directly. The main thread unlocks a chunk once its copy is done.
fn stream_mapped(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    chunks: &[Chunk],
    counter: &mut Counter,
    readers: usize,
    window: usize,
) -> Result<()> {
    let handle = file.reopen()?;
    // SAFETY: a read-only mapping of a file this process does not write. Another process that
    // truncated the file during the run could make reads past its new end fault; that is the
    // documented limit of mapped reads (ReadMode::Pinned has none).
    let map = unsafe { memmap2::Mmap::map(&handle) }
        .map_err(|e| HostError::File { path: file.path().to_path_buf(), problem: format!("cannot map it: {e}") })?;
    let base = map.as_ptr() as usize;
    let map_len = map.len() as u64;
    let data_offset = file.data_offset();
    let last = chunks.len() - 1;
    let region = |c: Chunk| {
        let (start, end) = locked_range(c, data_offset, file.element().size(), c.index == last);
        // The mapping ends at the system page after the file's end, which may be short of a
        // PAGE_BYTES boundary. Rounding to 4 KiB, the smallest page of any system we run on,
        // never passes that end, whatever the system's page size.
        (base + start as usize, (end.min(map_len.div_ceil(MIN_PAGE_BYTES) * MIN_PAGE_BYTES) - start) as usize)
    };
    let ctx = gpu.context();
    let (token_tx, token_rx) = mpsc::channel::<()>();
    for _ in 0..window {
        token_tx.send(()).expect("the receiver lives in this scope");
    }
    let (locked_tx, locked_rx) = mpsc::sync_channel::<Result<Chunk>>(window);
    let token_rx = Mutex::new(token_rx);
    let next = AtomicUsize::new(0);
    let mut in_flight: std::collections::VecDeque<Locked> = std::collections::VecDeque::new();
    let mut early = BTreeMap::new();
    let unlock = |pages: usize| -> Result<()> {
        // SAFETY: `pages` was locked by cuMemHostRegister and no copy from it is in flight.
        unsafe { sys::cuMemHostUnregister(pages as *mut std::ffi::c_void).result() }?;
        Ok(())
    };
    let result = std::thread::scope(|scope| -> Result<()> {
        // The tokens close with this closure, so readers waiting for one stop; the locked chunks
        // still in the channel are unlocked after the scope.
        let token_tx = token_tx;
        let (token_rx, next, locked_rx) = (&token_rx, &next, &locked_rx);
        for _ in 0..readers {
            let locked_tx = locked_tx.clone();
            scope.spawn(move || {
                if ctx.bind_to_thread().is_err() {
                    return;
                }
                loop {
                    let Some(()) = token_rx.lock().ok().and_then(|rx| rx.recv().ok()) else { return };
                    let Some(&chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                    let (pages, bytes) = region(chunk);
                    // SAFETY: `pages..pages + bytes` lies in the live mapping (rounded to whole
                    // pages of it), and no other chunk locks any of these pages.
                    let locked = unsafe {
                        sys::cuMemHostRegister_v2(
                            pages as *mut std::ffi::c_void,
                            bytes,
                            sys::CU_MEMHOSTREGISTER_READ_ONLY,
                        )
                        .result()
                    };
                    let sent = match locked {
                        Ok(()) => locked_tx.send(Ok(chunk)).is_ok(),
                        Err(e) => {
                            let _ = locked_tx.send(Err(HostError::InvalidInput(format!(
                                "cannot page-lock the mapped file for the copy engine ({e}): use --read pinned"
                            ))));
                            return;
                        }
                    };
                    if !sent {
                        // The main thread has stopped: nothing will copy these pages.
                        // SAFETY: locked just above; no copy from them was enqueued.
                        let _ = unsafe { sys::cuMemHostUnregister(pages as *mut std::ffi::c_void).result() };
                        return;
                    }
                }
            });
        }
        drop(locked_tx);
        for &chunk in chunks {
            while !early.contains_key(&chunk.index) {
                let got =
                    locked_rx.recv().map_err(|_| HostError::InvalidInput("the file readers stopped".into()))??;
                early.insert(got.index, got);
            }
            // The event first: should creating it fail, the chunk is still in `early`, and its
            // pages are unlocked below with the rest.
            let copied = ctx.new_event(None)?;
            early.remove(&chunk.index);
            let (pages, _) = region(chunk);
            let size = file.element().size() as usize;
            let first = base + data_offset as usize + size * chunk.first as usize;
            // SAFETY: the chunk's bytes lie in the mapping; the mapping outlives this use, and
            // only reads happen through it.
            let host = unsafe { std::slice::from_raw_parts(first as *const u8, size * chunk.len as usize) };
            in_flight.push_back(Locked { pages, copied });
            counter.count(gpu, plan, chunk, host, &in_flight.back().expect("pushed above").copied)?;
            // Keep a copy per stream in flight; unlock the oldest and let a reader lock more.
            while in_flight.len() > counter.streams.len() {
                let done = in_flight.pop_front().expect("longer than the streams");
                done.copied.synchronize()?;
                unlock(done.pages)?;
                let _ = token_tx.send(());
            }
        }
        Ok(())
    });
    // Whatever happened, every page locked is unlocked, after the copies from it are done; one
    // failed unlock neither skips the others nor hides the error that came first.
    let synced = counter.synchronize();
    let mut unlocked = Ok(());
    for done in in_flight {
        let _ = done.copied.synchronize();
        unlocked = unlocked.and(unlock(done.pages));
    }
    for chunk in early.into_values().chain(locked_rx.try_iter().filter_map(|c| c.ok())) {
        unlocked = unlocked.and(unlock(region(chunk).0));
    }
    result.and(synced).and(unlocked)
}

/// Fills `buf` with the chunk's values, on all cores; waits first for the buffer's last copy.
fn fill(file: &DataFile, handle: &std::fs::File, buf: &mut Staging, chunk: Chunk) -> Result<()> {
    buf.copied.synchronize()?;
    let size = file.element().size() as usize;
    let out = &mut buf.host.as_mut_slice()?[..size * chunk.len as usize];
    out.par_chunks_mut(size * READ_PIECE_VALUES)
        .enumerate()
        .try_for_each(|(i, piece)| file.read_bytes_at(handle, chunk.first + (i * READ_PIECE_VALUES) as u64, piece))
}

fn progress_bar(bytes: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(bytes);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}, {eta} left",
        )
        .expect("a valid template"),
    );
    bar
}

/// The pinned host-to-device copy bandwidth, GB/s: `repeat` copies of `bytes` from page-locked
/// memory, timed with CUDA events after one untimed copy. The ceiling a streamed input can reach.
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
pub fn histogram_file_cpu(file: &DataFile, binning: &Binning) -> Result<Vec<u64>> {
    histogram::check_bins(binning.nbins as usize)?;
    let bins = binning.nbins as usize;
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
            Ok(histogram::histogram_cpu_of(values.as_values(), binning).into_iter().map(u64::from).collect())
        })
        .try_reduce(
            || vec![0u64; bins],
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
        let ranges: Vec<(u64, u64)> = chunks.iter().map(|&c| locked_range(c, 128, 4, c.index == last)).collect();
        assert_eq!(ranges, [(0, p), (p, 2 * p), (2 * p, 3 * p), (3 * p, 4 * p)]);
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
