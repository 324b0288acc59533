//! Warp-level operations (`cuda_std::warp`): lane index, register exchange between lanes
//! (shuffles), votes, and warp-wide reductions built on them.
//!
//! Every shuffle and vote here names all 32 lanes in its member mask (`0xffffffff`): the whole
//! warp must execute the call together, converged and with no lane exited, which is why they are
//! `unsafe`.

use core::arch::asm;

/// Threads per warp.
///
/// ```ignore
/// let warp = nvptx_std::thread::thread_idx_x() / nvptx_std::warp::WARP_SIZE;
/// ```
pub const WARP_SIZE: u32 = 32;

/// `%laneid`: this thread's lane in its warp (`0..32`).
///
/// ```ignore
/// if nvptx_std::warp::lane_id() == 0 { /* one lane per warp */ }
/// ```
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
///
/// ```ignore
/// let neighbour = unsafe { nvptx_std::warp::shuffle_xor_f32(value, 1) };
/// ```
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
///
/// ```ignore
/// let warp_total = unsafe { nvptx_std::warp::sum_f32(partial) };
/// ```
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

/// `shfl.sync.idx.b32 d, value, lane, 0x1f, 0xffffffff`: `value` of lane `lane`
/// (`__shfl_sync(0xffffffff, value, lane)`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let from_lane_0 = unsafe { nvptx_std::warp::shuffle_idx_u32(value, 0) }; // a broadcast
/// ```
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

/// The sum of `value` over the 32 lanes, in every lane: a butterfly over masks 16, 8, 4, 2, 1,
/// each step two [`shuffle_xor_u32`] of the halves of the `f64`. Every lane adds the same
/// operands in the same order, so the sum is the same in every lane and on every run.
///
/// ```ignore
/// let block_part = unsafe { nvptx_std::warp::sum_f64(lane_sum) };
/// ```
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

/// `%lanemask_lt`: the bits of the lanes below this one.
///
/// ```ignore
/// // This lane's rank among the lanes whose flag is set: a warp-wide stream compaction.
/// let rank = (unsafe { nvptx_std::warp::ballot(flag) } & nvptx_std::warp::lanemask_lt()).count_ones();
/// ```
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
///
/// ```ignore
/// let lanes_with_work = unsafe { nvptx_std::warp::ballot(i < n) };
/// ```
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
///
/// ```ignore
/// let peers = unsafe { nvptx_std::warp::peers_by_ballot(bin, 8) };
/// let leader = peers.trailing_zeros() == nvptx_std::warp::lane_id(); // adds peers.count_ones()
/// ```
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

/// `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, 0xffffffff`: [`shuffle_xor_f32`] for `u32`
/// (`__shfl_xor_sync`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let partner = unsafe { nvptx_std::warp::shuffle_xor_u32(key, 16) };
/// ```
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

/// `shfl.sync.idx.b32 d, value, lane, 0x1f, 0xffffffff`: [`shuffle_idx_u32`] for `f32`
/// (`__shfl_sync`): every lane reads lane `lane`'s `value`.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let row_max = unsafe { nvptx_std::warp::shuffle_idx_f32(partial_max, 0) };
/// ```
#[inline(always)]
pub unsafe fn shuffle_idx_f32(value: f32, lane: u32) -> f32 {
    let out: f32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             l = in(reg32) lane, options(nomem, nostack, preserves_flags))
    };
    out
}

/// `shfl.sync.down.b32 d, value, delta, 0x1f, 0xffffffff`: `value` of lane `lane_id() + delta`,
/// or this lane's own `value` where that lane is past 31 (`__shfl_down_sync`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// // A tree sum whose total lands in lane 0.
/// let mut v = partial;
/// for delta in [16, 8, 4, 2, 1] {
///     v += unsafe { nvptx_std::warp::shuffle_down_f32(v, delta) };
/// }
/// ```
#[inline(always)]
pub unsafe fn shuffle_down_f32(value: f32, delta: u32) -> f32 {
    let out: f32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.down.b32 {o}, {v}, {d}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             d = in(reg32) delta, options(nomem, nostack, preserves_flags))
    };
    out
}

/// `shfl.sync.down.b32 d, value, delta, 0x1f, 0xffffffff`: [`shuffle_down_f32`] for `u32`.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let next = unsafe { nvptx_std::warp::shuffle_down_u32(count, 1) };
/// ```
#[inline(always)]
pub unsafe fn shuffle_down_u32(value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.down.b32 {o}, {v}, {d}, 0x1f, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             d = in(reg32) delta, options(nomem, nostack, preserves_flags))
    };
    out
}

