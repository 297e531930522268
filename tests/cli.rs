//! Command-line behaviour, one case per file in tests/cmd/ (`TRYCMD=overwrite` refreshes them).

#[test]
fn cli_cases() {
    trycmd::TestCases::new().env("NO_COLOR", "1").case("tests/cmd/*.toml");
}
