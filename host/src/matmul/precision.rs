//! The arithmetic a matmul variant does, and how its result is checked: the reference it is
//! compared with and the error bound.

/// The precision of a variant's products. Every variant accumulates and writes `f32`.
///
/// ```
/// use hopper_kernels::matmul::{MatmulVariant, Precision};
/// let p = MatmulVariant::WgmmaTf32x3.precision();
/// assert_eq!((p, p.name()), (Precision::Tf32x3, "tf32x3"));
/// // From k = 128 on, split-TF32's bound is within FP32's, and far below TF32's.
/// assert!(p.tolerance(4096) < Precision::Fp32.tolerance(4096));
/// assert!(p.tolerance(4096) < Precision::Tf32.tolerance(4096) / 100.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// `f32` operands, `f32` products.
    Fp32,
    /// Operands rounded to BF16 (8-bit mantissa); products exact in `f32`.
    Bf16,
    /// `f32` operands of which the tensor cores use the TF32 part (10-bit mantissa).
    Tf32,
    /// Operands rounded to F16 (IEEE half: 10-bit mantissa, 11 significant bits, 5 exponent
    /// bits, largest finite 65504); products exact in `f32`. Inputs beyond F16's range are
    /// refused where the library rounds them ([`super::DeviceMatrices::f16_operands`]).
    Fp16,
    /// `f32` operands scaled by powers of two and split into two TF32 halves, `a = a_big +
    /// a_small` (split-TF32, "3xTF32"), multiplied as `A_big B_big + A_big B_small + A_small B_big`
    /// on TF32 tensor cores, the tensor cores' sums added in `f32` every 96 of the tripled `k`;
    /// within FP32's bound for `k >=` [`super::plan::SPLIT_TF32_MIN_K`] and compared with cuBLAS
    /// FP32. Inputs outside the split's range run an FP32 kernel instead (its guard).
    Tf32x3,
}

/// TF32's unit of truncation: a TF32 value keeps 10 of `f32`'s 23 mantissa bits, so dropping
/// the rest (truncation, the worst case of the conversions the tensor cores may do) changes a
/// value by less than 2^-10 of itself.
///
/// ```
/// use hopper_kernels::matmul::TF32_UNIT;
/// // Truncating an f32 to TF32 clears its 13 low mantissa bits.
/// let x = 2.0f32 - f32::EPSILON; // every mantissa bit set
/// let tf32 = f32::from_bits(x.to_bits() & !0x1fff);
/// assert!(tf32 < x && ((x - tf32) / x) < TF32_UNIT as f32);
/// ```
pub const TF32_UNIT: f64 = 1.0 / 1024.0;

/// The error of one split-TF32 product relative to `|a * b|` (see [`Precision::tolerance`]):
/// the dropped `a_small b_small` (`2^-22`) and the truncation of `a_small` and of `b_small`
/// (`2^-21 (1 + 2^-11)` each).
///
/// ```
/// use hopper_kernels::matmul::{Precision, TF32X3_PRODUCT_BOUND};
/// // About 5 * 2^-22 per product: three orders of magnitude below TF32's conversion error.
/// assert!((TF32X3_PRODUCT_BOUND * 2f64.powi(22) - 5.0).abs() < 0.01);
/// assert!(TF32X3_PRODUCT_BOUND < Precision::Tf32.tolerance(1) / 1000.0);
/// ```
pub const TF32X3_PRODUCT_BOUND: f64 = 1.0 / (1u64 << 22) as f64 + (1.0 + 1.0 / 2048.0) / (1u64 << 20) as f64;

/// Products each TF32 `wgmma` instruction adds into an accumulator (`k = 8`).
///
/// ```
/// use hopper_kernels::matmul::{TF32_INSTRUCTION_K, TF32X3_RUN};
/// // A run of the tensor cores' accumulation is 12 instructions.
/// assert_eq!(TF32X3_RUN / TF32_INSTRUCTION_K, 12);
/// ```
pub const TF32_INSTRUCTION_K: usize = 8;

