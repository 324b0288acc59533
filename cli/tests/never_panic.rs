//! "An error, never a panic": the `host` command line's parsers over random argument lists and
//! strings.

use clap::Parser;
use hopper_kernels::matmul::PrecisionPolicy;
use host::cli::Cli;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn the_cli_parses_or_refuses_every_argument_list(args in prop::collection::vec(prop_oneof![
        Just("matmul".to_string()), Just("histogram".to_string()), Just("bench".to_string()), Just("info".to_string()),
        Just("--m".to_string()), Just("--k".to_string()), Just("--n".to_string()), Just("--variant".to_string()),
        Just("--split-k".to_string()), Just("--plan".to_string()), Just("--device-model".to_string()),
        Just("--precision".to_string()), Just("--bins".to_string()), Just("--range".to_string()),
        Just("--sizes".to_string()), Just("--values".to_string()), Just("--tier".to_string()),
        Just("--type".to_string()), Just("--chunk".to_string()), Just("--piece".to_string()),
        Just("auto".to_string()), Just("all".to_string()), Just("h200".to_string()), Just("2^40".to_string()),
        Just("4294967295".to_string()), Just("18446744073709551616".to_string()), Just("-1".to_string()),
        Just("1,2".to_string()), Just("nan,inf".to_string()), Just("0x0x0".to_string()), Just("1x2x3x4".to_string()),
        "[ -~]{0,12}",
    ], 0..10)) {
        let argv = std::iter::once("host".to_string()).chain(args);
        let _ = Cli::try_parse_from(argv);
    }

    #[test]
    fn the_cli_value_parsers_refuse_anything_they_cannot_read(text in "[ -~]{0,24}") {
        let _ = host::cli::bench::parse_sizes(&text);
        let _ = host::cli::bench::parse_bins(&text);
        let _ = host::cli::bench::parse_values(&text);
        let _ = host::cli::bench::parse_count(&text);
        let _ = host::cli::histogram::parse_range(&text);
        let _ = host::cli::matmul::parse_variants(&text);
        let _ = hopper_kernels::histogram::stream::parse_bytes(&text);
        let _ = text.parse::<PrecisionPolicy>();
        let _ = text.parse::<hopper_kernels::gpu::DeviceModel>();
    }
}
