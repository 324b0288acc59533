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
}

/// TF32's unit of truncation: a TF32 value keeps 10 of `f32`'s 23 mantissa bits, so dropping
/// the rest (truncation, the worst case of the conversions the tensor cores may do) changes a
/// value by less than 2^-10 of itself.
pub const TF32_UNIT: f64 = 1.0 / 1024.0;

impl Precision {
    /// The name the reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Bf16 => "bf16",
            Self::Tf32 => "tf32",
        }
    }

    /// The bound on `|C - reference| / sum |a * b|` for an inner dimension `k`, where the
    /// reference is the float64 product of [`Precision::reference_inputs`]:
    /// - FP32 and BF16: `k * f32::EPSILON`, the accumulation's rounding (BF16 products are
    ///   exact in `f32`, and the reference multiplies the same BF16-rounded values);
    /// - TF32: the reference multiplies the original inputs, so each product also carries the
    ///   operands' conversion: `(1 + d_a)(1 + d_b) - 1` with `|d| < 2^-10`, under
    ///   `2 * 2^-10 + 2^-20` of `|a * b|`, plus the same `k * f32::EPSILON`.
    pub fn tolerance(self, k: usize) -> f64 {
        let accumulation = k.max(1) as f64 * f32::EPSILON as f64;
        match self {
            Self::Fp32 | Self::Bf16 => accumulation,
            Self::Tf32 => 2.0 * TF32_UNIT + TF32_UNIT * TF32_UNIT + accumulation,
        }
    }

    /// The inputs whose float64 product is the reference: BF16 compares with the product of
    /// the BF16-rounded inputs (`half::bf16::from_f32`, to nearest, ties to even), the others
    /// with the product of the inputs themselves.
    pub fn reference_inputs(self, values: &[f32]) -> std::borrow::Cow<'_, [f32]> {
        match self {
            Self::Bf16 => values.iter().map(|&v| round_to_bf16(v)).collect::<Vec<f32>>().into(),
            Self::Fp32 | Self::Tf32 => values.into(),
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
}
