//! Where a streamed file's host-side time goes on this machine: page-locking a mapped file in
//! place (cuMemHostRegister) and unlocking it, by threads and region size, with and without
//! copies running; pread into pinned buffers by threads and piece size, with and without copies.
//!
//! `cargo run --release -p host --example stream_probe -- FILE [GiB]`; with a third argument
//! `copies`, copy rates from each kind of page-locked memory and copies of the mapped file into
//! pinned buffers; with `pipeline`, threads that copy pieces into their own rings of pinned
//! buffers and enqueue each piece's copy themselves, in the configurations that `PIPELINE` lists
//! (`threads:piece_KiB:slots:plain|nt`, comma-separated).
use cudarc::driver::{CudaContext, sys};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

const GB: f64 = 1e9;

/// Runs `call` on every region of `ptrs` from `threads` threads bound to `ctx`, each taking the
/// next region not yet taken; returns GB/s over `bytes` per region.
fn over_regions(
    ctx: &Arc<CudaContext>,
    ptrs: &[usize],
    bytes: usize,
    threads: usize,
    call: impl Fn(usize) + Sync,
) -> f64 {
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                ctx.bind_to_thread().unwrap();
                while let Some(&p) = ptrs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    call(p);
                }
            });
        }
    });
    (ptrs.len() * bytes) as f64 / t.elapsed().as_secs_f64() / GB
}

fn lock_all(ctx: &Arc<CudaContext>, ptrs: &[usize], bytes: usize, threads: usize) -> f64 {
    over_regions(ctx, ptrs, bytes, threads, |p| {
        unsafe { sys::cuMemHostRegister_v2(p as *mut _, bytes, sys::CU_MEMHOSTREGISTER_READ_ONLY).result() }.unwrap()
    })
}

fn unlock_all(ctx: &Arc<CudaContext>, ptrs: &[usize], bytes: usize, threads: usize) -> f64 {
    over_regions(ctx, ptrs, bytes, threads, |p| unsafe { sys::cuMemHostUnregister(p as *mut _).result() }.unwrap())
}

/// Copies 256 MiB from pinned memory to the device until `stop`; returns GB/s.
fn copy_load(ctx: &Arc<CudaContext>, stop: &AtomicBool) -> f64 {
    let len = 256 << 20;
    let stream = ctx.new_stream().unwrap();
    let mut host = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, 0) }.unwrap();
    host.as_mut_slice().unwrap().fill(1);
    let mut dev = stream.alloc_zeros::<u8>(len).unwrap();
    stream.synchronize().unwrap();
    let t = Instant::now();
    let mut copies = 0;
    while !stop.load(Ordering::Relaxed) {
        stream.memcpy_htod(&host, &mut dev).unwrap();
        stream.memcpy_htod(&host, &mut dev).unwrap();
        stream.synchronize().unwrap();
        copies += 2;
    }
    (copies * len) as f64 / t.elapsed().as_secs_f64() / GB
}

fn with_copies<R>(ctx: &Arc<CudaContext>, copies: bool, f: impl FnOnce() -> R) -> (R, f64) {
    if !copies {
        return (f(), 0.0);
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            ctx.bind_to_thread().unwrap();
            copy_load(ctx, &stop)
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        let r = f();
        stop.store(true, Ordering::Relaxed);
        (r, h.join().unwrap())
    })
}

fn pread_all(
    file: &std::fs::File,
    bufs: &mut [cudarc::driver::PinnedHostSlice<u8>],
    total: usize,
    piece: usize,
) -> f64 {
    use std::os::unix::fs::FileExt;
    let chunk = bufs[0].len();
    let next = AtomicUsize::new(0);
    let chunks = total / chunk;
    let t = Instant::now();
    std::thread::scope(|s| {
        for buf in bufs.iter_mut() {
            let next = &next;
            s.spawn(move || {
                let out = buf.as_mut_slice().unwrap();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= chunks {
                        return;
                    }
                    for (j, p) in out.chunks_mut(piece).enumerate() {
                        file.read_exact_at(p, (i * chunk + j * piece) as u64).unwrap();
                    }
                }
            });
        }
    });
    (chunks * chunk) as f64 / t.elapsed().as_secs_f64() / GB
}

