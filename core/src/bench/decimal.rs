//! A figure as the bench writes it: at most two decimals and no trailing zeros (objectives, CPUs, the
//! report's cells).

/// 99.90 → "99.9", 5000.0 → "5000", 0.004 → "0" (and -0.001 too, not "-0").
pub fn show(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" || s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_decimals_at_most_and_no_trailing_zeros() {
        let cases = [
            (99.9, "99.9"),
            (5000.0, "5000"),
            (0.004, "0"),
            (-0.001, "0"),
            (-1.5, "-1.5"),
            (2.346, "2.35"),
        ];
        for (x, said) in cases {
            assert_eq!(super::show(x), said, "{x}");
        }
    }
}
