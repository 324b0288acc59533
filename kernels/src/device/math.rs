//! Floating-point operations that `core` does not offer on `nvptx64`.

/// `fma.rn.f32`: `a * b + c` with one rounding, the instruction nvcc emits for `a * b + c` by
/// default (`--fmad=true`); rustc never contracts a multiply and an add on its own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}