/// Copies `regions` (page-locked, each `bytes` long) to the device on one stream: the host time
/// spent enqueuing and the copy rate by CUDA events, GB/s.
fn copy_rate(ctx: &Arc<CudaContext>, regions: &[usize], bytes: usize) -> (f64, f64) {
    let stream = ctx.new_stream().unwrap();
    let dev = stream.alloc_zeros::<u8>(bytes).unwrap();
    let (dptr, _sync) = cudarc::driver::DevicePtr::device_ptr(&dev, &stream);
    stream.synchronize().unwrap();
    let start = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    let t = Instant::now();
    for &r in regions {
        unsafe { sys::cuMemcpyHtoDAsync_v2(dptr, r as *const _, bytes, stream.cu_stream()).result() }.unwrap();
    }
    let enqueue = t.elapsed().as_secs_f64();
    let end = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap() as f64;
    let total = (regions.len() * bytes) as f64;
    (enqueue * 1e3 / regions.len() as f64, total / (ms * 1e-3) / GB)
}

/// Copies `src` to `dst` with non-temporal 16-byte stores (no read for ownership of `dst`).
fn copy_nt(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        assert!(dst.len() == src.len() && (dst.as_ptr() as usize).is_multiple_of(16) && dst.len().is_multiple_of(16));
        let (d, s) = (dst.as_mut_ptr() as *mut __m128i, src.as_ptr() as *const __m128i);
        for i in 0..dst.len() / 16 {
            unsafe { _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i))) };
        }
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// `threads` threads copy the mapped file into pinned buffers of 64 MiB, GB/s: with plain
/// copies or non-temporal stores.
fn mapped_copy(ctx: &Arc<CudaContext>, map: &[u8], total: usize, threads: usize, nt: bool) -> f64 {
    let piece = 64usize << 20;
    let bufs: Vec<_> = (0..threads).map(|_| unsafe { ctx.alloc_pinned_with_flags::<u8>(piece, 0) }.unwrap()).collect();
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for buf in &bufs {
            let next = &next;
            let p = buf.as_ptr().unwrap() as usize;
            s.spawn(move || {
                let out = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, piece) };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if (i + 1) * piece > total {
                        return;
                    }
                    let src = &map[i * piece..(i + 1) * piece];
                    if nt { copy_nt(out, src) } else { out.copy_from_slice(src) }
                }
            });
        }
    });
    (total / piece * piece) as f64 / t.elapsed().as_secs_f64() / GB
}

