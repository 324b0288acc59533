//! Timing with CUDA events: warm-up, then event pairs around back-to-back batches of launches,
//! median of the per-launch times.

use crate::error::Result;
use crate::gpu::Gpu;
use cudarc::driver::sys::CUevent_flags;

/// Summary of repeated timings, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// Median run.
    pub median_ms: f64,
    /// Fastest run.
    pub min_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Number of timed samples.
    pub runs: usize,
    /// Launches between each sample's pair of events (each sample is their mean): more than one
    /// for launches shorter than [`MIN_SAMPLE_MS`], so that the host's enqueue gaps between
    /// launches stay out of the time.
    #[serde(default = "one")]
    pub launches_per_sample: usize,
}

fn one() -> usize {
    1
}

impl Timing {
    /// Summarises samples; `None` when there are none.
    pub fn from_samples(mut samples: Vec<f64>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 { samples[n / 2] } else { 0.5 * (samples[n / 2 - 1] + samples[n / 2]) };
        Some(Self { median_ms: median, min_ms: samples[0], max_ms: samples[n - 1], runs: n, launches_per_sample: 1 })
    }
}

/// cudarc's event tracking off while this lives, back on when it drops (if it was on).
///
/// With tracking on and more than one stream in the context (`Gpu::open` makes one of its own),
/// every buffer a launch or a cuBLAS call takes costs the host an event wait and an event record:
/// a GEMM of a few microseconds then runs as fast as the host can enqueue it, and its samples
/// measure the host (in one 200-shape sweep the same `few_rows` launch on the same shape read
/// 7.6 µs in one section and 5.1 in the next). Buffers made while it lives record no events.
pub struct UntrackedEvents {
    ctx: std::sync::Arc<cudarc::driver::CudaContext>,
    was_on: bool,
}

impl UntrackedEvents {
    /// Turns `gpu`'s context's event tracking off until the guard drops.
    ///
    /// # Safety
    ///
    /// While the guard lives, each buffer of the context is used on one stream only, or its uses
    /// on several streams are ordered by the caller: cudarc no longer orders them.
    pub unsafe fn new(gpu: &Gpu) -> Self {
        let ctx = gpu.context().clone();
        let was_on = ctx.is_event_tracking();
        // SAFETY: the caller keeps every buffer's uses on one stream while the guard lives.
        unsafe { ctx.disable_event_tracking() };
        Self { ctx, was_on }
    }
}

impl Drop for UntrackedEvents {
    fn drop(&mut self) {
        if self.was_on {
            // SAFETY: buffers made while tracking was off stay untracked, as they were; the
            // caller's guarantee covered their uses, and the others' tracking resumes.
            unsafe { self.ctx.enable_event_tracking() };
        }
    }
}

/// Warm-up lasts at least this long. A GPU that idled (while the CPU computed a reference, say)
/// has lowered its clocks, and a few launches of a 0.1 ms kernel do not bring them back: measured
/// on an H100, the first tier timed after a CPU histogram had a median 15% above its minimum. It
/// also outlasts the spinning of idle CPU thread pools (rayon's workers yield for a few rounds,
/// then sleep), so the host thread that enqueues the timed launches has its core to itself.
pub const MIN_WARMUP: std::time::Duration = std::time::Duration::from_millis(100);

/// The warm-up's launches run back to back in bursts of about this long, waited for one at a
/// time: only continuous work brings the clocks up. A warm-up that waited for each launch of a
/// 10 us kernel left the GPU idle most of the time: in one suite run cuBLAS at 256^3 then read
/// 0.074 ms against 0.012 in the next, about the ratio of the H100's idle clock (345 MHz) to its
/// boost (1980 MHz).
pub const WARMUP_BURST_MS: f64 = 5.0;

/// A timed sample spans at least this long: for shorter launches, several run back to back
/// between one pair of events. An event pair around each single launch of a few microseconds
/// measures the host's enqueue gaps too (cuBLAS at 512^3 read median 0.154 ms, min 0.018 ms).
pub const MIN_SAMPLE_MS: f64 = 0.5;

/// Most launches in one sample.
pub const MAX_LAUNCHES_PER_SAMPLE: usize = 1000;

/// Launches per sample for launches of about `launch_ms` each: enough to span [`MIN_SAMPLE_MS`].
pub fn launches_per_sample(launch_ms: f64) -> usize {
    launches_to_span(launch_ms, MIN_SAMPLE_MS)
}

/// Launches of about `launch_ms` each that span `span_ms`: at least one, at most
/// [`MAX_LAUNCHES_PER_SAMPLE`].
pub fn launches_to_span(launch_ms: f64, span_ms: f64) -> usize {
    if launch_ms.is_nan() || launch_ms <= 0.0 {
        return MAX_LAUNCHES_PER_SAMPLE;
    }
    ((span_ms / launch_ms).ceil() as usize).clamp(1, MAX_LAUNCHES_PER_SAMPLE)
}

