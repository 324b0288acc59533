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
