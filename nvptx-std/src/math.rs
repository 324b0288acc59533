//! Floating-point operations that `core` does not offer on `nvptx64` (`f32::sqrt`, `f32::exp`
//! and kin live in `std`, which GPU code does not have), each one PTX instruction.
//!
//! The `approx` functions are the hardware's special-function unit, as CUDA's `__expf`,
//! `__log2f` and `rsqrtf`: a few units in the last place from the correctly rounded result (the
//! PTX ISA gives each bound), much faster than a correctly rounded library routine.

/// `fma.rn.f32`: `a * b + c` with one rounding, the instruction nvcc emits for `a * b + c` by
/// default (`--fmad=true`); rustc never contracts a multiply and an add on its own.
///
/// ```ignore
/// acc = nvptx_std::math::fma(a, b, acc);
/// ```
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// `cvt.rn.bf16.f32`: `x` rounded to the nearest BF16 (ties to even; NaN stays NaN), as its
/// 16 bits: the rounding of `half::bf16::from_f32`.
///
/// ```ignore
/// let bits: u16 = nvptx_std::math::f32_to_bf16_rn(x);
/// ```
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
///
/// ```ignore
/// let bits: u16 = nvptx_std::math::f32_to_f16_rn(x);
/// ```
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

/// `cvt.rzi.u32.f32`: `x` truncated toward zero to a `u32`, saturating: negative values and NaN
/// give 0, values of 2^32 and above `u32::MAX`; the result of Rust's `x as u32` for every `x`, in
/// one instruction where `as u32` compiles to the conversion plus a compare and a select at each
/// end (LLVM does not know that PTX conversions saturate).
///
/// ```ignore
/// assert_eq!(nvptx_std::math::f32_to_u32_rz_sat(-3.5), 0);
/// ```
#[inline(always)]
pub fn f32_to_u32_rz_sat(x: f32) -> u32 {
    let u: u32;
    // SAFETY: a conversion between registers; touches no memory.
    unsafe {
        core::arch::asm!("cvt.rzi.u32.f32 {u}, {x};", u = out(reg32) u, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    u
}

/// `cvt.f32.f16`: the IEEE half whose 16 bits are `h`, widened to `f32` (exactly).
///
/// ```ignore
/// let x = nvptx_std::math::f16_to_f32(bits);
/// ```
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

/// The BF16 whose 16 bits are `h`, widened to `f32` exactly (BF16 is the top half of an `f32`;
/// a shift, no PTX of its own).
///
/// ```ignore
/// assert_eq!(nvptx_std::math::bf16_to_f32(0x3fc0), 1.5);
/// ```
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `sqrt.rn.f32`: the square root, correctly rounded (IEEE 754; NaN for negative inputs).
///
/// ```ignore
/// let norm = nvptx_std::math::sqrt(sum_of_squares);
/// ```
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers; touches no memory.
    unsafe {
        core::arch::asm!("sqrt.rn.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `rsqrt.approx.f32`: `1 / sqrt(x)`, approximate (within a few ulp; the PTX ISA states the
/// bound), as CUDA's `rsqrtf`.
///
/// ```ignore
/// let inv_std = nvptx_std::math::rsqrt_approx(variance + 1e-5);
/// ```
#[inline(always)]
pub fn rsqrt_approx(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers; touches no memory.
    unsafe {
        core::arch::asm!("rsqrt.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `ex2.approx.f32`: `2^x`, approximate (within a few ulp over the full range; the PTX ISA
/// states the bound), as CUDA's `exp2f` under `--use_fast_math`. `2^-inf = 0`, `2^+inf = +inf`.
///
/// ```ignore
/// let weight = nvptx_std::math::exp2_approx(-distance);
/// ```
#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers; touches no memory.
    unsafe {
        core::arch::asm!("ex2.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `e^x` as `ex2.approx.f32` of `x * log2(e)` (`mul.f32` then `ex2.approx.f32`): CUDA's
/// `__expf`. The product's rounding adds an error that grows with `|x|` (about `|x| * 2^-24`
/// relative), on top of [`exp2_approx`]'s.
///
/// ```ignore
/// let e = nvptx_std::math::exp_approx(x - row_max); // softmax numerators, x - max <= 0
/// ```
#[inline(always)]
pub fn exp_approx(x: f32) -> f32 {
    exp2_approx(x * core::f32::consts::LOG2_E)
}

/// `lg2.approx.f32`: `log2(x)`, approximate (an absolute error of a few 2^-23 near `x = 1`, a
/// few ulp elsewhere; the PTX ISA states the bounds), as CUDA's `__log2f`. `log2(0) = -inf`,
/// negative inputs give NaN.
///
/// ```ignore
/// let bits_needed = nvptx_std::math::log2_approx(range);
/// ```
#[inline(always)]
pub fn log2_approx(x: f32) -> f32 {
    let r: f32;
    // SAFETY: arithmetic on registers; touches no memory.
    unsafe {
        core::arch::asm!("lg2.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                         options(pure, nomem, nostack, preserves_flags))
    };
    r
}
