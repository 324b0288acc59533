//! Atomic additions whose result is not needed (`red`), per state space (`cuda_std::atomic`).
//!
//! All are relaxed: counts are only read after a barrier (block, cluster or kernel boundary)
//! that orders them.

use core::arch::asm;

/// `red.shared.add.u32`: adds `value` to the `u32` at a shared-window address of this block.
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
#[inline(always)]
pub unsafe fn shared_add_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `red.relaxed.cluster.shared::cluster.add.u32`: adds `value` to the `u32` at a
/// `shared::cluster` address ([`crate::device::cluster::map_shared_rank`]), which may be in
/// another block of the cluster.
///
/// # Safety
/// `addr` maps a 4-byte-aligned in-bounds shared address of a block of this cluster that has not
/// exited (a cluster barrier after the last access guarantees that).
#[inline(always)]
pub unsafe fn cluster_shared_add_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address and the target block's lifetime.
    unsafe {
        asm!("red.relaxed.cluster.shared::cluster.add.u32 [{a}], {v};", a = in(reg32) addr,
             v = in(reg32) value, options(nostack, preserves_flags))
    };
}

/// `red.global.add.u32`: adds `value` to the `u32` at `ptr` in global memory, atomically with
/// respect to every thread of the GPU.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
#[inline(always)]
pub unsafe fn global_add_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.u32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `atom.shared.add.u32`: adds `value` to the `u32` at a shared-window address of this block and
/// returns the value it held before: a slot reservation, unique among all concurrent callers.
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
#[inline(always)]
pub unsafe fn shared_fetch_add_u32(addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("atom.shared.add.u32 {o}, [{a}], {v};", o = out(reg32) old, a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.shared.add.u32` under a predicate (`mov.u32 d, 0; setp.ne.u32 p, when, 0; @p atom.shared.add.u32
/// d, [addr], value`): [`shared_fetch_add_u32`] where `when` holds, else 0 and no memory access. The
/// predicate stays inside the instruction, so code around it (warp shuffles) does not branch.
///
/// # Safety
/// Where `when` holds, `addr` is a 4-byte-aligned address inside a shared array of this block.
#[inline(always)]
pub unsafe fn shared_fetch_add_u32_if(when: bool, addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address wherever the atomic runs.
    unsafe {
        asm!("{{ .reg .pred p; mov.u32 {o}, 0; setp.ne.u32 p, {w}, 0; @p atom.shared.add.u32 {o}, [{a}], {v}; }}",
             o = out(reg32) old, w = in(reg32) when as u32, a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.max.u32`: replaces the `u32` at `ptr` by the larger of it and `value` and returns
/// the value it held before, atomically with respect to every thread of the GPU. With `value` 0
/// it reads the current value coherently (at L2), whatever this SM's L1 holds.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
#[inline(always)]
pub unsafe fn global_fetch_max_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.max.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.add.u32`: adds `value` to the `u32` at `ptr` and returns the value it held
/// before, atomically with respect to every thread of the GPU.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
#[inline(always)]
pub unsafe fn global_fetch_add_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `red.shared.add.f64`: adds `value` to the `f64` at a shared-window address of this block.
///
/// Hopper has no native shared-memory floating-point add: ptxas lowers this to a load and an
/// `ATOMS.CAST.SPIN.64` compare-and-store loop (seen in the SASS of `sm_90`), which retries while
/// another lane of the same bank wins. Lanes that add into distinct banks succeed at once; lanes
/// that add into one address serialize, one per iteration. The order of the additions is not
/// fixed, so a sum is deterministic only where every partial sum is exact in `f64`.
///
/// # Safety
/// `addr` is an 8-byte-aligned address inside a shared array of this block.
#[inline(always)]
pub unsafe fn shared_add_f64(addr: u32, value: f64) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("red.shared.add.f64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) value,
             options(nostack, preserves_flags))
    };
}

/// `red.global.add.f64`: adds `value` to the `f64` at `ptr` in global memory, atomically with
/// respect to every thread of the GPU (native since compute capability 6.0).
///
/// # Safety
/// `ptr` is a valid, 8-byte-aligned pointer into a global allocation.
#[inline(always)]
pub unsafe fn global_add_f64(ptr: *mut f64, value: f64) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.f64 [{p}], {v};", p = in(reg64) ptr, v = in(reg64) value,
             options(nostack, preserves_flags))
    };
}
