// Over 600 lines with its documentation: about 250 lines of code; the rest are doc comments with
// examples and 110 lines of unit tests.
//! Warpgroup matrix multiply-accumulate (`wgmma`, sm_90a): the Hopper tensor-core instructions,
//! issued by a warpgroup (4 consecutive warps, the first at a warp index divisible by 4) on
//! operands in shared memory that 64-bit matrix descriptors describe, accumulating into
//! registers asynchronously.
//!
//! The order every use follows (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply"):
//! `fence` (after the accumulators or the operands were touched by other instructions), one or
//! more `mma_*`, `commit_group`, then `wait_group` before the accumulators are read or the
//! operands' shared memory is reused.
//!
//! The descriptor encoding and the 128-byte swizzle are pure functions, built and tested on the
//! CPU too; the instructions exist only in the `sm_90a` module (`cargo xtask build-ptx` builds
//! it with the `hopper` feature).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// The swizzle mode field of a matrix descriptor (bits 62-63).
///
/// ```
/// use nvptx_std::wgmma::{Swizzle, descriptor};
/// assert_eq!(descriptor(0, 16, 1024, Swizzle::B128) >> 62, Swizzle::B128 as u64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Swizzle {
    /// No swizzle (interleaved core matrices).
    None = 0,
    /// 128-byte swizzle: 16-byte chunk `c` of 128-byte row `r` sits at chunk `c ^ (r % 8)`.
    B128 = 1,
    /// 64-byte swizzle.
    B64 = 2,
    /// 32-byte swizzle.
    B32 = 3,
}

/// `matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4`: a shared-memory byte address or offset as
/// the 14-bit field of a descriptor.
///
/// ```
/// assert_eq!(nvptx_std::wgmma::encode(1024), 64); // 16-byte units
/// ```
#[inline(always)]
pub const fn encode(bytes: u32) -> u64 {
    ((bytes & 0x3FFFF) >> 4) as u64
}

/// A shared-memory matrix descriptor: start address (bits 0-13), leading dimension byte offset
/// (16-29), stride dimension byte offset (32-45), base offset 0 (49-51: every pattern we use
/// starts on a 1024-byte boundary), swizzle mode (62-63).
///
/// With 128-byte swizzling: for a K-major operand the leading offset is unused (1 by
/// convention) and the stride offset is the distance between groups of 8 rows (1024 bytes for
/// rows of 128 bytes); for an MN-major operand the leading offset is the distance between
/// 64-element (128-byte) chunks along M or N, and the stride offset the distance between groups
/// of 8 rows along K. See [`k_major_sw128_offset`] and [`mn_major_sw128_offset`].
///
/// ```
/// use nvptx_std::wgmma::{Swizzle, descriptor};
/// // A K-major operand with 128-byte rows at shared address 0x400: groups of 8 rows 1024 bytes apart.
/// let d = descriptor(0x400, 16, 1024, Swizzle::B128);
/// assert_eq!((d & 0x3fff, (d >> 32) & 0x3fff), (0x40, 64));
/// ```
#[inline(always)]
pub const fn descriptor(start: u32, leading_bytes: u32, stride_bytes: u32, swizzle: Swizzle) -> u64 {
    encode(start) | (encode(leading_bytes) << 16) | (encode(stride_bytes) << 32) | ((swizzle as u64) << 62)
}

/// The descriptor of the same layout starting `bytes` further on (a multiple of 16): the start
/// field is the low bits, and start addresses stay under 2^18, so adding to the whole word
/// never carries into the other fields.
///
/// ```
/// use nvptx_std::wgmma::{Swizzle, advance, descriptor};
/// let d = descriptor(0, 16, 1024, Swizzle::B128);
/// assert_eq!(advance(d, 32), descriptor(32, 16, 1024, Swizzle::B128)); // the next k-step
/// ```
#[inline(always)]
pub const fn advance(desc: u64, bytes: u32) -> u64 {
    desc + (bytes >> 4) as u64
}

/// Where the 128-byte swizzle (`Swizzle<3,4,3>` on byte addresses, `CU_TENSOR_MAP_SWIZZLE_128B`)
/// puts byte `offset` of a 1024-byte aligned pattern: the 16-byte chunk index (bits 4-6) is
/// XORed with the row index within the pattern (bits 7-9).
///
/// ```
/// use nvptx_std::wgmma::swizzle_128b;
/// assert_eq!(swizzle_128b(0), 0); // row 0 keeps its chunks
/// assert_eq!(swizzle_128b(128), 144); // row 1: chunk 0 moves to chunk 1
/// ```
#[inline(always)]
pub const fn swizzle_128b(offset: u32) -> u32 {
    offset ^ ((offset >> 3) & 0x70)
}

/// The byte, relative to a 1024-byte aligned base, that a K-major operand with 128-byte
/// swizzling and stride offset `stride_bytes` reads for row `row` (along M or N) and byte
/// `k_byte` (< 128) along K, when its descriptor starts `start` bytes past the base: the
/// canonical layout `Swizzle<3,4,3> o ((8,m),(T,2k)):((8T,SBO),(1,T))` of the PTX ISA.
///
/// ```
/// use nvptx_std::wgmma::{k_major_sw128_offset, swizzle_128b};
/// // Row 9, byte 4 along K: the second group of 8 rows, row 1 within it.
/// assert_eq!(k_major_sw128_offset(0, 1024, 9, 4), 1024 + swizzle_128b(128 + 4));
/// ```
pub const fn k_major_sw128_offset(start: u32, stride_bytes: u32, row: u32, k_byte: u32) -> u32 {
    swizzle_128b(start + (row % 8) * 128 + (row / 8) * stride_bytes + k_byte)
}