/// `shfl.sync.up.b32 d, value, delta, 0, 0xffffffff`: `value` of lane `lane_id() - delta`, or this
/// lane's own `value` where that lane is below 0 (`__shfl_up_sync`): the step of an inclusive
/// warp scan.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let mut sum = value;
/// for delta in [1, 2, 4, 8, 16] {
///     let below = unsafe { nvptx_std::warp::shuffle_up_u32(sum, delta) };
///     if nvptx_std::warp::lane_id() >= delta { sum += below; }
/// }
/// ```
#[inline(always)]
pub unsafe fn shuffle_up_u32(value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.up.b32 {o}, {v}, {d}, 0, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             d = in(reg32) delta, options(nomem, nostack, preserves_flags))
    };
    out
}

/// `shfl.sync.up.b32 d, value, delta, 0, 0xffffffff`: [`shuffle_up_u32`] for `f32`.
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// let previous = unsafe { nvptx_std::warp::shuffle_up_f32(x, 1) };
/// ```
#[inline(always)]
pub unsafe fn shuffle_up_f32(value: f32, delta: u32) -> f32 {
    let out: f32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("shfl.sync.up.b32 {o}, {v}, {d}, 0, 0xffffffff;", o = out(reg32) out, v = in(reg32) value,
             d = in(reg32) delta, options(nomem, nostack, preserves_flags))
    };
    out
}

/// The maximum of `value` over the 32 lanes, in every lane: a butterfly of [`shuffle_xor_f32`]
/// over masks 16, 8, 4, 2, 1 with `max.f32` (a NaN is ignored unless every lane holds one, as
/// [`f32::max`]).
///
/// # Safety
/// As [`shuffle_xor_f32`]: the whole warp calls it together.
///
/// ```ignore
/// let row_max = unsafe { nvptx_std::warp::max_f32(local_max) };
/// ```
#[inline(always)]
pub unsafe fn max_f32(mut value: f32) -> f32 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        // SAFETY: forwarded: the whole warp is here.
        value = value.max(unsafe { shuffle_xor_f32(value, mask) });
        mask /= 2;
    }
    value
}

/// `vote.sync.all.pred d, p, 0xffffffff`: whether `pred` is true in every lane of the warp
/// (`__all_sync(0xffffffff, pred)`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// if unsafe { nvptx_std::warp::all(in_bounds) } { /* the fast path, no per-lane checks */ }
/// ```
#[inline(always)]
pub unsafe fn all(pred: bool) -> bool {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; vote.sync.all.pred q, p, 0xffffffff; selp.u32 {o}, 1, 0, q; }}",
             v = in(reg32) pred as u32, o = out(reg32) out, options(nomem, nostack, preserves_flags))
    };
    out != 0
}

/// `vote.sync.any.pred d, p, 0xffffffff`: whether `pred` is true in any lane of the warp
/// (`__any_sync(0xffffffff, pred)`).
///
/// # Safety
/// All 32 lanes of the warp execute this call together (converged, none exited).
///
/// ```ignore
/// if !unsafe { nvptx_std::warp::any(i < n) } { return; } // the whole warp leaves together
/// ```
#[inline(always)]
pub unsafe fn any(pred: bool) -> bool {
    let out: u32;
    // SAFETY: the caller guarantees the full warp is converged on this instruction.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; vote.sync.any.pred q, p, 0xffffffff; selp.u32 {o}, 1, 0, q; }}",
             v = in(reg32) pred as u32, o = out(reg32) out, options(nomem, nostack, preserves_flags))
    };
    out != 0
}

/// `activemask.b32 d`: the lanes of the warp executing this instruction together with this one
/// (`__activemask()`). Safe: it names no other lane.
///
/// ```ignore
/// let active = nvptx_std::warp::active_mask();
/// ```
#[inline(always)]
pub fn active_mask() -> u32 {
    let mask: u32;
    // SAFETY: reads the warp's convergence state; touches no memory.
    unsafe { asm!("activemask.b32 {m};", m = out(reg32) mask, options(nomem, nostack, preserves_flags)) };
    mask
}

/// `bar.warp.sync 0xffffffff`: waits until every lane of the warp arrives, and orders their
/// memory accesses before it against those after it (`__syncwarp()`).
///
/// # Safety
/// All 32 lanes of the warp execute this call (none exited).
///
/// ```ignore
/// unsafe { scratch.store(lane, v) };
/// unsafe { nvptx_std::warp::sync_warp() };
/// let other = unsafe { scratch.load(lane ^ 1) };
/// ```
#[inline(always)]
pub unsafe fn sync_warp() {
    // SAFETY: the caller guarantees every lane arrives; orders memory (no `nomem`).
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}
