//! CPU references: the Programming Guide's triple loop (the "CPU" rung of the ladder), a float64
//! reference with the error bound every check uses, and input generators.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};
use rayon::prelude::*;

/// `count` values uniform in [-1, 1): never zeros, so unwritten or misindexed outputs show.
///
/// ```
/// use hopper_kernels::reference::random_matrix;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
/// let a = random_matrix(&mut rng, 10_000);
/// assert!(a.iter().all(|&x| x != 0.0 && (-1.0..1.0).contains(&x)));
/// // The same seed, the same matrix.
/// assert_eq!(a, random_matrix(&mut rand::rngs::StdRng::seed_from_u64(1), 10_000));
/// ```
pub fn random_matrix(rng: &mut impl Rng, count: usize) -> Vec<f32> {
    (0..count).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `C = A * B` for row-major `A[m x k]`, `B[k x n]` by the Guide's triple loop, in `f32` on one
/// thread: the CPU baseline of the write-up this project grew from.
///
/// ```
/// use hopper_kernels::reference::matmul_cpu_triple_loop;
/// // [1 2 3; 4 5 6] * [7 8; 9 10; 11 12] = [58 64; 139 154]
/// let c = matmul_cpu_triple_loop(&[1., 2., 3., 4., 5., 6.], &[7., 8., 9., 10., 11., 12.], 2, 3, 2);
/// assert_eq!(c, [58., 64., 139., 154.]);
/// ```
pub fn matmul_cpu_triple_loop(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matrix lengths do not match m, k, n");
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f32;
            for e in 0..k {
                sum += a[i * k + e] * b[e * n + j];
            }
            c[i * n + j] = sum;
        }
    }
    c
}

/// `C = A * B` in `f64`, with `sum_e |A[i][e]| * |B[e][j]|` per element: the scale that bounds
/// the rounding error of any `f32` evaluation order (`|c - ref| <= k * u * scale`).
///
/// ```
/// use hopper_kernels::reference::{MatmulReference, matmul_cpu_triple_loop, random_matrix};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(7);
/// let (m, k, n) = (13, 300, 7);
/// let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
/// // Any f32 evaluation order is within the bound; the triple loop's too.
/// let reference = MatmulReference::new(&a, &b, m, k, n);
/// assert!(reference.max_error(&matmul_cpu_triple_loop(&a, &b, m, k, n)) < reference.tolerance());
/// ```
pub struct MatmulReference {
    /// Exact-enough product, row-major `m x n`.
    pub values: Vec<f64>,
    /// `sum |a| * |b|` per element.
    pub scales: Vec<f64>,
    /// The inner dimension.
    pub k: usize,
}

