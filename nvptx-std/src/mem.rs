//! Global-memory loads and stores with explicit width and cache behaviour: vector accesses of
//! 8 or 16 bytes, and loads through the read-only (non-coherent) data cache (`__ldg`).

use core::arch::asm;

/// `ld.global.nc.v4.s32`: reads four `i32` in one 16-byte access through the read-only
/// (non-coherent) data cache.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 4` lies in one global allocation, and nothing writes
/// that memory while the kernel runs.
///
/// ```ignore
/// let [a, b, c, d] = unsafe { nvptx_std::mem::load_global_nc_v4_i32(input.add(4 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_v4_i32(ptr: *const i32) -> [i32; 4] {
    let (a, b, c, d): (i32, i32, i32, i32);
    // SAFETY: the caller guarantees alignment, bounds and read-only use.
    unsafe {
        asm!("ld.global.nc.v4.s32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    [a, b, c, d]
}

/// `ld.global.nc.s32`: reads one `i32` through the read-only data cache.
///
/// # Safety
/// `ptr` is valid and aligned, and nothing writes it while the kernel runs.
///
/// ```ignore
/// let v = unsafe { nvptx_std::mem::load_global_nc_i32(input.add(i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_i32(ptr: *const i32) -> i32 {
    let v: i32;
    // SAFETY: the caller guarantees validity and read-only use.
    unsafe {
        asm!("ld.global.nc.s32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.global.nc.f32`: reads one `f32` through the read-only data cache (`__ldg`).
///
/// # Safety
/// `ptr` is valid and aligned, and nothing writes it while the kernel runs.
///
/// ```ignore
/// let x = unsafe { nvptx_std::mem::load_global_nc_f32(a.add(row * k + col)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_f32(ptr: *const f32) -> f32 {
    let v: f32;
    // SAFETY: the caller guarantees validity and read-only use.
    unsafe {
        asm!("ld.global.nc.f32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.global.nc.v4.f32`: reads four `f32` in one 16-byte access through the read-only
/// (non-coherent) data cache.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 4` lies in one global allocation, and nothing writes
/// that memory while the kernel runs.
///
/// ```ignore
/// let [x0, x1, x2, x3] = unsafe { nvptx_std::mem::load_global_nc_v4_f32(a.add(4 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_v4_f32(ptr: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment, bounds and read-only use.
    unsafe {
        asm!("ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    [a, b, c, d]
}

/// `st.global.v4.f32`: writes four `f32` in one 16-byte access.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 4` lies in one global allocation, and no other thread
/// accesses those elements during the kernel.
///
/// ```ignore
/// unsafe { nvptx_std::mem::store_global_v4_f32(c.add(4 * i), [x0, x1, x2, x3]) };
/// ```
#[inline(always)]
pub unsafe fn store_global_v4_f32(ptr: *mut f32, v: [f32; 4]) {
    // SAFETY: the caller guarantees alignment, bounds and exclusive access.
    unsafe {
        asm!("st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) ptr, a = in(reg32) v[0],
             b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags))
    };
}

/// `st.global.v4.u32`: writes four `u32` words (16 bytes) in one access.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 16` bytes lie in one global allocation, and no other
/// thread accesses them during the kernel.
///
/// ```ignore
/// unsafe { nvptx_std::mem::store_global_v4_u32(out.add(16 * i), words) };
/// ```
#[inline(always)]
pub unsafe fn store_global_v4_u32(ptr: *mut u8, v: [u32; 4]) {
    // SAFETY: the caller guarantees alignment, bounds and exclusive access.
    unsafe {
        asm!("st.global.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) ptr, a = in(reg32) v[0],
             b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags))
    };
}

/// `st.global.v2.f32`: writes two adjacent `f32` in one 8-byte access.
///
/// # Safety
/// `ptr` is 8-byte aligned, `ptr..ptr + 2` lies in one global allocation, and no other thread
/// accesses those elements during the kernel.
///
/// ```ignore
/// unsafe { nvptx_std::mem::store_global_v2_f32(c.add(2 * i), [x0, x1]) };
/// ```
#[inline(always)]
pub unsafe fn store_global_v2_f32(ptr: *mut f32, v: [f32; 2]) {
    // SAFETY: the caller guarantees alignment, bounds and exclusive access.
    unsafe {
        asm!("st.global.v2.f32 [{p}], {{{a}, {b}}};", p = in(reg64) ptr, a = in(reg32) v[0], b = in(reg32) v[1],
             options(nostack, preserves_flags))
    };
}

/// `st.global.f32`: writes one `f32`.
///
/// # Safety
/// `ptr` is valid and 4-byte aligned in a global allocation, and no other thread accesses it
/// during the kernel.
///
/// ```ignore
/// unsafe { nvptx_std::mem::store_global_f32(c.add(i), sum) };
/// ```
#[inline(always)]
pub unsafe fn store_global_f32(ptr: *mut f32, v: f32) {
    // SAFETY: the caller guarantees validity and exclusive access.
    unsafe { asm!("st.global.f32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) v, options(nostack, preserves_flags)) };
}

/// `ld.global.nc.v4.u32`: reads 16 bytes as four `u32` words through the read-only data cache;
/// narrower elements (`u8`, `u16`) are unpacked from the words by the caller.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 16` bytes lie in one global allocation, and nothing
/// writes that memory while the kernel runs.
///
/// ```ignore
/// let words = unsafe { nvptx_std::mem::load_global_nc_v4_u32(bytes.add(16 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_v4_u32(ptr: *const u8) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees alignment, bounds and read-only use.
    unsafe {
        asm!("ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    [a, b, c, d]
}

/// `ld.global.nc.u8`: reads one byte through the read-only data cache, zero-extended.
///
/// # Safety
/// `ptr` is valid, and nothing writes it while the kernel runs.
///
/// ```ignore
/// let value = unsafe { nvptx_std::mem::load_global_nc_u8(bytes.add(i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_u8(ptr: *const u8) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees validity and read-only use.
    unsafe {
        asm!("ld.global.nc.u8 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.global.nc.u16`: reads one 2-byte word through the read-only data cache, zero-extended.
///
/// # Safety
/// `ptr` is valid and 2-byte aligned, and nothing writes it while the kernel runs.
///
/// ```ignore
/// let value = unsafe { nvptx_std::mem::load_global_nc_u16(bytes.add(2 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_u16(ptr: *const u8) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees validity, alignment and read-only use.
    unsafe {
        asm!("ld.global.nc.u16 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    v
}

/// `@p ld.global.nc.u16`: the 2-byte element at `ptr` zero-extended where `inside`, else 0,
/// as one predicated load, with no branch around it:
///
/// ```text
/// { .reg .pred p; setp.ne.u32 p, inside, 0; mov.u32 v, 0; @p ld.global.nc.u16 v, [ptr]; }
/// ```
///
/// A guarded load written as an `if` puts the load in a branch of its own, and LLVM sinks
/// whatever uses the value (a BF16 or F16 widening) into that branch, so a warp waits for each
/// load before the next one issues; a predicated load keeps every use after all the loads.
///
/// # Safety
/// Where `inside`, `ptr` is valid and 2-byte aligned and nothing writes it while the kernel
/// runs; elsewhere `ptr` is not dereferenced and may be anything.
///
/// ```ignore
/// let bits = unsafe { nvptx_std::mem::load_global_nc_u16_if(row.add(2 * j), j < n) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_u16_if(ptr: *const u8, inside: bool) -> u32 {
    let v: u32;
    // SAFETY: the load runs only where `inside`, where the caller guarantees validity,
    // alignment and read-only use.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {c}, 0; mov.u32 {v}, 0; @p ld.global.nc.u16 {v}, [{p}]; }}",
            v = out(reg32) v, p = in(reg64) ptr, c = in(reg32) u32::from(inside),
            options(readonly, nostack, preserves_flags)
        )
    };
    v
}

/// `ld.global.nc.u32`: reads one 4-byte word through the read-only data cache.
///
/// # Safety
/// `ptr` is valid and 4-byte aligned, and nothing writes it while the kernel runs.
///
/// ```ignore
/// let word = unsafe { nvptx_std::mem::load_global_nc_u32(bytes.add(4 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_nc_u32(ptr: *const u8) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees validity, alignment and read-only use.
    unsafe {
        asm!("ld.global.nc.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    v
}

/// `st.global.u16`: writes the low 16 bits of `v`.
///
/// # Safety
/// `ptr` is valid and 2-byte aligned in a global allocation, and no other thread accesses it
/// during the kernel.
///
/// ```ignore
/// unsafe { nvptx_std::mem::store_global_u16(out.add(i), bits as u32) };
/// ```
#[inline(always)]
pub unsafe fn store_global_u16(ptr: *mut u16, v: u32) {
    // SAFETY: the caller guarantees validity and exclusive access.
    unsafe { asm!("st.global.u16 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) v, options(nostack, preserves_flags)) };
}

/// `ld.global.nc.v2.u32`: reads 8 bytes as two `u32` words through the read-only data cache.
///
/// # Safety
/// `ptr` is 8-byte aligned, `ptr..ptr + 8` bytes lie in one global allocation, and nothing
/// writes that memory while the kernel runs.
#[inline(always)]
pub unsafe fn load_global_nc_v2_u32(ptr: *const u8) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller guarantees alignment, bounds and read-only use.
    unsafe {
        asm!("ld.global.nc.v2.u32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg64) ptr,
             options(readonly, nostack, preserves_flags))
    };
    [a, b]
}

/// `ld.global.nc.u64`: reads one 8-byte word through the read-only data cache.
///
/// # Safety
/// `ptr` is valid and 8-byte aligned, and nothing writes it while the kernel runs.
#[inline(always)]
pub unsafe fn load_global_nc_u64(ptr: *const u64) -> u64 {
    let v: u64;
    // SAFETY: the caller guarantees validity, alignment and read-only use.
    unsafe {
        asm!("ld.global.nc.u64 {v}, [{p}];", v = out(reg64) v, p = in(reg64) ptr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.global.cg.f32`: reads one `f32` cached in L2 only, never in this SM's L1: what another
/// block wrote earlier in the same launch, after an acquire that synchronised with its writer
/// (an L1 line of the address could be stale).
///
/// # Safety
/// `ptr` is valid and 4-byte aligned; no thread writes it concurrently with this read.
///
/// ```ignore
/// let x = unsafe { nvptx_std::mem::load_global_cg_f32(partials.add(i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_cg_f32(ptr: *const f32) -> f32 {
    let v: f32;
    // SAFETY: the caller guarantees validity and the absence of a concurrent write.
    unsafe {
        asm!("ld.global.cg.f32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.global.cg.v4.f32`: [`load_global_cg_f32`] of four `f32` in one 16-byte access.
///
/// # Safety
/// `ptr` is 16-byte aligned, `ptr..ptr + 4` lies in one global allocation, and no thread writes
/// those elements concurrently with this read.
///
/// ```ignore
/// let [x0, x1, x2, x3] = unsafe { nvptx_std::mem::load_global_cg_v4_f32(partials.add(4 * i)) };
/// ```
#[inline(always)]
pub unsafe fn load_global_cg_v4_f32(ptr: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment, bounds and the absence of a concurrent write.
    unsafe {
        asm!("ld.global.cg.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg64) ptr, options(readonly, nostack, preserves_flags))
    };
    [a, b, c, d]
}
