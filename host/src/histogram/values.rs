//! Histogram inputs of every type the kernels count, borrowed ([`Values`]) or owned
//! ([`ValuesBuf`]), the checked [`Binning`] of a type, and the exact CPU histogram of any input.

use super::{Binning, Element, InputType};
use crate::error::{Error, Result};

/// A borrowed slice of histogram input values: what the library API takes.
///
/// ```
/// use hopper_kernels::histogram::{Binning, InputType, Values, histogram_cpu_of};
/// let values = Values::U16(&[0, 1, 1, 65_535]);
/// assert_eq!((values.len(), values.element()), (4, InputType::U16));
/// // Integers count value v in bin v, clamped into the last bin.
/// assert_eq!(histogram_cpu_of(values, &Binning::integers(3)), [1, 2, 1]);
/// ```
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// Unsigned bytes.
    U8(&'a [u8]),
    /// Unsigned 16-bit integers.
    U16(&'a [u16]),
    /// Signed 32-bit integers.
    I32(&'a [i32]),
    /// 32-bit floats.
    F32(&'a [f32]),
}

impl<'a> Values<'a> {
    /// Number of values.
    ///
    /// ```
    /// use hopper_kernels::histogram::Values;
    /// assert_eq!(Values::F32(&[0.5, 1.5]).len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        match self {
            Self::U8(v) => v.len(),
            Self::U16(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::F32(v) => v.len(),
        }
    }

    /// Whether there are no values.
    ///
    /// ```
    /// use hopper_kernels::histogram::Values;
    /// assert!(Values::I32(&[]).is_empty());
    /// assert!(!Values::U8(&[0]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    ///
    /// ```
    /// use hopper_kernels::histogram::{InputType, Values};
    /// assert_eq!(Values::U8(&[7]).element(), InputType::U8);
    /// assert_eq!(Values::F32(&[]).element().name(), "f32");
    /// ```
    pub fn element(&self) -> InputType {
        match self {
            Self::U8(_) => InputType::U8,
            Self::U16(_) => InputType::U16,
            Self::I32(_) => InputType::I32,
            Self::F32(_) => InputType::F32,
        }
    }

    /// The values' bytes in memory order (little-endian on every host this crate runs on), as
    /// the kernels read them.
    ///
    /// ```
    /// use hopper_kernels::histogram::Values;
    /// assert_eq!(Values::U16(&[0x0102]).bytes(), [0x02, 0x01]); // little-endian
    /// assert_eq!(Values::I32(&[-1, 0]).bytes().len(), 8);
    /// ```
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Self::U8(v) => v,
            Self::U16(v) => bytemuck::cast_slice(v),
            Self::I32(v) => bytemuck::cast_slice(v),
            Self::F32(v) => bytemuck::cast_slice(v),
        }
    }
}

/// Owned histogram input values of one type.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{InputType, binning_for, histogram_cpu_of};
/// use hopper_kernels::reference::{ValueDistribution, histogram_input_of};
/// // 1000 f32 values drawn into 10 bins over [0, 1).
/// let buf = histogram_input_of(7, 1000, 10, ValueDistribution::Uniform, InputType::F32, Some((0.0, 1.0)));
/// assert_eq!(buf.as_values().element(), InputType::F32);
/// let binning = binning_for(InputType::F32, 10, Some((0.0, 1.0)))?;
/// assert_eq!(histogram_cpu_of(buf.as_values(), &binning).iter().sum::<u32>(), 1000);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ValuesBuf {
    /// Unsigned bytes.
    U8(Vec<u8>),
    /// Unsigned 16-bit integers.
    U16(Vec<u16>),
    /// Signed 32-bit integers.
    I32(Vec<i32>),
    /// 32-bit floats.
    F32(Vec<f32>),
}

impl ValuesBuf {
    /// The values as a borrowed slice.
    ///
    /// ```
    /// use hopper_kernels::histogram::{InputType, ValuesBuf};
    /// let buf = ValuesBuf::I32(vec![3, -1, 4]);
    /// assert_eq!((buf.as_values().len(), buf.as_values().element()), (3, InputType::I32));
    /// ```
    pub fn as_values(&self) -> Values<'_> {
        match self {
            Self::U8(v) => Values::U8(v),
            Self::U16(v) => Values::U16(v),
            Self::I32(v) => Values::I32(v),
            Self::F32(v) => Values::F32(v),
        }
    }
}

