//! Timing with CUDA events: warm-up, then one event pair around each launch, median of the runs.

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
    /// Number of timed runs.
    pub runs: usize,
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
        Some(Self { median_ms: median, min_ms: samples[0], max_ms: samples[n - 1], runs: n })
    }
}

/// Warm-up lasts at least this long. A GPU that idled (while the CPU computed a reference, say)
/// has lowered its clocks, and a few launches of a 0.1 ms kernel do not bring them back: measured
/// on an H100, the first tier timed after a CPU histogram had a median 15% above its minimum.
pub const MIN_WARMUP: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs `launch(i)` untimed at least `warmup` times and for at least [`MIN_WARMUP`], then
/// `repeat` times between CUDA events on the GPU's stream, and summarises the event times. `i`
/// counts every call, so a caller can rotate through several input sets. Fails on the first
/// launch or kernel error.
pub fn time_launches(
    gpu: &Gpu,
    warmup: usize,
    repeat: usize,
    mut launch: impl FnMut(usize) -> Result<()>,
) -> Result<Timing> {
    let repeat = repeat.max(1);
    let start = std::time::Instant::now();
    let mut warmed = 0;
    while warmed < warmup || start.elapsed() < MIN_WARMUP {
        launch(warmed)?;
        // Waiting for each warm-up run makes the elapsed time the GPU's, not the enqueue time.
        gpu.synchronize()?;
        warmed += 1;
    }
    let warmup = warmed;
    let ctx = gpu.context();
    // Timing needs events created without CU_EVENT_DISABLE_TIMING (cudarc's default).
    let events =
        (0..2 * repeat).map(|_| ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))).collect::<Result<Vec<_>, _>>()?;
    for (i, pair) in events.chunks(2).enumerate() {
        pair[0].record(gpu.stream())?;
        launch(warmup + i)?;
        pair[1].record(gpu.stream())?;
    }
    gpu.synchronize()?;
    let samples = events.chunks(2).map(|p| p[0].elapsed_ms(&p[1]).map(f64::from)).collect::<Result<Vec<_>, _>>()?;
    Ok(Timing::from_samples(samples).expect("repeat >= 1"))
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
    fn rotation_covers_three_l2_sizes_for_small_working_sets_only() {
        let l2 = 50 << 20;
        assert_eq!(rotation_sets(8 << 20, l2), 16.min((150u64 << 20).div_ceil(8 << 20) as usize));
        assert_eq!(rotation_sets(60 << 20, l2), 3);
        assert_eq!(rotation_sets(200 << 20, l2), 1);
        assert_eq!(rotation_sets(1, l2), 16);
    }
}