/// Summands of the tripled `k` per tensor-core run of `wgmma_tf32_promoted`: its accumulators
/// restart every `PROMOTE_K_TILES` stages of 32, and each run is then added into `f32`.
///
/// ```
/// use hopper_kernels::matmul::{Precision, TF32X3_RUN};
/// assert_eq!(TF32X3_RUN, 96);
/// // k = 32 triples to one run of 96; k = 64 to two, whose sums add half a unit in f32.
/// let eps = f32::EPSILON as f64;
/// let one_more_run = Precision::Tf32x3.tolerance(64) - Precision::Tf32x3.tolerance(32);
/// assert!((one_more_run - 0.5 * eps * (1.0 + 1.0 / 512.0)).abs() < 1e-18);
/// ```
pub const TF32X3_RUN: usize = kernels::matmul::wgmma::PROMOTE_K_TILES as usize * 32;

/// Half of `f32`'s smallest subnormal, `2^-150`: the largest error of one rounding of a
/// result below `f32`'s normal range, which no relative bound covers.
///
/// ```
/// use hopper_kernels::matmul::{F32_UNDERFLOW_UNIT, Precision};
/// // Half of the smallest subnormal f32.
/// assert_eq!(2.0 * F32_UNDERFLOW_UNIT, f32::from_bits(1) as f64);
/// // All that bounds the error of a product whose terms are all zero.
/// assert_eq!(Precision::Fp32.bound(10, 0.0), 10.0 * F32_UNDERFLOW_UNIT);
/// ```
pub const F32_UNDERFLOW_UNIT: f64 = 1.0 / (1u128 << 100) as f64 / (1u64 << 50) as f64;

/// How `auto` may compute an `f32` product: the spirit of PyTorch's
/// `torch.set_float32_matmul_precision`, with this library's three kinds of arithmetic. Each
/// names what it guarantees on every input; `auto` then runs the fastest kernel that keeps it.
///
/// ```
/// use hopper_kernels::matmul::PrecisionPolicy;
/// assert_eq!(PrecisionPolicy::default(), PrecisionPolicy::High);
/// assert_eq!("highest".parse::<PrecisionPolicy>().unwrap(), PrecisionPolicy::Highest);
/// assert_eq!("HIGH".parse::<PrecisionPolicy>().unwrap(), PrecisionPolicy::High); // any case, as every named enum
/// assert!("fast".parse::<PrecisionPolicy>().unwrap_err().contains("highest, high, medium"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrecisionPolicy {
    /// IEEE FP32: one `f32` fused multiply-add per term, on the CUDA cores, on any GPU. Every
    /// element within [`Precision::Fp32`]'s bound; deterministic.
    Highest,
    /// FP32-accurate tensor cores (the default): on Hopper, wide products with `k >=`
    /// [`super::plan::SPLIT_TF32_MIN_K`] run split-TF32 where a scan of the inputs on the GPU
    /// proves it keeps FP32's contract (every input finite, magnitudes within the range the split
    /// holds exactly after scaling by powers of two, `C` unable to overflow), and the FP32 kernel
    /// otherwise; everything else runs as `highest`. Every element has FP32's class (NaN, +inf,
    /// -inf or finite, as `highest` gives it) and is within FP32's bound
    /// ([`Precision::Fp32`]'s); deterministic; 0.55-0.6x cuBLAS FP32's time at 4096^3.
    #[default]
    High,
    /// TF32 tensor cores: operands truncated to 10 mantissa bits (error up to about `2^-9` of
    /// `sum |a b|`, [`Precision::Tf32`]'s bound), subnormal inputs flushed to zero, a NaN whose
    /// payload lies only in the 13 dropped bits read as an infinity; on Hopper for the shapes
    /// where `high` would run split-TF32, `highest`'s kernels elsewhere.
    Medium,
}

impl PrecisionPolicy {
    /// Every policy, most accurate first.
    pub const ALL: [Self; 3] = [Self::Highest, Self::High, Self::Medium];

    /// The name the CLI takes and prints.
    ///
    /// ```
    /// use hopper_kernels::matmul::PrecisionPolicy;
    /// let names: Vec<&str> = PrecisionPolicy::ALL.iter().map(|p| p.name()).collect();
    /// assert_eq!(names, ["highest", "high", "medium"]);
    /// assert_eq!(PrecisionPolicy::Medium.to_string(), "medium");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Highest => "highest",
            Self::High => "high",
            Self::Medium => "medium",
        }
    }
}