/// The most bins an `f32` histogram takes: `(v - lo) * scale` is an `f32`, which above 2^24 holds
/// only even integers, so some bins past 2^24 would never be hit.
///
/// ```
/// use hopper_kernels::histogram::{InputType, MAX_F32_BINS, binning_for};
/// assert!(binning_for(InputType::F32, MAX_F32_BINS, Some((0.0, 1.0))).is_ok());
/// assert!(binning_for(InputType::F32, MAX_F32_BINS + 1, Some((0.0, 1.0))).is_err());
/// // Integer bins have no such limit.
/// assert!(binning_for(InputType::I32, MAX_F32_BINS + 1, None).is_ok());
/// ```
pub const MAX_F32_BINS: usize = 1 << 24;

/// The binning of `bins` bins for values of type `element`: integers count in bin `v` and take no
/// range; `f32` needs at most [`MAX_F32_BINS`] bins and a range `(lo, hi)` of finite values with
/// `lo < hi` whose width `hi - lo` and `bins / (hi - lo)` are finite in `f32`. Every refusal says
/// which.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Binning, InputType, binning_for};
/// assert_eq!(binning_for(InputType::U8, 256, None)?, Binning::integers(256));
/// let b = binning_for(InputType::F32, 4, Some((-1.0, 1.0)))?;
/// assert_eq!((b.nbins, b.lo, b.hi, b.scale), (4, -1.0, 1.0, 2.0));
/// let err = |t, range| binning_for(t, 4, range).unwrap_err().to_string();
/// assert!(err(InputType::F32, None).contains("f32 values need a range"));
/// assert!(err(InputType::F32, Some((1.0, 1.0))).contains("LO must be below HI"));
/// assert!(err(InputType::I32, Some((0.0, 1.0))).contains("f32 values only"));
/// # Ok(()) }
/// ```
pub fn binning_for(element: InputType, bins: usize, range: Option<(f32, f32)>) -> Result<Binning> {
    super::check_bins(bins)?;
    let nbins = bins as u32;
    match (element, range) {
        (InputType::F32, None) => Err(Error::InvalidArgument(
            "f32 values need a range LO, HI (`--range LO,HI` on the command line, `range` in the library): even bins over [LO, HI], as numpy.histogram".into(),
        )),
        (InputType::F32, Some((lo, hi))) => {
            if bins > MAX_F32_BINS {
                return Err(Error::InvalidArgument(format!(
                    "{bins} f32 bins: the bin is computed in f32, whose 24-bit significand tells at most {MAX_F32_BINS} bins apart (above 2^24 some bins could never be hit)"
                )));
            }
            if !lo.is_finite() || !hi.is_finite() {
                return Err(Error::InvalidArgument(format!("range {lo},{hi}: both ends must be finite")));
            }
            if lo >= hi {
                return Err(Error::InvalidArgument(format!("range {lo},{hi}: LO must be below HI")));
            }
            let binning = Binning::range(nbins, lo, hi);
            if !(hi - lo).is_finite() || !binning.scale.is_finite() || binning.scale <= 0.0 {
                return Err(Error::InvalidArgument(format!(
                    "range {lo},{hi}: {bins} bins over it have no finite f32 width (HI - LO = {}, bins / (HI - LO) = {})",
                    hi - lo,
                    binning.scale
                )));
            }
            Ok(binning)
        }
        (other, Some(_)) => Err(Error::InvalidArgument(format!(
            "--range applies to f32 values only; {} value v counts in bin v",
            other.name()
        ))),
        (_, None) => Ok(Binning::integers(nbins)),
    }
}

