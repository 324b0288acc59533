//! "A plan or an error, never a panic": the matmul and histogram planners over random shapes,
//! bin counts, element types, requests and device models (the CLI's parsers: the `host` crate's
//! tests).
//! Each plan the planners return is also checked against the limits its launch depends on.

use hopper_kernels::histogram::{self, HistogramLimits, HistogramTier, InputType, PlanRequest};
use hopper_kernels::matmul::{
    self, MatmulDevice, MatmulShape, MatmulVariant, OperandType, PlanOptions, PrecisionPolicy, SplitK, TileWidth,
};
use proptest::prelude::*;

/// Sizes from 1 to `u32::MAX`, weighted toward the edges where arithmetic overflows.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..=300,
        1usize..=100_000,
        Just(u32::MAX as usize),
        (u32::MAX as usize - 16)..=(u32::MAX as usize),
        (1usize << 31) - 2..=(1usize << 31) + 2,
        1usize..=u32::MAX as usize,
    ]
}

fn device() -> impl Strategy<Value = MatmulDevice> {
    let clusters =
        prop_oneof![Just([0u32; 8]), Just(MatmulDevice::H200.cluster_blocks), prop::array::uniform8(any::<u32>())];
    (prop_oneof![Just(132u32), 1u32..=2048, Just(u32::MAX)], any::<bool>(), clusters)
        .prop_map(|(sm_count, tensor_cores, cluster_blocks)| MatmulDevice { sm_count, tensor_cores, cluster_blocks })
}

fn policy() -> impl Strategy<Value = PrecisionPolicy> {
    prop::sample::select(PrecisionPolicy::ALL.to_vec())
}

fn split() -> impl Strategy<Value = Option<SplitK>> {
    prop_oneof![
        Just(None),
        (any::<u32>(), any::<u32>()).prop_map(|(splits, k_chunk)| Some(SplitK { splits, k_chunk })),
        (0u32..=300, (0u32..=1 << 20).prop_map(|c| c * 8))
            .prop_map(|(splits, k_chunk)| Some(SplitK { splits, k_chunk })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn the_matmul_planner_plans_or_refuses_every_shape_variant_device_split_and_tile(
        (m, k, n) in (size(), size(), size()),
        variant in prop::sample::select(MatmulVariant::ALL.to_vec()),
        device in device(),
        policy in policy(),
        split in split(),
        tile in prop::sample::select(vec![None, Some(TileWidth::N256), Some(TileWidth::N128), Some(TileWidth::N16)]),
        operands in prop::sample::select(OperandType::ALL.to_vec()),
    ) {
        let shape = MatmulShape::new(m, k, n).unwrap();
        if let Ok(plan) = matmul::plan_with(variant, shape, device, PlanOptions { policy, split, tile, operands }) {
            prop_assert_eq!(plan.shape(), shape);
            for p in std::iter::once(&plan).chain(plan.fallback()) {
                let cfg = p.launch_config();
                let (g, b) = (cfg.grid_dim, cfg.block_dim);
                prop_assert!(g.0 >= 1 && g.1 >= 1 && g.2 >= 1 && g.0 <= i32::MAX as u32, "{}", p);
                prop_assert!(g.1 <= 65_535 && g.2 <= 65_535, "{}", p);
                prop_assert!(b.0 * b.1 * b.2 <= 1024, "{}", p);
                if let Some(s) = p.split() {
                    prop_assert!(s.splits >= 1 && s.k_chunk >= 1, "{}", p);
                    prop_assert!(s.splits as u64 * s.k_chunk as u64 >= k as u64, "{}: k uncovered", p);
                    prop_assert!(((s.splits - 1) as u64 * s.k_chunk as u64) < k as u64, "{}: an empty split", p);
                    let tile_kernels = [
                        MatmulVariant::WgmmaBf16,
                        MatmulVariant::WgmmaF16,
                        MatmulVariant::WgmmaTf32,
                        MatmulVariant::WgmmaTf32Transposed,
                    ];
                    if tile_kernels.contains(&p.variant()) {
                        // A persistent grid over tiles x splits work items, each split whole
                        // stages (all but the last).
                        let items = matmul::wgmma::tiles(shape, p.kernel()) * s.splits as u64;
                        prop_assert!(g.2 == 1 && g.0 as u64 <= items && items <= i32::MAX as u64, "{}", p);
                        prop_assert!(s.splits == 1 || s.k_chunk.is_multiple_of(p.variant().split_granule()), "{}", p);
                    } else {
                        prop_assert_eq!(g.2, s.splits);
                    }
                }
                if p.reduce().is_some() {
                    prop_assert!(m as u64 * n as u64 <= u32::MAX as u64, "{}", p);
                }
                let _ = p.workspace_floats();
                let _ = p.to_string();
            }
        }
    }

    #[test]
    fn the_histogram_planner_plans_or_refuses_every_bin_count_type_and_request(
        bins in prop_oneof![0usize..=300, 0usize..=1 << 22, Just(u32::MAX as usize), any::<usize>()],
        sm_count in prop_oneof![Just(132u32), 1u32..=1024],
        shared in prop_oneof![Just(232_448u32), 0u32..=64, 0u32..=1 << 20],
        tier in prop::option::of(prop::sample::select(HistogramTier::ALL.to_vec())),
        cluster_size in prop::option::of(any::<u32>()),
        threads in prop::option::of(prop_oneof![0u32..=2048, any::<u32>()]),
        copies in prop::option::of(prop_oneof![0u32..=64, any::<u32>()]),
        aggregate in prop::option::of(any::<bool>()),
        element in prop::option::of(prop::sample::select(vec![InputType::U8, InputType::U16, InputType::I32, InputType::F32])),
        bucket_shift in prop::option::of(prop_oneof![0u32..=40, any::<u32>()]),
        bins_pass_waves in prop::option::of(prop_oneof![0u32..=10, any::<u32>()]),
        counter_bits in prop::option::of(prop_oneof![Just(4u32), Just(6), Just(8), Just(16), any::<u32>()]),
    ) {
        let limits = HistogramLimits {
            sm_count,
            max_shared_per_block_optin: shared,
            max_shared_per_sm: shared.saturating_add(1024),
            ..HistogramLimits::H100
        };
        let request = PlanRequest {
            tier, cluster_size, threads_per_block: threads, copies, aggregate, element, bucket_shift, bins_pass_waves,
            counter_bits,
        };
        if let Ok(plan) = histogram::plan_for(&limits, bins, request) {
            prop_assert_eq!(plan.bins() as usize, bins);
            prop_assert!(plan.threads_per_block() >= 32 && plan.threads_per_block() <= 1024, "{}", plan);
            prop_assert!(plan.blocks() >= 1, "{}", plan);
            prop_assert!(plan.shared_bytes() <= limits.max_shared_per_block_optin, "{}", plan);
            let _ = plan.reason(&limits, tier.is_some());
        }
    }
}

#[test]
fn the_issues_longest_k_plans_on_a_model_without_a_gpu() {
    let shape = MatmulShape::new(1, u32::MAX as usize, 1).unwrap();
    let plan = matmul::plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100).unwrap();
    assert!(plan.split().unwrap().splits >= 2, "{plan}");
}