impl MatmulReference {
    /// Computes the reference on all CPU cores (rows in parallel, `i-e-j` order).
    ///
    /// ```
    /// use hopper_kernels::reference::MatmulReference;
    /// // [1 -2] * [3; 4]: the product -5, and the scale |1 * 3| + |-2 * 4| = 11.
    /// let r = MatmulReference::new(&[1.0, -2.0], &[3.0, 4.0], 1, 2, 1);
    /// assert_eq!((r.values[0], r.scales[0], r.k), (-5.0, 11.0, 2));
    /// ```
    pub fn new(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Self {
        assert_eq!((a.len(), b.len()), (m * k, k * n), "matrix lengths do not match m, k, n");
        let mut values = vec![0.0f64; m * n];
        let mut scales = vec![0.0f64; m * n];
        values.par_chunks_mut(n).zip(scales.par_chunks_mut(n)).enumerate().for_each(|(i, (row, scale))| {
            for e in 0..k {
                let x = a[i * k + e] as f64;
                let b_row = &b[e * n..(e + 1) * n];
                for ((r, s), &y) in row.iter_mut().zip(scale.iter_mut()).zip(b_row) {
                    *r += x * y as f64;
                    *s += (x * y as f64).abs();
                }
            }
        });
        Self { values, scales, k }
    }

    /// Largest `|c - ref| / scale` over all elements; infinite if any element is NaN or
    /// infinite (an unwritten, NaN-poisoned output), or if the lengths differ.
    ///
    /// ```
    /// use hopper_kernels::reference::MatmulReference;
    /// let r = MatmulReference::new(&[1.0, -2.0], &[3.0, 4.0], 1, 2, 1);
    /// assert_eq!(r.max_error(&[-5.0]), 0.0);
    /// assert_eq!(r.max_error(&[0.5]), 0.5); // 5.5 off, of a scale of 11
    /// assert_eq!(r.max_error(&[f32::NAN]), f64::INFINITY); // an unwritten element fails any bound
    /// assert_eq!(r.max_error(&[-5.0, 0.0]), f64::INFINITY); // so does a wrong length
    /// ```
    pub fn max_error(&self, c: &[f32]) -> f64 {
        if c.len() != self.values.len() {
            return f64::INFINITY;
        }
        c.par_iter()
            .zip(&self.values)
            .zip(&self.scales)
            .map(|((&c, &r), &s)| {
                if !c.is_finite() {
                    f64::INFINITY
                } else {
                    let diff = (c as f64 - r).abs();
                    if s > 0.0 { diff / s } else { diff }
                }
            })
            .reduce(|| 0.0, f64::max)
    }

    /// The largest [`MatmulReference::max_error`] a correct `f32` kernel can have: `k` roundings
    /// of at most `u = 2^-24` each, with a factor of two to spare.
    ///
    /// ```
    /// use hopper_kernels::reference::MatmulReference;
    /// let r = MatmulReference::new(&[1.0; 1000], &[1.0; 1000], 1, 1000, 1);
    /// assert_eq!(r.tolerance(), 1000.0 * f32::EPSILON as f64);
    /// ```
    pub fn tolerance(&self) -> f64 {
        self.k.max(1) as f64 * f32::EPSILON as f64
    }
}

/// A [`MatmulReference`] for chosen rows of `C` only: at 8192^3 the full float64 product costs
/// minutes of CPU, while a few dozen rows cost a second and still see every column, every tile
/// boundary along `n` and (with the first and last row among them) both edges along `m`.
///
/// ```
/// use hopper_kernels::reference::{SampledMatmulReference, matmul_cpu_triple_loop, random_matrix, sample_rows};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(3);
/// let (m, k, n) = (40, 33, 17);
/// let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
/// let mut c = matmul_cpu_triple_loop(&a, &b, m, k, n);
/// let sampled = SampledMatmulReference::new(&a, &b, m, k, n, sample_rows(m, 5));
/// assert!(sampled.max_error(&c) < sampled.tolerance());
/// c[39 * n + 3] += 1.0; // an error in the last row, which is always sampled
/// assert!(sampled.max_error(&c) > sampled.tolerance());
/// ```
pub struct SampledMatmulReference {
    rows: Vec<usize>,
    n: usize,
    m: usize,
    reference: MatmulReference,
}

impl SampledMatmulReference {
    /// The reference for `rows` of `C = A * B` (each below `m`; duplicates are checked twice).
    ///
    /// ```
    /// use hopper_kernels::reference::SampledMatmulReference;
    /// // Rows 0 and 2 of [1; 2; 3] * [10 20].
    /// let r = SampledMatmulReference::new(&[1.0, 2.0, 3.0], &[10.0, 20.0], 3, 1, 2, vec![0, 2]);
    /// assert_eq!(r.max_error(&[10.0, 20.0, 0.0, 0.0, 30.0, 60.0]), 0.0); // row 1 is not checked
    /// ```
    pub fn new(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, rows: Vec<usize>) -> Self {
        assert_eq!((a.len(), b.len()), (m * k, k * n), "matrix lengths do not match m, k, n");
        assert!(rows.iter().all(|&r| r < m), "a sampled row is outside 0..{m}");
        let a_rows: Vec<f32> = rows.iter().flat_map(|&r| &a[r * k..(r + 1) * k]).copied().collect();
        let reference = MatmulReference::new(&a_rows, b, rows.len(), k, n);
        Self { rows, n, m, reference }
    }

    /// The rows it checks.
    ///
    /// ```
    /// use hopper_kernels::reference::{SampledMatmulReference, sample_rows};
    /// let r = SampledMatmulReference::new(&[1.0; 40], &[1.0; 2], 40, 1, 2, sample_rows(40, 5));
    /// assert_eq!(r.rows(), [0, 9, 19, 29, 39]);
    /// ```
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// [`MatmulReference::max_error`] over the sampled rows of the full `m x n` result `c`.
    ///
    /// ```
    /// use hopper_kernels::reference::SampledMatmulReference;
    /// let r = SampledMatmulReference::new(&[1.0, 2.0, 3.0], &[10.0, 20.0], 3, 1, 2, vec![2]);
    /// assert_eq!(r.max_error(&[0.0, 0.0, 0.0, 0.0, 30.0, 60.0]), 0.0);
    /// // The full result is checked for its length, m x n.
    /// assert_eq!(r.max_error(&[30.0, 60.0]), f64::INFINITY);
    /// ```
    pub fn max_error(&self, c: &[f32]) -> f64 {
        if c.len() != self.m * self.n {
            return f64::INFINITY;
        }
        let n = self.n;
        let c_rows: Vec<f32> = self.rows.iter().flat_map(|&r| &c[r * n..(r + 1) * n]).copied().collect();
        self.reference.max_error(&c_rows)
    }

