//! Warp-level operations (`cuda_std::warp`): lane index and register exchange between lanes.

use core::arch::asm;

/// Threads per warp.
pub const WARP_SIZE: u32 = 32;

/// `%laneid`: this thread's lane in its warp (`0..32`).
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register; no memory is touched.
    unsafe { asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack, preserves_flags)) };
    lane
}

/// `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, 0xffffffff`: returns `value` of lane
/// `lane_id() ^ lane_mask` (`__shfl_xor_sync(0xffffffff, value, lane_mask)`).
///
/// A butterfly over masks 16, 8, 4, 2, 1 adds in the same order on every run, so a warp sum
/// built from it is deterministic, and every lane ends with the same total.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
#[inline(always)]
pub unsafe fn shuffle_xor_f32(value: f32, lane_mask: u32) -> f32 {
    let out: f32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             m = in(reg32) lane_mask, options(nomem, nostack, preserves_flags))
    };
    out
}

/// The sum of `value` over the 32 lanes, in every lane: a butterfly of [`shuffle_xor_f32`] over
/// masks 16, 8, 4, 2, 1, the same additions in the same order on every run.
///
/// # Safety
/// As [`shuffle_xor_f32`]: the whole warp calls it together.
#[inline(always)]
pub unsafe fn sum_f32(mut value: f32) -> f32 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        // SAFETY: forwarded: the whole warp is here.
        value += unsafe { shuffle_xor_f32(value, mask) };
        mask /= 2;
    }
    value
}
