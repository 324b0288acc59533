//! Every histogram tier against an exact CPU histogram: at each tier's capacity boundary, with
//! out-of-range values, empty and ragged inputs, skewed inputs, and a 2^28-value input; for every
//! input type (`u8`, `u16`, `i32`, `f32` over a range, with its edge values, NaN and infinities).

use hopper_kernels::histogram::{
    self, Binning, DeviceHistogram, HistogramLimits, HistogramTier, InputType, PlanRequest, Values, ValuesBuf,
    binning_for, histogram_cpu_of,
};
use hopper_kernels::reference::{ValueDistribution, histogram_cpu, histogram_input, histogram_input_of};
use hopper_kernels::{Error, Gpu};
use rand::Rng;
use support::{fresh_rng, gpu};

/// Asserts that the planned histogram (`forced` tier and `cluster` size, or the planner's) of
/// `values` equals the CPU's, naming the first bin that differs. Returns the tier that ran.
fn assert_matches_cpu(
    gpu: &Gpu,
    values: &[i32],
    bins: usize,
    forced: Option<HistogramTier>,
    cluster: Option<u32>,
) -> HistogramTier {
    let plan =
        histogram::plan_with(gpu, bins, PlanRequest { tier: forced, cluster_size: cluster, ..PlanRequest::default() })
            .unwrap();
    let mut h = DeviceHistogram::upload(gpu, values, bins).unwrap();
    let got = histogram::run(gpu, &plan, &mut h).unwrap();
    let want = histogram_cpu(values, bins);
    if let Some(difference) = histogram::first_count_difference(&got, &want) {
        panic!("{plan} on {} values: {difference}", values.len());
    }
    plan.tier()
}

