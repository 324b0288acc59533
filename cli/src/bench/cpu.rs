//! The CPU rungs of the ladder: the Guide's triple loop (under a time limit), a multithreaded
//! SGEMM from the `gemm` crate, and the exact CPU histogram, each timed with the wall clock.

use crate::reference::{histogram_cpu, matmul_cpu_triple_loop, random_matrix};
use crate::timing::Timing;
use rand::SeedableRng;
use std::time::Instant;

/// Seconds of CPU time the SGEMM rung may spend on its timed runs at one size: enough for a
/// median of several runs at every size up to 8192 on a many-core host.
pub const SGEMM_BUDGET_S: f64 = 10.0;

/// `C = A * B` (row-major) with the `gemm` crate on every rayon thread: the fast CPU baseline.
pub fn sgemm(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matrix lengths do not match m, k, n");
    let mut c = vec![0.0f32; m * n];
    // Row-major: a row step of the row length and a column step of 1 for every matrix.
    let (k_i, n_i) = (k as isize, n as isize);
    // SAFETY: `a`, `b` and `c` hold m*k, k*n and m*n elements (asserted / allocated above) with
    // the strides given; `c` is a separate allocation; read_dst = false, so `c` is only written
    // (alpha, its factor, is then ignored) and beta = 1 gives C = A * B.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n_i,
            false,
            a.as_ptr(),
            1,
            k_i,
            b.as_ptr(),
            1,
            n_i,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0),
        );
    }
    c
}

/// How many timed runs the SGEMM rung makes after a warm-up run that took `warmup_s`: as many
/// as fit in `budget_s`, between 1 and `max_runs`.
pub fn sgemm_runs(warmup_s: f64, max_runs: usize, budget_s: f64) -> usize {
    let max_runs = max_runs.max(1);
    if warmup_s <= 0.0 {
        return max_runs;
    }
    ((budget_s / warmup_s).floor() as usize).clamp(1, max_runs)
}

/// Runs `f` and returns its result and wall-clock milliseconds.
pub fn wall_ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64() * 1e3)
}

/// Decides whether the single-threaded triple loop may run at a size, from the rate it reached
/// at the largest size it ran so far: its rate falls as the matrices outgrow the caches, so the
/// largest completed run is the best predictor of the next.
#[derive(Debug, Clone)]
pub struct TripleLoopBudget {
    limit_s: f64,
    /// `(flops, flops per second)` of the largest run so far.
    largest: Option<(f64, f64)>,
}

impl TripleLoopBudget {
    /// A budget of `limit_s` seconds per run.
    pub fn new(limit_s: f64) -> Self {
        Self { limit_s, largest: None }
    }

    /// The per-run limit, seconds.
    pub fn limit_s(&self) -> f64 {
        self.limit_s
    }

    /// Estimated seconds for `flops`, once a rate is known.
    pub fn estimate_s(&self, flops: f64) -> Option<f64> {
        self.largest.map(|(_, rate)| flops / rate)
    }

    /// `Ok` when a run of `flops` is estimated to stay within the limit; otherwise the reason
    /// the row is skipped, with the estimate. Needs a rate ([`Self::calibrate`]) first.
    pub fn permit(&self, flops: f64) -> Result<(), String> {
        if self.limit_s <= 0.0 {
            return Err("skipped: --cpu-loop-limit is 0".into());
        }
        match self.estimate_s(flops) {
            None => Err("skipped: no triple-loop rate was measured to estimate its time".into()),
            Some(s) if s <= self.limit_s => Ok(()),
            Some(s) => Err(format!(
                "skipped: would take ~{} s (at the rate of the largest triple loop run so far), over the {} s limit",
                seconds(s),
                seconds(self.limit_s)
            )),
        }
    }

    /// Records a run of `flops` that took `seconds`.
    pub fn record(&mut self, flops: f64, seconds: f64) {
        if seconds > 0.0 && self.largest.is_none_or(|(f, _)| flops >= f) {
            self.largest = Some((flops, flops / seconds));
        }
    }