/// Each of `threads` threads takes the next `piece` bytes of the mapped file, copies them into the
/// next of its `slots` pinned buffers (plain or non-temporal stores) once that buffer's last copy
/// is done, and enqueues the buffer's copy to the device on a stream of its own: GB/s over
/// `total` bytes. Small rings of small pieces may stay in the CPU's last-level cache, where the
/// copy engine's reads find them without another pass over host memory.
fn pipeline(
    ctx: &Arc<CudaContext>,
    map: &[u8],
    total: usize,
    threads: usize,
    piece: usize,
    slots: usize,
    nt: bool,
) -> f64 {
    struct Lane {
        stream: Arc<cudarc::driver::CudaStream>,
        dev: cudarc::driver::CudaSlice<u8>,
        bufs: Vec<(cudarc::driver::PinnedHostSlice<u8>, usize, cudarc::driver::CudaEvent)>,
    }
    let lanes: Vec<Lane> = (0..threads)
        .map(|_| {
            let stream = ctx.new_stream().unwrap();
            let dev = stream.alloc_zeros::<u8>(piece).unwrap();
            let bufs = (0..slots)
                .map(|_| {
                    let mut h = unsafe { ctx.alloc_pinned_with_flags::<u8>(piece, 0) }.unwrap();
                    h.as_mut_slice().unwrap().fill(0);
                    let p = h.as_ptr().unwrap() as usize;
                    let e = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC)).unwrap();
                    e.record(&stream).unwrap();
                    (h, p, e)
                })
                .collect();
            Lane { stream, dev, bufs }
        })
        .collect();
    ctx.synchronize().unwrap();
    let pieces = total / piece;
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for lane in &lanes {
            let next = &next;
            s.spawn(move || {
                ctx.bind_to_thread().unwrap();
                let (dptr, _g) = cudarc::driver::DevicePtr::device_ptr(&lane.dev, &lane.stream);
                let mut n = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= pieces {
                        break;
                    }
                    let (_, p, e) = &lane.bufs[n % slots];
                    n += 1;
                    e.synchronize().unwrap();
                    let out = unsafe { std::slice::from_raw_parts_mut(*p as *mut u8, piece) };
                    let src = &map[i * piece..(i + 1) * piece];
                    if nt {
                        copy_nt(out, src)
                    } else {
                        out.copy_from_slice(src)
                    }
                    unsafe { sys::cuMemcpyHtoDAsync_v2(dptr, *p as *const _, piece, lane.stream.cu_stream()).result() }
                        .unwrap();
                    e.record(&lane.stream).unwrap();
                }
                lane.stream.synchronize().unwrap();
            });
        }
    });
    (pieces * piece) as f64 / t.elapsed().as_secs_f64() / GB
}

