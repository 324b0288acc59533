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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperandType {
    /// `f32`: the kernels' original symbols.
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
    pub(crate) trait Element: Copy {
        /// Bytes of four elements, the alignment of [`Element::load4_nc`].
        const VECTOR_BYTES: usize;
        /// The value, widened exactly.
        fn widen(self) -> f32;
        /// `x` rounded to the type (to nearest, ties to even).
        fn narrow(x: f32) -> Self;
        /// The value's bits in the low `8 * size_of::<Self>()` bits.
        fn bits(self) -> u32;
        /// The element at `p` through the read-only data cache, widened.
        ///
        /// # Safety
        /// `p` is a valid, naturally aligned element of global memory that nothing writes while
        /// the kernel runs.
        unsafe fn load_nc(p: *const Self) -> f32;
        /// The four elements from `p`, one vector load, widened.
        ///
        /// # Safety
        /// As [`Element::load_nc`] for all four, and `p` is [`Element::VECTOR_BYTES`]-aligned.
        unsafe fn load4_nc(p: *const Self) -> [f32; 4];
    }

    impl Element for f32 {
        const VECTOR_BYTES: usize = 16;
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
        unsafe fn load_nc(p: *const Self) -> f32 {
            // SAFETY: forwarded contract.
            unsafe { mem::load_global_nc_f32(p) }
        }
        #[inline(always)]
        unsafe fn load4_nc(p: *const Self) -> [f32; 4] {
            // SAFETY: forwarded contract (16-byte aligned).
            unsafe { mem::load_global_nc_v4_f32(p) }
        }
    }

    /// A BF16 value in memory, as its 16 bits (the kernels' parameter type for BF16 buffers).
    #[derive(Clone, Copy)]
    #[repr(transparent)]
    pub struct Bf16(pub u16);

    impl Element for Bf16 {
        const VECTOR_BYTES: usize = 8;
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
        unsafe fn load_nc(p: *const Self) -> f32 {
            // SAFETY: forwarded contract (2-byte aligned).
            let h = unsafe { mem::load_global_nc_u16(p as *const u8) };
            // BF16 is the high half of the f32 with the same bits.
            f32::from_bits(h << 16)
        }
        #[inline(always)]
        unsafe fn load4_nc(p: *const Self) -> [f32; 4] {
            // SAFETY: forwarded contract (8-byte aligned).
            let [lo, hi] = unsafe { mem::load_global_nc_v2_u32(p as *const u8) };
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
        unsafe fn load_nc(p: *const Self) -> f32 {
            // SAFETY: forwarded contract (2-byte aligned).
            math::f16_to_f32(unsafe { mem::load_global_nc_u16(p as *const u8) } as u16)
        }
        #[inline(always)]
        unsafe fn load4_nc(p: *const Self) -> [f32; 4] {
            // SAFETY: forwarded contract (8-byte aligned).
            let [lo, hi] = unsafe { mem::load_global_nc_v2_u32(p as *const u8) };
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
