//! Histograms of inputs larger than the GPU: a file is cut into chunks ([`plan_chunks`], pure and
//! tested on the CPU), a reader thread fills pinned host buffers from the file (each buffer by
//! all cores at once, so page-cache reads keep up with the copies), and the main thread copies
//! each chunk on one of two or more streams and counts it there with the planned kernel, into one
//! set of counters. Copies of one chunk overlap the counting of the previous one and the reading
//! of the next ones.
//!
//! Counters are `u32`: before the values counted into them could exceed `u32::MAX` (a bin could
//! overflow), they are added into `u64` totals on the host and zeroed; [`plan_chunks`] marks
//! those chunks.

use crate::error::{HostError, Result, format_bytes};
use crate::gpu::Gpu;
use crate::histogram::{self, HistogramPlan};
use crate::io::{DataFile, ElementType};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::mpsc;
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

/// Cuts `n` values into chunks of `chunk` values (the last one ragged), flushing the counters
/// before more than `flush_limit` values are counted into them. No chunks for `n = 0`.
///
/// ```
/// use host::stream::plan_chunks;
/// let chunks = plan_chunks(10, 4, u32::MAX as u64).unwrap();
/// let lens: Vec<u64> = chunks.iter().map(|c| c.len).collect();
/// assert_eq!(lens, [4, 4, 2]);
/// assert!(chunks[2].flush_after);
/// ```
pub fn plan_chunks(n: u64, chunk: u64, flush_limit: u64) -> Result<Vec<Chunk>> {
    if chunk == 0 {
        return Err(HostError::InvalidInput("a chunk of 0 values: chunks need at least one value".into()));
    }
    if chunk > flush_limit {
        return Err(HostError::InvalidInput(format!(
            "chunks of {chunk} values exceed the {flush_limit} values the u32 counters take between flushes"
        )));
    }
    let count = n.div_ceil(chunk) as usize;
    let mut chunks = Vec::with_capacity(count);
    let mut since_flush = 0u64;
    for index in 0..count {
        let first = index as u64 * chunk;
        let len = chunk.min(n - first);
        since_flush += len;
        let next = (first + len < n).then(|| chunk.min(n - first - len));
        let flush_after = next.is_none_or(|next| since_flush + next > flush_limit);
        if flush_after {
            since_flush = 0;
        }
        chunks.push(Chunk { index, first, len, flush_after });
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

/// How to stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes per chunk (a multiple of 16; smaller files take one chunk of their own size).
    pub chunk_bytes: u64,
    /// CUDA streams the chunks alternate over (at least 2), each with its device buffer.
    pub streams: usize,
    /// Pinned host buffers the reader fills ahead (at least `streams`).
    pub pinned_buffers: usize,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self { chunk_bytes: DEFAULT_CHUNK_BYTES, streams: 2, pinned_buffers: 4, progress: false }
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
    /// Values per chunk (the last chunk may hold fewer).
    pub chunk_values: u64,
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
    host: PinnedHostSlice<i32>,
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
const READ_PIECE_VALUES: usize = (8 << 20) / 4;

/// The histogram of every value in `file` with the planned kernel, streamed in chunks; see the
/// module documentation. The counts are exact: the same as the CPU's for any input size.
pub fn histogram_file(
    gpu: &Gpu,
    plan: &HistogramPlan,
    file: &DataFile,
    options: StreamOptions,
) -> Result<StreamReport> {
    if file.element() != ElementType::I32 {
        return Err(HostError::InvalidInput(format!(
            "{}: the histogram kernels count i32 values, not {}",
            file.path().display(),
            file.element().name()
        )));
    }
    let StreamOptions { chunk_bytes, streams: stream_count, pinned_buffers, progress } = options;
    if stream_count < 2 || pinned_buffers < stream_count {
        return Err(HostError::InvalidInput(format!(
            "{stream_count} streams and {pinned_buffers} pinned buffers: streaming needs at least 2 streams and a buffer per stream"
        )));
    }
    if chunk_bytes < 16 || chunk_bytes % 16 != 0 {
        return Err(HostError::InvalidInput(format!(
            "a chunk of {chunk_bytes} bytes: use a positive multiple of 16 bytes (whole 16-byte loads)"
        )));
    }
    let bins = plan.bins as usize;
    let n = file.len();
    let chunk_values = (chunk_bytes / 4).min(n.max(4));
    let chunks = plan_chunks(n, chunk_values, FLUSH_LIMIT)?;
    let mut totals = vec![0u64; bins];
    if chunks.is_empty() {
        return Ok(StreamReport { counts: totals, values: 0, bytes: 0, chunks: 0, chunk_values, seconds: 0.0 });
    }
    let capacity = chunk_values as usize;
    gpu.ensure_fits(
        &format!("{stream_count} chunk buffers of {} and {bins} counters", format_bytes(4 * chunk_values)),
        4 * (stream_count as u64 * chunk_values + bins as u64),
    )?;

    let ctx = gpu.context();
    let streams: Vec<Arc<CudaStream>> = (0..stream_count).map(|_| ctx.new_stream()).collect::<Result<_, _>>()?;
    let mut device: Vec<CudaSlice<i32>> = (0..stream_count).map(|_| gpu.zeros(capacity)).collect::<Result<_>>()?;
    let mut counts: CudaSlice<u32> = gpu.zeros(bins)?;
    let mut staging = Vec::with_capacity(pinned_buffers);
    for _ in 0..pinned_buffers {
        // SAFETY: plain page-locked memory (no flags: not write-combined, as the reader writes it
        // through the kernel's copy); the reader fills each buffer before any copy reads it.
        let host = unsafe { ctx.alloc_pinned_with_flags::<i32>(capacity, 0) }?;
        staging.push(Staging { host, copied: ctx.new_event(None)? });
    }
    // The zeroed buffers and counters are complete before the streams use them.
    gpu.synchronize()?;

    let bar = progress.then(|| progress_bar(file.bytes()));
    let (free_tx, free_rx) = mpsc::channel::<Staging>();
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<(Chunk, Staging)>>(pinned_buffers);
    for s in staging {
        free_tx.send(s).expect("the receiver lives in this scope");
    }
    let reader_file = file.reopen()?;
    let start = Instant::now();
    let result = std::thread::scope(|scope| -> Result<()> {
        // Owned by this closure, so that its return (an error included) closes both channels and
        // a reader waiting on either stops rather than holding up the scope.
        let (free_tx, full_rx) = (free_tx, full_rx);
        let chunks_for_reader = &chunks;
        scope.spawn(move || {
            for &chunk in chunks_for_reader {
                let Ok(mut buf) = free_rx.recv() else { return };
                let filled = fill(file, &reader_file, &mut buf, chunk).map(|()| (chunk, buf));
                let failed = filled.is_err();
                if full_tx.send(filled).is_err() || failed {
                    return;
                }
            }
        });
        for _ in 0..chunks.len() {
            let (chunk, buf) =
                full_rx.recv().map_err(|_| HostError::InvalidInput("the file reader stopped".into()))??;
            let slot = chunk.index % stream_count;
            let stream = &streams[slot];
            let len = chunk.len as usize;
            let host = buf.host.as_slice()?;
            stream.memcpy_htod(&host[..len], &mut device[slot].slice_mut(..len))?;
            buf.copied.record(stream)?;
            histogram::launch_into(gpu, plan, stream, &device[slot], chunk.len, &mut counts)?;
            // The reader waits on `copied` before it refills this buffer; if it has stopped, the
            // buffer is simply dropped.
            let _ = free_tx.send(buf);
            if chunk.flush_after {
                for s in &streams {
                    s.synchronize()?;
                }
                let partial = streams[0].clone_dtoh(&counts)?;
                streams[0].memset_zeros(&mut counts)?;
                streams[0].synchronize()?;
                for (t, p) in totals.iter_mut().zip(partial) {
                    *t += p as u64;
                }
            }
            if let Some(bar) = &bar {
                bar.inc(4 * chunk.len);
            }
        }
        Ok(())
    });
    let seconds = start.elapsed().as_secs_f64();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result?;
    Ok(StreamReport { counts: totals, values: n, bytes: 4 * n, chunks: chunks.len(), chunk_values, seconds })
}

/// Fills `buf` with the chunk's values, on all cores; waits first for the buffer's last copy.
fn fill(file: &DataFile, handle: &std::fs::File, buf: &mut Staging, chunk: Chunk) -> Result<()> {
    buf.copied.synchronize()?;
    let out = &mut buf.host.as_mut_slice()?[..chunk.len as usize];
    out.par_chunks_mut(READ_PIECE_VALUES)
        .enumerate()
        .try_for_each(|(i, piece)| file.read_i32_at(handle, chunk.first + (i * READ_PIECE_VALUES) as u64, piece))
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
/// clamped like the kernels: the reference a streamed histogram must equal.
pub fn histogram_file_cpu(file: &DataFile, bins: usize) -> Result<Vec<u64>> {
    histogram::check_bins(bins)?;
    let handle = file.reopen()?;
    let piece = READ_PIECE_VALUES as u64;
    let pieces = file.len().div_ceil(piece);
    (0..pieces)
        .into_par_iter()
        .map(|i| -> Result<Vec<u64>> {
            let first = i * piece;
            let mut values = vec![0i32; piece.min(file.len() - first) as usize];
            file.read_i32_at(&handle, first, &mut values)?;
            let mut counts = vec![0u64; bins];
            for v in values {
                counts[v.clamp(0, bins as i32 - 1) as usize] += 1;
            }
            Ok(counts)
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

    #[test]
    fn cpu_file_histogram_counts_every_value_of_a_file_of_several_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let n = 2 * READ_PIECE_VALUES + 3;
        let values: Vec<i32> = (0..n as i32).map(|i| i % 7 - 1).collect();
        std::fs::write(&path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let file = DataFile::open_raw(&path, ElementType::I32).unwrap();
        let want: Vec<u64> = crate::reference::histogram_cpu(&values, 5).into_iter().map(u64::from).collect();
        assert_eq!(histogram_file_cpu(&file, 5).unwrap(), want);
    }

    fn lens(chunks: &[Chunk]) -> Vec<u64> {
        chunks.iter().map(|c| c.len).collect()
    }

    #[test]
    fn no_values_make_no_chunks() {
        assert!(plan_chunks(0, 16, FLUSH_LIMIT).unwrap().is_empty());
    }

    #[test]
    fn chunks_cover_the_input_in_order_with_a_ragged_last_chunk() {
        let chunks = plan_chunks(10, 4, FLUSH_LIMIT).unwrap();
        assert_eq!(lens(&chunks), [4, 4, 2]);
        assert_eq!(chunks.iter().map(|c| c.first).collect::<Vec<_>>(), [0, 4, 8]);
        assert_eq!(chunks.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(chunks.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, false, true]);
    }

    #[test]
    fn an_input_of_whole_chunks_ends_on_a_full_chunk() {
        assert_eq!(lens(&plan_chunks(12, 4, FLUSH_LIMIT).unwrap()), [4, 4, 4]);
        assert_eq!(lens(&plan_chunks(4, 4, FLUSH_LIMIT).unwrap()), [4]);
        assert_eq!(lens(&plan_chunks(3, 4, FLUSH_LIMIT).unwrap()), [3]);
        assert_eq!(lens(&plan_chunks(5, 4, FLUSH_LIMIT).unwrap()), [4, 1]);
    }

    #[test]
    fn counters_are_flushed_before_they_could_overflow() {
        // A limit of 10 values: 4 + 4 fit, a third chunk would make 12.
        let chunks = plan_chunks(20, 4, 10).unwrap();
        assert_eq!(chunks.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, true, false, true, true]);
        // Chunks that exactly fill the limit flush after it.
        let exact = plan_chunks(20, 5, 10).unwrap();
        assert_eq!(exact.iter().map(|c| c.flush_after).collect::<Vec<_>>(), [false, true, false, true]);
        // 2^32 values (a 16 GiB i32 file) in 256 MiB chunks: one flush before the u32 limit.
        let big = plan_chunks(1 << 32, 1 << 26, FLUSH_LIMIT).unwrap();
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
    fn zero_and_oversized_chunks_are_refused() {
        assert!(plan_chunks(10, 0, FLUSH_LIMIT).unwrap_err().to_string().contains("at least one value"));
        assert!(plan_chunks(10, 11, 10).unwrap_err().to_string().contains("between flushes"));
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
}