impl std::fmt::Display for PrecisionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PrecisionPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| format!("unknown precision policy `{text}`: choose from highest, high, medium"))
    }
}

impl Precision {
    /// The name the reports use.
    ///
    /// ```
    /// use hopper_kernels::matmul::Precision;
    /// assert_eq!(Precision::Tf32x3.name(), "tf32x3");
    /// assert_eq!(Precision::Bf16.name(), "bf16");
    /// assert_eq!(Precision::Fp16.name(), "fp16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Bf16 => "bf16",
            Self::Tf32 => "tf32",
            Self::Tf32x3 => "tf32x3",
            Self::Fp16 => "fp16",
        }
    }

    /// The precision of the cuBLAS row a variant of this precision is timed against: its own,
    /// except split-TF32, whose results are at FP32's error or below and so compete with cuBLAS
    /// FP32.
    ///
    /// ```
    /// use hopper_kernels::matmul::Precision;
    /// // Split-TF32 is timed against cuBLAS FP32, every other precision against its own.
    /// assert_eq!(Precision::Tf32x3.baseline(), Precision::Fp32);
    /// assert_eq!(Precision::Tf32.baseline(), Precision::Tf32);
    /// ```
    pub fn baseline(self) -> Self {
        match self {
            Self::Tf32x3 => Self::Fp32,
            p => p,
        }
    }

    /// The precision whose float64 reference this one is checked against: BF16 and FP16 have
    /// their own (the product of the rounded inputs), every other the product of the inputs
    /// themselves, which is FP32's; callers compute that one once.
    ///
    /// ```
    /// use hopper_kernels::matmul::Precision;
    /// assert_eq!(Precision::Bf16.reference_precision(), Precision::Bf16);
    /// assert_eq!(Precision::Fp16.reference_precision(), Precision::Fp16);
    /// assert_eq!(Precision::Tf32.reference_precision(), Precision::Fp32);
    /// assert_eq!(Precision::Tf32x3.reference_precision(), Precision::Fp32);
    /// ```
    pub fn reference_precision(self) -> Self {
        match self {
            Self::Bf16 => Self::Bf16,
            Self::Fp16 => Self::Fp16,
            _ => Self::Fp32,
        }
    }

    /// The bound on `|C - reference| / sum |a * b|` for an inner dimension `k`, where the
    /// reference is the float64 product of [`Precision::reference_inputs`]:
    /// - FP32, BF16 and FP16: `k * f32::EPSILON`, the accumulation's rounding (BF16 and F16
    ///   products, 8 by 8 and 11 by 11 significant bits, are exact in `f32`, and the reference
    ///   multiplies the same rounded values). Against the `f32` inputs themselves, rounding both
    ///   operands to F16 adds `(1 + d_a)(1 + d_b) - 1` with `|d| <= 2^-11`, under `2^-10 + 2^-22`
    ///   of `|a * b|` ([`F16_UNIT`]; BF16's is `2^-8`), for inputs in F16's normal range
    ///   (`|x| >= 2^-14`; below it F16 rounds in absolute steps of `2^-25`);
    /// - TF32: the reference multiplies the original inputs, so each product also carries the
    ///   operands' conversion: `(1 + d_a)(1 + d_b) - 1` with `|d| < 2^-10`, under
    ///   `2 * 2^-10 + 2^-20` of `|a * b|`, plus the same `k * f32::EPSILON`.
    /// - TF32x3: with `a = a_big + a_small`, `a_big` exact in TF32 and `|a_small| <= 2^-11 |a|`
    ///   (`kernels::matmul::operands::split_tf32`), each product `a * b` becomes `a_big b_big +
    ///   a_big t(b_small) + t(a_small) b_big`, where `t` is the tensor cores' truncation to TF32
    ///   (`|t(x) - x| < 2^-10 |x|`); every one of these products is exact in `f32` (11 by 11
    ///   significant bits). The error per product: the dropped `a_small b_small`, at most
    ///   `2^-22 |a b|`, and the two truncations, each under `2^-10 * 2^-11 (1 + 2^-11) |a b|`:
    ///   in all under [`TF32X3_PRODUCT_BOUND`] `= 2^-22 + 2^-20 (1 + 2^-11)`. Then the
    ///   accumulation of `3k` summands whose magnitudes add up to at most `(1 + 2^-11)(1 + 3 *
    ///   2^-11) < 1 + 2^-9` times `sum |a b|`, in runs of [`TF32X3_RUN`]: within a run, each
    ///   instruction adds its [`TF32_INSTRUCTION_K`] exact products to the accumulator aligned to
    ///   the largest exponent and truncated (the tensor cores' summation as Fasi, Higham, Mikaitis
    ///   and Pranesh measured it, 2021), an error under `(8 + 1) * f32::EPSILON` times the run's
    ///   magnitudes; the runs are then added in `f32`, rounded to nearest, `f32::EPSILON / 2`
    ///   each. In all `(9 * ceil(min(3k, 96) / 8) + (ceil(3k / 96) - 1) / 2) * f32::EPSILON *
    ///   (1 + 2^-9)`: with the products' 10 units, about `118 + k / 64` units, within FP32's `k`
    ///   units for `k >= 120`.
    ///   The guard's scaling keeps every partial product and sum normal, so no flush to zero adds
    ///   to this; a subnormal `C` adds one rounding, [`F32_UNDERFLOW_UNIT`] (see
    ///   [`Precision::bound`]).
    ///
    /// ```
    /// use hopper_kernels::matmul::Precision;
    /// let k = 1000;
    /// assert_eq!(Precision::Fp32.tolerance(k), k as f64 * f32::EPSILON as f64);
    /// // TF32 adds about 2^-9 for the operands' conversion.
    /// let tf32 = Precision::Tf32.tolerance(k);
    /// assert!(tf32 > 1.95e-3 && tf32 < 2.1e-3);
    /// // Split-TF32 is within FP32's bound from k = 128, not below.
    /// assert!(Precision::Tf32x3.tolerance(128) <= Precision::Fp32.tolerance(128));
    /// assert!(Precision::Tf32x3.tolerance(100) > Precision::Fp32.tolerance(100));
    /// ```
    pub fn tolerance(self, k: usize) -> f64 {
        let eps = f32::EPSILON as f64;
        let accumulation = k.max(1) as f64 * eps;
        match self {
            Self::Fp32 | Self::Bf16 | Self::Fp16 => accumulation,
            Self::Tf32 => 2.0 * TF32_UNIT + TF32_UNIT * TF32_UNIT + accumulation,
            Self::Tf32x3 => {
                let summands = 3 * k.max(1);
                let instructions = summands.min(TF32X3_RUN).div_ceil(TF32_INSTRUCTION_K);
                let runs = summands.div_ceil(TF32X3_RUN);
                let units = ((TF32_INSTRUCTION_K + 1) * instructions) as f64 + (runs - 1) as f64 / 2.0;
                TF32X3_PRODUCT_BOUND + units * eps * (1.0 + 1.0 / 512.0)
            }
        }
    }

    /// The bound on `|C - reference|` of one element whose `sum |a * b|` is `magnitude`:
    /// [`Precision::tolerance`] times it, plus one [`F32_UNDERFLOW_UNIT`] per term for the
    /// roundings of partial sums below `f32`'s normal range (FP32's fused multiply-adds round
    /// subnormal results absolutely; the split path rounds only its subnormal `C`, once).
    ///
    /// ```
    /// use hopper_kernels::matmul::{F32_UNDERFLOW_UNIT, Precision};
    /// // |C - reference| of an element with sum |a * b| = 3.5 and k = 10:
    /// let bound = Precision::Fp32.bound(10, 3.5);
    /// assert_eq!(bound, Precision::Fp32.tolerance(10) * 3.5 + 10.0 * F32_UNDERFLOW_UNIT);
    /// ```
    pub fn bound(self, k: usize, magnitude: f64) -> f64 {
        self.tolerance(k) * magnitude + k.max(1) as f64 * F32_UNDERFLOW_UNIT
    }

    /// The inputs whose float64 product is the reference: BF16 and FP16 compare with the
    /// product of the inputs rounded to their type (`half::bf16::from_f32`,
    /// `half::f16::from_f32`: to nearest, ties to even), the others with the product of the
    /// inputs themselves.
    ///
    /// ```
    /// use hopper_kernels::matmul::Precision;
    /// let x = [0.1f32, 1.0 + 1.0 / 128.0 + 1.0 / 1024.0];
    /// assert_eq!(&*Precision::Fp32.reference_inputs(&x), &x); // borrowed as they are
    /// assert_eq!(Precision::Bf16.reference_inputs(&x)[1], 1.0 + 1.0 / 128.0); // rounded to 8 bits
    /// assert_eq!(Precision::Fp16.reference_inputs(&x)[1], 1.0 + 1.0 / 128.0 + 1.0 / 1024.0); // 10 bits hold it
    /// ```
    pub fn reference_inputs(self, values: &[f32]) -> std::borrow::Cow<'_, [f32]> {
        match self {
            Self::Bf16 => values.iter().map(|&v| round_to_bf16(v)).collect::<Vec<f32>>().into(),
            Self::Fp16 => values.iter().map(|&v| round_to_f16(v)).collect::<Vec<f32>>().into(),
            Self::Fp32 | Self::Tf32 | Self::Tf32x3 => values.into(),
        }
    }
}