    /// [`MatmulReference::tolerance`].
    ///
    /// ```
    /// use hopper_kernels::reference::{MatmulReference, SampledMatmulReference};
    /// let (a, b) = ([1.0; 4 * 64], [1.0; 64]);
    /// let sampled = SampledMatmulReference::new(&a, &b, 4, 64, 1, vec![0, 3]);
    /// assert_eq!(sampled.tolerance(), MatmulReference::new(&a, &b, 4, 64, 1).tolerance());
    /// ```
    pub fn tolerance(&self) -> f64 {
        self.reference.tolerance()
    }
}

/// `count` rows of `0..m` to check: all of them when `m <= count`, otherwise the first, the last
/// and evenly spaced ones between, in increasing order without repeats.
///
/// ```
/// use hopper_kernels::reference::sample_rows;
/// assert_eq!(sample_rows(3, 64), [0, 1, 2]); // all of them
/// let rows = sample_rows(8192, 64);
/// assert_eq!((rows.len(), rows[0], rows[63]), (64, 0, 8191)); // both edges
/// assert!(rows.windows(2).all(|w| w[0] < w[1]));
/// ```
pub fn sample_rows(m: usize, count: usize) -> Vec<usize> {
    if m <= count {
        return (0..m).collect();
    }
    if count <= 1 {
        return vec![m - 1];
    }
    let mut rows: Vec<usize> = (0..count).map(|i| i * (m - 1) / (count - 1)).collect();
    rows.dedup();
    rows
}

/// Exact histogram of `values` into `bins` bins; values below 0 count in bin 0 and values at or
/// above `bins` in the last bin (the Guide's clamping), by the kernels' own
/// [`kernels::histogram::bin_of`]. No bins count nothing (an empty histogram); bins past
/// `i32::MAX` stay empty, as no value reaches them.
///
/// ```
/// use hopper_kernels::reference::histogram_cpu;
/// // Below 0 in the first bin, at or above 3 in the last.
/// assert_eq!(histogram_cpu(&[-5, 0, 1, 2, 3, 99, i32::MIN, i32::MAX], 3), [3, 1, 4]);
/// assert_eq!(histogram_cpu(&[1, 2], 0), Vec::<u32>::new());
/// ```
pub fn histogram_cpu(values: &[i32], bins: usize) -> Vec<u32> {
    if bins == 0 {
        return Vec::new();
    }
    let nbins = u32::try_from(bins).unwrap_or(u32::MAX);
    let mut counts = vec![0u32; bins];
    for &v in values {
        counts[kernels::histogram::bin_of(v, nbins) as usize] += 1;
    }
    counts
}

/// How histogram input values are drawn.
///
/// ```
/// use hopper_kernels::reference::ValueDistribution;
/// assert_eq!("zipf".parse::<ValueDistribution>(), Ok(ValueDistribution::Zipf));
/// assert_eq!(ValueDistribution::Normal.to_string(), "normal");
/// assert!("gauss".parse::<ValueDistribution>().unwrap_err().contains("choose from uniform, normal, constant, zipf"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueDistribution {
    /// Uniform over `0..bins`.
    Uniform,
    /// Normal around `bins / 2` with standard deviation `bins / 8`, clamped by the kernel.
    Normal,
    /// Every value `bins / 2`: all counts in one bin, the worst case for atomic contention.
    Constant,
    /// Zipf over `1..=bins` (exponent 1.1), shifted to start at 0: a few bins take most values.
    Zipf,
}

impl ValueDistribution {
    /// Every distribution.
    pub const ALL: [Self; 4] = [Self::Uniform, Self::Normal, Self::Constant, Self::Zipf];

    /// The name `--dist` takes.
    ///
    /// ```
    /// use hopper_kernels::reference::ValueDistribution;
    /// let names: Vec<&str> = ValueDistribution::ALL.iter().map(|d| d.name()).collect();
    /// assert_eq!(names, ["uniform", "normal", "constant", "zipf"]);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Normal => "normal",
            Self::Constant => "constant",
            Self::Zipf => "zipf",
        }
    }
}

named_enum!(ValueDistribution, "distribution");