/// Copy rates from page-locked memory of each kind: the mapped file's page cache locked in
/// place, anonymous memory with and without transparent huge pages locked in place, and
/// cuMemHostAlloc's pinned memory.
fn copies(ctx: &Arc<CudaContext>, base: usize, total: usize) {
    for mib in [64usize, 256] {
        let bytes = mib << 20;
        let regions: Vec<usize> = (0..total.min(8 << 30) / bytes).map(|i| base + i * bytes).collect();
        lock_all(ctx, &regions, bytes, 1);
        let (enq, rate) = copy_rate(ctx, &regions, bytes);
        let (enq2, rate2) = copy_rate(ctx, &regions, bytes);
        unlock_all(ctx, &regions, bytes, 1);
        println!(
            "copy from the page cache locked in place, {mib} MiB regions: {rate:.1} GB/s, again {rate2:.1} GB/s (enqueue {enq:.3} / {enq2:.3} ms per copy)"
        );
    }
    for huge in [true, false] {
        let bytes = 64usize << 20;
        let len = 4usize << 30;
        let mut anon = memmap2::MmapMut::map_anon(len).unwrap();
        let advice = if huge { memmap2::Advice::HugePage } else { memmap2::Advice::NoHugePage };
        anon.advise(advice).unwrap();
        anon.chunks_mut(4096).for_each(|p| p[0] = 1);
        let b = anon.as_ptr() as usize;
        let regions: Vec<usize> = (0..len / bytes).map(|i| b + i * bytes).collect();
        let lock = lock_all(ctx, &regions, bytes, 1);
        let (enq, rate) = copy_rate(ctx, &regions, bytes);
        let unlock = unlock_all(ctx, &regions, bytes, 1);
        println!(
            "copy from anonymous memory ({}) locked in place, 64 MiB regions: {rate:.1} GB/s (enqueue {enq:.3} ms per copy; lock {lock:.1} GB/s, unlock {unlock:.1} GB/s)",
            if huge { "huge pages advised" } else { "no huge pages" }
        );
    }
    let bytes = 64usize << 20;
    let pinned = unsafe { ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.unwrap();
    let p = pinned.as_ptr().unwrap() as usize;
    let regions = vec![p; 64];
    let (enq, rate) = copy_rate(ctx, &regions, bytes);
    println!(
        "copy from one pinned 64 MiB buffer (cuMemHostAlloc), 64 times: {rate:.1} GB/s (enqueue {enq:.3} ms per copy)"
    );
    let t = Instant::now();
    let big = unsafe { ctx.alloc_pinned_with_flags::<u8>(1 << 30, 0) }.unwrap();
    println!("cuMemHostAlloc of 1 GiB: {:.3} s", t.elapsed().as_secs_f64());
    drop(big);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let gib: usize = args.get(2).map_or(16, |a| a.parse().unwrap());
    let ctx = CudaContext::new(0).unwrap();
    if args.get(3).is_some_and(|a| a == "pipeline") {
        let file = std::fs::File::open(path).unwrap();
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let total = (gib << 30).min((map.len() >> 30) << 30);
        let bytes = 256usize << 20;
        let pinned = unsafe { ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.unwrap();
        let regions = vec![pinned.as_ptr().unwrap() as usize; 16];
        let (_, rate) = copy_rate(&ctx, &regions, bytes);
        println!("pinned copy 16 x 256 MiB: {rate:.1} GB/s");
        let configs: Vec<(usize, usize, usize, bool)> = std::env::var("PIPELINE")
            .map(|v| {
                v.split(',')
                    .map(|c| {
                        let f: Vec<&str> = c.split(':').collect();
                        (
                            f[0].parse().unwrap(),
                            f[1].parse::<usize>().unwrap() << 10,
                            f[2].parse().unwrap(),
                            f[3] == "nt",
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (threads, piece, slots, nt) in configs {
            let r = pipeline(&ctx, &map, total, threads, piece, slots, nt);
            println!(
                "pipeline {threads} threads, {} KiB pieces, {slots} slots, {} stores: {r:.1} GB/s ({:.2} of pinned)",
                piece >> 10,
                if nt { "non-temporal" } else { "plain" },
                r / rate
            );
        }
        let (_, rate) = copy_rate(&ctx, &regions, bytes);
        println!("pinned copy again: {rate:.1} GB/s");
        return;
    }
    if args.get(3).is_some_and(|a| a == "copies") {
        let file = std::fs::File::open(path).unwrap();
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let total = (gib << 30).min((map.len() >> 30) << 30);
        copies(&ctx, map.as_ptr() as usize, total);
        for (threads, nt, load) in [
            (8, false, false),
            (8, true, false),
            (16, true, false),
            (8, true, true),
            (12, true, true),
            (16, true, true),
            (16, false, true),
        ] {
            let (rate, copy) = with_copies(&ctx, load, || mapped_copy(&ctx, &map, total, threads, nt));
            println!(
                "copy the mapped file into pinned buffers, {threads} threads, {} stores{}: {rate:.1} GB/s{}",
                if nt { "non-temporal" } else { "plain" },
                if load { ", copies running" } else { "" },
                if load { format!(" (copies {copy:.1} GB/s)") } else { String::new() }
            );
        }
        let mut bufs: Vec<_> =
            (0..16).map(|_| unsafe { ctx.alloc_pinned_with_flags::<u8>(256 << 20, 0) }.unwrap()).collect();
        let (rate, copy) = with_copies(&ctx, true, || pread_all(&file, &mut bufs, total, 4 << 20));
        println!("pread into pinned, 16 threads, copies running: {rate:.1} GB/s (copies {copy:.1} GB/s)");
        return;
    }
    let file = std::fs::File::open(path).unwrap();
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let total = (gib << 30).min((map.len() >> 30) << 30);
    let base = map.as_ptr() as usize;
    let ptrs = |bytes: usize| (0..total / bytes).map(|i| base + i * bytes).collect::<Vec<_>>();
    println!("probe over {} GiB of {path}", total >> 30);
    // 1. lock then unlock, no copies.
    for (mib, threads) in
        [(256, 1), (256, 2), (256, 4), (256, 8), (256, 16), (64, 4), (64, 8), (1024, 4), (1024, 8), (1024, 16)]
    {
        let bytes = mib << 20;
        let p = ptrs(bytes);
        let lock = lock_all(&ctx, &p, bytes, threads);
        let unlock1 = unlock_all(&ctx, &p[..p.len() / 2], bytes, 1);
        let unlockn = unlock_all(&ctx, &p[p.len() / 2..], bytes, threads);
        println!(
            "lock {mib} MiB regions, {threads} threads: lock {lock:.1} GB/s; unlock 1 thread {unlock1:.1} GB/s, {threads} threads {unlockn:.1} GB/s"
        );
    }
    // 2. lock with copies running.
    for threads in [4, 8, 16] {
        let bytes = 256 << 20;
        let p = ptrs(bytes);
        let (lock, copy) = with_copies(&ctx, true, || lock_all(&ctx, &p, bytes, threads));
        let (unlock, copy2) = with_copies(&ctx, true, || unlock_all(&ctx, &p, bytes, 1));
        println!(
            "with copies: lock 256 MiB, {threads} threads: {lock:.1} GB/s (copies {copy:.1} GB/s); unlock 1 thread {unlock:.1} GB/s (copies {copy2:.1} GB/s)"
        );
    }
    // 3. locking while another thread unlocks.
    {
        let bytes = 256 << 20;
        let p = ptrs(bytes);
        let half = p.len() / 2;
        lock_all(&ctx, &p[..half], bytes, 8);
        let t = Instant::now();
        let (lock, unlock) = std::thread::scope(|s| {
            let u = s.spawn(|| unlock_all(&ctx, &p[..half], bytes, 1));
            let l = lock_all(&ctx, &p[half..], bytes, 4);
            (l, u.join().unwrap())
        });
        let wall = t.elapsed().as_secs_f64();
        unlock_all(&ctx, &p[half..], bytes, 4);
        println!(
            "lock 4 threads while 1 unlocks: lock {lock:.1} GB/s, unlock {unlock:.1} GB/s, both halves {:.2} s",
            wall
        );
    }
    // 4. pread into pinned buffers of 256 MiB, by threads and piece, with and without copies.
    for (threads, piece_mib, copies) in [
        (4, 4, false),
        (8, 4, false),
        (12, 4, false),
        (16, 4, false),
        (8, 1, false),
        (8, 16, false),
        (4, 4, true),
        (8, 4, true),
        (12, 4, true),
        (16, 4, true),
        (8, 16, true),
    ] {
        let mut bufs: Vec<_> =
            (0..threads).map(|_| unsafe { ctx.alloc_pinned_with_flags::<u8>(256 << 20, 0) }.unwrap()).collect();
        let (rate, copy) = with_copies(&ctx, copies, || pread_all(&file, &mut bufs, total, piece_mib << 20));
        println!(
            "pread into pinned, {threads} threads, {piece_mib} MiB pieces{}: {rate:.1} GB/s{}",
            if copies { ", copies running" } else { "" },
            if copies { format!(" (copies {copy:.1} GB/s)") } else { String::new() }
        );
    }
    // 5. Both at once: 4 lockers over the first half, 8 readers over the second half, copies.
    {
        let bytes = 256 << 20;
        let p = ptrs(bytes);
        let half = p.len() / 2;
        let mut bufs: Vec<_> =
            (0..8).map(|_| unsafe { ctx.alloc_pinned_with_flags::<u8>(256 << 20, 0) }.unwrap()).collect();
        let ((lock, read), copy) = with_copies(&ctx, true, || {
            std::thread::scope(|s| {
                let l = s.spawn(|| lock_all(&ctx, &p[..half], bytes, 4));
                let r = pread_all(&file, &mut bufs, total / 2, 4 << 20);
                (l.join().unwrap(), r)
            })
        });
        unlock_all(&ctx, &p[..half], bytes, 4);
        println!(
            "at once, copies running: 4 lockers {lock:.1} GB/s over one half, 8 readers {read:.1} GB/s over the other (copies {copy:.1} GB/s)"
        );
    }
}