/// The byte, relative to a 1024-byte aligned base, that an MN-major operand with 128-byte
/// swizzling reads for byte `mn_byte` along M or N and row `k` along K, when its descriptor
/// starts `start` bytes past the base: `Swizzle<3,4,3> o ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))`.
///
/// ```
/// use nvptx_std::wgmma::{mn_major_sw128_offset, swizzle_128b};
/// // Byte 130 along N (second 128-byte chunk), row 0 along K.
/// assert_eq!(mn_major_sw128_offset(0, 8192, 1024, 130, 0), 8192 + swizzle_128b(2));
/// ```
pub const fn mn_major_sw128_offset(start: u32, leading_bytes: u32, stride_bytes: u32, mn_byte: u32, k: u32) -> u32 {
    // The swizzle acts on address bits 4-9 only; chunks `leading_bytes` apart (a multiple of
    // 1024) keep their pattern.
    let chunk = (mn_byte / 128) * leading_bytes;
    chunk + swizzle_128b(start + mn_byte % 128 + (k % 8) * 128 + (k / 8) * stride_bytes)
}

/// The element of the `m64nNk*` accumulator fragment that register `r` of warpgroup thread
/// `thread` (0..128) holds, as `(row, column)` of the 64 x N tile: each warp owns 16 rows; in
/// each 8-column chunk `r / 4`, a thread holds two adjacent columns of two rows 8 apart.
///
/// ```
/// use nvptx_std::wgmma::accumulator_position;
/// assert_eq!(accumulator_position(0, 0), (0, 0));
/// assert_eq!(accumulator_position(0, 2), (8, 0)); // the same columns, 8 rows down
/// assert_eq!(accumulator_position(32, 0), (16, 0)); // warp 1 starts at row 16
/// ```
#[inline(always)]
pub const fn accumulator_position(thread: u32, r: u32) -> (u32, u32) {
    let (warp, lane) = (thread / 32, thread % 32);
    let row = warp * 16 + lane / 4 + 8 * ((r / 2) % 2);
    let col = (r / 4) * 8 + 2 * (lane % 4) + r % 2;
    (row, col)
}