/// Uniform values over `bins`, with about 1% below 0 and 1% at or above `bins`.
fn values_with_outliers(rng: &mut impl Rng, n: usize, bins: usize) -> Vec<i32> {
    let mut values = histogram_input(rng.random(), n, bins, ValueDistribution::Uniform);
    for v in values.iter_mut().step_by(50) {
        *v = if rng.random() {
            -rng.random_range(1..=i32::MAX)
        } else {
            rng.random_range(bins.min(i32::MAX as usize) as i32..=i32::MAX)
        };
    }
    values
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_tier_matches_cpu_at_one_block_capacity_and_one_more() {
    let (gpu, mut rng) = (gpu(), fresh_rng("block capacity"));
    let capacity = HistogramLimits::of(&gpu).unwrap().block_capacity() as usize;
    let values = values_with_outliers(&mut rng, (1 << 22) + 5, 4 * capacity);
    assert_eq!(assert_matches_cpu(&gpu, &values, capacity, None, None), HistogramTier::Shared);
    // Past one block's u32 counters: 16-bit packed counters, then 8-bit ones with their carry
    // plane, then 6-bit ones with their carry table, then 4-bit ones with theirs in one pass (the
    // planner's last packed bin count), then in two; then the sorted tier.
    let limits = HistogramLimits::of(&gpu).unwrap();
    use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_plane_capacity, carry_table_capacity};
    let plane = carry_plane_capacity(limits.block_capacity()) as usize;
    let six = carry_table_capacity(limits.block_capacity(), SIX_BIT_PACKING) as usize;
    let four = carry_table_capacity(limits.block_capacity(), FOUR_BIT_PACKING) as usize;
    let auto = histogram::packed_auto_capacity(&limits) as usize;
    assert!(six < auto && auto == four && auto < histogram::packed_capacity(&limits) as usize);
    for bins in [capacity + 1, 2 * capacity, 2 * capacity + 1, plane, plane + 1, six, six + 1, auto] {
        assert_eq!(assert_matches_cpu(&gpu, &values, bins, None, None), HistogramTier::Packed, "{bins} bins");
    }
    assert_eq!(assert_matches_cpu(&gpu, &values, auto + 1, None, None), HistogramTier::Sorted);
    for bins in [four + 1, 4 * capacity, histogram::packed_capacity(&limits) as usize] {
        assert_matches_cpu(&gpu, &values, bins, Some(HistogramTier::Packed), None);
    }
    assert!(
        histogram::plan(&gpu, histogram::packed_capacity(&limits) as usize + 1, Some(HistogramTier::Packed)).is_err()
    );
    for tier in HistogramTier::ALL {
        assert_matches_cpu(&gpu, &values, capacity, Some(tier), None);
    }
    assert_matches_cpu(&gpu, &values, capacity + 1, Some(HistogramTier::Sorted), None);
    assert_matches_cpu(&gpu, &values, capacity + 1, Some(HistogramTier::Global), None);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_tier_matches_cpu_at_full_cluster_capacity_and_one_more() {
    let (gpu, mut rng) = (gpu(), fresh_rng("cluster capacity"));
    let limits = HistogramLimits::of(&gpu).unwrap();
    let full = limits.cluster_capacity() as usize;
    let values = values_with_outliers(&mut rng, (1 << 22) + 7, full + 1);
    assert_matches_cpu(&gpu, &values, full, Some(HistogramTier::Cluster), None);
    assert!(histogram::plan(&gpu, full + 1, Some(HistogramTier::Cluster)).is_err());
    assert_eq!(assert_matches_cpu(&gpu, &values, full + 1, None, None), HistogramTier::Sorted);
    assert_matches_cpu(&gpu, &values, full, Some(HistogramTier::Global), None);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cluster_tier_matches_cpu_for_every_cluster_size_the_device_allows() {
    let (gpu, mut rng) = (gpu(), fresh_rng("cluster sizes"));
    let limits = HistogramLimits::of(&gpu).unwrap();
    let bins = 65_536usize.min(limits.block_capacity() as usize);
    let values = values_with_outliers(&mut rng, 1 << 20, bins);
    for size in 1..=limits.max_cluster_size {
        assert_matches_cpu(&gpu, &values, bins, Some(HistogramTier::Cluster), Some(size));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn negatives_and_values_past_the_last_bin_count_in_the_edge_bins() {
    let (gpu, mut rng) = (gpu(), fresh_rng("outliers"));
    for bins in [1, 2, 256, 100_000, 2_000_000] {
        let values = values_with_outliers(&mut rng, 1 << 18, bins);
        for tier in HistogramTier::ALL {
            if histogram::plan(&gpu, bins, Some(tier)).is_ok() {
                assert_matches_cpu(&gpu, &values, bins, Some(tier), None);
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn empty_input_gives_all_zero_counts_without_error() {
    let gpu = gpu();
    for bins in [1, 256, 100_000, 2_000_000] {
        let plan = histogram::plan(&gpu, bins, None).unwrap();
        let mut h = DeviceHistogram::upload(&gpu, &[], bins).unwrap();
        assert_eq!(histogram::run(&gpu, &plan, &mut h).unwrap(), vec![0; bins], "{plan}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn inputs_that_are_not_a_multiple_of_the_vector_or_block_size_count_every_value() {
    let (gpu, mut rng) = (gpu(), fresh_rng("ragged n"));
    for n in [1, 2, 3, 5, 511, 513, 4097, 1_000_003] {
        let values = values_with_outliers(&mut rng, n, 300);
        for tier in HistogramTier::ALL {
            assert_matches_cpu(&gpu, &values, 300, Some(tier), None);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn skewed_inputs_with_every_value_in_one_bin_match_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("skewed"));
    for bins in [256, 65_536, 1 << 20] {
        let values = histogram_input(rng.random(), 1 << 22, bins, ValueDistribution::Constant);
        for tier in HistogramTier::ALL {
            if histogram::plan(&gpu, bins, Some(tier)).is_ok() {
                assert_matches_cpu(&gpu, &values, bins, Some(tier), None);
            }
        }
        let zipf = histogram_input(rng.random(), 1 << 22, bins, ValueDistribution::Zipf);
        assert_matches_cpu(&gpu, &zipf, bins, None, None);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_2_pow_28_value_input_matches_cpu_in_every_tier() {
    let (gpu, mut rng) = (gpu(), fresh_rng("2^28"));
    let values = histogram_input(rng.random(), 1 << 28, 131_072, ValueDistribution::Uniform);
    assert_eq!(assert_matches_cpu(&gpu, &values, 4096, None, None), HistogramTier::Shared);
    assert_matches_cpu(&gpu, &values, 131_071, Some(HistogramTier::Cluster), None);
    assert_eq!(assert_matches_cpu(&gpu, &values, 131_072, None, None), HistogramTier::Packed);
    assert_matches_cpu(&gpu, &values, 131_072, Some(HistogramTier::Sorted), None);
    assert_matches_cpu(&gpu, &values, 131_072, Some(HistogramTier::Bucketed), None);
    assert_matches_cpu(&gpu, &values, 131_072, Some(HistogramTier::Global), None);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn zero_bins_and_forced_tiers_that_cannot_hold_the_bins_are_clear_errors() {
    let gpu = gpu();
    let err = histogram::plan(&gpu, 0, None).unwrap_err();
    assert!(matches!(err, Error::ZeroDimension { name: "bins" }), "{err}");
    let too_many = HistogramLimits::of(&gpu).unwrap().block_capacity() as usize + 1;
    let err = histogram::plan(&gpu, too_many, Some(HistogramTier::Shared)).unwrap_err();
    assert!(err.to_string().contains("shared memory per block"), "{err}");
    assert!(DeviceHistogram::upload(&gpu, &[1, 2, 3], 0).is_err());
}

/// Asserts that the planned histogram of typed `values` equals the CPU's, naming the first bin
/// that differs; returns the tier that ran.
fn assert_typed_matches_cpu(gpu: &Gpu, values: Values<'_>, binning: Binning, request: PlanRequest) -> HistogramTier {
    let plan = histogram::plan_with(gpu, binning.nbins as usize, request).unwrap();
    let mut h = DeviceHistogram::upload_values(gpu, values, binning).unwrap();
    let got = histogram::run(gpu, &plan, &mut h).unwrap();
    let want = histogram_cpu_of(values, &binning);
    if let Some(difference) = histogram::first_count_difference(&got, &want) {
        panic!("{plan} on {} {} values: {difference}", values.len(), values.element().name());
    }
    plan.tier()
}

/// Every tier that has a plan for `bins`, warp aggregation off and on.
fn every_request(gpu: &Gpu, bins: usize) -> Vec<PlanRequest> {
    let mut requests = Vec::new();
    for tier in HistogramTier::ALL {
        if histogram::plan(gpu, bins, Some(tier)).is_ok() {
            for aggregate in [false, true] {
                requests.push(PlanRequest { tier: Some(tier), aggregate: Some(aggregate), ..PlanRequest::default() });
            }
        }
    }
    requests
}

/// f32 values at and around every bin boundary of `binning`, its ends, NaN and infinities.
fn f32_edge_values(binning: &Binning) -> Vec<f32> {
    let mut v = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, f32::MIN_POSITIVE, f32::MAX, f32::MIN];
    let width = (binning.hi as f64 - binning.lo as f64) / binning.nbins as f64;
    for b in 0..=binning.nbins.min(4096) {
        let edge = (binning.lo as f64 + b as f64 * width) as f32;
        for x in [edge, f32::from_bits(edge.to_bits().wrapping_sub(1)), f32::from_bits(edge.to_bits() + 1)] {
            v.push(x);
        }
    }
    for end in [binning.lo, binning.hi] {
        v.push(f32::from_bits(end.to_bits().wrapping_sub(1)));
        v.push(f32::from_bits(end.to_bits() + 1));
        v.push(-end);
    }
    v
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_type_matches_cpu_in_every_tier_for_every_distribution() {
    let (gpu, mut rng) = (gpu(), fresh_rng("typed"));
    for (element, range) in [
        (InputType::U8, None),
        (InputType::U16, None),
        (InputType::I32, None),
        (InputType::F32, Some((-2.5f32, 7.25f32))),
    ] {
        for bins in [1, 7, 256, 4096, 65_536, 1 << 18] {
            if element == InputType::U8 && bins > 256 {
                continue;
            }
            let binning = binning_for(element, bins, range).unwrap();
            for dist in [
                ValueDistribution::Uniform,
                ValueDistribution::Normal,
                ValueDistribution::Constant,
                ValueDistribution::Zipf,
            ] {
                let values = histogram_input_of(rng.random(), (1 << 20) + 3, bins, dist, element, range);
                for request in every_request(&gpu, bins) {
                    assert_typed_matches_cpu(&gpu, values.as_values(), binning, request);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn f32_bin_edges_hi_nan_and_infinities_match_cpu_in_every_tier() {
    let (gpu, mut rng) = (gpu(), fresh_rng("f32 edges"));
    for (bins, lo, hi) in [(1, 0.0, 1.0), (10, -1.0, 1.0), (256, 0.0, 0.3), (4096, -1e6, 3.5e6), (1 << 18, 1e-3, 2e-3)]
    {
        let binning = binning_for(InputType::F32, bins, Some((lo, hi))).unwrap();
        let mut values = f32_edge_values(&binning);
        // Random values over twice the range: about half are left out.
        values.extend((0..100_003).map(|_| lo - (hi - lo) / 2.0 + rng.random::<f32>() * 2.0 * (hi - lo)));
        for request in every_request(&gpu, bins) {
            assert_typed_matches_cpu(&gpu, Values::F32(&values), binning, request);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn typed_inputs_of_ragged_and_zero_length_count_every_value() {
    let (gpu, mut rng) = (gpu(), fresh_rng("typed ragged"));
    for n in [0, 1, 2, 3, 15, 17, 511, 8191, 8193, 100_001] {
        for (element, range) in [(InputType::U8, None), (InputType::U16, None), (InputType::F32, Some((0.0, 1.0)))] {
            let bins = 200;
            let binning = binning_for(element, bins, range).unwrap();
            let values = histogram_input_of(rng.random(), n, bins, ValueDistribution::Uniform, element, range);
            for request in every_request(&gpu, bins) {
                assert_typed_matches_cpu(&gpu, values.as_values(), binning, request);
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn bucketed_tier_matches_cpu_at_its_bucket_widths_and_capacity() {
    let (gpu, mut rng) = (gpu(), fresh_rng("bucketed"));
    let limits = HistogramLimits::of(&gpu).unwrap();
    let capacity = limits.bucketed_capacity() as usize;
    for bins in [(1 << 14) + 1, 1 << 18, (1 << 20) + 1, 1 << 22, capacity] {
        let values = values_with_outliers(&mut rng, (1 << 22) + 9, bins);
        let tier = assert_matches_cpu(&gpu, &values, bins, None, None);
        let planned = if bins as u64 > histogram::packed_auto_capacity(&limits) {
            HistogramTier::Sorted
        } else if bins as u64 > limits.block_capacity() {
            HistogramTier::Packed
        } else {
            HistogramTier::Shared
        };
        assert_eq!(tier, planned, "{bins} bins");
        assert_matches_cpu(&gpu, &values, bins, Some(HistogramTier::Bucketed), None);
    }
    assert_eq!(
        assert_matches_cpu(&gpu, &values_with_outliers(&mut rng, 1000, capacity + 1), capacity + 1, None, None),
        HistogramTier::Global
    );
    for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Normal] {
        let values = histogram_input(rng.random(), (1 << 22) + 1, 1 << 20, dist);
        assert_eq!(assert_matches_cpu(&gpu, &values, 1 << 20, None, None), HistogramTier::Sorted);
        assert_matches_cpu(&gpu, &values, 1 << 20, Some(HistogramTier::Bucketed), None);
    }
}

/// The sorted tier's plan for `bins` with `threads` per block and buckets of `2^bits` bins.
fn sorted_request(threads: Option<u32>, bits: Option<u32>, element: InputType) -> PlanRequest {
    PlanRequest {
        tier: Some(HistogramTier::Sorted),
        threads_per_block: threads,
        bucket_shift: bits,
        element: Some(element),
        ..PlanRequest::default()
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sorted_tier_matches_cpu_for_every_bucket_width_block_size_and_ragged_tile() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sorted"));
    let limits = HistogramLimits::of(&gpu).unwrap();
    // One bucket, a partial last bucket, 256 buckets, and the widest buckets.
    for (bins, bits) in [(300, None), ((1 << 16) + 3, None), (1 << 20, None), (1 << 20, Some(14)), (1 << 23, None)] {
        // Tiles of 512 * 8 i32 values: whole tiles, one value more, and a partial single tile.
        for n in [4096 * 300, 4096 * 300 + 1, 1000, 1] {
            let values = values_with_outliers(&mut rng, n, bins);
            let binning = Binning::integers(bins as u32);
            for threads in [None, Some(32), Some(256)] {
                assert_typed_matches_cpu(
                    &gpu,
                    Values::I32(&values),
                    binning,
                    sorted_request(threads, bits, InputType::I32),
                );
            }
        }
    }
    assert_eq!(limits.bucketed_capacity(), 1 << 23);
    // u8 and u16 tiles hold 16 and 8 values per thread: ragged ends of both.
    for n in [8192 * 3 + 5, 4096 * 3 + 7] {
        let binning = Binning::integers(65_536);
        let u16s = histogram_input_of(rng.random(), n, 65_536, ValueDistribution::Uniform, InputType::U16, None);
        assert_typed_matches_cpu(&gpu, u16s.as_values(), binning, sorted_request(None, None, InputType::U16));
        let binning = Binning::integers(256);
        let u8s = histogram_input_of(rng.random(), n, 256, ValueDistribution::Uniform, InputType::U8, None);
        assert_typed_matches_cpu(&gpu, u8s.as_values(), binning, sorted_request(None, Some(4), InputType::U8));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sorted_tier_counts_constant_zipf_and_all_left_out_inputs_exactly() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sorted skew"));
    for bins in [65_536, 1 << 20] {
        for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Normal] {
            let values = histogram_input(rng.random(), (1 << 22) + 3, bins, dist);
            let binning = Binning::integers(bins as u32);
            assert_typed_matches_cpu(&gpu, Values::I32(&values), binning, sorted_request(None, None, InputType::I32));
        }
        // Every f32 outside the range: nothing kept, every bins-pass block leaves at once.
        let binning = binning_for(InputType::F32, bins, Some((0.0, 1.0))).unwrap();
        let outside: Vec<f32> = (0..100_003).map(|i| if i % 3 == 0 { f32::NAN } else { 2.0 + i as f32 }).collect();
        assert_typed_matches_cpu(&gpu, Values::F32(&outside), binning, sorted_request(None, None, InputType::F32));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn packed_tier_counts_every_type_and_skew_exactly_through_digit_carries() {
    let (gpu, mut rng) = (gpu(), fresh_rng("packed skew"));
    let capacity = HistogramLimits::of(&gpu).unwrap().block_capacity() as usize;
    // 16-bit digits (65,536 bins) and 8-bit digits (131,072): a constant input carries out of its
    // digit every 2^16 or 2^8 adds, zipf's hot bins nearly as often.
    let packed = PlanRequest { tier: Some(HistogramTier::Packed), ..PlanRequest::default() };
    for bins in [65_536, 131_072] {
        assert!(bins > capacity && bins <= 4 * capacity, "{bins} bins do not take packed counters on this device");
        for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Uniform] {
            let values = histogram_input(rng.random(), (1 << 22) + 3, bins, dist);
            let tier = assert_typed_matches_cpu(&gpu, Values::I32(&values), Binning::integers(bins as u32), packed);
            assert_eq!(tier, HistogramTier::Packed, "{bins} bins, {dist:?}");
        }
        for element in [InputType::U16, InputType::F32] {
            let range = (element == InputType::F32).then_some((-1.0, 3.0));
            let values = histogram_input_of(rng.random(), (1 << 21) + 5, bins, ValueDistribution::Zipf, element, range);
            let binning = binning_for(element, bins, range).unwrap();
            let request = PlanRequest { element: Some(element), ..packed };
            assert_eq!(assert_typed_matches_cpu(&gpu, values.as_values(), binning, request), HistogramTier::Packed);
        }
    }
    let f32_edges = binning_for(InputType::F32, 100_000, Some((0.0, 1.0))).unwrap();
    let edges = f32_edge_values(&f32_edges);
    assert_typed_matches_cpu(&gpu, Values::F32(&edges), f32_edges, PlanRequest::default());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn packed_tier_modes_count_constant_zipf_ragged_and_outlying_values_exactly() {
    let (gpu, mut rng) = (gpu(), fresh_rng("packed modes"));
    let limits = HistogramLimits::of(&gpu).unwrap();
    let (capacity, auto) = (limits.block_capacity() as usize, histogram::packed_auto_capacity(&limits) as usize);
    // 16-bit digits; 8-bit digits with the carry plane (131,072 and the plane's last bin count);
    // 6-bit digits with their carry table (one bin more, 262,144, their last one-pass bin
    // count); 4-bit digits with theirs (one bin more, their last one-pass bin count, the
    // planner's last packed count), then in two passes (one bin more, the tier's last). Each with
    // and without warp aggregation.
    use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_plane_capacity, carry_table_capacity};
    let plane = carry_plane_capacity(capacity as u64) as usize;
    let six = carry_table_capacity(capacity as u64, SIX_BIT_PACKING) as usize;
    let one_pass = carry_table_capacity(capacity as u64, FOUR_BIT_PACKING) as usize;
    let last = histogram::packed_capacity(&limits) as usize;
    assert_eq!(auto, one_pass);
    for bins in [2 * capacity, 131_072, plane, plane + 1, 262_144, six, six + 1, one_pass, one_pass + 1, last] {
        for aggregate in [true, false] {
            let request =
                PlanRequest { tier: Some(HistogramTier::Packed), aggregate: Some(aggregate), ..PlanRequest::default() };
            let plan = histogram::plan_with(&gpu, bins, request).unwrap();
            assert_eq!(plan.carry_plane(), bins > 2 * capacity && bins <= plane, "{plan}");
            // 16-, 6- and 4-bit digits run kernels of their own, without the carry plane's code.
            let kernel = match bins {
                b if b <= 2 * capacity => "histogram_packed16_i32",
                b if b <= plane => "histogram_packed_i32",
                b if b <= six => "histogram_packed6_i32",
                _ => "histogram_packed4_i32",
            };
            assert_eq!(plan.kernel(InputType::I32), kernel, "{plan}");
            assert_eq!(plan.packed_passes(), if bins > one_pass { 2 } else { 1 }, "{plan}");
            for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Uniform] {
                // 2^24 constant values: every 8-bit digit carries 2^16 times, the plane's digit
                // 2^12 times.
                let n = if dist == ValueDistribution::Constant { (1 << 24) + 1 } else { (1 << 22) + 3 };
                let values = histogram_input(rng.random(), n, bins, dist);
                assert_typed_matches_cpu(&gpu, Values::I32(&values), Binning::integers(bins as u32), request);
            }
            // The last bin and the first hot together (both clamped edges), ragged lengths.
            for n in [1usize, 31, 33, 4097, 1_000_003] {
                let mut values = values_with_outliers(&mut rng, n, bins);
                for v in values.iter_mut().step_by(3) {
                    *v = bins as i32 - 1;
                }
                assert_matches_cpu(&gpu, &values, bins, Some(HistogramTier::Packed), None);
            }
            for element in [InputType::U16, InputType::F32] {
                if element == InputType::U16 && bins > 65_536 {
                    continue;
                }
                let range = (element == InputType::F32).then_some((-1.0, 3.0));
                let binning = binning_for(element, bins, range).unwrap();
                let typed = PlanRequest { element: Some(element), ..request };
                for dist in [ValueDistribution::Constant, ValueDistribution::Zipf] {
                    let values = histogram_input_of(rng.random(), (1 << 21) + 5, bins, dist, element, range);
                    assert_typed_matches_cpu(&gpu, values.as_values(), binning, typed);
                }
                if element == InputType::F32 {
                    // NaN, infinities, every edge value and its neighbours.
                    let edges = f32_edge_values(&binning);
                    assert_typed_matches_cpu(&gpu, Values::F32(&edges), binning, typed);
                    let mut hot = vec![2.999_f32; (1 << 20) + 7];
                    for (i, v) in hot.iter_mut().enumerate().step_by(5) {
                        *v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3.0, -1.0][i / 5 % 5];
                    }
                    assert_typed_matches_cpu(&gpu, Values::F32(&hot), binning, typed);
                    // Values in the range with a sparse outlier (one in 1,009): most of a warp's
                    // batches of 128 values count every value (the integers' path), about one in
                    // eight leaves one out (the general path).
                    let mut sparse =
                        histogram_input_of(rng.random(), (1 << 21) + 5, bins, ValueDistribution::Zipf, element, range);
                    if let ValuesBuf::F32(v) = &mut sparse {
                        for (i, x) in v.iter_mut().enumerate().skip(17).step_by(1_009) {
                            *x = [f32::NAN, 3.5, -1.5, f32::INFINITY][i % 4];
                        }
                    }
                    assert_typed_matches_cpu(&gpu, sparse.as_values(), binning, typed);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn four_bit_counters_count_merged_warp_adds_of_up_to_32_exactly() {
    // A warp's merged add of up to 32 carries once or twice out of a 4-bit digit: constant
    // inputs merge all 32 lanes, zipf and normal ones a few, over few and many bins, every type.
    let (gpu, mut rng) = (gpu(), fresh_rng("4-bit counters"));
    for bins in [8usize, 4_096, 131_072, 262_144] {
        for aggregate in [true, false] {
            let request = PlanRequest {
                tier: Some(HistogramTier::Packed),
                counter_bits: Some(4),
                aggregate: Some(aggregate),
                ..PlanRequest::default()
            };
            let plan = histogram::plan_with(&gpu, bins, request).unwrap();
            assert_eq!(plan.kernel(InputType::I32), "histogram_packed4_i32", "{plan}");
            for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Normal] {
                let values = histogram_input(rng.random(), (1 << 22) + 17, bins, dist);
                assert_typed_matches_cpu(&gpu, Values::I32(&values), Binning::integers(bins as u32), request);
            }
            for element in [InputType::U8, InputType::U16, InputType::F32] {
                if (element == InputType::U8 && bins > 256) || (element == InputType::U16 && bins > 65_536) {
                    continue;
                }
                let range = (element == InputType::F32).then_some((0.0, 1.0));
                let binning = binning_for(element, bins, range).unwrap();
                let typed = PlanRequest { element: Some(element), ..request };
                for dist in [ValueDistribution::Constant, ValueDistribution::Zipf] {
                    let values = histogram_input_of(rng.random(), (1 << 21) + 3, bins, dist, element, range);
                    assert_typed_matches_cpu(&gpu, values.as_values(), binning, typed);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_2_pow_28_value_u8_input_matches_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("u8 2^28"));
    let values = histogram_input_of(rng.random(), 1 << 28, 256, ValueDistribution::Uniform, InputType::U8, None);
    let binning = binning_for(InputType::U8, 256, None).unwrap();
    assert_eq!(
        assert_typed_matches_cpu(&gpu, values.as_values(), binning, PlanRequest::default()),
        HistogramTier::Shared
    );
    let f32s = histogram_input_of(
        rng.random(),
        1 << 28,
        1 << 20,
        ValueDistribution::Uniform,
        InputType::F32,
        Some((0.0, 1.0)),
    );
    let binning = binning_for(InputType::F32, 1 << 20, Some((0.0, 1.0))).unwrap();
    assert_eq!(
        assert_typed_matches_cpu(&gpu, f32s.as_values(), binning, PlanRequest::default()),
        HistogramTier::Sorted
    );
}
