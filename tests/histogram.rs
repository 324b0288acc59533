//! Every histogram tier against an exact CPU histogram: at each tier's capacity boundary, with
//! out-of-range values, empty and ragged inputs, skewed inputs, and a 2^28-value input.

use host::histogram::{self, DeviceHistogram, HistogramLimits, HistogramTier, PlanRequest};
use host::reference::{ValueDistribution, histogram_cpu, histogram_input};
use host::{Gpu, HostError};
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
    plan.tier
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
    let values = values_with_outliers(&mut rng, (1 << 22) + 5, capacity + 1);
    assert_eq!(assert_matches_cpu(&gpu, &values, capacity, None, None), HistogramTier::Shared);
    assert_eq!(assert_matches_cpu(&gpu, &values, capacity + 1, None, None), HistogramTier::Cluster);
    for tier in HistogramTier::ALL {
        assert_matches_cpu(&gpu, &values, capacity, Some(tier), None);
    }
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
    assert_eq!(assert_matches_cpu(&gpu, &values, full + 1, None, None), HistogramTier::Global);
    assert_matches_cpu(&gpu, &values, full, Some(HistogramTier::Global), None);
    // Where the planner stops choosing clusters on its own.
    let auto = limits.auto_cluster_capacity() as usize;
    assert_eq!(assert_matches_cpu(&gpu, &values, auto, None, None), HistogramTier::Cluster);
    assert_eq!(assert_matches_cpu(&gpu, &values, auto + 1, None, None), HistogramTier::Global);
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
    assert_eq!(assert_matches_cpu(&gpu, &values, 131_072, None, None), HistogramTier::Cluster);
    assert_matches_cpu(&gpu, &values, 131_072, Some(HistogramTier::Global), None);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn zero_bins_and_forced_tiers_that_cannot_hold_the_bins_are_clear_errors() {
    let gpu = gpu();
    let err = histogram::plan(&gpu, 0, None).unwrap_err();
    assert!(matches!(err, HostError::InvalidInput(_)) && err.to_string().contains("at least one bin"), "{err}");
    let too_many = HistogramLimits::of(&gpu).unwrap().block_capacity() as usize + 1;
    let err = histogram::plan(&gpu, too_many, Some(HistogramTier::Shared)).unwrap_err();
    assert!(err.to_string().contains("shared memory per block"), "{err}");
    assert!(DeviceHistogram::upload(&gpu, &[1, 2, 3], 0).is_err());
}
