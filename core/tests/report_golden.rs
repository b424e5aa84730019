//! The bench report, byte for byte: the fixed two-level bench (`bench::report::tests::example`: no clock,
//! no random id) renders exactly the reviewed tests/golden/report.html. After an intended change to the
//! report: `UPDATE_GOLDEN=1 cargo test -p exectl-core --test report_golden`, then review the diff.
//! (Here, not in core/src: the core names no std::fs, and a golden file is read and written.)

use std::path::Path;

use exectl_core::bench::report;

#[test]
fn the_report_of_a_fixed_timeline_matches_its_golden_file() {
    let (r, samples) = report::tests::example();
    let html = report::render(&r, &samples).unwrap();
    assert_eq!(
        report::render(&r, &samples).unwrap(),
        html,
        "the same input gives the same bytes"
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/report.html");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &html).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 to create)", path.display()));
    if html != golden {
        let line = html
            .lines()
            .zip(golden.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(html.lines().count().min(golden.lines().count()));
        panic!(
            "report.html differs from {} from line {}:\n  now:    {}\n  golden: {}\n(UPDATE_GOLDEN=1 to accept, then review the diff)",
            path.display(),
            line + 1,
            html.lines().nth(line).unwrap_or("<end>"),
            golden.lines().nth(line).unwrap_or("<end>"),
        );
    }
}
