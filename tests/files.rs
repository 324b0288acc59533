//! The user's data on the GPU: `.npy` matrices multiplied through the library and checked against
//! the float64 reference, and histograms of files streamed in several chunks (a ragged last one)
//! equal to the CPU's exactly, for every tier.

use hopper_kernels::histogram::stream::{self, ReadMode, StreamOptions};
use hopper_kernels::histogram::{self, HistogramLimits, HistogramTier, InputType, PlanRequest, ValuesBuf};
use hopper_kernels::io::{self, DataFile, ElementType, Matrix};
use hopper_kernels::reference::{
    MatmulReference, ValueDistribution, histogram_cpu, histogram_input, histogram_input_of, random_matrix,
};
use rand::Rng;
use std::path::Path;
use support::{fresh_rng, gpu};

/// Writes `values` as a raw little-endian i32 file.
fn write_raw(path: &Path, values: &[i32]) {
    std::fs::write(path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn npy_matrices_multiply_within_the_float64_reference_bound_and_round_trip_c() {
    let (gpu, mut rng) = (gpu(), fresh_rng("npy matmul"));
    let dir = tempfile::tempdir().unwrap();
    for (m, k, n) in [(300, 257, 129), (1, 1000, 3), (1024, 1024, 1024)] {
        let (a_path, b_path, c_path) = (dir.path().join("a.npy"), dir.path().join("b.npy"), dir.path().join("c.npy"));
        io::write_matrix(&a_path, &Matrix::new(m, k, random_matrix(&mut rng, m * k)).unwrap()).unwrap();
        io::write_matrix(&b_path, &Matrix::new(k, n, random_matrix(&mut rng, k * n)).unwrap()).unwrap();
        let (a, b) = (io::read_matrix(&a_path).unwrap(), io::read_matrix(&b_path).unwrap());
        let c = hopper_kernels::matmul(&gpu, &a, &b).unwrap();
        let reference = MatmulReference::new(&a.data, &b.data, m, k, n);
        let error = reference.max_error(&c.data);
        assert!(error <= reference.tolerance(), "{m}x{k}x{n}: error {error:e} above {:e}", reference.tolerance());
        io::write_matrix(&c_path, &c).unwrap();
        assert_eq!(io::read_matrix(&c_path).unwrap(), c);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn mismatched_matrices_are_refused_with_both_shapes() {
    let gpu = gpu();
    let a = Matrix::new(2, 3, vec![1.0; 6]).unwrap();
    let err = hopper_kernels::matmul(&gpu, &a, &a).unwrap_err().to_string();
    assert!(err.contains("A is 2x3 and B is 2x3"), "{err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_histogram_of_a_file_of_several_chunks_equals_the_cpu_for_every_tier() {
    let (gpu, mut rng) = (gpu(), fresh_rng("streamed histogram"));
    let dir = tempfile::tempdir().unwrap();
    let capacity = HistogramLimits::of(&gpu).unwrap().block_capacity() as usize;
    let chunk_bytes = 1 << 20;
    // Five full chunks and a ragged sixth whose length is not a multiple of the 4-value loads.
    let n = 5 * (chunk_bytes / 4) + 4_099;
    // The planner's tiers (shared, packed, sorted) and the forced ones (cluster, bucketed).
    for (bins, tier, forced) in [
        (256, HistogramTier::Shared, false),
        (2 * capacity, HistogramTier::Packed, false),
        // Two passes of 8-bit counters with their carry plane over each chunk (asked for).
        (300_000, HistogramTier::Packed, true),
        (capacity + 1, HistogramTier::Cluster, true),
        (400_000, HistogramTier::Sorted, false),
        (400_000, HistogramTier::Bucketed, true),
    ] {
        let mut values = histogram_input(rng.random(), n, bins, ValueDistribution::Uniform);
        for v in values.iter_mut().step_by(97) {
            *v = if rng.random() { -rng.random_range(1..=i32::MAX) } else { rng.random_range(bins as i32..=i32::MAX) };
        }
        let path = dir.path().join("values.bin");
        write_raw(&path, &values);
        let file = DataFile::open(&path, Some(ElementType::I32)).unwrap();
        let request = PlanRequest { tier: forced.then_some(tier), ..PlanRequest::default() };
        let plan = histogram::plan_with(&gpu, bins, request).unwrap();
        assert_eq!(plan.tier(), tier);
        for (streams, read) in [
            (2, ReadMode::Pinned),
            (3, ReadMode::Pinned),
            (2, ReadMode::Mapped),
            (3, ReadMode::Mapped),
            (2, ReadMode::Copy),
            (3, ReadMode::Copy),
            (2, ReadMode::Mixed),
            (3, ReadMode::Mixed),
        ] {
            let options = StreamOptions {
                chunk_bytes: chunk_bytes as u64,
                streams,
                // One thread and several: chunks then reach the counting out of order.
                lockers: streams - 1,
                readers: streams - 1,
                // Pieces of a quarter chunk, locked and read out of order too.
                piece_bytes: chunk_bytes as u64 / 4,
                ahead: streams + 1,
                read,
            };
            let report = stream::histogram_file(
                &gpu,
                &plan,
                &file,
                hopper_kernels::histogram::Binning::integers(plan.bins()),
                options,
            )
            .unwrap();
            assert_eq!(report.chunks, 6);
            let want: Vec<u64> = histogram_cpu(&values, bins).into_iter().map(u64::from).collect();
            if let Some(i) = report.counts.iter().zip(&want).position(|(g, w)| g != w) {
                panic!(
                    "{plan}, {streams} streams, {read:?}: bin {i} holds {} instead of {}",
                    report.counts[i], want[i]
                );
            }
            assert_eq!(
                stream::histogram_file_cpu(&file, &hopper_kernels::histogram::Binning::integers(bins as u32)).unwrap(),
                want
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_histogram_with_readers_chunks_ahead_of_the_counting_equals_the_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("readers ahead"));
    let dir = tempfile::tempdir().unwrap();
    // 64 chunks of 64 KiB and a ragged last one, in pieces of 4 KiB: 16 readers hold pieces of
    // several chunks at once, so their copies wait for the counts of the chunks before them in
    // their stream's buffer.
    let chunk_bytes = 64u64 << 10;
    let n = 64 * (chunk_bytes as usize / 4) + 1_001;
    let values = histogram_input(rng.random(), n, 512, ValueDistribution::Uniform);
    let path = dir.path().join("values.bin");
    write_raw(&path, &values);
    let file = DataFile::open(&path, Some(ElementType::I32)).unwrap();
    let plan = histogram::plan_with(&gpu, 512, PlanRequest::default()).unwrap();
    let want: Vec<u64> = histogram_cpu(&values, 512).into_iter().map(u64::from).collect();
    for (streams, read) in [(2, ReadMode::Copy), (3, ReadMode::Copy), (2, ReadMode::Pinned)] {
        let options =
            StreamOptions { chunk_bytes, streams, lockers: 2, readers: 16, piece_bytes: 4 << 10, ahead: 4, read };
        let report = stream::histogram_file(
            &gpu,
            &plan,
            &file,
            hopper_kernels::histogram::Binning::integers(plan.bins()),
            options,
        )
        .unwrap();
        assert_eq!(report.chunks, 65, "{read:?}");
        assert_eq!(report.counts, want, "{streams} streams, {read:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_histogram_of_a_npy_file_equals_the_library_histogram_of_its_values() {
    let (gpu, mut rng) = (gpu(), fresh_rng("npy histogram"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("values.npy");
    let values = histogram_input(rng.random(), 1_000_003, 1000, ValueDistribution::Zipf);
    io::write_npy(&path, &[1000, 1000], &values[..1_000_000]).unwrap();
    let counts = hopper_kernels::histogram_file(&gpu, &path, None, 1000).unwrap();
    let direct = hopper_kernels::histogram(&gpu, &values[..1_000_000], 1000).unwrap();
    assert_eq!(counts, direct.into_iter().map(u64::from).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_histogram_of_an_empty_file_is_all_zero() {
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.bin");
    write_raw(&path, &[]);
    assert_eq!(hopper_kernels::histogram_file(&gpu, &path, Some(ElementType::I32), 7).unwrap(), vec![0u64; 7]);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn pinned_host_to_device_bandwidth_is_measured_positive() {
    let gpu = gpu();
    let gb_per_s = stream::pinned_h2d_gb_per_s(&gpu, 64 << 20, 4).unwrap();
    assert!(gb_per_s > 1.0, "{gb_per_s} GB/s");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_npy_file_of_several_mapped_chunks_after_its_header_equals_the_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("mapped npy"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("values.npy");
    // The header puts the data off its page: the first chunk is shorter, the others page-aligned.
    let values = histogram_input(rng.random(), 3 * (1 << 18) + 1_001, 4096, ValueDistribution::Normal);
    io::write_npy(&path, &[values.len() as u64], &values).unwrap();
    let file = DataFile::open(&path, None).unwrap();
    assert_ne!(file.data_offset() % stream::PAGE_BYTES, 0);
    let plan = histogram::plan_with(&gpu, 4096, PlanRequest::default()).unwrap();
    let want: Vec<u64> = histogram_cpu(&values, 4096).into_iter().map(u64::from).collect();
    // Copied pieces start off 16-byte boundaries of the mapping (the header is 128 bytes, the
    // chunks not shortened): unaligned loads.
    for read in [ReadMode::Mapped, ReadMode::Copy, ReadMode::Mixed] {
        let options = StreamOptions { chunk_bytes: 1 << 20, piece_bytes: 256 << 10, read, ..StreamOptions::default() };
        let report = stream::histogram_file(
            &gpu,
            &plan,
            &file,
            hopper_kernels::histogram::Binning::integers(plan.bins()),
            options,
        )
        .unwrap();
        assert_eq!(report.chunks, 4, "{read:?}");
        assert_eq!(report.counts, want, "{read:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_u8_u16_and_f32_files_equal_the_cpu_in_the_shared_and_bucketed_tiers() {
    let (gpu, mut rng) = (gpu(), fresh_rng("typed files"));
    let dir = tempfile::tempdir().unwrap();
    let chunk_bytes = 1u64 << 20;
    for (element, bins, range) in [
        (InputType::U8, 256, None),
        (InputType::U16, 65_536, None),
        (InputType::U16, 1000, None),
        (InputType::F32, 300, Some((-1.0f32, 2.0f32))),
        (InputType::F32, 1 << 18, Some((0.0, 1.0))),
    ] {
        let n = 5 * (chunk_bytes / element.size() as u64) as usize + 4_099;
        let values = histogram_input_of(rng.random(), n, bins, ValueDistribution::Zipf, element, range);
        let path = dir.path().join("values.npy");
        match &values {
            ValuesBuf::U8(v) => io::write_npy(&path, &[n as u64], v).unwrap(),
            ValuesBuf::U16(v) => io::write_npy(&path, &[n as u64], v).unwrap(),
            ValuesBuf::I32(v) => io::write_npy(&path, &[n as u64], v).unwrap(),
            ValuesBuf::F32(v) => io::write_npy(&path, &[n as u64], v).unwrap(),
        }
        let file = DataFile::open(&path, None).unwrap();
        assert_eq!(file.element().input_type(), element, "the .npy dtype picks the type");
        let binning = histogram::binning_for(element, bins, range).unwrap();
        let want: Vec<u64> =
            histogram::histogram_cpu_of(values.as_values(), &binning).into_iter().map(u64::from).collect();
        assert_eq!(stream::histogram_file_cpu(&file, &binning).unwrap(), want);
        let request = PlanRequest { element: Some(element), ..PlanRequest::default() };
        let plan = histogram::plan_with(&gpu, bins, request).unwrap();
        for read in [ReadMode::Pinned, ReadMode::Mapped, ReadMode::Copy, ReadMode::Mixed] {
            let options = StreamOptions {
                chunk_bytes,
                streams: 2,
                lockers: 2,
                readers: 2,
                piece_bytes: stream::DEFAULT_PIECE_BYTES,
                ahead: 4,
                read,
            };
            let report = stream::histogram_file(&gpu, &plan, &file, binning, options).unwrap();
            assert_eq!(report.chunks, 6, "{plan}");
            if let Some(i) = report.counts.iter().zip(&want).position(|(g, w)| g != w) {
                panic!(
                    "{plan}, {} values, {read:?}: bin {i} holds {} instead of {}",
                    element.name(),
                    report.counts[i],
                    want[i]
                );
            }
        }
        assert_eq!(hopper_kernels::histogram_file_over(&gpu, &path, None, bins, range).unwrap(), want);
    }
}
