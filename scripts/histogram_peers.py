#!/usr/bin/env python3
"""Times the torch and cupy peers of `host bench`'s histogram feature cases on this GPU.

Writes a JSON file that `host bench --peers FILE` attaches to the feature rows by case key (the
keys of FEATURE_CASES in host/src/bench/histogram_features.rs; a Rust test checks that every one
of them appears below). Run it in the same device call as the bench, on the same GPU:

    python3 scripts/histogram_peers.py --out results/h200-peers.json
    host bench --skip-matmul --skip-suite --peers results/h200-peers.json --json ... --table ...

Method, as the bench's: CUDA events, a warm-up of at least 100 ms of back-to-back calls, then the
median of 20 samples, each the mean of back-to-back calls spanning at least 0.5 ms. Inputs are
drawn as the bench draws them (uniform, or bounded zipf with exponent 1.1) and are large enough
(256 MiB and more) that L2 holds none of them. Every peer computes the same histogram as the
bench's case (bins, ranges, weights), including any index arithmetic a library needs to express
it in one call (channels and segments as offsets into one bincount). cupy runs once with its
default routines and once with CUB (`CUPY_ACCELERATORS=cub`, switched in-process) where a CUB
path exists (`cupy.histogram`). A library that is not installed is reported and skipped.
"""

import argparse
import json
import statistics
import sys
import time

MIN_WARMUP_S = 0.1
MIN_SAMPLE_MS = 0.5
SAMPLES = 20
N = 1 << 26
N_U8 = 1 << 28