/// `wgmma.fence.sync.aligned;`: orders earlier register and shared-memory accesses of the
/// warpgroup before the `wgmma.mma_async` that follow. Needed before the first `mma_*` and
/// whenever other instructions wrote the accumulators since.
///
/// Every thread of the warpgroup must execute the same call (`.aligned`).
///
/// ```ignore
/// nvptx_std::wgmma::fence();
/// unsafe { nvptx_std::wgmma::mma_m64n256k16_f32_bf16_b_n_major(&mut acc, a_desc, b_desc, 1) };
/// nvptx_std::wgmma::commit_group();
/// nvptx_std::wgmma::wait_group::<0>(&mut acc);
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn fence() {
    // SAFETY: a fence with no operands; orders memory (no `nomem`).
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// `setmaxnreg.inc.sync.aligned.u32 N;`: raises this warpgroup's registers per thread to `N`
/// (a multiple of 8 in 24..=256), waiting until other warpgroups released enough. Takes effect
/// only in a kernel with a register cap at entry (`.maxntid`).
///
/// Every thread of the warpgroup must execute the same call (`.aligned`).
///
/// ```ignore
/// nvptx_std::wgmma::set_max_registers_inc::<232>(); // the math warpgroups
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn set_max_registers_inc<const N: u32>() {
    // SAFETY: register reallocation; touches no memory.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack, nomem)) };
}

/// `setmaxnreg.dec.sync.aligned.u32 N;`: lowers this warpgroup's registers per thread to `N`,
/// releasing the rest to the SM's pool for [`set_max_registers_inc`].
///
/// Every thread of the warpgroup must execute the same call (`.aligned`).
///
/// ```ignore
/// nvptx_std::wgmma::set_max_registers_dec::<40>(); // the producer warpgroup
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn set_max_registers_dec<const N: u32>() {
    // SAFETY: register reallocation; touches no memory.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack, nomem)) };
}

/// `wgmma.commit_group.sync.aligned;`: closes the group of the `wgmma.mma_async` issued since
/// the last commit, so that [`wait_group`] can wait for it.
///
/// ```ignore
/// nvptx_std::wgmma::commit_group();
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn commit_group() {
    // SAFETY: no operands; orders memory.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// Accumulator register indices 1..128: the first operand `{0}` is written separately so that
/// the list needs no trailing separator.
#[cfg(target_arch = "nvptx64")]
macro_rules! with_accumulator_indices {
    ($mac:ident ! ($($args:tt)*)) => {
        $mac!($($args)*; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
            31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
            63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94
            95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119
            120 121 122 123 124 125 126 127)
    };
}

/// Accumulator register indices 1..64, for `n = 128` (as [`with_accumulator_indices`]).
#[cfg(target_arch = "nvptx64")]
macro_rules! with_accumulator_indices_64 {
    ($mac:ident ! ($($args:tt)*)) => {
        $mac!($($args)*; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
            31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
            63)
    };
}

/// Accumulator register indices 1..32, for `n = 64` (as [`with_accumulator_indices`]).
#[cfg(target_arch = "nvptx64")]
macro_rules! with_accumulator_indices_32 {
    ($mac:ident ! ($($args:tt)*)) => {
        $mac!($($args)*; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
            31)
    };
}

/// Accumulator register indices 1..8, for `n = 16` (as [`with_accumulator_indices`]).
#[cfg(target_arch = "nvptx64")]
macro_rules! with_accumulator_indices_8 {
    ($mac:ident ! ($($args:tt)*)) => {
        $mac!($($args)*; 1 2 3 4 5 6 7)
    };
}

/// One `wgmma.mma_async` with both operands in shared memory and the accumulators in and out
/// (128 for `n = 256`, 64 for `n = 128`: the index list says which): `$head` is the
/// instruction, `$tail` its immediate operands after `scale-d`.
#[cfg(target_arch = "nvptx64")]
macro_rules! mma_ss {
    ($head:literal, $tail:literal, $acc:ident, $a:expr, $b:expr, $scale_d:expr; $($i:literal)*) => {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {sd}, 0;",
            concat!($head, " {{{0}", $(", {", stringify!($i), "}",)* "}}, {da}, {db}, p, ", $tail, ";"),
            "}}",
            inout(reg32) $acc[0],
            $(inout(reg32) $acc[$i],)*
            da = in(reg64) $a,
            db = in(reg64) $b,
            sd = in(reg32) $scale_d,
            options(nostack),
        )
    };
}

/// One `wgmma.mma_async` wrapper with both operands in shared memory: `$name` for `$len`
/// accumulators, `$head` the instruction, `$tail` its immediates after `scale-d`, `$indices` the
/// accumulator index list; the documentation, `# Safety` included, is the invocation's. (Defined
/// on every target: the functions it writes are the device's only.)
macro_rules! mma_ss_fn {
    ($(#[$doc:meta])* $name:ident, $len:literal, $head:literal, $tail:literal, $indices:ident) => {
        $(#[$doc])*
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        pub unsafe fn $name(acc: &mut [f32; $len], a: u64, b: u64, scale_d: u32) {
            // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
            unsafe { $indices!(mma_ss!($head, $tail, acc, a, b, scale_d)) };
        }
    };
}

/// One `wgmma.mma_async` with `A` from four registers and the accumulators in and out (128 for
/// `n = 256`, 64 for `n = 128`: the index list says which).
#[cfg(target_arch = "nvptx64")]
macro_rules! mma_a_regs {
    ($head:literal, $tail:literal, $acc:ident, $a:expr, $b:expr, $scale_d:expr; $($i:literal)*) => {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {sd}, 0;",
            concat!($head, " {{{0}", $(", {", stringify!($i), "}",)* "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, ", $tail, ";"),
            "}}",
            inout(reg32) $acc[0],
            $(inout(reg32) $acc[$i],)*
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            db = in(reg64) $b,
            sd = in(reg32) $scale_d,
            options(nostack),
        )
    };
}

/// `wgmma.wait_group.sync.aligned N;` with the accumulators as operands, so that the compiler
/// neither reads them before the wait nor moves their definitions across it (CUTLASS's
/// `warpgroup_fence_operand`): the operands appear only in a PTX comment.
#[cfg(target_arch = "nvptx64")]
macro_rules! wait_with_accumulators {
    ($n:expr, $acc:ident; $($i:literal)*) => {
        asm!(
            "wgmma.wait_group.sync.aligned {n};",
            concat!("// accumulators {0}", $(" {", stringify!($i), "}",)*),
            inout(reg32) $acc[0],
            $(inout(reg32) $acc[$i],)*
            n = const $n,
            options(nostack),
        )
    };
}

/// `wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {d0..d127}, a, b, p, 1, 1, 0, 1;`:
/// `D = A * B + (scale_d != 0 ? D : 0)` for a 64 x 16 BF16 `A` (K-major, descriptor `a`), a
/// 16 x 256 BF16 `B` stored N-major (descriptor `b`, transposed by the instruction: the last
/// immediate), into this warpgroup's 64 x 256 `f32` accumulators (layout
/// [`accumulator_position`]).
///
/// # Safety
/// Issued by all 128 threads of a warpgroup with the same descriptors (`.aligned`), after a
/// [`fence`]; the descriptors describe shared memory that holds the operands and stays unchanged
/// until a [`wait_group`] covers this instruction; `acc` is read only after that wait.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n256k16_f32_bf16_b_n_major(&mut acc, a_desc, b_desc, (k > 0) as u32) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n256k16_f32_bf16_b_n_major(acc: &mut [f32; 128], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
            "1, 1, 0, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {d0..d127}, a, b, p, 1, 1, 0, 1;`:
/// `D = A * B + (scale_d != 0 ? D : 0)` for a 64 x 16 F16 (IEEE half) `A` (K-major, descriptor
/// `a`), a 16 x 256 F16 `B` stored N-major (descriptor `b`, transposed by the instruction: the
/// last immediate), into this warpgroup's 64 x 256 `f32` accumulators (layout
/// [`accumulator_position`]): [`mma_m64n256k16_f32_bf16_b_n_major`] with F16 inputs, whose
/// products (11 by 11 significant bits) are exact in `f32`.
///
/// # Safety
/// As for [`mma_m64n256k16_f32_bf16_b_n_major`].
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n256k16_f32_f16_b_n_major(&mut acc, a_desc, b_desc, (k > 0) as u32) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n256k16_f32_f16_b_n_major(acc: &mut [f32; 128], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
            "1, 1, 0, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {d0..d127}, a, b, p, 1, 1;`:
/// `D = A * B + (scale_d != 0 ? D : 0)` for a 64 x 8 `A` and an 8 x 256 `B`, both K-major (the
/// only layout TF32 takes), `f32` values of which the tensor cores use the TF32 part (10-bit
/// mantissa), into this warpgroup's 64 x 256 `f32` accumulators.
///
/// # Safety
/// As for [`mma_m64n256k16_f32_bf16_b_n_major`].
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n256k8_f32_tf32(&mut acc, a_desc, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n256k8_f32_tf32(acc: &mut [f32; 128], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {d0..d127}, {a0, a1, a2, a3}, b, p, 1, 1;`:
/// as [`mma_m64n256k8_f32_tf32`] with the 64 x 8 `A` in registers: thread `t` of the
/// warpgroup holds `A[r][c]`, `A[r + 8][c]`, `A[r][c + 4]`, `A[r + 8][c + 4]` with
/// `(r, c) =` [`a_fragment_position`]`(t)`. Registers take any layout in shared memory, which is
/// how an MN-major operand reaches TF32 `wgmma`.
///
/// # Safety
/// As for [`mma_m64n256k16_f32_bf16_b_n_major`]; a [`fence`] also separates the instructions
/// that wrote `a` from this one.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n256k8_f32_tf32_a_regs(&mut acc, a_fragment, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n256k8_f32_tf32_a_regs(acc: &mut [f32; 128], a: [u32; 4], b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptor and the ordering.
    unsafe {
        with_accumulator_indices!(mma_a_regs!(
            "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {d0..d63}, {a0, a1, a2, a3}, b, p, 1, 1;`:
/// as [`mma_m64n256k8_f32_tf32_a_regs`] with an 8 x 128 `B` (K-major, descriptor `b`) into a
/// 64 x 128 tile of accumulators (the first 64 registers of [`accumulator_position`]'s layout).
///
/// # Safety
/// As for [`mma_m64n256k8_f32_tf32_a_regs`]; `acc` is read only after a [`wait_group_n128`]
/// covers this instruction.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n128k8_f32_tf32_a_regs(&mut acc, a_fragment, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n128k8_f32_tf32_a_regs(acc: &mut [f32; 64], a: [u32; 4], b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptor and the ordering.
    unsafe {
        with_accumulator_indices_64!(mma_a_regs!(
            "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {d0..d63}, a, b, p, 1, 1, 0, 1;`:
/// [`mma_m64n256k16_f32_bf16_b_n_major`] with a 16 x 128 `B` (N-major, descriptor `b`) into a
/// 64 x 128 tile of accumulators (the first 64 registers of [`accumulator_position`]'s layout).
///
/// # Safety
/// As for [`mma_m64n256k16_f32_bf16_b_n_major`]; `acc` is read only after a [`wait_group_n128`]
/// covers this instruction.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n128k16_f32_bf16_b_n_major(&mut acc, a_desc, b_desc, (k > 0) as u32) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n128k16_f32_bf16_b_n_major(acc: &mut [f32; 64], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices_64!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
            "1, 1, 0, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0..d63}, a, b, p, 1, 1, 0, 1;`:
/// [`mma_m64n128k16_f32_bf16_b_n_major`] with F16 (IEEE half) inputs.
///
/// # Safety
/// As for [`mma_m64n128k16_f32_bf16_b_n_major`].
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n128k16_f32_f16_b_n_major(&mut acc, a_desc, b_desc, (k > 0) as u32) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n128k16_f32_f16_b_n_major(acc: &mut [f32; 64], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices_64!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
            "1, 1, 0, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {d0..d63}, a, b, p, 1, 1;`:
/// [`mma_m64n256k8_f32_tf32`] with an 8 x 128 `B` (K-major, descriptor `b`) into a 64 x 128
/// tile of accumulators.
///
/// # Safety
/// As for [`mma_m64n128k16_f32_bf16_b_n_major`].
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n128k8_f32_tf32(&mut acc, a_desc, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n128k8_f32_tf32(acc: &mut [f32; 64], a: u64, b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptors and the ordering.
    unsafe {
        with_accumulator_indices_64!(mma_ss!(
            "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

/// `wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {d0..d7}, {a0, a1, a2, a3}, b, p, 1, 1;`:
/// as [`mma_m64n256k8_f32_tf32_a_regs`] with an 8 x 16 `B` (K-major, descriptor `b`) into a
/// 64 x 16 tile of accumulators (the first 8 registers of [`accumulator_position`]'s layout):
/// the instruction of a product whose `n` (on `C^T`: `C`'s rows) is at most 16.
///
/// # Safety
/// As for [`mma_m64n256k8_f32_tf32_a_regs`]; `acc` is read only after a [`wait_group_n16`]
/// covers this instruction.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n16k8_f32_tf32_a_regs(&mut acc, a_fragment, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n16k8_f32_tf32_a_regs(acc: &mut [f32; 8], a: [u32; 4], b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptor and the ordering.
    unsafe {
        with_accumulator_indices_8!(mma_a_regs!(
            "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {d0..d7}, a, b, p, 1, 1;`:
    /// [`mma_m64n256k8_f32_tf32`] with an 8 x 16 `B` (K-major, descriptor `b`) into a 64 x 16 tile
    /// of accumulators.
    ///
    /// # Safety
    /// As for [`mma_m64n16k8_f32_tf32_a_regs`], with `A` in shared memory (descriptor `a`).
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n16k8_f32_tf32(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n16k8_f32_tf32,
    8,
    "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32",
    "1, 1",
    with_accumulator_indices_8
);

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {d0..d7}, a, b, p, 1, 1, 0, 1;`:
    /// [`mma_m64n256k16_f32_bf16_b_n_major`] with a 16 x 16 `B` (N-major, descriptor `b`) into a
    /// 64 x 16 tile of accumulators.
    ///
    /// # Safety
    /// As for [`mma_m64n16k8_f32_tf32`].
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n16k16_f32_bf16_b_n_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n16k16_f32_bf16_b_n_major,
    8,
    "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    with_accumulator_indices_8
);

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {d0..d7}, a, b, p, 1, 1, 0, 1;`:
    /// [`mma_m64n16k16_f32_bf16_b_n_major`] with F16 (IEEE half) inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n16k8_f32_tf32`].
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n16k16_f32_f16_b_n_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n16k16_f32_f16_b_n_major,
    8,
    "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16",
    "1, 1, 0, 1",
    with_accumulator_indices_8
);

/// `wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {d0..d31}, {a0, a1, a2, a3}, b, p, 1, 1;`:
/// as [`mma_m64n256k8_f32_tf32_a_regs`] with an 8 x 64 `B` (K-major, descriptor `b`) into a
/// 64 x 64 tile of accumulators (the first 32 registers of [`accumulator_position`]'s layout):
/// the instruction of a product whose `n` (on `C^T`: `C`'s rows) is at most 64.
///
/// # Safety
/// As for [`mma_m64n256k8_f32_tf32_a_regs`]; `acc` is read only after a [`wait_group_n64`]
/// covers this instruction.
///
/// ```ignore
/// unsafe { nvptx_std::wgmma::mma_m64n64k8_f32_tf32_a_regs(&mut acc, a_fragment, b_desc, 1) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_m64n64k8_f32_tf32_a_regs(acc: &mut [f32; 32], a: [u32; 4], b: u64, scale_d: u32) {
    // SAFETY: the caller guarantees the warpgroup, the descriptor and the ordering.
    unsafe {
        with_accumulator_indices_32!(mma_a_regs!(
            "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32",
            "1, 1",
            acc,
            a,
            b,
            scale_d
        ))
    };
}

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {d0..d31}, a, b, p, 1, 1;`:
    /// [`mma_m64n256k8_f32_tf32`] with an 8 x 64 `B` (K-major, descriptor `b`) into a 64 x 64 tile
    /// of accumulators.
    ///
    /// # Safety
    /// As for [`mma_m64n64k8_f32_tf32_a_regs`], with `A` in shared memory (descriptor `a`).
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n64k8_f32_tf32(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n64k8_f32_tf32,
    32,
    "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32",
    "1, 1",
    with_accumulator_indices_32
);

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {d0..d31}, a, b, p, 1, 1, 0, 1;`:
    /// [`mma_m64n256k16_f32_bf16_b_n_major`] with a 16 x 64 `B` (N-major, descriptor `b`) into a
    /// 64 x 64 tile of accumulators.
    ///
    /// # Safety
    /// As for [`mma_m64n64k8_f32_tf32`].
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n64k16_f32_bf16_b_n_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n64k16_f32_bf16_b_n_major,
    32,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    with_accumulator_indices_32
);

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {d0..d31}, a, b, p, 1, 1, 0, 1;`:
    /// [`mma_m64n64k16_f32_bf16_b_n_major`] with F16 (IEEE half) inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n64k8_f32_tf32`].
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n64k16_f32_f16_b_n_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n64k16_f32_f16_b_n_major,
    32,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
    "1, 1, 0, 1",
    with_accumulator_indices_32
);

mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {d0..d127}, a, b, p, 1, 1, 1, 0;`:
    /// `D = A * B + (scale_d != 0 ? D : 0)` with `A` (64 x 16 BF16) M-major and `B` (16 x 256)
    /// K-major: the product `C^T = B^T A^T` of a row-major `B` and `A`.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n256k16_f32_bf16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n256k16_f32_bf16_a_m_major,
    128,
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
    "1, 1, 1, 0",
    with_accumulator_indices
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {d0..d127}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n256k16_f32_bf16_a_m_major`] with F16 inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n256k16_f32_f16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n256k16_f32_f16_a_m_major,
    128,
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
    "1, 1, 1, 0",
    with_accumulator_indices
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {d0..d63}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n256k16_f32_bf16_a_m_major`] with a 16 x 128 `B`.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n128k16_f32_bf16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n128k16_f32_bf16_a_m_major,
    64,
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
    "1, 1, 1, 0",
    with_accumulator_indices_64
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0..d63}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n128k16_f32_bf16_a_m_major`] with F16 inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n128k16_f32_f16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n128k16_f32_f16_a_m_major,
    64,
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
    "1, 1, 1, 0",
    with_accumulator_indices_64
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {d0..d7}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n256k16_f32_bf16_a_m_major`] with a 16 x 16 `B`: `C^T` of at most 16 rows of `C`.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n16k16_f32_bf16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n16k16_f32_bf16_a_m_major,
    8,
    "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16",
    "1, 1, 1, 0",
    with_accumulator_indices_8
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {d0..d7}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n16k16_f32_bf16_a_m_major`] with F16 inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n16k16_f32_f16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n16k16_f32_f16_a_m_major,
    8,
    "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16",
    "1, 1, 1, 0",
    with_accumulator_indices_8
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {d0..d31}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n256k16_f32_bf16_a_m_major`] with a 16 x 64 `B`: `C^T` of at most 64 rows of `C`.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n64k16_f32_bf16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n64k16_f32_bf16_a_m_major,
    32,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    "1, 1, 1, 0",
    with_accumulator_indices_32
);
mma_ss_fn!(
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {d0..d31}, a, b, p, 1, 1, 1, 0;`:
    /// [`mma_m64n64k16_f32_bf16_a_m_major`] with F16 inputs.
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`], with `A` (descriptor `a`) stored M-major
    /// (each 128-byte row of the 128-byte swizzled pattern holds 64 consecutive `m` of one `k`,
    /// as the TMA writes a box of a row-major `k x m` matrix) and `B` K-major; `acc` is read only
    /// after a wait that covers this instruction.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::wgmma::mma_m64n64k16_f32_f16_a_m_major(&mut acc, a_desc, b_desc, 1) };
    /// ```
    mma_m64n64k16_f32_f16_a_m_major,
    32,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
    "1, 1, 1, 0",
    with_accumulator_indices_32
);

/// The `(row, column)` of the 64 x 8 TF32 `A` fragment's first register in warpgroup thread
/// `thread`: each warp holds 16 rows; the other registers are 8 rows and 4 columns further.
///
/// ```
/// use nvptx_std::wgmma::a_fragment_position;
/// assert_eq!(a_fragment_position(0), (0, 0));
/// assert_eq!(a_fragment_position(5), (1, 1)); // lane 5: row 1, column 1
/// assert_eq!(a_fragment_position(32), (16, 0)); // warp 1 holds rows 16..32
/// ```
#[inline(always)]
pub const fn a_fragment_position(thread: u32) -> (u32, u32) {
    let (warp, lane) = (thread / 32, thread % 32);
    (warp * 16 + lane / 4, lane % 4)
}

/// `wgmma.wait_group.sync.aligned N;`: waits until at most `N` committed groups of this
/// warpgroup are pending; the accumulators pass through as operands (see the macro) so that
/// they are read only after the wait.
///
/// Every thread of the warpgroup must execute the same call (`.aligned`).
///
/// ```ignore
/// nvptx_std::wgmma::wait_group::<0>(&mut acc); // acc is ready to read
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn wait_group<const N: u32>(acc: &mut [f32; 128]) {
    // SAFETY: a wait; the accumulators are only passed through.
    unsafe { with_accumulator_indices!(wait_with_accumulators!(N, acc)) };
}

/// [`wait_group`] for the 64 accumulators of an `n = 128` instruction
/// ([`mma_m64n128k8_f32_tf32_a_regs`]).
///
/// ```ignore
/// nvptx_std::wgmma::wait_group_n128::<1>(&mut acc); // at most one group still in flight
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn wait_group_n128<const N: u32>(acc: &mut [f32; 64]) {
    // SAFETY: a wait; the accumulators are only passed through.
    unsafe { with_accumulator_indices_64!(wait_with_accumulators!(N, acc)) };
}

/// [`wait_group`] for the 32 accumulators of an `n = 64` instruction
/// ([`mma_m64n64k8_f32_tf32_a_regs`]).
///
/// ```ignore
/// nvptx_std::wgmma::wait_group_n64::<1>(&mut acc); // at most one group still in flight
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn wait_group_n64<const N: u32>(acc: &mut [f32; 32]) {
    // SAFETY: a wait; the accumulators are only passed through.
    unsafe { with_accumulator_indices_32!(wait_with_accumulators!(N, acc)) };
}

/// [`wait_group`] for the 8 accumulators of an `n = 16` instruction
/// ([`mma_m64n16k8_f32_tf32_a_regs`]).
///
/// ```ignore
/// nvptx_std::wgmma::wait_group_n16::<1>(&mut acc); // at most one group still in flight
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn wait_group_n16<const N: u32>(acc: &mut [f32; 8]) {
    // SAFETY: a wait; the accumulators are only passed through.
    unsafe { with_accumulator_indices_8!(wait_with_accumulators!(N, acc)) };
}

/// One warpgroup's `f32` accumulators of an `m64nN` instruction: `[f32; 128]` for `n = 256`,
/// `[f32; 64]` for `n = 128`, `[f32; 32]` for `n = 64`, `[f32; 8]` for `n = 16`, with the instructions of that width as methods, so that one
/// kernel body serves every tile width.
///
/// ```ignore
/// fn run<A: nvptx_std::wgmma::Accumulators>() -> A {
///     let mut acc = A::zeroed();
///     acc.wait_group::<0>();
///     acc
/// }
/// ```
#[cfg(target_arch = "nvptx64")]
pub trait Accumulators: Sized {
    /// The instruction's `n`.
    ///
    /// ```ignore
    /// let columns_per_warpgroup = <[f32; 64] as Accumulators>::N; // 128
    /// ```
    const N: u32;
    /// Every accumulator 0.0.
    ///
    /// ```ignore
    /// let mut acc = <[f32; 128]>::zeroed();
    /// ```
    fn zeroed() -> Self;
    /// The TF32 instruction with `A` in registers ([`mma_m64n256k8_f32_tf32_a_regs`],
    /// [`mma_m64n128k8_f32_tf32_a_regs`]).
    ///
    /// # Safety
    /// As for [`mma_m64n256k8_f32_tf32_a_regs`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_tf32_a_regs(a_fragment, b_desc, 1) };
    /// ```
    unsafe fn mma_tf32_a_regs(&mut self, a: [u32; 4], b: u64, scale_d: u32);
    /// The TF32 instruction with both operands K-major in shared memory
    /// ([`mma_m64n256k8_f32_tf32`], [`mma_m64n128k8_f32_tf32`]).
    ///
    /// # Safety
    /// As for [`mma_m64n256k8_f32_tf32`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_tf32(a_desc, b_desc, 1) };
    /// ```
    unsafe fn mma_tf32(&mut self, a: u64, b: u64, scale_d: u32);
    /// The BF16 instruction with `B` N-major ([`mma_m64n256k16_f32_bf16_b_n_major`],
    /// [`mma_m64n128k16_f32_bf16_b_n_major`]).
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_bf16_b_n_major(a_desc, b_desc, 1) };
    /// ```
    unsafe fn mma_bf16_b_n_major(&mut self, a: u64, b: u64, scale_d: u32);
    /// The F16 instruction with `B` N-major ([`mma_m64n256k16_f32_f16_b_n_major`],
    /// [`mma_m64n128k16_f32_f16_b_n_major`]).
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_b_n_major`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_f16_b_n_major(a_desc, b_desc, 1) };
    /// ```
    unsafe fn mma_f16_b_n_major(&mut self, a: u64, b: u64, scale_d: u32);
    /// The BF16 instruction with `A` M-major and `B` K-major
    /// ([`mma_m64n256k16_f32_bf16_a_m_major`] and its narrower forms).
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_a_m_major`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_bf16_a_m_major(a_desc, b_desc, 1) };
    /// ```
    unsafe fn mma_bf16_a_m_major(&mut self, a: u64, b: u64, scale_d: u32);
    /// The F16 instruction with `A` M-major and `B` K-major
    /// ([`mma_m64n256k16_f32_f16_a_m_major`] and its narrower forms).
    ///
    /// # Safety
    /// As for [`mma_m64n256k16_f32_bf16_a_m_major`].
    ///
    /// ```ignore
    /// unsafe { acc.mma_f16_a_m_major(a_desc, b_desc, 1) };
    /// ```
    unsafe fn mma_f16_a_m_major(&mut self, a: u64, b: u64, scale_d: u32);
    /// [`wait_group`] with these accumulators as operands.
    ///
    /// ```ignore
    /// acc.wait_group::<0>();
    /// ```
    fn wait_group<const PENDING: u32>(&mut self);
    /// Accumulator register `i` ([`accumulator_position`]'s order).
    ///
    /// ```ignore
    /// let (row, col) = accumulator_position(thread, 3);
    /// let c = acc.get(3); // C[row][col] of this warpgroup's tile
    /// ```
    fn get(&self, i: usize) -> f32;
    /// Adds every accumulator into the same register of `total` (unrolled: both stay in
    /// registers).
    ///
    /// ```ignore
    /// run.add_into(&mut total); // promote a run of TF32 sums into the f32 total
    /// ```
    fn add_into(&self, total: &mut Self);
}

/// `$total[i] += $run[i]` for every index of the list.
#[cfg(target_arch = "nvptx64")]
macro_rules! add_each {
    ($total:ident, $run:ident; $($i:literal)*) => {
        $total[0] += $run[0];
        $($total[$i] += $run[$i];)*
    };
}

/// `Accumulators` for `[f32; $len]` (`n = $n`): its instructions, its wait `$wait` and its
/// index list `$indices`.
#[cfg(target_arch = "nvptx64")]
macro_rules! impl_accumulators {
    ($len:literal, $n:literal, $tf32_regs:ident, $tf32:ident, $bf16:ident, $f16:ident, $bf16_t:ident, $f16_t:ident, $wait:ident, $indices:ident) => {
        impl Accumulators for [f32; $len] {
            const N: u32 = $n;
            #[inline(always)]
            fn zeroed() -> Self {
                // SAFETY: all-zero bits are 0.0 (a memset, where a `[0.0; N]` literal may not
                // stay in registers).
                unsafe { core::mem::zeroed() }
            }
            #[inline(always)]
            unsafe fn mma_tf32_a_regs(&mut self, a: [u32; 4], b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $tf32_regs(self, a, b, scale_d) }
            }
            #[inline(always)]
            unsafe fn mma_tf32(&mut self, a: u64, b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $tf32(self, a, b, scale_d) }
            }
            #[inline(always)]
            unsafe fn mma_bf16_b_n_major(&mut self, a: u64, b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $bf16(self, a, b, scale_d) }
            }
            #[inline(always)]
            unsafe fn mma_f16_b_n_major(&mut self, a: u64, b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $f16(self, a, b, scale_d) }
            }
            #[inline(always)]
            unsafe fn mma_bf16_a_m_major(&mut self, a: u64, b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $bf16_t(self, a, b, scale_d) }
            }
            #[inline(always)]
            unsafe fn mma_f16_a_m_major(&mut self, a: u64, b: u64, scale_d: u32) {
                // SAFETY: forwarded contract.
                unsafe { $f16_t(self, a, b, scale_d) }
            }
            #[inline(always)]
            fn wait_group<const PENDING: u32>(&mut self) {
                $wait::<PENDING>(self)
            }
            #[inline(always)]
            fn get(&self, i: usize) -> f32 {
                self[i]
            }
            #[inline(always)]
            fn add_into(&self, total: &mut Self) {
                let run = self;
                $indices!(add_each!(total, run));
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
impl_accumulators!(
    128,
    256,
    mma_m64n256k8_f32_tf32_a_regs,
    mma_m64n256k8_f32_tf32,
    mma_m64n256k16_f32_bf16_b_n_major,
    mma_m64n256k16_f32_f16_b_n_major,
    mma_m64n256k16_f32_bf16_a_m_major,
    mma_m64n256k16_f32_f16_a_m_major,
    wait_group,
    with_accumulator_indices
);
#[cfg(target_arch = "nvptx64")]
impl_accumulators!(
    64,
    128,
    mma_m64n128k8_f32_tf32_a_regs,
    mma_m64n128k8_f32_tf32,
    mma_m64n128k16_f32_bf16_b_n_major,
    mma_m64n128k16_f32_f16_b_n_major,
    mma_m64n128k16_f32_bf16_a_m_major,
    mma_m64n128k16_f32_f16_a_m_major,
    wait_group_n128,
    with_accumulator_indices_64
);

#[cfg(target_arch = "nvptx64")]
impl_accumulators!(
    32,
    64,
    mma_m64n64k8_f32_tf32_a_regs,
    mma_m64n64k8_f32_tf32,
    mma_m64n64k16_f32_bf16_b_n_major,
    mma_m64n64k16_f32_f16_b_n_major,
    mma_m64n64k16_f32_bf16_a_m_major,
    mma_m64n64k16_f32_f16_a_m_major,
    wait_group_n64,
    with_accumulator_indices_32
);

#[cfg(target_arch = "nvptx64")]
impl_accumulators!(
    8,
    16,
    mma_m64n16k8_f32_tf32_a_regs,
    mma_m64n16k8_f32_tf32,
    mma_m64n16k16_f32_bf16_b_n_major,
    mma_m64n16k16_f32_f16_b_n_major,
    mma_m64n16k16_f32_bf16_a_m_major,
    mma_m64n16k16_f32_f16_a_m_major,
    wait_group_n16,
    with_accumulator_indices_8
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_packs_address_offsets_and_swizzle_into_their_fields() {
        let d = descriptor(0x1_2340, 16, 1024, Swizzle::B128);
        assert_eq!(d & 0x3FFF, 0x1234);
        assert_eq!((d >> 16) & 0x3FFF, 1);
        assert_eq!((d >> 32) & 0x3FFF, 64);
        assert_eq!((d >> 49) & 0x7, 0);
        assert_eq!(d >> 62, 1);
        assert_eq!(descriptor(0, 8192, 1024, Swizzle::B32) >> 62, 3);
        assert_eq!(descriptor(0, 8192, 1024, Swizzle::None), (512 << 16) | (64 << 32));
        // Offsets are encoded modulo 2^18 and in 16-byte units.
        assert_eq!(encode(0x4_0010), 1);
        assert_eq!(advance(descriptor(1024, 16, 1024, Swizzle::B128), 32), descriptor(1056, 16, 1024, Swizzle::B128));
    }

    #[test]
    fn swizzle_128b_permutes_16_byte_chunks_within_each_row_of_a_1024_byte_pattern() {
        assert_eq!(swizzle_128b(0), 0);
        assert_eq!(swizzle_128b(128), 128 + 16);
        assert_eq!(swizzle_128b(7 * 128 + 16), 7 * 128 + (1 ^ 7) * 16);
        assert_eq!(swizzle_128b(1024 + 129), 1024 + 128 + 16 + 1);
        // A permutation of each pattern, keeping bytes inside their 16-byte chunk and row.
        let mut seen = [false; 1024];
        for o in 0..1024u32 {
            let s = swizzle_128b(o);
            assert!(s < 1024 && s / 128 == o / 128 && s % 16 == o % 16 && !seen[s as usize]);
            seen[s as usize] = true;
        }
    }

    /// Where a TMA box with 128-byte swizzling, written to a 1024-byte aligned base, puts the
    /// byte `inner_byte` (< 128) of its row `row`.
    fn tma_sw128(row: u32, inner_byte: u32) -> u32 {
        swizzle_128b(row * 128 + inner_byte)
    }

    #[test]
    fn k_major_descriptors_stepped_along_k_read_the_bytes_tma_wrote() {
        // A: 128 rows x 128 bytes (64 BF16 or 32 TF32 along K) per stage; each warpgroup's
        // descriptor starts at its 64 rows, and each k-step of 32 bytes advances the start.
        for (elem, k_per_step) in [(2u32, 16u32), (4, 8)] {
            for wg in 0..2u32 {
                for step in 0..4u32 {
                    let start = wg * 64 * 128 + step * k_per_step * elem;
                    for row in 0..64 {
                        for kk in 0..k_per_step * elem {
                            let got = k_major_sw128_offset(start, 1024, row, kk);
                            let want = tma_sw128(wg * 64 + row, step * k_per_step * elem + kk);
                            assert_eq!(got, want, "wg {wg} step {step} row {row} byte {kk}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn n_major_descriptor_over_four_tma_boxes_reads_the_bytes_tma_wrote() {
        // B (BF16, N-major): four boxes of 64 columns x 64 rows of K, 8192 bytes apart; the
        // descriptor's leading offset steps between boxes along N, its stride offset between
        // groups of 8 rows along K, and each k-step of 16 rows advances the start 2048 bytes.
        for step in 0..4u32 {
            let start = step * 16 * 128;
            for col in 0..256u32 {
                for k in 0..16u32 {
                    for byte in 0..2 {
                        let got = mn_major_sw128_offset(start, 8192, 1024, col * 2 + byte, k);
                        let want = (col / 64) * 8192 + tma_sw128(step * 16 + k, (col % 64) * 2 + byte);
                        assert_eq!(got, want, "step {step} col {col} k {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn tf32_a_fragment_covers_the_64_x_8_tile_once() {
        let mut seen = [[false; 8]; 64];
        for t in 0..128 {
            let (r, c) = a_fragment_position(t);
            for (dr, dc) in [(0, 0), (8, 0), (0, 4), (8, 4)] {
                assert!(!seen[(r + dr) as usize][(c + dc) as usize], "thread {t}");
                seen[(r + dr) as usize][(c + dc) as usize] = true;
            }
        }
        assert!(seen.iter().all(|r| r.iter().all(|&s| s)));
    }

    #[test]
    fn accumulator_fragment_covers_the_64_x_256_tile_once() {
        let mut seen = [[false; 256]; 64];
        for t in 0..128 {
            for r in 0..128 {
                let (row, col) = accumulator_position(t, r);
                assert!(!seen[row as usize][col as usize], "thread {t} reg {r}");
                seen[row as usize][col as usize] = true;
            }
        }
        assert!(seen.iter().all(|r| r.iter().all(|&s| s)));
        assert_eq!(accumulator_position(0, 0), (0, 0));
        assert_eq!(accumulator_position(5, 3), (9, 3));
        assert_eq!(accumulator_position(37, 6), (25, 10));
    }
}
