//! A kernel's signature, declared once with `nvptx_std::kernel!`, is checked at compile time:
//! each `tests/ui/*.rs` is a launch whose arguments do not match the kernel's parameters and
//! must not compile, with the error in its `.stderr`; `tests/ui/pass/*.rs` are the matching
//! launches, which must.

#[test]
fn launches_whose_arguments_do_not_match_the_kernel_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