/// `v` rounded to the nearest BF16 and widened back to `f32`.
///
/// ```
/// use hopper_kernels::matmul::round_to_bf16;
/// assert_eq!(round_to_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
/// // Halfway between 1 and 1 + 2^-7: ties go to the even mantissa.
/// assert_eq!(round_to_bf16(1.0 + 1.0 / 256.0), 1.0);
/// assert!(round_to_bf16(f32::NAN).is_nan());
/// ```
pub fn round_to_bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// `v` rounded to the nearest F16 (IEEE half) and widened back to `f32`: what `wgmma_f16`
/// multiplies when given `f32` inputs. Beyond F16's range (`|v| >= 65520`) the result is an
/// infinity; [`f16_range_violation`] finds such inputs.
///
/// ```
/// use hopper_kernels::matmul::round_to_f16;
/// assert_eq!(round_to_f16(1.0 + 3.0 / 4096.0), 1.0 + 4.0 / 4096.0);
/// // Halfway between 1 and 1 + 2^-10: ties go to the even mantissa.
/// assert_eq!(round_to_f16(1.0 + 1.0 / 2048.0), 1.0);
/// assert_eq!(round_to_f16(65504.0), 65504.0);
/// assert!(round_to_f16(65520.0).is_infinite());
/// ```
pub fn round_to_f16(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// F16's unit of rounding: rounding an `f32` in F16's normal range to nearest changes it by at
/// most `2^-11` of itself (10 stored mantissa bits).
///
/// ```
/// use hopper_kernels::matmul::{F16_UNIT, round_to_f16};
/// let x = 1.0f32 + 1.0 / 2048.0 + 1.0 / 65536.0; // just above a tie: rounds up by under 2^-11
/// assert!(((round_to_f16(x) - x) / x).abs() as f64 <= F16_UNIT);
/// ```
pub const F16_UNIT: f64 = 1.0 / 2048.0;

/// The first of `values` (index, value) that is finite but rounds to an infinity in F16
/// (`|v| >= 65520`: F16's largest finite value is 65504, and values up to half an F16 step above
/// it still round down to it); `None` if every value is within range. Infinities and NaN are
/// not violations: they are F16 values already, and stay what they are.
///
/// ```
/// use hopper_kernels::matmul::f16_range_violation;
/// assert_eq!(f16_range_violation(&[1.0, -65504.0, 65519.0, f32::INFINITY, f32::NAN]), None);
/// assert_eq!(f16_range_violation(&[1.0, -7.0e4, 1.0e9]), Some((1, -7.0e4)));
/// ```
pub fn f16_range_violation(values: &[f32]) -> Option<(usize, f32)> {
    values.iter().position(|&v| v.is_finite() && v.abs() >= 65520.0).map(|i| (i, values[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounding_keeps_8_mantissa_bits_ties_to_even() {
        assert_eq!(round_to_bf16(1.0), 1.0);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
        assert_eq!(round_to_bf16(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round_to_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert!(round_to_bf16(f32::NAN).is_nan());
        let v = 0.123_456_79f32;
        assert!(((round_to_bf16(v) - v) / v).abs() <= 1.0 / 256.0);
    }

    #[test]
    fn f16_rounding_keeps_10_mantissa_bits_ties_to_even_and_overflows_from_65520() {
        assert_eq!(round_to_f16(1.0 + 1.0 / 2048.0), 1.0);
        assert_eq!(round_to_f16(1.0 + 3.0 / 2048.0), 1.0 + 4.0 / 2048.0);
        assert_eq!(round_to_f16(65504.0), 65504.0);
        // 65519.99 is below the halfway point 65520 to the next (infinite) step.
        assert_eq!(round_to_f16(65519.99), 65504.0);
        assert_eq!(round_to_f16(65520.0), f32::INFINITY);
        assert_eq!(round_to_f16(-65520.0), f32::NEG_INFINITY);
        assert!(round_to_f16(f32::NAN).is_nan());
        // The range check marks exactly the finite values that round to an infinity.
        for v in [65504.0f32, 65519.99, 65520.0, 1e6, -65520.0, f32::MAX, 1e-30, 0.0] {
            let overflows = round_to_f16(v).is_infinite();
            assert_eq!(f16_range_violation(&[v]).is_some(), overflows, "{v}");
        }
        assert_eq!(f16_range_violation(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN]), None);
        assert_eq!(f16_range_violation(&[0.5, 1e5, -1e6]), Some((1, 1e5)));
        // In the normal range the rounding is within 2^-11 relative.
        let mut x = 6.2e-5f32; // just above 2^-14
        while x < 65504.0 {
            assert!(((round_to_f16(x) - x) / x).abs() as f64 <= F16_UNIT, "{x}");
            x *= 1.618_034;
        }
    }

    #[test]
    fn fp16_is_checked_on_rounded_inputs_with_fp32s_accumulation_bound() {
        assert_eq!(Precision::Fp16.tolerance(1000), Precision::Fp32.tolerance(1000));
        assert_eq!(Precision::Fp16.reference_precision(), Precision::Fp16);
        assert_eq!(Precision::Fp16.baseline(), Precision::Fp16);
        let x = [0.1f32, 1.0 + 1.0 / 1024.0 + 1.0 / 8192.0];
        let r = Precision::Fp16.reference_inputs(&x);
        assert_eq!(r[1], 1.0 + 1.0 / 1024.0);
        assert!(r.iter().zip(&x).all(|(r, x)| ((r - x) / x).abs() as f64 <= F16_UNIT));
        // Rounding both operands: (1 + d)^2 - 1 < 2^-10 + 2^-22 of the product.
        let a = 1.0f64 + F16_UNIT - 1e-12;
        let rounded = 1.0f64;
        assert!((a * a - rounded * rounded) / (a * a) < 2.0 * F16_UNIT + F16_UNIT * F16_UNIT);
    }

    #[test]
    fn reference_inputs_round_only_for_bf16() {
        let x = [0.1f32, -0.3, 1.0 + 1.0 / 128.0 + 1.0 / 1024.0];
        assert_eq!(&*Precision::Fp32.reference_inputs(&x), &x);
        assert_eq!(&*Precision::Tf32.reference_inputs(&x), &x);
        let r = Precision::Bf16.reference_inputs(&x);
        assert_eq!(r[2], 1.0 + 1.0 / 128.0);
        assert!(r.iter().zip(&x).all(|(r, x)| ((r - x) / x).abs() <= 1.0 / 256.0));
    }

    #[test]
    fn tf32_bound_adds_the_operand_conversion_to_the_accumulation_bound() {
        assert_eq!(Precision::Fp32.tolerance(1000), 1000.0 * f32::EPSILON as f64);
        assert_eq!(Precision::Bf16.tolerance(1000), Precision::Fp32.tolerance(1000));
        let t = Precision::Tf32.tolerance(1000);
        assert!(t > 1.95e-3 && t < 2.1e-3, "{t}");
        // Worst case of one product: both operands truncated by just under 2^-10.
        let (a, b) = (1.0f64 - 1e-12, 1.0f64 - 1e-12);
        let (ta, tb) = (a * (1.0 - TF32_UNIT), b * (1.0 - TF32_UNIT));
        assert!((a * b - ta * tb).abs() / (a * b) < Precision::Tf32.tolerance(1));
    }

    #[test]
    fn tf32x3_bound_is_within_fp32s_from_the_planners_shortest_k_and_covers_the_worst_split_product() {
        // 5 * 2^-22 per product, then the runs' accumulation.
        assert!((TF32X3_PRODUCT_BOUND * (1u64 << 22) as f64 - 5.0).abs() < 3e-3);
        assert_eq!(TF32X3_RUN, 96);
        // At most 10 + 9 * 12 + runs / 2 units: within k units from k = 120 on, and ever further
        // below as k grows.
        let k_min = super::super::plan::SPLIT_TF32_MIN_K;
        for k in (k_min..1 << 16).chain([1 << 20, 1 << 24, u32::MAX as usize]) {
            let (t, fp32) = (Precision::Tf32x3.tolerance(k), Precision::Fp32.tolerance(k));
            assert!(t <= fp32, "k = {k}: {t} > FP32's {fp32}");
        }
        assert!(Precision::Tf32x3.tolerance(4096) < Precision::Fp32.tolerance(4096) / 20.0);
        assert!(Precision::Tf32x3.tolerance(100) > Precision::Fp32.tolerance(100));
        // Per product, three orders of magnitude below TF32.
        assert!(TF32X3_PRODUCT_BOUND < Precision::Tf32.tolerance(1) / 1000.0);
        // Worst case of one product: small halves at their largest (2^-11 of the values), both
        // truncated by just under 2^-10, and their product dropped.
        let (a, b) = (1.0f64, 1.0f64);
        let small = 1.0 / 2048.0;
        let (a_big, b_big) = (a - small, b - small);
        let t = |x: f64| x * (1.0 - TF32_UNIT + 1e-12);
        let got = a_big * b_big + a_big * t(small) + t(small) * b_big;
        assert!((a * b - got).abs() / (a * b) <= TF32X3_PRODUCT_BOUND, "{}", (a * b - got).abs());
        assert_eq!(&*Precision::Tf32x3.reference_inputs(&[0.1]), &[0.1]);
    }

    #[test]
    fn the_absolute_bound_adds_one_subnormal_rounding_per_term() {
        assert_eq!(F32_UNDERFLOW_UNIT, 2f64.powi(-150));
        assert_eq!(F32_UNDERFLOW_UNIT * 2.0, f32::from_bits(1) as f64);
        assert_eq!(Precision::Fp32.bound(10, 0.0), 10.0 * F32_UNDERFLOW_UNIT);
        assert_eq!(Precision::Fp32.bound(10, 1.0), Precision::Fp32.tolerance(10) + 10.0 * F32_UNDERFLOW_UNIT);
    }

    #[test]
    fn policies_parse_from_their_names() {
        for p in PrecisionPolicy::ALL {
            assert_eq!(p.name().parse::<PrecisionPolicy>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
    }

    #[test]
    fn split_tf32_competes_with_fp32_and_shares_its_reference() {
        assert_eq!(Precision::Tf32x3.baseline(), Precision::Fp32);
        for p in [Precision::Fp32, Precision::Bf16, Precision::Tf32, Precision::Fp16] {
            assert_eq!(p.baseline(), p);
        }
        assert_eq!(Precision::Tf32x3.name(), "tf32x3");
        for p in [Precision::Fp32, Precision::Tf32, Precision::Tf32x3] {
            assert_eq!(p.reference_precision(), Precision::Fp32);
        }
        assert_eq!(Precision::Bf16.reference_precision(), Precision::Bf16);
    }
}