/// `n` histogram input values for `bins` bins, drawn in parallel from `seed`.
///
/// ```
/// use hopper_kernels::reference::{ValueDistribution, histogram_cpu, histogram_input};
/// let v = histogram_input(9, 100_000, 100, ValueDistribution::Uniform);
/// assert!(v.iter().all(|x| (0..100).contains(x)));
/// assert_eq!(v, histogram_input(9, 100_000, 100, ValueDistribution::Uniform)); // reproducible
/// // Constant: every value in the middle bin.
/// assert_eq!(histogram_cpu(&histogram_input(9, 1000, 100, ValueDistribution::Constant), 100)[50], 1000);
/// ```
pub fn histogram_input(seed: u64, n: usize, bins: usize, dist: ValueDistribution) -> Vec<i32> {
    const CHUNK: usize = 1 << 20;
    let bins = bins.clamp(1, i32::MAX as usize);
    let mut values = vec![0i32; n];
    values.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, out)| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (chunk as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match dist {
            ValueDistribution::Uniform => out.iter_mut().for_each(|v| *v = rng.random_range(0..bins as i32)),
            ValueDistribution::Normal => {
                let normal = Normal::new(bins as f64 / 2.0, (bins as f64 / 8.0).max(1.0)).expect("finite parameters");
                out.iter_mut()
                    .for_each(|v| *v = normal.sample(&mut rng).round().clamp(i32::MIN as f64, i32::MAX as f64) as i32);
            }
            ValueDistribution::Constant => out.fill((bins / 2) as i32),
            ValueDistribution::Zipf => {
                let zipf = Zipf::new(bins as f64, 1.1).expect("bins >= 1 and exponent > 0");
                out.iter_mut().for_each(|v| *v = zipf.sample(&mut rng) as i32 - 1);
            }
        }
    });
    values
}