def time_calls(fn, event_pair, synchronize):
    """Median ms per call of fn(), timed with a pair of CUDA events around batches of calls."""
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < MIN_WARMUP_S:
        fn()
        calls += 1
        if calls % 16 == 0:
            synchronize()
    synchronize()
    begin, end = event_pair()
    begin.record()
    for _ in range(8):
        fn()
    end.record()
    end.synchronize()
    probe_ms = elapsed(begin, end) / 8
    batch = max(1, min(1000, int(-(-MIN_SAMPLE_MS // max(probe_ms, 1e-6)))))
    samples = []
    for _ in range(SAMPLES):
        begin, end = event_pair()
        begin.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        samples.append(elapsed(begin, end) / batch)
    return statistics.median(samples)


def elapsed(begin, end):
    try:
        return begin.elapsed_time(end)  # torch
    except AttributeError:
        import cupy

        return cupy.cuda.get_elapsed_time(begin, end)


def record(results, notes, key, name, measure):
    """Adds peer `name`'s median to case `key`; a peer that fails is a note, not the end of the run."""
    try:
        results.setdefault(key, []).append({"name": name, "ms": measure()})
    except Exception as e:  # noqa: BLE001
        notes.append(f"{key}: {name} failed: {type(e).__name__}: {e}")


def zipf_ranks(rng, n, bins):
    """n draws of a zipf distribution (exponent 1.1) over 1..=bins, shifted to 0..bins."""
    import numpy as np

    p = np.arange(1, bins + 1, dtype=np.float64) ** -1.1
    p /= p.sum()
    return rng.choice(bins, size=n, p=p).astype(np.int32)


def torch_peers(results, notes):
    try:
        import torch
    except ImportError as e:
        notes.append(f"torch not available: {e}")
        return None
    import numpy as np

    dev = torch.device("cuda")
    ev = lambda: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    sync = torch.cuda.synchronize
    add = lambda key, name, fn: record(results, notes, key, name, lambda: time_calls(fn, ev, sync))
    g = torch.Generator(device=dev)
    g.manual_seed(22)

    u8 = torch.randint(0, 256, (N_U8,), dtype=torch.uint8, device=dev, generator=g)
    add("u8-256-2^28", "torch.bincount", lambda: torch.bincount(u8, minlength=256))
    w28 = torch.rand(N_U8, device=dev, generator=g) * 2 - 1
    add("weights-u8-256-2^28", "torch.bincount(weights=)", lambda: torch.bincount(u8, weights=w28, minlength=256))
    del w28
    offsets4 = torch.tensor([0, 256, 512, 768], device=dev, dtype=torch.int64)
    pixels = u8.view(-1, 4)
    add("rgba-u8-2^28", "torch.bincount(pixel + 256 * channel)",
        lambda: torch.bincount((pixels.to(torch.int64) + offsets4).view(-1), minlength=1024))
    del u8, pixels

    i256 = torch.randint(0, 256, (N,), dtype=torch.int32, device=dev, generator=g)
    add("i32-256", "torch.bincount", lambda: torch.bincount(i256, minlength=256))
    w = torch.rand(N, device=dev, generator=g) * 2 - 1
    add("weights-i32-256", "torch.bincount(weights=)", lambda: torch.bincount(i256, weights=w, minlength=256))
    seg = torch.arange(N, device=dev, dtype=torch.int64) // 16384
    add("segments-4096x16384-256", "torch.bincount(segment * 256 + value)",
        lambda: torch.bincount(seg * 256 + i256, minlength=4096 * 256))
    del seg
    i8192 = torch.randint(0, 8192, (N,), dtype=torch.int32, device=dev, generator=g)
    add("weights-i32-8192", "torch.bincount(weights=)", lambda: torch.bincount(i8192, weights=w, minlength=8192))
    del i8192

    f256 = torch.rand(N, device=dev, generator=g) * 256
    add("f32-256", "torch.histc", lambda: torch.histc(f256, bins=256, min=0, max=256))
    edges = torch.sort(torch.rand(255, device=dev, generator=g) * 256).values
    full = torch.cat([torch.zeros(1, device=dev), edges, torch.full((1,), 256.0, device=dev)])
    # numpy's rule for values inside [edges[0], edges[-1]]: the last edge at or below v.
    add("edges-f32-256", "torch.bincount(torch.bucketize(x, edges))",
        lambda: torch.bincount(torch.bucketize(f256, full[1:-1], right=True), minlength=256))
    f16k = torch.rand(N, device=dev, generator=g) * 16384
    add("f32-16384", "torch.histc", lambda: torch.histc(f16k, bins=16384, min=0, max=16384))
    del f256, f16k

    i64k = torch.randint(0, 65536, (N,), dtype=torch.int32, device=dev, generator=g)
    add("packed-65536", "torch.bincount", lambda: torch.bincount(i64k, minlength=65536))
    z = torch.from_numpy(zipf_ranks(np.random.default_rng(22), N, 65536)).to(dev)
    add("packed-65536-zipf", "torch.bincount", lambda: torch.bincount(z, minlength=65536))
    i128k = torch.randint(0, 131072, (N,), dtype=torch.int32, device=dev, generator=g)
    add("packed-131072", "torch.bincount", lambda: torch.bincount(i128k, minlength=131072))
    del i64k, z, i128k

    x = torch.rand(N, device=dev, generator=g) * 2 - 1
    y = torch.rand(N, device=dev, generator=g) * 2 - 1

    def hist2d():
        inside = (x >= -1) & (x <= 1) & (y >= -1) & (y <= 1)
        ix = ((x + 1) * 128).to(torch.int64).clamp_(0, 255)
        iy = ((y + 1) * 128).to(torch.int64).clamp_(0, 255)
        return torch.bincount((ix * 256 + iy)[inside], minlength=65536)

    add("2d-256x256", "torch: bins by arithmetic, then torch.bincount", hist2d)
    return torch.__version__


def cupy_peers(results, notes):
    try:
        import cupy
        from cupy._core import _accelerator
    except ImportError as e:
        notes.append(f"cupy not available: {e}")
        return None
    import numpy as np

    ev = lambda: (cupy.cuda.Event(), cupy.cuda.Event())
    sync = cupy.cuda.Device().synchronize
    default = list(_accelerator.get_routine_accelerators())
    # Routine accelerators that exist under each label: the default routines, then CUB alone.
    modes = [("cupy.histogram", []), ("cupy.histogram (CUB)", ["cub"])]

    def add(key, name, fn):
        record(results, notes, key, name, lambda: time_calls(fn, ev, sync))

    def both(key, fn, name="cupy.histogram"):
        for label, accel in modes:
            _accelerator.set_routine_accelerators(accel)
            add(key, label.replace("cupy.histogram", name), fn)
        _accelerator.set_routine_accelerators(default)

    rs = cupy.random.RandomState(22)
    u8 = rs.randint(0, 256, size=N_U8, dtype=cupy.uint8)
    both("u8-256-2^28", lambda: cupy.histogram(u8, bins=256, range=(0, 256)))
    w28 = rs.uniform(-1, 1, size=N_U8, dtype=cupy.float32)
    both("weights-u8-256-2^28", lambda: cupy.histogram(u8, bins=256, range=(0, 256), weights=w28))
    del w28
    pixels = u8.reshape(-1, 4)
    both("rgba-u8-2^28", lambda: [cupy.histogram(pixels[:, c], bins=256, range=(0, 256)) for c in range(4)],
         "4 x cupy.histogram")
    offsets4 = cupy.array([0, 256, 512, 768], dtype=cupy.int32)
    add("rgba-u8-2^28", "cupy.bincount(pixel + 256 * channel)",
        lambda: cupy.bincount((pixels.astype(cupy.int32) + offsets4).ravel(), minlength=1024))
    del u8, pixels

    i256 = rs.randint(0, 256, size=N, dtype=cupy.int32)
    both("i32-256", lambda: cupy.histogram(i256, bins=256, range=(0, 256)))
    w = rs.uniform(-1, 1, size=N, dtype=cupy.float32)
    both("weights-i32-256", lambda: cupy.histogram(i256, bins=256, range=(0, 256), weights=w))
    seg = cupy.arange(N, dtype=cupy.int32) // 16384
    add("segments-4096x16384-256", "cupy.bincount(segment * 256 + value)",
        lambda: cupy.bincount(seg * 256 + i256, minlength=4096 * 256))
    del seg
    i8192 = rs.randint(0, 8192, size=N, dtype=cupy.int32)
    both("weights-i32-8192", lambda: cupy.histogram(i8192, bins=8192, range=(0, 8192), weights=w))
    del i8192

    f256 = rs.uniform(0, 256, size=N, dtype=cupy.float32)
    both("f32-256", lambda: cupy.histogram(f256, bins=256, range=(0, 256)))
    inner = cupy.sort(rs.uniform(0, 256, size=255, dtype=cupy.float32))
    edges = cupy.concatenate([cupy.zeros(1, dtype=cupy.float32), inner, cupy.full(1, 256, dtype=cupy.float32)])
    both("edges-f32-256", lambda: cupy.histogram(f256, bins=edges))
    f16k = rs.uniform(0, 16384, size=N, dtype=cupy.float32)
    both("f32-16384", lambda: cupy.histogram(f16k, bins=16384, range=(0, 16384)))
    del f256, f16k

    i64k = rs.randint(0, 65536, size=N, dtype=cupy.int32)
    both("packed-65536", lambda: cupy.histogram(i64k, bins=65536, range=(0, 65536)))
    z = cupy.asarray(zipf_ranks(np.random.default_rng(22), N, 65536))
    both("packed-65536-zipf", lambda: cupy.histogram(z, bins=65536, range=(0, 65536)))
    i128k = rs.randint(0, 131072, size=N, dtype=cupy.int32)
    both("packed-131072", lambda: cupy.histogram(i128k, bins=131072, range=(0, 131072)))
    del i64k, z, i128k

    x = rs.uniform(-1, 1, size=N, dtype=cupy.float32)
    y = rs.uniform(-1, 1, size=N, dtype=cupy.float32)
    add("2d-256x256", "cupy.histogram2d", lambda: cupy.histogram2d(x, y, bins=256, range=[[-1, 1], [-1, 1]]))
    return cupy.__version__


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write (for host bench --peers)")
    args = parser.parse_args()
    results, notes, versions = {}, [], {}
    device = "unknown"
    try:
        import torch

        device = torch.cuda.get_device_name()
        versions["cuda (torch)"] = str(torch.version.cuda)
    except Exception:  # noqa: BLE001 - torch absent or no GPU: the device name comes from cupy
        try:
            import cupy

            device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception as e:  # noqa: BLE001
            notes.append(f"no device name: {e}")
    for name, peers in [("torch", torch_peers), ("cupy", cupy_peers)]:
        try:
            version = peers(results, notes)
        except Exception as e:  # noqa: BLE001 - one library failing leaves the other's times
            notes.append(f"{name} failed: {type(e).__name__}: {e}")
            version = None
        if version:
            versions[name] = version
    # The bench's f64-sums row of 8,192 weighted bins computes what "weights-i32-8192" does: the
    # same peers.
    if "weights-i32-8192" in results:
        results["weights-i32-8192-f64"] = list(results["weights-i32-8192"])
    # And the bench's one-set and warp-private rows of 4,096 segments.
    if "segments-4096x16384-256" in results:
        results["segments-4096x16384-256-single"] = list(results["segments-4096x16384-256"])
        results["segments-4096x16384-256-warp"] = list(results["segments-4096x16384-256"])
    # And the bench's two-counters-per-atomic 2-D row.
    if "2d-256x256" in results:
        results["2d-256x256-paired-flush"] = list(results["2d-256x256"])
    report = {"device": device, "versions": versions, "cases": results, "notes": notes}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    for key, peers in results.items():
        print(f"{key}: " + "; ".join(f"{p['name']} {p['ms']:.3f} ms" for p in peers))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
