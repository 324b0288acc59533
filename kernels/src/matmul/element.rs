//! The element types of the CUDA-core product kernels' operands (`f32`, BF16, F16) and of the
//! conversions: each widens exactly to `f32`, so a kernel reads any of them and multiplies in
//! `f32`. BF16 and F16 products of two operands are exact in `f32`, so the CUDA-core kernels on
//! 16-bit operands keep the FP32 error bound while reading half the bytes.
//!
//! On the host only the operand table is here ([`OperandType`]): the device side is the trait the
//! kernels are generic over.

/// The element type of the operands a CUDA-core product kernel reads (its PTX symbol's suffix).
///
/// ```
/// use kernels::matmul::element::OperandType;
/// assert_eq!(OperandType::Bf16.suffix(), "_bf16");
/// assert_eq!(OperandType::F32.bytes(), 4);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OperandType {
    /// `f32`: the kernels' original symbols.
    #[default]
    F32,
    /// BF16 (`_bf16` symbols).
    Bf16,
    /// IEEE half (`_f16` symbols).
    F16,
}

impl OperandType {
    /// Every type, in the order of the kernel tables.
    pub const ALL: [OperandType; 3] = [OperandType::F32, OperandType::Bf16, OperandType::F16];

    /// The type's index in the kernel tables.
    pub const fn index(self) -> usize {
        match self {
            OperandType::F32 => 0,
            OperandType::Bf16 => 1,
            OperandType::F16 => 2,
        }
    }