/// `n` histogram input values of type `element` for `bins` bins, drawn like
/// [`histogram_input`]'s `i32` values and converted: integers clamped into the type (a `u8` input
/// for more than 256 bins fills the first 256), and for `f32` the integer bin `b` becomes a value
/// inside bin `b` of the range `(lo, hi)` (the middle of the bin, so it counts in `b` exactly).
///
/// ```
/// use hopper_kernels::histogram::{InputType, ValuesBuf};
/// use hopper_kernels::reference::{ValueDistribution, histogram_input_of};
/// // u8 values for 1000 bins fill the first 256.
/// let ValuesBuf::U8(bytes) = histogram_input_of(1, 10_000, 1000, ValueDistribution::Uniform, InputType::U8, None)
/// else { unreachable!() };
/// assert_eq!(bytes.iter().max(), Some(&255));
/// // f32 values lie in the middle of their bins: 0.5, 1.5, 2.5 or 3.5 over (0, 4).
/// let ValuesBuf::F32(floats) = histogram_input_of(1, 100, 4, ValueDistribution::Uniform, InputType::F32, None)
/// else { unreachable!() };
/// assert!(floats.iter().all(|&x| x.fract() == 0.5 && x < 4.0));
/// ```
pub fn histogram_input_of(
    seed: u64,
    n: usize,
    bins: usize,
    dist: ValueDistribution,
    element: crate::histogram::InputType,
    range: Option<(f32, f32)>,
) -> crate::histogram::ValuesBuf {
    use crate::histogram::{InputType, ValuesBuf};
    let ints = histogram_input(seed, n, bins, dist);
    match element {
        InputType::I32 => ValuesBuf::I32(ints),
        InputType::U8 => ValuesBuf::U8(ints.par_iter().map(|&v| v.clamp(0, u8::MAX as i32) as u8).collect()),
        InputType::U16 => ValuesBuf::U16(ints.par_iter().map(|&v| v.clamp(0, u16::MAX as i32) as u16).collect()),
        InputType::F32 => {
            let (lo, hi) = range.unwrap_or((0.0, bins as f32));
            let width = (hi as f64 - lo as f64) / bins as f64;
            let last = bins.clamp(1, i32::MAX as usize) as i32 - 1;
            ValuesBuf::F32(
                ints.par_iter().map(|&v| (lo as f64 + (v.clamp(0, last) as f64 + 0.5) * width) as f32).collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn triple_loop_multiplies_a_known_rectangular_product() {
        // [1 2 3; 4 5 6] * [7 8; 9 10; 11 12] = [58 64; 139 154]
        let c = matmul_cpu_triple_loop(&[1., 2., 3., 4., 5., 6.], &[7., 8., 9., 10., 11., 12.], 2, 3, 2);
        assert_eq!(c, vec![58., 64., 139., 154.]);
    }

    #[test]
    fn f64_reference_agrees_with_triple_loop_within_its_own_bound() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (m, k, n) = (13, 300, 7);
        let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
        let reference = MatmulReference::new(&a, &b, m, k, n);
        let err = reference.max_error(&matmul_cpu_triple_loop(&a, &b, m, k, n));
        assert!(err > 0.0 && err < reference.tolerance(), "error {err}");
    }

    #[test]
    fn max_error_is_infinite_for_nan_and_wrong_length() {
        let reference = MatmulReference::new(&[1.0], &[2.0], 1, 1, 1);
        assert_eq!(reference.max_error(&[2.0]), 0.0);
        assert_eq!(reference.max_error(&[f32::NAN]), f64::INFINITY);
        assert_eq!(reference.max_error(&[2.0, 2.0]), f64::INFINITY);
        assert!(reference.max_error(&[2.5]) > reference.tolerance());
    }

    #[test]
    fn random_matrices_hold_no_zeros_and_stay_in_range() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let v = random_matrix(&mut rng, 10_000);
        assert!(v.iter().all(|&x| x != 0.0 && (-1.0..1.0).contains(&x)));
    }

    #[test]
    fn histogram_input_draws_each_distribution_inside_its_range() {
        for dist in [ValueDistribution::Uniform, ValueDistribution::Zipf] {
            let v = histogram_input(3, 10_000, 100, dist);
            assert!(v.iter().all(|&x| (0..100).contains(&x)), "{dist:?}");
        }
        assert!(histogram_input(3, 1000, 100, ValueDistribution::Constant).iter().all(|&x| x == 50));
        let normal = histogram_input(3, 10_000, 1000, ValueDistribution::Normal);
        let mean = normal.iter().map(|&x| x as f64).sum::<f64>() / normal.len() as f64;
        assert!((mean - 500.0).abs() < 10.0, "mean {mean}");
        assert_eq!(
            histogram_input(9, 3 << 20, 7, ValueDistribution::Uniform),
            histogram_input(9, 3 << 20, 7, ValueDistribution::Uniform)
        );
    }

    #[test]
    fn sampled_reference_agrees_with_full_reference_on_its_rows() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (m, k, n) = (40, 33, 17);
        let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
        let mut c = matmul_cpu_triple_loop(&a, &b, m, k, n);
        let sampled = SampledMatmulReference::new(&a, &b, m, k, n, sample_rows(m, 5));
        assert_eq!(sampled.rows(), &[0, 9, 19, 29, 39]);
        let full = MatmulReference::new(&a, &b, m, k, n);
        assert!(sampled.max_error(&c) <= full.max_error(&c));
        assert!(sampled.max_error(&c) < sampled.tolerance());
        // An error on a sampled row (the last) is seen; one between sampled rows is not.
        c[39 * n + 3] += 1.0;
        assert!(sampled.max_error(&c) > sampled.tolerance());
        assert_eq!(sampled.max_error(&c[1..]), f64::INFINITY);
    }

    #[test]
    fn sample_rows_keeps_both_edges_and_takes_everything_when_small() {
        assert_eq!(sample_rows(3, 64), vec![0, 1, 2]);
        let rows = sample_rows(8192, 64);
        assert_eq!((rows.len(), rows[0], rows[63]), (64, 0, 8191));
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_rows(10, 1), vec![9]);
    }

    #[test]
    fn histogram_cpu_agrees_with_the_typed_cpu_histogram_of_i32_values() {
        use crate::histogram::{Binning, Values, histogram_cpu_of};
        let mut values = histogram_input(5, 100_000, 1000, ValueDistribution::Normal);
        values.extend([i32::MIN, -1, 0, 999, 1000, i32::MAX]);
        for bins in [1, 7, 1000, 1500] {
            let typed = histogram_cpu_of(Values::I32(&values), &Binning::integers(bins as u32));
            assert_eq!(histogram_cpu(&values, bins), typed, "{bins}");
        }
    }

    #[test]
    fn histogram_cpu_clamps_out_of_range_values_into_the_edge_bins() {
        assert_eq!(histogram_cpu(&[-5, 0, 1, 2, 3, 99, i32::MIN, i32::MAX], 3), vec![3, 1, 4]);
        assert_eq!(histogram_cpu(&[], 4), vec![0; 4]);
        assert_eq!(histogram_cpu(&[7, -7], 1), vec![2]);
    }
}
