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

/// `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, 0xffffffff` on raw bits: `value` of lane
/// `lane_id() ^ lane_mask`.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
#[inline(always)]
pub unsafe fn shuffle_xor_u32(value: u32, lane_mask: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             m = in(reg32) lane_mask, options(nomem, nostack, preserves_flags))
    };
    out
}

/// The sum of `value` over the 32 lanes, in every lane: a butterfly over masks 16, 8, 4, 2, 1,
/// each step two [`shuffle_xor_u32`] of the halves of the `f64`. Every lane adds the same
/// operands in the same order, so the sum is the same in every lane and on every run.
///
/// # Safety
/// As [`shuffle_xor_u32`]: the whole warp calls it together.
#[inline(always)]
pub unsafe fn sum_f64(mut value: f64) -> f64 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let bits = value.to_bits();
        // SAFETY (both): forwarded: the whole warp is here.
        let lo = unsafe { shuffle_xor_u32(bits as u32, mask) };
        let hi = unsafe { shuffle_xor_u32((bits >> 32) as u32, mask) };
        value += f64::from_bits(((hi as u64) << 32) | lo as u64);
        mask /= 2;
    }
    value
}

/// `shfl.sync.idx.b32 d, value, lane, 0x1f, 0xffffffff`: `value` of lane `lane`
/// (`__shfl_sync(0xffffffff, value, lane)`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
#[inline(always)]
pub unsafe fn shuffle_idx_u32(value: u32, lane: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             l = in(reg32) lane, options(nomem, nostack, preserves_flags))
    };
    out
}

/// `redux.sync.max.u32 d, value, 0xffffffff` (sm_80+): the largest `value` over the 32 lanes, in
/// every lane (`__reduce_max_sync(0xffffffff, value)`).
///
/// ```ignore
/// // Every lane gets the warp's largest count.
/// let most = unsafe { nvptx_std::warp::reduce_max_u32(count) };
/// ```
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
#[inline(always)]
pub unsafe fn reduce_max_u32(value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("redux.sync.max.u32 {o}, {v}, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             options(nomem, nostack, preserves_flags))
    };
    out
}

/// `%lanemask_lt`: the bits of the lanes below this one.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    let mask: u32;
    // SAFETY: reads a special register; no memory is touched.
    unsafe { asm!("mov.u32 {m}, %lanemask_lt;", m = out(reg32) mask, options(pure, nomem, nostack, preserves_flags)) };
    mask
}

/// `vote.sync.ballot.b32 d, p, 0xffffffff` (with `setp.ne.u32 p, pred, 0`): the mask of the lanes
/// whose `pred` is true (`__ballot_sync(0xffffffff, pred)`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
#[inline(always)]
pub unsafe fn ballot(pred: bool) -> u32 {
    let mask: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {m}, p, 0xffffffff; }}",
             v = in(reg32) pred as u32, m = out(reg32) mask, options(nomem, nostack, preserves_flags))
    };
    mask
}

/// The lanes whose `key` equals this lane's (this lane included), for keys below `2^bits`: one
/// ballot per bit (a warp multisplit). Unlike `match.any.sync`, whose cost on an H100 grew with
/// the number of distinct keys in the warp (0.48 ms more for 2^26 uniform keys over 16,384
/// values), this costs the same for every input.
///
/// # Safety
/// All 32 lanes of the warp execute this call together with the same `bits`.
#[inline(always)]
pub unsafe fn peers_by_ballot(key: u32, bits: u32) -> u32 {
    let mut peers = u32::MAX;
    let mut i = 0;
    while i < bits {
        let set = (key >> i) & 1 != 0;
        // SAFETY: forwarded: the whole warp is here, with the same trip count.
        let ones = unsafe { ballot(set) };
        peers &= if set { ones } else { !ones };
        i += 1;
    }
    peers
}
