//! Matrix products `C = A * B` on row-major `f32` matrices: one file per kernel family, from
//! the CUDA Guide's naive and tiled kernels to the register-tiled SGEMM, the memory-bound
//! kernels for narrow shapes (`skinny`), the split-K reduction (`split_k`), and on Hopper's
//! tensor cores the `wgmma` tiles and the `m <= 16` BF16 kernel (`decode`).
//!
//! Every family takes the same problem (`A[m x k]`, `B[k x n]`, `C[m x n]`, any sizes from 1)
//! and exports the constants of its launch contract, which the host's planner
//! (`host::matmul`) reads; the host picks among the families by shape.

/// Repeats `$body` once per listed value with `$i` bound to it as a `usize`: a fully unrolled
/// loop whose indices are compile-time constants. LLVM leaves loops this large rolled, and a
/// register array indexed by a loop counter moves to local memory (a 256-byte stack frame for
/// the SGEMM accumulators, seen in the first build of that kernel).
#[cfg(target_arch = "nvptx64")]
macro_rules! unroll {
    ($i:ident in [$($v:literal),* $(,)?] $body:block) => {
        $({
            let $i: usize = $v;
            $body
        })*
    };
}

/// Declares `$get()`, the static shared slices of `A` and `B` of the block tile `$bm x $bn`,
/// under the PTX symbols `$a` and `$b`, sized by the calling module's `a_floats` and `b_floats`:
/// one pair per tile, which a register-tiled family's kernels of every operand type use (`sgemm`,
/// `sgemm_4x4`). Declared once per tile because a shared symbol declared twice is two
/// definitions to `ptxas`.
#[cfg(target_arch = "nvptx64")]
macro_rules! tile_storage {
    ($($get:ident: $bm:literal x $bn:literal, $a:ident, $b:ident;)*) => {
        $(
            #[inline(always)]
            fn $get() -> (SharedArray<f32, { a_floats($bm, $bn) }>, SharedArray<f32, { b_floats($bm, $bn) }>) {
                (shared_array!($a: [f32; a_floats($bm, $bn)]), shared_array!($b: [f32; b_floats($bm, $bn)]))
            }
        )*
    };
}

pub mod convert;
pub mod decode;
pub mod element;
#[cfg(target_arch = "nvptx64")]
mod guarded;
pub mod naive;
pub mod operands;
pub mod sgemm;
pub mod sgemm_4x4;
pub mod sgemm_warp_tiled;
pub mod short_k;
pub mod skinny;
pub mod split_k;
#[cfg(test)]
mod test_support;
pub mod tf32x3;
pub mod tiled;
pub mod wgmma;
