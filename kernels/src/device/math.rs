//! Floating-point operations that `core` does not offer on `nvptx64`.

/// `fma.rn.f32`: `a * b + c` with one rounding, the instruction nvcc emits for `a * b + c` by
/// default (`--fmad=true`); rustc never contracts a multiply and an add on its own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// `cvt.rn.bf16.f32`: `x` rounded to the nearest BF16 (ties to even; NaN stays NaN), as its
/// 16 bits: the rounding of `half::bf16::from_f32`.
#[inline(always)]
pub fn f32_to_bf16_rn(x: f32) -> u16 {
    let h: u16;
    // SAFETY: a conversion between registers; touches no memory.
    unsafe {
        core::arch::asm!("cvt.rn.bf16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    h
}

/// `cvt.rn.f16.f32`: `x` rounded to the nearest IEEE half (ties to even; NaN stays NaN, values
/// past 65504 become infinities), as its 16 bits: the rounding of `half::f16::from_f32`.
#[inline(always)]
pub fn f32_to_f16_rn(x: f32) -> u16 {
    let h: u16;
    // SAFETY: a conversion between registers; touches no memory.
    unsafe {
        core::arch::asm!("cvt.rn.f16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    h
}

/// `cvt.f32.f16`: the IEEE half whose 16 bits are `h`, widened to `f32` (exactly).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let x: f32;
    // SAFETY: a conversion between registers; touches no memory.
    unsafe {
        core::arch::asm!("cvt.f32.f16 {x}, {h};", x = out(reg32) x, h = in(reg16) h,
                         options(pure, nomem, nostack, preserves_flags))
    };
    x
}

/// The BF16 whose 16 bits are `h`, widened to `f32` (exactly: BF16 is the top half of an `f32`).
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}