/// Runs `launch(i)` untimed at least `warmup` times and for at least [`MIN_WARMUP`], in
/// back-to-back bursts of about [`WARMUP_BURST_MS`] (sized from the bursts before), then takes
/// `repeat` samples between CUDA events on the GPU's stream, each the mean of
/// [`launches_per_sample`] back-to-back launches, and summarises them. `i` counts every call, so
/// a caller can rotate through several input sets. Fails on the first launch or kernel error.
pub fn time_launches<E: From<hopper_kernels::Error> + From<cudarc::driver::DriverError>>(
    gpu: &Gpu,
    warmup: usize,
    repeat: usize,
    mut launch: impl FnMut(usize) -> Result<(), E>,
) -> Result<Timing, E> {
    let repeat = repeat.max(1);
    let start = std::time::Instant::now();
    let (mut calls, mut burst) = (0, 1);
    while calls < warmup || start.elapsed() < MIN_WARMUP {
        let began = std::time::Instant::now();
        for _ in 0..burst {
            launch(calls)?;
            calls += 1;
        }
        // Waiting for each burst makes the elapsed time the GPU's, not the enqueue time.
        gpu.synchronize()?;
        burst = launches_to_span(began.elapsed().as_secs_f64() * 1e3 / burst as f64, WARMUP_BURST_MS);
    }
    let ctx = gpu.context();
    // Timing needs events created without CU_EVENT_DISABLE_TIMING (cudarc's default).
    let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
    // A probe batch sizes the samples: back to back, its mean is close to one launch's GPU time.
    const PROBE: usize = 8;
    let (begin, end) = (event()?, event()?);
    begin.record(gpu.stream())?;
    for _ in 0..PROBE {
        launch(calls)?;
        calls += 1;
    }
    end.record(gpu.stream())?;
    gpu.synchronize()?;
    let batch = launches_per_sample(f64::from(begin.elapsed_ms(&end)?) / PROBE as f64);
    let events = (0..2 * repeat).map(|_| event()).collect::<Result<Vec<_>, cudarc::driver::DriverError>>()?;
    for pair in events.chunks(2) {
        pair[0].record(gpu.stream())?;
        for _ in 0..batch {
            launch(calls)?;
            calls += 1;
        }
        pair[1].record(gpu.stream())?;
    }
    gpu.synchronize()?;
    let samples = events
        .chunks(2)
        .map(|p| p[0].elapsed_ms(&p[1]).map(|ms| f64::from(ms) / batch as f64))
        .collect::<Result<Vec<_>, cudarc::driver::DriverError>>()?;
    let mut timing = Timing::from_samples(samples).expect("repeat >= 1");
    timing.launches_per_sample = batch;
    Ok(timing)
}

/// How many copies of a working set of `bytes` to rotate through so that consecutive runs do not
/// find their inputs in an L2 of `l2_bytes`: enough to cover three L2s, at most 16.
pub fn rotation_sets(bytes: u64, l2_bytes: u64) -> usize {
    if bytes == 0 || bytes >= 3 * l2_bytes {
        return 1;
    }
    (3 * l2_bytes).div_ceil(bytes).clamp(1, 16) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_reports_median_min_and_max() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.runs), (2.5, 1.0, 10.0, 4));
        assert_eq!(Timing::from_samples(vec![5.0, 1.0, 3.0]).unwrap().median_ms, 3.0);
        assert!(Timing::from_samples(vec![]).is_none());
    }

    #[test]
    fn short_launches_are_batched_to_span_the_minimum_sample() {
        assert_eq!(launches_per_sample(2.0), 1);
        assert_eq!(launches_per_sample(MIN_SAMPLE_MS), 1);
        assert_eq!(launches_per_sample(0.01), 50);
        assert_eq!(launches_per_sample(0.0001), MAX_LAUNCHES_PER_SAMPLE);
        assert_eq!(launches_per_sample(0.0), MAX_LAUNCHES_PER_SAMPLE);
    }

    #[test]
    fn warm_up_bursts_of_short_launches_run_back_to_back_for_the_burst_span() {
        assert_eq!(launches_to_span(0.01, WARMUP_BURST_MS), 500);
        assert_eq!(launches_to_span(22.0, WARMUP_BURST_MS), 1);
        assert_eq!(launches_to_span(1.0, WARMUP_BURST_MS), 5);
        assert_eq!(launches_to_span(f64::NAN, WARMUP_BURST_MS), MAX_LAUNCHES_PER_SAMPLE);
    }

    #[test]
    fn rotation_covers_three_l2_sizes_for_small_working_sets_only() {
        let l2 = 50 << 20;
        assert_eq!(rotation_sets(8 << 20, l2), 16.min((150u64 << 20).div_ceil(8 << 20) as usize));
        assert_eq!(rotation_sets(60 << 20, l2), 3);
        assert_eq!(rotation_sets(200 << 20, l2), 1);
        assert_eq!(rotation_sets(1, l2), 16);
    }
}
