//! Warp-level matrix multiply-accumulate (`mma.sync`, sm_80 and later): the tensor-core
//! instructions a single warp issues on operands held in registers, synchronously.
//!
//! Unlike [`wgmma`](crate::wgmma) these take no shared memory: each of the 32 lanes holds its
//! fragment of `A`, `B` and the accumulators in registers, in the layouts the PTX ISA gives
//! ("Matrix Fragments for `mma.m16n8k16`"), with lane `l` in group `g = l / 4` at position
//! `t = l % 4` of its group. A fragment register packs two 16-bit elements, the lower index in
//! the lower half.

use core::arch::asm;

/// `mma.sync.aligned.m16n8k16.row.col.f32.$ty.$ty.f32` on register fragments `$a`, `$b`, `$c`:
/// the body of the wrappers below, which differ in the input type only.
macro_rules! m16n8k16_f32 {
    ($ty:literal, $a:expr, $b:expr, $c:expr) => {{
        let (a, b, c): ([u32; 4], [u32; 2], [f32; 4]) = ($a, $b, $c);
        let (d0, d1, d2, d3): (f32, f32, f32, f32);
        // Register operands only. Not `pure`, so that the compiler neither drops nor moves it
        // into divergent code.
        asm!(
            concat!("mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 {{{d0}, {d1}, {d2}, {d3}}}, \
             {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"),
            d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
            options(nomem, nostack, preserves_flags)
        );
        [d0, d1, d2, d3]
    }};
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};`:
/// `D = A B + C` for a 16 x 16 BF16 `A`, a 16 x 8 BF16 `B` and 16 x 8 `f32` `C` and `D`, the
/// products exact and summed in `f32`.
///
/// Fragments of lane `(g, t)`: `a[0]` = `A[g][2t, 2t+1]`, `a[1]` = `A[g+8][2t, 2t+1]`, `a[2]` =
/// `A[g][2t+8, 2t+9]`, `a[3]` = `A[g+8][2t+8, 2t+9]`; `b[0]` = `B[2t, 2t+1][g]`, `b[1]` =
/// `B[2t+8, 2t+9][g]`; `c` and the result: `[C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]]`.
///
/// # Safety
/// Every lane of the warp executes the instruction together (`.aligned`: no divergence around
/// it).
///
/// ```ignore
/// let d = unsafe { nvptx_std::mma::m16n8k16_bf16_f32(a, [b0, b1], d) };
/// ```
#[inline(always)]
pub unsafe fn m16n8k16_bf16_f32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    // SAFETY: the caller guarantees the warp executes it converged.
    unsafe { m16n8k16_f32!("bf16", a, b, c) }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};`:
/// [`m16n8k16_bf16_f32`] on F16 (IEEE half) `A` and `B`, in the same fragments; the products (11
/// by 11 significant bits) exact in `f32`.
///
/// # Safety
/// As for [`m16n8k16_bf16_f32`].
///
/// ```ignore
/// let d = unsafe { nvptx_std::mma::m16n8k16_f16_f32(a, [b0, b1], d) };
/// ```
#[inline(always)]
pub unsafe fn m16n8k16_f16_f32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    // SAFETY: the caller guarantees the warp executes it converged.
    unsafe { m16n8k16_f32!("f16", a, b, c) }
}