/// Exact CPU histogram of any input: every value's bin by the kernels' own formula
/// ([`Element::bin`]); values that are not counted (floats outside the range, NaN) are left out.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{InputType, Values, binning_for, histogram_cpu_of};
/// // numpy.histogram's bins: HI counts in the last bin; NaN and values outside are left out.
/// let b = binning_for(InputType::F32, 4, Some((0.0, 1.0)))?;
/// let v = [0.0, 0.25, 0.5, 0.999, 1.0, f32::NAN, 1.5, -0.1];
/// assert_eq!(histogram_cpu_of(Values::F32(&v), &b), [1, 1, 1, 2]);
/// // Integers: below 0 in bin 0, at or above the bins in the last.
/// let b = binning_for(InputType::I32, 3, None)?;
/// assert_eq!(histogram_cpu_of(Values::I32(&[-5, 0, 1, 2, 3, 99]), &b), [2, 1, 3]);
/// # Ok(()) }
/// ```
pub fn histogram_cpu_of(values: Values<'_>, binning: &Binning) -> Vec<u32> {
    fn count<T: Element>(values: &[T], binning: &Binning) -> Vec<u32> {
        let mut counts = vec![0u32; binning.nbins as usize];
        for v in values {
            if let Some(bin) = v.bin(binning) {
                counts[bin as usize] += 1;
            }
        }
        counts
    }
    match values {
        Values::U8(v) => count(v, binning),
        Values::U16(v) => count(v, binning),
        Values::I32(v) => count(v, binning),
        Values::F32(v) => count(v, binning),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_histogram_counts_hi_in_the_last_bin_and_leaves_out_nan_infinities_and_outsiders() {
        let b = binning_for(InputType::F32, 4, Some((0.0, 1.0))).unwrap();
        let v = [0.0, 0.25, 0.5, 0.999, 1.0, -0.0, f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0001, -1e-30];
        assert_eq!(histogram_cpu_of(Values::F32(&v), &b), vec![2, 1, 1, 2]);
    }

    #[test]
    fn integer_histograms_clamp_into_the_edge_bins() {
        let b = binning_for(InputType::U8, 3, None).unwrap();
        assert_eq!(histogram_cpu_of(Values::U8(&[0, 1, 2, 3, 255]), &b), vec![1, 1, 3]);
        let b = binning_for(InputType::U16, 2, None).unwrap();
        assert_eq!(histogram_cpu_of(Values::U16(&[0, 65_535]), &b), vec![1, 1]);
        let b = binning_for(InputType::I32, 3, None).unwrap();
        assert_eq!(histogram_cpu_of(Values::I32(&[-5, 0, 1, 2, 3, 99]), &b), vec![2, 1, 3]);
    }

    #[test]
    fn bad_ranges_are_refused_naming_the_problem() {
        let err = |ty, range| binning_for(ty, 10, range).unwrap_err().to_string();
        assert!(err(InputType::F32, None).contains("need a range"));
        assert!(err(InputType::F32, Some((1.0, 1.0))).contains("LO must be below HI"));
        assert!(err(InputType::F32, Some((2.0, 1.0))).contains("LO must be below HI"));
        assert!(err(InputType::F32, Some((f32::NAN, 1.0))).contains("finite"));
        assert!(err(InputType::F32, Some((0.0, f32::INFINITY))).contains("finite"));
        assert!(err(InputType::F32, Some((-3e38, 3e38))).contains("no finite f32 width"));
        assert!(err(InputType::U8, Some((0.0, 1.0))).contains("f32 values only"));
        assert!(binning_for(InputType::F32, 0, Some((0.0, 1.0))).is_err());
    }

    #[test]
    fn f32_bins_stop_at_2_pow_24_where_the_f32_bin_formula_skips_bins() {
        assert!(binning_for(InputType::F32, MAX_F32_BINS, Some((0.0, 1.0))).is_ok());
        let err = binning_for(InputType::F32, MAX_F32_BINS + 2, Some((0.0, 1.0))).unwrap_err().to_string();
        assert!(err.contains("at most 16777216 bins"), "{err}");
        assert!(binning_for(InputType::I32, MAX_F32_BINS + 2, None).is_ok());
        // Why: with 2^24 + 4 bins over [0, 1], no f32 in the range lands in bin 2^24 + 1 (the
        // last, 2^24 + 3, takes HI) ...
        let b = Binning::range(MAX_F32_BINS as u32 + 4, 0.0, 1.0);
        let mut hit = std::collections::BTreeSet::new();
        for bits in 0..1 << 16 {
            hit.insert(f32::from_bits(1.0f32.to_bits() - bits).bin(&b).unwrap());
        }
        assert!(hit.contains(&(1 << 24)) && !hit.contains(&((1 << 24) + 1)), "{:?}", hit.last());
        // ... while at 2^24 bins every bin near the top is hit.
        let b = Binning::range(MAX_F32_BINS as u32, 0.0, 1.0);
        let top: std::collections::BTreeSet<u32> =
            (0..1 << 16).map(|bits| f32::from_bits(1.0f32.to_bits() - bits).bin(&b).unwrap()).collect();
        assert!(((1 << 24) - 1000..1 << 24).all(|bin| top.contains(&bin)));
    }

    #[test]
    fn values_expose_their_bytes_in_memory_order() {
        assert_eq!(Values::U16(&[0x0102]).bytes(), &[2, 1]);
        assert_eq!(Values::I32(&[-1]).bytes(), &[255; 4]);
        assert_eq!(Values::F32(&[1.0]).bytes(), 1.0f32.to_le_bytes());
        assert_eq!(ValuesBuf::U8(vec![1, 2]).as_values().len(), 2);
        assert_eq!(ValuesBuf::F32(vec![]).as_values().element(), InputType::F32);
    }
}
