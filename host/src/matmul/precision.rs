//! The arithmetic a matmul variant does, and how its result is checked: the reference it is
//! compared with and the error bound.

/// The precision of a variant's products. Every variant accumulates and writes `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// `f32` operands, `f32` products.
    Fp32,
    /// Operands rounded to BF16 (8-bit mantissa); products exact in `f32`.
    Bf16,
    /// `f32` operands of which the tensor cores use the TF32 part (10-bit mantissa).
    Tf32,
    /// `f32` operands split into two TF32 halves, `a = a_big + a_small` (split-TF32, "3xTF32"),
    /// multiplied as `A_big B_big + A_big B_small + A_small B_big` on TF32 tensor cores, the
    /// tensor cores' sums added in `f32` every 32 of `k`: measured at or below FP32's error, and
    /// compared with cuBLAS FP32.
    Tf32x3,
}

/// TF32's unit of truncation: a TF32 value keeps 10 of `f32`'s 23 mantissa bits, so dropping
/// the rest (truncation, the worst case of the conversions the tensor cores may do) changes a
/// value by less than 2^-10 of itself.
pub const TF32_UNIT: f64 = 1.0 / 1024.0;

/// The error of one split-TF32 product relative to `|a * b|` (see [`Precision::tolerance`]):
/// the dropped `a_small b_small` (`2^-22`) and the truncation of `a_small` and of `b_small`
/// (`2^-21 (1 + 2^-11)` each).
pub const TF32X3_PRODUCT_BOUND: f64 = 1.0 / (1u64 << 22) as f64 + (1.0 + 1.0 / 2048.0) / (1u64 << 20) as f64;

impl Precision {
    /// The name the reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Bf16 => "bf16",
            Self::Tf32 => "tf32",
            Self::Tf32x3 => "tf32x3",
        }
    }

    /// The precision of the cuBLAS row a variant of this precision is timed against: its own,
    /// except split-TF32, whose results are at FP32's error or below and so compete with cuBLAS
    /// FP32.
    pub fn baseline(self) -> Self {
        match self {
            Self::Tf32x3 => Self::Fp32,
            p => p,
        }
    }

    /// The precision whose float64 reference this one is checked against: BF16 has its own
    /// (the product of the rounded inputs), every other the product of the inputs themselves,
    /// which is FP32's; callers compute that one once.
    pub fn reference_precision(self) -> Self {
        match self {
            Self::Bf16 => Self::Bf16,
            _ => Self::Fp32,
        }
    }

    /// The bound on `|C - reference| / sum |a * b|` for an inner dimension `k`, where the
    /// reference is the float64 product of [`Precision::reference_inputs`]:
    /// - FP32 and BF16: `k * f32::EPSILON`, the accumulation's rounding (BF16 products are
    ///   exact in `f32`, and the reference multiplies the same BF16-rounded values);
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
    ///   2^-11) < 1 + 2^-9` times `sum |a b|`: `3k * f32::EPSILON * (1 + 2^-9)`. (Subnormal
    ///   operands split with an absolute `|a_small| <= 2^-137`, negligible beside `sum |a b|`
    ///   unless every product is that small.)
    pub fn tolerance(self, k: usize) -> f64 {
        let accumulation = k.max(1) as f64 * f32::EPSILON as f64;
        match self {
            Self::Fp32 | Self::Bf16 => accumulation,
            Self::Tf32 => 2.0 * TF32_UNIT + TF32_UNIT * TF32_UNIT + accumulation,
            Self::Tf32x3 => TF32X3_PRODUCT_BOUND + 3.0 * accumulation * (1.0 + 1.0 / 512.0),
        }
    }

    /// The inputs whose float64 product is the reference: BF16 compares with the product of
    /// the BF16-rounded inputs (`half::bf16::from_f32`, to nearest, ties to even), the others
    /// with the product of the inputs themselves.
    pub fn reference_inputs(self, values: &[f32]) -> std::borrow::Cow<'_, [f32]> {
        match self {
            Self::Bf16 => values.iter().map(|&v| round_to_bf16(v)).collect::<Vec<f32>>().into(),
            Self::Fp32 | Self::Tf32 | Self::Tf32x3 => values.into(),
        }
    }
}

/// `v` rounded to the nearest BF16 and widened back to `f32`.
pub fn round_to_bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
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
    fn tf32x3_bound_is_fp32_class_and_covers_the_worst_split_product() {
        // 5 * 2^-22 per product, then the accumulation of 3k summands.
        assert!((TF32X3_PRODUCT_BOUND * (1u64 << 22) as f64 - 5.0).abs() < 3e-3);
        let t = Precision::Tf32x3.tolerance(4096);
        let fp32 = Precision::Fp32.tolerance(4096);
        assert!(t > 3.0 * fp32 && t < 3.1 * fp32, "{t} vs FP32 {fp32}");
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
    fn split_tf32_competes_with_fp32_and_shares_its_reference() {
        assert_eq!(Precision::Tf32x3.baseline(), Precision::Fp32);
        for p in [Precision::Fp32, Precision::Bf16, Precision::Tf32] {
            assert_eq!(p.baseline(), p);
        }
        assert_eq!(Precision::Tf32x3.name(), "tf32x3");
        for p in [Precision::Fp32, Precision::Tf32, Precision::Tf32x3] {
            assert_eq!(p.reference_precision(), Precision::Fp32);
        }
        assert_eq!(Precision::Bf16.reference_precision(), Precision::Bf16);
    }
}
