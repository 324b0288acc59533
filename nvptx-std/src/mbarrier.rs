//! Shared-memory transaction barriers (`mbarrier`, sm_90): the handshake between the copy engine
//! (TMA), which completes bytes on a barrier, and the threads that wait for a stage to fill or
//! drain, after `cuda::barrier` and CUTLASS's `ClusterTransactionBarrier`.
//!
//! A barrier is 8 bytes of shared memory, 8-byte aligned, named by its shared-window address. It
//! completes a phase when its expected arrivals have arrived and its expected transaction bytes
//! have landed; waiters name the phase they wait for by its parity (0, 1, 0, ...).
//!
//! `arrive_expect_tx` needs PTX ISA 8.0 (see [`crate::tma`]).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Bytes of one barrier in shared memory.
///
/// ```ignore
/// let barriers = nvptx_std::shared_array!(FULL: [u64; 4]); // 4 * BYTES bytes
/// ```
pub const BYTES: u32 = 8;

/// `mbarrier.init.shared::cta.b64 [addr], count;`: sets the barrier to expect `count` arrivals
/// per phase, starting in phase 0.
///
/// # Safety
/// `addr` is an 8-byte aligned shared-window address that no thread uses as a barrier yet;
/// other threads (and the copy engine) may use it only after [`crate::tma::fence_proxy_async_shared`]
/// and a block barrier.
///
/// ```ignore
/// if nvptx_std::thread::thread_idx_x() == 0 {
///     unsafe { nvptx_std::mbarrier::init(full, 1) };
///     nvptx_std::tma::fence_proxy_async_shared();
/// }
/// nvptx_std::thread::sync_threads();
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn init(addr: u32, count: u32) {
    // SAFETY: the caller guarantees `addr` is a fresh barrier in shared memory.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{a}], {c};", a = in(reg32) addr, c = in(reg32) count, options(nostack))
    };
}

/// `mbarrier.arrive.shared::cta.b64 state, [addr];`: one arrival on the barrier's current
/// phase (release semantics at CTA scope: this thread's earlier accesses happen before the
/// phase completes).
///
/// # Safety
/// `addr` is an initialised barrier, and the phase still expects this arrival.
///
/// ```ignore
/// unsafe { nvptx_std::mbarrier::arrive(empty) }; // this consumer is done with the slot
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn arrive(addr: u32) {
    // SAFETY: the caller guarantees an initialised barrier; the state result is discarded.
    unsafe {
        asm!("{{", ".reg .b64 st;", "mbarrier.arrive.shared::cta.b64 st, [{a}];", "}}", a = in(reg32) addr,
             options(nostack))
    };
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 state, [addr], bytes;`: one arrival that also
/// tells the barrier to wait for `bytes` more transaction bytes (the bulk copies that complete
/// on it) before its phase completes.
///
/// # Safety
/// As for [`arrive`]; the copies issued for this phase complete exactly `bytes` bytes on it.
///
/// ```ignore
/// unsafe { nvptx_std::mbarrier::arrive_expect_tx(full, TILE_BYTES) };
/// unsafe { nvptx_std::tma::load_2d(dst, maps, x, y, full) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn arrive_expect_tx(addr: u32, bytes: u32) {
    // SAFETY: the caller guarantees an initialised barrier and the byte count.
    unsafe {
        asm!("{{", ".reg .b64 st;", "mbarrier.arrive.expect_tx.shared::cta.b64 st, [{a}], {b};", "}}",
             a = in(reg32) addr, b = in(reg32) bytes, options(nostack))
    };
}

/// `mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity;`: whether the phase of parity
/// `parity` has completed (waiting a bounded, hardware-chosen time first). Acquire semantics
/// when it returns true: what the completing arrivals and copies wrote is visible after it.
///
/// # Safety
/// `addr` is an initialised barrier.
///
/// ```ignore
/// if unsafe { nvptx_std::mbarrier::try_wait_parity(full, phase) } { /* the stage has landed */ }
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn try_wait_parity(addr: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: the caller guarantees an initialised barrier; it orders memory (no `nomem`).
    unsafe {
        asm!("{{", ".reg .pred p;", "mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {par};",
             "selp.u32 {d}, 1, 0, p;", "}}", a = in(reg32) addr, par = in(reg32) parity, d = out(reg32) done,
             options(nostack))
    };
    done != 0
}

/// Spins on [`try_wait_parity`] until the phase of parity `parity` completes.
///
/// # Safety
/// As for [`try_wait_parity`]; the phase must eventually complete, or the thread hangs.
///
/// ```ignore
/// unsafe { nvptx_std::mbarrier::wait_parity(full, nvptx_std::mbarrier::ring_parity(k_step, STAGES)) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn wait_parity(addr: u32, parity: u32) {
    // SAFETY: forwarded contract.
    while !unsafe { try_wait_parity(addr, parity) } {}
}

/// The parity of the phase that the `use_index`-th use of a ring slot waits for, when the ring
/// has `stages` slots and every use of a slot is one phase of its barrier: uses `0, stages,
/// 2 * stages, ...` of slot 0 wait for phases 0, 1, 2, ..., whose parities alternate.
///
/// ```
/// use nvptx_std::mbarrier::ring_parity;
/// // A ring of 3 slots: uses 0..3 wait for phase 0, uses 3..6 for phase 1, then 0 again.
/// assert_eq!([0, 2, 3, 5, 6].map(|u| ring_parity(u, 3)), [0, 0, 1, 1, 0]);
/// ```
#[inline(always)]
pub const fn ring_parity(use_index: u32, stages: u32) -> u32 {
    (use_index / stages) & 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_parity_alternates_once_per_trip_round_the_ring() {
        let parities: [u32; 10] = core::array::from_fn(|i| ring_parity(i as u32, 4));
        assert_eq!(parities, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
        assert_eq!(ring_parity(u32::MAX, 1), 1);
    }
}