    /// Times the loop once on a 128^3 product (a few milliseconds) so that the first real size
    /// has an estimate.
    pub fn calibrate(&mut self, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let s = 128;
        let (a, b) = (random_matrix(&mut rng, s * s), random_matrix(&mut rng, s * s));
        let (c, ms) = wall_ms(|| matmul_cpu_triple_loop(&a, &b, s, s, s));
        std::hint::black_box(c);
        self.record(2.0 * (s * s * s) as f64, ms / 1e3);
    }
}

/// Seconds with one decimal below 10, whole above.
fn seconds(s: f64) -> String {
    if s < 10.0 { format!("{s:.1}") } else { format!("{s:.0}") }
}

/// Times the exact CPU histogram over `runs` runs (at least one) and returns the counts of the
/// last one.
pub fn time_histogram(values: &[i32], bins: usize, runs: usize) -> (Timing, Vec<u32>) {
    let mut samples = Vec::with_capacity(runs.max(1));
    let mut counts = Vec::new();
    for _ in 0..runs.max(1) {
        let (c, ms) = wall_ms(|| histogram_cpu(values, bins));
        samples.push(ms);
        counts = c;
    }
    (Timing::from_samples(samples).expect("at least one run"), counts)
}

/// The CPU's model name from `/proc/cpuinfo`, where the OS has one.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::MatmulReference;

    #[test]
    fn sgemm_matches_the_f64_reference_on_a_rectangular_shape() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let (m, k, n) = (37, 129, 65);
        let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
        let reference = MatmulReference::new(&a, &b, m, k, n);
        let err = reference.max_error(&sgemm(&a, &b, m, k, n));
        assert!(err < reference.tolerance(), "error {err}");
    }

    #[test]
    fn sgemm_runs_fit_the_budget_but_never_drop_below_one() {
        assert_eq!(sgemm_runs(0.01, 5, 10.0), 5);
        assert_eq!(sgemm_runs(3.0, 5, 10.0), 3);
        assert_eq!(sgemm_runs(30.0, 5, 10.0), 1);
        assert_eq!(sgemm_runs(0.0, 0, 10.0), 1);
    }

    #[test]
    fn triple_loop_budget_extrapolates_from_the_largest_run() {
        let mut budget = TripleLoopBudget::new(30.0);
        assert!(budget.permit(1e9).unwrap_err().contains("no triple-loop rate"));
        budget.record(1e9, 1.0); // 1 GFLOP/s
        budget.record(1e6, 0.0001); // a faster small run does not replace it
        assert_eq!(budget.estimate_s(2e10), Some(20.0));
        assert_eq!(budget.permit(2e10), Ok(()));
        let reason = budget.permit(4e10).unwrap_err();
        assert!(reason.contains("would take ~40 s") && reason.contains("30 s limit"), "{reason}");
        budget.record(2e10, 40.0); // the larger run was slower: its rate wins
        assert_eq!(budget.estimate_s(2e10), Some(40.0));
    }

    #[test]
    fn a_zero_limit_skips_the_triple_loop_and_says_so() {
        let mut budget = TripleLoopBudget::new(0.0);
        budget.record(1e9, 1.0);
        assert_eq!(budget.permit(1.0).unwrap_err(), "skipped: --cpu-loop-limit is 0");
        let short = TripleLoopBudget { limit_s: 0.5, largest: Some((1e9, 1e9)) };
        assert!(short.permit(2e9).unwrap_err().contains("~2.0 s") && short.permit(2e9).unwrap_err().contains("0.5 s"));
    }

    #[test]
    fn calibration_gives_a_rate() {
        let mut budget = TripleLoopBudget::new(1.0);
        budget.calibrate(1);
        assert!(budget.estimate_s(1e9).is_some_and(|s| s > 0.0));
    }

    #[test]
    fn cpu_histogram_timing_returns_the_exact_counts() {
        let (timing, counts) = time_histogram(&[0, 1, 1, 5], 3, 2);
        assert_eq!(counts, vec![1, 2, 1]);
        assert_eq!(timing.runs, 2);
    }
}