    /// Its name: `f32`, `bf16`, `f16`.
    pub const fn name(self) -> &'static str {
        match self {
            OperandType::F32 => "f32",
            OperandType::Bf16 => "bf16",
            OperandType::F16 => "f16",
        }
    }

    /// The suffix of its kernels' PTX symbols.
    pub const fn suffix(self) -> &'static str {
        match self {
            OperandType::F32 => "",
            OperandType::Bf16 => "_bf16",
            OperandType::F16 => "_f16",
        }
    }

    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            OperandType::F32 => 4,
            OperandType::Bf16 | OperandType::F16 => 2,
        }
    }

    /// The alignment, bytes, of the kernels' vector loads: four elements at a time.
    pub const fn vector_bytes(self) -> usize {
        4 * self.bytes()
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) use device_code::Element;
#[cfg(target_arch = "nvptx64")]
pub use device_code::{Bf16, F16};

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use crate::device::{math, mem};

    /// An element type in memory: its `f32` value and back, and the loads of the product
    /// kernels.
    ///
    /// The loads come in two halves, the load itself (`load_raw_nc`, `load4_raw_nc`: the bits as
    /// they arrive) and the widening (`widen_raw`, `widen4`), so that a kernel that prefetches can
    /// widen where it uses the values. Widened beside its load, inside the guard that admits it,
    /// a BF16 or F16 value made its warp wait for that load before issuing the next: the 16-bit
    /// `few_cols` kernels took twice the `f32` ones' time on the H200 (5640 x 571 x 8: 13.9 us
    /// against 6.9), `sgemm` and `few_rows` up to 1.7 times.
    pub(crate) trait Element: Copy {
        /// Bytes of four elements, the alignment of [`Element::load4_nc`].
        const VECTOR_BYTES: usize;
        /// Whether `few_cols`' warp-per-row kernels, which load eight vectors of `A` before using
        /// them, hold this type's loads unwidened until then. Not `f32`'s, whose widening is no
        /// instruction and whose code stays as it was measured (held as bits, `f32` loads took
        /// `few_rows` on one row from 0.031 ms to 0.038 at 1 x 3978 x 5845 on the H200).
        const DEFERS_WIDENING: bool;
        /// Four elements as one vector load leaves them: four words of `f32`, two of a 16-bit
        /// type.
        type Raw4: Copy;
        /// The [`Element::Raw4`] of four zeros.
        const RAW4_ZERO: Self::Raw4;
        /// The value, widened exactly.
        fn widen(self) -> f32;
        /// `x` rounded to the type (to nearest, ties to even).
        fn narrow(x: f32) -> Self;
        /// The value's bits in the low `8 * size_of::<Self>()` bits.
        fn bits(self) -> u32;
        /// The bits of the element at `p` through the read-only data cache, zero-extended, not
        /// widened ([`Element::widen_raw`]).
        ///
        /// # Safety
        /// `p` is a valid, naturally aligned element of global memory that nothing writes while
        /// the kernel runs.
        unsafe fn load_raw_nc(p: *const Self) -> u32;
        /// [`Element::load_raw_nc`] where `inside`, else 0. The 16-bit types load through one
        /// predicated instruction ([`mem::load_global_nc_u16_if`]), so that a widening after it
        /// stays out of a branch and off the next load's path; `f32`, whose widening is no
        /// instruction, keeps the branch its kernels were measured with.
        ///
        /// # Safety
        /// As [`Element::load_raw_nc`] where `inside`; elsewhere `p` is not dereferenced.
        #[inline(always)]
        unsafe fn load_raw_nc_if(p: *const Self, inside: bool) -> u32 {
            if inside {
                // SAFETY: forwarded contract.
                unsafe { Self::load_raw_nc(p) }
            } else {
                0
            }
        }
        /// The value of bits from [`Element::load_raw_nc`], widened exactly; 0 widens to `+0.0`.
        fn widen_raw(bits: u32) -> f32;
        /// The four elements from `p`, one vector load, not widened ([`Element::widen4`]).
        ///
        /// # Safety
        /// As [`Element::load_raw_nc`] for all four, and `p` is [`Element::VECTOR_BYTES`]-aligned.
        unsafe fn load4_raw_nc(p: *const Self) -> Self::Raw4;
        /// The four values of a [`Element::load4_raw_nc`], widened exactly.
        fn widen4(raw: Self::Raw4) -> [f32; 4];
        /// The element at `p` through the read-only data cache, widened.
        ///
        /// # Safety
        /// As [`Element::load_raw_nc`].
        #[inline(always)]
        unsafe fn load_nc(p: *const Self) -> f32 {
            // SAFETY: forwarded contract.
            Self::widen_raw(unsafe { Self::load_raw_nc(p) })
        }
        /// The four elements from `p`, one vector load, widened.
        ///
        /// # Safety
        /// As [`Element::load4_raw_nc`].
        #[inline(always)]
        unsafe fn load4_nc(p: *const Self) -> [f32; 4] {
            // SAFETY: forwarded contract.
            Self::widen4(unsafe { Self::load4_raw_nc(p) })
        }
    }

    impl Element for f32 {
        const VECTOR_BYTES: usize = 16;
        const DEFERS_WIDENING: bool = false;
        type Raw4 = [f32; 4];
        const RAW4_ZERO: [f32; 4] = [0.0; 4];
        #[inline(always)]
        fn widen(self) -> f32 {
            self
        }
        #[inline(always)]
        fn narrow(x: f32) -> Self {
            x
        }
        #[inline(always)]
        fn bits(self) -> u32 {
            self.to_bits()
        }
        #[inline(always)]
        unsafe fn load_raw_nc(p: *const Self) -> u32 {
            // SAFETY: forwarded contract.
            unsafe { mem::load_global_nc_f32(p) }.to_bits()
        }
        #[inline(always)]
        fn widen_raw(bits: u32) -> f32 {
            f32::from_bits(bits)
        }
        #[inline(always)]
        unsafe fn load4_raw_nc(p: *const Self) -> [f32; 4] {
            // SAFETY: forwarded contract (16-byte aligned).
            unsafe { mem::load_global_nc_v4_f32(p) }
        }
        #[inline(always)]
        fn widen4(raw: [f32; 4]) -> [f32; 4] {
            raw
        }
    }

    /// A BF16 value in memory, as its 16 bits (the kernels' parameter type for BF16 buffers).
    #[derive(Clone, Copy)]
    #[repr(transparent)]
    pub struct Bf16(pub u16);

    impl Element for Bf16 {
        const VECTOR_BYTES: usize = 8;
        const DEFERS_WIDENING: bool = true;
        type Raw4 = [u32; 2];
        const RAW4_ZERO: [u32; 2] = [0; 2];
        #[inline(always)]
        fn widen(self) -> f32 {
            math::bf16_to_f32(self.0)
        }
        #[inline(always)]
        fn narrow(x: f32) -> Self {
            Bf16(math::f32_to_bf16_rn(x))
        }
        #[inline(always)]
        fn bits(self) -> u32 {
            self.0 as u32
        }
        #[inline(always)]
        unsafe fn load_raw_nc(p: *const Self) -> u32 {
            // SAFETY: forwarded contract (2-byte aligned).
            unsafe { mem::load_global_nc_u16(p as *const u8) }
        }
        #[inline(always)]
        unsafe fn load_raw_nc_if(p: *const Self, inside: bool) -> u32 {
            // SAFETY: forwarded contract (2-byte aligned where inside).
            unsafe { mem::load_global_nc_u16_if(p as *const u8, inside) }
        }
        #[inline(always)]
        fn widen_raw(bits: u32) -> f32 {
            // BF16 is the high half of the f32 with the same bits.
            f32::from_bits(bits << 16)
        }
        #[inline(always)]
        unsafe fn load4_raw_nc(p: *const Self) -> [u32; 2] {
            // SAFETY: forwarded contract (8-byte aligned).
            unsafe { mem::load_global_nc_v2_u32(p as *const u8) }
        }
        #[inline(always)]
        fn widen4([lo, hi]: [u32; 2]) -> [f32; 4] {
            // Little-endian: element 0 is the low half of the first word.
            [
                f32::from_bits(lo << 16),
                f32::from_bits(lo & 0xFFFF_0000),
                f32::from_bits(hi << 16),
                f32::from_bits(hi & 0xFFFF_0000),
            ]
        }
    }

    /// An IEEE half in memory, as its 16 bits (the kernels' parameter type for F16 buffers).
    #[derive(Clone, Copy)]
    #[repr(transparent)]
    pub struct F16(pub u16);

    impl Element for F16 {
        const VECTOR_BYTES: usize = 8;
        const DEFERS_WIDENING: bool = true;
        type Raw4 = [u32; 2];
        const RAW4_ZERO: [u32; 2] = [0; 2];
        #[inline(always)]
        fn widen(self) -> f32 {
            math::f16_to_f32(self.0)
        }
        #[inline(always)]
        fn narrow(x: f32) -> Self {
            F16(math::f32_to_f16_rn(x))
        }
        #[inline(always)]
        fn bits(self) -> u32 {
            self.0 as u32
        }
        #[inline(always)]
        unsafe fn load_raw_nc(p: *const Self) -> u32 {
            // SAFETY: forwarded contract (2-byte aligned).
            unsafe { mem::load_global_nc_u16(p as *const u8) }
        }
        #[inline(always)]
        unsafe fn load_raw_nc_if(p: *const Self, inside: bool) -> u32 {
            // SAFETY: forwarded contract (2-byte aligned where inside).
            unsafe { mem::load_global_nc_u16_if(p as *const u8, inside) }
        }
        #[inline(always)]
        fn widen_raw(bits: u32) -> f32 {
            math::f16_to_f32(bits as u16)
        }
        #[inline(always)]
        unsafe fn load4_raw_nc(p: *const Self) -> [u32; 2] {
            // SAFETY: forwarded contract (8-byte aligned).
            unsafe { mem::load_global_nc_v2_u32(p as *const u8) }
        }
        #[inline(always)]
        fn widen4([lo, hi]: [u32; 2]) -> [f32; 4] {
            [
                math::f16_to_f32(lo as u16),
                math::f16_to_f32((lo >> 16) as u16),
                math::f16_to_f32(hi as u16),
                math::f16_to_f32((hi >> 16) as u16),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_loads_take_four_elements_of_each_type() {
        for t in OperandType::ALL {
            assert_eq!(t.vector_bytes(), 4 * t.bytes());
            assert_eq!(OperandType::ALL[t.index()], t);
        }
        assert_eq!(OperandType::F32.suffix(), "");
        assert_eq!(OperandType::F16.suffix(), "_f16");
    }
}
